//! Device memory and the fences of asynchronous work.
//!
//! A CUDA [`Buffer`] holds a [`DevMem`]: a shared handle on a [`DevAlloc`], memory allocated
//! stream-ordered on its *home* stream. Work on the home stream is ordered with the free by the
//! stream itself; work on any other stream (another queue of the device, or a peer device's
//! stream) records an event in the allocation's reader list, and the free waits for those on the
//! device. So the executor may drop a buffer as soon as its last reader is *issued*: the memory
//! goes back to the pool only after the readers have run, with no host round-trip. Large
//! allocations are parked for reuse on their home stream instead ([`super::reuse`]), under the
//! same ordering.
//!
//! The work that writes a buffer is signalled by a [`CudaFence`] (a CUDA event). A CUDA consumer
//! waits for it on its stream ([`await_on`]); any other consumer waits on the host.
//!
//! A fence may also carry a [`Watch`]: work whose completion depends on more than this process
//! (an NCCL call, which waits for its peers) is watched, and a host wait polls the watch beside
//! the event, so a dead peer ends the wait with an error instead of hanging it.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUdeviceptr;
use parking_lot::Mutex;

use super::driver;
pub(crate) use super::event::{Event, record};
use super::reuse::{Parked, Reuse};
use crate::backend::{Buffer, Fence, Mem};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// Reader events kept before completed ones are pruned.
const PRUNE_AT: usize = 8;

/// Device memory allocated on (and freed on) a home stream.
pub(crate) struct DevAlloc {
    ptr: CUdeviceptr,
    bytes: usize,
    device: Device,
    home: Arc<CudaStream>,
    /// Uses on streams other than `home`, which the free must wait for.
    readers: Mutex<Vec<Arc<Event>>>,
    /// Where the memory goes when dropped: parked for reuse, or (without) freed.
    reuse: Option<Arc<Reuse>>,
    /// For a view ([`DevAlloc::view`]): the allocation it is a range of, which owns the memory.
    parent: Option<Arc<DevAlloc>>,
}

impl DevAlloc {
    /// Wraps `ptr`, `bytes` long (from [`driver::alloc_async`] on `home` or from `reuse`, or 0
    /// for an empty allocation), returned to `reuse` when dropped if given, else freed.
    pub fn new(
        ptr: CUdeviceptr,
        bytes: usize,
        device: Device,
        home: Arc<CudaStream>,
        reuse: Option<Arc<Reuse>>,
    ) -> Self {
        #[cfg(feature = "failpoints")]
        crate::failpoint::live::inc(&crate::failpoint::live::CUDA);
        DevAlloc { ptr, bytes, device, home, readers: Mutex::new(Vec::new()), reuse, parent: None }
    }

    /// `bytes` bytes of `parent` from byte `offset` (within it), as an allocation of its own that
    /// owns no memory: it keeps `parent` alive, and its uses are noted on `parent`, whose free
    /// waits for them.
    pub fn view(parent: &Arc<DevAlloc>, offset: usize, bytes: usize) -> DevAlloc {
        DevAlloc {
            ptr: parent.ptr + offset as u64,
            bytes,
            device: parent.device,
            home: parent.home.clone(),
            readers: Mutex::new(Vec::new()),
            reuse: None,
            parent: Some(parent.clone()),
        }
    }

    /// The device address (0 when empty).
    pub fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// Its length in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The device holding the memory.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Records that work on `stream`, complete when `event` is, reads or writes this memory.
    pub fn note_use(&self, stream: &CudaStream, event: &Arc<Event>) {
        if let Some(p) = &self.parent {
            return p.note_use(stream, event);
        }
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
    /// Parks the memory for reuse, or frees it once its readers have run (see [`Parked`]).
    fn drop(&mut self) {
        if self.parent.is_some() {
            return; // a view: the parent owns the memory (and was counted).
        }
        #[cfg(feature = "failpoints")]
        crate::failpoint::live::dec(&crate::failpoint::live::CUDA);
        if self.ptr == 0 {
            return;
        }
        let readers = std::mem::take(self.readers.get_mut());
        let parked = Parked { ptr: self.ptr, home: self.home.clone(), readers };
        match &self.reuse {
            Some(r) => r.park(self.bytes, parked),
            None => drop(parked),
        }
    }
}

/// What a CUDA buffer's [`Mem::Device`] holds.
pub(crate) struct DevMem(pub Arc<DevAlloc>);

/// What besides its event decides whether a fence's work completes normally: a communicator
/// whose peers may fail (`comm::nccl`). An aborted NCCL call's event still completes — aborting
/// stops its kernels — but its output is undefined, so the watch, not the event, says whether the
/// data is good.
pub(crate) trait Watch: Send + Sync {
    /// The error, once the watched work can no longer complete normally. Cheap: polls nothing.
    fn failed(&self) -> Option<Error>;
    /// Polls what decides failure (asynchronous errors, a deadline), failing the work when one is
    /// hit; then as [`Watch::failed`].
    fn poll(&self) -> Result<()>;
}

/// How long a watched host wait spins (yielding) before it sleeps between queries.
const SPIN_FOR: Duration = Duration::from_millis(20);
/// How often a watched host wait polls its watch.
const POLL_EVERY: Duration = Duration::from_millis(1);
/// The longest sleep between queries of a long watched wait.
const MAX_PAUSE: Duration = Duration::from_millis(1);

/// Completion of work on a CUDA stream.
pub(crate) struct CudaFence {
    pub event: Arc<Event>,
    /// The raw stream the event was recorded on (a waiter on the same stream need not wait).
    stream: usize,
    device: Device,
    /// Set once the work is known complete, so later readers skip the wait (realized inputs are
    /// read by many later calls).
    done: AtomicBool,
    /// Decides, beside the event, whether the work completed normally.
    watch: Option<Arc<dyn Watch>>,
}

impl CudaFence {
    /// A fence for the work issued so far on `stream`.
    pub fn new(event: Arc<Event>, stream: &CudaStream, device: Device) -> Self {
        let stream = stream.cu_stream() as usize;
        CudaFence { event, stream, device, done: AtomicBool::new(false), watch: None }
    }

