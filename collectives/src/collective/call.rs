//! Collectives issued as one multi-device call: an `Op::Collective` node over the shards and one
//! `Op::Part` node per output, the shape shared by NCCL calls and the host star (all_reduce,
//! all_gather and reduce_scatter of a group of host devices; its all_to_all too; and of a group of
//! host and Vulkan devices below [`HOST_STAGED_BELOW_BYTES`] a shard, the Vulkan members staged
//! through a host member, CUDA members too where [`host_stages_cuda`] says; and so of a group
//! of Vulkan and CUDA devices alone, staged through `cpu:0`), and by the small fold or join
//! (an all_to_all's too) of one CUDA device beside host or Vulkan devices as one CUDA kernel
//! fanned out to the others, where [`cuda_fans_out`] says (`backend/fanned.rs`).
//!
//! A realize whose targets are the parts of one call with its inputs in place issues the call
//! directly, without the graph pass and the schedule (`exec/direct.rs`); that is why a call is
//! worth building where one kernel already does the whole collective.

use std::sync::Arc;

use smallvec::smallvec;

use super::{
    Algorithm, CollectiveKind, DeviceGroup, HOST_STAGED_BELOW_BYTES, ReduceOp, cuda_fans_out,
    host_stages_cuda,
};
use crate::backend::Kernel;
use crate::backend::cpu::{HostAllToAll, HostReduceScatter, HostScatter, HostStaged, HostStar};
use crate::backend::fanned::FannedCall;
use crate::device::{Device, DeviceKind};
use crate::error::Result;
use crate::graph::{CollectiveCall, MultiKernel, Op, Shape, Tensor};
use crate::route::STAGING_HOST;

/// `kernel`'s node over `inputs` on `group`'s leader, and one part per `(device, shape)` of `outs`.
pub(crate) fn nodes(
    group: &DeviceGroup,
    kernel: Arc<dyn MultiKernel>,
    inputs: &[Tensor],
    outs: &[(Device, Shape)],
) -> Vec<Tensor> {
    nodes_on(group.leader(), kernel, inputs, outs)
}

/// `kernel`'s node over `inputs` on `at`, and one part per `(device, shape)` of `outs`.
fn nodes_on(
    at: Device,
    kernel: Arc<dyn MultiKernel>,
    inputs: &[Tensor],
    outs: &[(Device, Shape)],
) -> Vec<Tensor> {
    let dtype = inputs[0].dtype();
    let op = Op::Collective(CollectiveCall(kernel));
    let node = Tensor::new_node(op, inputs.into(), at, dtype, Shape::from([0]), None);
    outs.iter()
        .enumerate()
        .map(|(index, (d, s))| {
            Tensor::new_node(Op::Part { index }, smallvec![node.clone()], *d, dtype, s.clone(), None)
        })
        .collect()
}

/// One output of `shape` on every member of `group`.
pub(crate) fn everywhere(group: &DeviceGroup, shape: &Shape) -> Vec<(Device, Shape)> {
    group.devices().iter().map(|&d| (d, shape.clone())).collect()
}

/// One output of `shape` on every member of `group` but member `root` (a broadcast's others).
pub(crate) fn all_but(group: &DeviceGroup, root: usize, shape: &Shape) -> Vec<(Device, Shape)> {
    let others = group.devices().iter().enumerate().filter(|&(i, _)| i != root);
    others.map(|(_, &d)| (d, shape.clone())).collect()
}

/// Whether the collective `kind` of `group` (one with a host call: the star all_reduce,
/// all_gather, reduce_scatter and broadcast, the scatter and the all_to_all) runs as one over
/// `inputs` (the shards, or the root's tensor), `algo` chosen: two or more members, every one a
/// host device; or, every input below [`HOST_STAGED_BELOW_BYTES`] and the star chosen (the
/// collectives of one form pass it), host and Vulkan devices, and CUDA devices where
/// [`host_stages_cuda`] says, with a host member or else a Vulkan and a CUDA member, the devices
/// that are not host devices staged through a host device (`backend/cpu/staged.rs`).
pub(crate) fn runs_on_host(
    group: &DeviceGroup,
    kind: CollectiveKind,
    inputs: &[Tensor],
    algo: Algorithm,
) -> bool {
    let bytes = inputs.iter().map(Tensor::nbytes).max().unwrap_or(0);
    let members = group.devices();
    let hub = match kind {
        CollectiveKind::Broadcast | CollectiveKind::Scatter => inputs[0].device(),
        _ => group.star_hub(),
    };
    let stages = |d: &Device| match d {
        Device::Cpu(_) | Device::Vulkan(_) => true,
        Device::Cuda(_) => host_stages_cuda(kind, members, hub, bytes),
    };
    let staged = || algo == Algorithm::Star && bytes < HOST_STAGED_BELOW_BYTES && members.iter().all(stages);
    let is = |kind: DeviceKind| members.iter().any(|d| d.kind() == kind);
    members.len() >= 2
        && (is(DeviceKind::Cpu) || (is(DeviceKind::Vulkan) && is(DeviceKind::Cuda)))
        && (members.iter().all(|d| d.is_host()) || staged())
}

