// `Cuda(1)` is listed twice.
fn main() {
    let _group = collectives::device_group!(Cuda(1), Vulkan, Cuda(1));
}
