// An ordinal is checked when the macro compiles, so it cannot be a run-time value.
fn main() {
    let rank = 1;
    let _group = collectives::device_group!(Cuda(rank), Cpu);
}
