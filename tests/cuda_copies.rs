//! Copies through the public `Tensor` API: CPU ↔ CUDA (pinned staging), CUDA(0) ↔ CUDA(1) (peer),
//! within one device, chains across devices with no host round-trip between steps, and moves.
//! Prints the bandwidths it sees (informational; the perf tool measures properly).

mod cuda_common;

use std::time::Instant;

use collectives::{DType, Device, ReduceKind, Scale, Tensor, realize};
use collectives_tests::*;
use cuda_common::{cuda_devices, same_as_cpu, two_cuda_devices};

/// Sizes crossing the staging chunk (16 MiB), plus the small edge cases.
fn lengths(dtype: DType) -> Vec<usize> {
    vec![0, 1, 17, (1 << 20) + 5, (20 << 20) / dtype.size() + 3]
}

#[test]
fn host_to_device_and_back_every_dtype() {
    for dev in cuda_devices() {
        for dtype in DType::ALL {
            for n in lengths(dtype) {
                let seed = fresh_seed();
                let x = random(dtype, n, Range::General, &mut rng(seed));
                let on_dev = tensor(dtype, &x, [n], Device::Cpu(1)).copy_to_device(dev).unwrap();
                let back = on_dev.copy_to_device(Device::Cpu(2)).unwrap();
                let ctx = format!("cpu:1 -> {dev} -> cpu:2 {dtype} n={n} seed {seed}");
                check_all(&values(&back), &x, |_| 0.0, &ctx);
                check_all(&values(&on_dev), &x, |_| 0.0, &ctx);
            }
        }
    }
}

#[test]
fn within_one_device() {
    for dev in cuda_devices() {
        let x = random(DType::F32, 1 << 20, Range::General, &mut rng(fresh_seed()));
        let t = tensor(DType::F32, &x, [1 << 20], dev);
        let copy = t.copy_to_device(dev).unwrap();
        check_all(&values(&copy), &x, |_| 0.0, &format!("{dev} -> {dev}"));
    }
}

#[test]
fn peer_copies_every_dtype() {
    let Some((d0, d1)) = two_cuda_devices() else {
        return;
    };
    for dtype in DType::ALL {
        for n in lengths(dtype) {
            let seed = fresh_seed();
            let x = random(dtype, n, Range::General, &mut rng(seed));
            let a = tensor(dtype, &x, [n], d0);
            let b = a.copy_to_device(d1).unwrap();
            let c = b.copy_to_device(d0).unwrap();
            let ctx = format!("{d0} -> {d1} -> {d0} {dtype} n={n} seed {seed}");
            check_all(&values(&b), &x, |_| 0.0, &ctx);
            check_all(&values(&c), &x, |_| 0.0, &ctx);
        }
    }
}

/// Compute on one device, hop to the other, compute with a local input, hop to the host: one
/// realize, dependencies as events only. Compared exactly with the same graph on CPU devices.
#[test]
fn chains_across_devices() {
    let Some((d0, d1)) = two_cuda_devices() else {
        return;
    };
    let n = (1 << 21) + 11;
    for dtype in [DType::F32, DType::BF16, DType::I64, DType::U8] {
        let seed = fresh_seed();
        let mut r = rng(seed);
        let (x, y) = (random(dtype, n, Range::General, &mut r), random(dtype, n, Range::General, &mut r));
        let graph = |a: Device, b: Device, h: Device| {
            let t = tensor(dtype, &x, [n], a).scale(Scale::Mul(3.0)).unwrap();
            let u = t.copy_to_device(b).unwrap().add(&tensor(dtype, &y, [n], b)).unwrap();
            let v = u.copy_to_device(a).unwrap().maximum(&t).unwrap();
            v.copy_to_device(h).unwrap()
        };
        let g = graph(d0, d1, Device::Cpu(3));
        let c = graph(Device::Cpu(0), Device::Cpu(1), Device::Cpu(2));
        same_as_cpu(&g, &c, &format!("chain {d0} <-> {d1} {dtype} seed {seed}"));
    }
}

#[test]
fn moves_keep_values() {
    let Some((d0, d1)) = two_cuda_devices() else {
        return;
    };
    let x = random(DType::F16, 4097, Range::General, &mut rng(fresh_seed()));
    let moved = tensor(DType::F16, &x, [4097], d0).move_to_device(d1).unwrap();
    check_all(&values(&moved), &x, |_| 0.0, "move cuda -> cuda");
    let home = moved.move_to_device(Device::Cpu(0)).unwrap();
    check_all(&values(&home), &x, |_| 0.0, "move cuda -> cpu");
}

