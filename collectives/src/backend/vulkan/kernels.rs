//! Elementwise kernels planned into dispatches: the fold (binary ops, the n-ary reduce, scale)
//! and casts.
//!
//! Tensors are cut into pieces whose bindings stay within `maxStorageBufferRange` (128 MiB on
//! lavapipe): a piece is a power-of-two count of elements, so its offsets stay aligned and whole
//! blocks. One invocation makes one 16-byte output block (16 u8, 8 f16/bf16, 4 f32/i32, 2
//! f64/i64), so memory moves in wide loads and stores; the last block of a tensor is computed
//! whole and its spare lanes land in the buffer's padding. An input that is a view starting off
//! its binding's alignment ([`DevBuf::skew`]) is bound from the aligned byte below its data, and
//! the kernels are told where its data starts (the fold's `skew`, the cast's `src_at`).

use std::sync::Arc;

use super::memory::{DevBuf, Usage};
use super::pipelines::{Key, PUSH_BYTES};
use super::submit::{Binding, Recorder};
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::{BinaryOp, Scale};

/// Inputs one fold pass binds.
const MAX_INPUTS: usize = 8;

/// Fold flags (see `shaders/fold.wgsl`).
const READ_ACC: u32 = 1;
const WRITE_ACC: u32 = 2;
const SCALE: u32 = 4;
const DIVIDE: u32 = 8;

/// Elements per 16-byte block.
fn lanes(d: DType) -> u64 {
    (16 / d.size()) as u64
}

/// Bytes of one element of the compute type (f32 for f16/bf16, u32 for u8).
fn compute_size(d: DType) -> u64 {
    d.size().max(4) as u64
}

/// Most elements in one piece, so that element and block indices stay well inside the kernels'
/// 32-bit arithmetic even where one binding may span 4 GiB (NVIDIA).
const MAX_PIECE: u64 = 1 << 28;

/// Elements per piece: the largest power of two whose widest binding fits in one binding range.
fn piece_elems(max_binding: u64, widest: u64) -> u64 {
    let fit = (max_binding / widest).clamp(16, MAX_PIECE);
    1 << (63 - fit.leading_zeros())
}

/// Bytes `n` elements of `d` occupy when bound (whole blocks).
fn bound_bytes(d: DType, n: u64) -> u64 {
    (n * d.size() as u64).div_ceil(16) * 16
}

/// The binding of input `buf`'s elements `e0..e0 + n` of `d`: from the aligned byte where the
/// piece would start without a skew, over the whole blocks that hold the piece's data (which
/// starts [`DevBuf::skew`] bytes in), within the buffer.
fn input<'a>(buf: &'a Arc<DevBuf>, d: DType, e0: u64, n: u64) -> Binding<'a> {
    let offset = e0 * d.size() as u64;
    let range = (buf.skew + n * d.size() as u64).div_ceil(16) * 16;
    Binding { buf, offset, range: range.min(buf.bound_size() - offset) }
}

/// An internal error unless `out`, a kernel's output, starts at its buffer's start (a new buffer,
/// never a view): kernels write whole blocks from their binding's start.
fn check_output(out: &DevBuf) -> Result<()> {
    match out.skew {
        0 => Ok(()),
        s => Err(crate::Error::internal(
            "vulkan kernel",
            format!("an output starting {s} bytes into its binding"),
        )),
    }
}

/// The factor as the kernel's factor type, little-endian in 8 bytes: f32 for f32/f16/bf16, and
/// for integers the factor as the dtype (exact: `Scale::check` kept it in the dtype's range).
fn factor_bytes(d: DType, s: Scale) -> [u8; 8] {
    let f = s.factor();
    let mut out = [0u8; 8];
    match d {
        DType::F32 | DType::F16 | DType::BF16 => out[..4].copy_from_slice(&(f as f32).to_le_bytes()),
        DType::F64 => out.copy_from_slice(&f.to_le_bytes()),
        DType::I32 => out[..4].copy_from_slice(&(f as i64 as i32).to_le_bytes()),
        DType::U8 => out[..4].copy_from_slice(&u32::from(f as i64 as u8).to_le_bytes()),
        DType::I64 => out.copy_from_slice(&(f as i64).to_le_bytes()),
    }
    out
}

/// Push constants from 32-bit fields, then an optional 8-byte tail at offset 32 and the inputs'
/// skews at offset 48 (the fold's `Params`).
fn push(fields: &[u32], tail: Option<([u8; 8], [u32; MAX_INPUTS])>) -> Vec<u8> {
    let mut p: Vec<u8> = fields.iter().flat_map(|f| f.to_le_bytes()).collect();
    if let Some((factor, skews)) = tail {
        p.resize(32, 0);
        p.extend_from_slice(&factor);
        p.resize(48, 0);
        p.extend(skews.iter().flat_map(|s| s.to_le_bytes()));
    }
    debug_assert!(p.len() <= PUSH_BYTES as usize);
    p
}

/// What one fold computes: `scale?(in0 op in1 op ... )`.
pub(super) struct Fold {
    pub dtype: DType,
    pub op: BinaryOp,
    pub scale: Option<Scale>,
}

