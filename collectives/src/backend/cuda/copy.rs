//! Copies, named by direction: `htod` (host → device), `dtoh` (device → host, into pinned
//! memory), `dtod` (within one device) and `peer` (device → another CUDA device).
//!
//! Every copy is issued on a copy stream and returns at once; the result carries a fence, and the
//! source is kept alive (reader events, see [`super::memory`]) until the copy has run.

use std::sync::Arc;

use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUdeviceptr;

use super::device::{self, CudaDevice};
use super::memory::{CudaFence, DevAlloc, Event, alloc_of, await_on, device_buffer, record};
use super::pinned::{self, PinnedBlock, PinnedHost};
use super::{driver, register, staging};
use crate::backend::cpu::kernels::copy_bytes_to_staging;
use crate::backend::{Buffer, Mem};
use crate::device::Device;
use crate::error::{Error, Result};

/// Host → device. Pinned and page-locked sources are copied directly ([`register::direct`]);
/// other pageable ones through the double-buffered staging ring (the host copy of one chunk
/// overlapping the DMA of the previous).
pub(crate) fn htod(dev: &CudaDevice, src: &Buffer) -> Result<Buffer> {
    let stream = &dev.copy_in;
    let dst = dev.alloc(src.bytes(), stream)?;
    let event = htod_into(dev, src, &dst)?;
    Ok(device_buffer(src.dtype, src.len, dst, event, stream))
}

/// [`htod`] into `dst` (memory of `dev`, at least `src`'s size), on `dev.copy_in`. Returns the
/// event completing the copy.
pub(crate) fn htod_into(dev: &CudaDevice, src: &Buffer, dst: &DevAlloc) -> Result<Arc<Event>> {
    crate::failpoint::hit(dev.device, "cuda copy")?;
    let stream = &dev.copy_in;
    let bytes = src.bytes();
    fits(dev, dst, bytes)?;
    match register::direct(dev, src) {
        Some(host) => {
            await_on(stream, src, dev.device)?;
            dev.bind()?;
            // SAFETY: the memory holds `bytes` and stays allocated until the event noted below
            // completes (a pooled block is reused, a locked buffer freed or recycled, only once
            // idle); `dst` holds `bytes` (checked above).
            unsafe { driver::htod_async(dst.ptr(), host.ptr(), bytes, stream.cu_stream()) }
                .map_err(driver::err(dev.device, "copy host to device"))?;
            let e = record(stream, dev.device)?;
            host.note_use(&e);
            Ok(e)
        }
        None => {
            src.wait()?;
            let host = src.host_bytes("copy host to device")?;
            staging::stage_in(dev, dst, stream, bytes, |off, chunk| {
                copy_bytes_to_staging(&host[off..off + chunk.len()], chunk);
                Ok(())
            })
        }
    }
}

/// An error unless `dst` holds `bytes`: a copy into it would write past its end.
fn fits(dev: &CudaDevice, dst: &DevAlloc, bytes: usize) -> Result<()> {
    match dst.bytes() >= bytes {
        true => Ok(()),
        false => Err(Error::internal(
            format!("copy to {}", dev.device),
            format!("{bytes} bytes do not fit a destination of {}", dst.bytes()),
        )),
    }
}

/// Device → host device `to`, into pinned memory from the pool.
pub(crate) fn dtoh(dev: &CudaDevice, src: &Buffer, to: Device) -> Result<Buffer> {
    if !to.is_host() {
        return Err(Error::internal(format!("copy {} -> {to}", dev.device), "dtoh needs a host device"));
    }
    let bytes = src.bytes();
    let block = match bytes {
        0 => None,
        n => Some(pinned::take(n, &dev.ctx, dev.device)?),
    };
    // Held by its buffer-to-be first, so a failed copy gives the block back to the pool.
    let host = PinnedHost::new(block, bytes);
    let event = dtoh_into(dev, src, host.block().map(|b| (b, 0)))?;
    Ok(Buffer {
        device: to,
        dtype: src.dtype,
        len: src.len,
        mem: Mem::Host(Box::new(host)),
        fence: Some(Arc::new(CudaFence::new(event, &dev.copy_out, dev.device))),
    })
}

