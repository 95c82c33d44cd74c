//! A timing probe for the GPU machine (ignored in ordinary runs): where the time of a 4 KiB
//! `local_reduce` on one CUDA device goes, from the driver's floor up to the library's call.
//!
//! Each row times the same 4 KiB work `ITERS` times, one call at a time, and prints the median and
//! the tenth percentile in µs; the first probe times its rows in turn ([`timing::in_turn`]), so
//! that they compare. The rows add one layer each: a driver memset and a stream synchronize (the
//! floor no library goes under), the smallest kernel (a 16-byte copy) with the same synchronize,
//! the binary add and the reduce kernel launched raw likewise, with an event recorded and
//! synchronized instead (how the backend waits), with the event polled, the backend's `compute`
//! (allocation, fences, event pool) and a wait, the graph's `Tensor::reduce` alone, and the whole
//! `Tensor::reduce` + `realize`. A second probe does the same for the 4 KiB all_reduce of `cuda:0,
//! cpu:0`: the reduce launched raw over pinned host memory, the one-pass kernel the library issues
//! for it, the graph alone, and the whole call (the last two with the host input carried in the
//! launch's parameters and read across the bus, alternated). A third times kernels that do no work,
//! by the size of their parameters: the floor of any kernel and its wait. A fourth times the reduce
//! kernel's forms (`launch::fold::reduce_batch`) against one another by input count and size. A
//! fifth times how the host learns a kernel finished: a synchronize, an event, or a word of pinned
//! memory that the kernel or its stream writes (`bench/gpu/28-completion`); a sixth (`flags`), the
//! library's calls with host waits by kernel flags ([`super::flag`]) against events alone; a
//! seventh (`resident`), a resident worker kernel polling a mailbox against a launch per call
//! (`bench/gpu/29-resident`); an eighth (`inline`), a small host input carried in the launch's
//! parameters against one read across the bus (`bench/gpu/52-inline`); a ninth (`graph`), a kernel
//! launched from a CUDA graph against the same kernel launched directly
//! (`bench/gpu/57-graph-launch`); a tenth (`size`), the reduce kernel compiled with 16 and with 4
//! input and output slots against the binary add, through a graph and directly; an eleventh
//! (`levels`), a driver memset and its wait on the compute stream, on new streams, on one of the
//! greatest priority and in new contexts (`bench/gpu/66-pair-and-trims`, run d).

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::result;

use super::device::CudaDevice;
use super::event;
use super::launch::{self, Launcher};
use super::memory::{DevAlloc, alloc_of};
use super::tests::{devices, upload};
use crate::backend::timing::{self, row};
use crate::backend::{Buffer, Delivery, Kernel, OutSpec};
use crate::device::Device;
use crate::dtype::DType;
use crate::graph::{ReduceKind, Tensor};

mod flags;
mod graph;
mod inline;
mod levels;
mod resident;
mod size;

const ITERS: usize = 4000;
const N: usize = 1024;

/// A kernel parameter's address, as `cuLaunchKernel` takes it.
fn ptr<T>(v: &T) -> *mut std::ffi::c_void {
    v as *const T as *mut std::ffi::c_void
}

/// `src` compiled by NVRTC for `dev`'s architecture and loaded into its context.
fn compile(dev: &super::device::CudaDevice, src: &str) -> std::sync::Arc<cudarc::driver::CudaModule> {
    let arch = format!("--gpu-architecture=sm_{}{}", dev.arch.0, dev.arch.1);
    let opts = cudarc::nvrtc::CompileOptions { options: vec![arch], ..Default::default() };
    dev.ctx.load_module(cudarc::nvrtc::compile_ptx_with_opts(src, opts).unwrap()).unwrap()
}

/// Two inputs of `N` f32s on `dev`, uploaded and waited for (the probes' raw launches do not wait
/// for them on the device), and an output of as many bytes, ordered on the compute stream.
fn two_inputs(dev: &CudaDevice) -> (Buffer, Buffer, Arc<DevAlloc>) {
    let (a, b) = (upload(dev, vec![1.5f32; N]), upload(dev, vec![2.5f32; N]));
    a.wait().unwrap();
    b.wait().unwrap();
    (a, b, dev.alloc(N * 4, &dev.compute).unwrap())
}

/// [`timing::time`] over `ITERS` runs.
fn time(f: impl FnMut()) -> (f64, f64) {
    timing::time(ITERS, f)
}

