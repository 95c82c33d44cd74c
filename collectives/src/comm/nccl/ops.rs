//! The NCCL calls `NcclComm` makes, and the mapping of the crate's dtypes and ops onto NCCL's.

use std::ffi::c_void;

use cudarc::nccl::sys::{self, ncclDataType_t, ncclRedOp_t, ncclResult_t};
use half::{bf16, f16};

use crate::collective::ReduceOp;
use crate::dtype::DType;
use crate::error::{Error, Result};

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

    /// The scalar of a pre-multiplied sum, which needs an op made for the call.
    pub fn pre_mul_sum(self) -> Option<f64> {
        match self {
            NcclCall::AllReduce(ReduceOp::PreMulSum(s))
            | NcclCall::Reduce(ReduceOp::PreMulSum(s), _)
            | NcclCall::ReduceScatter(ReduceOp::PreMulSum(s)) => Some(s),
            _ => None,
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

/// The built-in NCCL op of `call` (`Sum` for calls that do not reduce; a pre-multiplied sum
/// replaces it with an op made for the call).
pub(super) fn op_of(call: NcclCall) -> ncclRedOp_t {
    let op = match call {
        NcclCall::AllReduce(op) | NcclCall::Reduce(op, _) | NcclCall::ReduceScatter(op) => op,
        _ => ReduceOp::Sum,
    };
    match op {
        ReduceOp::Sum | ReduceOp::PreMulSum(_) => ncclRedOp_t::ncclSum,
        ReduceOp::Prod => ncclRedOp_t::ncclProd,
        ReduceOp::Max => ncclRedOp_t::ncclMax,
        ReduceOp::Min => ncclRedOp_t::ncclMin,
        ReduceOp::Avg => ncclRedOp_t::ncclAvg,
    }
}

/// NCCL's name for `d`.
pub(super) fn nccl_type(d: DType) -> ncclDataType_t {
    use ncclDataType_t as T;
    match d {
        DType::F32 => T::ncclFloat32,
        DType::F64 => T::ncclFloat64,
        DType::F16 => T::ncclFloat16,
        DType::BF16 => T::ncclBfloat16,
        DType::I32 => T::ncclInt32,
        DType::I64 => T::ncclInt64,
        DType::U8 => T::ncclUint8,
    }
}

/// The bytes of `s` as one value of `dtype` (integer dtypes need an integral `s`).
pub(super) fn scalar_bytes(s: f64, dtype: DType) -> Result<[u8; 8]> {
    if dtype.is_int() && !(s.is_finite() && s.fract() == 0.0) {
        let redop = ReduceOp::PreMulSum(s).to_string();
        let reason = "an integer dtype takes only an integer scalar; cast to a float dtype first";
        return Err(Error::BadReduceOp { op: "nccl", redop, dtype, reason });
    }
    let mut b = [0u8; 8];
    let i = s as i64;
    match dtype {
        DType::F32 => b[..4].copy_from_slice(&(s as f32).to_ne_bytes()),
        DType::F64 => b.copy_from_slice(&s.to_ne_bytes()),
        DType::F16 => b[..2].copy_from_slice(&f16::from_f64(s).to_bits().to_ne_bytes()),
        DType::BF16 => b[..2].copy_from_slice(&bf16::from_f64(s).to_bits().to_ne_bytes()),
        DType::I32 => b[..4].copy_from_slice(&(i as i32).to_ne_bytes()),
        DType::I64 => b.copy_from_slice(&i.to_ne_bytes()),
        DType::U8 => b[0] = i as u8,
    }
    Ok(b)
}
