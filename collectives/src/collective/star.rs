//! The star: everything through one root. Written over the two primitives, hop and reduce.

use super::ReduceOp;
use crate::device::Device;
use crate::error::Result;
use crate::graph::Tensor;
use crate::route::Hops;

/// Every shard brought to `root` (read in place where `root` can) and folded there in one
/// n-ary pass.
pub(crate) fn reduce_to(hops: &mut Hops, shards: &[Tensor], op: ReduceOp, root: Device) -> Result<Tensor> {
    let (kind, scale) = op.lower(shards.len());
    if let ([one], None) = (shards, scale) {
        return Ok(hops.hop(one, root));
    }
    let on_root: Vec<Tensor> = shards.iter().map(|s| hops.reach(s, root)).collect();
    Tensor::reduce_on(root, &on_root, kind, scale)
}

/// The one-shot all_reduce: every device folds every shard itself, read in place (the graph pass
/// copies what a device cannot read), in one fixed order, so every device's result is bitwise
/// identical.
pub(crate) fn all_reduce_in_place(
    shards: &[Tensor],
    op: ReduceOp,
    devices: &[Device],
) -> Result<Vec<Tensor>> {
    let (kind, scale) = op.lower(shards.len());
    devices.iter().map(|&d| Tensor::reduce_on(d, shards, kind, scale)).collect()
}

/// `t` hopped from its device to each of `devices`.
pub(crate) fn broadcast(hops: &mut Hops, t: &Tensor, devices: &[Device]) -> Result<Vec<Tensor>> {
    Ok(devices.iter().map(|&d| hops.hop(t, d)).collect())
}

/// Every shard brought to `root` (read in place where `root` can) and joined there along `dim`.
pub(crate) fn gather_to(hops: &mut Hops, shards: &[Tensor], dim: usize, root: Device) -> Result<Tensor> {
    if let [one] = shards {
        return Ok(hops.hop(one, root));
    }
    let on_root: Vec<Tensor> = shards.iter().map(|s| hops.reach(s, root)).collect();
    Tensor::concat_on(root, &on_root, dim)
}

/// The one-shot all_gather of a group that is not one multi-device call: every device joins every
/// shard itself, along `dim` — its own in place, each other shard copied straight into its range
/// where the join can place it (`exec/join.rs`), else hopped then concatenated — instead of
/// gathering on the leader and sending the joined result out. Each shard crosses to each other
/// device once; through the leader, every shard but the leader's crosses twice.
pub(crate) fn all_gather_in_place(
    hops: &mut Hops,
    shards: &[Tensor],
    dim: usize,
    devices: &[Device],
) -> Result<Vec<Tensor>> {
    devices.iter().map(|&d| gather_to(hops, shards, dim, d)).collect()
}

/// The one-shot reduce_scatter of a group that is not one multi-device call: member j folds part
/// j of every shard itself (`parts[i][j]`, part j of shard i), its own part in place, each other
/// part brought to it (read in place where it can). Each part crosses once, to the member that
/// folds it; through the hub every shard crosses to the hub, then every part but the hub's
/// crosses back, one after the other.
pub(crate) fn reduce_scatter_in_place(
    hops: &mut Hops,
    parts: &[Vec<Tensor>],
    op: ReduceOp,
    devices: &[Device],
) -> Result<Vec<Tensor>> {
    let column = |j: usize| -> Vec<Tensor> { parts.iter().map(|p| p[j].clone()).collect() };
    devices.iter().enumerate().map(|(j, &d)| reduce_to(hops, &column(j), op, d)).collect()
}

/// `t` cut along `dim` into consecutive parts of `sizes`, part i hopped to `devices[i]`.
pub(crate) fn scatter(
    hops: &mut Hops,
    t: &Tensor,
    dim: usize,
    sizes: &[usize],
    devices: &[Device],
) -> Result<Vec<Tensor>> {
    let mut start = 0;
    let mut out = Vec::with_capacity(sizes.len());
    for (&len, &d) in sizes.iter().zip(devices) {
        let part = if len == t.shape().dim(dim) { t.clone() } else { t.narrow(dim, start, len)? };
        out.push(hops.hop(&part, d));
        start += len;
    }
    Ok(out)
}
