//! Collectives issued as one multi-device call: an `Op::Collective` node over the shards and one
//! `Op::Part` node per output, the shape shared by NCCL calls and the host star.
//!
//! A realize whose targets are the parts of one call with its inputs in place issues the call
//! directly, without the graph pass and the schedule (`exec/direct.rs`); that is why a call is
//! worth building where one kernel already does the whole collective.

use std::sync::Arc;

use super::{DeviceGroup, ReduceOp};
use crate::backend::cpu::HostAllReduce;
use crate::device::Device;
use crate::graph::{CollectiveCall, MultiKernel, Op, Shape, Tensor};

/// `kernel`'s node over `inputs` on `group`'s leader, and one part per `(device, shape)` of `outs`.
pub(crate) fn nodes(
    group: &DeviceGroup,
    kernel: Arc<dyn MultiKernel>,
    inputs: &[Tensor],
    outs: &[(Device, Shape)],
) -> Vec<Tensor> {
    let dtype = inputs[0].dtype();
    let node = Tensor::new_node(
        Op::Collective(CollectiveCall(kernel)),
        inputs.to_vec(),
        group.leader(),
        dtype,
        Shape::new(vec![0]),
        None,
    );
    outs.iter()
        .enumerate()
        .map(|(index, (d, s))| {
            Tensor::new_node(Op::Part { index }, vec![node.clone()], *d, dtype, s.clone(), None)
        })
        .collect()
}

/// Whether the star all_reduce of `group` runs as one host call: every member is a host device,
/// and there are at least two (one member's all_reduce is its shard, or one scale).
pub(crate) fn host_star(group: &DeviceGroup) -> bool {
    group.size() >= 2 && group.devices().iter().all(|d| d.is_host())
}

/// The star all_reduce over host devices as one call (see `backend/cpu/call.rs`).
pub(crate) fn host_all_reduce(group: &DeviceGroup, shards: &[Tensor], op: ReduceOp) -> Vec<Tensor> {
    let (kind, scale) = op.lower(shards.len());
    let devices = group.devices().to_vec();
    let kernel = HostAllReduce { devices, root: group.leader_index(), kind, scale };
    let outs: Vec<(Device, Shape)> =
        group.devices().iter().map(|&d| (d, shards[0].shape().clone())).collect();
    nodes(group, Arc::new(kernel), shards, &outs)
}
