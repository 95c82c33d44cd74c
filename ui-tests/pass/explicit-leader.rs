//! `leader = ...` picks a member (any position); the leader's kind is the group's second type
//! parameter, and `reduce`/`gather` return a shard of that kind on the leader.

use collectives::typed::{Cpu, Cuda, Group, Shard};
use collectives::{Device, ReduceOp, device_group};

fn main() -> collectives::Result<()> {
    let g: Group<(Cpu, Cpu, Cpu), Cpu> = device_group!(Cpu(0), leader = Cpu(2), Cpu(1), Cpu(2))?;
    assert_eq!(g.leader().device(), Device::Cpu(2));
    let (a, b, c) = g.members();
    let shards = (
        a.tensor(vec![1i32, 2], [2])?,
        b.tensor(vec![10i32, 20], [2])?,
        c.tensor(vec![100i32, 200], [2])?,
    );
    let sum: Shard<Cpu> = g.reduce(shards.clone(), ReduceOp::Sum)?;
    assert_eq!(sum.device(), Device::Cpu(2));
    assert_eq!(sum.to_vec::<i32>()?, vec![111, 222]);
    let cat = g.gather(shards, 0)?;
    assert_eq!(cat.to_vec::<i32>()?, vec![1, 2, 10, 20, 100, 200]);

    // A leader of another kind than the first member: the type says so.
    let led_by_cpu: collectives::Result<Group<(Cuda, Cpu), Cpu>> = device_group!(Cuda, Cpu, leader = Cpu);
    if let Ok(g) = led_by_cpu {
        let _: Shard<Cpu> = g.reduce((g.members().0.tensor(vec![1.0f32], [1])?, g.members().1.tensor(vec![2.0f32], [1])?), ReduceOp::Sum)?;
    }
    Ok(())
}
