//! The star: everything through one root. Written over the two primitives, hop and reduce.

use super::ReduceOp;
use crate::backend::chain::DEVICE_MIN_BYTES;
use crate::device::Device;
use crate::error::Result;
use crate::exec::{cut_from, views_vulkan_device_memory};
use crate::graph::Tensor;
use crate::route::Hops;

/// Every shard brought to `root` (read in place where `root` can) and folded there in one
/// n-ary pass — folded on [`site`] and copied to `root` where that is another device.
pub(crate) fn reduce_to(hops: &mut Hops, shards: &[Tensor], op: ReduceOp, root: Device) -> Result<Tensor> {
    let (kind, scale) = op.lower(shards.len());
    if let ([one], None) = (shards, scale) {
        return Ok(hops.hop(one, root));
    }
    let at = site(root, shards, Work::Fold);
    let on_site: Vec<Tensor> = shards.iter().map(|s| hops.reach(s, at)).collect();
    Ok(hops.hop(&Tensor::reduce_on(at, &on_site, kind, scale)?, root))
}

/// What [`site`] is asked to place.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Work {
    /// A fold of the inputs for the device it is bound for alone (a reduce, a one-shot
    /// reduce_scatter's part, the star's fold on its hub).
    Fold,
    /// A fold that every member computes for itself (the one-shot all_reduce's): where another
    /// member computes it, the device it is bound for takes a copy.
    SharedFold,
    /// A join of the inputs, of this many bytes in all.
    Join(usize),
}

impl Work {
    /// The join of `parts`.
    pub(crate) fn join_of(parts: &[Tensor]) -> Work {
        Work::Join(parts.iter().map(Tensor::nbytes).sum())
    }

    /// Whether a Vulkan device does this work over `inputs` in host memory, with no submission:
    /// none of them in its device memory ([`in_vulkan_device_memory`]), and a join of less than
    /// [`DEVICE_MIN_BYTES`], or a fold of inputs each under it (they and the result live in host
    /// memory) that the host computes (`backend/vulkan/on_host.rs`).
    fn in_host_memory(self, inputs: &[Tensor]) -> bool {
        if inputs.iter().any(in_vulkan_device_memory) {
            return false;
        }
        let each = inputs.iter().map(Tensor::nbytes).max().unwrap_or(0);
        match self {
            Work::Join(bytes) => bytes < DEVICE_MIN_BYTES,
            Work::Fold => each < DEVICE_MIN_BYTES && folds_on_host(each, (inputs.len() + 1) * each),
            Work::SharedFold => false,
        }
    }
}

/// Whether the host computes a Vulkan fold of tensors of at most `each` bytes moving `bytes`.
fn folds_on_host(each: usize, bytes: usize) -> bool {
    #[cfg(feature = "vulkan")]
    return crate::backend::vulkan::kernel_on_host(each, bytes);
    #[cfg(not(feature = "vulkan"))]
    {
        let _ = (each, bytes);
        false
    }
}

