//! Host memory behind a buffer: owned (pageable) here; pinned memory comes from GPU backends.

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

/// Pageable host memory, 8-byte aligned (backed by `u64` words).
pub(crate) struct OwnedHost {
    words: Vec<u64>,
    bytes: usize,
}

impl OwnedHost {
    /// `bytes` zeroed bytes. Large zeroed allocations come from the OS already zero, so this costs
    /// no more than an uninitialised one.
    pub fn zeroed(bytes: usize) -> Self {
        OwnedHost {
            words: vec![0u64; bytes.div_ceil(8)],
            bytes,
        }
    }

    /// The bytes of `data`.
    pub fn from_vec<T: Element>(data: Vec<T>) -> Self {
        let bytes = std::mem::size_of_val(data.as_slice());
        let mut h = OwnedHost::zeroed(bytes);
        h.as_bytes_mut().copy_from_slice(bytemuck::cast_slice(&data));
        h
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
