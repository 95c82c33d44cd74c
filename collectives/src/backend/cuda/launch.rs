//! Running a lowered [`Kernel`] on the compute stream (its inputs checked by the kernel contract,
//! `backend::kernel`, so no launch reads out of bounds): launches the kernels of `kernels.cu`
//! over device pointers; [`buffers`] takes the buffers (waits, peer copies, outputs, uses noted).
//!
//! Elementwise kernels take 16-byte vector paths when every pointer is 16-byte aligned. The
//! n-ary reduce folds up to [`MAXK`] inputs per launch in one pass; more inputs chain through an
//! accumulator in the compute type (f32 for f16/bf16), so rounding still happens once. Its forms
//! (input loads one after another, or in batches from 1 MiB per input) and the choice between
//! them are [`fold`]'s.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUdeviceptr;

use super::device::{CudaDevice, Func};
use super::driver;
use super::flag::{Flag, Number};
use crate::backend::{Kernel, OutSpec};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::{BinaryOp, Scale};

/// Inputs one reduce launch folds (`MAXK` in `kernels.cu`).
pub(crate) const MAXK: usize = 16;
/// Threads per block.
const BLOCK: u32 = 256;
/// Flags of the elementwise kernels (`kernels.cu`).
const F_ACC_IN: i32 = 1;
const F_ACC_OUT: i32 = 2;
const F_VEC: i32 = 4;

/// Inputs and outputs of the reduce kernel's few-slot form (`FEW` in `kernels.cu`).
pub(crate) const FEW: usize = 4;

/// A pointer array of one reduce launch of `S` slots ([`MAXK`], or [`FEW`] in the few-slot
/// form): its inputs (`struct PtrsIn<S>` in `kernels.cu`) or its outputs (`struct PtrsOut<S>`),
/// which have this one layout.
#[repr(C)]
#[derive(Clone, Copy)]
struct Ptrs<const S: usize> {
    p: [CUdeviceptr; S],
}

impl<const S: usize> Ptrs<S> {
    /// The first `S` of `ptrs`, the rest of the array zero.
    fn of(ptrs: &[CUdeviceptr]) -> Ptrs<S> {
        let mut p = Ptrs { p: [0; S] };
        let k = ptrs.len().min(S);
        p.p[..k].copy_from_slice(&ptrs[..k]);
        p
    }
}

/// Pointers to each argument's value, as `cuLaunchKernel` takes them.
macro_rules! args {
    ($($a:expr),* $(,)?) => { [$(&$a as *const _ as *mut ::std::ffi::c_void),*] };
}

mod buffers;
mod carried;
mod copy;
mod fold;
mod names;

pub(crate) use buffers::{compute, compute_from, compute_into, compute_to_all, issue_over, reduce_parts};
pub(super) use buffers::{on_own_gpu, peer_inputs, reaches};
pub(crate) use carried::Carried;
#[cfg(test)]
pub(crate) use carried::{CARRIED_BYTES, CARRIED_SMALL_BYTES};
use copy::copy2d;
pub(crate) use copy::{SEGS_WIDE, Seg, copy_segments, copy_segments_flagged};
pub(crate) use fold::REDUCE_BATCHES;
pub(super) use fold::{Fold, Outs, reduce};
use names::{Named, name_of};

/// A launch's completion flag as every kernel takes it (`struct Done` in `kernels.cu`): the
/// flag's slot (0: the kernel stores none), the stream's block counter
/// ([`CudaDevice::block_counter`]), the number to store, and its bits: [`DONE_OWN`] where every
/// output lies in this GPU's own memory (each block fences its writes for this GPU alone, the one
/// that stores the flag for the system; else each for the system), [`DONE_NUMBERED`] where the
/// number is the stream's next, kept on the device ([`super::flag`], numbered flags).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Done {
    flag: CUdeviceptr,
    ctr: CUdeviceptr,
    seq: u32,
    bits: u32,
}

/// [`Done`]'s bit: every output lies in this GPU's own memory (`DONE_OWN` in `kernels.cu`).
const DONE_OWN: u32 = 1;
/// [`Done`]'s bit: the stream numbers the flag (`DONE_NUMBERED` in `kernels.cu`).
const DONE_NUMBERED: u32 = 2;

