//! Ordinals: several devices of one kind, any order, suffixes `u32`/`usize`, a trailing comma.

use collectives::typed::{Cpu, Cuda, Group, Vulkan};
use collectives::{Device, device_group};

fn main() -> collectives::Result<()> {
    let g: Group<(Cpu, Cpu, Cpu, Cpu)> = device_group!(Cpu(3), Cpu(0), Cpu(2u32), Cpu(1usize),)?;
    assert_eq!(g.devices(), [3, 0, 2, 1].map(Device::Cpu));
    assert_eq!(g.leader().device(), Device::Cpu(3));
    let eight: collectives::Result<Group<(Cuda, Cuda, Cuda, Cuda, Cuda, Cuda, Cuda, Cuda, Cpu)>> =
        device_group!(Cuda, Cuda(1), Cuda(2), Cuda(3), Cuda(4), Cuda(5), Cuda(6), Cuda(7), Cpu);
    if let Ok(g) = eight {
        assert_eq!(g.size(), 9);
    }
    let mixed: collectives::Result<Group<(Vulkan, Cuda, Vulkan)>> =
        device_group!(Vulkan(1), Cuda(0), Vulkan(0));
    drop(mixed);
    Ok(())
}
