// `Vulcan` is not a device kind; the error suggests `Vulkan`.
fn main() {
    let _group = collectives::device_group!(Cuda, Vulcan, Cpu);
}