/// [`dtoh`] into pinned `block` from byte `at` (none: `src` is empty), on `dev.copy_out`. Returns
/// the event completing the copy, noted on the block and on the source. The caller reads those
/// bytes only once the event completes.
pub(crate) fn dtoh_into(
    dev: &CudaDevice,
    src: &Buffer,
    block: Option<(&PinnedBlock, usize)>,
) -> Result<Arc<Event>> {
    crate::failpoint::hit(dev.device, "cuda copy")?;
    let stream = &dev.copy_out;
    let alloc = alloc_of(src, "copy device to host")?;
    let bytes = src.bytes();
    await_on(stream, src, dev.device)?;
    if bytes > 0 {
        let Some((b, at)) = block.filter(|(b, at)| at + bytes <= b.capacity()) else {
            let msg = format!("{bytes} bytes do not fit the pinned destination");
            return Err(Error::internal("copy device to host", msg));
        };
        dev.bind()?;
        // SAFETY: the block holds `at + bytes` (checked above) and returns to the pool only once
        // idle (the event is noted on it below); the source stays alive through `note_use`.
        unsafe { driver::dtoh_async(b.ptr().add(at), alloc.ptr(), bytes, stream.cu_stream()) }
            .map_err(driver::err(dev.device, "copy device to host"))?;
    }
    let event = record(stream, dev.device)?;
    if let Some((b, _)) = block {
        b.note_use(&event);
    }
    alloc.note_use(stream, &event);
    Ok(event)
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
    let stream = &dev.copy_in;
    let dst = dev.alloc(src.bytes(), stream)?;
    let event = within_into(dev, src, &dst)?;
    Ok(device_buffer(src.dtype, src.len, dst, event, stream))
}

/// [`within`] into `dst` (memory of `dev`, at least `src`'s size), on `dev.copy_in`.
pub(crate) fn within_into(dev: &CudaDevice, src: &Buffer, dst: &DevAlloc) -> Result<Arc<Event>> {
    crate::failpoint::hit(dev.device, "cuda copy")?;
    let stream = &dev.copy_in;
    let from = alloc_of(src, "copy within device")?;
    let bytes = src.bytes();
    fits(dev, dst, bytes)?;
    await_on(stream, src, dev.device)?;
    if bytes > 0 {
        dev.bind()?;
        // SAFETY: both allocations hold `bytes` (checked above) and stay alive until the copy
        // has run (the source through `note_use`).
        unsafe { driver::dtod_async(dst.ptr(), from.ptr(), bytes, stream.cu_stream()) }
            .map_err(driver::err(dev.device, "copy within device"))?;
    }
    let event = record(stream, dev.device)?;
    from.note_use(stream, &event);
    Ok(event)
}

/// A copy of `src` (on `from`) onto device `to`, over the peer link once enabled.
pub(crate) fn peer(from: &CudaDevice, to: &CudaDevice, src: &Buffer) -> Result<Buffer> {
    let stream = &to.copy_in;
    let dst = to.alloc(src.bytes(), stream)?;
    let event = peer_into(from, to, src, &dst)?;
    Ok(device_buffer(src.dtype, src.len, dst, event, stream))
}

/// [`peer`] into `dst` (memory of `to`, at least `src`'s size), on `to.copy_in`.
pub(crate) fn peer_into(
    from: &CudaDevice,
    to: &CudaDevice,
    src: &Buffer,
    dst: &DevAlloc,
) -> Result<Arc<Event>> {
    crate::failpoint::hit(to.device, "cuda peer copy")?;
    // Devices without direct access still copy, staged by the driver.
    device::enable_peer(from, to)?;
    let stream = &to.copy_in;
    let alloc = alloc_of(src, "peer copy")?;
    let bytes = src.bytes();
    fits(to, dst, bytes)?;
    await_on(stream, src, to.device)?;
    if bytes > 0 {
        // SAFETY: both allocations hold `bytes` (checked above) and stay alive until the copy
        // has run (the source through `note_use`); `stream` is `to`'s.
        unsafe { peer_bytes((to, dst.ptr()), (from, alloc.ptr()), bytes, stream) }?;
    }
    let event = record(stream, to.device)?;
    alloc.note_use(stream, &event);
    Ok(event)
}

/// Issues a copy of `bytes` from `src` (memory of `from`) to `dst` (memory of `to`) on `stream`,
/// one of `to`'s: a device-to-device copy within one context (one device, or logical devices of
/// one GPU, which share its context), a peer copy between two.
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
    let what = if from.device == to.device {
        "copy within device".into()
    } else {
        format!("peer copy from {}", from.device)
    };
    let err = driver::err(to.device, what);
    if to.ctx.cu_ctx() == from.ctx.cu_ctx() {
        // SAFETY: as the caller guarantees; one context owns both pointers.
        return unsafe { driver::dtod_async(dst, src, bytes, stream.cu_stream()) }.map_err(err);
    }
    // SAFETY: as the caller guarantees; each context owns its pointer.
    unsafe { driver::peer_async((dst, to.ctx.cu_ctx()), (src, from.ctx.cu_ctx()), bytes, stream.cu_stream()) }
        .map_err(err)
}
