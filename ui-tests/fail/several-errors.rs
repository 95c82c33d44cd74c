// Every error of one invocation is reported at once, each on its own token.
fn main() {
    let _group = collectives::device_group!(Vulcan, Cuda(-1), Cpu, Cpu(0), leader = Cpu(3), no_staging, no_staging);
}
