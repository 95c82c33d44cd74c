//! Unit tests of the CUDA backend that need crate internals: a kernel launch failure, the chunked
//! staging hooks, and the NCCL clique (crate-internal, so tested here rather than through the
//! public API). They print `skipped: ...` without a CUDA device, and fail instead under
//! `REQUIRE_CUDA=1`.

use std::sync::Arc;

use half::{bf16, f16};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

use super::device::{self, CudaDevice};
use super::memory::alloc_of;
use super::nccl::{NcclClique, nccl_available};
use super::{copy, driver, launch};
use crate::backend::cpu::with_type;
use crate::backend::nccl::NcclCall;
use crate::backend::{Buffer, Kernel, OutSpec};
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::Error;
use crate::graph::ReduceOp;
use crate::graph::Scale;

pub(super) fn required() -> bool {
    std::env::var("REQUIRE_CUDA").is_ok_and(|v| v == "1")
}

/// Every CUDA device, or none (printing why, or failing under `REQUIRE_CUDA=1`).
pub(super) fn devices() -> Vec<Arc<CudaDevice>> {
    let n = driver::device_count();
    if n == 0 {
        let why = driver::driver_status().clone().err().unwrap_or_else(|| "no device".into());
        assert!(!required(), "REQUIRE_CUDA=1 but no CUDA device: {why}");
        println!("skipped: no CUDA device ({why})");
        return vec![];
    }
    (0..n).map(|i| device::get(i).expect("open CUDA device")).collect()
}

pub(super) fn upload<T: Element>(dev: &CudaDevice, data: Vec<T>) -> Buffer {
    copy::htod(dev, &Buffer::from_vec(Device::Cpu(0), data)).expect("htod")
}

pub(super) fn download<T: Element>(dev: &CudaDevice, buf: &Buffer) -> Vec<T> {
    let host = copy::dtoh(dev, buf, Device::Cpu(0)).expect("dtoh");
    host.wait().expect("wait");
    bytemuck::pod_collect_to_vec(host.host_bytes("test").expect("host bytes"))
}

#[test]
fn launch_failure_is_an_error_and_the_device_recovers() {
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    let x = upload(&dev, vec![1.0f32, 2.0, 3.0]);
    let f = dev.function("scale_f32").expect("kernel").f;
    let (src, dst, n, flags, kind, fd, fi) =
        (alloc_of(&x, "t").unwrap().ptr(), 0u64, 0u64, 0i32, 1i32, 2.0f64, 2i64);
    let mut params = [&src, &dst, &n].map(|p| p as *const u64 as *mut std::ffi::c_void).to_vec();
    params.extend([&flags as *const i32 as *mut _, &kind as *const i32 as *mut _]);
    params.extend([&fd as *const f64 as *mut _, &fi as *const i64 as *mut _]);
    // No completion flag.
    let done = launch::Done::NONE;
    params.push(&done as *const launch::Done as *mut _);
    dev.bind().unwrap();
    // 4096 threads per block is beyond every CUDA device's limit: the launch is refused.
    // SAFETY: the parameters match `scale_f32`; with n = 0 nothing would be touched anyway.
    let res = unsafe { driver::launch(f.cu_function(), 1, 4096, dev.compute.cu_stream(), &mut params) };
    let err = res.map_err(driver::err(dev.device, "launch scale_f32")).unwrap_err();
    assert!(matches!(err, Error::Driver { .. }), "{err}");
    println!("launch failure reported as: {err}");
    let out =
        launch::compute(&dev, &Kernel::Scale(Scale::Mul(2.0)), &[&x], OutSpec { dtype: DType::F32, len: 3 });
    assert_eq!(download::<f32>(&dev, &out.expect("compute after a failed launch")), vec![2.0, 4.0, 6.0]);
    assert_eq!(download::<f32>(&dev, &x), vec![1.0, 2.0, 3.0], "input unchanged");
}

