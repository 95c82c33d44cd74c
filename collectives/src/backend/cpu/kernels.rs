//! CPU kernels over typed slices: simple loops the compiler vectorizes, split across the rayon
//! pool when a tensor is large enough to pay for it.
//!
//! The loops are compiled for AVX2 and SSE4.1 beside the baseline x86-64 and the best the CPU
//! has is chosen at run time (`multiversion`): on the baseline, bf16's conversions do not
//! vectorize (a bf16 fold ran at a third of f32's speed per byte, `bench/cpu-simd`). f16 is
//! converted a block at a time by `half`'s slice conversions ([`Num::SLICES`]).

use multiversion::multiversion;
use rayon::prelude::*;

use super::num::{Acc, Num};
use super::stream::{self, STREAM_MIN_BYTES};
use crate::dtype::DType;
use crate::graph::{BinaryOp, ReduceKind, Scale};

/// Bytes a kernel or copy moves (reads and writes, every copy of its result included) from
/// which it runs on the thread pool; below it the calling thread does it all, as waking the pool
/// costs more than it saves: about 50 µs on the H200 machine's 16 cores, where the host
/// all_to_all was even both ways at 2 MiB moved and the pool twice as fast at 4
/// (`bench/gpu/34-host-parallel`). On the 2-core development machine one thread was ahead up to
/// about 8 MiB (`bench/cpu-par-threshold`). Until then a kernel went to the pool from 64 Ki
/// elements of output: a fold of two f32 shards from 768 KiB moved, an add of two u8 from 192 KiB.
pub(crate) const PAR_MIN_BYTES: usize = 2 << 20;
/// Elements per parallel task.
const PAR_CHUNK: usize = 1 << 15;
/// Bytes of each input folded per block of the n-ary reduce (the accumulator stays in L1). Short
/// runs per input keep all of them streaming at once: 512 elements a block (2 KiB of f32) held
/// an eight-input f32 fold of 16 MiB shards to about half the speed of 512 bytes on the 2-core
/// development machine (`bench/cpu8/blocks-2026-12-04.txt`).
const BLOCK_BYTES: usize = 512;

/// Runs `f(offset, out_chunk)` over `out`, in parallel when it is large, and copies each finished
/// chunk into every buffer of `fan` (the same bytes, for other host devices) while it is still in
/// cache: a kernel whose result several devices need reads its inputs once and writes each copy
/// once, with no second pass over memory.
/// Copies of [`STREAM_MIN_BYTES`] or more in all are written with non-temporal stores. `read`:
/// the bytes the kernel reads, which with those it writes decide the pool ([`PAR_MIN_BYTES`]).
fn for_chunks<T: Num>(
    out: &mut [T],
    fan: &mut [&mut [u8]],
    read: usize,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    let streamed = std::mem::size_of_val(out) * fan.len() >= STREAM_MIN_BYTES;
    let spread = |o: &[T], fan: &mut [&mut [u8]]| {
        for dst in fan.iter_mut() {
            copy_chunk(bytemuck::cast_slice(o), dst, streamed);
        }
    };
    if read + std::mem::size_of_val(out) * (1 + fan.len()) < PAR_MIN_BYTES {
        f(0, out);
        return spread(out, fan);
    }
    let chunk_bytes = PAR_CHUNK * std::mem::size_of::<T>();
    let mut per_chunk: Vec<Vec<&mut [u8]>> = (0..out.len().div_ceil(PAR_CHUNK)).map(|_| vec![]).collect();
    for dst in fan.iter_mut() {
        for (c, piece) in dst.chunks_mut(chunk_bytes).enumerate() {
            per_chunk[c].push(piece);
        }
    }
    out.par_chunks_mut(PAR_CHUNK).zip(per_chunk).enumerate().for_each(|(c, (o, mut fan))| {
        f(c * PAR_CHUNK, o);
        spread(o, &mut fan);
    });
}

