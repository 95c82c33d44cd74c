//! Every collective on groups of real devices — `Cuda(0) + Cuda(1)`, `Cuda(0) + Cpu(0..=2)`, the
//! mixed `Cuda(0) + Vulkan(0)` and `Cuda(0) + Vulkan(0) + Cpu(0)`, and `Cpu(0..=2) + Vulkan(0)` with the Vulkan device as
//! leader and as a non-leader — for every `ReduceOp`, dtype and algorithm, against f64
//! references of the exact inputs, every element and the device of every result checked.
//!
//! A group whose devices are absent is skipped (and says so), unless `REQUIRE_CUDA=1` or
//! `REQUIRE_VULKAN=1` demands its devices.

use collectives::{Algorithm, DType, Device, DeviceGroup, Error, Tensor, available_devices};
use collectives_tests::collective::{DTYPES, Shards, all_ops, check_exact, check_reduced, range_for};
use collectives_tests::{Range, cuda_required, fresh_seed, ref_concat, ref_slice, rng, vulkan_required};
use rand::rngs::StdRng;

const CUDA0: Device = Device::Cuda(0);
const CUDA1: Device = Device::Cuda(1);
const VK0: Device = Device::Vulkan(0);
const CPU0: Device = Device::Cpu(0);
const CPU1: Device = Device::Cpu(1);
const CPU2: Device = Device::Cpu(2);

/// Whether the group can run here; panics if a required device is absent.
fn present(name: &str, devices: &[Device]) -> bool {
    let have = available_devices();
    let missing: Vec<Device> = devices.iter().copied().filter(|d| !have.contains(d)).collect();
    if missing.is_empty() {
        return true;
    }
    let required = missing.iter().any(|d| match d {
        Device::Cuda(_) => cuda_required(),
        Device::Vulkan(_) => vulkan_required(),
        Device::Cpu(_) => true,
    });
    assert!(!required, "{name}: required devices {missing:?} are absent");
    println!("skipped {name}: {missing:?} absent");
    false
}

/// Runs every collective on `devices` under each of `algos`.
fn every_collective(name: &str, devices: &[Device], algos: &[Algorithm]) {
    if !present(name, devices) {
        return;
    }
    let seed = fresh_seed();
    let mut r = rng(seed);
    for dtype in DTYPES {
        for algo in algos {
            let g = DeviceGroup::new(devices.to_vec()).unwrap().with_algorithm(*algo);
            let ctx = format!("{name} seed {seed} {dtype} {algo}");
            if !supported(&g, dtype, &ctx) {
                continue;
            }
            reducing(&g, dtype, &mut r, &ctx);
            moving(&g, dtype, &mut r, &ctx);
        }
    }
}

/// Whether every member takes `dtype`: only a device that reports the feature missing (f64 on a
/// Vulkan device without shaderFloat64) may refuse, with `Error::Unsupported`.
fn supported(g: &DeviceGroup, dtype: DType, ctx: &str) -> bool {
    for &d in g.devices() {
        let t = collectives_tests::tensor(dtype, &[1.0, 2.0], [2], d);
        match t.add(&t).and_then(|s| s.realize()) {
            Ok(()) => {}
            Err(Error::Unsupported { .. }) if dtype == DType::F64 && matches!(d, Device::Vulkan(_)) => {
                println!("{ctx}: {d} has no f64; skipped");
                return false;
            }
            Err(e) => panic!("{ctx}: {d} failed a plain add: {e}"),
        }
    }
    true
}

