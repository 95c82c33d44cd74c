//! Device memory: [`DevBuf`], a `VkBuffer` with its allocation from gpu-allocator (or imported
//! host memory, [`Imported`]), freed on drop;
//! [`VkMem`], the device half of a [`crate::backend::Buffer`]; and [`StagingHost`], a host-visible
//! buffer handed to the host as a [`HostMem`] once the copy into it is done.

use std::ptr::NonNull;
use std::sync::Arc;

use ash::vk;
use gpu_allocator::MemoryLocation;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};
use parking_lot::Mutex;

use super::cache::{self, Backing, POOL_MIN_BYTES, Parked, SHARE_MIN_BYTES};
use super::device::Gpu;
use super::raw;
use crate::backend::{Fence, HostMem};
use crate::error::{Error, Result};

/// Environment variable: Vulkan tensor buffers smaller than this many bytes live in host memory
/// the device maps (host-visible, cached where the device has such memory), larger ones in the
/// device's own memory. Default [`VULKAN_HOST_BELOW_BYTES`]; `0` puts every tensor in device memory.
/// Read when the device is opened.
pub const VULKAN_HOST_ENV: &str = "COLLECTIVES_VULKAN_HOST_BYTES";

/// Tensor buffers smaller than this (unless [`VULKAN_HOST_ENV`] says otherwise) live in host
/// memory. A Vulkan submission and its wait cost a discrete GPU tens to hundreds of
/// microseconds — on an H200 that CUDA also drives, about 250 µs for any Vulkan copy that follows
/// CUDA work (`bench/gpu/11-bridge`) — while the host copies a small tensor in and out of mapped
/// memory in microseconds. So a small tensor's trips to and from the host (every CUDA ↔ Vulkan
/// hop of it, an upload, a read) submit nothing: on the H200 every call mixing CUDA and Vulkan
/// ran 1.6–10 × faster up to this size (`bench/gpu/16-vulkan-host`). The cost is the Vulkan
/// kernels, which read such tensors across PCIe: a Vulkan fold of host shards was up to 40 %
/// slower at 512 KiB, and even or faster at 256 KiB and below. From this size up tensors are in
/// device memory, where the device bridge and the buffer cache take them.
pub const VULKAN_HOST_BELOW_BYTES: u64 = POOL_MIN_BYTES;

/// What a buffer is for, which picks its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Usage {
    /// Tensor storage: device-local (and host-visible too where the device has such memory), or
    /// host memory the device maps when smaller than the device's bound ([`VULKAN_HOST_ENV`]).
    Device,
    /// Host → device staging: host-visible, written by the host.
    Upload,
    /// Device → host staging: host-visible and cached where possible, read by the host.
    Readback,
}

/// A buffer and its memory. The allocation is freed and the buffer destroyed on drop; GPU work
/// using a buffer holds an `Arc` of it until the work has completed.
pub(super) struct DevBuf {
    pub gpu: Arc<Gpu>,
    pub buffer: vk::Buffer,
    /// Bytes from the data's start on that the buffer covers: whole 16-byte blocks, at least one,
    /// but for a view that starts off its memory's alignment ([`DevBuf::skew`]), whose bytes end
    /// on the next block of its memory.
    pub size: u64,
    /// Where the data starts in `buffer`, in bytes: 0 but for a view that starts off its memory's
    /// alignment, whose `VkBuffer` is bound from the aligned byte below the data's start. Copies
    /// ([`super::submit::Recorder::copy`]) and the mapping start at the data; kernels bind the
    /// buffer and read from this byte on (`kernels.rs`, `copy.rs`).
    pub skew: u64,
    alloc: Option<Backing>,
    /// What the memory was allocated for (`None` for imported memory): a dropped buffer is
    /// parked in the device's [`super::cache`] under it.
    usage: Option<Usage>,
    /// Memory imported from the host instead of allocated (see [`Imported`]).
    imported: Option<Imported>,
    /// The host address of the memory, when host-visible.
    mapped: Option<NonNull<u8>>,
    /// Whether host reads of the mapped memory are cached (fast).
    pub host_cached: bool,
    /// For a view ([`DevBuf::view`]): the buffer whose memory it is bound to (never itself a
    /// view) and the view's first byte in it. The view owns only its `VkBuffer`.
    pub parent: Option<(Arc<DevBuf>, u64)>,
}

