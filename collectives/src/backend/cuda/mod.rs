//! The CUDA backend (cudarc, libraries loaded at run time).
//!
//! Layered raw → safe: [`driver`] checks that libcuda, libnvrtc and libnccl load (cudarc panics
//! otherwise) and wraps each unsafe driver call in a function returning `Result`; above it,
//! owning types with `Drop` — [`device::CudaDevice`] (context, streams, pool, kernels),
//! [`memory::DevAlloc`] (stream-ordered device memory, parked for reuse by [`reuse`]),
//! [`pinned::PinnedBlock`] (pooled pinned host memory) — and the operations: [`launch`]
//! (kernels), [`copy`] (htod, dtoh, dtod, peer), [`call`] (the native collectives of an
//! all-CUDA group, each one multi-device call),
//! [`staging`] (chunked double-buffered transfers, and the CUDA end of the staged CUDA ↔ Vulkan
//! chain), [`nccl`] (the one NCCL layer: cliques for all-CUDA groups, the rank of `NcclComm`).
//!
//! Everything is asynchronous: each operation is issued on a stream of the device and returns a
//! buffer carrying a [`memory::CudaFence`]. CUDA consumers wait for it on their own stream, so
//! dependent steps on CUDA devices never round-trip through the host.
//!
//! Kernels are CUDA C++ (`kernels.cu`), compiled by NVRTC once per group and architecture, and
//! match the CPU backend's semantics exactly (see the comment at the top of `kernels.cu`). The
//! n-ary reduce has one form per load batch (`fold_at` in `kernels.cu`); [`launch`] chooses by
//! size, and every form folds in the same order, so the choice never changes a result's bits.

mod call;
mod copy;
pub(crate) mod device;
pub(crate) mod driver;
pub(crate) mod event;
mod flag;
mod interop;
pub(crate) mod join;
mod launch;
mod mapped;
pub(crate) mod memory;
pub(crate) mod nccl;
mod numbers;
mod nvrtc;
mod pinned;
#[cfg(test)]
pub(crate) mod probe;
pub(crate) mod register;
mod relaunch;
pub(crate) mod reuse;
mod staging;
mod stream;
#[cfg(test)]
mod tests;
#[cfg(feature = "vulkan")]
pub(crate) mod timeline;
mod virt;

use std::sync::Arc;

use super::{Backend, Buffer, Delivery, Kernel, OutSpec};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

pub(crate) use call::{CudaCall, Pull};
// The CUDA half of the staged CUDA ↔ Vulkan chain.
pub(crate) use interop::{ImportedMem, gpu_uuid, peer_on, uuid};
#[cfg(feature = "vulkan")]
pub(crate) use interop::{copy_from_mapped, copy_to_mapped};
pub(crate) use staging::{Registered, RingMem, dest_end, source_end};

/// The backend of one CUDA device.
pub(crate) struct CudaBackend {
    dev: Arc<device::CudaDevice>,
}

impl CudaBackend {
    /// [`super::compute_then_copy`] of `kernel` after uploading its inputs on host devices: a
    /// streamed kernel that runs neither in one pass nor in chunks — one that is not elementwise
    /// from the one-pass bound on (the stream pass streams none such), or on a device without
    /// unified addressing.
    fn upload_then_compute(
        &self,
        kernel: &Kernel,
        inputs: &[&Buffer],
        out: OutSpec,
        to: &[Delivery],
    ) -> Result<(Buffer, Vec<Buffer>)> {
        let up = |b: &Buffer| b.device.is_host().then(|| copy::htod(&self.dev, b)).transpose();
        let uploaded = inputs.iter().map(|&b| up(b)).collect::<Result<Vec<_>>>()?;
        let inputs: Vec<&Buffer> =
            inputs.iter().zip(&uploaded).map(|(&b, u)| u.as_ref().unwrap_or(b)).collect();
        super::compute_then_copy(self, kernel, &inputs, out, to)
    }
}

/// Opens `Cuda(ordinal)`: [`Error::DeviceUnavailable`] when the driver, the library's symbols or
/// the device are missing.
pub(crate) fn open(ordinal: u32) -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(CudaBackend { dev: device::get(ordinal)? }))
}

/// How many (logical) CUDA devices this machine has: 0 without a driver ([`virt`]).
pub(crate) fn device_count() -> u32 {
    virt::count()
}

/// The driver's name of `Cuda(ordinal)`'s GPU (`cuDeviceGetName`); `None` without one.
pub(crate) fn device_name(ordinal: u32) -> Option<String> {
    driver::driver_status().as_ref().ok()?;
    let physical = virt::physical(ordinal).ok()?;
    let dev = cudarc::driver::result::device::get(physical as i32).ok()?;
    cudarc::driver::result::device::get_name(dev).ok()
}

/// Why this machine has no usable CUDA device (no driver, a bad [`CUDA_DEVICES_ENV`], none
/// present); `None` when it has one.
pub(crate) fn unavailable_reason() -> Option<String> {
    if let Err(why) = driver::driver_status() {
        return Some(why.clone());
    }
    virt::physical(0).err()
}

pub use virt::CUDA_DEVICES_ENV;
pub(crate) use virt::on_one_gpu;

impl Backend for CudaBackend {
    fn device(&self) -> Device {
        self.dev.device
    }

    fn compute(&self, kernel: &Kernel, inputs: &[&Buffer], out: OutSpec) -> Result<Buffer> {
        launch::compute(&self.dev, kernel, inputs, out)
    }

