// Shard 0 of a (Cuda, Vulkan, Cpu) group must be a `Shard<Cuda>`.
use collectives::ReduceOp;
use collectives::typed::{Cpu, Shard, Vulkan};

fn main() -> collectives::Result<()> {
    let group = collectives::device_group!(Cuda, Vulkan, Cpu)?;
    let (_, vulkan, cpu) = group.members();
    let a: Shard<Cpu> = cpu.tensor(vec![1.0f32; 4], [4])?;
    let b: Shard<Vulkan> = vulkan.tensor(vec![2.0f32; 4], [4])?;
    let c: Shard<Cpu> = cpu.tensor(vec![3.0f32; 4], [4])?;
    let _sum = group.all_reduce((a, b, c), ReduceOp::Sum)?;
    Ok(())
}