impl Done {
    /// No flag: the kernel stores nothing.
    pub const NONE: Done = Done { flag: 0, ctr: 0, seq: 0, bits: 0 };

    /// Whether the kernel stores a flag.
    pub fn stored(&self) -> bool {
        self.flag != 0
    }
}

/// Launches on one device's stream.
pub(crate) struct Launcher<'a> {
    pub dev: &'a CudaDevice,
    pub stream: &'a Arc<CudaStream>,
    /// The stream's block counter, 0 where it has none ([`CudaDevice::block_counter`]).
    ctr: CUdeviceptr,
    /// Whether every output its kernels write lies in this GPU's own memory
    /// ([`Launcher::writing`]).
    own: bool,
    /// Small host inputs its reduce launches carry in their parameters ([`Launcher::carrying`]).
    carried: Option<&'a Carried>,
}

impl<'a> Launcher<'a> {
    /// Launches on `stream` of `dev`, whose kernels may write any memory they reach (the host's,
    /// another GPU's).
    pub fn new(dev: &'a CudaDevice, stream: &'a Arc<CudaStream>) -> Launcher<'a> {
        Launcher { dev, stream, ctr: dev.block_counter(stream), own: false, carried: None }
    }

    /// Launches on `stream` of `dev` whose flagged launches of more blocks count in `ctr` (the
    /// tests' own streams, which the device keeps no counter for).
    #[cfg(test)]
    pub fn with_counter(dev: &'a CudaDevice, stream: &'a Arc<CudaStream>, ctr: CUdeviceptr) -> Launcher<'a> {
        Launcher { dev, stream, ctr, own: false, carried: None }
    }

    /// This launcher, its reduce launches carrying `carried` in their parameters where it holds
    /// any input: an input pointer below [`carried::CARRIED_BYTES`] is then an offset into it.
    pub fn carrying(mut self, carried: Option<&'a Carried>) -> Launcher<'a> {
        self.carried = carried.filter(|c| c.is_used());
        self
    }

    /// This launcher, its kernels writing only into memory of `outputs` — where every one is a
    /// device of this GPU ([`on_own_gpu`]), a flagged kernel's blocks fence their writes for this
    /// GPU alone and only the block that stores the flag for the system (`signal_done` in
    /// `kernels.cu`): 0.3–0.9 µs off each flagged call on the H200 (`bench/gpu/31-block-flags`,
    /// run e).
    pub fn writing(mut self, outputs: impl IntoIterator<Item = Device>) -> Launcher<'a> {
        self.own = on_own_gpu(self.dev, outputs);
        self
    }

    /// The completion flag a launch of `f` over `work` items stores ([`Done`]): `flag` where the
    /// launch runs as one block, or as more on a stream with a block counter; else none.
    pub fn done(&self, f: &Func, flag: Option<&Flag>, work: u64) -> Done {
        let counted = work <= f.one_block || self.ctr != 0;
        let Some(flag) = flag.filter(|_| work > 0 && counted) else { return Done::NONE };
        let own = if self.own { DONE_OWN } else { 0 };
        match flag.hand_out(self.ctr) {
            Some(Number::Given(seq)) => Done { flag: flag.addr(), ctr: self.ctr, seq, bits: own },
            Some(Number::Streams) => {
                Done { flag: flag.addr(), ctr: self.ctr, seq: 0, bits: own | DONE_NUMBERED }
            }
            None => Done::NONE,
        }
    }

    /// Launches `f` (the kernel `name`, from [`CudaDevice::function`]) over `work` items
    /// (grid-stride, so any grid covers them): as one block of `work` threads (whole warps) where
    /// `f` runs that many in one ([`Func::one_block`]), else in blocks of [`BLOCK`], at most eight
    /// per multiprocessor. Through the stream's graph of `f` where graph launches are on
    /// ([`super::relaunch`]), else directly.
    ///
    /// # Safety
    /// `params` must match the kernel's parameters, and every pointer in them must be valid for
    /// what the kernel reads or writes until the launch has run.
    pub unsafe fn launch(&self, f: &Func, name: &str, work: u64, params: &mut [*mut c_void]) -> Result<()> {
        if work == 0 {
            return Ok(());
        }
        crate::failpoint::hit(self.dev.device, "cuda kernel launch")?;
        let cap = (self.dev.sms as u64) * 8;
        let (grid, block) = match work <= f.one_block {
            true => (1, work.div_ceil(32) * 32),
            false => (work.div_ceil(BLOCK as u64).clamp(1, cap), BLOCK as u64),
        };
        self.dev.bind()?;
        let (func, dims, stream) = (f.f.cu_function(), (grid as u32, block as u32), self.stream.cu_stream());
        // SAFETY: as the caller guarantees; the function is loaded in this (bound) context, and
        // `block` is within what it runs in one block.
        unsafe {
            match self.dev.graphs.launch(func, dims, stream, params) {
                true => Ok(()),
                false => driver::launch(func, dims.0, dims.1, stream, params),
            }
        }
        .map_err(|e| {
            crate::error::Error::driver(self.dev.device, format!("launch {name}"), driver::describe(e))
        })
    }
}

