// A `no_staging` group cannot mix CUDA and Vulkan: a hop between them is staged through the host.
fn main() {
    let _group = collectives::device_group!(no_staging, Cuda, Vulkan);
}
