//! NCCL, the one layer: every NCCL call the library makes goes through [`issue`], over cudarc's
//! `result` layer, with its operator from [`RedOp::new`].
//!
//! Two users sit on it. [`clique::NcclClique`] holds one communicator per member of an all-CUDA
//! group (one process drives them all) and runs each collective as one NCCL group call across
//! them; [`rank::RankComm`] is one process's rank of a multi-process job (`NcclComm`), with
//! the watchdog of [`watch`] that turns a dead peer into an error. The calls themselves are data
//! ([`crate::backend::nccl::NcclCall`]), shared with builds without CUDA.
//!
//! Semantics are NCCL's, which differ from the library's native kernels at rounding level:
//! `Avg` on floats and `PreMulSum` multiply each input by the scalar before summing (integers:
//! sum, then divide truncating — as the native path). For NaN, NCCL 2.28's f32 `Max` was seen to
//! propagate it on the H200s (the native kernels guarantee it); NCCL does not document this, so
//! choose the native path where NaN propagation must be guaranteed.

mod clique;
pub(crate) mod rank;
mod watch;

use std::ffi::{CStr, c_void};

use cudarc::nccl::result::{self, NcclError, NcclStatus};
use cudarc::nccl::sys::{self, ncclResult_t};
use half::{bf16, f16};

use super::driver;
use crate::backend::nccl::NcclCall;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::ReduceOp;

pub(crate) use clique::CliqueCall;
#[cfg(test)]
pub(crate) use clique::NcclClique;

/// Whether NCCL can run here: libcuda and libnccl load with every symbol used.
pub(crate) fn nccl_available() -> bool {
    driver::driver_status().is_ok() && driver::nccl_status().is_ok()
}

/// Whether NCCL can run a clique of `devices`: it is available, and they are CUDA devices on
/// distinct GPUs (two virtual devices of one GPU cannot be NCCL ranks).
pub(crate) fn nccl_usable(devices: &[crate::device::Device]) -> bool {
    let mut gpus = Vec::with_capacity(devices.len());
    for &d in devices {
        match super::virt::gpu_of(d) {
            Some(p) if !gpus.contains(&p) => gpus.push(p),
            _ => return false,
        }
    }
    nccl_available()
}

