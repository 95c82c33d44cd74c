//! Slice and concat as strided row copies, on bytes (so every dtype is one code path).
//!
//! A slice copies `outer` rows out of the input; a concat copies each input's rows into its
//! columns of the output. Rows that are contiguous on both sides, or long (16 KiB or more), go
//! as buffer copies (`vkCmdCopyBuffer`, any byte offset, no binding-size limit). Short strided
//! rows go through the `copy_bytes` kernel, which handles rows starting at any byte, in pieces of
//! rows whose bindings fit within `maxStorageBufferRange`. A small slice or concat of tensors in
//! host memory is done by the host instead ([`on_host`]), with no submission.

use std::sync::Arc;

use ash::vk;

use super::memory::DevBuf;
use super::pipelines::Key;
use super::submit::{Binding, Recorder};
use crate::error::Result;

/// Rows at least this long are copied with one buffer-copy region each.
const REGION_MIN_BYTES: u64 = 16 << 10;

/// Buffer-copy regions per `vkCmdCopyBuffer`.
const REGIONS_PER_CALL: usize = 4096;

/// `rows` rows of `row_bytes` bytes: row r from byte `src_base + r * src_stride` of the source to
/// byte `dst_base + r * dst_stride` of the destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Rows {
    pub rows: u64,
    pub row_bytes: u64,
    pub src_base: u64,
    pub src_stride: u64,
    pub dst_base: u64,
    pub dst_stride: u64,
}

impl Rows {
    /// The rows of `out[o, m, i] = x[o, start + m, i]` (sizes in bytes for `inner`).
    pub fn slice(outer: u64, in_mid: u64, start: u64, len: u64, inner: u64) -> Rows {
        let row_bytes = len * inner;
        Rows {
            rows: outer,
            row_bytes,
            src_base: start * inner,
            src_stride: in_mid * inner,
            dst_base: 0,
            dst_stride: row_bytes,
        }
    }

    /// The rows of input `k` of a concat of `mids` (sizes in bytes for `inner`).
    pub fn concat_input(outer: u64, mids: &[u64], k: usize, inner: u64) -> Rows {
        let before: u64 = mids[..k].iter().sum();
        let total: u64 = mids.iter().sum();
        let row_bytes = mids[k] * inner;
        Rows {
            rows: outer,
            row_bytes,
            src_base: 0,
            src_stride: row_bytes,
            dst_base: before * inner,
            dst_stride: total * inner,
        }
    }

    fn is_empty(&self) -> bool {
        self.rows == 0 || self.row_bytes == 0
    }

    /// The buffer-copy regions doing these rows, if they suit buffer copies.
    fn regions(&self) -> Option<Vec<vk::BufferCopy>> {
        let region = |src, dst, size| vk::BufferCopy { src_offset: src, dst_offset: dst, size };
        if self.rows == 1 || (self.src_stride == self.row_bytes && self.dst_stride == self.row_bytes) {
            return Some(vec![region(self.src_base, self.dst_base, self.rows * self.row_bytes)]);
        }
        if self.row_bytes < REGION_MIN_BYTES {
            return None;
        }
        let row = |r: u64| {
            region(self.src_base + r * self.src_stride, self.dst_base + r * self.dst_stride, self.row_bytes)
        };
        Some((0..self.rows).map(row).collect())
    }

    /// Splits into pieces of consecutive rows whose source and destination spans (plus
    /// alignment slack) each fit within `limit` bytes, and whose kernel invocations (`wpr` per
    /// row) stay below 2^28, well inside the kernel's 32-bit indices.
    fn pieces(&self, limit: u64, wpr: u64) -> Vec<Rows> {
        let stride = self.src_stride.max(self.dst_stride);
        let room = limit.saturating_sub(self.row_bytes);
        let per = (1 + room / stride.max(1)).min((1 << 28) / wpr).min(self.rows).max(1);
        (0..self.rows)
            .step_by(per as usize)
            .map(|r0| Rows {
                rows: per.min(self.rows - r0),
                src_base: self.src_base + r0 * self.src_stride,
                dst_base: self.dst_base + r0 * self.dst_stride,
                ..*self
            })
            .collect()
    }
}

/// Records the copies of `parts` (a source buffer and its rows each) into `dst`: buffer copies
/// first, then (after a barrier) the kernel, whose partial-word merges then see the bytes the
/// buffer copies wrote.
pub(super) fn record(
    rec: &mut Recorder<'_>,
    parts: &[(&Arc<DevBuf>, Rows)],
    dst: &Arc<DevBuf>,
) -> Result<()> {
    let mut by_kernel = Vec::new();
    for (src, rows) in parts.iter().filter(|(_, r)| !r.is_empty()) {
        match rows.regions() {
            Some(regions) => {
                for chunk in regions.chunks(REGIONS_PER_CALL) {
                    rec.copy(src, dst, chunk);
                }
            }
            None => by_kernel.push((*src, *rows)),
        }
    }
    if by_kernel.is_empty() {
        return Ok(());
    }
    rec.barrier();
    for (src, rows) in by_kernel {
        copy_kernel(rec, src, rows, dst)?;
    }
    Ok(())
}

/// Whether the host may copy `srcs` into `dst` itself ([`on_host`], a join): every buffer is host
/// memory the host reads fast (mapped and cached), and `dst` is smaller than `host_below` (the
/// device's bound for tensors in host memory, so only small copies take the host's time).
pub(super) fn suits_host<'a>(
    srcs: impl IntoIterator<Item = &'a DevBuf>,
    dst: &DevBuf,
    host_below: u64,
) -> bool {
    dst.size < host_below && dst.host_reads_fast() && srcs.into_iter().all(DevBuf::host_reads_fast)
}

