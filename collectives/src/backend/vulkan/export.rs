//! Device memory exported to CUDA: the Vulkan half of the device bridge between a CUDA device
//! and a Vulkan device that are the same GPU.
//!
//! When both APIs drive one GPU, a CUDA ↔ Vulkan move need not cross PCIe at all: a ring of
//! this device's own memory, allocated exportable (`VK_KHR_external_memory_fd`) and imported
//! into CUDA (`cuImportExternalMemory`), is addressed by both, so each chunk is a device-to-device
//! copy on either side (see [`crate::backend::staged`]). Whether two devices are one GPU is read
//! from their UUIDs ([`uuid`]), which both APIs report alike.

use std::any::Any;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use ash::vk;

use super::bridge::{RingView, gpu};
use super::device::Gpu;
use super::memory::{DevBuf, Imported, Usage, VkMem};
use super::raw::{self, check};
use super::submit::TimelineFence;
use crate::backend::{Buffer, Fence, Mem};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// The UUID of Vulkan device `device` (`VkPhysicalDeviceIDProperties::deviceUUID`).
pub(crate) fn uuid(device: Device) -> Result<[u8; 16]> {
    Ok(gpu(device)?.uuid)
}

/// [`uuid`] from the instance's list of devices: opens no device, for questions asked while a
/// graph is built.
pub(crate) fn listed_uuid(device: Device) -> Result<[u8; 16]> {
    Ok(super::instance::physical(device.ordinal())?.1.uuid)
}

/// A new descriptor of `device`'s timeline semaphore (submission n signals value n, see
/// [`super::submit`]), for CUDA to import and wait on; an error when the timeline is not
/// exportable (not an NVIDIA GPU, or no `VK_KHR_external_semaphore_fd`).
pub(crate) fn timeline_fd(device: Device) -> Result<OwnedFd> {
    let gpu = gpu(device)?;
    let Some(ext) = &gpu.timeline_fd else {
        return Err(Error::driver(device, "export the timeline semaphore", "the timeline is not exportable"));
    };
    // SAFETY: the timeline was created on this device exportable as an opaque descriptor
    // (`timeline_fd` is set only then).
    check(device, "vkGetSemaphoreFdKHR", unsafe { raw::semaphore_fd(ext, gpu.timeline) })
}

/// The Vulkan device and the value of its timeline that `fence` stands for, when `fence` is a
/// Vulkan submission's.
pub(crate) fn timeline_point(fence: &dyn Fence) -> Option<(Device, u64)> {
    let t = fence.as_any().downcast_ref::<TimelineFence>()?;
    Some((t.gpu.device, t.value))
}

/// A timeline semaphore of one Vulkan device that CUDA signals and that device's submissions
/// wait on: the ordering of the bridge's other direction (a CUDA copy into a Vulkan buffer,
/// then Vulkan work reading it). One per signalling CUDA stream, each counting its own values up
/// from 0, so that every signal of one is greater than the one before.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Inbound {
    device: Device,
    semaphore: vk::Semaphore,
}

/// A new inbound timeline of Vulkan device `device` (at 0, kept until the device is closed) and
/// a descriptor of it for CUDA to import; an error when the device cannot export semaphores
/// (not an NVIDIA GPU, or no `VK_KHR_external_semaphore_fd`).
pub(crate) fn inbound_timeline(device: Device) -> Result<(Inbound, OwnedFd)> {
    let gpu = gpu(device)?;
    let Some(ext) = &gpu.timeline_fd else {
        return Err(Error::driver(device, "export a timeline semaphore", "semaphores are not exportable"));
    };
    // SAFETY: the device is live with timeline semaphores and the export extension enabled; the
    // semaphore is destroyed with the device (`Gpu::inbound`).
    let semaphore = check(device, "vkCreateSemaphore", unsafe { raw::create_timeline(&gpu.raw, true) })?;
    gpu.inbound.lock().push(semaphore);
    // SAFETY: the semaphore was created on this device, exportable as an opaque descriptor.
    let fd = check(device, "vkGetSemaphoreFdKHR", unsafe { raw::semaphore_fd(ext, semaphore) })?;
    Ok((Inbound { device, semaphore }, fd))
}

#[cfg(test)]
impl Inbound {
    /// An inbound timeline of `gpu` that is not exported: the host signals it ([`Self::signal`]),
    /// standing in for CUDA on machines without it.
    pub(super) fn unexported(gpu: &Gpu) -> Result<Inbound> {
        // SAFETY: the device is live with timeline semaphores; destroyed with the device.
        let semaphore =
            check(gpu.device, "vkCreateSemaphore", unsafe { raw::create_timeline(&gpu.raw, false) })?;
        gpu.inbound.lock().push(semaphore);
        Ok(Inbound { device: gpu.device, semaphore })
    }

