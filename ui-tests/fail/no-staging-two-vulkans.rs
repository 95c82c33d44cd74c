// A `no_staging` group holds at most one Vulkan device: a hop between two is staged through the host.
fn main() {
    let _group = collectives::device_group!(no_staging, Vulkan, Cpu, Vulkan(1));
}