#[test]
#[ignore = "a timing probe for the GPU machine"]
fn local_reduce_layers_probe() {
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    let (a, b, out) = two_inputs(&dev);
    let stream = dev.compute.clone();
    let raw = stream.cu_stream();
    let kernel = Kernel::Reduce { kind: ReduceKind::Sum, scale: None };
    let spec = OutSpec { dtype: DType::F32, len: N };
    let ptrs = [alloc_of(&a, "p").unwrap().ptr(), alloc_of(&b, "p").unwrap().ptr()];
    let l = Launcher::new(&dev, &stream);
    let launch = || {
        launch::run(&l, &kernel, &ptrs, DType::F32, out.ptr(), spec, None).unwrap();
    };
    dev.bind().unwrap();
    // One segment of 16 bytes: the smallest kernel there is (one launch, one block).
    let seg = [(ptrs[0], out.ptr(), 16)];
    // The same work as the reduce of two inputs, by a kernel of about 70 bytes of parameters (the
    // few-slot reduce's about 150).
    let add = Kernel::Binary(crate::graph::BinaryOp::Add);
    let inputs = [&a, &b];
    let d = Device::Cuda(0);
    let ta = Tensor::from_vec(vec![1.5f32; N], [N], d).unwrap();
    let tb = Tensor::from_vec(vec![2.5f32; N], [N], d).unwrap();
    crate::realize(&[ta.clone(), tb.clone()]).unwrap();
    let shards = [ta, tb];
    // Every row but one is a call and its wait, timed in turn, so that the machine's drift over
    // the probe falls on every row alike.
    // SAFETY (the raw rows): `out` holds N f32s and both segment ranges 16 bytes on this device;
    // the stream is alive.
    let rows: [(&str, &mut dyn FnMut()); 9] = [
        ("memset + stream synchronize", &mut || unsafe {
            result::memset_d8_async(out.ptr(), 0, N * 4, raw).unwrap();
            result::stream::synchronize(raw).unwrap();
        }),
        ("smallest kernel (a 16-byte copyseg) + stream synchronize", &mut || unsafe {
            launch::copy_segments(&l, &seg).unwrap();
            result::stream::synchronize(raw).unwrap();
        }),
        ("binary add launch (the same work, 70 B of parameters) + stream synchronize", &mut || unsafe {
            launch::run(&l, &add, &ptrs, DType::F32, out.ptr(), spec, None).unwrap();
            result::stream::synchronize(raw).unwrap();
        }),
        ("reduce launch + stream synchronize", &mut || unsafe {
            launch();
            result::stream::synchronize(raw).unwrap();
        }),
        ("reduce launch + pooled event + event synchronize", &mut || {
            launch();
            event::record(&stream, dev.device).unwrap().synchronize().unwrap();
        }),
        ("reduce launch + pooled event + query until done", &mut || {
            launch();
            let e = event::record(&stream, dev.device).unwrap();
            while !e.try_is_complete().unwrap() {}
        }),
        ("backend compute + wait + drop", &mut || {
            let o = launch::compute(&dev, &kernel, &inputs, spec).unwrap();
            o.wait().unwrap();
        }),
        ("Tensor::reduce alone (the graph node)", &mut || {
            Tensor::reduce(&shards, ReduceKind::Sum, None).unwrap();
        }),
        ("Tensor::reduce + realize + drop (the library's local_reduce)", &mut || {
            let t = Tensor::reduce(&shards, ReduceKind::Sum, None).unwrap();
            crate::realize(std::slice::from_ref(&t)).unwrap();
        }),
    ];
    let (names, mut calls): (Vec<&str>, Vec<&mut dyn FnMut()>) = rows.into_iter().unzip();
    for (what, t) in names.into_iter().zip(timing::in_turn(ITERS, &mut calls)) {
        row(what, t);
    }
    let host = time(launch);
    // SAFETY: the stream is alive.
    unsafe { result::stream::synchronize(raw).unwrap() };
    row("reduce launch alone (host time, queued back to back)", host);
}

