//! The NCCL path of the collectives, for all-CUDA groups: each call becomes one
//! `Op::Collective` node that issues an NCCL group call across the members' streams when it
//! runs, and one `Op::Part` node per output taking that device's buffer. Building the nodes
//! touches no device; the communicators are made on first use (once per set of devices).

use super::call::everywhere;
use super::{DeviceGroup, ReduceOp};
use crate::backend::nccl::{NcclCall as Call, clique_call};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::graph::{Shape, Tensor};

/// The call's node over `inputs`, and one part per `(device, shape)` of `outs`.
fn build(group: &DeviceGroup, call: Call, inputs: &[Tensor], outs: &[(Device, Shape)]) -> Vec<Tensor> {
    super::call::nodes(group, clique_call(group.devices().to_vec(), call), inputs, outs)
}

pub(crate) fn reduce(group: &DeviceGroup, shards: &[Tensor], op: ReduceOp) -> Result<Tensor> {
    let out = [(group.leader(), shards[0].shape().clone())];
    Ok(build(group, Call::Reduce(op, group.leader_index()), shards, &out).remove(0))
}

pub(crate) fn all_reduce(group: &DeviceGroup, shards: &[Tensor], op: ReduceOp) -> Result<Vec<Tensor>> {
    Ok(build(group, Call::AllReduce(op), shards, &everywhere(group, shards[0].shape())))
}

pub(crate) fn broadcast(group: &DeviceGroup, t: &Tensor, root: usize) -> Result<Vec<Tensor>> {
    let mut outs =
        build(group, Call::Broadcast(root), std::slice::from_ref(t), &everywhere(group, t.shape()));
    outs[root] = t.clone();
    Ok(outs)
}

pub(crate) fn all_gather(group: &DeviceGroup, shards: &[Tensor], dim: usize) -> Result<Vec<Tensor>> {
    let s = shards[0].shape();
    let joined = s.dim(dim).checked_mul(group.size()).ok_or_else(|| Error::TooLarge {
        what: "all_gather",
        size: format!("dim {dim} of {s} times {} shards", group.size()),
    })?;
    let shape = s.with_dim(dim, joined);
    shape.bytes("all_gather", shards[0].dtype())?;
    Ok(build(group, Call::AllGather, shards, &everywhere(group, &shape)))
}

pub(crate) fn reduce_scatter(
    group: &DeviceGroup,
    shards: &[Tensor],
    op: ReduceOp,
    dim: usize,
) -> Result<Vec<Tensor>> {
    let s = shards[0].shape();
    let shape = s.with_dim(dim, s.dim(dim) / group.size());
    Ok(build(group, Call::ReduceScatter(op), shards, &everywhere(group, &shape)))
}
