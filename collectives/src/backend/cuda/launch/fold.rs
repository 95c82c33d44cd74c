//! The n-ary reduce's launches: the kernel's forms (`fold_at` in `kernels.cu`: the loop over
//! inputs, or loads issued in batches), the choice of form by dtype and size, and the chain of
//! launches through an accumulator past [`MAXK`] inputs.
//!
//! A reduce is bound by how many loads each thread has in flight: the loop over inputs has one,
//! a batch of 4 has four. Every form folds its inputs in one order, so the choice of form never
//! changes a result's bits (tested below on the GPU, every dtype and op); it is made per launch
//! by [`reduce_batch`] from the bytes per input, at the threshold and with the batch by dtype
//! that `bench/gpu/25-forms` measured. A small fold of a few inputs and outputs is bound by its
//! launch instead, and takes the few-slot form ([`takes_few`]): fewer parameters, every load
//! issued together.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use super::super::flag::Flag;
use super::{
    Carried, Done, F_ACC_IN, F_ACC_OUT, F_VEC, FEW, Launcher, MAXK, Ptrs, aligned, lanes, scale_args,
};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::{ReduceKind, Scale};

/// The batches the reduce kernel can load its inputs in (`fold_at`'s `B` in `kernels.cu`: each
/// thread issues a batch's loads together, then folds them, in input order); 0 is the plain
/// loop over inputs, one load after another (it compiles as batches of one: every form reads each
/// input's pointer at a fixed offset of the parameters, none copies them into local memory).
pub(crate) const REDUCE_BATCHES: [u32; 5] = [1, 2, 4, 8, 16];
/// Environment variable forcing the reduce kernel's form for every launch: `0` (the loop) or one
/// of [`REDUCE_BATCHES`]; read once. Unset, [`reduce_batch`] chooses.
pub(crate) const REDUCE_BATCH_ENV: &str = "COLLECTIVES_REDUCE_BATCH";
/// The fewest bytes per input from which a reduce launch loads its inputs in batches
/// ([`reduce_batch_of`]). On one H200 (`bench/gpu/25-forms`, runs a, c and d: raw launches of 2,
/// 3, 4 and 8 inputs of every dtype) the loop took 2.0–3.0 × as long as the best batch at some
/// size from 1 MiB per input, and every form was within noise below, where a launch costs what
/// its issue does; so smaller launches keep the loop and its registers.
pub(crate) const REDUCE_BATCH_MIN_BYTES: u64 = 1 << 20;

/// Bytes of the compute type of `d` (f32 for f16/bf16).
fn acc_size(d: DType) -> usize {
    match d {
        DType::F16 | DType::BF16 => 4,
        other => other.size(),
    }
}

/// The batch a reduce of `d` loads its inputs in, from [`REDUCE_BATCH_MIN_BYTES`]: the form whose
/// slowest case, over 2, 3 and 8 inputs of 1 to 64 MiB, was nearest the fastest form's on the
/// H200 (run d): at most 1.01–1.10 × its time. Batches of 8 and 16 were slower than it for
/// every dtype (up to 3.9 × for u8), and the best batch shrinks where a vector holds many lanes
/// to widen and narrow (u8, bf16) — not always (f16, whose conversions are one instruction each).
pub(crate) fn reduce_batch_of(d: DType) -> u32 {
    match d {
        DType::F32 | DType::F16 | DType::I64 => 4,
        DType::F64 | DType::BF16 | DType::I32 => 2,
        DType::U8 => 1,
    }
}

/// The form of a reduce launch of `d` folding inputs of `bytes` each: loads batched
/// ([`reduce_batch_of`]) from [`REDUCE_BATCH_MIN_BYTES`], else the loop (0), unless
/// [`REDUCE_BATCH_ENV`] forces one. Every form folds in one order, so the choice never changes
/// a result's bits. Below the threshold the loop stays also where the kernel reads a host shard
/// in place (the one-pass kernel of `mapped.rs`): batches there were within noise of it at 64 to
/// 512 KiB (run e).
pub(crate) fn reduce_batch(d: DType, bytes: u64) -> u32 {
    forced_batch().unwrap_or(if bytes >= REDUCE_BATCH_MIN_BYTES { reduce_batch_of(d) } else { 0 })
}