/// Does the copies of `parts` into `dst` on the host, through the mappings: a small slice or
/// concat of tensors in host memory costs no submission (on an H200 that CUDA also drives, a
/// Vulkan submission following CUDA work costs up to hundreds of microseconds).
///
/// # Safety
/// [`suits_host`] holds; the sources' writers have finished (waited for) and `dst` is new, not yet
/// shared; every row lies within its buffer.
pub(super) unsafe fn on_host(parts: &[(&Arc<DevBuf>, Rows)], dst: &DevBuf) {
    // SAFETY: as the caller guarantees: `dst` is mapped, `size` bytes, and ours alone.
    let out = unsafe { dst.mapped_bytes_mut(dst.size as usize) };
    for (src, rows) in parts.iter().filter(|(_, r)| !r.is_empty()) {
        // SAFETY: as above: mapped, `size` bytes, its writer finished.
        let from = unsafe { src.mapped_bytes(src.size as usize) };
        let n = rows.row_bytes as usize;
        for r in 0..rows.rows {
            let (s, d) = (
                (rows.src_base + r * rows.src_stride) as usize,
                (rows.dst_base + r * rows.dst_stride) as usize,
            );
            out[d..d + n].copy_from_slice(&from[s..s + n]);
        }
    }
}

/// Records `rows` through the `copy_bytes` kernel, in pieces.
fn copy_kernel(rec: &mut Recorder<'_>, src: &Arc<DevBuf>, rows: Rows, dst: &Arc<DevBuf>) -> Result<()> {
    let gpu = rec.gpu().clone();
    let pipeline = gpu.pipelines.get(&gpu, Key::CopyBytes)?;
    let align = gpu.limits.offset_align;
    // Slack: the bound range starts up to `align - 1` bytes early and ends up to 7 bytes late.
    let limit = gpu.limits.max_binding - align - 8;
    let wpr = rows.row_bytes.div_ceil(4) + 1;
    for piece in rows.pieces(limit, wpr) {
        // Where the rows start in each buffer: past its skew (the data's start).
        let (src_base, dst_base) = (piece.src_base + src.skew, piece.dst_base + dst.skew);
        let span = |base: u64, stride: u64| (base, base + (piece.rows - 1) * stride + piece.row_bytes);
        let (s, d) = (span(src_base, piece.src_stride), span(dst_base, piece.dst_stride));
        let (s_off, s_range) = bind_range(s, align, src.bound_size());
        let (d_off, d_range) = bind_range(d, align, dst.bound_size());
        let b = [
            Binding { buf: src, offset: s_off, range: s_range },
            Binding { buf: dst, offset: d_off, range: d_range },
        ];
        let fields = [
            piece.rows,
            piece.row_bytes,
            src_base - s_off,
            piece.src_stride,
            dst_base - d_off,
            piece.dst_stride,
            wpr,
            0,
        ];
        let push: Vec<u8> = fields.iter().flat_map(|&f| (f as u32).to_le_bytes()).collect();
        rec.dispatch(&pipeline, &b, &push, piece.rows * wpr)?;
    }
    Ok(())
}

/// The aligned binding (offset, range) covering bytes `lo..hi` of a buffer of `size` bytes: the
/// offset rounded down to `align`, the end up to a whole word (within the buffer).
fn bind_range((lo, hi): (u64, u64), align: u64, size: u64) -> (u64, u64) {
    let off = lo / align * align;
    let end = (hi.div_ceil(4) * 4 + 4).min(size);
    (off, end - off)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_and_long_rows_become_regions() {
        let whole = Rows::slice(1, 10, 3, 4, 2);
        assert_eq!(whole.regions().unwrap().len(), 1);
        let r = whole.regions().unwrap()[0];
        assert_eq!((r.src_offset, r.dst_offset, r.size), (6, 0, 8));
        let short = Rows::slice(5, 10, 3, 4, 2);
        assert!(short.regions().is_none());
        let long = Rows::slice(3, 4, 1, 2, 16 << 10);
        let r = long.regions().unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r[2].src_offset, (2 * 4 + 1) * (16 << 10));
    }

    #[test]
    fn concat_rows_land_in_their_columns() {
        let mids = [2, 3, 1];
        let r = Rows::concat_input(4, &mids, 1, 2);
        assert_eq!((r.row_bytes, r.dst_base, r.dst_stride, r.src_stride), (6, 4, 12, 6));
    }

    #[test]
    fn pieces_cover_every_row_within_the_limit() {
        let rows = Rows::slice(1000, 7, 2, 3, 1);
        let pieces = rows.pieces(100, 2);
        assert_eq!(pieces.iter().map(|p| p.rows).sum::<u64>(), 1000);
        for p in &pieces {
            assert!((p.rows - 1) * 7 + 3 <= 100);
        }
        assert_eq!(pieces[1].src_base, 2 + pieces[0].rows * 7);
        let huge_stride = Rows::slice(3, 1 << 30, 0, 1, 1);
        assert_eq!(huge_stride.pieces(1 << 27, 2).len(), 3);
        // A 4 GiB binding range still keeps each piece's invocations below 2^28.
        let many = Rows::slice(1 << 30, 2, 0, 1, 1).pieces(u64::from(u32::MAX), 2);
        assert!(many.iter().all(|p| p.rows * 2 <= 1 << 28));
        assert_eq!(many.iter().map(|p| p.rows).sum::<u64>(), 1 << 30);
    }

    #[test]
    fn bindings_are_aligned_and_stay_in_the_buffer() {
        assert_eq!(bind_range((21, 30), 16, 1000), (16, 20));
        assert_eq!(bind_range((21, 30), 16, 32), (16, 16));
    }
}