    /// A kernel with host inputs or host copies runs streamed ([`stream`]): under
    /// [`crate::exec::STREAM_SMALL_BYTES`] in one pass, reading its host inputs in place and
    /// writing its host copies (of the result or of ranges of it) across the bus ([`mapped`]);
    /// larger, an elementwise kernel's uploads, chunks and downloads of whole copies overlap, and
    /// any other kernel's host inputs are uploaded first. Anything else computes, then copies.
    fn compute_fanout(
        &self,
        kernel: &Kernel,
        inputs: &[&Buffer],
        out: OutSpec,
        to: &[Delivery],
    ) -> Result<(Buffer, Vec<Buffer>)> {
        let from_host = inputs.iter().any(|b| b.device.is_host());
        if from_host || !to.is_empty() {
            if out.len * out.dtype.size() < crate::exec::STREAM_SMALL_BYTES && self.dev.unified {
                return mapped::compute_mapped(&self.dev, kernel, inputs, out, to);
            }
            if kernel.elementwise() && to.iter().all(|d| d.is_whole(out.len)) {
                let to: Vec<Device> = to.iter().map(|d| d.to).collect();
                return stream::compute_streamed(&self.dev, kernel, inputs, out, &to, None);
            }
        }
        self.upload_then_compute(kernel, inputs, out, to)
    }

    fn htod(&self, src: &Buffer) -> Result<Buffer> {
        copy::htod(&self.dev, src)
    }

    fn dtoh(&self, src: &Buffer, to: Device) -> Result<Buffer> {
        copy::dtoh(&self.dev, src, to)
    }

    fn dtod(&self, src: &Buffer, to: Device) -> Result<Buffer> {
        copy::dtod(&self.dev, src, to)
    }

    fn synchronize(&self) -> Result<()> {
        self.dev.synchronize()
    }

    #[cfg(feature = "failpoints")]
    fn resources(&self, out: &mut std::collections::BTreeMap<String, u64>) {
        use std::sync::atomic::Ordering;
        let live = crate::failpoint::live::CUDA.load(Ordering::Acquire);
        out.insert("cuda allocations live".into(), live as u64);
        out.insert(format!("{} reuse pool bytes", self.dev.device), self.dev.reuse_bytes());
    }
}

/// `len` elements of `input` (a CUDA buffer) from byte `offset` (a whole number of elements),
/// read in place: a view sharing `input`'s memory and fence (`backend/view.rs`). `None` where
/// `input`'s memory is not an allocation of this backend.
///
/// A view may start anywhere an element can: every kernel picks its 16-byte vector path only when
/// all its pointers are 16-byte aligned (else it reads element by element), and copies take the
/// widest unit every pointer allows (`launch.rs`).
pub(crate) fn view(input: &Buffer, offset: usize, len: usize) -> Option<Buffer> {
    let alloc = memory::alloc_of(input, "slice view").ok()?;
    let bytes = len * input.dtype.size();
    if !offset.is_multiple_of(input.dtype.size()) || offset + bytes > alloc.bytes() {
        return None;
    }
    let view = Arc::new(memory::DevAlloc::view(alloc, offset, bytes));
    let mem = super::Mem::Device(Box::new(memory::DevMem(view)));
    Some(Buffer { device: input.device, dtype: input.dtype, len, mem, fence: input.fence.clone() })
}

/// Downloads a CUDA buffer in chunks through double-buffered pinned memory, calling
/// `sink(offset, bytes)` for each chunk as it reaches the host while the next chunk is in flight.
///
/// The hook for a staged CUDA → host → Vulkan copy: the sink writes each chunk into the Vulkan
/// side's host-visible staging and submits its upload, so both hops overlap.
#[allow(dead_code)] // used by the staged cross-vendor chain (exec), and by tests
pub(crate) fn download_chunked(src: &Buffer, sink: impl FnMut(usize, &[u8]) -> Result<()>) -> Result<()> {
    let Device::Cuda(n) = src.device else {
        return Err(Error::internal("download", format!("{} is not a CUDA buffer", src.device)));
    };
    let dev = device::get(n)?;
    let alloc = memory::alloc_of(src, "download")?;
    memory::await_on(&dev.copy_out, src, dev.device)?;
    staging::stage_out(&dev, alloc, &dev.copy_out, src.bytes(), sink)
}

/// Uploads `len` elements of `dtype` onto `Cuda(n)` in chunks through double-buffered pinned
/// memory, `fill(offset, bytes)` writing each chunk on the host while the previous one is in
/// flight. The hook for a staged Vulkan → host → CUDA copy.
#[allow(dead_code)] // used by the staged cross-vendor chain (exec), and by tests
pub(crate) fn upload_chunked(
    device: Device,
    dtype: DType,
    len: usize,
    fill: impl FnMut(usize, &mut [u8]) -> Result<()>,
) -> Result<Buffer> {
    let Device::Cuda(n) = device else {
        return Err(Error::internal("upload", format!("{device} is not a CUDA device")));
    };
    let dev = device::get(n)?;
    let bytes = len * dtype.size();
    let dst = dev.alloc(bytes, &dev.copy_in)?;
    let event = staging::stage_in(&dev, &dst, &dev.copy_in, bytes, fill)?;
    Ok(memory::device_buffer(dtype, len, dst, event, &dev.copy_in))
}