/// Where `work` bound for `to` is computed from `inputs`: `to` itself, except a Vulkan device
/// sharing its GPU with a CUDA device that holds one of the inputs (the device bridge). There,
/// the CUDA device computes it and copies it into the Vulkan device's memory, so that no Vulkan
/// kernel follows the call's CUDA work: on one GPU a Vulkan submission issued after CUDA work
/// waits for the GPU to switch between the two APIs (a 512 KiB Vulkan add after a CUDA move
/// 337–362 µs, the move alone 10 and the add alone 21: H100,
/// `bench/gpu/35-one-shot-reduce-scatter`, run a's probe). Moved so on an H200
/// (`bench/gpu/36-cuda-computes-for-vulkan`, run a): the all_to_all of `cuda:0,vulkan:0` 55.3 µs
/// at 1 MiB (355.5 before), a Vulkan leader's gather 40.6 (375.7) and reduce 45.3 (381.2). These
/// exceptions keep the work on `to`:
/// - work the Vulkan device does in host memory, with no submission ([`Work::in_host_memory`]).
///   A join of less than [`DEVICE_MIN_BYTES`]: its inputs and result live in host memory, which
///   the Vulkan device joins without a kernel (a Vulkan leader's gather at 4 KiB 14.2 µs, 34.5
///   computed by CUDA). A fold for `to` alone of inputs under that size, which the host computes
///   once the CUDA input is downloaded (`backend/vulkan/on_host.rs`); on an H100
///   (`bench/gpu/48-host-time`, run c, three rounds, µs, computed by CUDA → on `to`): the reduce
///   of `vulkan:0,cuda:0` 20.0–25.8 → 13.5–18.5 at 4 KiB, 32.9–42.8 → 23.6–31.0 at 64 KiB,
///   72.6–102.5 → 51.1–75.3 at 240 KiB; of `vulkan:0,cpu:0,cuda:0` 25.0–30.3 → 19.3–22.4 at
///   4 KiB; the one-shot reduce_scatter of `vulkan:0,cuda:0` 48.7–51.6 → 32.3–40.7 at 4 KiB,
///   84.0–89.6 → 61.8–65.3 at 192 KiB. (When these folds moved, a Vulkan fold was a Vulkan
///   kernel: the reduce at 4 KiB 24.3 µs on CUDA, 45.1 on Vulkan, run 36.) A fold that every
///   member computes ([`Work::SharedFold`], the one-shot all_reduce's) moves at every size: the
///   CUDA member folds anyway, and the Vulkan member's own fold lost (run b: `cuda:0,vulkan:0`
///   at 4 KiB 23.6–25.6 copied → 34.7–35.9 its own);
/// - an input on `to` that leaves it by a Vulkan submission ([`copied_out_by_vulkan`], a strided
///   part under [`DEVICE_MIN_BYTES`] of a tensor in device memory): the CUDA work would follow
///   it. A contiguous part of one the device bridge reads in place (`exec/schedule.rs`), and work
///   over it moves. While such parts left by a Vulkan copy, the all_to_all of `cuda:0,vulkan:0`
///   at 256 KiB (128 KiB parts) took 695–764 µs computed by CUDA and 360–420 by Vulkan (run
///   37); with the bridge reading them (`bench/gpu/48-host-time`, run e, H200, two rounds, µs):
///   the all_to_all of both orders 395.5–414.3 → 52.2–67.0 at 256 KiB, 406.2–432.7 → 51.7–63.7
///   at 384 KiB; the one-shot reduce_scatter 405.5–452.9 → 55.2–76.1 and 424.8–465.5 →
///   59.8–82.3.
pub(crate) fn site(to: Device, inputs: &[Tensor], work: Work) -> Device {
    if !matches!(to, Device::Vulkan(_)) {
        return to;
    }
    let cuda = |d: &Device| matches!(d, Device::Cuda(_)) && crate::backend::staged::will_share_gpu(*d, to);
    let Some(at) = inputs.iter().map(Tensor::device).find(cuda) else { return to };
    let submits = |x: &Tensor| x.device() == to && copied_out_by_vulkan(x);
    match work.in_host_memory(inputs) || inputs.iter().any(submits) {
        true => to,
        false => at,
    }
}

/// Whether Vulkan tensor `x` reaches a CUDA device of its GPU by a Vulkan submission: a part of
/// less than [`DEVICE_MIN_BYTES`] of a tensor in the device's memory ([`in_vulkan_device_memory`])
/// that is not a view of it, so a Vulkan kernel cuts it out. A view (a contiguous part) the device
/// bridge reads in place, however small ([`views_vulkan_device_memory`]); a part of that size or
/// more it moves; a smaller whole lives in host memory, which the host reads without a submission.
fn copied_out_by_vulkan(x: &Tensor) -> bool {
    x.nbytes() < DEVICE_MIN_BYTES && in_vulkan_device_memory(x) && !views_vulkan_device_memory(x)
}

/// Whether Vulkan tensor `x` is, or is a part of (through slices and reshapes), a tensor of at
/// least [`DEVICE_MIN_BYTES`]: the Vulkan backend gives a tensor that size memory of its own on
/// the device (which the CUDA device of its GPU reads), where the host does not read it.
fn in_vulkan_device_memory(x: &Tensor) -> bool {
    matches!(x.device(), Device::Vulkan(_)) && cut_from(x, false).nbytes() >= DEVICE_MIN_BYTES
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
    let mut folds: Vec<Tensor> = Vec::with_capacity(devices.len());
    let mut fold_on = |at: Device| -> Result<Tensor> {
        if let Some(t) = folds.iter().find(|t| t.device() == at) {
            return Ok(t.clone());
        }
        let t = Tensor::reduce_on(at, shards, kind, scale)?;
        folds.push(t.clone());
        Ok(t)
    };
    devices.iter().map(|&d| Ok(hops.hop(&fold_on(site(d, shards, Work::SharedFold))?, d))).collect()
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
    let at = site(root, shards, Work::join_of(shards));
    join_on(hops, shards, dim, at, root)
}