impl Fold {
    /// Records the fold of `inputs` (each `n` elements) into `out` from byte `out_at` on (a
    /// multiple of 16 and of the device's storage offset alignment). More than eight inputs take
    /// several passes through an accumulator of the compute type.
    pub fn record(
        &self,
        rec: &mut Recorder<'_>,
        inputs: &[&Arc<DevBuf>],
        out: &Arc<DevBuf>,
        out_at: u64,
        n: u64,
    ) -> Result<()> {
        check_output(out)?;
        let gpu = rec.gpu().clone();
        let pipeline = gpu.pipelines.get(&gpu, Key::Fold(self.dtype, self.op))?;
        let (size, csize, ln) = (self.dtype.size() as u64, compute_size(self.dtype), lanes(self.dtype));
        let acc = match inputs.len() > MAX_INPUTS {
            true => Some(DevBuf::new(&gpu, n.div_ceil(ln) * ln * csize, Usage::Device)?),
            false => None,
        };
        let piece = piece_elems(gpu.limits.max_binding, size.max(csize));
        let passes: Vec<&[&Arc<DevBuf>]> = inputs.chunks(MAX_INPUTS).collect();
        for (i, group) in passes.iter().enumerate() {
            let last = i + 1 == passes.len();
            let flags = self.flags(i > 0, last);
            let mut e0 = 0;
            while e0 < n {
                let np = piece.min(n - e0);
                let blocks = np.div_ceil(ln);
                let range = bound_bytes(self.dtype, np);
                let to = Binding { buf: out, offset: out_at + e0 * size, range };
                let bound = |j| group.get(j).unwrap_or(&group[0]);
                let mut b: Vec<Binding<'_>> =
                    (0..MAX_INPUTS).map(|j| input(bound(j), self.dtype, e0, np)).collect();
                let skews = std::array::from_fn(|j| bound(j).skew as u32);
                b.push(match &acc {
                    Some(a) => Binding { buf: a, offset: e0 * csize, range: blocks * ln * csize },
                    None => to,
                });
                b.push(to);
                let fields = [np as u32, blocks as u32, group.len() as u32, 0, flags, 0, 0, 0];
                let factor = self.scale.map_or([0; 8], |s| factor_bytes(self.dtype, s));
                rec.dispatch(&pipeline, &b, &push(&fields, Some((factor, skews))), blocks)?;
                e0 += np;
            }
            rec.barrier();
        }
        if let Some(a) = &acc {
            rec.keep(a);
        }
        Ok(())
    }

    fn flags(&self, read_acc: bool, last: bool) -> u32 {
        let mut f = if read_acc { READ_ACC } else { 0 };
        if !last {
            return f | WRITE_ACC;
        }
        if let Some(s) = self.scale {
            f |= SCALE;
            if matches!(s, Scale::Div(_)) {
                f |= DIVIDE;
            }
        }
        f
    }
}

/// Records the conversion of `n` elements of `src` (dtype `from`) into `dst` (dtype `to`) from
/// byte `dst_at` on (aligned as [`Fold::record`]'s `out_at`).
pub(super) fn cast(
    rec: &mut Recorder<'_>,
    (from, to): (DType, DType),
    src: &Arc<DevBuf>,
    dst: &Arc<DevBuf>,
    dst_at: u64,
    n: u64,
) -> Result<()> {
    check_output(dst)?;
    let gpu = rec.gpu().clone();
    let pipeline = gpu.pipelines.get(&gpu, Key::Cast(from, to))?;
    let (si, so) = (from.size() as u64, to.size() as u64);
    let piece = piece_elems(gpu.limits.max_binding, si.max(so));
    let mut e0 = 0;
    while e0 < n {
        let np = piece.min(n - e0);
        let blocks = np.div_ceil(lanes(to));
        let b = [
            input(src, from, e0, np),
            Binding { buf: dst, offset: dst_at + e0 * so, range: bound_bytes(to, np) },
        ];
        let fields = [np as u32, blocks as u32, (src.skew / si) as u32, 0];
        rec.dispatch(&pipeline, &b, &push(&fields, None), blocks)?;
        e0 += np;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_powers_of_two_within_the_binding_limit() {
        assert_eq!(piece_elems(128 << 20, 4), 32 << 20);
        assert_eq!(piece_elems(128 << 20, 8), 16 << 20);
        assert_eq!(piece_elems((128 << 20) - 1, 4), 16 << 20);
        assert_eq!(piece_elems(u32::MAX as u64, 1), MAX_PIECE);
    }

    #[test]
    fn integer_factors_are_the_dtypes_values() {
        assert_eq!(&factor_bytes(DType::U8, Scale::Div(255.0))[..4], &255u32.to_le_bytes());
        assert_eq!(&factor_bytes(DType::I32, Scale::Mul(-3.0))[..4], &(-3i32).to_le_bytes());
        assert_eq!(factor_bytes(DType::F64, Scale::Mul(0.1)), 0.1f64.to_le_bytes());
        assert_eq!(&factor_bytes(DType::BF16, Scale::Div(3.0))[..4], &3.0f32.to_le_bytes());
    }

    #[test]
    fn bound_ranges_are_whole_blocks() {
        assert_eq!(bound_bytes(DType::U8, 7), 16);
        assert_eq!(bound_bytes(DType::F16, 9), 32);
        assert_eq!(bound_bytes(DType::F64, 3), 32);
        assert_eq!(lanes(DType::U8) * lanes(DType::F64), 32);
    }
}
