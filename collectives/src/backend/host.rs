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

use std::sync::OnceLock;

use parking_lot::Mutex;

use super::shelf::Shelf;
use crate::dtype::Element;

/// Host bytes a [`super::Buffer`] can own. Implementations are at least 8-byte aligned, so any
/// element type can be viewed in place.
pub(crate) trait HostMem: Send + Sync {
    /// The bytes (at least the buffer's size).
    fn as_bytes(&self) -> &[u8];
    /// The bytes, writable.
    fn as_bytes_mut(&mut self) -> &mut [u8];
    /// The concrete type, for a backend that recognises its own host memory (a GPU backend's
    /// pinned buffers, which it can copy from without staging). `None` by default.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// Buffers smaller than this are not cached (the allocator serves them cheaply).
pub(crate) const POOL_MIN_BYTES: usize = 256 << 10;

/// Environment variable bounding the cache, in bytes (`0` turns it off). Read when the cache is
/// first used.
pub const HOST_POOL_ENV: &str = "COLLECTIVES_HOST_POOL_BYTES";

/// Freed buffers by length in words (see [`super::shelf`]).
fn pool() -> &'static Mutex<Shelf<usize, Vec<u64>>> {
    static POOL: OnceLock<Mutex<Shelf<usize, Vec<u64>>>> = OnceLock::new();
    POOL.get_or_init(|| Mutex::new(Shelf::from_env(HOST_POOL_ENV)))
}

/// The host pool's figures (see `crate::failpoint::resources`).
#[cfg(feature = "failpoints")]
pub(crate) fn resources(out: &mut std::collections::BTreeMap<String, u64>) {
    use std::sync::atomic::Ordering;
    out.insert("host buffers live".into(), crate::failpoint::live::HOST.load(Ordering::Acquire) as u64);
    out.insert("host pool bytes".into(), pool().lock().bytes() as u64);
}

/// Pageable host memory, 8-byte aligned (backed by `u64` words).
pub(crate) struct OwnedHost {
    words: Vec<u64>,
    bytes: usize,
}

impl OwnedHost {
    /// `bytes` bytes of unspecified content: a recycled buffer of this size if one is cached,
    /// else fresh zeroed memory. The caller writes every byte before anyone reads it.
    pub fn uninit(bytes: usize) -> Self {
        let n = bytes.div_ceil(8);
        let recycled = (bytes >= POOL_MIN_BYTES).then(|| pool().lock().take(n)).flatten();
        let words = recycled.unwrap_or_else(|| vec![0u64; n]);
        #[cfg(feature = "failpoints")]
        crate::failpoint::live::inc(&crate::failpoint::live::HOST);
        OwnedHost { words, bytes }
    }

    /// The bytes of `data`.
    pub fn from_vec<T: Element>(data: Vec<T>) -> Self {
        let bytes = std::mem::size_of_val(data.as_slice());
        let mut h = OwnedHost::uninit(bytes);
        h.as_bytes_mut().copy_from_slice(bytemuck::cast_slice(&data));
        h
    }
}

impl Drop for OwnedHost {
    fn drop(&mut self) {
        #[cfg(feature = "failpoints")]
        crate::failpoint::live::dec(&crate::failpoint::live::HOST);
        let n = self.words.len();
        if n * 8 < POOL_MIN_BYTES {
            return;
        }
        // Whatever is displaced (or not kept) is freed here, outside the lock.
        let _freed = pool().lock().keep(n, n * 8, std::mem::take(&mut self.words));
    }
}

impl HostMem for OwnedHost {
    fn as_bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.bytes]
    }

    fn as_bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.bytes]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_buffers_are_recycled_for_the_same_size() {
        let bytes = POOL_MIN_BYTES * 3 + 8;
        let a = OwnedHost::uninit(bytes);
        let ptr = a.words.as_ptr();
        drop(a);
        let b = OwnedHost::uninit(bytes);
        assert_eq!(b.words.as_ptr(), ptr, "same allocation handed out again");
        assert_eq!(b.as_bytes().len(), bytes);
    }

    #[test]
    fn small_buffers_bypass_the_pool() {
        let a = OwnedHost::from_vec(vec![1u8, 2, 3]);
        assert_eq!(a.as_bytes(), &[1, 2, 3]);
    }
}