fn op_code(op: BinaryOp) -> i32 {
    match op {
        BinaryOp::Add => 0,
        BinaryOp::Sub => 1,
        BinaryOp::Mul => 2,
        BinaryOp::Div => 3,
        BinaryOp::Max => 4,
        BinaryOp::Min => 5,
    }
}

/// `(kind, float factor, integer factor)` as the kernels take a scale.
fn scale_args(s: Option<Scale>) -> (i32, f64, i64) {
    match s {
        None => (0, 0.0, 0),
        Some(Scale::Mul(f)) => (1, f, f as i64),
        Some(Scale::Div(f)) => (2, f, f as i64),
    }
}

fn aligned(ptrs: &[CUdeviceptr]) -> bool {
    ptrs.iter().all(|p| p % 16 == 0)
}

/// Elements per 16-byte vector.
fn lanes(d: DType) -> u64 {
    (16 / d.size()) as u64
}

/// Launches `kernel` over input pointers `ins` (of `in_dtype`) into `o`, `out.len` elements, on
/// `l`'s stream; the caller has checked that every pointer holds what the kernel reads or writes.
/// Its last launch stores `flag` when done where it can ([`Launcher::done`]); returns whether it
/// does.
pub(super) fn run(
    l: &Launcher,
    kernel: &Kernel,
    ins: &[CUdeviceptr],
    in_dtype: DType,
    o: CUdeviceptr,
    out: OutSpec,
    flag: Option<&Flag>,
) -> Result<bool> {
    let (n, d) = (out.len as u64, out.dtype);
    // SAFETY (every arm): `check` verified each input holds what the kernel reads, `o` points at
    // `out.len` elements of `out.dtype` (`compute_into` checked its memory holds them), and all
    // stay alive until the compute stream has run (the caller notes the inputs' use).
    match kernel {
        Kernel::Reduce { kind, scale } => unsafe {
            reduce(l, Fold::new(d, *kind, *scale), ins, (&[o], Outs::Whole), n, flag)
        },
        Kernel::Concat { outer, .. } if outer * ins.len() <= SEGS_WIDE => {
            // Each input's row one contiguous placement, all in one launch.
            let segs = placements(kernel, ins, o, d).unwrap_or_default();
            unsafe { copy_segments_flagged(l, &segs, flag) }
        }
        Kernel::Binary(op) => unsafe { binary(l, d, op_code(*op), (ins[0], ins[1]), o, n, flag) },
        Kernel::Scale(s) => unsafe { scale(l, d, Some(*s), ins[0], o, n, flag) },
        Kernel::Cast if in_dtype == d => unsafe {
            copy2d(l, (ins[0], 0), (o, 0), (1, n * d.size() as u64), flag)
        },
        Kernel::Cast if n == 0 => Ok(false),
        Kernel::Cast => {
            let name = name_of(Named::Cast(in_dtype, d));
            let (f, done) = flagged(l, &name, flag, n)?;
            let (x, y) = (ins[0], o);
            unsafe { l.launch(&f, &name, n, &mut args!(x, y, n, done)) }.map(|()| done.stored())
        }
        Kernel::Slice { outer, in_mid, start, len, inner } => {
            let sz = (inner * d.size()) as u64;
            let (rows, w) = (*outer as u64, *len as u64 * sz);
            let src = (ins[0] + *start as u64 * sz, *in_mid as u64 * sz);
            unsafe { copy2d(l, src, (o, w), (rows, w), flag) }
        }
        Kernel::Concat { outer, mids, inner } => {
            let sz = (inner * d.size()) as u64;
            let row = mids.iter().sum::<usize>() as u64 * sz;
            let (mut at, mut flagged) = (0, false);
            for (k, (&src, &m)) in ins.iter().zip(mids).enumerate() {
                let w = m as u64 * sz;
                let flag = flag.filter(|_| k + 1 == ins.len());
                flagged = unsafe { copy2d(l, (src, w), (o + at, row), (*outer as u64, w), flag)? };
                at += w;
            }
            Ok(flagged)
        }
    }
}