    /// Sets the timeline to `value` from the host.
    pub(super) fn signal(&self, gpu: &Gpu, value: u64) -> Result<()> {
        let info = vk::SemaphoreSignalInfo::default().semaphore(self.semaphore).value(value);
        // SAFETY: the semaphore is `gpu`'s, a timeline, and `value` is above its current value.
        check(gpu.device, "vkSignalSemaphore", unsafe { gpu.raw.signal_semaphore(&info) })
    }
}

/// The fence of a CUDA copy into a Vulkan buffer that signals `to` at `value` once it has run:
/// the host waits on the copy's own fence, and a submission of `to`'s device reading the buffer
/// waits for the signal on the device instead ([`foreign_waits`]).
pub(crate) struct Signalled {
    /// The copy's own fence.
    pub copy: Arc<dyn Fence>,
    /// The timeline the copy signals.
    pub to: Inbound,
    /// The value it signals.
    pub value: u64,
}

impl Fence for Signalled {
    fn wait(&self) -> Result<()> {
        self.copy.wait()
    }

    fn is_complete(&self) -> bool {
        self.copy.is_complete()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What a submission of `gpu` that reads `bufs` waits for, by [`foreign_wait`] on each one's
/// fence: the points to wait for on the device, for [`Recorder::wait_for`].
///
/// [`Recorder::wait_for`]: super::submit::Recorder::wait_for
pub(super) fn foreign_waits(gpu: &Gpu, bufs: &[&Buffer]) -> Result<Vec<(vk::Semaphore, u64)>> {
    let fences = bufs.iter().filter_map(|b| b.fence.as_deref());
    fences.filter_map(|f| foreign_wait(gpu, f).transpose()).collect()
}

/// What a submission of `gpu` waits for to come after the work `fence` stands for. Work of `gpu`'s
/// own queue needs no wait (the queue orders it); a CUDA copy that signals one of `gpu`'s inbound
/// timelines is waited for on the device (the point returned); any other work still running is
/// waited for here, on the host.
pub(super) fn foreign_wait(gpu: &Gpu, fence: &dyn Fence) -> Result<Option<(vk::Semaphore, u64)>> {
    let any = fence.as_any();
    if any.downcast_ref::<TimelineFence>().is_some_and(|t| t.gpu.device == gpu.device) {
        return Ok(None);
    }
    match any.downcast_ref::<Signalled>() {
        Some(s) if s.to.device == gpu.device => {
            Ok((!s.copy.is_complete()).then_some((s.to.semaphore, s.value)))
        }
        _ => fence.wait().map(|()| None),
    }
}

/// Device memory of `device` exported for another API: the ring's view, the file descriptor
/// naming the memory (for the importer, who takes it over) and the allocation's size in bytes
/// (what the importer must be told).
pub(crate) struct Exported {
    /// The memory as a buffer of this device.
    pub view: RingView,
    /// A descriptor of the memory (`VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT`).
    pub fd: OwnedFd,
    /// The allocation's size, at least the view's length.
    pub size: u64,
}

/// `len` bytes of device-local memory of `device`, allocated exportable, seen as a buffer, with a
/// descriptor for an importer. An error when the device cannot export memory.
pub(crate) fn export(device: Device, len: usize) -> Result<Exported> {
    let gpu = gpu(device)?;
    let Some(ext) = &gpu.export_fd else {
        return Err(Error::driver(device, "export device memory", "VK_KHR_external_memory_fd is missing"));
    };
    if len == 0 {
        return Err(Error::internal("export device memory", "an empty ring"));
    }
    let size = len as u64;
    // SAFETY: the device is live with the extension enabled; the buffer is destroyed below on
    // failure, or by the `DevBuf` that owns it.
    let buffer = check(device, "vkCreateBuffer", unsafe { raw::create_export_buffer(&gpu.raw, size) })?;
    let destroy = |memory: Option<vk::DeviceMemory>| {
        // SAFETY: neither the buffer nor the memory was used.
        unsafe {
            raw::destroy_buffer(&gpu.raw, buffer);
            memory.inspect(|m| gpu.raw.free_memory(*m, None));
        }
    };
    // SAFETY: `buffer` belongs to this device.
    let needs = unsafe { gpu.raw.get_buffer_memory_requirements(buffer) };
    let Some(type_index) = super::memory::device_local_type(&gpu.memory, needs.memory_type_bits) else {
        destroy(None);
        return Err(Error::driver(device, "export device memory", "no device-local memory type fits"));
    };
    // SAFETY: as above; the memory is freed below on failure, or by the `DevBuf`.
    let memory = match unsafe { raw::allocate_exportable(&gpu.raw, needs.size, type_index) } {
        Ok(m) => m,
        Err(e) => {
            destroy(None);
            return Err(export_error(device, needs.size, e));
        }
    };
    // SAFETY: `memory` holds `needs.size >= size` bytes from offset 0 and is bound once.
    if let Err(e) = unsafe { gpu.raw.bind_buffer_memory(buffer, memory, 0) } {
        destroy(Some(memory));
        return Err(raw::vk_error(device, "vkBindBufferMemory", e));
    }
    // SAFETY: the memory was allocated on this device with the opaque-fd export type.
    let fd = match unsafe { raw::memory_fd(ext, memory) } {
        Ok(fd) => fd,
        Err(e) => {
            destroy(Some(memory));
            return Err(raw::vk_error(device, "vkGetMemoryFdKHR", e));
        }
    };
    let imported = Imported { memory, _host: Arc::new(()) };
    let view = RingView { buf: DevBuf::from_import(&gpu, buffer, size, imported, None), len };
    Ok(Exported { view, fd, size: needs.size })
}

/// An out-of-memory error for a failed allocation, else the driver's error.
fn export_error(device: Device, bytes: u64, e: vk::Result) -> Error {
    match e {
        vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => Error::OutOfMemory {
            device,
            bytes: bytes as usize,
            detail: format!("the device ring of the CUDA bridge: {e}"),
        },
        e => raw::vk_error(device, "vkAllocateMemory (exportable)", e),
    }
}

/// A Vulkan tensor buffer whose memory CUDA can map (exportable memory of its own, see
/// [`super::memory::Shared`]), or a view of one: the device bridge copies straight into or out
/// of it on CUDA.
pub(crate) struct SharedBuf {
    /// The buffer that owns the memory.
    buf: Arc<DevBuf>,
    /// Where the tensor starts in it (a view's offset; 0 for the buffer itself).
    offset: u64,
}

impl SharedBuf {
    /// `buf`'s memory, when it is shared (a view's, when its parent's is).
    pub fn of(buf: &Buffer) -> Option<SharedBuf> {
        let m = buf.device_mem::<VkMem>("device bridge").ok()?;
        let (root, offset) = match &m.0.parent {
            Some((root, offset)) => (root, *offset),
            None => (&m.0, 0),
        };
        root.shared().map(|_| SharedBuf { buf: root.clone(), offset })
    }

    /// Where the tensor starts in the memory CUDA maps, in bytes.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// A new tensor buffer of at least `bytes` on Vulkan device `device`, if it gets shared memory
    /// (large enough, on a device that shares memory); `None` otherwise.
    pub fn alloc(device: Device, bytes: usize) -> Result<Option<SharedBuf>> {
        let buf = DevBuf::new(&gpu(device)?, bytes as u64, Usage::Device)?;
        Ok(buf.shared().is_some().then_some(SharedBuf { buf, offset: 0 }))
    }

    /// The owning buffer's size in bytes (its mapping covers them all).
    pub fn size(&self) -> usize {
        self.buf.size as usize
    }

    /// CUDA's mapping of the memory: made by `import` from a descriptor of the memory and the
    /// allocation's size on first use, then kept with the memory.
    pub fn view<T: Any + Send + Sync>(
        &self,
        import: impl FnOnce(OwnedFd, u64) -> Result<T>,
    ) -> Result<Arc<T>> {
        let shared = self.shared()?;
        let mut view = shared.view.lock();
        if let Some(v) = view.as_ref() {
            return v
                .clone()
                .downcast::<T>()
                .map_err(|_| Error::internal("device bridge", "a foreign mapping"));
        }
        let device = self.buf.gpu.device;
        let Some(ext) = &self.buf.gpu.export_fd else {
            return Err(Error::internal("device bridge", format!("{device} does not export memory")));
        };
        // SAFETY: the memory was allocated on this device with the opaque-fd export type.
        let fd = check(device, "vkGetMemoryFdKHR", unsafe { raw::memory_fd(ext, shared.memory) })?;
        let v = Arc::new(import(fd, shared.size)?);
        *view = Some(v.clone());
        Ok(v)
    }

    /// Records `fence`, a CUDA copy of the memory (waited for, with every other still running,
    /// before the buffer is parked or freed).
    pub fn set_busy(&self, fence: Arc<dyn Fence>) -> Result<()> {
        self.shared()?.note_copy(fence);
        Ok(())
    }

    /// The buffer (one [`SharedBuf::alloc`] made, not a view) as a tensor buffer of `len`
    /// elements of `dtype`, valid once `fence` completes.
    pub fn into_buffer(self, dtype: DType, len: usize, fence: Arc<dyn Fence>) -> Buffer {
        debug_assert_eq!(self.offset, 0, "a new shared buffer");
        let device = self.buf.gpu.device;
        Buffer { device, dtype, len, mem: Mem::Device(Box::new(VkMem(self.buf))), fence: Some(fence) }
    }

    fn shared(&self) -> Result<&super::memory::Shared> {
        self.buf.shared().ok_or_else(|| Error::internal("device bridge", "the buffer's memory is not shared"))
    }
}