fn reducing(g: &DeviceGroup, dtype: DType, r: &mut StdRng, ctx: &str) {
    let n = g.size();
    for op in all_ops(dtype, r) {
        let ctx = format!("{ctx} {op}");
        let s = Shards::even(dtype, &[3 * n, 37], g.devices(), range_for(op), r);
        let inputs = s.slices();
        let got = g.reduce(&s.tensors, op).expect(&ctx);
        check_reduced(&got, g.leader(), op, &inputs, &format!("{ctx} reduce"));
        for (t, &d) in g.all_reduce(&s.tensors, op).expect(&ctx).iter().zip(g.devices()) {
            check_reduced(t, d, op, &inputs, &format!("{ctx} all_reduce"));
        }
        let parts = g.reduce_scatter(&s.tensors, op, 0).expect(&ctx);
        for (i, (t, &d)) in parts.iter().zip(g.devices()).enumerate() {
            let rows: Vec<Vec<f64>> =
                s.vals.iter().map(|v| v[i * 3 * 37..(i + 1) * 3 * 37].to_vec()).collect();
            let rows: Vec<&[f64]> = rows.iter().map(Vec::as_slice).collect();
            check_reduced(t, d, op, &rows, &format!("{ctx} reduce_scatter part {i}"));
        }
    }
}

fn moving(g: &DeviceGroup, dtype: DType, r: &mut StdRng, ctx: &str) {
    let n = g.size();
    // Uneven shards along dim 1 for gather and all_gather.
    let shapes: Vec<Vec<usize>> = (0..n).map(|i| vec![4, 3 + 2 * i]).collect();
    let s = Shards::of_shapes(dtype, &shapes, g.devices(), Range::General, r);
    let total: usize = shapes.iter().map(|s| s[1]).sum();
    let want: Vec<f64> = (0..4)
        .flat_map(|row| {
            s.vals.iter().zip(&shapes).flat_map(move |(v, sh)| v[row * sh[1]..(row + 1) * sh[1]].to_vec())
        })
        .collect();
    let got = g.gather(&s.tensors, 1).expect(ctx);
    check_exact(&got, g.leader(), &[4, total], &want, &format!("{ctx} gather"));
    match g.all_gather(&s.tensors, 1) {
        // Uneven shards have no NCCL form: a forced NCCL says so; the others gather them.
        Err(Error::InvalidArgument { .. }) if g.algorithm() == Algorithm::Nccl => {}
        got => {
            for (t, &d) in got.expect(ctx).iter().zip(g.devices()) {
                check_exact(t, d, &[4, total], &want, &format!("{ctx} all_gather"));
            }
        }
    }
    // Even shards along dim 0 (the NCCL form).
    let e = Shards::even(dtype, &[5, 9], g.devices(), Range::General, r);
    let cat: Vec<f64> = e.vals.concat();
    for (t, &d) in g.all_gather(&e.tensors, 0).expect(ctx).iter().zip(g.devices()) {
        check_exact(t, d, &[5 * n, 9], &cat, &format!("{ctx} all_gather dim 0"));
    }
    for (root, src) in e.tensors.iter().enumerate() {
        for (t, &d) in g.broadcast(src).expect(ctx).iter().zip(g.devices()) {
            check_exact(t, d, &[5, 9], &e.vals[root], &format!("{ctx} broadcast from {root}"));
        }
    }
    scatters(g, dtype, r, ctx);
}

fn scatters(g: &DeviceGroup, dtype: DType, r: &mut StdRng, ctx: &str) {
    let n = g.size();
    let s = Shards::even(dtype, &[2 * n, 6], g.devices(), Range::General, r);
    for (root, t) in s.tensors.iter().enumerate() {
        for (i, (p, &d)) in g.scatter(t, 0).expect(ctx).iter().zip(g.devices()).enumerate() {
            let want = &s.vals[root][i * 12..(i + 1) * 12];
            check_exact(p, d, &[2, 6], want, &format!("{ctx} scatter from {root}"));
        }
    }
    let sizes: Vec<usize> = (0..n).map(|i| if i == 0 { 2 * n - (n - 1) } else { 1 }).collect();
    let parts = g.scatter_sizes(&s.tensors[n - 1], 0, &sizes).expect(ctx);
    let mut at = 0;
    for ((p, &d), &len) in parts.iter().zip(g.devices()).zip(&sizes) {
        let want = &s.vals[n - 1][at * 6..(at + len) * 6];
        check_exact(p, d, &[len, 6], want, &format!("{ctx} scatter_sizes"));
        at += len;
    }
    let swapped = g.all_to_all(&s.tensors, 0).expect(ctx);
    for (j, (t, &d)) in swapped.iter().zip(g.devices()).enumerate() {
        let want: Vec<f64> = s.vals.iter().flat_map(|v| v[j * 12..(j + 1) * 12].to_vec()).collect();
        check_exact(t, d, &[2 * n, 6], &want, &format!("{ctx} all_to_all"));
    }
    coalesced(g, dtype, r, ctx);
}