#[test]
#[ignore = "a timing probe for the GPU machine"]
fn mixed_all_reduce_layers_probe() {
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    let a = upload(&dev, vec![1.5f32; N]);
    let host = Buffer::from_vec(Device::Cpu(0), vec![2.5f32; N]);
    let kernel = Kernel::Reduce { kind: ReduceKind::Sum, scale: None };
    let spec = OutSpec { dtype: DType::F32, len: N };
    a.wait().unwrap();
    // The floor of this kernel: launched raw over a pinned host input and a pinned host output.
    let mut pin_in = super::pinned::take(N * 4, &dev.ctx, dev.device).unwrap();
    pin_in.bytes_mut(N * 4).copy_from_slice(bytemuck::cast_slice(&[2.5f32; N]));
    let pin_out = super::pinned::take(N * 4, &dev.ctx, dev.device).unwrap();
    let out = dev.alloc(N * 4, &dev.compute).unwrap();
    let stream = dev.compute.clone();
    let l = Launcher::new(&dev, &stream);
    let ins = [alloc_of(&a, "p").unwrap().ptr(), pin_in.ptr() as u64];
    let outs = [out.ptr(), pin_out.ptr() as u64];
    dev.bind().unwrap();
    // SAFETY: every pointer holds N f32s (device memory, or pinned memory mapped into the device's
    // address space under unified addressing); the stream is alive.
    row(
        "raw reduce launch over a device and a pinned host input, to a device and a pinned host output + stream synchronize",
        time(|| unsafe {
            launch::run_to_all(&l, &kernel, &ins, DType::F32, &outs, spec, None).unwrap();
            result::stream::synchronize(stream.cu_stream()).unwrap();
        }),
    );
    drop((pin_in, pin_out));
    let to = Delivery::wholes(&[Device::Cpu(0)], N);
    let g = crate::DeviceGroup::new(vec![Device::Cuda(0), Device::Cpu(0)]).unwrap();
    let shards = [
        Tensor::from_vec(vec![1.5f32; N], [N], Device::Cuda(0)).unwrap(),
        Tensor::from_vec(vec![2.5f32; N], [N], Device::Cpu(0)).unwrap(),
    ];
    crate::realize(&shards).unwrap();
    row(
        "DeviceGroup::all_reduce alone (the graph)",
        time(|| {
            g.all_reduce(&shards, crate::ReduceOp::Sum).unwrap();
        }),
    );
    // The host input carried in the launch's parameters (`launch::Carried`) and not, alternated.
    use std::sync::atomic::Ordering;
    for round in 1..=3 {
        for carrying in [true, false] {
            super::mapped::CARRYING.store(carrying, Ordering::Relaxed);
            let how = if carrying { "carried in the launch" } else { "read across the bus" };
            row(
                &format!(
                    "round {round}: one-pass kernel (a device and a pageable host input, {how}, one host copy) + waits"
                ),
                time(|| {
                    let (d, copies) =
                        super::mapped::compute_mapped(&dev, &kernel, &[&a, &host], spec, &to).unwrap();
                    d.wait().unwrap();
                    copies[0].wait().unwrap();
                }),
            );
            row(
                &format!("round {round}: DeviceGroup::all_reduce + realize + drop (cuda:0, cpu:0), {how}"),
                time(|| {
                    let out = g.all_reduce(&shards, crate::ReduceOp::Sum).unwrap();
                    crate::realize(&out).unwrap();
                }),
            );
        }
    }
    super::mapped::CARRYING.store(true, Ordering::Relaxed);
}

/// Kernels that do no work, with parameters of 0, 20 and 388 bytes, and one reading its 384-byte
/// parameter at run-time indices: what a launch and its wait cost by the kernel's signature alone
/// (the reduce takes two arrays of 16 pointers, `copyseg` three).
#[test]
#[ignore = "a timing probe for the GPU machine"]
fn launch_parameters_probe() {
    use std::ffi::c_void;
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    const SRC: &str = r#"
struct Big { unsigned long long p[48]; };
extern "C" __global__ void none() {}
extern "C" __global__ void three(unsigned long long a, unsigned long long b, int k) { if (k < 0) ((int*)a)[0] = (int)b; }
extern "C" __global__ void big(Big s, int k) { if (k < 0) ((int*)s.p[0])[0] = 1; }
extern "C" __global__ void indexed(Big s, int k) { if ((int)threadIdx.x < k && s.p[threadIdx.x] == 1) ((int*)s.p[1])[0] = 1; }
"#;
    let module = compile(&dev, SRC);
    let raw = dev.compute.cu_stream();
    dev.bind().unwrap();
    let (a, b, big, (off, on)) = (0u64, 0u64, [0u64; 48], (0i32, 48i32));
    let cases: [(&str, &str, Vec<*mut c_void>); 4] = [
        ("empty kernel, no parameters", "none", vec![]),
        ("empty kernel, 20 B of parameters", "three", vec![ptr(&a), ptr(&b), ptr(&off)]),
        ("empty kernel, 388 B of parameters", "big", vec![ptr(&big), ptr(&off)]),
        ("kernel reading its 384 B parameter at run-time indices", "indexed", vec![ptr(&big), ptr(&on)]),
    ];
    for (what, name, mut params) in cases {
        let f = module.load_function(name).unwrap();
        // SAFETY: the parameters match each kernel's signature and outlive the calls; no kernel
        // writes memory with these values; the stream is alive.
        row(
            &format!("{what} + stream synchronize"),
            time(|| unsafe {
                super::driver::launch(f.cu_function(), 1, 256, raw, &mut params).unwrap();
                result::stream::synchronize(raw).unwrap();
            }),
        );
    }
}

