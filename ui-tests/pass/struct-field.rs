//! The group type is nameable: a model's struct holds one, concrete or generic.

use collectives::typed::{Cpu, Cuda, DeviceKind, Group, Members, Vulkan};
use collectives::{ReduceOp, device_group};

struct Mixed {
    group: Group<(Cuda, Vulkan, Cpu)>,
}

struct Model<M: Members> {
    group: Group<M>,
    steps: usize,
}

struct Trio<K0: DeviceKind, K1: DeviceKind, K2: DeviceKind> {
    group: Group<(K0, K1, K2)>,
}

impl<K0: DeviceKind, K1: DeviceKind, K2: DeviceKind> Trio<K0, K1, K2> {
    fn total(&self, x: [f32; 3]) -> collectives::Result<f32> {
        let (a, b, c) = self.group.members();
        let shards = (a.tensor(vec![x[0]], [1])?, b.tensor(vec![x[1]], [1])?, c.tensor(vec![x[2]], [1])?);
        Ok(self.group.reduce(shards, ReduceOp::Sum)?.to_vec::<f32>()?[0])
    }
}

fn main() -> collectives::Result<()> {
    if let Ok(group) = device_group!(Cuda, Vulkan, Cpu) {
        let m = Mixed { group };
        assert_eq!(m.group.size(), 3);
    }
    let model = Model { group: device_group!(Cpu(0), Cpu(1))?, steps: 0 };
    assert_eq!(model.group.size() + model.steps, 2);
    let trio: Trio<Cpu, Cpu, Cpu> = Trio { group: device_group!(Cpu(0), Cpu(1), Cpu(2))? };
    assert_eq!(trio.total([1.0, 2.0, 4.0])?, 7.0);
    Ok(())
}
