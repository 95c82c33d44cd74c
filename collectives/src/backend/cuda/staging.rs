//! Chunked, double-buffered transfers through pinned memory.
//!
//! [`stage_in`] fills pinned chunks on the host (from any source) and uploads each as soon as it
//! is full, so the host fill of chunk i+1 overlaps the DMA of chunk i. [`stage_out`] downloads
//! chunks and hands each to a sink as it lands, so the sink's work on chunk i overlaps the DMA of
//! chunk i+1.
//!
//! `htod` of pageable memory uses `stage_in`.
//!
//! The staged CUDA ↔ Vulkan chain ([`crate::backend::staged`]) moves chunks through host memory
//! that both drivers copy to and from directly: [`Registered`] page-locks that memory for CUDA,
//! and [`CudaEnd`] issues the CUDA half of each chunk's transfer, so no CPU copies the data.

use std::ptr::NonNull;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaContext, CudaStream};

use super::event::Event;

use super::device::{self, CudaDevice};
use super::driver;
use super::memory::{CudaFence, DevAlloc, alloc_of, await_fence, await_on, device_buffer, record};
use super::pinned::{self, PinnedBlock};
use crate::backend::chain::{ChunkEnd, Span};
use crate::backend::{Buffer, Fence};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// Bytes per chunk.
pub(crate) const CHUNK: usize = 16 << 20;

/// Two pinned chunk buffers, used in turn.
#[derive(Default)]
pub(crate) struct Ring {
    slots: [Option<PinnedBlock>; 2],
}

impl Ring {
    /// Slot `i % 2`, allocated on first use (not waited for).
    fn slot(&mut self, i: usize, dev: &CudaDevice) -> Result<&mut PinnedBlock> {
        let slot = &mut self.slots[i % 2];
        Ok(match slot {
            Some(b) => b,
            None => slot.insert(pinned::take(CHUNK, &dev.ctx, dev.device)?),
        })
    }
}

/// Uploads `len` bytes into `dst` on `stream`, chunk by chunk: `fill(offset, chunk)` writes each
/// chunk on the host. Returns the event completing the last copy.
pub(crate) fn stage_in(
    dev: &CudaDevice,
    dst: &DevAlloc,
    stream: &CudaStream,
    len: usize,
    mut fill: impl FnMut(usize, &mut [u8]) -> Result<()>,
) -> Result<Arc<Event>> {
    let mut ring = dev.stage_in.lock();
    let mut last = None;
    for (i, off) in (0..len).step_by(CHUNK).enumerate() {
        let n = CHUNK.min(len - off);
        last = Some(stage_chunk(dev, &mut ring, i, dst.ptr() + off as u64, n, stream, |c| fill(off, c))?);
    }
    // The last chunk's event completes the whole upload (one stream, in order).
    match last {
        Some(e) => Ok(e),
        None => record(stream, dev.device),
    }
}

/// One chunk of an upload through `ring`: waits until slot `i % 2` is free, has `fill` write its
/// first `n` bytes (at most [`CHUNK`]) on the host, and copies them to device address `to` on
/// `stream`. Returns the copy's event, which frees the slot.
pub(super) fn stage_chunk(
    dev: &CudaDevice,
    ring: &mut Ring,
    i: usize,
    to: CUdeviceptr,
    n: usize,
    stream: &CudaStream,
    fill: impl FnOnce(&mut [u8]) -> Result<()>,
) -> Result<Arc<Event>> {
    if n > CHUNK {
        return Err(Error::internal(
            "staged upload",
            format!("a chunk of {n} bytes exceeds the {CHUNK}-byte slot"),
        ));
    }
    let slot = ring.slot(i, dev)?;
    slot.wait_idle(dev.device)?;
    fill(slot.bytes_mut(n))?;
    dev.bind()?;
    // SAFETY: `slot` holds `n` bytes (checked above) and stays allocated (in the ring) until the
    // event noted below completes; the caller's `to` holds `n` bytes on this device's context,
    // which is bound.
    unsafe { driver::htod_async(to, slot.ptr(), n, stream.cu_stream()) }
        .map_err(driver::err(dev.device, "copy host to device"))?;
    let e = record(stream, dev.device)?;
    slot.note_use(&e);
    Ok(e)
}

