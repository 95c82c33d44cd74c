//! The chunked ring: reduce_scatter then all_gather, every chunk hopping to the next device.
//! Written over the two primitives, hop and reduce (tinygrad's shape).

use super::redop::ReduceOp;
use super::route::Hops;
use crate::device::Device;
use crate::error::Result;
use crate::graph::Tensor;

/// `parts[i][c]` is chunk `c` of device `i`'s shard (on `devices[i]`). Returns chunk `c` reduced
/// over all devices, on `devices[c]`. Chunk `c` starts at device `c+1` and travels the ring
/// `c+1 → c+2 → … → c`, each device folding its own part in; the scale (avg, pre-mul) is applied
/// once, in the last fold.
pub(crate) fn reduce_scatter(
    hops: &mut Hops,
    devices: &[Device],
    parts: &[Vec<Tensor>],
    op: ReduceOp,
) -> Result<Vec<Tensor>> {
    let n = devices.len();
    let (kind, scale) = op.lower(n);
    (0..n)
        .map(|c| {
            let mut at = (c + 1) % n;
            let mut partial = parts[at][c].clone();
            for step in 0..n - 1 {
                let next = (at + 1) % n;
                let arrived = hops.reach(&partial, devices[next])?;
                let last = step == n - 2;
                partial = Tensor::reduce(
                    &[arrived, parts[next][c].clone()],
                    kind,
                    if last { scale } else { None },
                )?;
                at = next;
            }
            match (n, scale) {
                (1, Some(s)) => Tensor::reduce(&[partial], kind, Some(s)),
                _ => Ok(partial),
            }
        })
        .collect()
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
            cur = hops.hop(&cur, devices[d])?;
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
        cur = hops.hop(&cur, devices[d])?;
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
    let (kind, scale) = op.lower(k);
    let order: Vec<usize> = (1..=k).map(|s| (root + s) % k).collect();
    let mut partial = shards[order[0]].clone();
    for (i, &next) in order.iter().enumerate().skip(1) {
        let arrived = hops.reach(&partial, devices[next])?;
        let last = i == k - 1;
        partial = Tensor::reduce(&[arrived, shards[next].clone()], kind, if last { scale } else { None })?;
    }
    match (k, scale) {
        (1, Some(s)) => Tensor::reduce(&[partial], kind, Some(s)),
        _ => Ok(partial),
    }
}