// SAFETY: the mapped pointer is only dereferenced through `&self`/`&mut self` methods whose
// callers order host accesses after the GPU work (fences); the Vulkan handles are plain values.
unsafe impl Send for DevBuf {}
// SAFETY: as above; shared access only reads the mapping.
unsafe impl Sync for DevBuf {}

/// The size a buffer of `bytes` is given: whole 16-byte blocks (the kernels' unit), never empty.
pub(super) fn padded(bytes: u64) -> u64 {
    bytes.div_ceil(16).max(1) * 16
}

impl DevBuf {
    /// A buffer holding at least `bytes` bytes, contents undefined: a parked one of the same
    /// use and size if the device's cache has one, else a new one (emptying the cache and trying
    /// again if the first try runs out of memory).
    pub fn new(gpu: &Arc<Gpu>, bytes: u64, usage: Usage) -> Result<Arc<DevBuf>> {
        let size = padded(bytes);
        let device = gpu.device;
        let oom = |detail: String| Error::OutOfMemory { device, bytes: size as usize, detail };
        if size > gpu.limits.max_alloc {
            let max = gpu.limits.max_alloc;
            return Err(oom(format!("larger than the device's maxMemoryAllocationSize of {max} bytes")));
        }
        crate::failpoint::hit(device, "vulkan alloc")?;
        let parked = gpu.cache.lock().take(usage, size);
        let p = match parked {
            Some(p) => p,
            None => Self::create(gpu, size, usage)
                .or_else(|e| Self::retry_emptied(gpu, size, usage, e))
                .map_err(oom)?,
        };
        #[cfg(feature = "failpoints")]
        crate::failpoint::live::inc(&crate::failpoint::live::VULKAN);
        Ok(Arc::new(DevBuf {
            gpu: gpu.clone(),
            buffer: p.buffer,
            size,
            alloc: Some(p.alloc),
            usage: Some(usage),
            imported: None,
            mapped: p.mapped,
            host_cached: p.host_cached,
            parent: None,
            skew: 0,
        }))
    }

    /// After a failed [`DevBuf::create`] (error `first`): the device's parked buffers freed and
    /// `create` tried again, or `first` when nothing was parked.
    fn retry_emptied(
        gpu: &Gpu,
        size: u64,
        usage: Usage,
        first: String,
    ) -> std::result::Result<Parked, String> {
        let mut cache = gpu.cache.lock();
        if cache.bytes() == 0 {
            return Err(first);
        }
        cache.clear(&gpu.raw, &mut gpu.allocator.lock());
        drop(cache);
        Self::create(gpu, size, usage)
    }

    /// A new buffer of `size` bytes with memory bound for `usage`; the error is the driver's or
    /// the allocator's. Tensor storage of at least [`SHARE_MIN_BYTES`] on a device that shares
    /// memory with CUDA ([`Gpu::shares_memory`]) gets memory of its own, exportable; smaller
    /// tensor storage is in host memory when under the device's bound ([`VULKAN_HOST_BELOW_BYTES`]).
    fn create(gpu: &Gpu, size: u64, usage: Usage) -> std::result::Result<Parked, String> {
        if usage == Usage::Device && size >= SHARE_MIN_BYTES && gpu.shares_memory() {
            return create_shared(gpu, size);
        }
        // SAFETY: the device is live; the buffer is destroyed below on failure or by `Drop`.
        let buffer =
            unsafe { raw::create_buffer(&gpu.raw, size) }.map_err(|e| format!("vkCreateBuffer: {e}"))?;
        match allocate(gpu, buffer, size, usage) {
            Ok(alloc) => {
                let mapped = alloc.mapped_ptr().map(|p| p.cast::<u8>());
                let host_cached = alloc.memory_properties().contains(vk::MemoryPropertyFlags::HOST_CACHED);
                Ok(Parked { buffer, alloc: Backing::Pool(alloc), mapped, host_cached })
            }
            Err(e) => {
                // SAFETY: the buffer was never used.
                unsafe { raw::destroy_buffer(&gpu.raw, buffer) };
                Err(e)
            }
        }
    }