/// The form [`REDUCE_BATCH_ENV`] forces, if it does (read once).
fn forced_batch() -> Option<u32> {
    static FORCED: OnceLock<Option<u32>> = OnceLock::new();
    *FORCED.get_or_init(|| {
        crate::knob::var(REDUCE_BATCH_ENV, "0, 1, 2, 4, 8 or 16", |b: &u32| {
            *b == 0 || REDUCE_BATCHES.contains(b)
        })
    })
}

/// The most bytes per input a launch of the few-slot form ([`Entry::Few`]) folds. Measured at
/// 4 KiB (`bench/gpu/61-kernel-size`, runs a and b, the 4 KiB reduce of two inputs through a graph
/// and a synchronize): four slots and every load issued together took 0.25–0.4 µs off the loop's
/// 7.2–7.3, where a launch costs what its issue and its trip to the GPU do. In the library
/// (`bench/gpu/62-few-slots`, one H100, six rounds against the build before) the 4 KiB
/// `local_reduce` on `cuda:0` took 7.9–8.2 µs (8.4–9.7), two virtual devices' all_reduce 8.7–9.1
/// (9.3–11.1). Larger folds keep the forms `bench/gpu/25-forms` measured (the form's registers
/// count there).
pub(crate) const FEW_MAX_BYTES: u64 = 16 << 10;

/// Whether a launch of `k` inputs and `m` whole outputs (`entry`), of `bytes` each, takes the
/// few-slot form: the loop would fold it, unforced ([`REDUCE_BATCH_ENV`] and [`Fold::batch`]
/// unset), and it fits in [`FEW`] slots and [`FEW_MAX_BYTES`].
fn takes_few(entry: Entry, forced: bool, batch: u32, (k, m): (usize, usize), bytes: u64) -> bool {
    entry == Entry::Whole && !forced && batch == 0 && k <= FEW && m <= FEW && bytes <= FEW_MAX_BYTES
}

/// Which family of the reduce kernel's entry points a launch takes (`kernels.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Entry {
    /// Each output takes the whole result (`reduce…`).
    Whole,
    /// The outputs split the result ([`Outs::Split`]; `reduce…p`).
    Split,
    /// Each output takes the whole result, some inputs carried in the launch's parameters
    /// ([`Carried`](super::Carried); `reducei`, the loop over inputs only).
    Carried,
    /// As [`Entry::Carried`], with only the block's first
    /// [`CARRIED_SMALL_BYTES`](super::carried::CARRIED_SMALL_BYTES) passed (`reducei256`).
    CarriedSmall,
    /// As [`Entry::Whole`], at most [`FEW`] inputs and outputs, every load issued together
    /// (`reducef`; [`takes_few`]).
    Few,
}

impl Entry {
    /// The family a launch with outputs `taken` takes, and the part each output holds (0 for
    /// whole ones): inputs carried in the parameters take a carried family, its 256-byte form
    /// where they fit there ([`Carried::is_small`]). A split result with carried inputs has no
    /// entry point: an internal error.
    fn of(taken: Outs, carried: Option<&Carried>) -> Result<(u64, Entry)> {
        Ok(match (taken, carried) {
            (Outs::Whole, None) => (0, Entry::Whole),
            (Outs::Whole, Some(c)) => (0, if c.is_small() { Entry::CarriedSmall } else { Entry::Carried }),
            (Outs::Split(part), None) => (part, Entry::Split),
            (Outs::Split(_), Some(_)) => {
                return Err(Error::internal(
                    "reduce launch",
                    "a split result with inputs carried in its parameters",
                ));
            }
        })
    }
}

