//! Device memory and the fences of asynchronous work.
//!
//! A CUDA [`Buffer`] holds a [`DevMem`]: a shared handle on a [`DevAlloc`], memory allocated
//! stream-ordered on its *home* stream. Work on the home stream is ordered with the free by the
//! stream itself; work on any other stream (another queue of the device, or a peer device's
//! stream) records an event in the allocation's reader list, and the free waits for those on the
//! device. So the executor may drop a buffer as soon as its last reader is *issued*: the memory
//! goes back to the pool only after the readers have run, with no host round-trip.
//!
//! The work that writes a buffer is signalled by a [`CudaFence`] (a CUDA event). A CUDA consumer
//! waits for it on its stream ([`await_on`]); any other consumer waits on the host.

use std::any::Any;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaEvent, CudaStream};
use parking_lot::Mutex;

use super::driver;
use crate::backend::{Buffer, Fence, Mem};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// Reader events kept before completed ones are pruned.
const PRUNE_AT: usize = 8;

/// Device memory allocated on (and freed on) a home stream.
pub(crate) struct DevAlloc {
    ptr: CUdeviceptr,
    device: Device,
    home: Arc<CudaStream>,
    /// Uses on streams other than `home`, which the free must wait for.
    readers: Mutex<Vec<Arc<CudaEvent>>>,
}

impl DevAlloc {
    /// Wraps `ptr` (from [`driver::alloc_async`] on `home`, or 0 for an empty allocation).
    pub fn new(ptr: CUdeviceptr, device: Device, home: Arc<CudaStream>) -> Self {
        DevAlloc { ptr, device, home, readers: Mutex::new(Vec::new()) }
    }

    /// The device address (0 when empty).
    pub fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The device holding the memory.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Records that work on `stream`, complete when `event` is, reads or writes this memory.
    pub fn note_use(&self, stream: &CudaStream, event: &Arc<CudaEvent>) {
        if self.ptr == 0 || stream.cu_stream() == self.home.cu_stream() {
            return;
        }
        let mut r = self.readers.lock();
        if r.len() >= PRUNE_AT {
            r.retain(|e| !matches!(e.try_is_complete(), Ok(true)));
        }
        r.push(event.clone());
    }
}

impl Drop for DevAlloc {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        // Errors cannot be returned from a drop; a failing context reports them on its next call.
        let _ = self.home.context().bind_to_thread();
        let stream = self.home.cu_stream();
        for e in self.readers.get_mut().drain(..) {
            // SAFETY: the stream and the event are alive (held here).
            let _ = unsafe { driver::stream_wait(stream, e.cu_event()) };
        }
        // SAFETY: `ptr` was allocated on `home`, is freed once, and every use on another stream
        // is ordered before this point by the waits above.
        let _ = unsafe { driver::free_async(self.ptr, stream) };
    }
}

/// What a CUDA buffer's [`Mem::Device`] holds.
pub(crate) struct DevMem(pub Arc<DevAlloc>);

/// Completion of work on a CUDA stream.
pub(crate) struct CudaFence {
    pub event: Arc<CudaEvent>,
    /// The raw stream the event was recorded on (a waiter on the same stream need not wait).
    stream: usize,
    device: Device,
    /// Set once the work is known complete, so later readers skip the wait (realized inputs are
    /// read by many later calls).
    done: std::sync::atomic::AtomicBool,
}

impl CudaFence {
    /// A fence for the work issued so far on `stream`.
    pub fn new(event: Arc<CudaEvent>, stream: &CudaStream, device: Device) -> Self {
        CudaFence { event, stream: stream.cu_stream() as usize, device, done: Default::default() }
    }

    /// Whether the work is known complete (waited on, or queried and found done).
    pub fn is_done(&self) -> bool {
        use std::sync::atomic::Ordering::{Acquire, Release};
        if self.done.load(Acquire) {
            return true;
        }
        let done = matches!(self.event.try_is_complete(), Ok(true));
        if done {
            self.done.store(true, Release);
        }
        done
    }
}

impl Fence for CudaFence {
    fn wait(&self) -> Result<()> {
        if self.done.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(());
        }
        self.event.synchronize().map_err(driver::err(self.device, "wait for device work"))?;
        self.done.store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Records an event on `stream` after the work issued so far.
pub(crate) fn record(stream: &CudaStream, device: Device) -> Result<Arc<CudaEvent>> {
    let flags = cudarc::driver::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING;
    let e = stream.record_event(Some(flags)).map_err(driver::err(device, "record event"))?;
    Ok(Arc::new(e))
}

/// Makes `stream` wait until `buf`'s contents are valid: on the device for a CUDA fence, on the
/// host for any other.
pub(crate) fn await_on(stream: &CudaStream, buf: &Buffer, device: Device) -> Result<()> {
    let Some(f) = &buf.fence else { return Ok(()) };
    match f.as_any().downcast_ref::<CudaFence>() {
        Some(cf) if cf.stream == stream.cu_stream() as usize || cf.is_done() => Ok(()),
        Some(cf) => {
            stream.context().bind_to_thread().map_err(driver::err(device, "bind context"))?;
            // SAFETY: the stream and the event are alive for the call.
            unsafe { driver::stream_wait(stream.cu_stream(), cf.event.cu_event()) }
                .map_err(driver::err(device, "wait on event"))
        }
        None => f.wait(),
    }
}

/// The allocation behind a CUDA buffer.
pub(crate) fn alloc_of<'a>(buf: &'a Buffer, op: &str) -> Result<&'a Arc<DevAlloc>> {
    Ok(&buf.device_mem::<DevMem>(op)?.0)
}

/// A CUDA buffer of `len` elements of `dtype` in `alloc`, written by work that `event` (recorded
/// on `stream`) completes.
pub(crate) fn device_buffer(
    dtype: DType,
    len: usize,
    alloc: Arc<DevAlloc>,
    event: Arc<CudaEvent>,
    stream: &CudaStream,
) -> Buffer {
    let device = alloc.device();
    Buffer {
        device,
        dtype,
        len,
        mem: Mem::Device(Box::new(DevMem(alloc))),
        fence: Some(Arc::new(CudaFence::new(event, stream, device))),
    }
}

/// Checks that `buf` holds at least `len` elements of `dtype`.
pub(crate) fn check_input(buf: &Buffer, dtype: DType, len: usize, op: &str) -> Result<()> {
    if buf.dtype != dtype || buf.len < len {
        let msg = format!("expected {len} x {dtype}, got {} x {}", buf.len, buf.dtype);
        return Err(Error::driver(buf.device, op, msg));
    }
    Ok(())
}
