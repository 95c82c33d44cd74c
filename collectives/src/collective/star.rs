//! The star: everything through one root. Written over the two primitives, hop and reduce.

use super::ReduceOp;
use crate::backend::chain::DEVICE_MIN_BYTES;
use crate::device::Device;
use crate::error::Result;
use crate::graph::Tensor;
use crate::route::Hops;

/// Every shard brought to `root` (read in place where `root` can) and folded there in one
/// n-ary pass — folded on [`site`] and copied to `root` where that is another device.
pub(crate) fn reduce_to(hops: &mut Hops, shards: &[Tensor], op: ReduceOp, root: Device) -> Result<Tensor> {
    let (kind, scale) = op.lower(shards.len());
    if let ([one], None) = (shards, scale) {
        return Ok(hops.hop(one, root));
    }
    let at = site(root, shards, shards[0].nbytes());
    let on_site: Vec<Tensor> = shards.iter().map(|s| hops.reach(s, at)).collect();
    Ok(hops.hop(&Tensor::reduce_on(at, &on_site, kind, scale)?, root))
}

/// Where a result of `bytes` bound for `to` is computed from `inputs`: `to` itself, except a
/// Vulkan device sharing its GPU with a CUDA device that holds one of the inputs (the device
/// bridge), for a result of at least [`DEVICE_MIN_BYTES`]: there, the CUDA device computes it
/// and copies it straight into the Vulkan device's memory, so that no Vulkan work follows the
/// CUDA work within the call. On one GPU, a Vulkan submission issued after CUDA work waits for
/// the GPU to switch between the two APIs, whether it waits on the GPU or the host waits first:
/// a 512 KiB Vulkan add after a CUDA move took 337–362 µs, the move alone 10 and the add alone 21
/// (H100, `bench/gpu/35-one-shot-reduce-scatter`, run a's probe). Moved so, on an H200
/// (`bench/gpu/36-cuda-computes-for-vulkan`, run a, against the tree before): the all_to_all of
/// `cuda:0,vulkan:0` 55.3 µs at 1 MiB (355.5), 563.0 at 256 MiB (1323.6); a Vulkan leader's
/// gather 40.6 at 1 MiB (375.7), its reduce 45.3 (381.2). A smaller result lives in host memory
/// and crosses through the host, where the Vulkan device computing it was faster (its gather at
/// 4 KiB 14.2 µs against 34.5 computed on CUDA, 16.6 against 43.9 at 64 KiB).
pub(crate) fn site(to: Device, inputs: &[Tensor], bytes: usize) -> Device {
    if !matches!(to, Device::Vulkan(_)) || bytes < DEVICE_MIN_BYTES {
        return to;
    }
    let cuda = |d: &Device| matches!(d, Device::Cuda(_)) && crate::backend::staged::will_share_gpu(*d, to);
    inputs.iter().map(Tensor::device).find(cuda).unwrap_or(to)
}

/// The one-shot all_reduce: every device folds every shard itself, read in place (the graph pass
/// copies what a device cannot read), in one fixed order, so every device's result is bitwise
/// identical — except where [`site`] puts a device's fold on another member: that member's
/// fold is copied to it (bitwise the same too).
pub(crate) fn all_reduce_in_place(
    hops: &mut Hops,
    shards: &[Tensor],
    op: ReduceOp,
    devices: &[Device],
) -> Result<Vec<Tensor>> {
    let (kind, scale) = op.lower(shards.len());
    let bytes = shards[0].nbytes();
    let mut folds: Vec<Tensor> = Vec::with_capacity(devices.len());
    let mut fold_on = |at: Device| -> Result<Tensor> {
        if let Some(t) = folds.iter().find(|t| t.device() == at) {
            return Ok(t.clone());
        }
        let t = Tensor::reduce_on(at, shards, kind, scale)?;
        folds.push(t.clone());
        Ok(t)
    };
    devices.iter().map(|&d| Ok(hops.hop(&fold_on(site(d, shards, bytes))?, d))).collect()
}

/// `t` hopped from its device to each of `devices`.
pub(crate) fn broadcast(hops: &mut Hops, t: &Tensor, devices: &[Device]) -> Result<Vec<Tensor>> {
    Ok(devices.iter().map(|&d| hops.hop(t, d)).collect())
}

/// Every shard brought to `root` (read in place where `root` can) and joined there along `dim`
/// — joined on [`site`] and copied to `root` where that is another device.
pub(crate) fn gather_to(hops: &mut Hops, shards: &[Tensor], dim: usize, root: Device) -> Result<Tensor> {
    if let [one] = shards {
        return Ok(hops.hop(one, root));
    }
    let at = site(root, shards, shards.iter().map(Tensor::nbytes).sum());
    let on_site: Vec<Tensor> = shards.iter().map(|s| hops.reach(s, at)).collect();
    Ok(hops.hop(&Tensor::concat_on(at, &on_site, dim)?, root))
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
