//! Collectives over groups `Cpu(0..3) + Vulkan(0)`, with the Vulkan device as the leader and as
//! a non-leader.
//!
//! The first two tests spell each collective as the star algorithm (copies to the leader, one
//! n-ary kernel there, copies out) through the public `Tensor` API, so the Vulkan paths a
//! collective takes (upload, download, n-ary reduce and concat on Vulkan next to CPU devices,
//! cross-device inputs inserted by the graph pass) are exercised one by one. The last calls
//! `DeviceGroup`'s collectives on both sides of `HOST_STAGED_BELOW_BYTES`, where a small
//! collective of such a group becomes one host call with the Vulkan member staged through it.

use collectives::{DType, Device, ReduceKind, Scale, Tensor};
use collectives_tests::{
    Range, check_all, fold_tol, random, ref_reduce, rng, tensor, values, vulkan_required,
};

const VK: Device = Device::Vulkan(0);

/// The two group orders: Vulkan leading, and Vulkan last.
fn groups() -> [Vec<Device>; 2] {
    let cpus = [Device::Cpu(0), Device::Cpu(1), Device::Cpu(2)];
    let mut lead = vec![VK];
    lead.extend(cpus);
    let mut last = cpus.to_vec();
    last.push(VK);
    [lead, last]
}

fn have_vulkan() -> bool {
    match Tensor::from_vec(vec![1u8], [1], VK).and_then(|t| t.to_vec::<u8>()) {
        Ok(_) => true,
        Err(e) if vulkan_required() => panic!("REQUIRE_VULKAN=1 but {VK} does not work: {e}"),
        Err(e) => {
            println!("skipped: no Vulkan device ({e})");
            false
        }
    }
}

/// Shard i of `vals` on device i (shape `[len]` each).
fn shards(dtype: DType, vals: &[Vec<f64>], devices: &[Device]) -> Vec<Tensor> {
    vals.iter().zip(devices).map(|(v, &d)| tensor(dtype, v, [v.len()], d)).collect()
}

/// reduce: every shard folded on the leader (the first device) in one kernel.
fn star_reduce(shards: &[Tensor], kind: ReduceKind, scale: Option<Scale>) -> Tensor {
    Tensor::reduce(shards, kind, scale).unwrap()
}

/// broadcast: `t` copied to every device.
fn star_broadcast(t: &Tensor, devices: &[Device]) -> Vec<Tensor> {
    devices.iter().map(|&d| t.copy_to_device(d).unwrap()).collect()
}

/// gather: the shards concatenated on the leader.
fn star_gather(shards: &[Tensor], leader: Device) -> Tensor {
    let local: Vec<Tensor> = shards.iter().map(|s| s.copy_to_device(leader).unwrap()).collect();
    Tensor::concat(&local, 0).unwrap()
}

/// scatter: `t` cut into equal parts, part i copied to device i.
fn star_scatter(t: &Tensor, devices: &[Device]) -> Vec<Tensor> {
    let part = t.numel() / devices.len();
    let parts = devices
        .iter()
        .enumerate()
        .map(|(i, &d)| t.narrow(0, i * part, part).unwrap().copy_to_device(d).unwrap());
    parts.collect()
}

