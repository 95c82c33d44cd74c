//! Copies of large buffers with non-temporal stores, which write memory without first reading the
//! destination's cache lines.
//!
//! An ordinary store to a line not in cache reads the line from memory before writing it (a
//! "read for ownership"), so a copy to a buffer larger than the caches moves three bytes of
//! memory traffic per byte copied. glibc's `memcpy` switches to non-temporal stores above a size
//! tied to the cache (on the development machine between 128 and 192 MiB, where its throughput
//! jumps from 5.4 to 8.5–10 GB/s); our copies come in chunks far below that size, so they decide
//! by the size of the whole transfer instead ([`STREAM_MIN_BYTES`]). The data is not wanted in
//! cache anyway: a buffer this large is evicted before its reader comes.

/// Transfers of at least this many bytes in all are written with non-temporal stores.
pub(crate) const STREAM_MIN_BYTES: usize = 32 << 20;

/// Copies `src` into `dst` (equal lengths) with non-temporal stores where the target has them,
/// ordinary ones elsewhere and for the unaligned head and tail. Ends with a store fence, so the
/// bytes are visible to whichever thread is told next that the copy is done.
pub(crate) fn copy(src: &[u8], dst: &mut [u8]) {
    copy_unfenced(src, dst);
    fence();
}

/// [`copy`] without its store fence: for a run of copies on one thread, which calls [`fence`]
/// once after the last of them.
pub(crate) fn copy_unfenced(src: &[u8], dst: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let head = dst.as_ptr().align_offset(16).min(dst.len());
        let body = (dst.len() - head) / 16 * 16;
        dst[..head].copy_from_slice(&src[..head]);
        let (s, d) = (&src[head..head + body], &mut dst[head..head + body]);
        for (sb, db) in s.chunks_exact(16).zip(d.chunks_exact_mut(16)) {
            // SAFETY: SSE2 is part of x86_64; `sb` is 16 readable bytes (unaligned load) and `db`
            // 16 writable bytes at a 16-byte aligned address (`head` aligned the body's start).
            unsafe {
                _mm_stream_si128(db.as_mut_ptr().cast::<__m128i>(), _mm_loadu_si128(sb.as_ptr().cast()))
            };
        }
        dst[head + body..].copy_from_slice(&src[head + body..]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// Orders this thread's non-temporal stores before any later store (a no-op where the target
/// has none), so they are visible to whichever thread is told next that they are done.
pub(crate) fn fence() {
    // SAFETY: SSE2 is part of x86_64; a store fence has no other effect.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_is_copied_at_every_alignment_and_length() {
        let src: Vec<u8> = (0..4099u32).map(|i| (i * 7 + 3) as u8).collect();
        for off in 0..17 {
            for len in [0, 1, 15, 16, 17, 31, 64, 1000, 4000] {
                let mut dst = vec![0xAAu8; 4120];
                copy(&src[off..off + len], &mut dst[off..off + len]);
                assert_eq!(&dst[off..off + len], &src[off..off + len], "off {off} len {len}");
                assert!(dst[..off].iter().chain(&dst[off + len..]).all(|&b| b == 0xAA), "outside untouched");
            }
        }
    }
}