/// Runs `$body` with `$f` bound to a closure computing `op` on the compute type `$A`, one arm per
/// op, so the op is a constant inside each loop and the loop vectorizes.
macro_rules! with_op {
    ($op:expr, $A:ty, |$f:ident| $body:expr) => {
        match $op {
            BinaryOp::Add => {
                let $f = |a: $A, b: $A| <$A as Acc>::bin(BinaryOp::Add, a, b);
                $body
            }
            BinaryOp::Sub => {
                let $f = |a: $A, b: $A| <$A as Acc>::bin(BinaryOp::Sub, a, b);
                $body
            }
            BinaryOp::Mul => {
                let $f = |a: $A, b: $A| <$A as Acc>::bin(BinaryOp::Mul, a, b);
                $body
            }
            BinaryOp::Div => {
                let $f = |a: $A, b: $A| <$A as Acc>::bin(BinaryOp::Div, a, b);
                $body
            }
            BinaryOp::Max => {
                let $f = |a: $A, b: $A| <$A as Acc>::bin(BinaryOp::Max, a, b);
                $body
            }
            BinaryOp::Min => {
                let $f = |a: $A, b: $A| <$A as Acc>::bin(BinaryOp::Min, a, b);
                $body
            }
        }
    };
}

/// `out = a op b`.
pub(crate) fn binary<T: Num>(op: BinaryOp, a: &[T], b: &[T], out: &mut [T], fan: &mut [&mut [u8]]) {
    let read = std::mem::size_of_val(a) + std::mem::size_of_val(b);
    with_op!(op, T::A, |f| for_chunks(out, fan, read, |off, o| {
        let (a, b) = (&a[off..off + o.len()], &b[off..off + o.len()]);
        match T::SLICES {
            true => by_blocks(o, a, Some(b), |x, y| x.iter_mut().zip(y).for_each(|(x, &y)| *x = f(*x, y))),
            false => binary_chunk(f, a, b, o),
        }
    }))
}

/// One chunk of a binary op, element by element.
#[multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
fn binary_chunk<T: Num>(f: impl Fn(T::A, T::A) -> T::A, a: &[T], b: &[T], o: &mut [T]) {
    for ((o, &x), &y) in o.iter_mut().zip(a).zip(b) {
        *o = T::narrow(f(x.widen(), y.widen()));
    }
}

/// `o` computed a block at a time in the compute type, for types that convert faster by slices
/// ([`Num::SLICES`]): each block of `x` (and of `y`, if given) widened into a buffer, `g` writing
/// the result over `x`'s, which is narrowed into `o`.
#[multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
fn by_blocks<T: Num>(o: &mut [T], x: &[T], y: Option<&[T]>, g: impl Fn(&mut [T::A], &[T::A])) {
    let Some(&seed) = x.first() else { return };
    let block = BLOCK_BYTES / std::mem::size_of::<T>();
    // A block of a type of two bytes or more.
    let (mut wx, mut wy) = ([seed.widen(); BLOCK_BYTES / 2], [seed.widen(); BLOCK_BYTES / 2]);
    for (b, ob) in o.chunks_mut(block).enumerate() {
        let (at, n) = (b * block, ob.len());
        T::widen_slice(&x[at..at + n], &mut wx[..n]);
        if let Some(y) = y {
            T::widen_slice(&y[at..at + n], &mut wy[..n]);
        }
        g(&mut wx[..n], &wy[..n]);
        T::narrow_slice(&wx[..n], ob);
    }
}

/// `out = scale(fold(inputs))`, one pass, folding in the compute type. An output of
/// [`STREAM_MIN_BYTES`] or more is written with non-temporal stores: it is far larger than the
/// caches, so an ordinary store would first read each of its lines from memory for nothing.
pub(crate) fn reduce<T: Num>(
    kind: ReduceKind,
    scale: Option<Scale>,
    inputs: &[&[T]],
    out: &mut [T],
    fan: &mut [&mut [u8]],
) {
    let streamed = std::mem::size_of_val(out) >= STREAM_MIN_BYTES;
    let read = inputs.iter().map(|x| std::mem::size_of_val(*x)).sum();
    with_op!(kind.binary(), T::A, |f| for_chunks(out, fan, read, |off, o| {
        reduce_chunk(f, scale, inputs, off, o, streamed)
    }))
}

