//! The Vulkan side of the staged CUDA ↔ Vulkan chain (see [`crate::backend::staged`]): host
//! memory imported as a buffer through `VK_EXT_external_memory_host` ([`RingView`]), and the
//! chunk copies between it and a tensor's device buffer ([`VulkanEnd`]), each submitted on its
//! own so the chain can hand chunks over one by one.

use std::any::Any;
use std::ptr::NonNull;
use std::sync::Arc;

use ash::vk;

use super::VulkanBackend;
use super::device::Gpu;
use super::memory::{DevBuf, Imported, Usage, VkMem};
use super::raw::{self, check};
use super::submit::{Recorder, TimelineFence};
use crate::backend::chain::{ChunkEnd, Span};
use crate::backend::{Buffer, Fence, Mem};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// A device's host-memory import: the extension's entry point and the alignment it needs.
pub(super) struct HostImport {
    ext: ash::ext::external_memory_host::Device,
    /// `minImportedHostPointerAlignment`: imported addresses and sizes are multiples of it.
    pub align: u64,
}

impl HostImport {
    /// The import entry points of `dev` (created with the extension enabled).
    pub fn new(instance: &ash::Instance, dev: &ash::Device, align: u64) -> Self {
        HostImport { ext: ash::ext::external_memory_host::Device::new(instance, dev), align }
    }
}

/// The opened Vulkan device `device`.
pub(super) fn gpu(device: Device) -> Result<Arc<Gpu>> {
    let be = crate::backend::get(device)?;
    let vk = be.as_any().and_then(|a| a.downcast_ref::<VulkanBackend>());
    vk.map(|b| b.gpu.clone())
        .ok_or_else(|| Error::internal("staged copy", format!("{device} is not a Vulkan device")))
}

/// The alignment (of address and size) at which `device` imports host memory; an error when it
/// cannot (no `VK_EXT_external_memory_host`).
pub(crate) fn import_alignment(device: Device) -> Result<usize> {
    match &gpu(device)?.host_import {
        Some(h) => Ok(h.align as usize),
        None => Err(Error::driver(device, "import host memory", "VK_EXT_external_memory_host is missing")),
    }
}

/// A ring's memory seen as one buffer of one Vulkan device: host memory imported into it
/// ([`import`]), or its own memory exported to CUDA ([`super::export::export`]).
pub(crate) struct RingView {
    pub(super) buf: Arc<DevBuf>,
    pub(super) len: usize,
}

/// Imports the `len` bytes at `ptr` into `device` as a buffer; `keep` holds the memory alive
/// until the import is freed (after the last copy using it has run).
///
/// # Safety
/// `ptr..ptr + len` is host memory, readable and writable, that stays allocated while `keep`
/// lives; `ptr` and `len` are multiples of [`import_alignment`].
pub(crate) unsafe fn import(
    device: Device,
    ptr: NonNull<u8>,
    len: usize,
    keep: Arc<dyn Any + Send + Sync>,
) -> Result<RingView> {
    let gpu = gpu(device)?;
    // SAFETY: as the caller guarantees.
    let buf = unsafe { import_on(&gpu, ptr, len, keep)? };
    Ok(RingView { buf, len })
}

/// [`import`] on `gpu`: the `len` bytes at `ptr` as one buffer of it (transfer source and
/// destination), holding `keep` until it is freed.
///
/// # Safety
/// As for [`import`].
pub(super) unsafe fn import_on(
    gpu: &Arc<Gpu>,
    ptr: NonNull<u8>,
    len: usize,
    keep: Arc<dyn Any + Send + Sync>,
) -> Result<Arc<DevBuf>> {
    let device = gpu.device;
    let Some(host) = &gpu.host_import else {
        return Err(Error::driver(device, "import host memory", "VK_EXT_external_memory_host is missing"));
    };
    if !(ptr.as_ptr() as u64).is_multiple_of(host.align)
        || !(len as u64).is_multiple_of(host.align)
        || len == 0
    {
        return Err(Error::driver(device, "import host memory", format!("not {}-byte aligned", host.align)));
    }
    let size = len as u64;
    // SAFETY: the device is live with the extension enabled; the buffer is destroyed below on
    // failure, or by the `DevBuf` that owns it.
    let buffer = check(device, "vkCreateBuffer", unsafe { raw::create_host_import_buffer(&gpu.raw, size) })?;
    // SAFETY: `buffer` belongs to this device.
    let needs = unsafe { gpu.raw.get_buffer_memory_requirements(buffer) };
    // SAFETY: as the caller guarantees for `ptr` and `len`; `host.ext` was loaded from this device.
    let memory = unsafe {
        raw::import_host_memory(&gpu.raw, &host.ext, ptr.as_ptr().cast(), size, needs.memory_type_bits)
    };
    let memory = match memory {
        Ok(m) => m,
        Err(e) => {
            // SAFETY: the buffer was never used.
            unsafe { raw::destroy_buffer(&gpu.raw, buffer) };
            return Err(raw::vk_error(device, "import host memory", e));
        }
    };
    // SAFETY: `memory` covers the buffer's `size` bytes from offset 0 and is bound once.
    if let Err(e) = unsafe { gpu.raw.bind_buffer_memory(buffer, memory, 0) } {
        // SAFETY: neither was used.
        unsafe {
            raw::destroy_buffer(&gpu.raw, buffer);
            gpu.raw.free_memory(memory, None);
        }
        return Err(raw::vk_error(device, "vkBindBufferMemory", e));
    }
    let imported = Imported { memory, _host: keep };
    Ok(DevBuf::from_import(gpu, buffer, size, imported, Some(ptr)))
}