/// The reduce kernel of `d` and `kind` in form `batch` ([`reduce_batch`]) of the family `entry`
/// (`reduce4_f32_sum`, `reduce4p_f32_sum`, `reducei_f32_sum`, `reducei256_f32_sum`). Every name
/// is formatted once, on first use: a launch looks its kernel up by name, and formatting it there
/// cost a 4 KiB call about a tenth of its host time (`bench/gpu/27-two-contexts`, run b).
pub(crate) fn reduce_name(d: DType, kind: ReduceKind, batch: u32, entry: Entry) -> Cow<'static, str> {
    type Key = (DType, ReduceKind, u32, Entry);
    static NAMES: OnceLock<HashMap<Key, String>> = OnceLock::new();
    let format = |(d, kind, batch, entry): Key| {
        let form = if batch == 0 { String::new() } else { batch.to_string() };
        let tail = match entry {
            Entry::Whole => "",
            Entry::Split => "p",
            Entry::Carried => "i",
            Entry::CarriedSmall => "i256",
            Entry::Few => "f",
        };
        format!("reduce{form}{tail}_{}_{}", d.name(), format!("{kind:?}").to_lowercase())
    };
    let names = NAMES.get_or_init(|| {
        let kinds = [ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min];
        let forms = std::iter::once(0).chain(REDUCE_BATCHES);
        let keys = forms.flat_map(|b| DType::ALL.into_iter().flat_map(move |d| kinds.map(|k| (d, k, b))));
        let keys = keys.flat_map(|(d, k, b)| [(d, k, b, Entry::Whole), (d, k, b, Entry::Split)]);
        let carried = DType::ALL.into_iter().flat_map(|d| {
            kinds.into_iter().flat_map(move |k| [(d, k, 0, Entry::Carried), (d, k, 0, Entry::CarriedSmall)])
        });
        let few = DType::ALL.into_iter().flat_map(|d| kinds.map(|k| (d, k, 0, Entry::Few)));
        keys.chain(carried).chain(few).map(|key| (key, format(key))).collect()
    });
    match names.get(&(d, kind, batch, entry)) {
        Some(name) => Cow::Borrowed(name.as_str()),
        None => Cow::Owned(format((d, kind, batch, entry))),
    }
}

/// One reduce: `dtype`'s fold of `kind`, then `scale`, in form `batch` ([`reduce_batch`]'s
/// choice where `None`).
#[derive(Clone, Copy)]
pub(in super::super) struct Fold {
    pub dtype: DType,
    pub kind: ReduceKind,
    pub scale: Option<Scale>,
    pub batch: Option<u32>,
}

impl Fold {
    /// `kind` then `scale` over `dtype`, in the form [`reduce_batch`] chooses.
    pub(in super::super) fn new(dtype: DType, kind: ReduceKind, scale: Option<Scale>) -> Fold {
        Fold { dtype, kind, scale, batch: None }
    }
}

/// How a reduce's outputs take its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in super::super) enum Outs {
    /// Each output holds the whole result.
    Whole,
    /// The outputs split the result in parts of this many elements: output w holds elements
    /// `[w * part, (w + 1) * part)` (the last one fewer where the result ends first).
    Split(u64),
}

