//! Kernel launches through CUDA graphs: each stream keeps, for each kernel it runs, a graph of one
//! launch of it, instantiated once; a launch sets that graph's parameters and launches the graph.
//!
//! Why: a graph's launch reaches the GPU and comes back sooner than a kernel's. On an H200
//! (`bench/gpu/57-graph-launch`, runs a and b, `graph_launch_probe`: medians of 4000 calls in
//! four rounds), the 4 KiB reduce of two inputs and a stream synchronize took 9.9–11.0 µs
//! launched directly, 7.2–8.0 from a graph and 7.4–8.6 with the graph's parameters set first, as
//! here; the host's part alone 3.3–4.4 µs against 1.7–2.2 for the graph's launch. The smallest
//! kernel (a 16-byte copy) read alike: 9.0–10.6 against 6.8–8.0. The direct rows went through
//! the library's launcher and the graph rows called the driver alone, so the launcher's own host
//! work (choosing the kernel, filling its parameters) counts in the first only: what a call
//! gains this way is at most that difference.
//!
//! How: a graph is one stream's and one kernel's ([`Graphs`]). Launches of one graph run in
//! order, as a stream's launches do anyway, and setting its parameters changes only its later
//! launches: one in flight keeps those it was launched with. A driver without the graph entry
//! points ([`driver::graph_status`]), or a graph that does not instantiate, leaves that kernel's
//! launches direct.
//!
//! On by default (`COLLECTIVES_CUDA_GRAPH_LAUNCH=0` launches every kernel directly). In the
//! library, on another H200 (`bench/gpu/58-graph-launches`, 4 KiB, each row a median of 1000
//! calls, eleven rounds with graphs off and on in turn): `local_reduce` on `cuda:0` took
//! 10.1–12.9 µs launched directly and 8.8–10.6 through graphs (1.5 µs less, the median of the
//! rounds' differences); two virtual CUDA devices' all_reduce 11.0–14.1 and 10.5–12.2 (1.3 less).
//! Every GPU test binary passed there with graphs on.

use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys::{self, CUfunction, CUstream};
use cudarc::driver::{CudaContext, DriverError};
use parking_lot::Mutex;

use super::driver;

/// The switch that turns graph launches on (`1`, the default) or off (`0`).
const GRAPH_LAUNCH_ENV: &str = "COLLECTIVES_CUDA_GRAPH_LAUNCH";

/// Whether launches go through graphs where the switch is unset.
const GRAPH_LAUNCH_DEFAULT: bool = true;

/// Whether launches go through graphs: the switch, and the driver's entry points (cached).
fn enabled() -> bool {
    #[cfg(test)]
    if let Some(on) = forced() {
        return on;
    }
    static S: OnceLock<bool> = OnceLock::new();
    *S.get_or_init(|| {
        crate::knob::switch(GRAPH_LAUNCH_ENV, GRAPH_LAUNCH_DEFAULT) && driver::graph_status().is_ok()
    })
}

/// A probe's choice for the process: `Some(false)` direct launches, `Some(true)` graphs where the
/// driver has them, `None` as configured.
#[cfg(test)]
static FORCED: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Makes every launch direct (`Some(false)`) or through graphs (`Some(true)`), or as configured
/// (`None`), for the process (the probes).
#[cfg(test)]
pub(crate) fn force(on: Option<bool>) {
    FORCED.store(on.map_or(0, |on| 1 + on as u8), std::sync::atomic::Ordering::Relaxed);
}

#[cfg(test)]
fn forced() -> Option<bool> {
    match FORCED.load(std::sync::atomic::Ordering::Relaxed) {
        0 => None,
        f => Some(f == 2 && driver::graph_status().is_ok()),
    }
}

