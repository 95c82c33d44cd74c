//! The CUDA half of a join (`backend/join.rs`): parts from CUDA and host devices copied once,
//! straight into their ranges of one new buffer, on a CUDA device or in pinned host memory.
//!
//! On a CUDA device every part is one copy on the device's `copy_in` stream — an upload from the
//! host, a copy within the device, a peer copy — or a kernel computing it in its range on the
//! compute stream, which the `copy_in` stream waits for; the output's one event on `copy_in`
//! completes them all.
//! On the host the output is a pinned block: each CUDA part is downloaded into its range on its
//! device's `copy_out` stream, each other part (host or Vulkan) copied in on the calling thread,
//! and the output's fence completes once every device's last download has ([`Joined`] where
//! there are several).

use std::any::Any;
use std::sync::Arc;

use super::copy::{dtoh_into, htod_into, peer_into, within_into};
use super::device::{self, CudaDevice};
use super::event::{Event, wait_on};
use super::launch;
use super::memory::{CudaFence, DevAlloc, device_buffer, record};
use super::pinned::{self, PinnedHost};
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
    let mut at = 0;
    for p in parts {
        if let Some(b) = cuda_part(p) {
            let dev = device::of(b.device, "join")?;
            let event = dtoh_into(&dev, b, host.block().map(|b| (b, at)))?;
            last.retain(|f| f.device() != dev.device);
            last.push(CudaFence::new(event, &dev.copy_out, dev.device));
        }
        at += p.bytes();
    }
    copy_host_parts(to, parts, &host)?;
    let fence: Option<Arc<dyn Fence>> = match last.len() {
        0 => None,
        1 => last.pop().map(|f| Arc::new(f) as Arc<dyn Fence>),
        _ => Some(Arc::new(Joined(last))),
    };
    Ok(Buffer { device: to, dtype: out.dtype, len: out.len, mem: Mem::Host(Box::new(host)), fence })
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