/// One Vulkan end of a staged chain: a device buffer and the ring's imported view.
pub(crate) struct VulkanEnd<'r> {
    gpu: Arc<Gpu>,
    buf: Arc<DevBuf>,
    bytes: usize,
    ring: &'r RingView,
    last: Option<Arc<TimelineFence>>,
    /// What the first submission waits for (a CUDA copy into the source, on the device).
    waits: Vec<(vk::Semaphore, u64)>,
}

/// The end reading `src`, a Vulkan buffer of the ring's device.
pub(crate) fn source_end<'r>(src: &Buffer, ring: &'r RingView) -> Result<VulkanEnd<'r>> {
    let buf = src.device_mem::<VkMem>("staged copy")?.0.clone();
    if !Arc::ptr_eq(&buf.gpu, &ring.buf.gpu) {
        return Err(Error::internal("staged copy", format!("the ring does not belong to {}", src.device)));
    }
    // Work on one device runs in queue order, so the copies wait for `src`'s writer themselves
    // (a CUDA writer by its signal, or on the host).
    let waits = super::export::foreign_waits(&buf.gpu, &[src])?;
    Ok(VulkanEnd { gpu: buf.gpu.clone(), buf, bytes: src.bytes(), ring, last: None, waits })
}

/// The end writing a new buffer of `bytes` on `device`, the ring's device.
pub(crate) fn dest_end(device: Device, bytes: usize, ring: &RingView) -> Result<VulkanEnd<'_>> {
    let gpu = ring.buf.gpu.clone();
    if gpu.device != device {
        return Err(Error::internal("staged copy", format!("the ring does not belong to {device}")));
    }
    let buf = DevBuf::new(&gpu, bytes as u64, Usage::Device)?;
    Ok(VulkanEnd { gpu, buf, bytes, ring, last: None, waits: vec![] })
}

impl VulkanEnd<'_> {
    /// Submits the copies of `spans` between the ring and the buffer (`into_ring`: from the
    /// buffer) as one command buffer.
    fn submit(&mut self, spans: &[Span], into_ring: bool) -> Result<Option<Arc<dyn Fence>>> {
        self.check(spans)?;
        let regions: Vec<vk::BufferCopy> = spans
            .iter()
            .filter(|s| s.len > 0)
            .map(|s| {
                let (from, to) = if into_ring { (s.off, s.at) } else { (s.at, s.off) };
                vk::BufferCopy { src_offset: from as u64, dst_offset: to as u64, size: s.len as u64 }
            })
            .collect();
        if regions.is_empty() {
            return Ok(None);
        }
        let (buf, ring) = (self.buf.clone(), self.ring.buf.clone());
        let (src, dst) = if into_ring { (&buf, &ring) } else { (&ring, &buf) };
        let mut rec = Recorder::begin(&self.gpu)?;
        rec.wait_for(&std::mem::take(&mut self.waits));
        rec.copy(src, dst, &regions);
        let fence = rec.submit()?;
        self.last = Some(fence.clone());
        Ok(Some(fence))
    }

    /// Checks that every span lies within the ring and the buffer.
    fn check(&self, spans: &[Span]) -> Result<()> {
        Span::check_all(spans, self.ring.len, self.bytes, self.gpu.device)
    }

    /// The destination buffer as a tensor buffer of `len` elements of `dtype`, complete when the
    /// last chunk copied into it is.
    pub fn into_buffer(self, dtype: DType, len: usize) -> Buffer {
        Buffer {
            device: self.gpu.device,
            dtype,
            len,
            mem: Mem::Device(Box::new(VkMem(self.buf))),
            fence: self.last.map(|f| f as Arc<dyn Fence>),
        }
    }
}

impl ChunkEnd for VulkanEnd<'_> {
    /// A CUDA copy that signals this device's timeline is waited for by the next submission, on
    /// the device; this queue's own work needs no wait; anything else is waited for on the host.
    fn after(&mut self, fence: &Arc<dyn Fence>) -> Result<()> {
        self.waits.extend(super::export::foreign_wait(&self.gpu, fence.as_ref())?);
        Ok(())
    }

    fn buffer_to_ring(&mut self, spans: &[Span]) -> Result<Option<Arc<dyn Fence>>> {
        self.submit(spans, true)
    }

    fn ring_to_buffer(&mut self, spans: &[Span]) -> Result<Option<Arc<dyn Fence>>> {
        self.submit(spans, false)
    }
}
