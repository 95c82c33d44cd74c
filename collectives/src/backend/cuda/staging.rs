//! Chunked, double-buffered transfers through pinned memory.
//!
//! [`stage_in`] fills pinned chunks on the host (from any source) and uploads each as soon as it
//! is full, so the host fill of chunk i+1 overlaps the DMA of chunk i. [`stage_out`] downloads
//! chunks and hands each to a sink as it lands, so the sink's work on chunk i overlaps the DMA of
//! chunk i+1.
//!
//! `htod` of pageable memory uses `stage_in`. Both are also the hook for the staged
//! CUDA → host → Vulkan chain (and back): the Vulkan side supplies the sink (write the chunk into
//! its host-visible staging and submit the upload) or the source (read a chunk of mapped memory
//! after its fence), and the two hops overlap chunk by chunk.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream};

use super::device::CudaDevice;
use super::driver;
use super::memory::{DevAlloc, record};
use super::pinned::{self, PinnedBlock};
use crate::error::Result;

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
) -> Result<Arc<CudaEvent>> {
    let mut ring = dev.stage_in.lock();
    for (i, off) in (0..len).step_by(CHUNK).enumerate() {
        let n = CHUNK.min(len - off);
        let slot = ring.slot(i, dev)?;
        slot.wait_idle(dev.device)?;
        fill(off, slot.bytes_mut(n))?;
        dev.bind()?;
        // SAFETY: `slot` stays allocated (in the ring) until `note_use`'s event completes, and
        // `dst` holds `len` bytes; both are on this device's context, which is bound.
        unsafe { driver::htod_async(dst.ptr() + off as u64, slot.ptr(), n, stream.cu_stream()) }
            .map_err(driver::err(dev.device, "copy host to device"))?;
        slot.note_use(&record(stream, dev.device)?);
    }
    record(stream, dev.device)
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
    let mut events: Vec<Arc<CudaEvent>> = Vec::with_capacity(chunks.len());
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
