//! `no_staging` groups: one GPU vendor, host members allowed; generic code can require it.

use collectives::typed::{Cpu, Cuda, Group, NoStaging, Vulkan};
use collectives::device_group;

fn direct_only<M: NoStaging>(group: &Group<M>) -> usize {
    group.size()
}

fn main() -> collectives::Result<()> {
    let cpus: Group<(Cpu, Cpu)> = device_group!(no_staging, Cpu(0), Cpu(1))?;
    assert_eq!(direct_only(&cpus), 2);
    let cudas: collectives::Result<Group<(Cuda, Cuda, Cpu)>> = device_group!(Cuda(0), Cuda(1), Cpu, no_staging);
    let vulkans: collectives::Result<Group<(Vulkan, Cpu)>> = device_group!(no_staging, Vulkan, Cpu);
    if let (Ok(a), Ok(b)) = (cudas, vulkans) {
        assert_eq!(direct_only(&a) + direct_only(&b), 5);
    }
    Ok(())
}
