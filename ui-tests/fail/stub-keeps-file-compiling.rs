// One bad invocation, one error: the stub has the group's type, so the code using it still
// type-checks and reports nothing more.
use collectives::ReduceOp;
use collectives::typed::{Cpu, Cuda, Group, Vulkan};

struct Model {
    group: Group<(Cuda, Vulkan, Cpu)>,
}

fn main() -> collectives::Result<()> {
    let model = Model { group: collectives::device_group!(Cuda, Vulcan, Cpu)? };
    let (cuda, vulkan, cpu) = model.group.members();
    let shards = (
        cuda.tensor(vec![1.0f32; 4], [4])?,
        vulkan.tensor(vec![2.0f32; 4], [4])?,
        cpu.tensor(vec![3.0f32; 4], [4])?,
    );
    let (on_cuda, _, _) = model.group.all_reduce(shards, ReduceOp::Sum)?;
    let _on_cpu = on_cuda.copy_to(cpu)?;
    Ok(())
}