#[test]
fn freed_allocations_of_every_size_are_reused_on_their_stream_and_given_up_for_an_allocation() {
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    // Streams of this test's own: other tests share the device, but parked memory is kept per
    // stream, so what is counted here is this test's alone.
    let stream = dev.ctx.new_stream().expect("stream");
    let other = dev.ctx.new_stream().expect("stream");
    let (bytes, small) = (4 << 20, super::reuse::REUSE_MIN_BYTES - 1);
    let parked = |s: &Arc<cudarc::driver::CudaStream>, b: usize| dev.parked(s, b);
    let first = dev.alloc(bytes, &stream).expect("alloc");
    let ptr = first.ptr();
    drop(first);
    assert_eq!(parked(&stream, bytes), 1, "parked when dropped");
    let on_other = dev.alloc(bytes, &other).expect("alloc on another stream");
    assert_ne!(on_other.ptr(), ptr, "not handed to another stream");
    let again = dev.alloc(bytes, &stream).expect("alloc again");
    assert_eq!(again.ptr(), ptr, "the same stream and size take it back");
    assert_eq!(parked(&stream, bytes), 0, "taken off the shelf");
    let tiny = dev.alloc(small, &stream).expect("small");
    let unparked = dev.alloc_unparked(bytes, &stream).expect("unparked");
    drop((again, on_other, tiny));
    assert_eq!(parked(&stream, bytes) + parked(&other, bytes), 2, "both parked");
    assert_eq!(parked(&stream, small), 1, "small allocations are parked too");
    let tiny_again = dev.alloc(small, &stream).expect("small again");
    assert_eq!(parked(&stream, small), 0, "and taken back");
    drop(tiny_again);
    drop(unparked);
    assert_eq!(parked(&stream, bytes), 1, "an unparked allocation is freed");
    // The small shelf keeps at most 256 allocations, the newest: 300 of 4 KiB, dropped in turn.
    // (The shelf is the device's: other tests' small allocations may displace some of these.)
    let many: Vec<_> = (0..300).map(|_| dev.alloc(4096, &stream).expect("4 KiB")).collect();
    let newest = many.last().expect("300").ptr();
    drop(many);
    let kept = parked(&stream, 4096);
    assert!((1..=256).contains(&kept), "the small shelf is full, the oldest freed: {kept} kept");
    assert_eq!(dev.alloc(4096, &stream).expect("4 KiB").ptr(), newest, "newest first");
    // An allocation the pool cannot serve frees everything parked before it gives up.
    let err = dev.alloc(dev.total_mem * 2, &stream).err().expect("more than the device has");
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
    assert_eq!(parked(&stream, bytes) + parked(&other, bytes), 0, "the shelf was emptied");
    assert_eq!(parked(&stream, small) + parked(&stream, 4096), 0, "both shelves were emptied");
}

#[test]
fn chunked_staging_hooks_round_trip() {
    let Some(dev) = devices().into_iter().next() else {
        return;
    };
    let len = (40 << 20) + 3;
    let mut data = vec![0u8; len];
    StdRng::seed_from_u64(rand::rng().random()).fill_bytes(&mut data);
    let buf = super::upload_chunked(dev.device, DType::U8, len, |off, chunk| {
        chunk.copy_from_slice(&data[off..off + chunk.len()]);
        Ok(())
    })
    .expect("upload");
    let (mut got, mut calls) = (vec![0u8; len], 0);
    super::download_chunked(&buf, |off, chunk| {
        got[off..off + chunk.len()].copy_from_slice(chunk);
        calls += 1;
        Ok(())
    })
    .expect("download");
    assert!(got == data, "round trip changed the data");
    assert_eq!(calls, len.div_ceil(super::staging::CHUNK));
}

