//! The eleventh probe ([`super`]): where a process's level lives. Run c of
//! `bench/gpu/66-pair-and-trims` found the driver's floor (a 4 KiB memset and a synchronize on the
//! library's stream) at 6.1–6.3 µs in some processes and 6.7–6.9 in others, every layer above it
//! moving with it. If it is the stream's, the library could choose its streams; if the context's,
//! it could not without leaving the primary context that other libraries share; if neither, it is
//! the process's. So the same memset is timed, in turn, with its wait: on the compute stream
//! (synchronized, and spun on with `cuStreamQuery`), on four new streams, on a stream of the
//! greatest priority, and on a stream of each of three new contexts (two scheduled as the driver
//! chooses, one told to spin). Every row first makes its context current, so each pays the same.
//! A last row copies the 4 KiB within the device instead. Run d (one H100, sixteen processes):
//! every memset row of a process within 0.34 µs of the others, the processes 5.86–6.82 µs apart —
//! the level is the process's; the copy 3.2–4.3 µs over the memset.

use cudarc::driver::result;
use cudarc::driver::sys::{self, CUcontext, CUctx_flags, CUresult, CUstream, CUstream_flags};

use super::{ITERS, N};
use crate::backend::cuda::tests::devices;
use crate::backend::timing::{in_turn, row};

/// How a row waits for its memset.
#[derive(Clone, Copy)]
enum Wait {
    /// `cuStreamSynchronize`, as the driver's floor in run c.
    Synchronize,
    /// `cuStreamQuery` until it stops answering "not ready".
    Query,
}

/// What a row asks of the driver on its stream.
#[derive(Clone, Copy)]
enum Work {
    /// Set the `N` f32s to zero (`cuMemsetD8Async`).
    Memset,
    /// Copy `N` f32s from this memory of the same context (`cuMemcpyDtoDAsync`).
    CopyFrom(sys::CUdeviceptr),
}

/// One row's place: a context, a stream of it, and `N` f32s of its memory.
#[derive(Clone, Copy)]
struct Place {
    ctx: CUcontext,
    stream: CUstream,
    dst: sys::CUdeviceptr,
}

impl Place {
    /// Makes the context current, does `work` on the stream, and waits for it.
    fn call(self, work: Work, wait: Wait) {
        // SAFETY: the context, stream and memory live until the probe's end (`Owned`'s drop);
        // a copy's source holds `N` f32s of the same context.
        unsafe {
            sys::cuCtxSetCurrent(self.ctx).result().unwrap();
            match work {
                Work::Memset => result::memset_d8_async(self.dst, 0, N * 4, self.stream).unwrap(),
                Work::CopyFrom(src) => result::memcpy_dtod_async(self.dst, src, N * 4, self.stream).unwrap(),
            }
            match wait {
                Wait::Synchronize => result::stream::synchronize(self.stream).unwrap(),
                Wait::Query => while !query_done(self.stream) {},
            }
        }
    }
}

/// Whether the stream's work is done (`cuStreamQuery`), any other answer than "not ready" a failure.
///
/// # Safety
/// `stream` must be alive.
unsafe fn query_done(stream: CUstream) -> bool {
    // SAFETY: the caller keeps the stream alive.
    match unsafe { sys::cuStreamQuery(stream) } {
        CUresult::CUDA_SUCCESS => true,
        CUresult::CUDA_ERROR_NOT_READY => false,
        e => panic!("cuStreamQuery: {e:?}"),
    }
}

/// What the probe made and must free: streams of the primary context, and contexts of its own
/// (each with its stream and memory), all destroyed on drop.
#[derive(Default)]
struct Owned {
    streams: Vec<(CUcontext, CUstream)>,
    places: Vec<Place>,
}

impl Owned {
    /// A new stream of `ctx` (current), of `priority`.
    fn stream(&mut self, ctx: CUcontext, priority: i32) -> CUstream {
        let mut s: CUstream = std::ptr::null_mut();
        let flags = CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        // SAFETY: `ctx` is current; the out-pointer is a valid local.
        unsafe { sys::cuStreamCreateWithPriority(&mut s, flags, priority) }.result().unwrap();
        self.streams.push((ctx, s));
        s
    }