/// The contiguous copies that are kernel `kernel`'s result in `o`: a concat (each input's row r
/// one range of the output's row r, rows in turn); `None` for any other kernel.
fn placements(kernel: &Kernel, ins: &[CUdeviceptr], o: CUdeviceptr, d: DType) -> Option<Vec<Seg>> {
    let Kernel::Concat { outer, mids, inner } = kernel else { return None };
    let sz = (inner * d.size()) as u64;
    let mut at = o;
    let row = |r: u64| ins.iter().zip(mids).map(move |(&src, &m)| (src + r * m as u64 * sz, m as u64 * sz));
    let segs = (0..*outer as u64).flat_map(row).map(|(src, w)| {
        at += w;
        (src, at - w, w)
    });
    Some(segs.collect())
}

/// [`run`] with the result written to each of `outs` (at least one): a reduce writes every one in
/// its one pass (up to [`MAXK`]), a copy (a cast to the same dtype) copies the input to every one
/// ([`SEGS_WIDE`] a launch), a concat places its inputs' rows in every one where that is one
/// launch ([`placements`], at most [`SEGS_WIDE`] in all); any other kernel, or a reduce's outputs
/// past [`MAXK`], are copied from `outs[0]` by one more launch. Each pointer holds `out.len`
/// elements of `out.dtype` on this device or a peer's that this device writes in place, as the
/// caller has checked. The last launch stores `flag` when done where it can
/// ([`Launcher::done`]); returns whether it does.
pub(super) fn run_to_all(
    l: &Launcher,
    kernel: &Kernel,
    ins: &[CUdeviceptr],
    in_dtype: DType,
    outs: &[CUdeviceptr],
    out: OutSpec,
    flag: Option<&Flag>,
) -> Result<bool> {
    let Some((&first, _)) = outs.split_first() else { return Ok(false) };
    let bytes = (out.len * out.dtype.size()) as u64;
    // The flag goes to the last launch: the kernel's where it writes every output, else the copy.
    let (written, flagged) = match kernel {
        Kernel::Cast if in_dtype == out.dtype => {
            // A copy: every output straight from the input, up to SEGS_WIDE a launch.
            let segs: Vec<Seg> = outs.iter().map(|&o| (ins[0], o, bytes)).collect();
            // SAFETY: as `run` guarantees for the input and every output; outputs are distinct.
            return unsafe { copy_segments_flagged(l, &segs, flag) };
        }
        Kernel::Concat { outer, .. } if outer * ins.len() * outs.len() <= SEGS_WIDE => {
            let each = outs.iter().filter_map(|&o| placements(kernel, ins, o, out.dtype));
            let segs: Vec<Seg> = each.flatten().collect();
            // SAFETY: as `run` guarantees for the inputs and every output; outputs are distinct.
            return unsafe { copy_segments_flagged(l, &segs, flag) };
        }
        Kernel::Reduce { kind, scale } => {
            let now = &outs[..outs.len().min(MAXK)];
            let flag = flag.filter(|_| now.len() == outs.len());
            // SAFETY: as `run` guarantees, for every one of `now`.
            let flagged = unsafe {
                reduce(l, Fold::new(out.dtype, *kind, *scale), ins, (now, Outs::Whole), out.len as u64, flag)?
            };
            (now.len(), flagged)
        }
        _ => (1, run(l, kernel, ins, in_dtype, first, out, flag.filter(|_| outs.len() == 1))?),
    };
    let rest: Vec<Seg> = outs[written..].iter().map(|&o| (first, o, bytes)).collect();
    let flag = flag.filter(|_| !flagged && !rest.is_empty());
    // SAFETY: `first` holds the result once the launch above has run (same stream), and each of
    // the rest holds as many bytes, as the caller guarantees; outputs are distinct allocations.
    Ok(flagged | unsafe { copy_segments_flagged(l, &rest, flag) }?)
}

