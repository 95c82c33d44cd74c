// `Gpu` does not say which API drives the GPU.
fn main() {
    let _group = collectives::device_group!(Gpu, Cpu);
}
