// `leadr` is not an option; the error suggests `leader`.
fn main() {
    let _group = collectives::device_group!(Cuda, Cpu, leadr = Cpu);
}
