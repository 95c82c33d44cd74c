//! The CUDA half of a join (`backend/join.rs`): parts from CUDA and host devices copied once,
//! straight into their ranges of one new buffer, on a CUDA device or in pinned host memory.
//!
//! On a CUDA device every part is one copy on the device's `copy_in` stream — an upload from the
//! host, a copy within the device, a peer copy — or a kernel computing it in its range on the
//! compute stream, which the `copy_in` stream waits for; the output's one event on `copy_in`
//! completes them all.
//! On the host the output is a pinned block: each CUDA part is downloaded into its range on its
//! device's `copy_out` stream (a device's small parts together by one kernel launch writing the
//! block across the bus, [`KERNEL_DOWNLOAD_BELOW`]), each other part (host or Vulkan) copied in
//! on the calling thread,
//! and the output's fence completes once every device's last download has ([`Joined`] where
//! there are several).

use std::any::Any;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;

use super::copy::{dtoh_into, htod_into, peer_into, within_into};
use super::device::{self, CudaDevice};
use super::event::{Event, issue_flagged, wait_on};
use super::launch::{self, Launcher, Seg};
use super::memory::{CudaFence, DevAlloc, alloc_of, await_on, device_buffer, record};
use super::pinned::{self, PinnedBlock, PinnedHost};
use crate::backend::join::Part;
use crate::backend::{Buffer, Fence, Mem, OutSpec};
use crate::device::{Device, DeviceKind};
use crate::error::{Error, Result};

/// `parts` (on CUDA devices and host devices, or computed on `to`) end to end in a new buffer on
/// CUDA device `to`.
pub(crate) fn on_device(to: Device, parts: &[Part], out: OutSpec) -> Result<Buffer> {
    let dev = device::of(to, "join")?;
    let stream = &dev.copy_in;
    let dst = dev.alloc(out.len * out.dtype.size(), stream)?;
    let computed = computed_parts(&dev, parts, &dst, out)?;
    let mut at = 0;
    for p in parts {
        let range = DevAlloc::view(&dst, at, p.bytes());
        match p {
            Part::Computed { .. } => {}
            Part::Copy(b) if b.device.is_host() => htod_into(&dev, b, &range).map(drop)?,
            Part::Copy(b) if b.device == to => within_into(&dev, b, &range).map(drop)?,
            Part::Copy(b) => peer_into(&*device::of(b.device, "join")?, &dev, b, &range).map(drop)?,
        };
        at += p.bytes();
    }
    for e in &computed {
        wait_on(stream, e, to)?;
    }
    // Every copy was issued on `stream`, in order, after it waited for the computed parts: its
    // last event completes them all.
    let event = record(stream, to)?;
    Ok(device_buffer(out.dtype, out.len, dst, event, stream))
}

/// Launches each computed part of `parts` into its range of `dst` (a new allocation on `dev`,
/// ordered on its `copy_in` stream) on `dev`'s compute stream, once that stream has waited for
/// the allocation; returns their events, for the copies' stream to wait for.
fn computed_parts(
    dev: &CudaDevice,
    parts: &[Part],
    dst: &Arc<DevAlloc>,
    out: OutSpec,
) -> Result<Vec<Arc<Event>>> {
    if !parts.iter().any(|p| matches!(p, Part::Computed { .. })) {
        return Ok(vec![]);
    }
    let allocated = record(&dev.copy_in, dev.device)?;
    wait_on(&dev.compute, &allocated, dev.device)?;
    let (mut events, mut at) = (vec![], 0);
    for p in parts {
        if let Part::Computed { kernel, inputs, out: part } = p {
            events.push(launch::compute_into(dev, kernel, inputs, 0, (dst, at), *part)?);
        }
        at += p.len();
    }
    debug_assert_eq!(at, out.len);
    Ok(events)
}

/// `parts` (on CUDA devices, and host or Vulkan devices, or computed on `to`) end to end in new
/// pinned memory of host device `to`.
pub(crate) fn to_host(to: Device, parts: &[Part], out: OutSpec) -> Result<Buffer> {
    let bytes = out.len * out.dtype.size();
    let Some(first) = parts.iter().find_map(|p| cuda_part(p)) else {
        return Err(Error::internal("join", "a pinned join of host parts only"));
    };
    let first = device::of(first.device, "join")?;
    // Held by the output-to-be from the start: a failed part gives the block back to the pool,
    // once the downloads already issued into it have run.
    let host = PinnedHost::new(
        (bytes > 0).then(|| pinned::take(bytes, &first.ctx, first.device)).transpose()?,
        bytes,
    );
    let mut last: Vec<CudaFence> = Vec::new();
    for (device, downloads) in by_device(parts) {
        let dev = device::of(device, "join")?;
        let event = download(&dev, &downloads, host.block())?;
        last.push(CudaFence::new(event, &dev.copy_out, dev.device));
    }
    copy_host_parts(to, parts, &host)?;
    let fence: Option<Arc<dyn Fence>> = match last.len() {
        0 => None,
        1 => last.pop().map(|f| Arc::new(f) as Arc<dyn Fence>),
        _ => Some(Arc::new(Joined(last))),
    };
    Ok(Buffer { device: to, dtype: out.dtype, len: out.len, mem: Mem::Host(Box::new(host)), fence })
}

