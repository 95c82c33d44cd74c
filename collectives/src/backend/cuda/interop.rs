//! Memory of another API imported into CUDA: the CUDA half of the device bridge between a CUDA
//! device and a Vulkan device that are the same GPU ([`crate::backend::vulkan::export`] is the
//! other half). [`ImportedMem`] maps a Vulkan allocation into this device's address space, so
//! the staged chain's ring can live in device memory and every chunk copy stays on the GPU.
//!
//! Where the Vulkan device is another GPU, a CUDA device of that GPU ([`peer_on`], the bridge's
//! `via`) maps its memory instead, and the CUDA end copies to and from the mapping as a peer
//! (the peer bridge): the import and the Vulkan timelines stay on the GPU they belong to, and
//! only the copy crosses between the two GPUs.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use cudarc::driver::CudaContext;
use cudarc::driver::sys::{CUdeviceptr, CUexternalMemory};

use super::device;
use super::driver;
#[cfg(feature = "vulkan")]
use super::memory::device_buffer;
use super::memory::{CudaFence, alloc_of, await_on, record};
#[cfg(feature = "vulkan")]
use crate::backend::vulkan::export::Signalled;
use crate::backend::{Buffer, Fence};
use crate::device::Device;
use crate::error::{Error, Result};

/// The UUID of the physical GPU behind CUDA device `device` (`cuDeviceGetUuid`).
pub(crate) fn uuid(device: Device) -> Result<[u8; 16]> {
    let dev = device::of(device, "device uuid")?;
    let id = dev.ctx.uuid().map_err(driver::err(device, "cuDeviceGetUuid"))?;
    Ok(id.bytes.map(|b| b as u8))
}

/// The UUID of the GPU behind CUDA device `device`, asked by physical GPU: opens no device
/// (unlike [`uuid`], which opens it), for questions asked while a graph is built.
pub(crate) fn gpu_uuid(device: Device) -> std::result::Result<[u8; 16], String> {
    let Device::Cuda(n) = device else { return Err(format!("{device} is not a CUDA device")) };
    driver::gpu_uuid(super::virt::physical(n)?).map_err(driver::describe)
}

/// The CUDA device of this process on the GPU whose UUID is `uuid` (the first by ordinal; never
/// `cu`'s own GPU) when `cu` and it reach each other as peers, or why there is none: the `via` of
/// a peer bridge between `cu` and a Vulkan device of that GPU. Asks the driver for UUIDs and peer
/// access by physical GPU; opens no device.
pub(crate) fn peer_on(cu: Device, uuid: [u8; 16]) -> std::result::Result<Device, String> {
    let Device::Cuda(n) = cu else { return Err(format!("{cu} is not a CUDA device")) };
    let own = super::virt::physical(n)?;
    let on_gpu =
        |o: u32| super::virt::physical(o).ok().filter(|&p| p != own && driver::gpu_uuid(p) == Ok(uuid));
    let Some((o, gpu)) = (0..super::virt::count()).find_map(|o| on_gpu(o).map(|p| (o, p))) else {
        return Err("no CUDA device of this process is the Vulkan device's GPU".into());
    };
    let via = Device::Cuda(o);
    let reaches = |a: u32, b: u32| driver::can_access_peer(driver::gpu(a)?, driver::gpu(b)?);
    match reaches(own, gpu).and_then(|x| Ok(x && reaches(gpu, own)?)) {
        Ok(true) => Ok(via),
        Ok(false) => Err(format!("{via} (the Vulkan device's GPU) and {cu} have no peer access")),
        Err(e) => Err(format!("cuDeviceCanAccessPeer for {cu} and {via}: {}", driver::describe(e))),
    }
}

/// Another API's memory mapped into one CUDA device; unmapped and released on drop.
pub(crate) struct ImportedMem {
    ext: CUexternalMemory,
    ptr: CUdeviceptr,
    len: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: the handles are plain values the driver lets any thread use with the context bound;
// the memory is only reached through copies the owner orders.
unsafe impl Send for ImportedMem {}
// SAFETY: as above.
unsafe impl Sync for ImportedMem {}

impl ImportedMem {
    /// Imports the memory object `fd` names (`size` bytes, exported opaque by Vulkan) into CUDA
    /// device `device` and maps its first `len` bytes.
    ///
    /// # Safety
    /// `fd` names a memory object of `size` bytes on the GPU behind `device`, which stays
    /// allocated while the value lives (dropping the value before the exporter frees it).
    pub unsafe fn new(device: Device, fd: OwnedFd, size: u64, len: usize) -> Result<ImportedMem> {
        if let Err(reason) = driver::interop_status() {
            return Err(Error::driver(device, "import external memory", reason.clone()));
        }
        if len as u64 > size {
            return Err(Error::internal("import external memory", format!("{len} bytes of {size}")));
        }
        let dev = device::of(device, "import external memory")?;
        dev.bind()?;
        // SAFETY: the context is current; `size` is the object's (as guaranteed); the mapping is
        // freed before the object, in `Drop`.
        let (ext, ptr) = unsafe { driver::import_external(fd, size, len) }
            .map_err(driver::err(device, "cuImportExternalMemory"))?;
        Ok(ImportedMem { ext, ptr, len, ctx: dev.ctx.clone() })
    }