/// Random values of `dtype` as f64 (exact in the dtype); small, so sums and products stay exact
/// for integers.
pub(super) fn random_vals(dtype: DType, n: usize, product: bool, r: &mut StdRng) -> Vec<f64> {
    (0..n)
        .map(|_| match (dtype.is_float(), product, dtype) {
            (true, false, _) => r.random_range(-1.0..1.0),
            (true, true, _) => r.random_range(0.5..1.5) * if r.random() { 1.0 } else { -1.0 },
            (false, true, DType::U8) => r.random_range(0..=3) as f64,
            (false, true, _) => r.random_range(-3..=3) as f64,
            (false, false, DType::U8) => r.random_range(0..=30) as f64,
            (false, false, _) => r.random_range(-1000..=1000) as f64,
        })
        .map(|v| as_dtype(dtype, v))
        .collect()
}

pub(super) fn as_dtype(dtype: DType, v: f64) -> f64 {
    with_type!(dtype, T => T::from_f64(v).to_f64())
}

pub(super) fn to_buffer(dev: &CudaDevice, dtype: DType, vals: &[f64]) -> Buffer {
    with_type!(dtype, T => upload(dev, vals.iter().map(|&v| T::from_f64(v)).collect::<Vec<T>>()))
}

/// `vals` as a pageable host buffer of `dtype` on host device `device`.
pub(super) fn host_buffer(device: Device, dtype: DType, vals: &[f64]) -> Buffer {
    with_type!(dtype, T => {
        let typed: Vec<T> = vals.iter().map(|&v| T::from_f64(v)).collect();
        Buffer::from_vec(device, typed)
    })
}

/// A host buffer's values as f64, once its writer is done.
pub(super) fn host_f64s(b: &Buffer) -> Vec<f64> {
    b.wait().expect("wait");
    let bytes = b.host_bytes("test").expect("host bytes");
    with_type!(b.dtype, T => {
        bytemuck::pod_collect_to_vec::<u8, T>(bytes).into_iter().map(Element::to_f64).collect()
    })
}

pub(super) fn to_f64s(dev: &CudaDevice, buf: &Buffer) -> Vec<f64> {
    with_type!(buf.dtype, T => download::<T>(dev, buf).into_iter().map(Element::to_f64).collect())
}

/// Every reduce op, a pre-multiplied sum among them.
pub(super) const OPS: [ReduceOp; 6] =
    [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg, ReduceOp::PreMulSum(2.0)];

/// The f64 reference of `op` over `ins` at element `i`.
pub(super) fn reference(op: ReduceOp, dtype: DType, ins: &[Vec<f64>], i: usize) -> f64 {
    let xs = ins.iter().map(|x| x[i]);
    let sum: f64 = xs.clone().sum();
    match op {
        ReduceOp::Sum => sum,
        ReduceOp::Prod => xs.product(),
        ReduceOp::Max => xs.fold(f64::NEG_INFINITY, f64::max),
        ReduceOp::Min => xs.fold(f64::INFINITY, f64::min),
        ReduceOp::Avg if dtype.is_int() => (sum / ins.len() as f64).trunc(),
        ReduceOp::Avg => sum / ins.len() as f64,
        ReduceOp::PreMulSum(s) => s * sum,
    }
}

/// The f64 reference of `op` over `ins` at every element, rounded to `dtype`, and each element's
/// magnitude (the sum of its inputs' absolute values) for [`close`].
pub(super) fn expected(op: ReduceOp, dtype: DType, ins: &[Vec<f64>]) -> (Vec<f64>, Vec<f64>) {
    let n = ins[0].len();
    let want = (0..n).map(|i| as_dtype(dtype, reference(op, dtype, ins, i))).collect();
    let mag = (0..n).map(|i| ins.iter().map(|x| x[i].abs()).sum()).collect();
    (want, mag)
}

