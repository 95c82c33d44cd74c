//! The Vulkan half of a join (`backend/join.rs`): parts of this device and host parts copied
//! once, straight into their ranges of a new buffer; and a Vulkan part read straight into its
//! range of a host join.
//!
//! Host parts are written through the output's mapping where it has one (a tensor in host
//! memory, or any buffer of a device whose memory the host maps), else packed into one staging
//! buffer; the device's parts, and the staging buffer's, are buffer copies of one submission.
//! Where every buffer is small, cached host memory ([`copy::suits_host`]) the device's
//! parts are copied by the host too, and nothing is submitted.

use std::sync::Arc;

use ash::vk;

use super::memory::{DevBuf, Usage};
use super::submit::Recorder;
use super::{VulkanBackend, copy, export};
use crate::backend::cpu::kernels::copy_bytes;
use crate::backend::{Buffer, OutSpec};
use crate::error::{Error, Result};

impl VulkanBackend {
    /// `parts` (buffers of this device, or host buffers) end to end in a new buffer of this
    /// device.
    pub(crate) fn join(&self, parts: &[&Buffer], out: OutSpec) -> Result<Buffer> {
        crate::failpoint::hit(self.gpu.device, "vulkan copy")?;
        let dst = self.alloc(out.dtype, out.len)?;
        let (mut device, mut host) = (vec![], vec![]);
        let mut at = 0u64;
        // A part of no bytes takes no range (and a buffer copy of none is invalid).
        for p in parts {
            if p.bytes() == 0 {
                continue;
            }
            match p.device.is_host() {
                true => host.push((*p, at)),
                false => device.push((self.mem(p, "join")?, *p, at)),
            }
            at += p.bytes() as u64;
        }
        if copy::suits_host(device.iter().map(|(b, _, _)| b.as_ref()), &dst, self.gpu.host_below) {
            let parts = device
                .iter()
                .map(|&(b, p, at)| (p, Some(b), at))
                .chain(host.iter().map(|&(p, at)| (p, None, at)));
            // SAFETY: `dst` is new and mapped; each part is waited for before it is read.
            unsafe { write_mapped(&dst, parts) }?;
            return Ok(self.output(dst, out.dtype, out.len, None));
        }
        let staged = self.place_host_parts(&dst, &host)?;
        if device.is_empty() && staged.is_none() {
            return Ok(self.output(dst, out.dtype, out.len, None));
        }
        let bufs: Vec<&Buffer> = device.iter().map(|&(_, p, _)| p).collect();
        let waits = export::foreign_waits(&self.gpu, &bufs)?;
        let mut rec = Recorder::begin(&self.gpu)?;
        rec.wait_for(&waits);
        for &(b, p, at) in &device {
            rec.copy(b, &dst, &[region(0, at, p.bytes())]);
        }
        if let Some((staging, regions)) = &staged {
            rec.copy(staging, &dst, regions);
        }
        rec.keep(&dst);
        let fence = rec.submit()?;
        Ok(self.output(dst, out.dtype, out.len, Some(fence)))
    }

    /// Writes the `host` parts (each with its byte offset) into `dst`: through its mapping where
    /// it has one (`None` returned), else into one new staging buffer, returned with the copy
    /// regions that take each part to its range.
    fn place_host_parts(
        &self,
        dst: &Arc<DevBuf>,
        host: &[(&Buffer, u64)],
    ) -> Result<Option<(Arc<DevBuf>, Vec<vk::BufferCopy>)>> {
        let bytes: u64 = host.iter().map(|(p, _)| p.bytes() as u64).sum();
        if bytes == 0 {
            return Ok(None);
        }
        if dst.is_mapped() {
            // SAFETY: `dst` is new and mapped; the submission copying the device's parts into
            // other ranges comes after these writes.
            unsafe { write_mapped(dst, host.iter().map(|&(p, at)| (p, None, at))) }?;
            return Ok(None);
        }
        let staging = DevBuf::new(&self.gpu, bytes, Usage::Upload)?;
        if !staging.is_mapped() {
            return Err(Error::driver(self.gpu.device, "join", "staging memory is not host-visible"));
        }
        let mut packed = 0u64;
        let regions: Vec<vk::BufferCopy> = host
            .iter()
            .map(|&(p, at)| {
                let r = region(packed, at, p.bytes());
                packed += p.bytes() as u64;
                r
            })
            .collect();
        let parts = host.iter().zip(&regions).map(|(&(p, _), r)| (p, None, r.src_offset));
        // SAFETY: `staging` is new and mapped.
        unsafe { write_mapped(&staging, parts) }?;
        Ok(Some((staging, regions)))
    }

    /// Reads `src` (a buffer of this device) into `dst` on the host, once its writer is done:
    /// through its mapping where the host reads it fast, else through a readback.
    pub(crate) fn read_into(&self, src: &Buffer, dst: &mut [u8]) -> Result<()> {
        crate::failpoint::hit(self.gpu.device, "vulkan copy")?;
        let from = self.mem(src, "join")?;
        if from.host_reads_fast() {
            return read_mapped(src, from, dst);
        }
        let back = crate::backend::Backend::dtoh(self, src, crate::device::Device::Cpu(0))?;
        back.wait()?;
        copy_bytes(back.host_bytes("join")?, dst);
        Ok(())
    }
}

/// Copies `src` (whose memory is `from`, which the host reads fast: [`DevBuf::host_reads_fast`])
/// into `dst` through its mapping, once its writer is done.
pub(super) fn read_mapped(src: &Buffer, from: &DevBuf, dst: &mut [u8]) -> Result<()> {
    if !from.is_mapped() {
        return Err(Error::internal(
            "read through a mapping",
            format!("a buffer of {} that is not mapped", src.device),
        ));
    }
    src.wait()?;
    // SAFETY: mapped (checked above), holds `src.bytes()` (its buffer's length), and its one
    // writer is done (waited).
    copy_bytes(unsafe { from.mapped_bytes(src.bytes()) }, dst);
    Ok(())
}

/// The copy of `bytes` from byte `src` of one buffer to byte `dst` of another.
fn region(src: u64, dst: u64, bytes: usize) -> vk::BufferCopy {
    vk::BufferCopy { src_offset: src, dst_offset: dst, size: bytes as u64 }
}

/// Copies each of `parts` — a host buffer, or a mapped buffer of this device (`Some`, read
/// through its mapping) — into `dst`'s mapping from its byte offset, waiting for each first.
///
/// # Safety
/// `dst` is mapped, holds every part at its offset, and nothing else reads or writes those
/// ranges meanwhile; a device buffer given is mapped and holds its part.
unsafe fn write_mapped<'a>(
    dst: &DevBuf,
    parts: impl Iterator<Item = (&'a Buffer, Option<&'a Arc<DevBuf>>, u64)>,
) -> Result<()> {
    for (p, mapped, at) in parts {
        let (at, n) = (at as usize, p.bytes());
        if n == 0 {
            continue;
        }
        p.wait()?;
        let src = match mapped {
            // SAFETY: as the caller guarantees; its writer is done (waited above).
            Some(b) => unsafe { b.mapped_bytes(n) },
            None => p.host_bytes("join")?,
        };
        // SAFETY: as the caller guarantees: `at + n` lies within `dst`, this range is ours.
        copy_bytes(src, unsafe { &mut dst.mapped_bytes_mut(at + n)[at..] });
    }
    Ok(())
}