/// `o = scale(fold(ins))` for every `o` of `outs` (1 to [`MAXK`] of them, all written by the last
/// launch), or its parts in turn ([`Outs::Split`]): one launch per [`MAXK`] inputs, chained
/// through an accumulator. The last launch stores `flag` when done where it can
/// ([`Launcher::done`]); returns whether it does.
///
/// A launch the loop would fold, of at most [`FEW`] inputs and outputs and [`FEW_MAX_BYTES`]
/// each, takes the few-slot form ([`takes_few`]), which gives the same bits.
///
/// Where `l` carries inputs in its parameters ([`Launcher::carrying`]), each launch takes the
/// `reducei_…` form, which reads every input whose pointer is below the block's size there (the
/// `reducei256_…` one where the inputs lie in the block's first bytes, [`Carried::is_small`]).
///
/// # Safety
/// Every input holds `n` elements of `fold.dtype` (device or mapped memory, or carried by `l`)
/// and every output `n` (split: its part) that this device writes, valid until the launches have
/// run; the outputs are distinct; split, `outs` covers the result (`n` is at most `outs.len()`
/// parts) and `l` carries nothing.
pub(in super::super) unsafe fn reduce(
    l: &Launcher,
    fold: Fold,
    ins: &[u64],
    (outs, taken): (&[u64], Outs),
    n: u64,
    flag: Option<&Flag>,
) -> Result<bool> {
    if n == 0 {
        // Nothing to fold: no launch, and no kernel to load for it.
        return Ok(false);
    }
    let d = fold.dtype;
    let last = ins.len().saturating_sub(1) / MAXK;
    let tmp = match last {
        0 => None,
        _ => Some(l.dev.alloc(n as usize * acc_size(d), l.stream)?),
    };
    let acc = tmp.as_ref().map_or(0, |t| t.ptr());
    let (kind_i, f, fi) = scale_args(fold.scale);
    let (part, entry) = Entry::of(taken, l.carried)?;
    let vec = if aligned(ins) && aligned(outs) && part % lanes(d) == 0 { F_VEC } else { 0 };
    let work = if vec == F_VEC { n.div_ceil(lanes(d)) } else { n };
    let bytes = n * d.size() as u64;
    let batch = match entry {
        // The carried forms are the loop over inputs alone (their inputs are a few KiB).
        Entry::Carried | Entry::CarriedSmall => 0,
        _ => fold.batch.unwrap_or_else(|| reduce_batch(d, bytes)),
    };
    let forced = fold.batch.is_some() || forced_batch().is_some();
    let few = takes_few(entry, forced, batch, (ins.len(), outs.len()), bytes);
    let entry = if few { Entry::Few } else { entry };
    let name = reduce_name(d, fold.kind, batch, entry);
    let func = l.dev.function(&name)?;
    let done = l.done(&func, flag, work);
    for (i, chunk) in ins.chunks(MAXK).enumerate() {
        let p = Ptrs::<MAXK>::of(chunk);
        let k = chunk.len() as i32;
        let a = acc;
        // A chained stage writes its accumulator whole, whatever the form (`write_at`).
        let (o, m) = match i == last {
            true => (Ptrs::<MAXK>::of(outs), outs.len() as i32),
            false => (Ptrs::<MAXK>::of(&[acc]), 1),
        };
        let flags = vec | if i > 0 { F_ACC_IN } else { 0 } | if i < last { F_ACC_OUT } else { 0 };
        let done = if i == last { done } else { Done::NONE };
        // The carried form takes the block as one more parameter (no allocation per launch).
        let mut params = [std::ptr::null_mut(); 13];
        params[..12].copy_from_slice(&args!(p, k, a, o, m, n, part, flags, kind_i, f, fi, done));
        params[12] = l.carried.map_or(std::ptr::null_mut(), Carried::param);
        // The few-slot form takes the same parameters with FEW slots (one chunk: no chain).
        let (p_few, o_few) = (Ptrs::<FEW>::of(chunk), Ptrs::<FEW>::of(outs));
        if few {
            [params[0], params[3]] = args!(p_few, o_few);
        }
        let count = 12 + usize::from(l.carried.is_some());
        // SAFETY: as the caller guarantees; the accumulator holds `n` compute-type values and is
        // freed (stream-ordered) after these launches; `Ptrs` is `struct PtrsIn` and `struct
        // PtrsOut` of the form's slots; `done` is none or a flag's slot (pinned, mapped at its
        // address, never freed) and the stream's block counter (device memory the device keeps);
        // the carried block (`struct Carried`) is copied by the launch.
        unsafe { l.launch(&func, &name, work, &mut params[..count])? };
    }
    Ok(done.stored())
}
#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::super::super::device::CudaDevice;
    use super::super::super::memory::alloc_of;
    use super::super::super::tests::{OPS, close, devices, expected, random_vals, to_buffer, to_f64s};
    use super::*;
    use crate::backend::Buffer;
    use crate::backend::cuda::nvrtc::group_of;
    use crate::graph::ReduceOp;

    /// Every form of the reduce kernel (the loop, each batch of [`REDUCE_BATCHES`], and the
    /// library's choice, the few-slot form where [`takes_few`]) gives the loop's bits, and they
    /// match the f64 reference: every dtype and op, 1, 3, 8 and 17 inputs (17 chain two launches
    /// through the accumulator), 7, 1000 and 65 537 elements, the output aligned (the vector path)
    /// and at an odd element (the element path), every element.
    #[test]
    fn every_reduce_form_gives_the_loops_bits() {
        let Some(dev) = devices().into_iter().next() else { return };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        for dtype in DType::ALL {
            for op in OPS {
                for k in [1usize, 3, 8, 17] {
                    for n in [7usize, 1000, 65_537] {
                        let ctx = format!("seed {seed} {dtype} {op} {k} inputs of {n}");
                        forms_agree(&dev, dtype, op, &fold_inputs(dtype, op, k, n, &mut r), &ctx, &mut r);
                    }
                }
            }
        }
    }

    /// `k` random inputs of `n` for `op`. u8 values are capped so that no fold wraps (the f64
    /// reference does not): a product of more than five inputs takes 0 and 1, anything else at
    /// most 127 / k each (a pre-multiplied sum doubles the sum).
    fn fold_inputs(dtype: DType, op: ReduceOp, k: usize, n: usize, r: &mut StdRng) -> Vec<Vec<f64>> {
        let product = op == ReduceOp::Prod;
        let cap = match (dtype, product) {
            (DType::U8, true) if k > 5 => 1.0,
            (DType::U8, false) => (127 / k) as f64,
            _ => f64::INFINITY,
        };
        (0..k).map(|_| random_vals(dtype, n, product, r).into_iter().map(|v| v.min(cap)).collect()).collect()
    }

    /// [`every_reduce_form_gives_the_loops_bits`] for one set of inputs.
    fn forms_agree(
        dev: &CudaDevice,
        dtype: DType,
        op: ReduceOp,
        ins: &[Vec<f64>],
        ctx: &str,
        r: &mut StdRng,
    ) {
        let (k, n) = (ins.len(), ins[0].len());
        let (want, mag) = expected(op, dtype, ins);
        let inputs: Vec<Buffer> = ins.iter().map(|x| to_buffer(dev, dtype, x)).collect();
        inputs.iter().for_each(|b| b.wait().unwrap());
        let ptrs: Vec<u64> = inputs.iter().map(|b| alloc_of(b, "test").unwrap().ptr()).collect();
        let (kind, scale) = op.lower(k);
        let l = Launcher::new(dev, &dev.compute);
        for at in [0, 1] {
            let mut loop_bits: Option<Vec<u64>> = None;
            for batch in [Some(0)].into_iter().chain(REDUCE_BATCHES.map(Some)).chain([None]) {
                let out = to_buffer(dev, dtype, &random_vals(dtype, n + at, false, r));
                out.wait().unwrap();
                let o = alloc_of(&out, "test").unwrap().ptr() + (at * dtype.size()) as u64;
                let fold = Fold { dtype, kind, scale, batch };
                // SAFETY: every input holds `n` elements and `o` `n` more, on this device; the
                // stream is synchronized before any of them is dropped.
                unsafe { reduce(&l, fold, &ptrs, (&[o], Outs::Whole), n as u64, None) }.expect("reduce");
                dev.compute.synchronize().unwrap();
                let got = to_f64s(dev, &out)[at..].to_vec();
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        close(dtype, g, w, mag[i], k),
                        "{ctx}, batch {batch:?}, at {at}: [{i}] got {g:e} want {w:e}"
                    );
                }
                let bits: Vec<u64> = got.iter().map(|g| g.to_bits()).collect();
                match &loop_bits {
                    None => loop_bits = Some(bits),
                    Some(b) => {
                        assert!(*b == bits, "{ctx}, batch {batch:?}, at {at}: bits differ from the loop's")
                    }
                }
            }
        }
    }

    /// The few-slot form takes the loop's whole-output launches of at most [`FEW`] inputs and
    /// outputs and [`FEW_MAX_BYTES`] each, unforced; nothing else.
    #[test]
    fn the_few_slot_form_takes_small_unforced_loops() {
        let small = FEW_MAX_BYTES;
        assert!(takes_few(Entry::Whole, false, 0, (1, 1), 4096));
        assert!(takes_few(Entry::Whole, false, 0, (FEW, FEW), small));
        assert!(!takes_few(Entry::Whole, false, 0, (FEW + 1, 1), 4096), "more inputs than slots");
        assert!(!takes_few(Entry::Whole, false, 0, (2, FEW + 1), 4096), "more outputs than slots");
        assert!(!takes_few(Entry::Whole, false, 0, (2, 1), small + 1), "past its bytes");
        assert!(!takes_few(Entry::Whole, true, 0, (2, 1), 4096), "a forced form");
        assert!(!takes_few(Entry::Whole, false, 4, (2, 1), 4096), "a batch form");
        for entry in [Entry::Split, Entry::Carried, Entry::CarriedSmall] {
            assert!(!takes_few(entry, false, 0, (2, 1), 4096), "{entry:?}");
        }
        assert_eq!(reduce_name(DType::F32, ReduceKind::Max, 0, Entry::Few), "reducef_f32_max");
        assert_eq!(group_of("reducef_f32_max"), "reducef_f32");
    }

    /// A reduce whose outputs split its result ([`Outs::Split`]) writes each output its part of
    /// the whole result, bit for bit, and nothing past it: every dtype and op, 2 and 17 inputs
    /// (17 chain two launches, the last one split), 2, 3 and 16 outputs, parts of 7 elements
    /// (the element path) and of 64 (the vector path; 16-byte aligned for every dtype), the
    /// outputs aligned or each one element on (the element path), the last part whole or short.
    /// Every element against the f64 reference and the whole fold's bits; each output's element
    /// past its part keeps its value. On a CUDA device (skipped without).
    #[test]
    fn a_split_reduce_writes_each_output_its_part_of_the_whole() {
        let Some(dev) = devices().into_iter().next() else { return };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        for dtype in DType::ALL {
            for op in OPS {
                for (k, m, part) in [(2, 2, 64), (2, 3, 7), (17, 16, 64), (17, 3, 7), (2, 16, 7)] {
                    for (at, short) in [(0, 0), (1, 0), (0, part / 2)] {
                        let n = m * part - short;
                        let ins = fold_inputs(dtype, op, k, n, &mut r);
                        let ctx = format!("seed {seed} {dtype} {op} {k} inputs, {m} parts of {part} at {at}");
                        split_matches_whole(&dev, dtype, op, &ins, (m, part, at), &ctx, &mut r);
                    }
                }
            }
        }
    }

    /// [`a_split_reduce_writes_each_output_its_part_of_the_whole`] for one set of inputs: `m`
    /// outputs of `part` elements each, from element `at` of their buffers.
    fn split_matches_whole(
        dev: &CudaDevice,
        dtype: DType,
        op: ReduceOp,
        ins: &[Vec<f64>],
        (m, part, at): (usize, usize, usize),
        ctx: &str,
        r: &mut StdRng,
    ) {
        let (k, n) = (ins.len(), ins[0].len());
        let (want, mag) = expected(op, dtype, ins);
        let inputs: Vec<Buffer> = ins.iter().map(|x| to_buffer(dev, dtype, x)).collect();
        let ptrs: Vec<u64> = inputs.iter().map(|b| alloc_of(b, "test").unwrap().ptr()).collect();
        let fold = {
            let (kind, scale) = op.lower(k);
            Fold::new(dtype, kind, scale)
        };
        let whole = to_buffer(dev, dtype, &random_vals(dtype, n, false, r));
        let before: Vec<Vec<f64>> = (0..m).map(|_| random_vals(dtype, at + part + 1, false, r)).collect();
        let parts: Vec<Buffer> = before.iter().map(|v| to_buffer(dev, dtype, v)).collect();
        let at_of = |b: &Buffer| alloc_of(b, "test").unwrap().ptr() + (at * dtype.size()) as u64;
        let outs: Vec<u64> = parts.iter().map(at_of).collect();
        inputs.iter().chain(&parts).chain([&whole]).for_each(|b| b.wait().unwrap());
        let l = Launcher::new(dev, &dev.compute);
        // SAFETY: every input holds `n` elements and `whole` `n` more, each of `outs` `part` more
        // (`m` parts cover `n`), all on this device; the stream is synchronized before any of
        // them is dropped.
        unsafe {
            reduce(
                &l,
                fold,
                &ptrs,
                (&[alloc_of(&whole, "test").unwrap().ptr()], Outs::Whole),
                n as u64,
                None,
            )
            .expect("whole");
            reduce(&l, fold, &ptrs, (&outs, Outs::Split(part as u64)), n as u64, None).expect("split");
        }
        dev.compute.synchronize().unwrap();
        let whole = to_f64s(dev, &whole);
        for (w, (buf, old)) in parts.iter().zip(&before).enumerate() {
            let got = to_f64s(dev, buf);
            let len = part.min(n - w * part);
            for i in 0..len {
                let (g, e) = (got[at + i], w * part + i);
                assert!(
                    close(dtype, g, want[e], mag[e], k),
                    "{ctx}: part {w}[{i}] got {g:e} want {:e}",
                    want[e]
                );
                assert_eq!(
                    g.to_bits(),
                    whole[e].to_bits(),
                    "{ctx}: part {w}[{i}] differs from the whole fold"
                );
            }
            assert_eq!(&got[..at], &old[..at], "{ctx}: part {w} written before its start");
            assert_eq!(&got[at + len..], &old[at + len..], "{ctx}: part {w} written past its end");
        }
    }

    /// A launch's family follows its outputs and what it carries: whole or split outputs with
    /// nothing carried; the 256-byte carried form up to 256 bytes carried, the 4 KiB one past
    /// them; split outputs with carried inputs refused as an internal error.
    #[test]
    fn the_entry_follows_the_outputs_and_what_is_carried() {
        use super::super::CARRIED_SMALL_BYTES;
        assert_eq!(Entry::of(Outs::Whole, None).unwrap(), (0, Entry::Whole));
        assert_eq!(Entry::of(Outs::Split(12), None).unwrap(), (12, Entry::Split));
        let (mut small, mut large) = (Carried::new(), Carried::new());
        small.put(&[1; 100]).unwrap();
        small.put(&[2; CARRIED_SMALL_BYTES - 112]).unwrap();
        large.put(&[1; 100]).unwrap();
        large.put(&[2; CARRIED_SMALL_BYTES - 111]).unwrap();
        assert_eq!(Entry::of(Outs::Whole, Some(&small)).unwrap(), (0, Entry::CarriedSmall));
        assert_eq!(Entry::of(Outs::Whole, Some(&large)).unwrap(), (0, Entry::Carried));
        let split = Entry::of(Outs::Split(12), Some(&small));
        assert!(matches!(split, Err(Error::Internal { .. })), "{split:?}");
    }

    #[test]
    fn the_reduce_form_is_batched_from_its_threshold() {
        if std::env::var_os(REDUCE_BATCH_ENV).is_some() {
            println!("skipped: {REDUCE_BATCH_ENV} is set");
            return;
        }
        let min = REDUCE_BATCH_MIN_BYTES;
        for d in DType::ALL {
            let batch = reduce_batch_of(d);
            assert!(REDUCE_BATCHES.contains(&batch), "{d}");
            assert_eq!(reduce_batch(d, min), batch, "{d}");
            assert_eq!(reduce_batch(d, u64::MAX), batch, "{d}");
            assert_eq!(reduce_batch(d, min - 1), 0, "{d}");
            assert_eq!(reduce_batch(d, 0), 0, "{d}");
        }
        assert_eq!(reduce_name(DType::BF16, ReduceKind::Max, 0, Entry::Whole), "reduce_bf16_max");
        assert_eq!(reduce_name(DType::BF16, ReduceKind::Max, 0, Entry::Split), "reducep_bf16_max");
        assert_eq!(reduce_name(DType::F32, ReduceKind::Sum, 8, Entry::Whole), "reduce8_f32_sum");
        assert_eq!(reduce_name(DType::F32, ReduceKind::Sum, 8, Entry::Split), "reduce8p_f32_sum");
        assert_eq!(reduce_name(DType::I64, ReduceKind::Min, 0, Entry::Carried), "reducei_i64_min");
        let small = reduce_name(DType::I64, ReduceKind::Min, 0, Entry::CarriedSmall);
        assert_eq!(small, "reducei256_i64_min");
        // Every form's names come from the table, formatted once; a form outside it still
        // gets its name (which then names no kernel: the launch's error).
        for batch in std::iter::once(0).chain(REDUCE_BATCHES) {
            for (d, split) in DType::ALL.into_iter().flat_map(|d| [(d, false), (d, true)]) {
                let entry = if split { Entry::Split } else { Entry::Whole };
                let name = reduce_name(d, ReduceKind::Prod, batch, entry);
                assert!(matches!(name, Cow::Borrowed(_)), "{name}");
                assert_eq!(name.strip_suffix("_prod").map(|g| g.starts_with("reduce")), Some(true));
                assert_eq!(group_of(&name).ends_with(&format!("p_{}", d.name())), split, "{name}");
            }
        }
        for (d, entry) in DType::ALL.into_iter().flat_map(|d| [(d, Entry::Carried), (d, Entry::CarriedSmall)])
        {
            let name = reduce_name(d, ReduceKind::Max, 0, entry);
            assert!(matches!(name, Cow::Borrowed(_)), "{name}");
            let form = if entry == Entry::Carried { "i" } else { "i256" };
            assert_eq!(group_of(&name), format!("reduce{form}_{}", d.name()));
        }
        let odd = reduce_name(DType::U8, ReduceKind::Min, 3, Entry::Whole);
        assert!(matches!(odd, Cow::Owned(n) if n == "reduce3_u8_min"));
    }
}