fn coalesced(g: &DeviceGroup, dtype: DType, r: &mut StdRng, ctx: &str) {
    let a = Shards::even(dtype, &[7], g.devices(), Range::General, r);
    let b = Shards::even(dtype, &[3, 5], g.devices(), Range::General, r);
    let buckets: Vec<Vec<Tensor>> =
        (0..g.size()).map(|i| vec![a.tensors[i].clone(), b.tensors[i].clone()]).collect();
    let op = collectives::ReduceOp::Sum;
    let got = g.all_reduce_coalesced(&buckets, op).expect(ctx);
    for (row, &d) in got.iter().zip(g.devices()) {
        check_reduced(&row[0], d, op, &a.slices(), &format!("{ctx} coalesced a"));
        check_reduced(&row[1], d, op, &b.slices(), &format!("{ctx} coalesced b"));
    }
}

/// The algorithms a group runs without NCCL: `Auto`'s choice and each forced (on groups that are
/// not one call, the one-shot's all_reduce, all_gather and reduce_scatter are forms of their own;
/// its other collectives run as the star).
const NATIVE: [Algorithm; 4] = [Algorithm::Auto, Algorithm::Star, Algorithm::Ring, Algorithm::OneShot];

/// Two CUDA devices: two GPUs where the machine has them; on a one-GPU machine the test runs
/// itself again in a child process with `COLLECTIVES_CUDA_DEVICES=0,0` (two virtual devices of
/// GPU 0, native algorithms only: NCCL needs distinct GPUs). Without CUDA it is skipped, and
/// fails under `REQUIRE_CUDA=1`, which asks for CUDA, not for two GPUs.
#[test]
fn two_cuda_devices() {
    let cuda = available_devices().into_iter().filter(|d| matches!(d, Device::Cuda(_))).count();
    let virtual_devices = std::env::var_os(collectives::CUDA_DEVICES_ENV).is_some();
    match cuda {
        0 => {
            assert!(!cuda_required(), "cuda:0+cuda:1: REQUIRE_CUDA=1 but this machine has no CUDA device");
            println!("skipped cuda:0+cuda:1: no CUDA device");
        }
        1 if !virtual_devices => rerun_on_virtual_devices("two_cuda_devices", "0,0"),
        1 => println!("skipped cuda:0+cuda:1: {} maps one CUDA device", collectives::CUDA_DEVICES_ENV),
        _ => {
            let nccl = !virtual_devices && collectives::collective::nccl_available();
            let algos = [Algorithm::Auto, Algorithm::Star, Algorithm::Ring, Algorithm::Nccl];
            let algos: Vec<Algorithm> = algos.into_iter().filter(|a| *a != Algorithm::Nccl || nccl).collect();
            every_collective("cuda:0+cuda:1", &[CUDA0, CUDA1], &algos);
        }
    }
}

/// Runs test `name` of this binary again in a child process whose CUDA devices are `map`
/// (`COLLECTIVES_CUDA_DEVICES`, read once per process, so it cannot change in this one); passes
/// its output on and fails if it fails.
fn rerun_on_virtual_devices(name: &str, map: &str) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(collectives::CUDA_DEVICES_ENV, map)
        .output()
        .expect("running the test binary again");
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{name} with {}={map} failed", collectives::CUDA_DEVICES_ENV);
    println!("{name}: ran on one GPU as two virtual CUDA devices ({}={map})", collectives::CUDA_DEVICES_ENV);
}