/// One launch of `f` as a graph's kernel node takes it: `grid` blocks of `block` threads,
/// `params` pointing at each argument's value (the driver copies the values).
fn node_params(
    f: CUfunction,
    grid: u32,
    block: u32,
    params: &mut [*mut c_void],
) -> sys::CUDA_KERNEL_NODE_PARAMS {
    // SAFETY: a C struct of handles, integers and pointers, valid all zero (no kernel handle:
    // `func` is launched; no context: the current one).
    let mut p: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
    (p.func, p.gridDimX, p.gridDimY, p.gridDimZ) = (f, grid, 1, 1);
    (p.blockDimX, p.blockDimY, p.blockDimZ) = (block, 1, 1);
    p.kernelParams = params.as_mut_ptr();
    p
}

/// A graph holding one kernel launch, and its instantiation.
struct KernelGraph {
    graph: sys::CUgraph,
    node: sys::CUgraphNode,
    exec: sys::CUgraphExec,
}

// SAFETY: driver handles, which any thread may use with their context current; every use goes
// through the lock of the [`Graphs`] holding them.
unsafe impl Send for KernelGraph {}

impl KernelGraph {
    /// A graph of the launch `p`, instantiated.
    ///
    /// # Safety
    /// The current context is the one `p`'s function belongs to.
    unsafe fn new(p: &sys::CUDA_KERNEL_NODE_PARAMS) -> Result<KernelGraph, DriverError> {
        let mut g = KernelGraph { graph: null_mut(), node: null_mut(), exec: null_mut() };
        // SAFETY: as the caller guarantees; the driver writes the handles, and `g`'s drop frees
        // those made where a later step fails.
        unsafe {
            sys::cuGraphCreate(&mut g.graph, 0).result()?;
            sys::cuGraphAddKernelNode_v2(&mut g.node, g.graph, null(), 0, p).result()?;
            sys::cuGraphInstantiateWithFlags(&mut g.exec, g.graph, 0).result()?;
        }
        Ok(g)
    }

    /// Launches the graph on `stream` as the launch `p`.
    ///
    /// # Safety
    /// As [`Graphs::launch`]; `p`'s function belongs to the graph's context, which is current.
    unsafe fn launch(&self, p: &sys::CUDA_KERNEL_NODE_PARAMS, stream: CUstream) -> Result<(), DriverError> {
        // SAFETY: as the caller guarantees; the handles are alive (`self`).
        unsafe {
            sys::cuGraphExecKernelNodeSetParams_v2(self.exec, self.node, p).result()?;
            sys::cuGraphLaunch(self.exec, stream).result()
        }
    }
}

impl Drop for KernelGraph {
    fn drop(&mut self) {
        // SAFETY: handles `new` made (null where it stopped early), used no more; a launch still
        // in flight is freed when it completes (the driver's promise for an executable graph).
        unsafe {
            if !self.exec.is_null() {
                let _ = sys::cuGraphExecDestroy(self.exec);
            }
            if !self.graph.is_null() {
                let _ = sys::cuGraphDestroy(self.graph);
            }
        }
    }
}

/// One device's graphs: for each stream and kernel, its graph, or `None` where that kernel's
/// graph did not instantiate (its launches stay direct).
pub(crate) struct Graphs {
    table: Mutex<HashMap<(usize, usize), Option<KernelGraph>>>,
    /// The context the graphs belong to, kept alive (and made current) until they are freed.
    ctx: Arc<CudaContext>,
    /// Launches made through a graph (the tests).
    #[cfg(test)]
    launched: std::sync::atomic::AtomicUsize,
}

impl Graphs {
    /// No graphs yet, for kernels of `ctx`.
    pub fn new(ctx: Arc<CudaContext>) -> Graphs {
        Graphs {
            table: Mutex::default(),
            ctx,
            #[cfg(test)]
            launched: Default::default(),
        }
    }

