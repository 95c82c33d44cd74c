// Code that requires a group without host staging does not take one mixing CUDA and Vulkan.
use collectives::typed::{Cpu, Cuda, Group, NoStaging, Vulkan};

fn gpu_only<M: NoStaging>(_group: &Group<M>) {}

fn main() -> collectives::Result<()> {
    let group: Group<(Cuda, Vulkan, Cpu)> = collectives::device_group!(Cuda, Vulkan, Cpu)?;
    gpu_only(&group);
    Ok(())
}
