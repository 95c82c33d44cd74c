//! The one place `NcclComm` meets the CUDA backend's buffers: issue the rank's input on its
//! GPU, hand NCCL its device pointer and a new output buffer, and wrap that output as a tensor.
//!
//! [`run`] is, in order:
//!
//! 1. The input's buffer once the work computing it is issued (`exec::issue`: realized on the
//!    rank's device, not waited for on the host); the NCCL stream waits for its fence on the
//!    device (`memory::await_on`).
//! 2. An output allocation on the NCCL stream through the backend (`CudaDevice::alloc`), so the
//!    output is an ordinary backend buffer: later ops, copies and `to_vec` read it like any other.
//! 3. `RankComm::issue` — calls are issued in program order, which is what keeps every rank's
//!    NCCL sequence identical — recording an event after the call.
//! 4. The input notes its use by the NCCL stream (`DevAlloc::note_use`), so its memory outlives
//!    the call; the output becomes a buffer whose fence is the event *watched* by the
//!    communicator (`CudaFence::watched`): a CUDA consumer waits for it on the device, a host
//!    wait polls NCCL and the deadline, so a dead peer makes reading the result an error.

use std::sync::Arc;

use crate::backend::Buffer;
use crate::backend::cuda::memory::{self, CudaFence};
use crate::backend::cuda::nccl::rank::RankComm;
use crate::backend::nccl::NcclCall;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::{Shape, Tensor};

/// Runs `call` on this rank: reads `input` (none for a receive), writes a new flat output of
/// `output` = (dtype, length) (none for a send, or a reduce off the root) and returns it.
pub(super) fn run(
    raw: &RankComm,
    call: NcclCall,
    input: Option<&Tensor>,
    output: Option<(DType, usize)>,
) -> Result<Option<Tensor>> {
    let op = call.name();
    let dtype = input
        .map(Tensor::dtype)
        .or(output.map(|(d, _)| d))
        .ok_or_else(|| Error::internal(op, "a call without input or output"))?;
    let src = input.map(|t| source(raw, t, op)).transpose()?;
    let dst = match output {
        Some((d, len)) => Some(raw.cuda().alloc_unparked(len * d.size(), raw.stream())?),
        None => None,
    };
    let send = match &src {
        Some(b) => memory::alloc_of(b, op)?.ptr(),
        None => 0,
    };
    let recv = dst.as_ref().map_or(0, |a| a.ptr());
    let count = count(call, input.map_or(0, Tensor::numel), output.map_or(0, |(_, len)| len));
    // SAFETY: `send` holds the input (`count` elements, or `count * world` for a
    // reduce-scatter, as `NcclComm` shaped it) and `recv` the output of `output`'s length, both
    // on this rank's device; the input notes its use below and the output is returned, so both
    // outlive the call on the stream.
    let issued = unsafe { raw.issue(call, (send, recv), count, dtype)? };
    if let Some(b) = &src {
        memory::alloc_of(b, op)?.note_use(raw.stream(), &issued.event);
    }
    Ok(dst.zip(output).map(|(alloc, (dtype, len))| {
        let watch = raw.watch(issued.seq, op);
        let fence = Arc::new(CudaFence::watched(issued.event, raw.stream(), raw.device(), watch));
        let buf = memory::fenced_buffer(dtype, len, alloc, fence);
        Tensor::from_buffer(Arc::new(buf), Shape::new([len]))
    }))
}

/// `t`'s buffer on the rank's device, its work issued, with the NCCL stream waiting for it.
fn source(raw: &RankComm, t: &Tensor, op: &'static str) -> Result<Arc<Buffer>> {
    let buf = crate::exec::issued_buffer(t)?;
    if buf.device != raw.device() {
        let msg = format!("the input lives on {}, not on this rank's {}", buf.device, raw.device());
        return Err(Error::Comm { op, msg });
    }
    memory::check_input(&buf, t.dtype(), t.numel(), op)?;
    memory::await_on(raw.stream(), &buf, raw.device())?;
    Ok(buf)
}

/// The count NCCL takes for `call` with an input of `input` and an output of `output` elements:
/// the input's, except for a reduce-scatter (the output's) and a receive (the output's).
fn count(call: NcclCall, input: usize, output: usize) -> usize {
    match call {
        NcclCall::ReduceScatter(_) | NcclCall::Recv(_) => output,
        _ => input,
    }
}