/// NCCL's name for `d`.
fn nccl_type(d: DType) -> sys::ncclDataType_t {
    use sys::ncclDataType_t as T;
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

/// NCCL's text for a result code.
pub(crate) fn describe(r: ncclResult_t) -> String {
    // SAFETY: ncclGetErrorString returns a static string for any code.
    let p = unsafe { sys::ncclGetErrorString(r) };
    if p.is_null() {
        return format!("{r:?}");
    }
    // SAFETY: non-null, NUL-terminated, static.
    format!("{r:?}: {}", unsafe { CStr::from_ptr(p) }.to_string_lossy())
}

/// The result code behind cudarc's `result` of an NCCL call.
fn code(r: std::result::Result<NcclStatus, NcclError>) -> ncclResult_t {
    match r {
        Ok(NcclStatus::Success) => ncclResult_t::ncclSuccess,
        Ok(NcclStatus::InProgress) => ncclResult_t::ncclInProgress,
        Ok(NcclStatus::NumResults) => ncclResult_t::ncclNumResults,
        Err(NcclError(e)) => e,
    }
}

/// One rank's part of `call`: `count` elements of `dtype` from `send` into `recv` on `stream`.
///
/// # Safety
/// `send` and `recv` hold what `call` reads and writes for `count` on the communicator's device
/// (null where the call reads or writes nothing), alive until `stream` has run the call; `op` is
/// valid for `comm`; `comm` is live and used by no other thread meanwhile.
pub(crate) unsafe fn issue(
    call: NcclCall,
    (send, recv): (*const c_void, *mut c_void),
    (count, dtype): (usize, DType),
    op: sys::ncclRedOp_t,
    comm: sys::ncclComm_t,
    stream: sys::cudaStream_t,
) -> ncclResult_t {
    let t = nccl_type(dtype);
    // SAFETY: as the caller guarantees.
    code(unsafe {
        match call {
            NcclCall::AllReduce(_) | NcclCall::Barrier => {
                result::all_reduce(send, recv, count, t, op, comm, stream)
            }
            NcclCall::Reduce(_, root) => result::reduce(send, recv, count, t, op, root as i32, comm, stream),
            NcclCall::Broadcast(root) => result::broadcast(send, recv, count, t, root as i32, comm, stream),
            NcclCall::AllGather => result::all_gather(send, recv, count, t, comm, stream),
            NcclCall::ReduceScatter(_) => result::reduce_scatter(send, recv, count, t, op, comm, stream),
            NcclCall::Send(peer) => result::send(send, count, t, peer as i32, comm, stream),
            NcclCall::Recv(peer) => result::recv(recv, count, t, peer as i32, comm, stream),
        }
    })
}

/// Why a one-rank NCCL call refuses `PreMulSum` on 8-byte dtypes (see [`RedOp::new`]).
pub(crate) const ONE_RANK_WIDE_PREMULSUM: &str = "NCCL's one-rank pre-multiplied sum on 8-byte dtypes leaves the end \
     of the output unwritten (NCCL 2.28.9); use Algorithm::Star or Algorithm::Auto for a one-device group";

/// NCCL's operator for one call on one communicator: built in, or a pre-multiplied sum made for
/// the call (`ncclRedOpCreatePreMulSum`) and destroyed by [`RedOp::destroy`] once enqueued.
#[derive(Clone, Copy)]
pub(crate) enum RedOp {
    /// `ncclSum`, `ncclProd`, `ncclMax`, `ncclMin` or `ncclAvg`.
    Builtin(sys::ncclRedOp_t),
    /// A pre-multiplied sum made for `comm`.
    Custom(sys::ncclRedOp_t),
}

impl RedOp {
    /// The operator of `op` on values of `dtype` for `comm` (of `ranks` ranks), and NCCL's result
    /// code for making it (success for a built-in one; a nonblocking communicator may answer
    /// `ncclInProgress`, which the caller settles). An error for a scalar the dtype cannot take.
    ///
    /// On one rank `Avg` and `PreMulSum(1)` are `ncclSum` (a copy), and `PreMulSum` of any other
    /// scalar on an 8-byte dtype (f64, i64) is refused ([`ONE_RANK_WIDE_PREMULSUM`]): NCCL
    /// 2.28.9's one-rank pre-multiplied sum on f64 and i64 (its f64 `ncclAvg` too) was seen to
    /// leave the last 16 bytes of a 4160-element output unwritten on an H200. The library never
    /// chooses NCCL for one device; this guards a forced call.
    ///
    /// # Safety
    /// `comm` is live and used by no other thread meanwhile.
    pub unsafe fn new(
        op: ReduceOp,
        dtype: DType,
        comm: sys::ncclComm_t,
        ranks: usize,
    ) -> Result<(RedOp, ncclResult_t)> {
        use sys::ncclRedOp_t as O;
        let builtin = match op {
            ReduceOp::Sum => O::ncclSum,
            ReduceOp::Prod => O::ncclProd,
            ReduceOp::Max => O::ncclMax,
            ReduceOp::Min => O::ncclMin,
            ReduceOp::Avg | ReduceOp::PreMulSum(1.0) if ranks == 1 => O::ncclSum,
            ReduceOp::PreMulSum(s) if ranks == 1 && dtype.size() == 8 => {
                let redop = format!("PreMulSum({s})");
                return Err(Error::BadReduceOp { op: "nccl", redop, dtype, reason: ONE_RANK_WIDE_PREMULSUM });
            }
            ReduceOp::Avg => O::ncclAvg,
            ReduceOp::PreMulSum(s) => {
                let mut scalar = scalar_bytes(s, dtype)?;
                let mut made = O::ncclSum;
                let residence = sys::ncclScalarResidence_t::ncclScalarHostImmediate;
                let p = scalar.as_mut_ptr() as *mut c_void;
                // SAFETY: `scalar` holds one value of `dtype`, read during the call (host
                // immediate); the caller guarantees `comm`.
                let res = unsafe {
                    result::reduce_op_create_pre_mul_sum(&mut made, p, nccl_type(dtype), residence, comm)
                };
                return Ok((RedOp::Custom(made), code(res)));
            }
        };
        Ok((RedOp::Builtin(builtin), ncclResult_t::ncclSuccess))
    }

    /// The operator to pass to [`issue`].
    pub fn get(self) -> sys::ncclRedOp_t {
        match self {
            RedOp::Builtin(op) | RedOp::Custom(op) => op,
        }
    }

    /// Destroys a pre-multiplied sum (calls enqueued with it keep what they need).
    ///
    /// # Safety
    /// `comm` is the live communicator the operator was made for, used by no other thread.
    pub unsafe fn destroy(self, comm: sys::ncclComm_t) {
        if let RedOp::Custom(op) = self {
            // SAFETY: as the caller guarantees.
            let _ = unsafe { result::reduce_op_destroy(op, comm) };
        }
    }
}

/// Whether an NCCL result code is a failure (`ncclInProgress` is not: a nonblocking
/// communicator finishes the call asynchronously).
pub(crate) fn failed(code: ncclResult_t) -> bool {
    !matches!(code, ncclResult_t::ncclSuccess | ncclResult_t::ncclInProgress)
}

/// The bytes of `s` as one value of `dtype` (integers need an integral `s`; they wrap as the
/// library's integer scales do).
fn scalar_bytes(s: f64, dtype: DType) -> Result<[u8; 8]> {
    if dtype.is_int() && !(s.is_finite() && s.fract() == 0.0) {
        let redop = format!("PreMulSum({s})");
        let reason = "an integer dtype needs an integral scalar";
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