    /// A buffer of `size` bytes bound to memory the allocator does not own (`imported`): host
    /// memory imported at `host` (which `imported` keeps alive), or memory allocated for export
    /// (`host` is `None`); freed with the buffer.
    pub fn from_import(
        gpu: &Arc<Gpu>,
        buffer: vk::Buffer,
        size: u64,
        imported: Imported,
        host: Option<NonNull<u8>>,
    ) -> Arc<DevBuf> {
        #[cfg(feature = "failpoints")]
        crate::failpoint::live::inc(&crate::failpoint::live::VULKAN);
        Arc::new(DevBuf {
            gpu: gpu.clone(),
            buffer,
            size,
            alloc: None,
            usage: None,
            imported: Some(imported),
            mapped: host,
            host_cached: true,
            parent: None,
            skew: 0,
        })
    }

    /// `bytes` bytes of `of` from byte `offset` on, as a buffer of its own bound to the same
    /// memory (a `VkBuffer` aliasing that range): what a contiguous slice of a tensor becomes
    /// instead of a copy. A range that starts off the memory's alignment (16 bytes, the kernels'
    /// block, or the buffer's memory alignment where that is larger) is bound from the aligned
    /// byte below it, and its [`DevBuf::skew`] says where the data starts. `None` where the
    /// binding would run past the memory, or `of`'s memory is not the allocator's or the bridge's.
    /// The caller checked that the range lies within `of`.
    pub fn view(of: &Arc<DevBuf>, offset: u64, bytes: u64) -> Result<Option<Arc<DevBuf>>> {
        let (root, offset) = match &of.parent {
            Some((root, at)) => (root, at + offset),
            None => (of, offset),
        };
        let Some((memory, base, len)) = root.bound_memory() else { return Ok(None) };
        let gpu = &root.gpu;
        crate::failpoint::hit(gpu.device, "vulkan alloc")?;
        let shared = root.shared().is_some();
        let (mut buffer, mut needs) = view_buffer(gpu, shared, padded(bytes))?;
        let skew = offset % needs.alignment.max(16);
        if skew != 0 {
            // SAFETY: the buffer was never used.
            unsafe { raw::destroy_buffer(&gpu.raw, buffer) };
            (buffer, needs) = view_buffer(gpu, shared, padded(skew + bytes))?;
        }
        let at = offset - skew;
        let fits = at % needs.alignment.max(1) == 0 && at + needs.size <= len;
        // SAFETY (bind): the range `base + at ..+ needs.size` lies within `memory`, which `root`
        // keeps alive as long as the view (it holds an `Arc` of `root`); the memory's type suits
        // the view, which is created as `root` was (same flags, usage and handle types: Vulkan
        // gives such buffers the same `memoryTypeBits`).
        let bound = fits && unsafe { gpu.raw.bind_buffer_memory(buffer, memory, base + at) }.is_ok();
        if !bound {
            // SAFETY: the buffer was never used.
            unsafe { raw::destroy_buffer(&gpu.raw, buffer) };
            return Ok(None);
        }
        #[cfg(feature = "failpoints")]
        crate::failpoint::live::inc(&crate::failpoint::live::VULKAN);
        Ok(Some(Arc::new(DevBuf {
            gpu: gpu.clone(),
            buffer,
            size: padded(skew + bytes) - skew,
            alloc: None,
            usage: None,
            imported: None,
            // SAFETY: `offset + size` lies within the mapping, which covers all of `root`.
            mapped: root.mapped.map(|p| unsafe { p.add(offset as usize) }),
            host_cached: root.host_cached,
            parent: Some((root.clone(), offset)),
            skew,
        })))
    }

