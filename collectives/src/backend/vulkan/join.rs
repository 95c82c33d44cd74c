//! The Vulkan half of a join (`backend/join.rs`): parts of this device and host parts copied
//! once, straight into their ranges of a new buffer, and parts this device's kernels compute
//! recorded into the same submission; and a Vulkan part read straight into its range of a host
//! join.
//!
//! Host parts are written through the output's mapping where it has one (a tensor in host
//! memory, or any buffer of a device whose memory the host maps), else packed into one staging
//! buffer; the device's parts, and the staging buffer's, are buffer copies of one submission.
//! A computed part's kernel writes its range where the range starts on a binding's offset
//! alignment and the kernel's whole 16-byte blocks stay inside it (the part is whole blocks, or
//! ends the output, whose padding takes the spare lanes); elsewhere it writes a scratch buffer
//! that the submission copies into the range once the kernels are done. Where every buffer is
//! small, cached host memory ([`copy::suits_host`]) and every computed part is small enough for
//! the host ([`VulkanBackend::host_computes`]), the host copies the device's parts and computes
//! the computed ones too, and nothing is submitted.

use std::sync::Arc;

use ash::vk;

use super::memory::{DevBuf, Usage};
use super::submit::Recorder;
use super::{VulkanBackend, check_features, copy, elementwise, export, pipeline_key};
use crate::backend::cpu::kernels::copy_bytes;
use crate::backend::join::Part;
use crate::backend::{Buffer, Kernel, OutSpec};
use crate::dtype::DType;
use crate::error::{Error, Result};

impl VulkanBackend {
    /// `parts` (buffers of this device, or host buffers, or kernels of this device computed into
    /// their ranges) end to end in a new buffer of this device.
    pub(crate) fn join(&self, parts: &[Part], out: OutSpec) -> Result<Buffer> {
        crate::failpoint::hit(self.gpu.device, "vulkan copy")?;
        let dst = self.alloc(out.dtype, out.len)?;
        let (mut device, mut host, mut computed) = (vec![], vec![], vec![]);
        let mut at = 0u64;
        // A part of no bytes takes no range (and a buffer copy of none is invalid).
        for p in parts {
            match p {
                _ if p.bytes() == 0 => continue,
                Part::Copy(b) if b.device.is_host() => host.push((*b, at)),
                Part::Copy(b) => device.push((self.mem(b, "join")?, *b, at)),
                Part::Computed { kernel, inputs, out } => {
                    computed.push(self.computed(kernel, inputs, *out, at)?)
                }
            }
            at += p.bytes() as u64;
        }
        let on_host = copy::suits_host(device.iter().map(|(b, _, _)| b.as_ref()), &dst, self.gpu.host_below)
            && computed.iter().all(|c| self.host_computes(c.kernel, c.inputs, &c.ins, &dst, c.spec));
        if on_host {
            let parts = device
                .iter()
                .map(|&(b, p, at)| (p, Some(b), at))
                .chain(host.iter().map(|&(p, at)| (p, None, at)));
            // SAFETY: `dst` is new and mapped; each part is waited for before it is read.
            unsafe { write_mapped(&dst, parts) }?;
            for c in &computed {
                let (at, end) = (c.at as usize, (c.at + c.bytes()) as usize);
                // SAFETY: `dst` is new and mapped (`suits_host`), and holds every part's range.
                let range = unsafe { &mut dst.mapped_bytes_mut(end)[at..] };
                // SAFETY: `host_computes` holds (checked above).
                unsafe { self.compute_mapped(c.kernel, c.inputs, &c.ins, range, c.spec) }?;
            }
            return Ok(self.output(dst, out.dtype, out.len, None));
        }
        // A computed part writes its range alone (`Computed::in_place`), so host parts may go
        // through the mapping first.
        let staged = self.place_host_parts(&dst, &host)?;
        if device.is_empty() && computed.is_empty() && staged.is_none() {
            return Ok(self.output(dst, out.dtype, out.len, None));
        }
        let read =
            device.iter().map(|&(_, p, _)| p).chain(computed.iter().flat_map(|c| c.inputs.iter().copied()));
        let waits = export::foreign_waits(&self.gpu, &read.collect::<Vec<_>>())?;
        let mut rec = Recorder::begin(&self.gpu)?;
        rec.wait_for(&waits);
        let scratch = computed
            .iter()
            .map(|c| self.record_computed(&mut rec, c, &dst, at))
            .collect::<Result<Vec<_>>>()?;
        // The kernels' results are written before a copy reads one out of its scratch buffer.
        rec.barrier();
        for (s, c) in scratch.iter().zip(&computed) {
            if let Some(s) = s {
                rec.copy(s, &dst, &[region(0, c.at, c.bytes() as usize)]);
            }
        }
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

    /// A part `kernel` of `inputs` computes, from byte `at` of the join's output, checked as
    /// [`crate::backend::Backend::compute`] checks a kernel, its pipeline built.
    fn computed<'a>(
        &self,
        kernel: &'a Kernel,
        inputs: &'a [&'a Buffer],
        spec: OutSpec,
        at: u64,
    ) -> Result<Computed<'a>> {
        check_features(&self.gpu, kernel, inputs, spec)?;
        let ins = inputs.iter().map(|b| self.mem(b, kernel.name())).collect::<Result<Vec<_>>>()?;
        let in_dtype = inputs.first().map_or(spec.dtype, |b| b.dtype);
        // Built before a recorder takes the queue.
        if let Some(key) = pipeline_key(kernel, in_dtype, spec.dtype) {
            self.gpu.pipelines.get(&self.gpu, key)?;
        }
        Ok(Computed { kernel, inputs, ins, in_dtype, spec, at })
    }

    /// Records part `c` into its range of `dst` (of `total` bytes of parts) where it may write
    /// there ([`Computed::in_place`]), else into a new scratch buffer, returned for the caller
    /// to copy into the range once the kernel is done.
    fn record_computed(
        &self,
        rec: &mut Recorder<'_>,
        c: &Computed,
        dst: &Arc<DevBuf>,
        total: u64,
    ) -> Result<Option<Arc<DevBuf>>> {
        if c.in_place(self.kernel_align(), total) {
            self.record(rec, c.kernel, &c.ins, c.in_dtype, (dst, c.at), c.spec)?;
            return Ok(None);
        }
        let scratch = self.alloc(c.spec.dtype, c.spec.len)?;
        self.record(rec, c.kernel, &c.ins, c.in_dtype, (&scratch, 0), c.spec)?;
        rec.keep(&scratch);
        Ok(Some(scratch))
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

/// A part of a join computed by a kernel of the join's device.
struct Computed<'a> {
    kernel: &'a Kernel,
    /// The inputs, and their device buffers.
    inputs: &'a [&'a Buffer],
    ins: Vec<&'a Arc<DevBuf>>,
    in_dtype: DType,
    spec: OutSpec,
    /// The part's first byte in the output.
    at: u64,
}