/// Seconds of the best of three realizes of `make()`.
fn best_of_3(make: impl Fn() -> Tensor) -> f64 {
    (0..3)
        .map(|_| {
            let t = make();
            let start = Instant::now();
            realize(std::slice::from_ref(&t)).unwrap();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn bandwidth_figures() {
    let devs = cuda_devices();
    let Some(&d0) = devs.first() else { return };
    let n = 256 << 20; // 1 GiB of f32
    let gb = (n * 4) as f64 / 1e9;
    let host = Tensor::from_vec(vec![1.5f32; n], [n], Device::Cpu(0)).unwrap();
    let on_dev = host.copy_to_device(d0).unwrap();
    on_dev.realize().unwrap();
    let h2d = best_of_3(|| host.copy_to_device(d0).unwrap());
    let d2h = best_of_3(|| on_dev.copy_to_device(Device::Cpu(1)).unwrap());
    println!("figure: htod (pageable, staged) {:.1} GB/s; dtoh (pinned) {:.1} GB/s", gb / h2d, gb / d2h);
    let other = host.copy_to_device(d0).unwrap();
    other.realize().unwrap();
    let sum = best_of_3(|| Tensor::reduce(&[on_dev.clone(), other.clone()], ReduceKind::Sum, None).unwrap());
    println!("figure: reduce of two 1 GiB f32 tensors on {d0}: {:.0} GB/s moved", 3.0 * gb / sum);
    if let Some(&d1) = devs.get(1) {
        let peer = best_of_3(|| on_dev.copy_to_device(d1).unwrap());
        println!("figure: peer {d0} -> {d1} {:.1} GB/s", gb / peer);
    }
}

/// A reduce whose inputs live on CUDA devices and virtual CPU devices, run on a CUDA device and
/// on a CPU device: the copies the graph pass inserts (host ↔ CUDA, peer) feed the kernels, and
/// the results equal the same graph run on CPU devices only.
#[test]
fn mixed_host_and_cuda_inputs() {
    let devs = cuda_devices();
    let Some(&d0) = devs.first() else { return };
    let n = (1 << 20) + 3;
    for dtype in [DType::F32, DType::BF16, DType::F64, DType::I32, DType::U8] {
        let seed = fresh_seed();
        let mut r = rng(seed);
        let mut homes = vec![d0, Device::Cpu(1), Device::Cpu(2)];
        homes.extend(devs.get(1));
        let data: Vec<Vec<f64>> = homes.iter().map(|_| random(dtype, n, Range::General, &mut r)).collect();
        let on = |places: &[Device]| -> Vec<Tensor> {
            data.iter().zip(places).map(|(x, &d)| tensor(dtype, x, [n], d)).collect()
        };
        let cpu_only: Vec<Device> = (0..homes.len() as u32).map(|i| Device::Cpu(10 + i)).collect();
        let want = Tensor::reduce(&on(&cpu_only), ReduceKind::Sum, Some(Scale::Div(2.0))).unwrap();
        let on_cuda = Tensor::reduce(&on(&homes), ReduceKind::Sum, Some(Scale::Div(2.0))).unwrap();
        same_as_cpu(&on_cuda, &want, &format!("mixed reduce on {d0} {dtype} seed {seed}"));
        // The same inputs with a host shard first: the reduce runs on cpu:1.
        let host_first = |mut v: Vec<Tensor>| {
            v.swap(0, 1);
            v
        };
        let on_host = Tensor::reduce(&host_first(on(&homes)), ReduceKind::Max, None).unwrap();
        let want_host = Tensor::reduce(&host_first(on(&cpu_only)), ReduceKind::Max, None).unwrap();
        same_as_cpu(&on_host, &want_host, &format!("mixed reduce on cpu {dtype} seed {seed}"));
    }
}

/// CUDA → host → Vulkan and back as the graph writes it (two `Op::Copy` nodes each way): large
/// tensors run fused through the staged ring (several chunks, a ragged last one), small ones as
/// two hops; every byte arrives either way. Needs a CUDA and a Vulkan device.
#[test]
fn staged_chain_cuda_vulkan_both_ways() {
    use collectives::exec::{STAGED_MIN_BYTES, StagedTransport, staged_transport};
    let Some(&cu) = cuda_devices().first() else {
        return;
    };
    let vk = Device::Vulkan(0);
    if cu.kind() != collectives::DeviceKind::Cuda || !collectives::available_devices().contains(&vk) {
        assert!(!vulkan_required(), "REQUIRE_VULKAN=1 but {vk} is missing");
        println!("skipped: needs a CUDA and a Vulkan device");
        return;
    }
    for (from, to) in [(cu, vk), (vk, cu)] {
        let how = staged_transport(from, to).unwrap();
        println!("{from} -> {to}: {how:?}");
        if cuda_required() && vulkan_required() {
            // A ring through the host, or through the GPU when both are one GPU (the bridge).
            let fused = matches!(how, StagedTransport::Pipelined { .. } | StagedTransport::Device { .. });
            assert!(fused, "{from} -> {to}: {how:?}");
        }
    }
    let host = collectives::graph::STAGING_HOST;
    for dtype in [DType::F32, DType::BF16, DType::U8] {
        for n in [7, STAGED_MIN_BYTES / dtype.size() - 1, (100 << 20) / dtype.size() + 3] {
            let seed = fresh_seed();
            let x = random(dtype, n, Range::General, &mut rng(seed));
            let a = tensor(dtype, &x, [n], cu);
            let on_vk = a.copy_to_device(host).unwrap().copy_to_device(vk).unwrap();
            let back = on_vk.copy_to_device(host).unwrap().copy_to_device(cu).unwrap();
            let ctx = format!("{cu} -> {vk} -> {cu} {dtype} n={n} seed {seed}");
            let t0 = Instant::now();
            realize(std::slice::from_ref(&back)).unwrap();
            let secs = t0.elapsed().as_secs_f64();
            check_all(&values(&on_vk), &x, |_| 0.0, &ctx);
            check_all(&values(&back), &x, |_| 0.0, &ctx);
            let gbps = 2.0 * (n * dtype.size()) as f64 / secs / 1e9;
            println!("{ctx}: both ways {secs:.4}s ({gbps:.1} GB/s, informational)");
        }
    }
}
