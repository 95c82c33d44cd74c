//! The ninth probe ([`super`]): a kernel launched from a CUDA graph (captured once, instantiated
//! once, launched per call) against the same kernel launched directly, each waited for by a
//! stream synchronize.

use std::ptr::null_mut;

use cudarc::driver::{result, sys};

use super::{N, time, two_inputs};
use crate::backend::Kernel;
use crate::backend::OutSpec;
use crate::backend::cuda::launch::{self, Launcher};
use crate::backend::cuda::memory::alloc_of;
use crate::backend::cuda::tests::devices;
use crate::backend::timing::row;
use crate::dtype::DType;
use crate::graph::ReduceKind;

/// Whether a CUDA graph's launch reaches the GPU sooner than a kernel's: the smallest kernel (a
/// 16-byte `copyseg`) and the 4 KiB reduce of two inputs, each launched directly and from a graph
/// holding that one launch, then a stream synchronize; and each launch's host time alone (back to
/// back). Rows in turn, twice.
#[test]
#[ignore = "a timing probe for the GPU machine"]
fn graph_launch_probe() {
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    let (a, b, out) = two_inputs(&dev);
    let stream = dev.compute.clone();
    let raw = stream.cu_stream();
    let l = Launcher::new(&dev, &stream);
    let ptrs = [alloc_of(&a, "p").unwrap().ptr(), alloc_of(&b, "p").unwrap().ptr()];
    let (kernel, spec) =
        (Kernel::Reduce { kind: ReduceKind::Sum, scale: None }, OutSpec { dtype: DType::F32, len: N });
    let seg = [(ptrs[0], out.ptr(), 16)];
    // SAFETY (both): every range lies in `a`, `b` or `out` (alive to the end), on this device.
    let reduce = || launch::run(&l, &kernel, &ptrs, DType::F32, out.ptr(), spec, None).map(drop).unwrap();
    let copy = || unsafe { launch::copy_segments(&l, &seg) }.unwrap();
    dev.bind().unwrap();
    // Launched once outside a capture, so the kernels are loaded before any graph holds them.
    copy();
    reduce();
    // SAFETY: the stream is alive.
    unsafe { result::stream::synchronize(raw).unwrap() };
    // SAFETY: the stream is alive and idle; each graph launches what its closure launched.
    let graphs = unsafe { [("the 16-byte copy", capture(raw, copy)), ("the reduce", capture(raw, reduce))] };
    for _ in 0..2 {
        for ((what, exec), direct) in graphs.iter().zip([&copy as &dyn Fn(), &reduce]) {
            // SAFETY: the stream and the graphs are alive.
            row(
                &format!("{what}: launch + stream synchronize"),
                time(|| unsafe {
                    direct();
                    result::stream::synchronize(raw).unwrap();
                }),
            );
            row(
                &format!("{what}: graph launch + stream synchronize"),
                time(|| unsafe {
                    sys::cuGraphLaunch(*exec, raw).result().unwrap();
                    result::stream::synchronize(raw).unwrap();
                }),
            );
            row(&format!("{what}: launch alone (host time)"), time(direct));
            // SAFETY: as above.
            row(
                &format!("{what}: graph launch alone (host time)"),
                time(|| unsafe {
                    sys::cuGraphLaunch(*exec, raw).result().unwrap();
                }),
            );
            // SAFETY: the stream is alive.
            unsafe { result::stream::synchronize(raw).unwrap() };
        }
    }
    for (_, exec) in graphs {
        // SAFETY: the stream is idle; nothing launches the graph again.
        unsafe { sys::cuGraphExecDestroy(exec).result().unwrap() };
    }
}

/// The launches `f` issues on `stream`, captured into a graph and instantiated.
///
/// # Safety
/// `stream` is a live stream of the bound context with no work in flight, and `f` only launches.
unsafe fn capture(stream: sys::CUstream, f: impl Fn()) -> sys::CUgraphExec {
    let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    let (mut graph, mut exec) = (null_mut(), null_mut());
    // SAFETY: as the caller guarantees; `graph` and `exec` are written by the driver.
    unsafe {
        sys::cuStreamBeginCapture_v2(stream, mode).result().unwrap();
        f();
        sys::cuStreamEndCapture(stream, &mut graph).result().unwrap();
        sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0).result().unwrap();
        sys::cuGraphDestroy(graph).result().unwrap();
    }
    exec
}
