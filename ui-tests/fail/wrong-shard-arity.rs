// A three-member group takes three shards.
use collectives::ReduceOp;

fn main() -> collectives::Result<()> {
    let group = collectives::device_group!(Cpu(0), Cpu(1), Cpu(2))?;
    let (a, b, _) = group.members();
    let x = a.tensor(vec![1.0f32; 4], [4])?;
    let y = b.tensor(vec![2.0f32; 4], [4])?;
    let _sum = group.all_reduce([x, y], ReduceOp::Sum)?;
    Ok(())
}
