//! Pinned (page-locked) host memory: the blocks, a process-wide pool, and the host buffers
//! ([`PinnedHost`]) that `dtoh` returns.
//!
//! Allocating pinned memory is slow (it maps and locks pages), so blocks are pooled by size class
//! and reused. A block remembers the device work still using it (events); it is handed out again,
//! or freed, only once that work is done. Blocks are allocated *portable*, so every CUDA context
//! can copy to and from them.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cudarc::driver::CudaContext;

use super::event::Event;
use parking_lot::Mutex;

use super::driver;
use crate::backend::{Buffer, HostMem, Mem};
use crate::device::Device;
use crate::error::{Error, Result};

/// Pinned bytes the pool keeps cached when idle, at most.
const CACHE_LIMIT: usize = 4 << 30;
/// Smallest block.
const MIN_BLOCK: usize = 64 << 10;
/// Above this, classes are multiples of it instead of powers of two.
const LARGE: usize = 256 << 20;

/// One pinned allocation.
pub(crate) struct PinnedBlock {
    ptr: *mut u8,
    cap: usize,
    ctx: Arc<CudaContext>,
    /// Device work (copies) that reads or writes the block.
    pending: Mutex<Vec<Arc<Event>>>,
}

// SAFETY: the block owns its allocation; the raw pointer is only dereferenced through `&self`
// (shared reads) or `&mut self` (exclusive writes), like a `Box<[u8]>`.
unsafe impl Send for PinnedBlock {}
// SAFETY: as above; `pending` is behind a mutex.
unsafe impl Sync for PinnedBlock {}

impl PinnedBlock {
    /// Allocates `cap` pinned bytes with `ctx` current.
    fn alloc(cap: usize, ctx: &Arc<CudaContext>) -> std::result::Result<Self, cudarc::driver::DriverError> {
        ctx.bind_to_thread()?;
        // SAFETY: a context is current (bound above).
        let ptr = unsafe { driver::alloc_pinned(cap)? };
        Ok(PinnedBlock { ptr, cap, ctx: ctx.clone(), pending: Mutex::new(Vec::new()) })
    }

    /// The host address.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Its size in bytes (at least what was asked for).
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// The first `len` bytes.
    pub fn bytes(&self, len: usize) -> &[u8] {
        debug_assert!(len <= self.cap, "pinned block of {} bytes read as {len}", self.cap);
        let len = len.min(self.cap);
        // SAFETY: `ptr` is valid for `cap` bytes for the block's life, and initialised: every
        // block is written (by a copy or a memcpy) before it is read.
        unsafe { std::slice::from_raw_parts(self.ptr, len) }
    }

    /// The first `len` bytes, writable.
    pub fn bytes_mut(&mut self, len: usize) -> &mut [u8] {
        debug_assert!(len <= self.cap, "pinned block of {} bytes written as {len}", self.cap);
        let len = len.min(self.cap);
        // SAFETY: as in `bytes`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len) }
    }

    /// Records device work (complete when `event` is) that uses the block.
    pub fn note_use(&self, event: &Arc<Event>) {
        let mut p = self.pending.lock();
        p.retain(|e| !matches!(e.try_is_complete(), Ok(true)));
        p.push(event.clone());
    }

    /// Blocks until the device work using the block is done.
    pub fn wait_idle(&self, device: Device) -> Result<()> {
        let pending: Vec<_> = self.pending.lock().drain(..).collect();
        for e in pending {
            e.synchronize().map_err(driver::err(device, "wait for pinned copy"))?;
        }
        Ok(())
    }
}

impl Drop for PinnedBlock {
    fn drop(&mut self) {
        for e in self.pending.get_mut().drain(..) {
            // A failed wait means the device faulted; freeing is still the best we can do.
            let _ = e.synchronize();
        }
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by `alloc_pinned`, freed once, no device work uses it (waited above).
        let _ = unsafe { driver::free_pinned(self.ptr) };
    }
}

/// The pool's size class for a request of `bytes`.
fn class(bytes: usize) -> usize {
    if bytes <= LARGE { bytes.max(MIN_BLOCK).next_power_of_two() } else { bytes.div_ceil(LARGE) * LARGE }
}

#[derive(Default)]
struct Pool {
    free: HashMap<usize, Vec<PinnedBlock>>,
    cached: usize,
}

fn pool() -> &'static Mutex<Pool> {
    static P: OnceLock<Mutex<Pool>> = OnceLock::new();
    P.get_or_init(Default::default)
}

/// A pinned block of at least `bytes`, idle, from the pool or newly allocated with `ctx`.
pub(crate) fn take(bytes: usize, ctx: &Arc<CudaContext>, device: Device) -> Result<PinnedBlock> {
    let cap = class(bytes);
    let reused = {
        let mut p = pool().lock();
        let b = p.free.get_mut(&cap).and_then(Vec::pop);
        if b.is_some() {
            p.cached -= cap;
        }
        b
    };
    if let Some(b) = reused {
        b.wait_idle(device)?;
        return Ok(b);
    }
    PinnedBlock::alloc(cap, ctx).or_else(|_| {
        // Out of pinned memory, perhaps: give the cached blocks back and try once more.
        drop(std::mem::take(&mut *pool().lock()));
        PinnedBlock::alloc(cap, ctx).map_err(|e| Error::OutOfMemory {
            device,
            bytes: cap,
            detail: format!("pinned host memory: {}", driver::describe(e)),
        })
    })
}

/// Returns a block to the pool (or frees it when the pool is full).
pub(crate) fn give_back(block: PinnedBlock) {
    let mut p = pool().lock();
    if p.cached + block.cap > CACHE_LIMIT {
        drop(p);
        drop(block);
        return;
    }
    p.cached += block.cap;
    p.free.entry(block.cap).or_default().push(block);
}

/// Host memory of a buffer on a host device, pinned, returned to the pool when dropped.
pub(crate) struct PinnedHost {
    block: Option<PinnedBlock>,
    len: usize,
}

impl PinnedHost {
    /// `len` bytes of `block` (no block for an empty buffer).
    pub fn new(block: Option<PinnedBlock>, len: usize) -> Self {
        PinnedHost { block, len }
    }

    /// The block (none when empty).
    pub fn block(&self) -> Option<&PinnedBlock> {
        self.block.as_ref()
    }
}

/// `b`'s memory, if it is this backend's pinned host memory.
pub(crate) fn host_of(b: &Buffer) -> Option<&PinnedHost> {
    match &b.mem {
        Mem::Host(h) => h.as_any()?.downcast_ref::<PinnedHost>(),
        _ => None,
    }
}

impl HostMem for PinnedHost {
    fn as_bytes(&self) -> &[u8] {
        self.block.as_ref().map_or(&[], |b| b.bytes(self.len))
    }

    fn as_bytes_mut(&mut self) -> Option<&mut [u8]> {
        let len = self.len;
        Some(self.block.as_mut().map_or(&mut [], |b| b.bytes_mut(len)))
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl Drop for PinnedHost {
    fn drop(&mut self) {
        if let Some(b) = self.block.take() {
            give_back(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_cover_requests() {
        for n in [0, 1, 4095, MIN_BLOCK, MIN_BLOCK + 1, LARGE - 1, LARGE, LARGE + 1, 3 * LARGE + 7] {
            let c = class(n);
            assert!(c >= n && c >= MIN_BLOCK, "{n} -> {c}");
            assert_eq!(class(c), c, "classes are fixed points");
        }
        assert_eq!(class(LARGE + 1), 2 * LARGE);
    }
}