/// Downloads `len` bytes of `src` (valid once `stream` reaches this point), chunk by chunk,
/// calling `sink(offset, chunk)` with each chunk once it is on the host.
pub(crate) fn stage_out(
    dev: &CudaDevice,
    src: &DevAlloc,
    stream: &CudaStream,
    len: usize,
    mut sink: impl FnMut(usize, &[u8]) -> Result<()>,
) -> Result<()> {
    let mut ring = dev.stage_out.lock();
    let chunks: Vec<usize> = (0..len).step_by(CHUNK).collect();
    let mut events: Vec<Arc<Event>> = Vec::with_capacity(chunks.len());
    for i in 0..=chunks.len() {
        if let Some(&off) = chunks.get(i) {
            let n = CHUNK.min(len - off);
            let slot = ring.slot(i, dev)?;
            slot.wait_idle(dev.device)?;
            dev.bind()?;
            // SAFETY: the slot holds CHUNK bytes and is not read on the host until `events[i]`
            // completes; `src` holds `len` bytes and outlives the call, which waits for all.
            unsafe { driver::dtoh_async(slot.ptr(), src.ptr() + off as u64, n, stream.cu_stream()) }
                .map_err(driver::err(dev.device, "copy device to host"))?;
            let e = record(stream, dev.device)?;
            slot.note_use(&e);
            src.note_use(stream, &e);
            events.push(e);
        }
        if i > 0 {
            let (off, prev) = (chunks[i - 1], &events[i - 1]);
            prev.synchronize().map_err(driver::err(dev.device, "copy device to host"))?;
            sink(off, ring.slot(i - 1, dev)?.bytes(CHUNK.min(len - off)))?;
        }
    }
    Ok(())
}

/// Host memory page-locked for CUDA (every context) while the value lives.
pub(crate) struct Registered {
    ptr: NonNull<u8>,
    len: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: the value only names the memory (it never dereferences it); the context is thread-safe.
unsafe impl Send for Registered {}
// SAFETY: as above.
unsafe impl Sync for Registered {}

impl Registered {
    /// Registers the `len` bytes at `ptr` with CUDA through `Cuda(n)`'s context.
    ///
    /// # Safety
    /// `ptr..ptr + len` is host memory that stays allocated while the value lives, and no copy
    /// still uses it when the value drops.
    pub unsafe fn new(device: Device, ptr: NonNull<u8>, len: usize) -> Result<Self> {
        let dev = device::of(device, "register host memory")?;
        dev.bind()?;
        // SAFETY: the context is current; the memory outlives the registration (as guaranteed).
        unsafe { driver::host_register(ptr.as_ptr(), len) }
            .map_err(driver::err(device, "register host memory"))?;
        Ok(Registered { ptr, len, ctx: dev.ctx.clone() })
    }

    /// The first byte's address.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: registered once in `new`; no copy uses it any more (the owner's contract).
        let _ = unsafe { driver::host_unregister(self.ptr.as_ptr()) };
    }
}

/// The memory of a staged chain's ring as CUDA reaches it.
#[derive(Clone, Copy)]
pub(crate) enum RingMem<'r> {
    /// Host memory registered with CUDA (the host ring): chunks are copied device ↔ host.
    Host(&'r Registered),
    /// Memory of Vulkan device `vk`, the same GPU, imported (the device ring): chunks are copied
    /// on the device, and the two ends wait for each other's copies there
    /// ([`super::timeline`]).
    Device {
        /// The ring's memory.
        mem: &'r super::ImportedMem,
        /// The Vulkan device it belongs to.
        vk: Device,
    },
}

impl RingMem<'_> {
    /// The ring's length in bytes.
    fn len(self) -> usize {
        match self {
            RingMem::Host(r) => r.len,
            RingMem::Device { mem, .. } => mem.len(),
        }
    }
}

/// One CUDA end of a staged chain: a device allocation, the stream its copies run on, and the
/// ring.
pub(crate) struct CudaEnd<'r> {
    dev: Arc<CudaDevice>,
    alloc: Arc<DevAlloc>,
    bytes: usize,
    stream: Arc<CudaStream>,
    ring: RingMem<'r>,
    last: Option<Arc<Event>>,
}

/// The end reading `src` (a CUDA buffer), on the device's download stream, which first waits for
/// `src`'s writer.
pub(crate) fn source_end<'r>(src: &Buffer, ring: RingMem<'r>) -> Result<CudaEnd<'r>> {
    let dev = device::of(src.device, "staged copy")?;
    let alloc = alloc_of(src, "staged copy")?.clone();
    let stream = dev.copy_out.clone();
    await_on(&stream, src, dev.device)?;
    Ok(CudaEnd { dev, alloc, bytes: src.bytes(), stream, ring, last: None })
}