/// `o = a op b`; stores `flag` where it can ([`Launcher::done`]; returns whether).
unsafe fn binary(
    l: &Launcher,
    d: DType,
    op: i32,
    (a, b): (u64, u64),
    o: u64,
    n: u64,
    flag: Option<&Flag>,
) -> Result<bool> {
    let Some((flags, work)) = vector_work(&[a, b, o], d, n) else { return Ok(false) };
    let name = name_of(Named::Binary(d));
    let (f, done) = flagged(l, &name, flag, work)?;
    // SAFETY: as `run` guarantees; `done` is none or a flag's slot (pinned, mapped, never freed)
    // and the stream's block counter (device memory the device keeps).
    unsafe { l.launch(&f, &name, work, &mut args!(op, a, b, o, n, flags, done)) }.map(|()| done.stored())
}

/// `o = scale(x)`; stores `flag` where it can ([`Launcher::done`]; returns whether).
unsafe fn scale(
    l: &Launcher,
    d: DType,
    s: Option<Scale>,
    x: u64,
    o: u64,
    n: u64,
    flag: Option<&Flag>,
) -> Result<bool> {
    let Some((flags, work)) = vector_work(&[x, o], d, n) else { return Ok(false) };
    let (kind, f, fi) = scale_args(s);
    let name = name_of(Named::Scale(d));
    let (func, done) = flagged(l, &name, flag, work)?;
    // SAFETY: as `run` guarantees; `done` as in `binary`.
    unsafe { l.launch(&func, &name, work, &mut args!(x, o, n, flags, kind, f, fi, done)) }
        .map(|()| done.stored())
}

/// The vector flag and the work items of an elementwise launch over `n` elements of `d` through
/// `ptrs`: a thread per 16 bytes where every pointer is 16-byte aligned, else one per element.
/// `None` for no elements (no launch, and no kernel to load for it).
fn vector_work(ptrs: &[u64], d: DType, n: u64) -> Option<(i32, u64)> {
    match (n, aligned(ptrs)) {
        (0, _) => None,
        (_, true) => Some((F_VEC, n.div_ceil(lanes(d)))),
        (_, false) => Some((0, n)),
    }
}