#[test]
fn cuda_with_host_devices() {
    every_collective("cuda:0+cpu:0..=2", &[CUDA0, CPU0, CPU1, CPU2], &NATIVE);
}

/// The small collectives of a CUDA device with host devices, with a Vulkan device beside, of a
/// CUDA device and a Vulkan device alone, and of two CUDA devices with a host device or a Vulkan
/// device (virtual devices of one GPU where `COLLECTIVES_CUDA_DEVICES=0,0`), on both sides of
/// `HOST_STAGED_BELOW_BYTES` and of `HOST_STAGED_CUDA_PAIR_BELOW_BYTES`
/// (`collectives_tests::staged`). Below them a CUDA member is staged through a host device as
/// `staged::cuda_staged_as_measured` spells the rule.
#[test]
fn small_collectives_of_cuda_and_host_devices() {
    use collectives_tests::staged;
    let mut groups = vec![vec![CUDA0, CPU0, CPU1, CPU2], vec![CPU0, CPU1, CPU2, CUDA0], vec![CPU0, CUDA0]];
    groups.extend([vec![CUDA0, VK0, CPU0], vec![VK0, CUDA0, CPU0], vec![CUDA0, VK0], vec![VK0, CUDA0]]);
    groups.retain(|g| present(&format!("{g:?}"), g));
    if available_devices().contains(&CUDA1) {
        groups.push(vec![CUDA0, CUDA1, CPU0]);
        if available_devices().contains(&VK0) {
            groups.push(vec![CUDA0, CUDA1, VK0]);
        }
    }
    staged::small_calls_of_mixed_groups(&groups, staged::cuda_staged_as_measured);
}

/// The all_to_all of a CUDA device and a host device, the two alone, either leading: along
/// contiguous parts (shards `[1, c]`, along dim 1) one CUDA kernel fanned out below
/// `HOST_STAGED_BELOW_BYTES` a shard; along strided parts (shards `[2, c]`) one host call below
/// `HOST_STAGED_CUDA_PAIR_BELOW_BYTES`; the graph at each bound. Every element of every output
/// against the inputs, each output on its member.
#[test]
fn the_small_all_to_all_of_a_cuda_and_host_pair_is_one_call() {
    use collectives::collective::{HOST_STAGED_BELOW_BYTES, HOST_STAGED_CUDA_PAIR_BELOW_BYTES};
    use collectives_tests::staged::{check_outs, check_plan};
    let mut r = rng(fresh_seed());
    for devices in [[CUDA0, CPU0], [CPU0, CUDA0]] {
        if !present(&format!("{devices:?}"), &devices) {
            continue;
        }
        let g = DeviceGroup::new(devices.to_vec()).unwrap();
        for dtype in [DType::F32, DType::BF16, DType::U8, DType::I64] {
            let (fan, pair) =
                (HOST_STAGED_BELOW_BYTES / dtype.size(), HOST_STAGED_CUDA_PAIR_BELOW_BYTES / dtype.size());
            // (rows, columns, (staged, fanned)): even columns, the bounds in elements a shard.
            let cases = [
                (1, (fan - 1) / 2 * 2, (false, true)),
                (1, fan, (false, false)),
                (2, (pair - 1) / 4 * 2, (true, false)),
                (2, pair / 2, (false, false)),
            ];
            for (rows, cols, want_plan) in cases {
                let ctx = format!("all_to_all {devices:?} {dtype} [{rows}, {cols}] along dim 1");
                let vals: Vec<Vec<f64>> = (0..2)
                    .map(|_| collectives_tests::random(dtype, rows * cols, Range::General, &mut r))
                    .collect();
                let src: Vec<Tensor> = vals
                    .iter()
                    .zip(devices)
                    .map(|(v, d)| collectives_tests::tensor(dtype, v, [rows, cols], d))
                    .collect();
                let out = g.all_to_all(&src, 1).unwrap();
                check_plan(&out, want_plan, &ctx);
                let half = cols / 2;
                let part = |v: &Vec<f64>, row: usize, j: usize| v[row * cols + j * half..][..half].to_vec();
                let want: Vec<Vec<f64>> = (0..2)
                    .map(|j| {
                        (0..rows).flat_map(|row| vals.iter().flat_map(move |v| part(v, row, j))).collect()
                    })
                    .collect();
                check_outs(&out, &devices, &want, |_| 0.0, &ctx);
            }
        }
    }
}

