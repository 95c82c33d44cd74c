//! `brand = Type` gives a group its own shard types; a branded group is nameable too.

use collectives::typed::{Cpu, Group, Shard};
use collectives::{ReduceOp, device_group};

struct Train;

struct Trainer {
    group: Group<(Cpu, Cpu), Cpu, Train>,
}

fn main() -> collectives::Result<()> {
    let t = Trainer { group: device_group!(brand = Train, Cpu(0), Cpu(1))? };
    let (a, b) = t.group.members();
    let shards: (Shard<Cpu, Train>, Shard<Cpu, Train>) =
        (a.tensor(vec![1.0f32, 2.0], [2])?, b.tensor(vec![3.0f32, 4.0], [2])?);
    let (x, y) = t.group.all_reduce(shards, ReduceOp::Max)?;
    assert_eq!((x.to_vec::<f32>()?, y.to_vec::<f32>()?), (vec![3.0, 4.0], vec![3.0, 4.0]));
    Ok(())
}