    /// A new context of `device` created with `flags`, its stream and memory; the context is
    /// left current.
    fn context(&mut self, device: sys::CUdevice, flags: CUctx_flags) -> Place {
        let (mut ctx, mut dst): (CUcontext, sys::CUdeviceptr) = (std::ptr::null_mut(), 0);
        // SAFETY: the out-pointers are valid locals; the new context is made current by the call.
        unsafe {
            sys::cuCtxCreate_v2(&mut ctx, flags as u32, device).result().unwrap();
            sys::cuMemAlloc_v2(&mut dst, N * 4).result().unwrap();
        }
        let place = Place { ctx, stream: self.stream(ctx, 0), dst };
        self.places.push(place);
        place
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: each stream belongs to the context made current before it is destroyed; nothing
        // uses them after; each own context's memory is freed in it before the context goes.
        unsafe {
            for &(ctx, s) in &self.streams {
                sys::cuCtxSetCurrent(ctx);
                sys::cuStreamSynchronize(s);
                sys::cuStreamDestroy_v2(s);
            }
            for p in &self.places {
                sys::cuCtxSetCurrent(p.ctx);
                sys::cuMemFree_v2(p.dst);
                sys::cuCtxDestroy_v2(p.ctx);
            }
        }
    }
}

/// The rows: the compute stream twice (synchronized, queried), new streams, the greatest
/// priority's, three new contexts' (scheduled automatically, twice, and spinning); last, a 4 KiB
/// device-to-device copy on the compute stream instead of the memset (where a copy of one
/// device's memory stands against the smallest kernel: 7.0 / 7.8 µs with its wait in run c).
#[test]
#[ignore = "a timing probe for the GPU machine"]
fn stream_levels_probe() {
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    let (out, src) = (dev.alloc(N * 4, &dev.compute).unwrap(), dev.alloc(N * 4, &dev.compute).unwrap());
    dev.bind().unwrap();
    // SAFETY: the compute stream is alive; waiting orders the allocations before other streams.
    unsafe { result::stream::synchronize(dev.compute.cu_stream()).unwrap() };
    let primary = dev.ctx.cu_ctx();
    let (mut least, mut greatest) = (0, 0);
    // SAFETY: the primary context is current (bound above); the out-pointers are valid locals.
    unsafe { sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest) }.result().unwrap();
    let mut owned = Owned::default();
    let at = |stream| Place { ctx: primary, stream, dst: out.ptr() };
    let compute = at(dev.compute.cu_stream());
    let (sync, set) = (Wait::Synchronize, Work::Memset);
    let mut rows = vec![
        ("compute stream, synchronize".to_string(), compute, sync, set),
        ("compute stream, cuStreamQuery until done".to_string(), compute, Wait::Query, set),
    ];
    for i in 1..=4 {
        rows.push((format!("new stream {i}, synchronize"), at(owned.stream(primary, 0)), sync, set));
    }
    let high = at(owned.stream(primary, greatest));
    rows.push((format!("stream of priority {greatest} (least {least}), synchronize"), high, sync, set));
    let device = dev.ctx.cu_device();
    let auto = CUctx_flags::CU_CTX_SCHED_AUTO;
    for (i, flags) in [auto, auto, CUctx_flags::CU_CTX_SCHED_SPIN].into_iter().enumerate() {
        let what = format!("new context {} ({flags:?}), its stream, synchronize", i + 1);
        rows.push((what, owned.context(device, flags), sync, set));
    }
    let copy = Work::CopyFrom(src.ptr());
    rows.push(("compute stream, 4 KiB copy (not memset), synchronize".into(), compute, sync, copy));
    let mut calls: Vec<_> = rows.iter().map(|&(_, p, w, k)| move || p.call(k, w)).collect();
    let mut calls: Vec<&mut dyn FnMut()> = calls.iter_mut().map(|c| c as &mut dyn FnMut()).collect();
    for ((what, ..), t) in rows.iter().zip(in_turn(ITERS, &mut calls)) {
        row(what, t);
    }
    drop(owned);
    dev.bind().unwrap();
    drop((out, src));
}