/// The host call `call` makes of the devices of `outs`, as [`nodes`] over `inputs`: where every
/// member of `group` is a host device, the call itself on the leader; else on a host member
/// (the leader where it is one), or [`STAGING_HOST`] where there is none, the other devices
/// staged through it ([`HostStaged`]).
fn host_nodes<K: MultiKernel + 'static>(
    group: &DeviceGroup,
    inputs: &[Tensor],
    outs: &[(Device, Shape)],
    call: impl FnOnce(Vec<Device>) -> K,
) -> Vec<Tensor> {
    let to: Vec<Device> = outs.iter().map(|&(d, _)| d).collect();
    if group.devices().iter().all(|d| d.is_host()) {
        return nodes_on(group.leader(), Arc::new(call(to)), inputs, outs);
    }
    let host = stand_in(group);
    nodes_on(host, Arc::new(HostStaged::new(&to, host, call)), inputs, outs)
}

/// The host device that stands in for `group`'s members that are not host devices: the leader
/// where it is one, else the first host member, else [`STAGING_HOST`].
fn stand_in(group: &DeviceGroup) -> Device {
    let mut hosts = std::iter::once(group.leader()).chain(group.devices().iter().copied());
    hosts.find(|d| d.is_host()).unwrap_or(STAGING_HOST)
}

/// The CUDA member whose one kernel runs the star collective `kind` of `group` over `inputs`
/// (`algo` chosen), its result delivered to every other member in its pass, where
/// [`cuda_fans_out`] says (`backend/fanned.rs`).
pub(crate) fn fans_out(
    group: &DeviceGroup,
    kind: CollectiveKind,
    inputs: &[Tensor],
    algo: Algorithm,
) -> Option<Device> {
    let bytes = inputs.iter().map(Tensor::nbytes).max().unwrap_or(0);
    let members = group.devices();
    if algo != Algorithm::Star || !cuda_fans_out(kind, members, bytes) {
        return None;
    }
    members.iter().copied().find(|d| matches!(d, Device::Cuda(_)))
}

