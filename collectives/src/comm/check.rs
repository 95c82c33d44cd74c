//! What one rank's call is, and the checks of its own arguments, shared by every communicator.
//!
//! Each rank checks its own input before it meets the others (device, op, root, dim), so a bad
//! argument is the caller's typed error. What only the meeting can see — that every rank made
//! the same call with the same dtype and shape — is compared through [`Call`].

use std::fmt;

use crate::collective::{ReduceOp, check_dim};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::{Shape, Tensor};

/// A collective and its arguments other than the tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Kind {
    AllReduce(ReduceOp),
    Reduce { op: ReduceOp, root: usize },
    Broadcast { root: usize },
    AllGather { dim: usize },
    ReduceScatter { op: ReduceOp, dim: usize },
    Barrier,
}

impl Kind {
    /// The trait method's name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::AllReduce(_) => "all_reduce",
            Kind::Reduce { .. } => "reduce",
            Kind::Broadcast { .. } => "broadcast",
            Kind::AllGather { .. } => "all_gather",
            Kind::ReduceScatter { .. } => "reduce_scatter",
            Kind::Barrier => "barrier",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        match *self {
            Kind::AllReduce(op) => write!(f, "{name}({op})"),
            Kind::Reduce { op, root } => write!(f, "{name}({op}, root {root})"),
            Kind::Broadcast { root } => write!(f, "{name}(root {root})"),
            Kind::AllGather { dim } => write!(f, "{name}(dim {dim})"),
            Kind::ReduceScatter { op, dim } => write!(f, "{name}({op}, dim {dim})"),
            Kind::Barrier => f.write_str(name),
        }
    }
}

/// One rank's call as the others must see it: the collective, and its tensor's dtype and shape.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Call {
    pub kind: Kind,
    pub data: Option<(DType, Shape)>,
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.data {
            Some((dtype, shape)) => write!(f, "{} of {dtype} {shape}", self.kind),
            None => write!(f, "{}", self.kind),
        }
    }
}

/// Checks one rank's arguments to `kind` (its tensor `t`, on `device`, in a world of `world`)
/// and returns the call the other ranks must match.
pub(crate) fn check_call(kind: Kind, t: Option<&Tensor>, device: Device, world: usize) -> Result<Call> {
    let op = kind.name();
    let Some(t) = t else {
        return Ok(Call { kind, data: None });
    };
    check_device(op, t, device)?;
    match kind {
        Kind::AllReduce(redop) => redop.check(op, t.dtype())?,
        Kind::Reduce { op: redop, root } => {
            check_root(op, root, world)?;
            redop.check(op, t.dtype())?;
        }
        Kind::Broadcast { root } => check_root(op, root, world)?,
        Kind::AllGather { dim } => check_dim(op, t.shape(), dim)?,
        Kind::ReduceScatter { op: redop, dim } => {
            redop.check(op, t.dtype())?;
            check_even(op, t.shape(), dim, world)?;
        }
        Kind::Barrier => {}
    }
    Ok(Call { kind, data: Some((t.dtype(), t.shape().clone())) })
}

/// Checks that `t` lives on this rank's `device`.
pub(crate) fn check_device(op: &'static str, t: &Tensor, device: Device) -> Result<()> {
    if t.device() != device {
        return Err(Error::DeviceMismatch { op, index: 0, expected: device, got: t.device() });
    }
    Ok(())
}

/// Checks that `root` is a rank of a world of `world`.
pub(crate) fn check_root(op: &'static str, root: usize, world: usize) -> Result<()> {
    if root >= world {
        let msg = format!("root {root} is not a rank of a world of size {world}");
        return Err(Error::InvalidArgument { what: op, msg });
    }
    Ok(())
}

/// Checks that `peer` is a rank of a world of `world`.
pub(crate) fn check_peer(op: &'static str, peer: usize, world: usize) -> Result<()> {
    if peer >= world {
        let msg = format!("peer {peer} is not a rank of a world of size {world}");
        return Err(Error::InvalidArgument { what: op, msg });
    }
    Ok(())
}

/// Checks that dim `dim` of `shape` splits into `world` equal parts.
pub(crate) fn check_even(op: &'static str, shape: &Shape, dim: usize, world: usize) -> Result<()> {
    check_dim(op, shape, dim)?;
    let len = shape.dim(dim);
    if !len.is_multiple_of(world) {
        let hint = "pad the dimension to a multiple of the world size";
        return Err(Error::Uneven { op, dim, len, parts: world, hint });
    }
    Ok(())
}

/// Checks that a message `t` from rank `from` has the `shape` and `dtype` the receiver expects.
pub(crate) fn check_message(
    op: &'static str,
    from: usize,
    t: &Tensor,
    shape: &Shape,
    dtype: DType,
) -> Result<()> {
    if t.dtype() != dtype || t.shape() != shape {
        let msg =
            format!("rank {from} sent {} {} but the receiver expects {dtype} {shape}", t.dtype(), t.shape());
        return Err(Error::Comm { op, msg });
    }
    Ok(())
}

/// A comma-separated list of ranks.
pub(crate) fn rank_list(ranks: &[usize]) -> String {
    ranks.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}