    /// The device address of the first byte.
    pub fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The mapped length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
}

impl Drop for ImportedMem {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: mapped once in `new`; the owner waited for every copy using it.
        let _ = unsafe { driver::unmap_external(self.ext, self.ptr) };
    }
}

/// Copies all of `src` (a CUDA buffer) to device address `dst`, the memory of a buffer of Vulkan
/// device `to`, mapped into `via` (a CUDA device of `to`'s GPU: `src`'s own device, or a peer of
/// it, [`peer_on`]): on `via`'s download stream when it is `src`'s device, else on its upload
/// stream as a peer copy; after `src`'s writer. The fence of the copy, which also tells `to`'s
/// submissions which value of a timeline they wait for on the device (see
/// [`super::timeline::signal_vulkan`], signalled by `via`'s stream; where the pair cannot signal,
/// they wait for the copy on the host).
///
/// # Safety
/// `dst` is mapped into `via` for at least `src.bytes()` bytes and stays mapped until the copy
/// has run.
#[cfg(feature = "vulkan")]
pub(crate) unsafe fn copy_to_mapped(
    src: &Buffer,
    via: Device,
    dst: CUdeviceptr,
    to: Device,
) -> Result<Arc<dyn Fence>> {
    let dev = device::of(via, "device bridge")?;
    let from = device::of(src.device, "device bridge")?;
    let alloc = alloc_of(src, "device bridge")?;
    let stream = if via == src.device { dev.copy_out.clone() } else { dev.copy_in.clone() };
    await_on(&stream, src, dev.device)?;
    crate::failpoint::hit(dev.device, "cuda copy")?;
    device::enable_peer(&from, &dev)?;
    // SAFETY: `src`'s allocation holds its bytes and is kept alive through `note_use`; `dst` as
    // the caller guarantees; the stream is `via`'s.
    unsafe { super::copy::peer_bytes((&dev, dst), (&from, alloc.ptr()), src.bytes(), &stream) }?;
    let e = record(&stream, dev.device)?;
    alloc.note_use(&stream, &e);
    let copy = Arc::new(CudaFence::new(e, &stream, dev.device));
    Ok(match super::timeline::signal_vulkan(&dev, &stream, to) {
        Some((to, value)) => Arc::new(Signalled { copy, to, value }),
        None => copy,
    })
}

/// A new buffer on CUDA device `device` holding `src`'s elements (a Vulkan buffer), copied from
/// device address `mapped` (`src`'s memory, mapped into `via`: `device` itself when the two are
/// one GPU, else a peer of it on `src`'s GPU, [`peer_on`]): on `device`'s upload stream, which
/// waits for `src`'s writer on the device (a Vulkan writer through [`super::timeline`], relayed
/// by `via`'s download stream when that is another device; a CUDA one by its event), or, where
/// the Vulkan timeline cannot be imported, after a host wait.
///
/// # Safety
/// `mapped` is `src`'s memory, mapped into `via` for at least its bytes, and stays mapped until
/// the copy has run.
#[cfg(feature = "vulkan")]
pub(crate) unsafe fn copy_from_mapped(
    device: Device,
    via: Device,
    src: &Buffer,
    mapped: CUdeviceptr,
) -> Result<Buffer> {
    let dev = device::of(device, "device bridge")?;
    let owner = device::of(via, "device bridge")?;
    let stream = dev.copy_in.clone();
    let bytes = src.bytes();
    let alloc = dev.alloc(bytes, &stream)?;
    // A Vulkan writer's submission through the timeline; a CUDA writer's (a copy into this
    // buffer by the bridge) by an event; anything else on the host.
    if let Some(f) = &src.fence
        && !super::timeline::await_vulkan_from(&owner, &dev, &stream, f.as_ref())?
    {
        await_on(&stream, src, dev.device)?;
    }
    crate::failpoint::hit(dev.device, "cuda copy")?;
    device::enable_peer(&owner, &dev)?;
    // SAFETY: the new allocation holds `bytes`; `mapped` as the caller guarantees, its writer
    // ordered before the copy above; the stream is `device`'s.
    unsafe { super::copy::peer_bytes((&dev, alloc.ptr()), (&owner, mapped), bytes, &stream) }?;
    let e = record(&stream, dev.device)?;
    Ok(device_buffer(src.dtype, src.len, alloc, e, &stream))
}