/// `shards` joined along `dim` on device `at` (each read in place where `at` can), the result
/// hopped to `root`: [`gather_to`] once its [`site`] is known.
pub(crate) fn join_on(
    hops: &mut Hops,
    shards: &[Tensor],
    dim: usize,
    at: Device,
    root: Device,
) -> Result<Tensor> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::graph::Shape;

    const VK: Device = Device::Vulkan(0);
    const AT: usize = DEVICE_MIN_BYTES;

    /// A graph-only f32 tensor of `bytes` on `device` (no device is touched).
    fn tensor(bytes: usize, device: Device) -> Tensor {
        Tensor::placeholder(Shape::from(vec![bytes / 4]), DType::F32, device)
    }

    /// A strided part under `DEVICE_MIN_BYTES` of a whole of at least that size (cut out by a
    /// Vulkan kernel) leaves by a Vulkan copy, through reshapes too; a contiguous part (a view,
    /// which the device bridge reads in place), the whole itself, a part of a smaller whole and a
    /// part of that size do not.
    #[test]
    fn only_a_small_strided_part_of_a_large_vulkan_tensor_is_copied_out_by_vulkan() {
        let whole = tensor(AT, VK);
        assert!(!copied_out_by_vulkan(&whole));
        assert!(!copied_out_by_vulkan(&whole.narrow(0, 0, AT / 8).unwrap()), "half of it, a view");
        let rows = whole.reshape([2, AT / 8]).unwrap();
        assert!(!copied_out_by_vulkan(&rows.narrow(0, 1, 1).unwrap().flatten().unwrap()), "a row");
        let columns = rows.narrow(1, 0, AT / 16).unwrap();
        assert!(copied_out_by_vulkan(&columns), "half of each row: strided");
        assert!(copied_out_by_vulkan(&columns.flatten().unwrap()), "that part flattened");
        let small = tensor(AT - 16, VK).reshape([2, (AT - 16) / 8]).unwrap();
        assert!(!copied_out_by_vulkan(&small.narrow(1, 0, 4).unwrap()), "a part of a whole in host memory");
        let big = tensor(AT * 4, VK).reshape([2, AT / 2]).unwrap();
        assert!(!copied_out_by_vulkan(&big.narrow(1, 0, AT / 8).unwrap()), "a part the bridge moves");
        assert!(copied_out_by_vulkan(&big.narrow(1, 0, AT / 8 - 1).unwrap()));
    }

    /// A fold for one device alone of tensors under `DEVICE_MIN_BYTES` is done in host memory
    /// (with the default bounds), not one past the host's kernel bound (4 MiB moved), nor one
    /// that every member computes, nor one of larger tensors or of a part of one.
    #[test]
    fn a_small_fold_for_one_device_is_done_in_host_memory() {
        let small = [tensor(AT - 4, Device::Cuda(0)), tensor(AT - 4, VK)];
        let defaults = [crate::VULKAN_HOST_ENV, crate::VULKAN_HOST_KERNEL_ENV]
            .iter()
            .all(|k| std::env::var_os(k).is_none());
        assert_eq!(Work::Fold.in_host_memory(&small), defaults);
        assert!(!Work::SharedFold.in_host_memory(&small));
        assert!(!Work::Fold.in_host_memory(&[tensor(AT, Device::Cuda(0)), tensor(AT, VK)]));
        assert!(!Work::Fold.in_host_memory(&vec![tensor(AT - 4, VK); 16]), "17 × (256 KiB − 4) moved");
        let part = tensor(AT, VK).narrow(0, 0, AT / 8).unwrap();
        let cuda = tensor(AT / 2, Device::Cuda(0));
        assert!(!Work::Fold.in_host_memory(&[cuda, part]), "a part of a tensor in device memory");
    }

    /// Whatever the machine has, `site` keeps on its device work bound for a device that is not
    /// Vulkan, a join under `DEVICE_MIN_BYTES`, a fold for that device alone of inputs under it,
    /// and work one of whose inputs on that Vulkan device leaves it by a Vulkan copy.
    #[test]
    fn site_keeps_what_must_stay() {
        let cuda = tensor(AT, Device::Cuda(0));
        let part = tensor(AT, VK).reshape([2, AT / 8]).unwrap().narrow(1, 0, AT / 16).unwrap();
        assert_eq!(
            site(Device::Cpu(0), &[cuda.clone(), tensor(AT, Device::Cpu(0))], Work::Fold),
            Device::Cpu(0)
        );
        assert_eq!(site(VK, &[cuda.clone(), tensor(4096, VK)], Work::Join(AT - 1)), VK);
        let small = [tensor(AT - 4, Device::Cuda(0)), tensor(AT - 4, VK)];
        assert_eq!(site(VK, &small, Work::Fold), VK);
        assert_eq!(site(VK, &[cuda.clone(), part.clone()], Work::Fold), VK);
        assert_eq!(site(VK, &[part, cuda], Work::Join(AT)), VK);
    }
}