/// One chunk of the n-ary reduce, folded block by block so the accumulator stays in L1; each
/// block's result stored with non-temporal stores where `streamed` (through a block in L1, then
/// one fence for the chunk).
#[multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
fn reduce_chunk<T: Num>(
    f: impl Fn(T::A, T::A) -> T::A,
    scale: Option<Scale>,
    inputs: &[&[T]],
    off: usize,
    o: &mut [T],
    streamed: bool,
) {
    let Some(&seed) = inputs[0].get(off) else { return };
    let block = BLOCK_BYTES / std::mem::size_of::<T>();
    let mut acc = [seed.widen(); BLOCK_BYTES]; // room for a block of any dtype (1 byte or more)
    let mut wide = [seed.widen(); BLOCK_BYTES / 2]; // a block of a type converted by slices
    let mut staged = [seed; BLOCK_BYTES];
    for (b, ob) in o.chunks_mut(block).enumerate() {
        let (start, n) = (off + b * block, ob.len());
        let acc = &mut acc[..n];
        T::widen_slice(&inputs[0][start..start + n], acc);
        for inp in &inputs[1..] {
            let x = &inp[start..start + n];
            if T::SLICES {
                T::widen_slice(x, &mut wide[..n]);
                acc.iter_mut().zip(&wide[..n]).for_each(|(a, &x)| *a = f(*a, x));
            } else {
                acc.iter_mut().zip(x).for_each(|(a, &x)| *a = f(*a, x.widen()));
            }
        }
        if let Some(s) = scale {
            acc.iter_mut().for_each(|a| *a = T::A::scale(s, *a));
        }
        let dst = match streamed {
            true => &mut staged[..n],
            false => &mut *ob,
        };
        T::narrow_slice(acc, dst);
        if streamed {
            stream::copy_unfenced(bytemuck::cast_slice(&staged[..n]), bytemuck::cast_slice_mut(ob));
        }
    }
    if streamed {
        stream::fence();
    }
}

/// `out = scale(x)`.
pub(crate) fn scale<T: Num>(s: Scale, x: &[T], out: &mut [T], fan: &mut [&mut [u8]]) {
    for_chunks(out, fan, std::mem::size_of_val(x), |off, o| {
        let x = &x[off..off + o.len()];
        match T::SLICES {
            true => by_blocks(o, x, None, |x, _| x.iter_mut().for_each(|a| *a = T::A::scale(s, *a))),
            false => scale_chunk(s, x, o),
        }
    });
}

/// One chunk of a scale, element by element.
#[multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
fn scale_chunk<T: Num>(s: Scale, x: &[T], o: &mut [T]) {
    for (o, &v) in o.iter_mut().zip(x) {
        *o = T::narrow(T::A::scale(s, v.widen()));
    }
}

/// `out = x as U`: integer to integer exactly as Rust's `as` (wrapping); anything involving a
/// float through f64, rounded once to nearest-even (float to integer truncates toward zero and
/// saturates, NaN gives 0).
pub(crate) fn cast<T: Num, U: Num>(x: &[T], out: &mut [U], fan: &mut [&mut [u8]]) {
    let ints = T::DTYPE.is_int() && U::DTYPE.is_int();
    for_chunks(out, fan, std::mem::size_of_val(x), |off, o| {
        let x = &x[off..off + o.len()];
        if ints {
            for (o, &v) in o.iter_mut().zip(x) {
                *o = U::from_i64(v.to_i64().unwrap_or(0));
            }
        } else if T::SLICES {
            cast_by_blocks(x, o);
        } else if U::SLICES && T::DTYPE == DType::F32 {
            U::from_f32_slice(bytemuck::cast_slice(x), o);
        } else {
            // Widening is exact (f16 and bf16 to f32; the others are their compute type), and
            // cheaper than the element's own conversion to f64.
            for (o, &v) in o.iter_mut().zip(x) {
                *o = U::from_f64(v.widen().to_f64());
            }
        }
    });
}

/// [`cast`] from a type converted by slices ([`Num::SLICES`]): each block widened (exactly) by
/// its slice conversion, then cast from there.
fn cast_by_blocks<T: Num, U: Num>(x: &[T], o: &mut [U]) {
    // A block of `T` fits `wide` only for a type of two bytes or more (every `SLICES` type; the
    // function is instantiated for the others too, but never called for them).
    debug_assert!(T::SLICES && std::mem::size_of::<T>() >= 2);
    let Some(&seed) = x.first() else { return };
    let block = BLOCK_BYTES / std::mem::size_of::<T>();
    let mut wide = [seed.widen(); BLOCK_BYTES / 2];
    for (xb, ob) in x.chunks(block).zip(o.chunks_mut(block)) {
        let w = &mut wide[..xb.len()];
        T::widen_slice(xb, w);
        ob.iter_mut().zip(w.iter()).for_each(|(o, &a)| *o = U::from_f64(a.to_f64()));
    }
}