/// The end writing a new allocation of `bytes` on `device`, on its upload stream.
pub(crate) fn dest_end(device: Device, bytes: usize, ring: RingMem<'_>) -> Result<CudaEnd<'_>> {
    let dev = device::of(device, "staged copy")?;
    let stream = dev.copy_in.clone();
    let alloc = dev.alloc(bytes, &stream)?;
    Ok(CudaEnd { dev, alloc, bytes, stream, ring, last: None })
}

impl CudaEnd<'_> {
    /// Checks that every span lies within the ring and the allocation.
    fn check(&self, spans: &[Span]) -> Result<()> {
        Span::check_all(spans, self.ring.len(), self.bytes, self.dev.device)
    }

    /// Records the copy just issued: the allocation's reader list, the end's last event, and the
    /// fence returned to the chain (on the device ring, it also signals a timeline of the Vulkan
    /// end's device, so that end waits for it there).
    fn issued(&mut self) -> Result<Option<Arc<dyn Fence>>> {
        let e = record(&self.stream, self.dev.device)?;
        self.alloc.note_use(&self.stream, &e);
        self.last = Some(e.clone());
        let copy = Arc::new(CudaFence::new(e, &self.stream, self.dev.device));
        #[cfg(feature = "vulkan")]
        if let RingMem::Device { vk, .. } = self.ring
            && let Some((to, value)) = super::timeline::signal_vulkan(&self.dev, &self.stream, vk)
        {
            return Ok(Some(Arc::new(crate::backend::vulkan::export::Signalled { copy, to, value })));
        }
        Ok(Some(copy))
    }

    /// The destination allocation as a tensor buffer of `len` elements of `dtype`, complete when
    /// the last chunk copied into it is.
    pub fn into_buffer(self, dtype: DType, len: usize) -> Result<Buffer> {
        let event = match self.last {
            Some(e) => e,
            None => record(&self.stream, self.dev.device)?,
        };
        Ok(device_buffer(dtype, len, self.alloc, event, &self.stream))
    }
}

impl CudaEnd<'_> {
    /// Issues `copy` for each span, then the fence of them all. After any failure, waits for the
    /// copies already issued (no fence will tell the chain when their slots are free).
    fn issue_each(
        &mut self,
        spans: &[Span],
        what: &str,
        copy: impl Fn(&Self, &Span) -> std::result::Result<(), cudarc::driver::DriverError>,
    ) -> Result<Option<Arc<dyn Fence>>> {
        self.check(spans)?;
        if spans.iter().all(|s| s.len == 0) {
            return Ok(None);
        }
        crate::failpoint::hit(self.dev.device, "cuda copy")?;
        self.dev.bind()?;
        let out = match spans.iter().try_for_each(|s| copy(self, s)) {
            Ok(()) => self.issued(),
            Err(e) => Err(driver::err(self.dev.device, what)(e)),
        };
        if out.is_err() {
            let _ = self.stream.synchronize();
        }
        out
    }
}

impl ChunkEnd for CudaEnd<'_> {
    /// On the device ring, a Vulkan end's copies are waited for on the device (its timeline
    /// imported here); a CUDA fence is waited for by its event; anything else on the host.
    fn after(&mut self, fence: &Arc<dyn Fence>) -> Result<()> {
        #[cfg(feature = "vulkan")]
        if matches!(self.ring, RingMem::Device { .. })
            && super::timeline::await_vulkan(&self.dev, &self.stream, fence.as_ref())?
        {
            return Ok(());
        }
        await_fence(&self.stream, fence.as_ref(), self.dev.device)
    }

    fn buffer_to_ring(&mut self, spans: &[Span]) -> Result<Option<Arc<dyn Fence>>> {
        let what = match self.ring {
            RingMem::Host(_) => "copy device to host",
            RingMem::Device { .. } => "copy device to device",
        };
        self.issue_each(spans, what, |end, s| {
            let (buf, stream) = (end.alloc.ptr() + s.off as u64, end.stream.cu_stream());
            match end.ring {
                // SAFETY: ring bytes `at..at + len` are registered host memory (checked) that
                // the chain leaves alone until the returned fence completes; the allocation
                // holds `off + len` bytes and stays alive through `note_use`.
                RingMem::Host(r) => unsafe {
                    driver::dtoh_async(r.ptr.as_ptr().add(s.at), buf, s.len, stream)
                },
                // SAFETY: as above, the ring being imported device memory of this GPU.
                RingMem::Device { mem, .. } => unsafe {
                    driver::dtod_async(mem.ptr() + s.at as u64, buf, s.len, stream)
                },
            }
        })
    }

    fn ring_to_buffer(&mut self, spans: &[Span]) -> Result<Option<Arc<dyn Fence>>> {
        let what = match self.ring {
            RingMem::Host(_) => "copy host to device",
            RingMem::Device { .. } => "copy device to device",
        };
        self.issue_each(spans, what, |end, s| {
            let (buf, stream) = (end.alloc.ptr() + s.off as u64, end.stream.cu_stream());
            match end.ring {
                // SAFETY: as in `buffer_to_ring`, the copy reading the ring and writing the
                // allocation.
                RingMem::Host(r) => unsafe {
                    driver::htod_async(buf, r.ptr.as_ptr().add(s.at), s.len, stream)
                },
                // SAFETY: as above.
                RingMem::Device { mem, .. } => unsafe {
                    driver::dtod_async(buf, mem.ptr() + s.at as u64, s.len, stream)
                },
            }
        })
    }
}
