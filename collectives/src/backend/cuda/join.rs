//! The CUDA half of a join (`backend/join.rs`): parts from CUDA and host devices copied once,
//! straight into their ranges of one new buffer, on a CUDA device or in pinned host memory.
//!
//! On a CUDA device every part is one copy on the device's `copy_in` stream — an upload from the
//! host, a copy within the device, a peer copy — so the output's one event completes them all.
//! On the host the output is a pinned block: each CUDA part is downloaded into its range on its
//! device's `copy_out` stream, each other part (host or Vulkan) copied in on the calling thread,
//! and the output's fence completes once every device's last download has ([`Joined`] where
//! there are several).

use std::any::Any;
use std::sync::Arc;

use super::copy::{dtoh_into, htod_into, peer_into, within_into};
use super::device;
use super::memory::{CudaFence, DevAlloc, device_buffer, record};
use super::pinned::{self, PinnedHost};
use crate::backend::{Buffer, Fence, Mem, OutSpec};
use crate::device::{Device, DeviceKind};
use crate::error::{Error, Result};

/// `parts` (on CUDA devices and host devices) end to end in a new buffer on CUDA device `to`.
pub(crate) fn on_device(to: Device, parts: &[&Buffer], out: OutSpec) -> Result<Buffer> {
    let dev = device::of(to, "join")?;
    let stream = &dev.copy_in;
    let dst = dev.alloc(out.len * out.dtype.size(), stream)?;
    let mut at = 0;
    for p in parts {
        let range = DevAlloc::view(&dst, at, p.bytes());
        match p.device {
            d if d.is_host() => htod_into(&dev, p, &range)?,
            d if d == to => within_into(&dev, p, &range)?,
            d => peer_into(&*device::of(d, "join")?, &dev, p, &range)?,
        };
        at += p.bytes();
    }
    // Every part was copied on `stream`, in order: its last event completes them all.
    let event = record(stream, to)?;
    Ok(device_buffer(out.dtype, out.len, dst, event, stream))
}

/// `parts` (on CUDA devices, and host or Vulkan devices) end to end in new pinned memory of host
/// device `to`.
pub(crate) fn to_host(to: Device, parts: &[&Buffer], out: OutSpec) -> Result<Buffer> {
    let bytes = out.len * out.dtype.size();
    let Some(first) = parts.iter().find(|p| p.device.kind() == DeviceKind::Cuda) else {
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
        if p.device.kind() == DeviceKind::Cuda {
            let dev = device::of(p.device, "join")?;
            let event = dtoh_into(&dev, p, host.block().map(|b| (b, at)))?;
            last.retain(|f| f.device() != dev.device);
            last.push(CudaFence::new(event, &dev.copy_out, dev.device));
        }
        at += p.bytes();
    }
    copy_host_parts(parts, &host)?;
    let fence: Option<Arc<dyn Fence>> = match last.len() {
        0 => None,
        1 => last.pop().map(|f| Arc::new(f) as Arc<dyn Fence>),
        _ => Some(Arc::new(Joined(last))),
    };
    Ok(Buffer { device: to, dtype: out.dtype, len: out.len, mem: Mem::Host(Box::new(host)), fence })
}

/// Copies the other parts of `parts` (on host or Vulkan devices) into their ranges of `host`,
/// waiting for each on the host. The CUDA parts' ranges are being downloaded meanwhile: nothing
/// here forms a reference to them.
fn copy_host_parts(parts: &[&Buffer], host: &PinnedHost) -> Result<()> {
    let mut at = 0;
    for p in parts {
        let n = p.bytes();
        let downloaded = p.device.kind() == DeviceKind::Cuda;
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
            crate::backend::join::read_into(p, range)?;
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
