//! The ninth probe ([`super`]): a kernel launched from a CUDA graph (captured once, instantiated
//! once, launched per call) against the same kernel launched directly, each waited for by a
//! stream synchronize; and the graph launched after its kernel's parameters are set again (as a
//! library call with new pointers would).

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
/// holding that one launch, then a stream synchronize; the graph launched after its kernel node's
/// parameters are set (the same ones: what a call with new pointers would pay); and each launch's
/// host time alone (back to back). Rows in turn, twice.
#[test]
#[ignore = "a timing probe for the GPU machine"]
fn graph_launch_probe() {
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    // The direct rows launch directly, and a capture records the launches themselves.
    crate::backend::cuda::relaunch::force(Some(false));
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
        for ((what, (graph, exec)), direct) in graphs.iter().zip([&copy as &dyn Fn(), &reduce]) {
            // SAFETY: the graph is alive until the end.
            let (exec, node) = (*exec, unsafe { kernel_node(*graph) });
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
                    sys::cuGraphLaunch(exec, raw).result().unwrap();
                    result::stream::synchronize(raw).unwrap();
                }),
            );
            match node {
                // SAFETY: the node is the graph's, and its parameters' pointers live with it.
                Some((node, params)) => row(
                    &format!("{what}: parameters set + graph launch + stream synchronize"),
                    time(|| unsafe {
                        sys::cuGraphExecKernelNodeSetParams_v2(exec, node, &params).result().unwrap();
                        sys::cuGraphLaunch(exec, raw).result().unwrap();
                        result::stream::synchronize(raw).unwrap();
                    }),
                ),
                None => {
                    println!("probe: {what}: the graph is not one kernel node; no row with parameters set")
                }
            }
            row(&format!("{what}: launch alone (host time)"), time(direct));
            // SAFETY: as above.
            row(
                &format!("{what}: graph launch alone (host time)"),
                time(|| unsafe {
                    sys::cuGraphLaunch(exec, raw).result().unwrap();
                }),
            );
            // SAFETY: the stream is alive.
            unsafe { result::stream::synchronize(raw).unwrap() };
        }
    }
    for (_, (graph, exec)) in graphs {
        // SAFETY: the stream is idle; nothing launches the graph again.
        unsafe {
            sys::cuGraphExecDestroy(exec).result().unwrap();
            sys::cuGraphDestroy(graph).result().unwrap();
        }
    }
    crate::backend::cuda::relaunch::force(None);
}

/// The launches `f` issues on `stream`, captured into a graph, and the graph instantiated.
///
/// # Safety
/// `stream` is a live stream of the bound context with no work in flight, and `f` only launches.
unsafe fn capture(stream: sys::CUstream, f: impl Fn()) -> (sys::CUgraph, sys::CUgraphExec) {
    let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    let (mut graph, mut exec) = (null_mut(), null_mut());
    // SAFETY: as the caller guarantees; `graph` and `exec` are written by the driver.
    unsafe {
        sys::cuStreamBeginCapture_v2(stream, mode).result().unwrap();
        f();
        sys::cuStreamEndCapture(stream, &mut graph).result().unwrap();
        sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0).result().unwrap();
    }
    (graph, exec)
}

/// The node of `graph` and its parameters (whose argument pointers the graph owns), where the
/// graph holds one node and it is a kernel's.
///
/// # Safety
/// `graph` is alive; the parameters are read only while it lives.
unsafe fn kernel_node(graph: sys::CUgraph) -> Option<(sys::CUgraphNode, sys::CUDA_KERNEL_NODE_PARAMS)> {
    let (mut node, mut count) = (null_mut(), 0);
    // SAFETY: as the caller guarantees; the driver writes the count, then (asked for one) one
    // node, then the parameters of a kernel node.
    unsafe {
        sys::cuGraphGetNodes(graph, null_mut(), &mut count).result().ok()?;
        (count == 1).then_some(())?;
        sys::cuGraphGetNodes(graph, &mut node, &mut count).result().ok()?;
        let mut params = std::mem::zeroed();
        sys::cuGraphKernelNodeGetParams_v2(node, &mut params).result().ok()?;
        Some((node, params))
    }
}
