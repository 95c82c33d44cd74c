//! Host memory behind a buffer: owned (pageable) here, recycled through a small cache; pinned
//! memory comes from GPU backends.
//!
//! Why a cache: a fresh multi-megabyte allocation comes from `mmap` and costs a page fault per
//! 4 KiB on first write — for a 64 MiB copy that is more time than the copy itself. Collectives
//! and training loops allocate the same sizes over and over, so freed buffers of at least
//! [`POOL_MIN_BYTES`] are kept (up to [`HOST_POOL_ENV`] bytes in all, 2 GiB unless set; a newly
//! freed buffer displacing the ones kept longest) and handed out again for the same size, as
//! PyTorch's caching host allocator does. Recycled buffers hold stale bytes; every kernel writes every element of
//! its output.
//!
//! Those larger buffers are whole pages ([`HostPages`]), so that a GPU backend can page-lock
//! exactly their memory and copy to and from it by DMA: the CUDA backend does so for a buffer
//! uploaded again (`backend/cuda/register.rs`). The page-locking stays with the allocation through
//! the cache, so a loop that uploads a buffer of the same size each step locks it once. A view of
//! a buffer's memory (`backend/view.rs`) says what it views ([`HostMem::viewed`]), so a slice is
//! read by DMA from its owner's locking too.

use std::any::Any;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use super::shelf::Shelf;
use crate::dtype::Element;

/// Host bytes a [`super::Buffer`] can own. Implementations are at least 8-byte aligned, so any
/// element type can be viewed in place.
pub(crate) trait HostMem: Send + Sync {
    /// The bytes (at least the buffer's size).
    fn as_bytes(&self) -> &[u8];
    /// The bytes, writable; `None` for read-only memory (a view of another buffer, see
    /// `backend/view.rs`).
    fn as_bytes_mut(&mut self) -> Option<&mut [u8]>;
    /// The concrete type, for a backend that recognises its own host memory (a GPU backend's
    /// pinned buffers, which it can copy from without staging). `None` by default.
    fn as_any(&self) -> Option<&dyn Any> {
        None
    }
    /// The whole pages behind the buffer, which a GPU backend may page-lock; `None` by default
    /// (small buffers, memory that is pinned already).
    fn pages(&self) -> Option<&HostPages> {
        None
    }
    /// For a view of another buffer's host memory: that buffer, and the byte in it the view
    /// starts at, so that a GPU backend can read the memory in place where it can read the other
    /// buffer's. `None` by default (memory of its own).
    fn viewed(&self) -> Option<(&super::Buffer, usize)> {
        None
    }
}

/// A GPU backend's page-locking of a [`HostPages`] allocation, undone when dropped (which happens
/// before the memory is freed).
pub(crate) trait HostPin: Send + Sync {
    /// Blocks until no device work reads or writes the memory.
    fn wait_idle(&self);
    /// The concrete type, for the backend that made it.
    fn as_any(&self) -> &dyn Any;
}

/// Buffers smaller than this are not cached (the allocator serves them cheaply).
pub(crate) const POOL_MIN_BYTES: usize = 256 << 10;

/// Environment variable bounding the cache, in bytes (`0` turns it off). Read when the cache is
/// first used.
pub const HOST_POOL_ENV: &str = "COLLECTIVES_HOST_POOL_BYTES";

/// Bytes in a [`Page`].
const PAGE: usize = 4096;

/// One page of a large allocation: page-aligned, so the allocation's pages are its own.
#[derive(Clone, Copy)]
#[repr(C, align(4096))]
struct Page([u8; PAGE]);

// SAFETY: `Page` is plain bytes with no padding (its size equals its alignment); all zeros is a
// valid value.
unsafe impl bytemuck::Zeroable for Page {}
// SAFETY: as above: any bit pattern is a valid `Page`, and it is `Copy` and `'static`.
unsafe impl bytemuck::Pod for Page {}

/// A large host allocation: whole pages, and the page-locking a GPU backend attached to them.
pub(crate) struct HostPages {
    /// Dropped (unlocked) before `pages` is freed: fields drop in order.
    pin: OnceLock<Box<dyn HostPin>>,
    /// Bytes uploaded from the allocation to a device (see [`HostPages::note_upload`]).
    uploaded: AtomicU64,
    /// Whether a device refused to lock the allocation: not asked again (see [`Declined`]).
    refused: AtomicBool,
    pages: Vec<Page>,
}

impl HostPages {
    /// `n` zeroed pages.
    fn zeroed(n: usize) -> Self {
        // `vec![Page; n]` would write every page; zeroed memory from the allocator is mapped
        // lazily, as `vec![0u64; n]`'s is.
        let pages = bytemuck::allocation::zeroed_vec::<Page>(n);
        HostPages {
            pin: OnceLock::new(),
            uploaded: AtomicU64::new(0),
            refused: AtomicBool::new(false),
            pages,
        }
    }

