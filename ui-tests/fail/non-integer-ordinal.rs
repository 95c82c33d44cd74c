// An ordinal is an integer literal.
fn main() {
    let _group = collectives::device_group!(Cuda(1.5), Cpu);
}