/// Groups of 2, 3, 4 and 8 CUDA devices (virtual devices of one GPU on a one-GPU machine:
/// `COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0`), every native algorithm.
#[test]
fn cuda_groups_of_every_size() {
    let cuda: Vec<Device> =
        available_devices().into_iter().filter(|d| matches!(d, Device::Cuda(_))).collect();
    for n in [2, 3, 4, 8].into_iter().filter(|&n| n <= cuda.len()) {
        let algos =
            [Algorithm::Auto, Algorithm::Star, Algorithm::Ring, Algorithm::OneShot, Algorithm::TwoShot];
        every_collective(&format!("cuda:0..{n}"), &cuda[..n], &algos);
    }
}

/// A CUDA and a Vulkan device: on one GPU through its own memory (every size), elsewhere or with
/// `COLLECTIVES_BRIDGE=host` through the host.
#[test]
fn cuda_and_vulkan() {
    every_collective("cuda:0+vulkan:0", &[CUDA0, VK0], &NATIVE);
    every_collective("vulkan:0+cuda:0", &[VK0, CUDA0], &NATIVE);
}

/// Shards of at least the device bridge's 256 KiB cut into smaller parts, a CUDA and a Vulkan
/// device either leading: a contiguous part of the Vulkan shard (in device memory) crosses to
/// the CUDA device by the bridge, read in place, and the Vulkan member's join (all_to_all along
/// dim 0) or fold (the one-shot reduce_scatter) is CUDA's; a strided part (all_to_all along
/// dim 1) is cut out on the Vulkan device. Every element against the f64 reference, every op
/// of the fold, the inputs untouched.
#[test]
fn parts_of_vulkan_shards_in_device_memory() {
    for (name, devices) in [("cuda:0+vulkan:0", [CUDA0, VK0]), ("vulkan:0+cuda:0", [VK0, CUDA0])] {
        if !present(name, &devices) {
            continue;
        }
        let seed = fresh_seed();
        let mut r = rng(seed);
        let g = DeviceGroup::new(devices.to_vec()).unwrap();
        for dtype in [DType::F32, DType::BF16, DType::I32] {
            // Two rows of an even `cols`: a shard of 256 KiB or a little more, parts of half.
            let cols = (collectives::exec::DEVICE_MIN_BYTES / dtype.size()).div_ceil(4) * 2 + 6;
            let ctx = format!("{name} seed {seed} {dtype} [2, {cols}]");
            let s = Shards::even(dtype, &[2, cols], &devices, Range::General, &mut r);
            for (dim, dims) in [(0, [1, cols]), (1, [2, cols / 2])] {
                let out = g.all_to_all(&s.tensors, dim).expect(&ctx);
                for (j, (t, &d)) in out.iter().zip(&devices).enumerate() {
                    let parts: Vec<Vec<f64>> = s
                        .vals
                        .iter()
                        .map(|v| ref_slice(v, &[2, cols], dim, j * dims[dim], dims[dim]))
                        .collect();
                    let parts: Vec<(&[f64], &[usize])> = parts.iter().map(|p| (&p[..], &dims[..])).collect();
                    let want = ref_concat(&parts, dim);
                    check_exact(t, d, &[2, cols], &want, &format!("{ctx} all_to_all along {dim}"));
                }
            }
            for op in all_ops(dtype, &mut r) {
                let s = Shards::even(dtype, &[2, cols], &devices, range_for(op), &mut r);
                let parts = g.using(Algorithm::OneShot).reduce_scatter(&s.tensors, op, 0).expect(&ctx);
                for (i, (t, &d)) in parts.iter().zip(&devices).enumerate() {
                    let rows: Vec<&[f64]> = s.vals.iter().map(|v| &v[i * cols..(i + 1) * cols]).collect();
                    check_reduced(t, d, op, &rows, &format!("{ctx} {op} one-shot reduce_scatter part {i}"));
                }
                s.assert_untouched(&ctx);
            }
            s.assert_untouched(&ctx);
        }
    }
}