    /// The first byte's address.
    pub fn ptr(&self) -> *mut u8 {
        self.pages.as_ptr() as *mut u8
    }

    /// The allocation's length in bytes (whole pages).
    pub fn len(&self) -> usize {
        self.pages.len() * PAGE
    }

    /// Counts an upload of `bytes` from the allocation (by any buffer that has owned it, or a
    /// view of one); returns the bytes uploaded from it so far, these included.
    pub fn note_upload(&self, bytes: usize) -> u64 {
        let bytes = bytes as u64;
        self.uploaded.fetch_add(bytes, Ordering::Relaxed).saturating_add(bytes)
    }

    /// The page-locking attached to the allocation, if any.
    pub fn pin(&self) -> Option<&dyn HostPin> {
        self.pin.get().map(|p| &**p)
    }

    /// Attaches the page-locking `make` returns (given the allocation's address and length)
    /// unless one is attached already; returns the one attached, if any. An allocation `make`
    /// declined [`Declined::ForGood`] is not offered to it again (nor after the pool recycles it).
    pub fn pin_with(
        &self,
        make: impl FnOnce(*mut u8, usize) -> Result<Box<dyn HostPin>, Declined>,
    ) -> Option<&dyn HostPin> {
        if let Some(p) = self.pin() {
            return Some(p);
        }
        if self.refused.load(Ordering::Acquire) {
            return None;
        }
        let made = match make(self.ptr(), self.len()) {
            Ok(made) => made,
            Err(Declined::ForGood) => {
                self.refused.store(true, Ordering::Release);
                return None;
            }
            Err(Declined::ForNow) => return None,
        };
        // Two uploads racing may both lock; the loser's locking is dropped (undone) here.
        Some(&**self.pin.get_or_init(|| made))
    }
}

/// Why a page-locking was not attached to a [`HostPages`] allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Declined {
    /// Not now (a bound on locked memory is reached): offered again on a later upload.
    ForNow,
    /// Not for this allocation (the driver refused it): never offered again, so a loop uploading
    /// it is not refused once per step.
    ForGood,
}

/// Freed allocations by length in pages (see [`super::shelf`]).
fn pool() -> &'static Mutex<Shelf<usize, HostPages>> {
    static POOL: OnceLock<Mutex<Shelf<usize, HostPages>>> = OnceLock::new();
    POOL.get_or_init(|| Mutex::new(Shelf::from_env(HOST_POOL_ENV)))
}

/// The host pool's figures (see `crate::failpoint::resources`).
#[cfg(feature = "failpoints")]
pub(crate) fn resources(out: &mut std::collections::BTreeMap<String, u64>) {
    out.insert("host buffers live".into(), crate::failpoint::live::HOST.load(Ordering::Acquire) as u64);
    out.insert("host pool bytes".into(), pool().lock().bytes() as u64);
}

/// An owned allocation: words for a small buffer, whole pages (cached when freed) for a large one.
enum Store {
    Words(Vec<u64>),
    Pages(HostPages),
}

/// Pageable host memory, 8-byte aligned (page-aligned from [`POOL_MIN_BYTES`]).
pub(crate) struct OwnedHost {
    store: Store,
    bytes: usize,
}

impl OwnedHost {
    /// `bytes` bytes of unspecified content: a recycled buffer of this size if one is cached,
    /// else fresh zeroed memory. The caller writes every byte before anyone reads it.
    pub fn uninit(bytes: usize) -> Self {
        let store = if bytes < POOL_MIN_BYTES {
            Store::Words(vec![0u64; bytes.div_ceil(8)])
        } else {
            let n = bytes.div_ceil(PAGE);
            Store::Pages(pool().lock().take(n).unwrap_or_else(|| HostPages::zeroed(n)))
        };
        #[cfg(feature = "failpoints")]
        crate::failpoint::live::inc(&crate::failpoint::live::HOST);
        OwnedHost { store, bytes }
    }

    /// The bytes of `data`.
    pub fn from_vec<T: Element>(data: Vec<T>) -> Self {
        let bytes = std::mem::size_of_val(data.as_slice());
        let mut h = OwnedHost::uninit(bytes);
        h.bytes_mut().copy_from_slice(bytemuck::cast_slice(&data));
        h
    }

    /// The bytes, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let all: &mut [u8] = match &mut self.store {
            Store::Words(w) => bytemuck::cast_slice_mut(w),
            Store::Pages(p) => bytemuck::cast_slice_mut(&mut p.pages),
        };
        &mut all[..self.bytes]
    }
}

impl Drop for OwnedHost {
    fn drop(&mut self) {
        #[cfg(feature = "failpoints")]
        crate::failpoint::live::dec(&crate::failpoint::live::HOST);
        let Store::Pages(p) = std::mem::replace(&mut self.store, Store::Words(Vec::new())) else { return };
        // A recycled allocation is written at once: no copy may still read it.
        if let Some(pin) = p.pin() {
            pin.wait_idle();
        }
        let (n, bytes) = (p.pages.len(), p.len());
        // Whatever is displaced (or not kept) is freed here, outside the lock.
        let _freed = pool().lock().keep(n, bytes, p);
    }
}

