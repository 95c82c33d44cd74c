//! The one place `NcclComm` meets the CUDA backend's buffers: realize the rank's input on its
//! GPU, hand NCCL its device pointer and a new output buffer, and wrap that output as a tensor.
//!
//! This build has no CUDA backend yet (it lives on the `cuda` branch), so [`run`] answers
//! [`Error::DeviceUnavailable`]. Once the backend is merged, `run` is, in order:
//!
//! 1. `input.realize()`, then its buffer (`Tensor::value`) and the backend's allocation behind it
//!    (`memory::alloc_of`); the NCCL stream waits for the buffer's fence (`memory::await_on`).
//! 2. An output allocation of `len` elements on the NCCL stream (`CudaDevice::alloc`).
//! 3. `RawComm::issue(call, (input ptr, output ptr), count, dtype)` — calls are issued in program
//!    order, which is what keeps every rank's NCCL sequence identical.
//! 4. An event recorded on the NCCL stream; the input notes its use (`DevAlloc::note_use`); the
//!    output becomes `memory::device_buffer(dtype, len, alloc, event, stream)` and then
//!    `Tensor::from_buffer`, a lazy tensor whose readers wait on the event on the device.
//! 5. A watchdog: the output's fence must also poll `RawComm` (async error, deadline, abort) so
//!    that a dead peer surfaces as an error when the result is read, not as a hang.

use super::ops::NcclCall;
use super::raw::RawComm;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::Tensor;

/// Runs `call` on this rank: reads `input` (none for a receive), writes a new flat output of
/// `output` = (dtype, length) (none for a send, or a reduce off the root) and returns it.
pub(super) fn run(
    raw: &RawComm,
    call: NcclCall,
    input: Option<&Tensor>,
    output: Option<(DType, usize)>,
) -> Result<Option<Tensor>> {
    let _ = (input, output);
    Err(Error::DeviceUnavailable {
        device: raw.device(),
        reason: format!(
            "{}: NcclComm's data path needs the CUDA backend, which this build does not have yet \
             (bootstrap, barrier and abort work)",
            call.name()
        ),
    })
}
