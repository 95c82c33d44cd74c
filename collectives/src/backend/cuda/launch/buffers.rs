//! Kernels over buffers: the entry points that take [`Buffer`]s — each input read in place where
//! the launching device reaches it (copied over first where not), the compute stream waiting for
//! it — allocate or take the outputs, issue the launches with a completion flag, and note every
//! buffer's use against the event that completes them.

use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use smallvec::SmallVec;

use super::{Fold, Launcher, MAXK, Outs, reduce, run_to_all};
use crate::backend::cuda::device::CudaDevice;
use crate::backend::cuda::event::issue_flagged;
use crate::backend::cuda::flag::Flag;
use crate::backend::cuda::memory::{DevAlloc, Event, alloc_of, await_on, device_buffer};
use crate::backend::{Buffer, Kernel, OutSpec};
use crate::device::Device;
use crate::error::Result;

/// The inputs or outputs of one launch, inline up to eight: a call's issue is on its critical
/// path, and heap allocations (`malloc` and `free`) took about 6 % of a 4 KiB `local_reduce`'s
/// host time issued with 8 in flight (`bench/gpu/59-reduce-stack`, run a's profile).
pub(in crate::backend::cuda) type Inline<T> = SmallVec<[T; 8]>;

/// Runs `kernel` on `inputs` (on `dev` or on other CUDA devices, read in place) into a new buffer
/// shaped by `out`.
pub(crate) fn compute(dev: &CudaDevice, kernel: &Kernel, inputs: &[&Buffer], out: OutSpec) -> Result<Buffer> {
    compute_from(dev, kernel, inputs, 0, out)
}

/// [`compute`] with every input read from element `start` on (a window of each input: the part of
/// a native reduce_scatter a member folds). The caller has checked that every input holds
/// `start` plus what the kernel reads.
pub(crate) fn compute_from(
    dev: &CudaDevice,
    kernel: &Kernel,
    inputs: &[&Buffer],
    start: usize,
    out: OutSpec,
) -> Result<Buffer> {
    let dst = dev.alloc(out.len * out.dtype.size(), &dev.compute)?;
    let event = compute_into(dev, kernel, inputs, start, (&dst, 0), out)?;
    Ok(device_buffer(out.dtype, out.len, dst, event, &dev.compute))
}

/// [`compute_from`] into `dst` from element `at` on (`out.len` elements of `dst`'s memory, which
/// lives on `dev`), on the compute stream; returns the event that completes it. The part of a
/// two-shot all_reduce a member folds goes straight into its place in the member's output.
pub(crate) fn compute_into(
    dev: &CudaDevice,
    kernel: &Kernel,
    inputs: &[&Buffer],
    start: usize,
    (dst, at): (&DevAlloc, usize),
    out: OutSpec,
) -> Result<Arc<Event>> {
    if dst.device() != dev.device {
        let what = format!("an output on {}", dst.device());
        return Err(crate::error::Error::internal(
            format!("{} kernel on {}", kernel.name(), dev.device),
            what,
        ));
    }
    compute_to_all(dev, kernel, inputs, start, &[(dst, at)], out)
}

/// [`compute_into`] with the result written into each of `dsts` (an allocation and the element
/// its range starts at), on `dev`'s compute stream; each lives on `dev` or on a CUDA device whose
/// memory `dev` writes in place ([`reaches`]), as the caller has checked. A reduce writes every
/// one in its pass; other kernels write the first and copy it to the rest. Each destination
/// notes the use, so it is not freed or reused before the kernel has run.
pub(crate) fn compute_to_all(
    dev: &CudaDevice,
    kernel: &Kernel,
    inputs: &[&Buffer],
    start: usize,
    dsts: &[(&DevAlloc, usize)],
    out: OutSpec,
) -> Result<Arc<Event>> {
    check_room(dev, kernel, dsts.iter().copied(), out)?;
    let size = out.dtype.size();
    let in_dtype = inputs.first().map_or(out.dtype, |b| b.dtype);
    let skip = (start * in_dtype.size()) as u64;
    let outs: Inline<CUdeviceptr> = dsts.iter().map(|&(d, at)| d.ptr() + (at * size) as u64).collect();
    let written: Inline<&DevAlloc> = dsts.iter().map(|&(d, _)| d).collect();
    issue_over(dev, inputs, &written, |l, ins, flag| {
        let ptrs: Inline<CUdeviceptr> = ins.iter().map(|p| p + skip).collect();
        run_to_all(l, kernel, &ptrs, in_dtype, &outs, out, flag)
    })
}

