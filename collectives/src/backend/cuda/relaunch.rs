//! Kernel launches through CUDA graphs: each stream keeps, for each kernel it runs, graphs of one
//! launch of it, each instantiated once; a launch launches the graph that holds its parameters, or
//! sets them in one first.
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
//! launches: one in flight keeps those it was launched with. A stream keeps up to [`WAYS`]
//! graphs of a kernel ([`Ways`]); a launch whose parameters one of them holds already launches
//! that one as it is, any other sets them first. Setting them cost 0.20–0.53 µs of a 4 KiB
//! launch and its wait on an H100 (`bench/gpu/63-final-tree`, run b); a call's launches repeat
//! from one call to the next where its buffers are reused, and their completion flags are the
//! same every time on the compute stream, which numbers them itself ([`super::numbers`]). A
//! driver without the graph entry points ([`driver::graph_status`]), or a graph that does not
//! instantiate, leaves that kernel's launches direct.
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
use smallvec::SmallVec;

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
            self.launch_as_set(stream)
        }
    }

    /// Launches the graph on `stream` with the parameters it holds.
    ///
    /// # Safety
    /// As [`Graphs::launch`] for those parameters; the graph's context is current.
    unsafe fn launch_as_set(&self, stream: CUstream) -> Result<(), DriverError> {
        // SAFETY: as the caller guarantees; the handles are alive (`self`).
        unsafe { sys::cuGraphLaunch(self.exec, stream).result() }
    }
}

/// A launch's parameter values, laid end to end: what a graph holds, compared byte for byte.
type Values = SmallVec<[u8; 512]>;

/// Graphs a stream keeps of one kernel, at most this many: a call's launches repeat from one call
/// to the next where its buffers are reused, and two calls in turn (the buffers of one parked
/// while the other's are in use) already need two.
const WAYS: usize = 4;

/// Whether a launch found its parameters held by a graph already (none set).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Held {
    Yes,
    No,
}

/// One of a kernel's graphs on one stream, and the launch whose parameters it holds.
struct Way {
    graph: KernelGraph,
    /// Grid and block.
    dims: (u32, u32),
    values: Values,
}

/// A stream's graphs of one kernel ([`WAYS`] at most). A launch whose grid, block and parameter
/// values are one graph's launches that graph as it is; any other sets the parameters of the
/// graph made or set longest ago (or makes a graph while there are fewer). Without the sizes of
/// the kernel's parameters (`cuFuncGetParamInfo`, CUDA 12.4 on) there is one graph, whose
/// parameters every launch sets.
struct Ways {
    /// The size of each parameter, where the driver gives it.
    sizes: Option<Vec<usize>>,
    ways: Vec<Way>,
    /// The way the next launch that matches none sets, once there are [`WAYS`].
    next: usize,
}

impl Ways {
    /// No graphs yet, of kernel `f` taking `n` parameters.
    fn new(f: CUfunction, n: usize) -> Ways {
        Ways { sizes: param_sizes(f, n), ways: Vec::new(), next: 0 }
    }

    /// Launches `p` (`params` its parameters' values, `dims` its grid and block) on `stream`
    /// through one of these graphs.
    ///
    /// # Safety
    /// As [`Graphs::launch`].
    unsafe fn launch(
        &mut self,
        p: &sys::CUDA_KERNEL_NODE_PARAMS,
        params: &[*mut c_void],
        dims: (u32, u32),
        stream: CUstream,
    ) -> Result<Held, DriverError> {
        // SAFETY: `params` point at values of these sizes, as the caller guarantees.
        let values = self.sizes.as_deref().map(|sizes| unsafe { values_of(params, sizes) });
        let Some(values) = values else {
            return match self.ways.first() {
                // SAFETY (both): as the caller guarantees.
                Some(w) => unsafe { w.graph.launch(p, stream) }.map(|()| Held::No),
                None => self.make(p, dims, Values::new(), stream),
            };
        };
        if let Some(w) = self.ways.iter().find(|w| w.dims == dims && w.values == values) {
            // SAFETY: the graph holds this very launch; as the caller guarantees.
            return unsafe { w.graph.launch_as_set(stream) }.map(|()| Held::Yes);
        }
        if self.ways.len() < WAYS {
            return self.make(p, dims, values, stream);
        }
        let w = &mut self.ways[self.next];
        self.next = (self.next + 1) % WAYS;
        // SAFETY: as the caller guarantees.
        unsafe { w.graph.launch(p, stream) }?;
        (w.dims, w.values) = (dims, values);
        Ok(Held::No)
    }

    /// A new graph of the launch `p`, launched on `stream`.
    fn make(
        &mut self,
        p: &sys::CUDA_KERNEL_NODE_PARAMS,
        dims: (u32, u32),
        values: Values,
        stream: CUstream,
    ) -> Result<Held, DriverError> {
        // SAFETY (both): `Ways::launch`'s caller guarantees what `Graphs::launch`'s does.
        let graph = unsafe { KernelGraph::new(p) }?;
        unsafe { graph.launch_as_set(stream) }?;
        self.ways.push(Way { graph, dims, values });
        Ok(Held::No)
    }
}

/// The size of each of `f`'s first `n` parameters; `None` where the driver cannot say.
fn param_sizes(f: CUfunction, n: usize) -> Option<Vec<usize>> {
    driver::param_info_status().as_ref().ok()?;
    let size = |i: usize| {
        let (mut offset, mut size) = (0, 0);
        // SAFETY: libcuda has the entry point (checked above); `f` is a loaded kernel and both
        // are valid out pointers.
        let r = unsafe { sys::cuFuncGetParamInfo(f, i, &mut offset, &mut size) };
        (r == sys::CUresult::CUDA_SUCCESS && size > 0).then_some(size)
    };
    (0..n).map(size).collect()
}

