// `leader =` with nothing after it: the error is on `leader =`, not on the whole call.
fn main() {
    let _group = collectives::device_group!(Cuda, Cpu, leader =);
}
