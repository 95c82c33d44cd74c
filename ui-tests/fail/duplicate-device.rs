// A bare kind names its first device, so `Cuda, Cuda` lists `Cuda(0)` twice.
fn main() {
    let _group = collectives::device_group!(Cuda, Cuda, Cpu);
}