#[test]
fn reduce_and_all_reduce_with_vulkan_leading_and_not() {
    if !have_vulkan() {
        return;
    }
    let seed = collectives_tests::fresh_seed();
    println!("seed {seed}");
    let mut r = rng(seed);
    for devices in groups() {
        for dtype in [DType::F32, DType::F16, DType::BF16, DType::I32, DType::U8, DType::F64, DType::I64] {
            let vals: Vec<Vec<f64>> = (0..4).map(|_| random(dtype, 1001, Range::General, &mut r)).collect();
            let refs: Vec<&[f64]> = vals.iter().map(|v| v.as_slice()).collect();
            for (kind, scale) in
                [(ReduceKind::Sum, None), (ReduceKind::Sum, Some(Scale::Div(4.0))), (ReduceKind::Max, None)]
            {
                let ctx = format!("{devices:?} {dtype} {kind:?} {scale:?}");
                let on_leader = star_reduce(&shards(dtype, &vals, &devices), kind, scale);
                assert_eq!(on_leader.device(), devices[0]);
                let want = ref_reduce(dtype, kind, scale, &refs);
                let mag = collectives_tests::magnitude(&refs);
                let tol = |i: usize| fold_tol(dtype, 5, mag[i]);
                check_all(&values(&on_leader), &want, tol, &format!("reduce {ctx}"));
                for (t, &d) in star_broadcast(&on_leader, &devices).iter().zip(&devices) {
                    assert_eq!(t.device(), d);
                    check_all(&values(t), &want, tol, &format!("all_reduce {ctx} on {d}"));
                }
            }
        }
    }
}

#[test]
fn gather_scatter_and_all_to_all_with_vulkan_leading_and_not() {
    if !have_vulkan() {
        return;
    }
    let mut r = rng(collectives_tests::fresh_seed());
    for devices in groups() {
        for dtype in DType::ALL {
            let n = devices.len();
            // Uneven shards for gather (lengths 5, 6, 7, 8: unaligned u8/f16 offsets).
            let vals: Vec<Vec<f64>> = (0..n).map(|i| random(dtype, 5 + i, Range::General, &mut r)).collect();
            let flat: Vec<f64> = vals.concat();
            let cat = star_gather(&shards(dtype, &vals, &devices), devices[0]);
            assert_eq!(cat.device(), devices[0]);
            check_all(&values(&cat), &flat, |_| 0.0, &format!("gather {devices:?} {dtype}"));
            for t in star_broadcast(&cat, &devices) {
                check_all(
                    &values(&t),
                    &flat,
                    |_| 0.0,
                    &format!("all_gather {devices:?} {dtype} on {}", t.device()),
                );
            }
            // scatter from the leader: 4 parts of 3.
            let whole = random(dtype, 3 * n, Range::General, &mut r);
            let parts = star_scatter(&tensor(dtype, &whole, [3 * n], devices[0]), &devices);
            for (i, p) in parts.iter().enumerate() {
                assert_eq!(p.device(), devices[i]);
                check_all(
                    &values(p),
                    &whole[3 * i..3 * i + 3],
                    |_| 0.0,
                    &format!("scatter {devices:?} {dtype} part {i}"),
                );
            }
            // all_to_all: device j gets part j of every shard, in shard order.
            let blocks: Vec<Vec<f64>> =
                (0..n).map(|_| random(dtype, 2 * n, Range::General, &mut r)).collect();
            let src = shards(dtype, &blocks, &devices);
            for (j, &d) in devices.iter().enumerate() {
                let mine: Vec<Tensor> =
                    src.iter().map(|s| s.narrow(0, 2 * j, 2).unwrap().copy_to_device(d).unwrap()).collect();
                let got = Tensor::concat(&mine, 0).unwrap();
                let want: Vec<f64> =
                    blocks.iter().flat_map(|b| b[2 * j..2 * j + 2].iter().copied()).collect();
                check_all(&values(&got), &want, |_| 0.0, &format!("all_to_all {devices:?} {dtype} to {d}"));
            }
        }
    }
}

/// Every collective with one output per member below `HOST_STAGED_BELOW_BYTES` a shard (one host
/// call, the Vulkan member staged) and at it (the graph), on `vulkan:0` leading three host
/// devices, last, and beside one (`collectives_tests::staged`).
#[test]
fn small_collectives_of_host_and_vulkan_devices_are_one_host_call_below_the_bound() {
    if !have_vulkan() {
        return;
    }
    let pair = vec![Device::Cpu(0), VK];
    let groups: Vec<Vec<Device>> = groups().into_iter().chain([pair]).collect();
    collectives_tests::staged::small_calls_of_mixed_groups(&groups, |_, _, _, _| true);
}
