// Members are separated by commas.
fn main() {
    let _group = collectives::device_group!(Cuda Cpu);
}