impl Computed<'_> {
    fn bytes(&self) -> u64 {
        (self.spec.len * self.spec.dtype.size()) as u64
    }

    /// Whether the kernel may write straight into its range of an output of `total` bytes of
    /// parts ([`in_place`]).
    fn in_place(&self, align: u64, total: u64) -> bool {
        elementwise(self.kernel) && in_place(self.at, self.bytes(), align, total)
    }
}

/// Whether an elementwise kernel may write `bytes` from byte `at` of an output of `total` bytes
/// of parts: the range starts on `align` (a binding's offset alignment, a whole kernel block),
/// and the whole 16-byte blocks the kernel writes stay in it — the part is whole blocks, or the
/// last, whose spare lanes land in the buffer's padding.
fn in_place(at: u64, bytes: u64, align: u64, total: u64) -> bool {
    at.is_multiple_of(align) && (bytes.is_multiple_of(16) || at + bytes == total)
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

#[cfg(test)]
mod tests {
    use super::in_place;

    #[test]
    fn a_kernel_writes_its_range_only_from_an_aligned_start_and_within_its_blocks() {
        // Whole blocks from an aligned start, anywhere in the output.
        assert!(in_place(0, 64, 16, 200) && in_place(256, 32, 256, 1000));
        // A partial last block: only where it ends the output (the padding takes it).
        assert!(in_place(256, 20, 256, 276) && !in_place(256, 20, 256, 300));
        // Off the alignment, whole blocks or not.
        assert!(!in_place(16, 64, 64, 200) && !in_place(8, 8, 16, 16));
    }
}
