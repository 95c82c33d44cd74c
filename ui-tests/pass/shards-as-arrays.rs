//! A group whose members share one kind takes arrays of shards as well as tuples.

use collectives::typed::Shard;
use collectives::{ReduceOp, device_group};

fn main() -> collectives::Result<()> {
    let g = device_group!(Cpu(0), Cpu(1), Cpu(2), Cpu(3))?;
    let shards: [Shard<collectives::typed::Cpu>; 4] = g
        .make_shards(|i, d| collectives::Tensor::from_vec(vec![i as f32; 8], [8], d))
        .map(|(a, b, c, d)| [a, b, c, d])?;
    let parts = g.reduce_scatter(shards.clone(), ReduceOp::Sum, 0)?;
    for p in &parts {
        assert_eq!(p.to_vec::<f32>()?, vec![6.0, 6.0]);
    }
    let everywhere = g.all_gather(parts, 0)?;
    assert_eq!(everywhere[3].to_vec::<f32>()?, vec![6.0; 8]);
    let swapped = g.all_to_all(shards, 0)?;
    assert_eq!(swapped[1].to_vec::<f32>()?, vec![0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
    Ok(())
}
