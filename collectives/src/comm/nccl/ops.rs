//! The NCCL calls `NcclComm` makes, and the mapping of the crate's ops onto the CUDA backend's
//! NCCL operators (whose dtypes and scalars the backend maps onto NCCL's).

use std::ffi::c_void;

use cudarc::nccl::sys::{self, ncclDataType_t, ncclRedOp_t, ncclResult_t};

use crate::backend::cuda::nccl::NcclRedOp;
use crate::collective::ReduceOp;

/// One NCCL call of this rank. Counts are NCCL's: the input's element count, except
/// reduce_scatter's, which is the output's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum NcclCall {
    /// `ncclAllReduce`: in and out of `count`.
    AllReduce(ReduceOp),
    /// `ncclReduce` onto the root: in of `count`, out (root only) of `count`.
    Reduce(ReduceOp, usize),
    /// `ncclBroadcast` from the root: in (root only) and out of `count`.
    Broadcast(usize),
    /// `ncclAllGather`: in of `count`, out of `count * world`.
    AllGather,
    /// `ncclReduceScatter`: in of `count * world`, out of `count`.
    ReduceScatter(ReduceOp),
    /// `ncclSend` of `count` to the peer.
    Send(usize),
    /// `ncclRecv` of `count` from the peer.
    Recv(usize),
    /// An in-place sum of one byte: returns on every rank once all have called it.
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
    pub fn red_op(self) -> NcclRedOp {
        let op = match self {
            NcclCall::AllReduce(op) | NcclCall::Reduce(op, _) | NcclCall::ReduceScatter(op) => op,
            _ => ReduceOp::Sum,
        };
        match op {
            ReduceOp::Sum => NcclRedOp::Sum,
            ReduceOp::Prod => NcclRedOp::Prod,
            ReduceOp::Max => NcclRedOp::Max,
            ReduceOp::Min => NcclRedOp::Min,
            ReduceOp::Avg => NcclRedOp::Avg,
            ReduceOp::PreMulSum(s) => NcclRedOp::PreMulSum(s),
        }
    }

    /// Issues the call.
    ///
    /// # Safety
    /// `send` and `recv` hold what the call reads and writes for `count` on the communicator's
    /// device, `op` is valid for `comm`, `comm` is live and used by no other thread meanwhile.
    pub unsafe fn issue(
        self,
        (send, recv): (*const c_void, *mut c_void),
        count: usize,
        t: ncclDataType_t,
        op: ncclRedOp_t,
        comm: sys::ncclComm_t,
        stream: sys::cudaStream_t,
    ) -> ncclResult_t {
        // SAFETY: as the caller guarantees.
        unsafe {
            match self {
                NcclCall::AllReduce(_) | NcclCall::Barrier => {
                    sys::ncclAllReduce(send, recv, count, t, op, comm, stream)
                }
                NcclCall::Reduce(_, root) => {
                    sys::ncclReduce(send, recv, count, t, op, root as i32, comm, stream)
                }
                NcclCall::Broadcast(root) => {
                    sys::ncclBroadcast(send, recv, count, t, root as i32, comm, stream)
                }
                NcclCall::AllGather => sys::ncclAllGather(send, recv, count, t, comm, stream),
                NcclCall::ReduceScatter(_) => sys::ncclReduceScatter(send, recv, count, t, op, comm, stream),
                NcclCall::Send(peer) => sys::ncclSend(send, count, t, peer as i32, comm, stream),
                NcclCall::Recv(peer) => sys::ncclRecv(recv, count, t, peer as i32, comm, stream),
            }
        }
    }
}