    /// The memory this buffer (not a view) is bound to, where in it the buffer starts, and how
    /// many bytes of it the buffer may use from there: for memory from the allocator or the
    /// bridge's exportable memory; `None` for imported memory.
    fn bound_memory(&self) -> Option<(vk::DeviceMemory, u64, u64)> {
        match &self.alloc {
            // SAFETY: the allocation is live (owned by `self`), so its memory handle is valid.
            Some(Backing::Pool(a)) => Some((unsafe { a.memory() }, a.offset(), a.size())),
            Some(Backing::Shared(s)) => Some((s.memory, 0, s.size)),
            None => None,
        }
    }

    /// The buffer's exportable memory, when it has memory of its own that CUDA can map.
    pub fn shared(&self) -> Option<&Shared> {
        match &self.alloc {
            Some(Backing::Shared(s)) => Some(s),
            _ => None,
        }
    }

    /// Bytes of `buffer` from its start, which a kernel may bind: the skew and the size.
    pub fn bound_size(&self) -> u64 {
        self.skew + self.size
    }

    /// Whether the host can address the memory directly.
    pub fn is_mapped(&self) -> bool {
        self.mapped.is_some()
    }

    /// Whether the host reads the memory fast: mapped and cached (reads of uncached, write-combined
    /// memory crawl, so such buffers are read through a readback instead).
    pub fn host_reads_fast(&self) -> bool {
        self.is_mapped() && self.host_cached
    }

    /// The first `len` bytes, read through the mapping.
    ///
    /// # Safety
    /// The buffer is mapped, `len <= size`, and no GPU work writing it is in flight.
    pub unsafe fn mapped_bytes(&self, len: usize) -> &[u8] {
        let p = self.mapped.expect("mapped buffer");
        // SAFETY: the mapping covers `size >= len` bytes and lives as long as `self`; the caller
        // guarantees no concurrent GPU writes.
        unsafe { std::slice::from_raw_parts(p.as_ptr(), len) }
    }

    /// The first `len` bytes, writable through the mapping.
    ///
    /// # Safety
    /// As [`DevBuf::mapped_bytes`], and nothing else reads or writes the buffer meanwhile (a
    /// freshly allocated buffer, before it is shared).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn mapped_bytes_mut(&self, len: usize) -> &mut [u8] {
        let p = self.mapped.expect("mapped buffer");
        // SAFETY: as above, and the caller guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), len) }
    }
}

/// A new `VkBuffer` of `size` bytes for a view (exportable where the memory it aliases is
/// shared), not yet bound, and its memory requirements.
fn view_buffer(gpu: &Gpu, shared: bool, size: u64) -> Result<(vk::Buffer, vk::MemoryRequirements)> {
    // SAFETY: the device is live; the caller destroys the buffer if unused, else `Drop` does.
    let made = unsafe {
        if shared { raw::create_export_buffer(&gpu.raw, size) } else { raw::create_buffer(&gpu.raw, size) }
    };
    let buffer = made.map_err(|e| raw::vk_error(gpu.device, "vkCreateBuffer (view)", e))?;
    // SAFETY: `buffer` belongs to this device.
    Ok((buffer, unsafe { gpu.raw.get_buffer_memory_requirements(buffer) }))
}

/// Where a buffer of `size` bytes for `usage` is allocated, on a device whose tensors live in host
/// memory below `host_below` bytes.
pub(super) fn location(usage: Usage, size: u64, host_below: u64) -> MemoryLocation {
    match usage {
        Usage::Device if size < host_below => MemoryLocation::GpuToCpu,
        Usage::Device => MemoryLocation::GpuOnly,
        Usage::Upload => MemoryLocation::CpuToGpu,
        Usage::Readback => MemoryLocation::GpuToCpu,
    }
}