/// `kernel` on `at` over `shards` into a result of `len` elements, output i (on member i, shaped
/// `shape`) its range `ranges[i]`, as one call ([`FannedCall`]).
fn fanned(
    group: &DeviceGroup,
    (name, at, kernel): (&'static str, Device, Kernel),
    shards: &[Tensor],
    (len, shape): (usize, &Shape),
    ranges: Vec<std::ops::Range<usize>>,
) -> Vec<Tensor> {
    let outs = group.devices().iter().copied().zip(ranges).collect();
    let call = FannedCall { name, at, host: stand_in(group), kernel, len, outs };
    nodes_on(at, Arc::new(call), shards, &everywhere(group, shape))
}

/// The star all_reduce as one kernel of `at` ([`fans_out`]).
pub(crate) fn fanned_all_reduce(
    group: &DeviceGroup,
    at: Device,
    shards: &[Tensor],
    op: ReduceOp,
) -> Vec<Tensor> {
    let (shape, len) = (shards[0].shape(), shards[0].numel());
    let what = ("all_reduce", at, fold(op, shards.len()));
    fanned(group, what, shards, (len, shape), vec![0..len; group.size()])
}

/// The star all_gather along `dim` as one kernel of `at` ([`fans_out`]).
pub(crate) fn fanned_all_gather(
    group: &DeviceGroup,
    at: Device,
    shards: &[Tensor],
    dim: usize,
) -> Result<Vec<Tensor>> {
    let (joined, kernel) = join(group, shards, dim)?;
    let len = joined.numel();
    Ok(fanned(group, ("all_gather", at, kernel), shards, (len, &joined), vec![0..len; group.size()]))
}

/// The star reduce_scatter along `dim` (every dim before it of extent 1, so each part is one
/// range of the fold; parts `part` long) as one kernel of `at` ([`fans_out`]).
pub(crate) fn fanned_reduce_scatter(
    group: &DeviceGroup,
    at: Device,
    shards: &[Tensor],
    op: ReduceOp,
    (dim, part): (usize, usize),
) -> Vec<Tensor> {
    let whole = shards[0].shape();
    let out = whole.with_dim(dim, part);
    let what = ("reduce_scatter", at, fold(op, shards.len()));
    fanned(group, what, shards, (whole.numel(), &out), parts(group.size(), out.numel()))
}

/// The all_to_all along `dim` (every dim before it of extent 1; parts `part` long) as one kernel
/// of `at` ([`fans_out`]): the join of every shard's rows, row j of each shard its part j, so
/// member j's output is the join's range j.
pub(crate) fn fanned_all_to_all(
    group: &DeviceGroup,
    at: Device,
    shards: &[Tensor],
    (dim, part): (usize, usize),
) -> Vec<Tensor> {
    let (n, shape) = (group.size(), shards[0].shape());
    let (_, _, inner) = shape.split_at_dim(dim);
    let kernel = Kernel::Concat { outer: n, mids: vec![part * inner; n], inner: 1 };
    let each = shape.numel();
    fanned(group, ("all_to_all", at, kernel), shards, (n * each, shape), parts(n, each))
}

/// The ranges of `n` parts of `each` elements, in order, of a result `n * each` long.
fn parts(n: usize, each: usize) -> Vec<std::ops::Range<usize>> {
    (0..n).map(|i| i * each..(i + 1) * each).collect()
}

/// The fold of `op` over `k` shards, as a kernel.
fn fold(op: ReduceOp, k: usize) -> Kernel {
    let (kind, scale) = op.lower(k);
    Kernel::Reduce { kind, scale }
}

/// The join of `shards` along `dim`: its shape and its concat kernel. The shape is checked as
/// `Tensor::concat_on` checks it (same ranks and extents, a size that fits).
fn join(group: &DeviceGroup, shards: &[Tensor], dim: usize) -> Result<(Shape, Kernel)> {
    let joined = Tensor::concat_on(group.leader(), shards, dim)?;
    let mids = shards.iter().map(|s| s.shape().dim(dim)).collect();
    Ok((joined.shape().clone(), Kernel::concat(joined.shape(), mids, dim)))
}

/// `kernel` on the leader over `shards` into `out`, the result on every member, as one call (see
/// `backend/cpu/call.rs`).
fn host_call(
    group: &DeviceGroup,
    name: &'static str,
    kernel: Kernel,
    shards: &[Tensor],
    out: &Shape,
) -> Vec<Tensor> {
    let (root, len) = (group.leader_index(), out.numel());
    host_nodes(group, shards, &everywhere(group, out), |devices| HostStar {
        name,
        devices,
        root,
        kernel,
        len,
    })
}

/// The star all_reduce over host devices as one call.
pub(crate) fn host_all_reduce(group: &DeviceGroup, shards: &[Tensor], op: ReduceOp) -> Vec<Tensor> {
    host_call(group, "host all_reduce", fold(op, shards.len()), shards, shards[0].shape())
}

/// The star all_gather over host devices along `dim` as one call.
pub(crate) fn host_all_gather(group: &DeviceGroup, shards: &[Tensor], dim: usize) -> Result<Vec<Tensor>> {
    let (joined, kernel) = join(group, shards, dim)?;
    Ok(host_call(group, "host all_gather", kernel, shards, &joined))
}

/// The broadcast of `t` from member `root` over host devices as one call: every other member
/// reads `t` in place, as the members of a host all_reduce read its one result (host devices
/// share one memory, and a realized tensor never changes). Entry `root` is `t` itself.
pub(crate) fn host_broadcast(group: &DeviceGroup, t: &Tensor, root: usize) -> Vec<Tensor> {
    let outs = all_but(group, root, t.shape());
    let n = t.numel();
    let parts = vec![Kernel::Slice { outer: 1, in_mid: 1, start: 0, len: 1, inner: n }; outs.len()];
    let call = |devices| HostScatter { name: "host broadcast", devices, parts };
    let mut got = host_nodes(group, std::slice::from_ref(t), &outs, call);
    got.insert(root, t.clone());
    got
}

/// The scatter of `t` along `dim` over host devices as one call: member i gets part i
/// (`sizes[i]` long along `dim`), read in place where it is one contiguous range of `t`, else
/// copied by member i.
pub(crate) fn host_scatter(group: &DeviceGroup, t: &Tensor, dim: usize, sizes: &[usize]) -> Vec<Tensor> {
    let (parts, outs) = scatter_parts(group, t, dim, sizes);
    host_nodes(group, std::slice::from_ref(t), &outs, |devices| HostScatter {
        name: "host scatter",
        devices,
        parts,
    })
}

/// The parts of a scatter of `t` along `dim` into `sizes`, in member order: each part's slice
/// kernel over `t`, and each member's output.
fn scatter_parts(
    group: &DeviceGroup,
    t: &Tensor,
    dim: usize,
    sizes: &[usize],
) -> (Vec<Kernel>, Vec<(Device, Shape)>) {
    let (whole, mut start) = (t.shape(), 0);
    let mut parts = Vec::with_capacity(sizes.len());
    for &len in sizes {
        parts.push(Kernel::slice(whole, dim, start, len));
        start += len;
    }
    let outs = group.devices().iter().zip(sizes).map(|(&d, &len)| (d, whole.with_dim(dim, len))).collect();
    (parts, outs)
}

/// The star reduce_scatter over host devices along `dim` as one call: part i (`part` long along
/// `dim`) of the fold on device i.
pub(crate) fn host_reduce_scatter(
    group: &DeviceGroup,
    shards: &[Tensor],
    op: ReduceOp,
    dim: usize,
    part: usize,
) -> Vec<Tensor> {
    let whole = shards[0].shape();
    let out = whole.with_dim(dim, part);
    let parts = (0..group.size()).map(|i| Kernel::slice(whole, dim, i * part, part)).collect();
    let (root, fold, len, part_len) =
        (group.leader_index(), fold(op, shards.len()), whole.numel(), out.numel());
    let call = |devices| HostReduceScatter { devices, root, fold, len, parts, part_len };
    host_nodes(group, shards, &everywhere(group, &out), call)
}

/// The all_to_all over host devices along `dim` (parts `part` long) as one call: member j's output
/// written in one pass over part j of every shard, read in place.
pub(crate) fn host_all_to_all(
    group: &DeviceGroup,
    shards: &[Tensor],
    dim: usize,
    part: usize,
) -> Vec<Tensor> {
    let shape = shards[0].shape();
    let (outer, _, inner) = shape.split_at_dim(dim);
    let call = |devices| HostAllToAll { devices, outer, part: part * inner };
    host_nodes(group, shards, &everywhere(group, shape), call)
}

#[cfg(feature = "cuda")]
mod cuda {
    use std::sync::Arc;

    use super::{DeviceGroup, ReduceOp, all_but, everywhere, fold, join, nodes, scatter_parts};
    use crate::backend::Kernel;
    use crate::backend::cuda::{CudaCall, Pull};
    use crate::collective::{Algorithm, CollectiveKind};
    use crate::device::Device;
    use crate::error::Result;
    use crate::graph::{Shape, Tensor};

    /// Whether the collectives of `group` can run as native CUDA calls (`backend/cuda/call.rs`):
    /// two or more members, all CUDA devices.
    pub(crate) fn native(group: &DeviceGroup) -> bool {
        group.size() >= 2 && group.devices().iter().all(|d| matches!(d, Device::Cuda(_)))
    }

    /// `pull` on every member of `group` over `inputs`, one output per `(device, shape)` of `outs`.
    fn call(group: &DeviceGroup, pull: Pull, inputs: &[Tensor], outs: &[(Device, Shape)]) -> Vec<Tensor> {
        let call = CudaCall { devices: group.devices().to_vec(), pull };
        nodes(group, Arc::new(call), inputs, outs)
    }

    /// The all_reduce of `algo` as one call: the star (the leader folds every shard and its one
    /// kernel writes every member's output), the two-shot (member i folds part i of every shard
    /// into its output, then copies the others' parts from theirs), else the one-shot (every
    /// member folds every shard).
    pub(crate) fn all_reduce(
        group: &DeviceGroup,
        shards: &[Tensor],
        op: ReduceOp,
        algo: Algorithm,
    ) -> Vec<Tensor> {
        let (fold, len) = (fold(op, shards.len()), shards[0].numel());
        let pull = match algo {
            Algorithm::Star => {
                Pull::Star { of: CollectiveKind::AllReduce, kernel: fold, len, root: group.leader_index() }
            }
            Algorithm::TwoShot => Pull::TwoShot { fold, len },
            _ => Pull::AllReduce { fold, len },
        };
        call(group, pull, shards, &everywhere(group, shards[0].shape()))
    }

    /// The reduce_scatter along `dim` of `algo` as one call: the star (the leader folds every
    /// shard whole and copies part i, `part` long along `dim`, into member i's output), else the
    /// one-shot (member i folds its part of every shard). `dim` must cut the shards into
    /// contiguous parts.
    pub(crate) fn reduce_scatter(
        group: &DeviceGroup,
        shards: &[Tensor],
        (op, dim, part): (ReduceOp, usize, usize),
        algo: Algorithm,
    ) -> Vec<Tensor> {
        let out = shards[0].shape().with_dim(dim, part);
        let (fold, len) = (fold(op, shards.len()), out.numel());
        let pull = match algo {
            Algorithm::Star => Pull::Star {
                of: CollectiveKind::ReduceScatter,
                kernel: fold,
                len,
                root: group.leader_index(),
            },
            _ => Pull::ReduceScatter { fold, part: len },
        };
        call(group, pull, shards, &everywhere(group, &out))
    }

    /// The all_gather along `dim` of `algo` as one call: the star (the leader joins every shard
    /// into every member's output), else the one-shot (every member places every shard in its
    /// output).
    pub(crate) fn all_gather(
        group: &DeviceGroup,
        shards: &[Tensor],
        dim: usize,
        algo: Algorithm,
    ) -> Result<Vec<Tensor>> {
        let (joined, join) = join(group, shards, dim)?;
        let len = joined.numel();
        let pull = match algo {
            Algorithm::Star => {
                Pull::Star { of: CollectiveKind::AllGather, kernel: join, len, root: group.leader_index() }
            }
            _ => Pull::AllGather { join, len },
        };
        Ok(call(group, pull, shards, &everywhere(group, &joined)))
    }

    /// The all_to_all along `dim` (parts `part` long) of `algo` as one call: the star (the
    /// leader's launches copy part j of every shard into member j's output), else the one-shot
    /// (member j joins part j of every shard, read in place, into its output). Either way the
    /// parts are in shard order. `dim` must cut the shards into contiguous parts.
    pub(crate) fn all_to_all(
        group: &DeviceGroup,
        shards: &[Tensor],
        (dim, part): (usize, usize),
        algo: Algorithm,
    ) -> Vec<Tensor> {
        let shape = shards[0].shape();
        let join = Kernel::concat(shape, vec![part; shards.len()], dim);
        let len = shape.with_dim(dim, part).numel();
        let pull = match algo {
            Algorithm::Star => {
                Pull::Star { of: CollectiveKind::AllToAll, kernel: join, len, root: group.leader_index() }
            }
            _ => Pull::AllToAll { join, part: len },
        };
        call(group, pull, shards, &everywhere(group, shape))
    }

    /// The broadcast of `t` from member `root` of `algo` as one call: the star (the root copies
    /// it into every other member's output in one launch), else the one-shot (every other member
    /// copies it). Entry `root` of the result is `t` itself.
    pub(crate) fn broadcast(group: &DeviceGroup, t: &Tensor, root: usize, algo: Algorithm) -> Vec<Tensor> {
        let outs = all_but(group, root, t.shape());
        let pull = match algo {
            Algorithm::Star => {
                Pull::Star { of: CollectiveKind::Broadcast, kernel: Kernel::Cast, len: t.numel(), root }
            }
            _ => Pull::Broadcast { root },
        };
        let mut got = call(group, pull, std::slice::from_ref(t), &outs);
        got.insert(root, t.clone());
        got
    }

    /// The scatter of `t` (on member `root`) along `dim` into parts of `sizes` as one call: the
    /// root's part a view of `t`, the others copied by the root's one launch into the members'
    /// memory. `dim` must cut `t` into contiguous parts.
    pub(crate) fn scatter(
        group: &DeviceGroup,
        t: &Tensor,
        root: usize,
        (dim, sizes): (usize, &[usize]),
    ) -> Vec<Tensor> {
        let (parts, outs) = scatter_parts(group, t, dim, sizes);
        call(group, Pull::Scatter { root, parts }, std::slice::from_ref(t), &outs)
    }
}

#[cfg(feature = "cuda")]
pub(crate) use cuda::{
    all_gather as cuda_all_gather, all_reduce as cuda_all_reduce, all_to_all as cuda_all_to_all,
    broadcast as cuda_broadcast, native as cuda_native, reduce_scatter as cuda_reduce_scatter,
    scatter as cuda_scatter,
};
