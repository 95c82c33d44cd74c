// Groups with different brands are told apart: a shard of `Train` does not fit `Eval`.
use collectives::ReduceOp;

struct Train;
struct Eval;

fn main() -> collectives::Result<()> {
    let train = collectives::device_group!(Cpu(0), Cpu(1), brand = Train)?;
    let eval = collectives::device_group!(Cpu(0), Cpu(1), brand = Eval)?;
    let (a, b) = train.members();
    let shards = (a.tensor(vec![1.0f32; 4], [4])?, b.tensor(vec![2.0f32; 4], [4])?);
    let _sum = eval.all_reduce(shards, ReduceOp::Sum)?;
    Ok(())
}
