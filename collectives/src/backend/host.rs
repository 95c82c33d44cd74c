//! Host memory behind a buffer: owned (pageable) here, recycled through a small cache; pinned
//! memory comes from GPU backends.
//!
//! Why a cache: a fresh multi-megabyte allocation comes from `mmap` and costs a page fault per
//! 4 KiB on first write — for a 64 MiB copy that is more time than the copy itself. Collectives
//! and training loops allocate the same sizes over and over, so freed buffers of at least
//! [`POOL_MIN_BYTES`] are kept (up to [`pool_limit`] bytes in all, a newly freed buffer
//! displacing the ones kept longest) and handed out again for the same size, as PyTorch's caching
//! host allocator does. Recycled buffers hold stale bytes; every kernel writes every element of
//! its output.

use std::collections::{HashMap, VecDeque};
use std::sync::OnceLock;

use parking_lot::Mutex;

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

/// Environment variable bounding the cache, in bytes.
pub const HOST_POOL_ENV: &str = "COLLECTIVES_HOST_POOL_BYTES";

/// Most bytes the cache keeps: [`HOST_POOL_ENV`] if set, else 2 GiB.
pub(crate) fn pool_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var(HOST_POOL_ENV).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(2 << 30)
    })
}

/// Kept buffers by length in words.
#[derive(Default)]
struct Pool {
    free: HashMap<usize, VecDeque<Vec<u64>>>,
    /// The length of every kept buffer, oldest first.
    order: VecDeque<usize>,
    bytes: usize,
}

impl Pool {
    /// A kept buffer of `n` words (the newest), if there is one.
    fn take(&mut self, n: usize) -> Option<Vec<u64>> {
        let words = self.free.get_mut(&n)?.pop_back()?;
        if let Some(i) = self.order.iter().rposition(|&k| k == n) {
            self.order.remove(i);
        }
        self.bytes -= n * 8;
        Some(words)
    }

    /// Keeps `words` unless it is larger than `limit`, returning the buffers kept longest that it
    /// displaced (for the caller to free outside the lock).
    fn keep(&mut self, words: Vec<u64>, limit: usize) -> Vec<Vec<u64>> {
        let n = words.len();
        if n * 8 > limit {
            return vec![words];
        }
        let mut out = vec![];
        while self.bytes + n * 8 > limit {
            let Some(k) = self.order.pop_front() else { break };
            if let Some(old) = self.free.get_mut(&k).and_then(VecDeque::pop_front) {
                self.bytes -= k * 8;
                out.push(old);
            }
        }
        self.bytes += n * 8;
        self.free.entry(n).or_default().push_back(words);
        self.order.push_back(n);
        out
    }
}

fn pool() -> &'static Mutex<Pool> {
    static POOL: OnceLock<Mutex<Pool>> = OnceLock::new();
    POOL.get_or_init(Default::default)
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
        let n = self.words.len();
        if n * 8 < POOL_MIN_BYTES {
            return;
        }
        let displaced = pool().lock().keep(std::mem::take(&mut self.words), pool_limit());
        drop(displaced);
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
    fn a_full_pool_drops_the_buffers_kept_longest() {
        let mut p = Pool::default();
        let words = |n: usize| vec![0u64; n];
        assert!(p.keep(words(400), 1000 * 8).is_empty());
        assert!(p.keep(words(400), 1000 * 8).is_empty());
        assert!(p.keep(words(200), 1000 * 8).is_empty());
        let displaced = p.keep(words(300), 1000 * 8);
        assert_eq!(displaced.iter().map(Vec::len).collect::<Vec<_>>(), [400], "the oldest made room");
        assert_eq!(p.bytes, 900 * 8);
        assert_eq!(p.take(200).map(|w| w.len()), Some(200));
        assert_eq!(p.take(400).map(|w| w.len()), Some(400));
        assert!(p.take(400).is_none());
        assert_eq!(p.keep(words(2000), 1000 * 8).len(), 1, "larger than the whole pool: not kept");
        assert_eq!(p.bytes, 300 * 8);
    }

    #[test]
    fn small_buffers_bypass_the_pool() {
        let a = OwnedHost::from_vec(vec![1u8, 2, 3]);
        assert_eq!(a.as_bytes(), &[1, 2, 3]);
    }
}