    /// As [`CudaFence::new`], for work that completes normally only as long as `watch` says so.
    pub fn watched(event: Arc<Event>, stream: &CudaStream, device: Device, watch: Arc<dyn Watch>) -> Self {
        CudaFence { watch: Some(watch), ..CudaFence::new(event, stream, device) }
    }

    /// The device whose stream the event was recorded on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Whether the work is known complete (waited on, or queried and found done), and did not fail.
    pub fn is_done(&self) -> bool {
        if self.done.load(Ordering::Acquire) {
            return true;
        }
        // The watch is read after the event: an aborted call's event completes after it failed.
        let done = matches!(self.event.try_is_complete(), Ok(true)) && self.failure().is_ok();
        if done {
            self.done.store(true, Ordering::Release);
        }
        done
    }

    /// The watch's error, if the watched work failed.
    fn failure(&self) -> Result<()> {
        match self.watch.as_ref().and_then(|w| w.failed()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Waits on the host for the event, polling `watch`: spins (yielding) for the first
    /// [`SPIN_FOR`], then sleeps up to [`MAX_PAUSE`] between queries.
    fn wait_watched(&self, watch: &dyn Watch) -> Result<()> {
        let start = Instant::now();
        let (mut next_poll, mut pause) = (start, Duration::from_micros(20));
        loop {
            let complete =
                self.event.try_is_complete().map_err(driver::err(self.device, "wait for device work"))?;
            if complete {
                return self.failure();
            }
            let now = Instant::now();
            if now >= next_poll {
                watch.poll()?;
                next_poll = now + POLL_EVERY;
            }
            if now - start < SPIN_FOR {
                std::thread::yield_now();
            } else {
                std::thread::sleep(pause);
                pause = (pause * 2).min(MAX_PAUSE);
            }
        }
    }
}

impl Fence for CudaFence {
    fn is_complete(&self) -> bool {
        self.is_done()
    }

    fn wait(&self) -> Result<()> {
        if self.done.load(Ordering::Acquire) {
            return Ok(());
        }
        match &self.watch {
            None => self.event.synchronize().map_err(driver::err(self.device, "wait for device work"))?,
            Some(w) => self.wait_watched(w.as_ref())?,
        }
        self.done.store(true, Ordering::Release);
        Ok(())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Makes `stream` wait until `buf`'s contents are valid: on the device for a CUDA fence, on the
/// host for any other. A watched fence whose work failed is that failure's error.
///
/// A device wait does not poll the watch: if the watched work fails later, its communicator is
/// aborted (by whoever polls it, at the latest its watchdog at the deadline), which ends its
/// kernels and so this wait, but `stream`'s work then reads undefined data.
pub(crate) fn await_on(stream: &CudaStream, buf: &Buffer, device: Device) -> Result<()> {
    match &buf.fence {
        Some(f) => await_fence(stream, f.as_ref(), device),
        None => Ok(()),
    }
}

/// Makes `stream` wait until the work `f` stands for has run, as [`await_on`] does: on the device
/// for a CUDA fence (also one a Vulkan device waits for by its signal), on the host for any other.
pub(crate) fn await_fence(stream: &CudaStream, f: &dyn Fence, device: Device) -> Result<()> {
    #[cfg(feature = "vulkan")]
    if let Some(s) = f.as_any().downcast_ref::<crate::backend::vulkan::export::Signalled>() {
        return await_fence(stream, s.copy.as_ref(), device);
    }
    if let Some(j) = f.as_any().downcast_ref::<super::join::Joined>() {
        return j.0.iter().try_for_each(|f| await_fence(stream, f, device));
    }
    let Some(cf) = f.as_any().downcast_ref::<CudaFence>() else { return f.wait() };
    if cf.is_done() {
        return Ok(());
    }
    cf.failure()?;
    if cf.stream == stream.cu_stream() as usize {
        return Ok(());
    }
    stream.context().bind_to_thread().map_err(driver::err(device, "bind context"))?;
    // SAFETY: the stream and the event are alive for the call.
    unsafe { driver::stream_wait(stream.cu_stream(), cf.event.cu_event()) }
        .map_err(driver::err(device, "wait on event"))
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
    event: Arc<Event>,
    stream: &CudaStream,
) -> Buffer {
    let fence = Arc::new(CudaFence::new(event, stream, alloc.device()));
    fenced_buffer(dtype, len, alloc, fence)
}

/// A CUDA buffer of `len` elements of `dtype` in `alloc`, valid once `fence` is complete. Buffers
/// written by one piece of work may share its fence: once one reader has waited for it, the
/// others do not wait again.
pub(crate) fn fenced_buffer(dtype: DType, len: usize, alloc: Arc<DevAlloc>, fence: Arc<CudaFence>) -> Buffer {
    let device = alloc.device();
    Buffer { device, dtype, len, mem: Mem::Device(Box::new(DevMem(alloc))), fence: Some(fence) }
}

/// Checks that `buf` holds at least `len` elements of `dtype`.
pub(crate) fn check_input(buf: &Buffer, dtype: DType, len: usize, op: &str) -> Result<()> {
    if buf.dtype != dtype || buf.len < len {
        let msg = format!("expected {len} x {dtype} on {}, got {} x {}", buf.device, buf.len, buf.dtype);
        return Err(Error::internal(op, msg));
    }
    Ok(())
}