/// Allocates and binds memory for `buffer` (of `size` bytes); the error string is the allocator's or driver's.
fn allocate(
    gpu: &Gpu,
    buffer: vk::Buffer,
    size: u64,
    usage: Usage,
) -> std::result::Result<Allocation, String> {
    // SAFETY: the buffer belongs to this live device.
    let requirements = unsafe { gpu.raw.get_buffer_memory_requirements(buffer) };
    let desc = AllocationCreateDesc {
        name: "collectives",
        requirements,
        location: location(usage, size, gpu.host_below),
        linear: true,
        allocation_scheme: AllocationScheme::GpuAllocatorManaged,
    };
    let alloc = gpu.allocator.lock().allocate(&desc).map_err(|e| e.to_string())?;
    // SAFETY: the memory was allocated for this buffer's requirements and is bound once.
    let bound = unsafe { gpu.raw.bind_buffer_memory(buffer, alloc.memory(), alloc.offset()) };
    if let Err(e) = bound {
        let _ = gpu.allocator.lock().free(alloc);
        return Err(format!("vkBindBufferMemory: {e}"));
    }
    Ok(alloc)
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        #[cfg(feature = "failpoints")]
        crate::failpoint::live::dec(&crate::failpoint::live::VULKAN);
        // Work using the buffer holds an `Arc` of it, so none is pending now: park it for reuse.
        if let (Some(alloc), Some(usage)) = (self.alloc.take(), self.usage) {
            // CUDA's copies of shared memory hold no `Arc`: wait for the last one.
            if let Backing::Shared(s) = &alloc {
                s.settle();
            }
            let p = Parked { buffer: self.buffer, alloc, mapped: self.mapped, host_cached: self.host_cached };
            let parked = self.gpu.cache.lock().park(usage, self.size, p);
            match parked {
                Ok(evicted) => {
                    for old in evicted {
                        cache::destroy(&self.gpu.raw, &mut self.gpu.allocator.lock(), old);
                    }
                    return;
                }
                Err(p) => self.alloc = Some(p.alloc),
            }
        }
        // SAFETY: as above, no pending work uses the buffer.
        unsafe { raw::destroy_buffer(&self.gpu.raw, self.buffer) };
        match self.alloc.take() {
            Some(Backing::Pool(a)) => drop(self.gpu.allocator.lock().free(a)),
            // SAFETY: the memory belongs to this device; its one buffer is destroyed above.
            Some(Backing::Shared(s)) => unsafe { s.free(&self.gpu.raw) },
            None => {}
        }
        if let Some(i) = self.imported.take() {
            // SAFETY: the memory was imported on this device, its one buffer is destroyed above,
            // and no pending work uses it; the host memory it maps is freed only after this
            // (`i._host` drops at the end of the block).
            unsafe { self.gpu.raw.free_memory(i.memory, None) };
        }
    }
}

/// A buffer of `size` bytes with device-local memory of its own, exportable: CUDA maps it when
/// the device bridge copies into or out of it (`backend::staged`).
fn create_shared(gpu: &Gpu, size: u64) -> std::result::Result<Parked, String> {
    // SAFETY: the device is live with `VK_KHR_external_memory_fd`; the buffer is destroyed below
    // on failure or by `Drop`.
    let buffer =
        unsafe { raw::create_export_buffer(&gpu.raw, size) }.map_err(|e| format!("vkCreateBuffer: {e}"))?;
    let fail = |memory: Option<vk::DeviceMemory>, e: String| {
        // SAFETY: neither the buffer nor the memory was used.
        unsafe {
            raw::destroy_buffer(&gpu.raw, buffer);
            memory.inspect(|m| gpu.raw.free_memory(*m, None));
        }
        Err(e)
    };
    // SAFETY: `buffer` belongs to this device.
    let needs = unsafe { gpu.raw.get_buffer_memory_requirements(buffer) };
    let Some(index) = device_local_type(&gpu.memory, needs.memory_type_bits) else {
        return fail(None, "no device-local memory type fits an exportable buffer".into());
    };
    // SAFETY: as above; freed below on failure, or with the buffer.
    let memory = match unsafe { raw::allocate_exportable(&gpu.raw, needs.size, index) } {
        Ok(m) => m,
        Err(e) => return fail(None, format!("vkAllocateMemory (exportable): {e}")),
    };
    // SAFETY: the memory holds `needs.size` bytes for this buffer and is bound once.
    if let Err(e) = unsafe { gpu.raw.bind_buffer_memory(buffer, memory, 0) } {
        return fail(Some(memory), format!("vkBindBufferMemory: {e}"));
    }
    let shared = Shared { memory, size: needs.size, view: Mutex::new(None), busy: Mutex::new(Vec::new()) };
    Ok(Parked { buffer, alloc: Backing::Shared(shared), mapped: None, host_cached: false })
}