pub(super) fn close(dtype: DType, got: f64, want: f64, mag: f64, k: usize) -> bool {
    let eps = match dtype {
        DType::F16 => 2f64.powi(-10),
        DType::BF16 => 2f64.powi(-7),
        DType::F32 => f32::EPSILON as f64,
        DType::F64 => f64::EPSILON,
        _ => return got == want,
    };
    (got - want).abs() <= (k as f64 + 2.0) * eps * mag.max(want.abs()) * 2.0
}

#[test]
fn nccl_clique_every_collective_and_dtype() {
    let devs = devices();
    if devs.is_empty() {
        return;
    }
    if !nccl_available() {
        let why = driver::nccl_status().clone().err().unwrap_or_default();
        assert!(!required(), "REQUIRE_CUDA=1 but NCCL is unavailable: {why}");
        println!("skipped: NCCL unavailable ({why})");
        return;
    }
    let members: Vec<Device> = devs.iter().map(|d| d.device).collect();
    let clique = NcclClique::get(&members).expect("clique");
    let k = members.len();
    let n = 4096 * k + 64 * k;
    let seed: u64 = rand::rng().random();
    let mut r = StdRng::seed_from_u64(seed);
    for dtype in DType::ALL {
        for op in OPS {
            let ins: Vec<Vec<f64>> =
                (0..k).map(|_| random_vals(dtype, n, op == ReduceOp::Prod, &mut r)).collect();
            let bufs: Vec<Buffer> = ins.iter().zip(&devs).map(|(x, d)| to_buffer(d, dtype, x)).collect();
            let refs: Vec<&Buffer> = bufs.iter().collect();
            let want: Vec<f64> = (0..n).map(|i| reference(op, dtype, &ins, i)).collect();
            let mag: Vec<f64> = (0..n).map(|i| ins.iter().map(|x| x[i].abs()).sum::<f64>() * 2.0).collect();
            let ctx = format!("{dtype} {op:?} seed {seed}");
            if k == 1 && dtype.size() == 8 && matches!(op, ReduceOp::PreMulSum(_)) {
                // NCCL 2.28.9 gets this wrong on one rank (RedOp::new): refused, never computed.
                let err = clique.run(NcclCall::AllReduce(op), &refs).err();
                assert!(matches!(err, Some(crate::Error::BadReduceOp { .. })), "{ctx}: {err:?}");
                continue;
            }
            let check = |got: &[f64], off: usize, what: &str| {
                let wrong: Vec<String> = (0..got.len())
                    .filter(|&i| !close(dtype, got[i], want[off + i], mag[off + i], k))
                    .map(|i| format!("[{}] got {:e} want {:e}", off + i, got[i], want[off + i]))
                    .collect();
                assert!(
                    wrong.is_empty(),
                    "{what} {ctx}: {} wrong of {}: {}",
                    wrong.len(),
                    got.len(),
                    wrong.iter().take(8).cloned().collect::<Vec<_>>().join(", ")
                );
            };
            for (r, out) in clique.run(NcclCall::AllReduce(op), &refs).expect("all_reduce").iter().enumerate()
            {
                check(&to_f64s(&devs[r], out), 0, "all_reduce");
            }
            let root = k - 1;
            check(
                &to_f64s(
                    &devs[root],
                    &clique.run(NcclCall::Reduce(op, root), &refs).expect("reduce").remove(0),
                ),
                0,
                "reduce",
            );
            let part = n / k;
            for (r, out) in
                clique.run(NcclCall::ReduceScatter(op), &refs).expect("reduce_scatter").iter().enumerate()
            {
                check(&to_f64s(&devs[r], out), r * part, "reduce_scatter");
            }
        }
        let ins: Vec<Vec<f64>> = (0..k).map(|_| random_vals(dtype, n, false, &mut r)).collect();
        let bufs: Vec<Buffer> = ins.iter().zip(&devs).map(|(x, d)| to_buffer(d, dtype, x)).collect();
        let refs: Vec<&Buffer> = bufs.iter().collect();
        for (r, out) in clique.broadcast(&bufs[0], 0).expect("broadcast").iter().enumerate() {
            assert!(to_f64s(&devs[r], out) == ins[0], "broadcast {dtype} to rank {r} seed {seed}");
        }
        let cat: Vec<f64> = ins.concat();
        for (r, out) in clique.run(NcclCall::AllGather, &refs).expect("all_gather").iter().enumerate() {
            assert!(to_f64s(&devs[r], out) == cat, "all_gather {dtype} rank {r} seed {seed}");
        }
    }
}