/// Copies `src` into `dst` (equal lengths), in parallel when large, with non-temporal stores
/// from [`STREAM_MIN_BYTES`].
pub(crate) fn copy_bytes(src: &[u8], dst: &mut [u8]) {
    copy_parallel(src, dst, dst.len() >= STREAM_MIN_BYTES, 512 << 10);
}

/// [`copy_bytes`] into memory no CPU reads next — pinned staging that a DMA engine reads — with
/// non-temporal stores whenever it runs in parallel: caching the destination would only cost a
/// read of each of its lines first. Filling 16 MiB staging chunks with ordinary stores held a
/// pageable upload on the H200 to about 37 GB/s, below the bus's 55 (`bench/gpu/17-streamed`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))] // used by the CUDA backend's staging
pub(crate) fn copy_bytes_to_staging(src: &[u8], dst: &mut [u8]) {
    // Pieces of 128 KiB: a streamed kernel's smallest chunk (4 MiB) spreads over 32 of them.
    copy_parallel(src, dst, true, 128 << 10);
}

/// `src` into `dst`: on the calling thread below [`PAR_MIN_BYTES`] moved, else in parallel pieces
/// of `piece` bytes (512 KiB by default), with non-temporal stores where `streamed`.
fn copy_parallel(src: &[u8], dst: &mut [u8], streamed: bool, piece: usize) {
    if 2 * dst.len() < PAR_MIN_BYTES {
        dst.copy_from_slice(src);
    } else {
        dst.par_chunks_mut(piece).zip(src.par_chunks(piece)).for_each(|(d, s)| copy_chunk(s, d, streamed));
    }
}

/// One piece of a larger copy: with non-temporal stores when the whole copy is `streamed`.
fn copy_chunk(src: &[u8], dst: &mut [u8], streamed: bool) {
    if streamed {
        stream::copy(src, dst);
    } else {
        dst.copy_from_slice(src);
    }
}

/// `out[o, m, i] = x[o, start + m, i]`, on bytes (`inner` counted in bytes).
pub(crate) fn slice(
    x: &[u8],
    out: &mut [u8],
    outer: usize,
    in_mid: usize,
    start: usize,
    len: usize,
    inner: usize,
) {
    let row = len * inner;
    if outer == 1 {
        return copy_bytes(&x[start * inner..start * inner + row], out);
    }
    if row == 0 {
        return;
    }
    let copy = |(o, dst): (usize, &mut [u8])| {
        let s = (o * in_mid + start) * inner;
        dst.copy_from_slice(&x[s..s + row]);
    };
    if 2 * out.len() < PAR_MIN_BYTES {
        out.chunks_mut(row).enumerate().for_each(copy);
    } else {
        out.par_chunks_mut(row).enumerate().for_each(copy);
    }
}

/// Inputs `outer × mids[k] × inner` (bytes) joined along the middle axis into `out`.
pub(crate) fn concat(inputs: &[&[u8]], mids: &[usize], out: &mut [u8], outer: usize, inner: usize) {
    let row: usize = mids.iter().sum::<usize>() * inner;
    if row == 0 {
        return;
    }
    let fill = |(o, dst): (usize, &mut [u8])| {
        let mut at = 0;
        for (x, &m) in inputs.iter().zip(mids) {
            let n = m * inner;
            if outer == 1 {
                copy_bytes(&x[..n], &mut dst[at..at + n]);
            } else {
                dst[at..at + n].copy_from_slice(&x[o * n..(o + 1) * n]);
            }
            at += n;
        }
    };
    if outer == 1 || 2 * out.len() < PAR_MIN_BYTES {
        out.chunks_mut(row).enumerate().for_each(fill);
    } else {
        out.par_chunks_mut(row).enumerate().for_each(fill);
    }
}

