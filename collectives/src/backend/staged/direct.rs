//! The device bridge's direct copies: a CUDA ↔ Vulkan move between two devices of one GPU as
//! one CUDA copy, straight into or out of the Vulkan buffer's own memory.
//!
//! On such a GPU, large Vulkan tensor buffers have exportable memory of their own
//! ([`SharedBuf`]), which CUDA maps once (the mapping is kept with the memory, parked buffers
//! included). A move to Vulkan allocates the destination and has CUDA copy into it; a move from
//! Vulkan has CUDA copy out of the source, once its Vulkan writer has finished. Either way the data
//! crosses no ring and the Vulkan queue does nothing: on the H200, a Vulkan copy runs at about
//! 370 GB/s and every hand-over between the two APIs' work costs about 200 µs (`bench/gpu/11-bridge`),
//! while CUDA copies device to device at about 1.9 TB/s. Smaller buffers, and Vulkan buffers
//! without shared memory, take the device ring ([`super::ring`]).

use super::ring;
use crate::backend::chain::Bridge;
use crate::backend::vulkan::export::SharedBuf;
use crate::backend::{Buffer, cuda};
use crate::device::Device;
use crate::error::Result;

/// `src` moved to `to` by one CUDA copy, or `None` when this move cannot go direct (two GPUs,
/// host staging forced, an empty tensor, or a Vulkan buffer without shared memory).
pub(super) fn transfer(src: &Buffer, to: Device) -> Option<Result<Buffer>> {
    let (cu, vk) = if matches!(src.device, Device::Cuda(_)) { (src.device, to) } else { (to, src.device) };
    if src.bytes() == 0 || ring::choice(cu, vk) != Bridge::Device {
        return None;
    }
    match src.device {
        Device::Cuda(_) => to_vulkan(src, vk).transpose(),
        _ => to_cuda(src, cu).transpose(),
    }
}

/// CUDA's mapping of `buf`, imported into `cu` on first use.
fn mapping(buf: &SharedBuf, cu: Device) -> Result<std::sync::Arc<cuda::ImportedMem>> {
    let len = buf.size();
    // SAFETY: the descriptor names the buffer's memory (`size` bytes) on the GPU behind `cu`
    // (their UUIDs match); the mapping is kept with the memory and dropped before it is freed.
    buf.view(|fd, size| unsafe { cuda::ImportedMem::new(cu, fd, size, len) })
}

/// `src` (on a CUDA device) copied into a new shared buffer of `vk`.
fn to_vulkan(src: &Buffer, vk: Device) -> Result<Option<Buffer>> {
    let Some(dst) = SharedBuf::alloc(vk, src.bytes())? else { return Ok(None) };
    let map = mapping(&dst, src.device)?;
    // SAFETY: the mapping covers the buffer (at least `src.bytes()`), and the buffer waits for
    // the copy (`set_busy`) before its memory is reused or freed.
    let fence = unsafe { cuda::copy_to_mapped(src, map.ptr()) }?;
    dst.set_busy(fence.clone())?;
    Ok(Some(dst.into_buffer(src.dtype, src.len, fence)))
}

/// `src` (a Vulkan buffer) copied into a new buffer of CUDA device `cu`, if its memory is shared.
fn to_cuda(src: &Buffer, cu: Device) -> Result<Option<Buffer>> {
    let Some(from) = SharedBuf::of(src) else { return Ok(None) };
    src.wait()?;
    let map = mapping(&from, cu)?;
    // SAFETY: the mapping covers the buffer, whose writer has finished (waited above); the
    // buffer waits for the copy (`set_busy`) before its memory is reused or freed.
    let out = unsafe { cuda::copy_from_mapped(cu, map.ptr(), src.dtype, src.len) }?;
    if let Some(f) = &out.fence {
        from.set_busy(f.clone())?;
    }
    Ok(Some(out))
}
