//! A cache of freed Vulkan buffers, so work that allocates the same large buffers on every call
//! (a training step, a benchmark loop) reuses them instead of asking the driver again.
//!
//! gpu-allocator suballocates small buffers from memory blocks it keeps, but gives a buffer
//! larger than its block size (256 MiB device-local, 64 MiB host-visible) memory of its own,
//! allocated and freed with the buffer. On the H200's driver that costs more than the copy the
//! buffer is for: a 1 GiB host → device upload ran at 6 GB/s, mostly `vkAllocateMemory`. So a
//! [`super::memory::DevBuf`] of at least [`POOL_MIN_BYTES`] is parked here when dropped (its GPU
//! work is over by then) and handed back, contents undefined, to the next request of the same
//! use and size, on the same [`Shelf`] as the host pool. The cache holds at most
//! [`VULKAN_POOL_ENV`] bytes per device (2 GiB unless set; `0` turns it off), making room for a
//! newly freed buffer by freeing the ones parked longest; an allocation that fails empties it and tries again, so parked memory never turns
//! into an out-of-memory error.

use std::ptr::NonNull;

use ash::vk;
use gpu_allocator::vulkan::{Allocation, Allocator};

use super::memory::{Shared, Usage};
use super::raw;
use crate::backend::shelf::Shelf;

/// Buffers smaller than this are not parked (the allocator serves them from its blocks), unless
/// they have memory of their own ([`SHARE_MIN_BYTES`]).
pub(super) const POOL_MIN_BYTES: u64 = 1 << 20;

/// On a device that shares memory with CUDA (`Gpu::shares_memory`), tensor buffers of at least
/// this many bytes get exportable memory of their own, so a move between the two APIs is one
/// CUDA copy (the device bridge, `backend::staged`), and are parked from this size on (each is a
/// driver allocation and a CUDA mapping, too dear to make on every call). On the H200, from
/// 256 KiB to 512 KiB: a move either way 12–15 µs instead of 28–75 through two host hops, the
/// all_reduce of `cuda:0,vulkan:0` 29–38 µs instead of 71–169, a Vulkan fold 46–52 instead of
/// 59–82; what it costs is a download of such a tensor to the host, 47–54 µs instead of 9.5–21
/// (a submission instead of a read of mapped memory). Below 256 KiB the moves gain less (1–17 µs)
/// than a download loses (38–54), so smaller tensors stay in host memory
/// (`bench/gpu/20-signals`, run d). It is the device bridge's own bound (`DEVICE_MIN_BYTES`): a
/// tensor the bridge moves whole has such memory, and the graph relies on it (`collective::star`).
pub(super) const SHARE_MIN_BYTES: u64 = crate::backend::chain::DEVICE_MIN_BYTES as u64;

/// Environment variable bounding each Vulkan device's cache of freed buffers, in bytes (`0`
/// turns the cache off). Read when the device is opened.
pub const VULKAN_POOL_ENV: &str = "COLLECTIVES_VULKAN_POOL_BYTES";

/// A freed buffer with its memory still bound.
pub(super) struct Parked {
    pub buffer: vk::Buffer,
    pub alloc: Backing,
    pub mapped: Option<NonNull<u8>>,
    pub host_cached: bool,
}

/// Where a buffer's memory comes from.
pub(super) enum Backing {
    /// gpu-allocator (suballocated from its blocks, or a dedicated block of its own).
    Pool(Allocation),
    /// Memory of its own, allocated exportable for CUDA (see [`Shared`]).
    Shared(Shared),
}

// SAFETY: a parked buffer is used by nobody; its mapping is only handed to the next owner.
unsafe impl Send for Parked {}

/// One device's parked buffers by (use, size in bytes), on a [`Shelf`].
pub(super) struct BufCache(Shelf<(Usage, u64), Parked>);

impl Default for BufCache {
    fn default() -> Self {
        BufCache(Shelf::from_env(VULKAN_POOL_ENV))
    }
}

impl BufCache {
    /// An empty cache holding at most `limit` bytes (tests set small bounds).
    #[cfg(test)]
    pub fn with_limit(limit: u64) -> Self {
        BufCache(Shelf::new(limit as usize))
    }

    /// A parked buffer of exactly `size` bytes for `usage`, if there is one (the newest).
    pub fn take(&mut self, usage: Usage, size: u64) -> Option<Parked> {
        self.0.take((usage, size))
    }

    /// Parks `p` (a buffer of `size` bytes for `usage`), returning the buffers parked longest
    /// that it displaced, for the caller to free; or gives `p` back when it is too small or
    /// larger than the whole cache.
    pub fn park(&mut self, usage: Usage, size: u64, p: Parked) -> Result<Vec<Parked>, Parked> {
        let min = if matches!(p.alloc, Backing::Shared(_)) { SHARE_MIN_BYTES } else { POOL_MIN_BYTES };
        if size < min {
            return Err(p);
        }
        self.0.keep((usage, size), size as usize, p)
    }

    /// Destroys every parked buffer and frees its memory.
    pub fn clear(&mut self, device: &ash::Device, allocator: &mut Allocator) {
        for p in self.0.drain() {
            destroy(device, allocator, p);
        }
    }

    /// Bytes parked.
    pub fn bytes(&self) -> u64 {
        self.0.bytes() as u64
    }
}

/// Destroys a parked buffer of `device` and frees its memory.
pub(super) fn destroy(device: &ash::Device, allocator: &mut Allocator, p: Parked) {
    // SAFETY: parked buffers belong to `device` and no work uses them.
    unsafe { raw::destroy_buffer(device, p.buffer) };
    match p.alloc {
        Backing::Pool(a) => drop(allocator.free(a)),
        // SAFETY: the memory belongs to `device`; its one buffer is destroyed above.
        Backing::Shared(s) => unsafe { s.free(device) },
    }
}