#[test]
fn nccl_rejects_bad_calls_and_reports_nan_handling() {
    let devs = devices();
    if devs.is_empty() || !nccl_available() {
        return;
    }
    let members: Vec<Device> = devs.iter().map(|d| d.device).collect();
    let clique = NcclClique::get(&members).expect("clique");
    let bufs: Vec<Buffer> = devs.iter().map(|d| upload(d, vec![f32::NAN, 1.0, 2.0])).collect();
    let refs: Vec<&Buffer> = bufs.iter().collect();
    assert!(matches!(
        clique.run(NcclCall::AllReduce(ReduceOp::Sum), &refs[..refs.len() - 1]),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        clique.run(NcclCall::Reduce(ReduceOp::Sum, members.len()), &refs),
        Err(Error::InvalidArgument { .. })
    ));
    let bad = clique.run(NcclCall::AllReduce(ReduceOp::PreMulSum(0.5)), &refs);
    assert!(bad.is_ok(), "f32 takes a fractional scalar");
    let ints: Vec<Buffer> = devs.iter().map(|d| upload(d, vec![1i32, 2, 3])).collect();
    let irefs: Vec<&Buffer> = ints.iter().collect();
    assert!(matches!(
        clique.run(NcclCall::AllReduce(ReduceOp::PreMulSum(0.5)), &irefs),
        Err(Error::BadReduceOp { .. })
    ));
    let max = clique.run(NcclCall::AllReduce(ReduceOp::Max), &refs).expect("max");
    println!("NCCL max over [NaN, ..]: {:?}", download::<f32>(&devs[0], &max[0]));
    let sum = clique.run(NcclCall::AllReduce(ReduceOp::Sum), &irefs).expect("sum after errors");
    let k = devs.len() as i32;
    assert_eq!(download::<i32>(&devs[0], &sum[0]), vec![k, 2 * k, 3 * k], "usable after rejected calls");
}

/// A contiguous slice of a CUDA buffer is a view: its bytes are the source's range
/// (downloaded, and read by a kernel), it outlives the source's other holders, and uses of it
/// keep the memory from being reused.
#[test]
fn a_contiguous_slice_is_a_view_of_the_allocation() {
    let Some(dev) = devices().into_iter().next() else { return };
    let seed: u64 = rand::rng().random();
    let mut r = StdRng::seed_from_u64(seed);
    let vals: Vec<f32> = (0..4096).map(|_| r.random_range(-10.0f32..10.0)).collect();
    let x = Arc::new(upload(&dev, vals.clone()));
    // Rows of 64 f32 (256 bytes): rows 3..7 start at byte 768.
    let slice = |start| Kernel::Slice { outer: 1, in_mid: 64, start, len: 4, inner: 64 };
    let v = crate::backend::view(&slice(3), &x, dev.device).unwrap().expect("a view");
    assert_eq!(alloc_of(&v, "t").unwrap().ptr(), alloc_of(&x, "t").unwrap().ptr() + 768, "no copy");
    drop(x);
    let want = &vals[192..448];
    assert_eq!(download::<f32>(&dev, &v), want, "seed {seed}");
    let doubled = launch::compute(
        &dev,
        &Kernel::Scale(Scale::Mul(2.0)),
        &[&v],
        OutSpec { dtype: DType::F32, len: 256 },
    );
    let twice: Vec<f32> = want.iter().map(|x| x * 2.0).collect();
    assert_eq!(download::<f32>(&dev, &doubled.expect("a kernel reads the view")), twice, "seed {seed}");
}