impl HostMem for OwnedHost {
    fn as_bytes(&self) -> &[u8] {
        let all: &[u8] = match &self.store {
            Store::Words(w) => bytemuck::cast_slice(w),
            Store::Pages(p) => bytemuck::cast_slice(&p.pages),
        };
        &all[..self.bytes]
    }

    fn as_bytes_mut(&mut self) -> Option<&mut [u8]> {
        Some(self.bytes_mut())
    }

    fn pages(&self) -> Option<&HostPages> {
        match &self.store {
            Store::Pages(p) => Some(p),
            Store::Words(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, AtomicUsize};

    use super::*;

    #[test]
    fn freed_buffers_are_recycled_for_the_same_size() {
        let bytes = POOL_MIN_BYTES * 3 + 8;
        let a = OwnedHost::uninit(bytes);
        let ptr = a.as_bytes().as_ptr();
        drop(a);
        let b = OwnedHost::uninit(bytes);
        assert_eq!(b.as_bytes().as_ptr(), ptr, "same allocation handed out again");
        assert_eq!(b.as_bytes().len(), bytes);
    }

    #[test]
    fn small_buffers_bypass_the_pool() {
        let a = OwnedHost::from_vec(vec![1u8, 2, 3]);
        assert_eq!(a.as_bytes(), &[1, 2, 3]);
        assert!(a.pages().is_none(), "small buffers are never page-locked");
    }

    /// A page-locking that counts its waits and its release.
    struct Probe {
        waits: Arc<AtomicUsize>,
        released: Arc<AtomicUsize>,
    }

    impl HostPin for Probe {
        fn wait_idle(&self) {
            self.waits.fetch_add(1, Ordering::SeqCst);
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    impl Drop for Probe {
        fn drop(&mut self) {
            self.released.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn large_buffers_are_whole_pages_that_keep_their_locking_and_upload_count_through_the_pool() {
        // A page count no other test uses, so the pool hands back this allocation (and none
        // another test used: 321 pages, this test's size before, is also what a 65 537-row
        // upload of five f32 columns takes, and GPU run 29c saw one recycled from such a test).
        let bytes = POOL_MIN_BYTES * 13 + 7 * PAGE + 5;
        let (waits, released) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let a = OwnedHost::uninit(bytes);
        let p = a.pages().expect("a large buffer is paged");
        assert_eq!(p.ptr() as usize % PAGE, 0, "page-aligned");
        assert_eq!(p.len(), bytes.div_ceil(PAGE) * PAGE);
        assert!(p.len() >= a.as_bytes().len());
        assert_eq!((p.note_upload(bytes), p.note_upload(8)), (bytes as u64, bytes as u64 + 8));
        let probe =
            || Some(Box::new(Probe { waits: waits.clone(), released: released.clone() }) as Box<dyn HostPin>);
        assert!(p.pin().is_none());
        let locked = p.pin_with(|ptr, len| {
            (ptr == p.ptr() && len == p.len()).then(probe).flatten().ok_or(Declined::ForNow)
        });
        assert!(locked.is_some());
        assert!(p.pin_with(|_, _| panic!("locked once")).is_some());
        drop(a);
        assert_eq!(waits.load(Ordering::SeqCst), 1, "dropping a locked buffer waits for its copies");
        assert_eq!(released.load(Ordering::SeqCst), 0, "the locking stays with the cached allocation");
        let b = OwnedHost::uninit(bytes);
        let q = b.pages().unwrap();
        assert!(q.pin().is_some(), "recycled with its locking");
        assert_eq!(q.note_upload(1), bytes as u64 + 9, "and its upload count");
    }

    #[test]
    fn a_declined_locking_leaves_the_buffer_unlocked_and_a_refused_one_is_not_asked_again() {
        let bytes = POOL_MIN_BYTES * 7;
        let a = OwnedHost::uninit(bytes);
        let p = a.pages().unwrap();
        assert!(p.pin_with(|_, _| Err(Declined::ForNow)).is_none());
        assert!(p.pin().is_none());
        let asked = AtomicU32::new(0);
        let refuse = |_: *mut u8, _: usize| {
            asked.fetch_add(1, Ordering::SeqCst);
            Err(Declined::ForGood)
        };
        assert!(p.pin_with(refuse).is_none(), "asked after a refusal for now");
        assert!(p.pin_with(refuse).is_none());
        assert_eq!(asked.load(Ordering::SeqCst), 1, "a refused allocation is not asked again");
        assert!(p.pin().is_none());
        let at = p.ptr();
        drop(a);
        let b = OwnedHost::uninit(bytes);
        let q = b.pages().unwrap();
        if q.ptr() == at {
            assert!(q.pin_with(refuse).is_none());
            assert_eq!(asked.load(Ordering::SeqCst), 1, "nor once the pool hands it out again");
        }
    }
}