/// The first memory type in `bits` that is device-local, preferring one the host cannot see.
pub(super) fn device_local_type(props: &vk::PhysicalDeviceMemoryProperties, bits: u32) -> Option<u32> {
    let types = &props.memory_types[..props.memory_type_count as usize];
    let fits = |i: usize, avoid: vk::MemoryPropertyFlags| {
        bits & (1 << i) != 0
            && types[i].property_flags.contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
            && !types[i].property_flags.intersects(avoid)
    };
    let pick = |avoid| (0..types.len()).find(|&i| fits(i, avoid));
    pick(vk::MemoryPropertyFlags::HOST_VISIBLE)
        .or_else(|| pick(vk::MemoryPropertyFlags::empty()))
        .map(|i| i as u32)
}

/// Exportable device memory a buffer owns, with what CUDA made of it: its mapping (made on first
/// use and kept while the memory lives, parked buffers included) and its last copy.
pub(super) struct Shared {
    pub memory: vk::DeviceMemory,
    /// The allocation's size in bytes (what an importer is told).
    pub size: u64,
    /// CUDA's mapping of the memory; dropped before the memory is freed.
    pub view: Mutex<Option<Arc<dyn std::any::Any + Send + Sync>>>,
    /// The CUDA copies into or out of the memory that may still run (they hold no `Arc` of the
    /// buffer; two CUDA devices may read one buffer at once): waited for before the buffer is
    /// parked or freed.
    pub busy: Mutex<Vec<Arc<dyn Fence>>>,
}

impl Shared {
    /// Records `fence`, a CUDA copy of the memory, dropping those already complete.
    pub fn note_copy(&self, fence: Arc<dyn Fence>) {
        let mut busy = self.busy.lock();
        busy.retain(|f| !f.is_complete());
        busy.push(fence);
    }

    /// Waits for every CUDA copy recorded (an error is ignored: the copy is over either way).
    pub fn settle(&self) {
        for f in std::mem::take(&mut *self.busy.lock()) {
            let _ = f.wait();
        }
    }

    /// Waits for the last CUDA copy, drops CUDA's mapping, then frees the memory.
    ///
    /// # Safety
    /// The memory belongs to `device`, and the buffer bound to it is destroyed.
    pub unsafe fn free(self, device: &ash::Device) {
        self.settle();
        drop(self.view.lock().take());
        // SAFETY: as the caller guarantees; nothing maps or uses the memory any more.
        unsafe { device.free_memory(self.memory, None) };
    }
}

/// Device memory a buffer owns outside the allocator: host memory imported through
/// `VK_EXT_external_memory_host` (the staged chain's host ring), or device memory allocated for
/// export to CUDA (its device ring).
pub(super) struct Imported {
    pub memory: vk::DeviceMemory,
    /// Keeps the host memory alive until the import is freed (nothing, for exported memory).
    pub _host: Arc<dyn std::any::Any + Send + Sync>,
}

/// The device memory of a realized tensor on a Vulkan device (the payload of `Mem::Device`).
pub(super) struct VkMem(pub Arc<DevBuf>);

/// Host-visible memory returned to the host: the staging buffer a device → host copy wrote.
/// Readers wait on the buffer's fence before looking (as for every host buffer).
pub(super) struct StagingHost {
    pub buf: Arc<DevBuf>,
    pub len: usize,
}

impl HostMem for StagingHost {
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: staging buffers are mapped and hold `len` bytes; host readers wait for the copy
        // (the buffer's fence) before reading.
        unsafe { self.buf.mapped_bytes(self.len) }
    }

    fn as_bytes_mut(&mut self) -> Option<&mut [u8]> {
        // SAFETY: as above; `&mut self` is the only handle on this memory.
        Some(unsafe { self.buf.mapped_bytes_mut(self.len) })
    }
}