/// The reduce kernel's forms against one another (`fold_at` in `kernels.cu`: the loop over
/// inputs, and batches of 1 to 16 loads): each launched raw, back to back, over `k` inputs of
/// each size into one output, every dtype. Each cell is the median over five repetitions of the
/// wall time of a stream of launches and one synchronize, per launch (µs).
#[test]
#[ignore = "a timing probe for the GPU machine"]
fn reduce_forms_probe() {
    use super::launch::{Fold, Outs, REDUCE_BATCHES, reduce};
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    const MAX: usize = 64 << 20;
    let bufs: Vec<_> = (0..9).map(|_| dev.alloc(MAX, &dev.compute).unwrap()).collect();
    dev.bind().unwrap();
    let raw = dev.compute.cu_stream();
    for b in &bufs {
        // SAFETY: each allocation holds MAX bytes on this device; the stream is alive.
        unsafe { result::memset_d8_async(b.ptr(), 0, MAX, raw).unwrap() };
    }
    let l = Launcher::new(&dev, &dev.compute);
    let forms: Vec<u32> = [0].into_iter().chain(REDUCE_BATCHES).collect();
    println!("probe: forms (dtype, inputs, bytes each): µs per launch for batch {forms:?} (0: the loop)");
    for dtype in DType::ALL {
        for k in [2usize, 3, 8] {
            for bytes in [4usize << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20] {
                let n = (bytes / dtype.size()) as u64;
                let reps = ((1usize << 28) / (bytes * k)).clamp(5, 200);
                let ins: Vec<u64> = bufs[..k].iter().map(|b| b.ptr()).collect();
                let out = [bufs[8].ptr()];
                let cells: Vec<String> = forms
                    .iter()
                    .map(|&batch| {
                        let fold = Fold { dtype, kind: ReduceKind::Sum, scale: None, batch: Some(batch) };
                        // SAFETY: every pointer holds `bytes` on this device; the stream is
                        // synchronized before the allocations are dropped.
                        let go = || unsafe {
                            for _ in 0..reps {
                                reduce(&l, fold, &ins, (&out, Outs::Whole), n, None).unwrap();
                            }
                            result::stream::synchronize(raw).unwrap();
                        };
                        go();
                        let mut t: Vec<f64> = (0..5)
                            .map(|_| {
                                let s = Instant::now();
                                go();
                                s.elapsed().as_secs_f64() * 1e6 / reps as f64
                            })
                            .collect();
                        t.sort_by(f64::total_cmp);
                        format!("{:9.2}", t[2])
                    })
                    .collect();
                println!("probe: forms {dtype} {k} {bytes:>9} {}", cells.join(" "));
            }
        }
    }
}

/// For the host ring's ceiling probe (`staged/one_gpu.rs`): copies `len` bytes from `src` to
/// `dst` on `device` by the copy kernel (streaming multiprocessors, not a copy engine) on its
/// `copy_out` stream (`out`) or `copy_in` stream; returns the event recorded after it.
///
/// # Safety
/// Both ranges are device memory or host memory registered with CUDA, valid until the event
/// completes.
pub(crate) unsafe fn copy_by_kernel(
    device: Device,
    src: u64,
    dst: u64,
    len: usize,
    out: bool,
) -> crate::Result<std::sync::Arc<event::Event>> {
    let dev = super::device::of(device, "probe copy")?;
    let stream = if out { dev.copy_out.clone() } else { dev.copy_in.clone() };
    let l = Launcher::new(&dev, &stream);
    // SAFETY: as the caller guarantees.
    unsafe { launch::copy_segments(&l, &[(src, dst, len as u64)])? };
    event::record(&stream, device)
}

