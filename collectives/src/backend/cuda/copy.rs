//! Copies, named by direction: `htod` (host → device), `dtoh` (device → host, into pinned
//! memory), `dtod` (within one device) and `peer` (device → another CUDA device).
//!
//! Every copy is issued on a copy stream and returns at once; the result carries a fence, and the
//! source is kept alive (reader events, see [`super::memory`]) until the copy has run.

use std::sync::Arc;

use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUdeviceptr;

use super::device::{self, CudaDevice};
use super::memory::{CudaFence, alloc_of, await_on, device_buffer, record};
use super::pinned::{self, PinnedHost};
use super::{driver, register, staging};
use crate::backend::cpu::kernels::copy_bytes_to_staging;
use crate::backend::{Buffer, Mem};
use crate::device::Device;
use crate::error::{Error, Result};

/// Host → device. Pinned and page-locked sources are copied directly ([`register::direct`]);
/// other pageable ones through the double-buffered staging ring (the host copy of one chunk
/// overlapping the DMA of the previous).
pub(crate) fn htod(dev: &CudaDevice, src: &Buffer) -> Result<Buffer> {
    crate::failpoint::hit(dev.device, "cuda copy")?;
    let stream = &dev.copy_in;
    let bytes = src.bytes();
    let dst = dev.alloc(bytes, stream)?;
    let event = match register::direct(dev, src) {
        Some(host) => {
            await_on(stream, src, dev.device)?;
            dev.bind()?;
            // SAFETY: the memory holds `bytes` and stays allocated until the event noted below
            // completes (a pooled block is reused, a locked buffer freed or recycled, only once
            // idle); `dst` holds `bytes`.
            unsafe { driver::htod_async(dst.ptr(), host.ptr(), bytes, stream.cu_stream()) }
                .map_err(driver::err(dev.device, "copy host to device"))?;
            let e = record(stream, dev.device)?;
            host.note_use(&e);
            e
        }
        None => {
            src.wait()?;
            let host = src.host_bytes("copy host to device")?;
            staging::stage_in(dev, &dst, stream, bytes, |off, chunk| {
                copy_bytes_to_staging(&host[off..off + chunk.len()], chunk);
                Ok(())
            })?
        }
    };
    Ok(device_buffer(src.dtype, src.len, dst, event, stream))
}

/// Device → host device `to`, into pinned memory from the pool.
pub(crate) fn dtoh(dev: &CudaDevice, src: &Buffer, to: Device) -> Result<Buffer> {
    crate::failpoint::hit(dev.device, "cuda copy")?;
    if !to.is_host() {
        return Err(Error::internal(format!("copy {} -> {to}", dev.device), "dtoh needs a host device"));
    }
    let stream = &dev.copy_out;
    let alloc = alloc_of(src, "copy device to host")?;
    let bytes = src.bytes();
    let block = match bytes {
        0 => None,
        n => Some(pinned::take(n, &dev.ctx, dev.device)?),
    };
    await_on(stream, src, dev.device)?;
    if let Some(b) = &block {
        dev.bind()?;
        // SAFETY: the block holds at least `bytes`, is owned by the buffer returned below (and
        // returns to the pool only once idle); the source stays alive through `note_use`.
        unsafe { driver::dtoh_async(b.ptr(), alloc.ptr(), bytes, stream.cu_stream()) }
            .map_err(driver::err(dev.device, "copy device to host"))?;
    }
    let event = record(stream, dev.device)?;
    if let Some(b) = &block {
        b.note_use(&event);
    }
    alloc.note_use(stream, &event);
    Ok(Buffer {
        device: to,
        dtype: src.dtype,
        len: src.len,
        mem: Mem::Host(Box::new(PinnedHost::new(block, bytes))),
        fence: Some(Arc::new(CudaFence::new(event, stream, dev.device))),
    })
}

/// Device → device of the same vendor: a copy within `dev`, or a peer copy to another CUDA
/// device (issued on the destination's copy stream).
pub(crate) fn dtod(dev: &CudaDevice, src: &Buffer, to: Device) -> Result<Buffer> {
    match to {
        Device::Cuda(n) if Device::Cuda(n) == dev.device => within(dev, src),
        Device::Cuda(n) => peer(dev, &*device::get(n)?, src),
        _ => Err(Error::internal(format!("copy {} -> {to}", dev.device), "dtod needs a CUDA destination")),
    }
}

/// A copy of `src` in new memory of the same device.
fn within(dev: &CudaDevice, src: &Buffer) -> Result<Buffer> {
    crate::failpoint::hit(dev.device, "cuda copy")?;
    let stream = &dev.copy_in;
    let from = alloc_of(src, "copy within device")?;
    let bytes = src.bytes();
    let dst = dev.alloc(bytes, stream)?;
    await_on(stream, src, dev.device)?;
    if bytes > 0 {
        dev.bind()?;
        // SAFETY: both allocations hold `bytes` and stay alive until the copy has run.
        unsafe { driver::dtod_async(dst.ptr(), from.ptr(), bytes, stream.cu_stream()) }
            .map_err(driver::err(dev.device, "copy within device"))?;
    }
    let event = record(stream, dev.device)?;
    from.note_use(stream, &event);
    Ok(device_buffer(src.dtype, src.len, dst, event, stream))
}

/// A copy of `src` (on `from`) onto device `to`, over the peer link once enabled.
pub(crate) fn peer(from: &CudaDevice, to: &CudaDevice, src: &Buffer) -> Result<Buffer> {
    crate::failpoint::hit(to.device, "cuda peer copy")?;
    // Devices without direct access still copy, staged by the driver.
    device::enable_peer(from, to)?;
    let stream = &to.copy_in;
    let alloc = alloc_of(src, "peer copy")?;
    let bytes = src.bytes();
    let dst = to.alloc(bytes, stream)?;
    await_on(stream, src, to.device)?;
    if bytes > 0 {
        // SAFETY: both allocations hold `bytes` and stay alive until the copy has run (the
        // source through `note_use`); `stream` is `to`'s.
        unsafe { peer_bytes((to, dst.ptr()), (from, alloc.ptr()), bytes, stream) }?;
    }
    let event = record(stream, to.device)?;
    alloc.note_use(stream, &event);
    Ok(device_buffer(src.dtype, src.len, dst, event, stream))
}

/// Issues a copy of `bytes` from `src` (memory of `from`) to `dst` (memory of `to`) on `stream`,
/// one of `to`'s: a device-to-device copy within one context (logical devices of one GPU share
/// its context), a peer copy between two.
///
/// # Safety
/// Both ranges are valid for `bytes` until the copy has run.
pub(crate) unsafe fn peer_bytes(
    (to, dst): (&CudaDevice, CUdeviceptr),
    (from, src): (&CudaDevice, CUdeviceptr),
    bytes: usize,
    stream: &CudaStream,
) -> Result<()> {
    to.bind()?;
    let err = driver::err(to.device, format!("peer copy from {}", from.device));
    if to.ctx.cu_ctx() == from.ctx.cu_ctx() {
        // SAFETY: as the caller guarantees; one context owns both pointers.
        return unsafe { driver::dtod_async(dst, src, bytes, stream.cu_stream()) }.map_err(err);
    }
    // SAFETY: as the caller guarantees; each context owns its pointer.
    unsafe { driver::peer_async((dst, to.ctx.cu_ctx()), (src, from.ctx.cu_ctx()), bytes, stream.cu_stream()) }
        .map_err(err)
}
