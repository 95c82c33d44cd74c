//! The chunked ring: reduce_scatter then all_gather, every chunk hopping to the next device.
//! Written over the two primitives, hop and reduce (tinygrad's shape).

use super::ReduceOp;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::{ReduceKind, Scale, Tensor};
use crate::route::Hops;

/// `parts[i][c]` is chunk `c` of device `i`'s shard (on `devices[i]`). Returns chunk `c` reduced
/// over all devices, on `devices[c]`. Chunk `c` starts at device `c+1` and travels the ring
/// `c+1 → c+2 → … → c`, each device folding its own part in; the scale (avg, pre-mul) is applied
/// once, in the last fold (per contribution on f16: see [`Fold`]).
pub(crate) fn reduce_scatter(
    hops: &mut Hops,
    devices: &[Device],
    parts: &[Vec<Tensor>],
    op: ReduceOp,
) -> Result<Vec<Tensor>> {
    let n = devices.len();
    let fold = Fold::new(op, n, parts[0][0].dtype());
    (0..n)
        .map(|c| {
            let mut at = (c + 1) % n;
            let mut partial = fold.own(&parts[at][c])?;
            for step in 0..n - 1 {
                let next = (at + 1) % n;
                let arrived = hops.reach(&partial, devices[next]);
                partial = fold.step(arrived, &parts[next][c], step == n - 2)?;
                at = next;
            }
            fold.finish(partial, n)
        })
        .collect()
}

/// How the ring folds one contribution into a partial that has travelled from the previous
/// device. The partial is stored (and sent) in the dtype after every fold, so where the dtype's
/// range is narrower than its f32 accumulator's (f16, largest 65504) a sum of in-range values can
/// overflow on the way although the scaled result would not: there Avg and PreMulSum multiply
/// each contribution by their scalar before it is folded in (NCCL's PreMulSum). Elsewhere the
/// scale is applied once, to the accumulator of the last fold.
struct Fold {
    kind: ReduceKind,
    scale: Option<Scale>,
    pre: bool,
}

impl Fold {
    fn new(op: ReduceOp, contributors: usize, dtype: DType) -> Fold {
        let (kind, scale) = op.lower(contributors);
        let pre = scale.is_some() && dtype == DType::F16;
        Fold { kind, scale, pre }
    }

    /// A device's own contribution, pre-multiplied where the partials need it.
    fn own(&self, t: &Tensor) -> Result<Tensor> {
        match self.scale {
            Some(s) if self.pre => t.scale(s),
            _ => Ok(t.clone()),
        }
    }

    /// `arrived` folded with `own`; the scale applied to the accumulator in the `last` fold.
    fn step(&self, arrived: Tensor, own: &Tensor, last: bool) -> Result<Tensor> {
        let scale = if last && !self.pre { self.scale } else { None };
        Tensor::reduce_on(own.device(), &[arrived, self.own(own)?], self.kind, scale)
    }

    /// The partial after the last fold; a lone contribution still takes its scale.
    fn finish(&self, partial: Tensor, contributors: usize) -> Result<Tensor> {
        match self.scale {
            Some(s) if contributors == 1 && !self.pre => Tensor::reduce(&[partial], self.kind, Some(s)),
            _ => Ok(partial),
        }
    }
}

/// `chunks[c]` lives on `devices[c]`. Returns `out[d][c]`: every chunk on every device, each chunk
/// hopping once per link around the ring `c → c+1 → …`.
pub(crate) fn all_gather(hops: &mut Hops, devices: &[Device], chunks: &[Tensor]) -> Result<Vec<Vec<Tensor>>> {
    let n = devices.len();
    let mut out: Vec<Vec<Option<Tensor>>> = vec![vec![None; n]; n];
    for (c, chunk) in chunks.iter().enumerate() {
        let mut cur = chunk.clone();
        out[c][c] = Some(cur.clone());
        for step in 1..n {
            let d = (c + step) % n;
            cur = hops.hop(&cur, devices[d]);
            out[d][c] = Some(cur.clone());
        }
    }
    Ok(out.into_iter().map(|row| row.into_iter().map(|t| t.expect("filled")).collect()).collect())
}

/// `t` passed along the ring from its device: each device forwards what it received.
pub(crate) fn broadcast(hops: &mut Hops, t: &Tensor, devices: &[Device], root: usize) -> Result<Vec<Tensor>> {
    let n = devices.len();
    let mut out: Vec<Option<Tensor>> = vec![None; n];
    let mut cur = t.clone();
    out[root] = Some(cur.clone());
    for step in 1..n {
        let d = (root + step) % n;
        cur = hops.hop(&cur, devices[d]);
        out[d] = Some(cur.clone());
    }
    Ok(out.into_iter().map(|t| t.expect("filled")).collect())
}

/// The shards folded along the ring, ending at `root`: a partial travels `root+1 → … → root`.
pub(crate) fn reduce_to(
    hops: &mut Hops,
    devices: &[Device],
    shards: &[Tensor],
    op: ReduceOp,
    root: usize,
) -> Result<Tensor> {
    let k = shards.len();
    let fold = Fold::new(op, k, shards[0].dtype());
    let order: Vec<usize> = (1..=k).map(|s| (root + s) % k).collect();
    let mut partial = fold.own(&shards[order[0]])?;
    for (i, &next) in order.iter().enumerate().skip(1) {
        let arrived = hops.reach(&partial, devices[next]);
        partial = fold.step(arrived, &shards[next], i == k - 1)?;
    }
    fold.finish(partial, k)
}
