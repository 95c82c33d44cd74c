//! The device bridge's direct copies: a CUDA ↔ Vulkan move between two devices of one GPU as
//! one CUDA copy, straight into or out of the Vulkan buffer's own memory.
//!
//! On such a GPU, large Vulkan tensor buffers have exportable memory of their own
//! ([`SharedBuf`]), which CUDA maps once (the mapping is kept with the memory, parked buffers
//! included). A move to Vulkan allocates the destination and has CUDA copy into it (Vulkan work
//! reading it waits for the copy's signal on the device); a move from Vulkan has CUDA copy out of
//! the source once its Vulkan writer has finished, a wait on the GPU too. Both are Vulkan timeline
//! semaphores imported into CUDA (`backend/cuda/timeline.rs`), wherever the drivers allow it. Either way the data crosses no ring and the Vulkan
//! queue does nothing: on the H200, a Vulkan copy runs at about 370 GB/s and every hand-over
//! between the two APIs' work costs about 200 µs (`bench/gpu/11-bridge`), while CUDA copies device
//! to device at about 1.9 TB/s. Smaller buffers, and Vulkan buffers without shared memory, take
//! the device ring ([`super::ring`]).
//!
//! The peer bridge ([`Bridge::Peer`]: the Vulkan device is another GPU, which a CUDA device
//! `via` of this process also drives) moves the same way, through `via`: the buffer's memory is
//! mapped into `via`, whose streams wait for and signal the Vulkan timelines, and the copy is a
//! peer copy between the CUDA end and that mapping. Its smaller moves take the host ring.

use std::sync::Arc;

use parking_lot::Mutex;

use super::ring;
use crate::backend::chain::Bridge;
use crate::backend::vulkan::export::SharedBuf;
use crate::backend::{Buffer, cuda};
use crate::device::Device;
use crate::error::{Error, Result};

/// `src` moved to `to` by one CUDA copy, or `None` when this move cannot go direct (host
/// staging, an empty tensor, a Vulkan buffer without shared memory, or a pair whose memory
/// sharing failed before).
pub(super) fn transfer(src: &Buffer, to: Device) -> Option<Result<Buffer>> {
    let (cu, vk) = super::cuda_and_vulkan(src.device, to);
    let via = match ring::choice(cu, vk) {
        Bridge::Device => cu,
        Bridge::Peer { via } => via,
        Bridge::Host(_) => return None,
    };
    if src.bytes() == 0 || failed(cu, vk, None) {
        return None;
    }
    match src.device {
        Device::Cuda(_) => to_vulkan(src, vk, via).transpose(),
        _ => to_cuda(src, cu, via).transpose(),
    }
}

/// Whether sharing memory between `cu` and `vk` failed in this process; `now` records a failure
/// (warned about once, with its reason).
fn failed(cu: Device, vk: Device, now: Option<&Error>) -> bool {
    static FAILED: Mutex<Vec<(Device, Device)>> = Mutex::new(Vec::new());
    let mut pairs = FAILED.lock();
    if let Some(e) = now {
        crate::knob::warn_once(
            &format!("direct bridge {cu} {vk}"),
            &format!("{cu} could not map {vk}'s memory ({e}); moving through the ring instead"),
        );
        pairs.push((cu, vk));
    }
    pairs.contains(&(cu, vk))
}

/// CUDA's mapping of `buf` (memory of `vk`), imported into `via` (a CUDA device of `vk`'s GPU)
/// on first use; `None` (and the pair `cu`, `vk` marked failed) when the import fails, so that
/// the move takes the ring instead.
fn mapping(buf: &SharedBuf, (cu, vk): (Device, Device), via: Device) -> Option<Arc<cuda::ImportedMem>> {
    let len = buf.size();
    let made = buf.view(|fd, size| {
        crate::backend::chain::fail_share()?;
        // SAFETY: the descriptor names the buffer's memory (`size` bytes) on the GPU behind
        // `via` (their UUIDs match); the mapping is kept with the memory and dropped before it
        // is freed.
        unsafe { cuda::ImportedMem::new(via, fd, size, len) }
    });
    made.map_err(|e| failed(cu, vk, Some(&e))).ok()
}

/// `src` (on a CUDA device) copied into a new shared buffer of `vk`, through `via` (`src`'s
/// device where the two are one GPU, else its peer on `vk`'s GPU).
pub(super) fn to_vulkan(src: &Buffer, vk: Device, via: Device) -> Result<Option<Buffer>> {
    let Some(dst) = SharedBuf::alloc(vk, src.bytes())? else { return Ok(None) };
    let Some(map) = mapping(&dst, (src.device, vk), via) else { return Ok(None) };
    // SAFETY: the mapping (into `via`) covers the buffer (at least `src.bytes()`), and the buffer
    // waits for the copy (`set_busy`) before its memory is reused or freed.
    let fence = unsafe { cuda::copy_to_mapped(src, via, map.ptr(), vk) }?;
    dst.set_busy(fence.clone())?;
    Ok(Some(dst.into_buffer(src.dtype, src.len, fence)))
}

/// `src` (a Vulkan buffer) copied into a new buffer of CUDA device `cu`, if its memory is shared,
/// through `via` (`cu` where the two are one GPU, else its peer on `src`'s GPU).
pub(super) fn to_cuda(src: &Buffer, cu: Device, via: Device) -> Result<Option<Buffer>> {
    let Some(from) = SharedBuf::of(src) else { return Ok(None) };
    let Some(map) = mapping(&from, (cu, src.device), via) else { return Ok(None) };
    // SAFETY: the mapping is the memory of `src` (or of the buffer `src` is a view of, from
    // `offset`) and covers it (the copy waits for its writer); the memory waits for the copy
    // (`set_busy`) before it is reused or freed.
    let out = unsafe { cuda::copy_from_mapped(cu, via, src, map.ptr() + from.offset()) }?;
    if let Some(f) = &out.fence {
        from.set_busy(f.clone())?;
    }
    Ok(Some(out))
}