#[test]
fn cuda_vulkan_and_host() {
    every_collective("cuda:0+vulkan:0+cpu:0", &[CUDA0, VK0, CPU0], &NATIVE);
    every_collective("vulkan:0+cuda:0+cpu:0", &[VK0, CUDA0, CPU0], &NATIVE);
}

/// Shards of at least `collectives::exec::STREAM_MIN_BYTES`, where a CUDA fold of a host
/// member's shard streams its upload and its download (`exec/stream.rs`): all_reduce, reduce and
/// reduce_scatter (`Auto`'s and the one-shot, whose CUDA member folds its part of the host
/// shard) of every op on f32, bf16 and i32, every element against the f64 reference, the inputs
/// untouched. `cuda:0+cpu:0` folds on CUDA with the host shard uploaded; the three-kind
/// group adds the Vulkan member's shard and result.
fn streamed(name: &str, devices: &[Device]) {
    if !present(name, devices) {
        return;
    }
    let seed = fresh_seed();
    let mut r = rng(seed);
    let n = devices.len();
    let g = DeviceGroup::new(devices.to_vec()).unwrap();
    for dtype in [DType::F32, DType::BF16, DType::I32] {
        let cols = (collectives::exec::STREAM_MIN_BYTES / dtype.size()).div_ceil(3 * n) + 7;
        for op in all_ops(dtype, &mut r) {
            let ctx = format!("{name} seed {seed} {dtype} {op} [{}, {cols}]", 3 * n);
            let s = Shards::even(dtype, &[3 * n, cols], devices, range_for(op), &mut r);
            let inputs = s.slices();
            for (t, &d) in g.all_reduce(&s.tensors, op).expect(&ctx).iter().zip(devices) {
                check_reduced(t, d, op, &inputs, &format!("{ctx} all_reduce"));
            }
            check_reduced(
                &g.reduce(&s.tensors, op).expect(&ctx),
                g.leader(),
                op,
                &inputs,
                &format!("{ctx} reduce"),
            );
            for algo in [Algorithm::Auto, Algorithm::OneShot] {
                let parts = g.using(algo).reduce_scatter(&s.tensors, op, 0).expect(&ctx);
                for (i, (t, &d)) in parts.iter().zip(devices).enumerate() {
                    let rows: Vec<&[f64]> =
                        s.vals.iter().map(|v| &v[i * 3 * cols..(i + 1) * 3 * cols]).collect();
                    check_reduced(t, d, op, &rows, &format!("{ctx} {algo} reduce_scatter part {i}"));
                }
            }
            s.assert_untouched(&ctx);
        }
    }
}

#[test]
fn large_shards_of_cuda_and_host_members() {
    streamed("cuda:0+cpu:0, large", &[CUDA0, CPU0]);
    streamed("cuda:0+vulkan:0+cpu:0, large", &[CUDA0, VK0, CPU0]);
}

#[test]
fn host_devices_with_vulkan_as_non_leader() {
    every_collective("cpu:0..=2+vulkan:0", &[CPU0, CPU1, CPU2, VK0], &NATIVE);
}

#[test]
fn vulkan_leading_host_devices() {
    every_collective("vulkan:0+cpu:0..=2", &[VK0, CPU0, CPU1, CPU2], &NATIVE);
}

#[test]
fn host_only_groups_run_everywhere() {
    // The same checks on virtual devices, so this file's logic is exercised on every machine.
    every_collective("cpu:0..=3", &[CPU0, CPU1, CPU2, Device::Cpu(3)], &NATIVE);
}
