// The leader must be one of the members: `Cuda(1)` is not.
fn main() {
    let _group = collectives::device_group!(leader = Cuda(1), Cuda(0), Vulkan, Cpu);
}