/// A host join's downloads from one CUDA device smaller than this many bytes in all are copied
/// by one `copyseg` launch writing the pinned output across the bus, on the device's `copy_out`
/// stream, instead of a driver copy each: on an H100 the 4 KiB all_to_all of `cuda:0,cpu:0`
/// spent about 7.6 µs issuing its host member's one 2 KiB download and its event, where its CUDA
/// member's one-pass concat, a launch that reads a host part across the bus, issued in about
/// 7.8 (`bench/gpu/42-join-downloads`, run a); the one-pass kernels write host copies so below the
/// same size (`exec::STREAM_SMALL_BYTES`).
pub(crate) const KERNEL_DOWNLOAD_BELOW: usize = crate::exec::STREAM_SMALL_BYTES;

/// The CUDA parts of `parts` by device, in order of their first part, each with where it starts
/// in the join's output.
fn by_device<'a>(parts: &[Part<'a>]) -> Vec<(Device, Vec<(&'a Buffer, usize)>)> {
    let mut out: Vec<(Device, Vec<(&'a Buffer, usize)>)> = Vec::new();
    let mut at = 0;
    for p in parts {
        if let Some(b) = cuda_part(p) {
            match out.iter_mut().find(|(d, _)| *d == b.device) {
                Some((_, list)) => list.push((b, at)),
                None => out.push((b.device, vec![(b, at)])),
            }
        }
        at += p.bytes();
    }
    out
}

/// Issues the downloads of `parts` (buffers of `dev`, each with its offset) into their ranges of
/// `block` (none when the output is empty); returns the event after the last. Below
/// [`KERNEL_DOWNLOAD_BELOW`] bytes in all, on a device with unified addressing, one `copyseg`
/// launch writes them all; otherwise each is a driver copy.
fn download(dev: &CudaDevice, parts: &[(&Buffer, usize)], block: Option<&PinnedBlock>) -> Result<Arc<Event>> {
    let bytes: usize = parts.iter().map(|(b, _)| b.bytes()).sum();
    match block {
        Some(block) if bytes < KERNEL_DOWNLOAD_BELOW && dev.unified => by_kernel(dev, parts, block),
        _ => {
            let mut last = None;
            for &(b, at) in parts {
                last = Some(dtoh_into(dev, b, block.map(|k| (k, at)))?);
            }
            last.ok_or_else(|| Error::internal("join", "a download of no parts"))
        }
    }
}

/// [`download`] by one `copyseg` launch on `dev`'s `copy_out` stream, which stores a completion
/// flag where it can.
fn by_kernel(dev: &CudaDevice, parts: &[(&Buffer, usize)], block: &PinnedBlock) -> Result<Arc<Event>> {
    crate::failpoint::hit(dev.device, "cuda copy")?;
    let stream = &dev.copy_out;
    let mut segs: Vec<Seg> = Vec::with_capacity(parts.len());
    for &(b, at) in parts {
        if at + b.bytes() > block.capacity() {
            let msg = format!("{} bytes from {at} overrun the pinned output", b.bytes());
            return Err(Error::internal("join", msg));
        }
        await_on(stream, b, dev.device)?;
        segs.push((
            alloc_of(b, "join")?.ptr(),
            block.ptr() as CUdeviceptr + at as CUdeviceptr,
            b.bytes() as u64,
        ));
    }
    dev.bind()?;
    let l = Launcher::new(dev, stream);
    // SAFETY: each source is `dev`'s memory of its length, alive until the event (noted below);
    // each destination is its range of the pinned block (checked above), mapped at its host
    // address under unified addressing, which returns to the pool only once idle (noted below);
    // the ranges are disjoint (consecutive parts of one output).
    let issued = issue_flagged(dev, stream, |flag| unsafe { launch::copy_segments_flagged(&l, &segs, flag) });
    let done = match issued {
        Ok(e) => e,
        Err(e) => {
            // A launch already issued may still write the block: let it finish.
            let _ = dev.synchronize();
            return Err(e);
        }
    };
    block.note_use(&done);
    for &(b, _) in parts {
        alloc_of(b, "join")?.note_use(stream, &done);
    }
    Ok(done)
}

/// The buffer of `p` where it is a copy from a CUDA device.
fn cuda_part<'a>(p: &Part<'a>) -> Option<&'a Buffer> {
    p.copied().filter(|b| b.device.kind() == DeviceKind::Cuda)
}

/// Writes the other parts of `parts` (on host or Vulkan devices, or computed on host device `to`)
/// into their ranges of `host`, waiting for each on the host. The CUDA parts' ranges are being
/// downloaded meanwhile: nothing here forms a reference to them.
fn copy_host_parts(to: Device, parts: &[Part], host: &PinnedHost) -> Result<()> {
    let mut at = 0;
    for p in parts {
        let n = p.bytes();
        let downloaded = cuda_part(p).is_some();
        if let Some(block) = host.block().filter(|_| !downloaded && n > 0) {
            if at + n > block.capacity() {
                return Err(Error::internal(
                    "join",
                    format!("{n} bytes from {at} overrun the pinned output"),
                ));
            }
            // SAFETY: `at..at + n` lies within the block (checked above), which lives as long as
            // `host`; the ranges of `parts` are disjoint and only this range's part writes it
            // (the downloads write the CUDA parts' ranges only).
            let range = unsafe { std::slice::from_raw_parts_mut(block.ptr().add(at), n) };
            crate::backend::join::write_host_part(p, to, range)?;
        }
        at += n;
    }
    Ok(())
}

/// Completion of downloads from several CUDA devices into one host buffer: each device's last.
/// A CUDA stream waits for each on the device ([`super::memory::await_fence`]).
pub(crate) struct Joined(pub Vec<CudaFence>);

impl Fence for Joined {
    fn wait(&self) -> Result<()> {
        self.0.iter().try_for_each(|f| f.wait())
    }

    fn is_complete(&self) -> bool {
        self.0.iter().all(|f| f.is_complete())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