/// The kernel `name` and the completion flag its launch over `work` items stores
/// ([`Launcher::done`]).
fn flagged(l: &Launcher, name: &str, flag: Option<&Flag>, work: u64) -> Result<(Func, Done)> {
    let f = l.dev.function(name)?;
    let done = l.done(&f, flag, work);
    Ok((f, done))
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::super::tests::{OPS, as_dtype, close, devices, expected, random_vals, to_buffer, to_f64s};
    use super::*;
    use crate::backend::Buffer;
    use crate::backend::cuda::memory::{DevAlloc, alloc_of};
    use crate::graph::{BinaryOp, ReduceOp};

    /// Outputs of one launch: more than [`MAXK`], so the last two are copied after the pass.
    const OUTS: usize = MAXK + 2;

    /// Outputs count as the GPU's own where every one is a logical device of the launching
    /// device's GPU (by this process's mapping); a host device, or a CUDA device of another GPU
    /// or none, is not; and a launcher fences for its GPU alone only when told so. On a CUDA
    /// device (skipped without).
    #[test]
    fn outputs_are_the_gpus_own_only_on_its_logical_devices() {
        let Some(dev) = devices().into_iter().next() else {
            return;
        };
        assert!(on_own_gpu(&dev, [dev.device]));
        assert!(!on_own_gpu(&dev, [dev.device, Device::Cpu(0)]), "a host output");
        let n = super::super::virt::count();
        assert!(!on_own_gpu(&dev, [Device::Cuda(n)]), "an ordinal past the mapping");
        for i in 0..n {
            let mine = super::super::virt::gpu_of(Device::Cuda(i)) == Some(dev.physical);
            assert_eq!(on_own_gpu(&dev, [dev.device, Device::Cuda(i)]), mine, "cuda:{i}");
        }
        assert!(!Launcher::new(&dev, &dev.compute).own, "a plain launcher fences for the system");
        assert!(Launcher::new(&dev, &dev.compute).writing([dev.device]).own);
        assert!(!Launcher::new(&dev, &dev.compute).writing([Device::Cpu(0)]).own);
    }

    /// A reduce writes its result into every output in its one pass ([`MAXK`] of them; the rest
    /// are copied after it), every other output at an odd element (so the vector path is off for
    /// that launch): every op and dtype at 1, 7 and 65537 elements, every element of every
    /// output against the f64 reference, and each output's element before its range untouched.
    /// A copy (a cast to the same dtype) copies its input into every output; a binary kernel (an
    /// add: small values, so no integer wraps) writes the first output and copies it to the others.
    #[test]
    fn a_reduce_writes_every_output_in_its_pass_the_rest_are_copied() {
        let Some(dev) = devices().into_iter().next() else { return };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        for dtype in DType::ALL {
            for op in OPS {
                for n in [1usize, 7, 65_537] {
                    let ctx = format!("seed {seed} {dtype} {op} {n} elements");
                    let ins: Vec<Vec<f64>> =
                        (0..3).map(|_| random_vals(dtype, n, op == ReduceOp::Prod, &mut r)).collect();
                    let (want, mag) = expected(op, dtype, &ins);
                    let (kind, scale) = op.lower(3);
                    let got = to_all(&dev, &Kernel::Reduce { kind, scale }, dtype, &ins, n, &mut r);
                    for (j, out) in got.iter().enumerate() {
                        for (i, (&g, &w)) in out.iter().zip(&want).enumerate() {
                            assert!(
                                close(dtype, g, w, mag[i], 3),
                                "{ctx}: output {j} [{i}] got {g:e} want {w:e}"
                            );
                        }
                    }
                }
            }
            let ins: Vec<Vec<f64>> = (0..2).map(|_| random_vals(dtype, 65_537, false, &mut r)).collect();
            let copies = to_all(&dev, &Kernel::Cast, dtype, &ins[..1], 65_537, &mut r);
            assert!(copies.iter().all(|c| *c == ins[0]), "seed {seed} {dtype}: a copy into every output");
            let got = to_all(&dev, &Kernel::Binary(BinaryOp::Add), dtype, &ins, 65_537, &mut r);
            for (j, out) in got.iter().enumerate() {
                for (i, &g) in out.iter().enumerate() {
                    let (a, b) = (ins[0][i], ins[1][i]);
                    let ok = close(dtype, g, as_dtype(dtype, a + b), a.abs() + b.abs(), 2);
                    assert!(ok, "seed {seed} {dtype}: binary, output {j} [{i}] got {g:e} want {:e}", a + b);
                }
            }
        }
    }

    /// `kernel` over `ins` (each `n` long, uploaded) into [`OUTS`] outputs by [`compute_to_all`];
    /// each output's values. Every odd output starts at element 1 of its allocation, whose
    /// element 0 (a random value) must be untouched.
    fn to_all(
        dev: &CudaDevice,
        kernel: &Kernel,
        dtype: DType,
        ins: &[Vec<f64>],
        n: usize,
        r: &mut StdRng,
    ) -> Vec<Vec<f64>> {
        let inputs: Vec<Buffer> = ins.iter().map(|x| to_buffer(dev, dtype, x)).collect();
        let guards: Vec<f64> = random_vals(dtype, OUTS, false, r);
        let outs: Vec<Buffer> = (0..OUTS)
            .map(|j| {
                let at = j % 2;
                to_buffer(dev, dtype, &vec![guards[j]; n + at])
            })
            .collect();
        let dsts: Vec<(&DevAlloc, usize)> =
            outs.iter().enumerate().map(|(j, b)| (&**alloc_of(b, "test").unwrap(), j % 2)).collect();
        for b in &outs {
            b.wait().unwrap();
        }
        let refs: Vec<&Buffer> = inputs.iter().collect();
        let done = compute_to_all(dev, kernel, &refs, 0, &dsts, OutSpec { dtype, len: n }).expect("launch");
        done.synchronize().unwrap();
        outs.iter()
            .enumerate()
            .map(|(j, b)| {
                let all = to_f64s(dev, b);
                let at = j % 2;
                if at == 1 {
                    assert_eq!(all[0], guards[j], "output {j}: the element before its range");
                }
                all[at..].to_vec()
            })
            .collect()
    }
}