/// A view may start at any element, 16-byte aligned or not: kernels reading it (elementwise,
/// n-ary reduce, slice copies) take their element-by-element path where a pointer is not
/// aligned, and every element matches the f64 reference, for random starts and lengths of
/// three element sizes.
#[test]
fn views_at_unaligned_starts_read_right_in_every_kernel() {
    let Some(dev) = devices().into_iter().next() else { return };
    let seed: u64 = rand::rng().random();
    let mut r = StdRng::seed_from_u64(seed);
    unaligned_views::<f32>(&dev, &mut r, seed, |r| r.random_range(-1e3f32..1e3), f64::from, |x| x as f32);
    unaligned_views::<f16>(
        &dev,
        &mut r,
        seed,
        |r| f16::from_f32(r.random_range(-8.0..8.0)),
        f16::to_f64,
        f16::from_f64,
    );
    unaligned_views::<i32>(
        &dev,
        &mut r,
        seed,
        |r| r.random_range(-1 << 20..1 << 20),
        f64::from,
        |x| x as i32,
    );
}

fn unaligned_views<T: Element + PartialEq + std::fmt::Debug>(
    dev: &CudaDevice,
    r: &mut StdRng,
    seed: u64,
    random: impl Fn(&mut StdRng) -> T,
    wide: impl Fn(T) -> f64,
    narrow: impl Fn(f64) -> T,
) {
    let dtype = T::DTYPE;
    for _ in 0..8 {
        let n = r.random_range(64..5000usize);
        let vals: Vec<T> = (0..n).map(|_| random(r)).collect();
        let x = Arc::new(upload(dev, vals.clone()));
        let (start, len) = (r.random_range(1..n / 2), r.random_range(1..n / 2));
        let view = |start: usize| {
            let k = Kernel::Slice { outer: 1, in_mid: n, start, len, inner: 1 };
            crate::backend::view(&k, &x, dev.device).unwrap().expect("a view at any element")
        };
        let (a, b) = (view(start), view(start + 1));
        let at = |b: &Buffer| alloc_of(b, "t").unwrap().ptr();
        assert_eq!(at(&a), at(&x) + (start * dtype.size()) as u64, "no copy");
        let what = |k: &str| format!("{k} of {dtype} views at {start}, {len} long, seed {seed}");
        assert_eq!(download::<T>(dev, &a), &vals[start..start + len], "{}", what("the bytes"));
        let aligned = upload(dev, (0..len).map(|_| random(r)).collect::<Vec<T>>());
        let theirs = download::<T>(dev, &aligned);
        let spec = OutSpec { dtype, len };
        let sum =
            |ins: &[&Buffer], k: &Kernel| download::<T>(dev, &launch::compute(dev, k, ins, spec).unwrap());
        let add = sum(&[&a, &aligned], &Kernel::Binary(crate::graph::BinaryOp::Add));
        let want: Vec<T> = (0..len).map(|i| narrow(wide(vals[start + i]) + wide(theirs[i]))).collect();
        assert_eq!(add, want, "{}", what("an add"));
        let fold = Kernel::Reduce { kind: crate::graph::ReduceKind::Sum, scale: None };
        let two = sum(&[&a, &b], &fold);
        let want: Vec<T> =
            (0..len).map(|i| narrow(wide(vals[start + i]) + wide(vals[start + 1 + i]))).collect();
        assert_eq!(two, want, "{}", what("a reduce"));
        let inner = Kernel::Slice { outer: 1, in_mid: len, start: len / 3, len: len - len / 3, inner: 1 };
        let part = launch::compute(dev, &inner, &[&a], OutSpec { dtype, len: len - len / 3 }).unwrap();
        assert_eq!(download::<T>(dev, &part), &vals[start + len / 3..start + len], "{}", what("a slice"));
    }
}
