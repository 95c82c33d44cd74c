//! The NCCL path of the collectives, for all-CUDA groups: each call becomes one
//! `Op::Collective` node issuing an NCCL group call across the members' streams, and one
//! `Op::Part` node per device taking that device's output.

use super::{DeviceGroup, ReduceOp};
use crate::error::{Error, Result};
use crate::graph::Tensor;

fn unavailable(group: &DeviceGroup) -> Error {
    Error::DeviceUnavailable { device: group.leader(), reason: "this build has no NCCL path yet".into() }
}

pub(crate) fn reduce(group: &DeviceGroup, _shards: &[Tensor], _op: ReduceOp) -> Result<Tensor> {
    Err(unavailable(group))
}

pub(crate) fn all_reduce(group: &DeviceGroup, _shards: &[Tensor], _op: ReduceOp) -> Result<Vec<Tensor>> {
    Err(unavailable(group))
}

pub(crate) fn broadcast(group: &DeviceGroup, _t: &Tensor, _root: usize) -> Result<Vec<Tensor>> {
    Err(unavailable(group))
}

pub(crate) fn all_gather(group: &DeviceGroup, _shards: &[Tensor], _dim: usize) -> Result<Vec<Tensor>> {
    Err(unavailable(group))
}

pub(crate) fn reduce_scatter(
    group: &DeviceGroup,
    _shards: &[Tensor],
    _op: ReduceOp,
    _dim: usize,
) -> Result<Vec<Tensor>> {
    Err(unavailable(group))
}