/// How the host learns that a 4 KiB kernel finished: the stream synchronized (the floor the
/// backend waits at today), an event recorded and synchronized, a flag the kernel itself writes
/// into mapped pinned host memory after a system-scope fence (the host spins on it), and a flag
/// the stream writes after the kernel (`cuStreamWriteValue32`). Each the same add of two 1024-f32
/// inputs, one block; the launch's host time alone beside them.
#[test]
#[ignore = "a timing probe for the GPU machine"]
fn completion_signal_probe() {
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicU32, Ordering};
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    const SRC: &str = r#"
extern "C" __global__ void add_flag(const float* a, const float* b, float* out, int n,
                                    volatile unsigned int* flag, unsigned int seq) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = a[i] + b[i];
    if (flag) {
        __syncthreads();
        if (threadIdx.x == 0) { __threadfence_system(); *flag = seq; }
    }
}
"#;
    let module = compile(&dev, SRC);
    let f = module.load_function("add_flag").unwrap();
    let (a, b, out) = two_inputs(&dev);
    let flag_block = super::pinned::take(64, &dev.ctx, dev.device).unwrap();
    // SAFETY: the block is 64 bytes or more of pinned memory, aligned for a u32, alive below.
    let flag = unsafe { &*(flag_block.ptr() as *const AtomicU32) };
    flag.store(0, Ordering::SeqCst);
    let stream = dev.compute.clone();
    let raw = stream.cu_stream();
    dev.bind().unwrap();
    let (pa, pb, po, n) =
        (alloc_of(&a, "p").unwrap().ptr(), alloc_of(&b, "p").unwrap().ptr(), out.ptr(), N as i32);
    let none = 0u64;
    let with_flag = flag_block.ptr() as u64;
    let mut seq = 0u32;
    let go = |flagged: bool, seq: u32| {
        let fp = if flagged { &with_flag } else { &none };
        let mut params: Vec<*mut c_void> = vec![ptr(&pa), ptr(&pb), ptr(&po), ptr(&n), ptr(fp), ptr(&seq)];
        // SAFETY: the parameters match the kernel's signature and outlive the call; every pointer
        // holds N f32s on this device or is the pinned flag (mapped under unified addressing).
        unsafe { super::driver::launch(f.cu_function(), 1, 256, raw, &mut params).unwrap() };
    };
    let spin_to = |seq: u32| {
        while flag.load(Ordering::Acquire) != seq {
            std::hint::spin_loop();
        }
    };
    // SAFETY (the rows below): the stream is alive; the flag stays mapped until the end.
    row(
        "add + stream synchronize",
        time(|| unsafe {
            go(false, 0);
            result::stream::synchronize(raw).unwrap();
        }),
    );
    row(
        "add + pooled event + event synchronize",
        time(|| {
            go(false, 0);
            event::record(&stream, dev.device).unwrap().synchronize().unwrap();
        }),
    );
    row(
        "add writing a host flag + spin on the flag",
        time(|| {
            seq += 1;
            go(true, seq);
            spin_to(seq);
        }),
    );
    // SAFETY: the stream is alive.
    unsafe { result::stream::synchronize(raw).unwrap() };
    row(
        "add writing a host flag + pooled event recorded (not waited) + spin on the flag",
        time(|| {
            seq += 1;
            go(true, seq);
            let _e = event::record(&stream, dev.device).unwrap();
            spin_to(seq);
        }),
    );
    // SAFETY: the stream is alive.
    unsafe { result::stream::synchronize(raw).unwrap() };
    row(
        "add + stream write value (cuStreamWriteValue32 to the flag) + spin on the flag",
        time(|| {
            seq += 1;
            go(false, 0);
            // SAFETY: the flag is mapped pinned memory of this context; the stream is alive.
            let r = unsafe { cudarc::driver::sys::cuStreamWriteValue32_v2(raw, with_flag, seq, 0) };
            assert_eq!(r, cudarc::driver::sys::CUresult::CUDA_SUCCESS);
            spin_to(seq);
        }),
    );
    // SAFETY: the stream is alive.
    unsafe { result::stream::synchronize(raw).unwrap() };
    let host = time(|| go(false, 0));
    // SAFETY: the stream is alive.
    unsafe { result::stream::synchronize(raw).unwrap() };
    row("add launch alone (host time, queued back to back)", host);
    drop(flag_block);
}