/// The values `params` point at, of `sizes` bytes each, end to end.
///
/// # Safety
/// Each of `params` points at `sizes[i]` readable bytes.
unsafe fn values_of(params: &[*mut c_void], sizes: &[usize]) -> Values {
    let mut v = Values::new();
    for (&p, &size) in params.iter().zip(sizes) {
        // SAFETY: as the caller guarantees.
        v.extend_from_slice(unsafe { std::slice::from_raw_parts(p as *const u8, size) });
    }
    v
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

/// One device's graphs: for each stream and kernel, its graphs ([`Ways`]), or `None` where one
/// did not instantiate or launch (that kernel's launches there stay direct).
pub(crate) struct Graphs {
    table: Mutex<HashMap<(usize, usize), Option<Ways>>>,
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

    /// Launches `f` over `grid` blocks of `block` threads on `stream` through one of its graphs
    /// there ([`Ways`]), made where none holds the launch and fewer than [`WAYS`] are; `false`
    /// where nothing was launched and the launch is the caller's to make directly: graphs are
    /// off, or a graph of this kernel on this stream did not instantiate or failed to launch
    /// (its launches there are direct from then on).
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
        let slot =
            table.entry((stream as usize, f as usize)).or_insert_with(|| Some(Ways::new(f, params.len())));
        // SAFETY: as the caller guarantees.
        let launched =
            slot.as_mut().and_then(|w| unsafe { w.launch(&p, params, (grid, block), stream) }.ok());
        if launched.is_none() {
            *slot = None;
        }
        #[cfg(test)]
        self.launched.fetch_add(launched.is_some() as usize, std::sync::atomic::Ordering::Relaxed);
        launched.is_some()
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

    /// One kernel's launches through its graphs on a stream of the test's own ([`Ways`], so no
    /// other test's launches count): launched again with the same pointers, a launch is held (its
    /// graph launched as it is) and reads the fresh values written into its input just before;
    /// two outputs in turn are both held after their first launches; a cycle of [`WAYS`] + 2
    /// outputs, more than the graphs, sets the parameters every time. Every output element equals
    /// its f64 value (x × 2). On a CUDA device whose driver has graphs and `cuFuncGetParamInfo`.
    #[test]
    fn repeated_launches_hold_their_graph_and_read_fresh_inputs() {
        let Some(dev) = devices().into_iter().next() else {
            return;
        };
        if let Err(why) = driver::graph_status().as_ref().and(driver::param_info_status().as_ref()) {
            println!("skipped: {why}");
            return;
        }
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        let (n, dims) = (65537usize, (64u32, 256u32));
        let stream = dev.ctx.new_stream().expect("stream");
        let x = upload(&dev, vec![1f32; n]);
        let outs: Vec<_> = (0..WAYS + 2).map(|_| upload(&dev, vec![f32::NAN; n])).collect();
        let f = dev.function("scale_f32").expect("kernel").f.cu_function();
        let mut ways = Ways::new(f, 8);
        let order: Vec<usize> =
            [0, 0, 0, 1, 0, 1, 0, 1].into_iter().chain((0..3).flat_map(|_| 0..WAYS + 2)).collect();
        let (yes, no) = (Held::Yes, Held::No);
        // Out 0 made then held twice; out 1 made; both held from then on, also through the first
        // cycle's outputs 0 and 1; then graphs made (2, 3) and set (every other launch).
        let mut want_held = vec![no, yes, yes, no, yes, yes, yes, yes, yes, yes];
        want_held.resize(order.len(), no);
        dev.bind().unwrap();
        for (i, &k) in order.iter().enumerate() {
            let host: Vec<f32> = (0..n).map(|_| r.random_range(-1f32..1.0)).collect();
            let (src, dst) = (alloc_of(&x, "t").unwrap().ptr(), alloc_of(&outs[k], "t").unwrap().ptr());
            // SAFETY: `host` and `x` hold n f32 and live past the stream's synchronize below.
            unsafe { driver::htod_async(src, host.as_ptr() as *const u8, n * 4, stream.cu_stream()) }
                .unwrap();
            let (nn, flags, kind, fd, fi, done) = (n as u64, 0i32, 1i32, 2.0f64, 2i64, launch::Done::NONE);
            let mut params = [&src, &dst, &nn].map(|p| p as *const u64 as *mut c_void).to_vec();
            params.extend([&flags as *const i32 as *mut _, &kind as *const i32 as *mut _]);
            params.extend([&fd as *const f64 as *mut _, &fi as *const i64 as *mut _]);
            params.push(&done as *const launch::Done as *mut _);
            let p = node_params(f, dims.0, dims.1, &mut params);
            // SAFETY: the parameters match `scale_f32` (x × 2 into `dst`, n elements) and stay
            // valid until the synchronize; `f` is this device's, whose context is current.
            let held = unsafe { ways.launch(&p, &params, dims, stream.cu_stream()) }.expect("launch");
            stream.synchronize().unwrap();
            assert_eq!(held, want_held[i], "launch {i} (output {k})");
            let got: Vec<f32> = download(&dev, &outs[k]);
            let wrong = got.iter().zip(&host).filter(|(g, x)| **g as f64 != **x as f64 * 2.0).count();
            assert_eq!(wrong, 0, "seed {seed}, launch {i} (output {k}): {wrong} of {n} wrong");
        }
        assert_eq!(ways.ways.len(), WAYS);
    }
}