/// The reduce `fold` over `inputs` with its result split among `dsts` in its one pass, on `dev`'s
/// compute stream: `dsts[w]` gets elements `[w * out.len, (w + 1) * out.len)` — a star
/// reduce_scatter's parts, each written where its member keeps it. Each of `dsts` (1 to [`MAXK`],
/// each holding `out.len` elements: both checked here) lives on `dev` or a CUDA device whose
/// memory `dev` writes in place ([`reaches`]), as the caller has checked, with every input
/// holding `dsts.len()` parts. Returns the event that completes the launch; each destination
/// notes the use.
pub(crate) fn reduce_parts(
    dev: &CudaDevice,
    fold: &Kernel,
    inputs: &[&Buffer],
    dsts: &[&DevAlloc],
    out: OutSpec,
) -> Result<Arc<Event>> {
    let what =
        |why: String| crate::error::Error::internal(format!("{} kernel on {}", fold.name(), dev.device), why);
    let Kernel::Reduce { kind, scale } = fold else { return Err(what("a split result of no reduce".into())) };
    if dsts.is_empty() || dsts.len() > MAXK {
        return Err(what(format!("its result split among {} outputs (1 to {MAXK})", dsts.len())));
    }
    check_room(dev, fold, dsts.iter().map(|&d| (d, 0)), out)?;
    let outs: Vec<CUdeviceptr> = dsts.iter().map(|d| d.ptr()).collect();
    let (fold, n) = (Fold::new(out.dtype, *kind, *scale), (out.len * dsts.len()) as u64);
    issue_over(dev, inputs, dsts, |l, ins, flag| {
        // SAFETY: the caller checked that every input holds `n` elements, read in place on this
        // device; each output holds its part (checked above) in memory this stream writes; the
        // outputs are distinct allocations, and all note the use.
        unsafe { reduce(l, fold, ins, (&outs, Outs::Split(out.len as u64)), n, flag) }
    })
}

/// Whether each of `dsts` (an allocation and the element its range starts at) holds `out.len`
/// elements of `out.dtype` from there: an internal error naming `kernel` where one does not.
fn check_room<'a>(
    dev: &CudaDevice,
    kernel: &Kernel,
    dsts: impl Iterator<Item = (&'a DevAlloc, usize)>,
    out: OutSpec,
) -> Result<()> {
    for (dst, at) in dsts {
        let end = at.checked_add(out.len).and_then(|e| e.checked_mul(out.dtype.size()));
        if end.is_none_or(|e| e > dst.bytes()) {
            let what =
                format!("elements {at}.. ({} of them) of {} bytes on {}", out.len, dst.bytes(), dst.device());
            return Err(crate::error::Error::internal(
                format!("{} kernel on {}", kernel.name(), dev.device),
                what,
            ));
        }
    }
    Ok(())
}

/// Issues `work` on `dev`'s compute stream over `inputs` — each read in place, or first copied to
/// `dev` where it cannot be ([`peer_inputs`]), the stream waiting for each — into `dsts`: `work`
/// gets the launcher (its fences reaching as far as `dsts`), each input's device pointer and the
/// flag to store, and says whether it stores it. Returns the event that completes the work; every
/// input and destination notes the use, so none is freed or reused before the work has run.
pub(crate) fn issue_over(
    dev: &CudaDevice,
    inputs: &[&Buffer],
    dsts: &[&DevAlloc],
    work: impl FnOnce(&Launcher, &[CUdeviceptr], Option<&Flag>) -> Result<bool>,
) -> Result<Arc<Event>> {
    let copied = peer_inputs(dev, inputs)?;
    let inputs: Inline<&Buffer> = inputs.iter().zip(&copied).map(|(&b, c)| c.as_ref().unwrap_or(b)).collect();
    let stream = &dev.compute;
    let allocs = inputs.iter().map(|b| alloc_of(b, "kernel")).collect::<Result<Inline<_>>>()?;
    for b in &inputs {
        await_on(stream, b, dev.device)?;
    }
    let l = Launcher::new(dev, stream).writing(dsts.iter().map(|d| d.device()));
    let ptrs: Inline<CUdeviceptr> = allocs.iter().map(|a| a.ptr()).collect();
    let issued = issue_flagged(dev, stream, |flag| work(&l, &ptrs, flag));
    let event = issued.inspect_err(|_| {
        // A launch issued before the failure may still write the outputs: let it finish before
        // they are dropped (nothing notes its use).
        let _ = stream.synchronize();
    })?;
    for a in allocs {
        a.note_use(stream, &event);
    }
    for d in dsts {
        d.note_use(stream, &event);
    }
    Ok(event)
}

/// Whether every one of `outputs` is a CUDA device of `dev`'s GPU — `dev` or another logical
/// device of it ([`super::virt`]) — whose memory is that GPU's own.
pub(in crate::backend::cuda) fn on_own_gpu(
    dev: &CudaDevice,
    outputs: impl IntoIterator<Item = Device>,
) -> bool {
    outputs.into_iter().all(|d| crate::backend::cuda::virt::gpu_of(d) == Some(dev.physical))
}

/// Whether `dev`'s kernels read and write `other`'s memory in place: its own, a logical device of
/// the same GPU, or a GPU with peer access (turned on here, once per pair).
pub(in crate::backend::cuda) fn reaches(dev: &CudaDevice, other: Device) -> Result<bool> {
    match other {
        Device::Cuda(n)
            if other != dev.device && crate::backend::cuda::virt::gpu_of(other) != Some(dev.physical) =>
        {
            crate::backend::cuda::device::enable_peer(dev, &*crate::backend::cuda::device::get(n)?)
        }
        Device::Cuda(_) => Ok(true),
        _ => Ok(false),
    }
}

/// For each input on another CUDA device that `dev` cannot read in place (two GPUs without peer
/// access), a copy of it on `dev`; `None` for inputs read as they are.
pub(in crate::backend::cuda) fn peer_inputs(
    dev: &CudaDevice,
    inputs: &[&Buffer],
) -> Result<Inline<Option<Buffer>>> {
    inputs
        .iter()
        .map(|b| match b.device {
            Device::Cuda(n) if !reaches(dev, b.device)? => {
                crate::backend::cuda::copy::peer(&*crate::backend::cuda::device::get(n)?, dev, b).map(Some)
            }
            _ => Ok(None),
        })
        .collect()
}
