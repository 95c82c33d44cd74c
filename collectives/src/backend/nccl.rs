//! The NCCL calls the library makes, as data: one vocabulary for the clique of an all-CUDA
//! [`crate::DeviceGroup`] (one process driving every member) and for `NcclComm`'s rank (one
//! process per GPU). Both issue them through the CUDA backend's one issue function
//! (`backend::cuda::nccl::issue`).
//!
//! This file is built without the `cuda` feature too: the collectives name NCCL calls whatever
//! the build, and [`clique_call`] then answers a kernel that fails with
//! [`crate::Error::BackendNotBuilt`] when it runs.

use std::sync::Arc;

use crate::device::Device;
use crate::graph::{MultiKernel, ReduceOp};

/// One NCCL call. Counts are NCCL's: the input's element count, except reduce_scatter's and a
/// receive's, which are the output's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum NcclCall {
    /// `ncclAllReduce`: in and out of `count`.
    AllReduce(ReduceOp),
    /// `ncclReduce` onto rank `root`: in of `count`, out (root only) of `count`.
    Reduce(ReduceOp, usize),
    /// `ncclBroadcast` from rank `root`: in (root only) and out of `count`.
    Broadcast(usize),
    /// `ncclAllGather`: in of `count`, out of `count * world`.
    AllGather,
    /// `ncclReduceScatter`: in of `count * world`, out of `count`.
    ReduceScatter(ReduceOp),
    /// `ncclSend` of `count` to the peer.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // NcclComm's
    Send(usize),
    /// `ncclRecv` of `count` from the peer.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // NcclComm's
    Recv(usize),
    /// An in-place sum of one byte: returns on every rank once all have called it.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // NcclComm's
    Barrier,
}

impl NcclCall {
    /// The NCCL function's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            NcclCall::AllReduce(_) => "ncclAllReduce",
            NcclCall::Reduce(..) => "ncclReduce",
            NcclCall::Broadcast(_) => "ncclBroadcast",
            NcclCall::AllGather => "ncclAllGather",
            NcclCall::ReduceScatter(_) => "ncclReduceScatter",
            NcclCall::Send(_) => "ncclSend",
            NcclCall::Recv(_) => "ncclRecv",
            NcclCall::Barrier => "barrier",
        }
    }

    /// The operator NCCL reduces with (`Sum` for calls that do not reduce).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub fn red_op(self) -> ReduceOp {
        match self {
            NcclCall::AllReduce(op) | NcclCall::Reduce(op, _) | NcclCall::ReduceScatter(op) => op,
            _ => ReduceOp::Sum,
        }
    }
}

/// `call` as one NCCL group call over `members` (distinct CUDA devices, in rank order), run when
/// its `Op::Collective` node is: each input is rank i's, each output rank i's (a reduce: the
/// root's alone; a broadcast reads one input, the root's).
pub(crate) fn clique_call(members: Vec<Device>, call: NcclCall) -> Arc<dyn MultiKernel> {
    #[cfg(feature = "cuda")]
    return Arc::new(super::cuda::nccl::CliqueCall { members, call });
    #[cfg(not(feature = "cuda"))]
    Arc::new(NotBuilt { members, call })
}

/// The NCCL call of a build without the `cuda` feature: fails when run.
#[cfg(not(feature = "cuda"))]
struct NotBuilt {
    members: Vec<Device>,
    call: NcclCall,
}

#[cfg(not(feature = "cuda"))]
impl MultiKernel for NotBuilt {
    fn name(&self) -> String {
        format!("nccl {:?}", self.call)
    }

    fn run(&self, _inputs: &[Arc<super::Buffer>]) -> crate::Result<Vec<Arc<super::Buffer>>> {
        Err(crate::Error::BackendNotBuilt { device: self.members[0], feature: "cuda" })
    }
}