/// Member `j`'s output of an all_to_all: in each of `outer` rows, part `j` (`part` bytes from
/// `j * part` of the input's row) of every input, in input order. Every input's row and the
/// output's hold one part per input.
pub(crate) fn all_to_all_part(inputs: &[&[u8]], j: usize, out: &mut [u8], outer: usize, part: usize) {
    let row = part * inputs.len();
    if row == 0 {
        return;
    }
    let fill = |(o, dst): (usize, &mut [u8])| {
        for (i, x) in inputs.iter().enumerate() {
            let (src, d) = (&x[o * row + j * part..][..part], &mut dst[i * part..][..part]);
            if outer == 1 { copy_bytes(src, d) } else { d.copy_from_slice(src) }
        }
    };
    if outer == 1 || 2 * out.len() < PAR_MIN_BYTES {
        out.chunks_mut(row).take(outer).enumerate().for_each(fill);
    } else {
        out.par_chunks_mut(row).take(outer).enumerate().for_each(fill);
    }
}

#[cfg(test)]
mod tests {
    use half::{bf16, f16};
    use rand::Rng;
    use rand::rngs::ThreadRng;

    use super::super::num::Acc;
    use super::*;

    /// The streamed fold (non-temporal stores through a block in L1) writes the bits the cached
    /// one writes, and every element matches an f64 reference: fresh random data, three inputs,
    /// from offsets and at lengths that put the output's start off 16 bytes and cut blocks short,
    /// for a 1-, 2-, 4- and 8-byte type and f16 (converted by slices; the floats also with a
    /// scale).
    #[test]
    fn the_streamed_fold_writes_every_element_as_the_cached_one() {
        let wrap = |s: f64, w: f64| s == w.rem_euclid(256.0);
        check::<u8>(|r| r.random_range(0..=255u8), f64::from, wrap, &[None]);
        let halves = [None, Some(0.5)];
        let bf = |s: f64, w: f64| (s - w).abs() <= 0.01 * w.abs().max(1.0);
        check::<bf16>(
            |r| bf16::from_f32(r.random_range(-8.0f32..8.0)),
            |v| f64::from(v.to_f32()),
            bf,
            &halves,
        );
        let h = |s: f64, w: f64| (s - w).abs() <= 2e-3 * w.abs().max(1.0);
        check::<f16>(|r| f16::from_f32(r.random_range(-8.0f32..8.0)), |v| f64::from(v.to_f32()), h, &halves);
        let f = |s: f64, w: f64| (s - w).abs() <= 1e-5 * w.abs().max(1.0);
        check::<f32>(|r| r.random_range(-100.0f32..100.0), f64::from, f, &halves);
        check::<i64>(|r| r.random_range(-1_000_000i64..1_000_000), |v| v as f64, |s, w| s == w, &[None]);
    }

    /// `near(got, want)` compares an element with the f64 reference; `scales` are the scales
    /// tried (`None`: none).
    fn check<T: Num>(
        draw: impl Fn(&mut ThreadRng) -> T,
        to_f64: impl Fn(T) -> f64,
        near: impl Fn(f64, f64) -> bool,
        scales: &[Option<f64>],
    ) {
        let mut r = rand::rng();
        let n = 3 * BLOCK_BYTES + 37;
        let ins: Vec<Vec<T>> = (0..3).map(|_| (0..n).map(|_| draw(&mut r)).collect()).collect();
        let inputs: Vec<&[T]> = ins.iter().map(|v| &v[..]).collect();
        let add = |a: T::A, b: T::A| <T::A as Acc>::bin(BinaryOp::Add, a, b);
        for &by in scales {
            let scale = by.map(Scale::Mul);
            for (off, len) in [(0, n), (1, n - 1), (5, 2 * BLOCK_BYTES + 3), (n - 3, 3), (n, 0)] {
                let (mut out, mut cached) = (vec![inputs[0][0]; len + 1], vec![inputs[0][0]; len + 1]);
                // From element 1: the output starts off 16 bytes (but for a 16-byte type).
                reduce_chunk(add, scale, &inputs, off, &mut out[1..], true);
                reduce_chunk(add, scale, &inputs, off, &mut cached[1..], false);
                let ctx = format!("{:?} scale {by:?} from {off}, {len} elements", T::DTYPE);
                assert!(out == cached, "{ctx}: streamed and cached differ");
                for (i, &got) in out[1..].iter().enumerate() {
                    let want = inputs.iter().map(|v| to_f64(v[off + i])).sum::<f64>() * by.unwrap_or(1.0);
                    assert!(near(to_f64(got), want), "{ctx}: element {i} is {}, want {want}", to_f64(got));
                }
            }
        }
    }
}