    /// Launches `f` over `grid` blocks of `block` threads on `stream` through its graph, making
    /// the graph on the kernel's first launch there; `false` where nothing was launched and the
    /// launch is the caller's to make directly: graphs are off, or this kernel's graph on this
    /// stream did not instantiate or failed to launch (its launches there are direct from then on).
    ///
    /// # Safety
    /// As a direct launch ([`driver::launch`]): `params` match `f`'s signature, every pointer in
    /// them stays valid until the kernel has run, and `f` belongs to the current context, this
    /// device's.
    pub unsafe fn launch(
        &self,
        f: CUfunction,
        (grid, block): (u32, u32),
        stream: CUstream,
        params: &mut [*mut c_void],
    ) -> bool {
        if !enabled() {
            return false;
        }
        let p = node_params(f, grid, block, params);
        let mut table = self.table.lock();
        // SAFETY (both): as the caller guarantees.
        let slot = table
            .entry((stream as usize, f as usize))
            .or_insert_with(|| unsafe { KernelGraph::new(&p) }.ok());
        let launched = slot.as_ref().is_some_and(|g| unsafe { g.launch(&p, stream) }.is_ok());
        if !launched {
            *slot = None;
        }
        #[cfg(test)]
        self.launched.fetch_add(launched as usize, std::sync::atomic::Ordering::Relaxed);
        launched
    }
}

impl Drop for Graphs {
    fn drop(&mut self) {
        // Freed with their context current; a context that cannot be bound frees them anyway.
        let _ = self.ctx.bind_to_thread();
        self.table.get_mut().clear();
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::backend::cuda::launch::{self, Launcher};
    use crate::backend::cuda::memory::alloc_of;
    use crate::backend::cuda::tests::{devices, download, upload};
    use crate::backend::{Kernel, OutSpec};
    use crate::dtype::DType;
    use crate::graph::ReduceKind;

    /// Reduces of fresh random inputs of many sizes (one block and grids of many), issued back to
    /// back through one kernel's graph with no wait between them, each with its own pointers and
    /// grid: every launch went through a graph, and every output element equals its f64 sum (each
    /// rounded to f32 once), so a launch in flight kept the parameters it was launched with;
    /// directly launched, likewise. On a CUDA device (skipped without).
    #[test]
    fn launches_in_flight_keep_their_own_parameters() {
        let Some(dev) = devices().into_iter().next() else {
            return;
        };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        for graphs in [true, false] {
            force(Some(graphs));
            let before = dev.graphs.launched.load(std::sync::atomic::Ordering::Relaxed);
            let mut runs = vec![];
            for n in [1usize, 7, 1000, 65537, 300_000, 3, 4096, 1 << 20, 5] {
                let (a, b): (Vec<f32>, Vec<f32>) =
                    (0..n).map(|_| (r.random_range(-1f32..1.0), r.random_range(-1f32..1.0))).unzip();
                let want: Vec<f64> = a.iter().zip(&b).map(|(x, y)| *x as f64 + *y as f64).collect();
                let (a, b, out) = (upload(&dev, a), upload(&dev, b), upload(&dev, vec![f32::NAN; n]));
                [&a, &b, &out].iter().for_each(|x| x.wait().unwrap());
                let ins = [alloc_of(&a, "t").unwrap().ptr(), alloc_of(&b, "t").unwrap().ptr()];
                let o = alloc_of(&out, "t").unwrap().ptr();
                let (kernel, spec) = (
                    Kernel::Reduce { kind: ReduceKind::Sum, scale: None },
                    OutSpec { dtype: DType::F32, len: n },
                );
                launch::run(&Launcher::new(&dev, &dev.compute), &kernel, &ins, DType::F32, o, spec, None)
                    .expect("launch");
                runs.push((a, b, out, want));
            }
            dev.compute.synchronize().unwrap();
            if graphs {
                let through = dev.graphs.launched.load(std::sync::atomic::Ordering::Relaxed) - before;
                assert!(through >= runs.len(), "{through} of {} launches went through a graph", runs.len());
            }
            for (_, _, out, want) in &runs {
                let got: Vec<f32> = download(&dev, out);
                let wrong = got.iter().zip(want).filter(|(g, w)| **g as f64 != (**w as f32) as f64).count();
                assert_eq!(got.len(), want.len());
                assert_eq!(wrong, 0, "seed {seed}, graphs {graphs}: {} elements, {wrong} wrong", want.len());
            }
        }
        force(None);
    }
}
