//! The small collectives of a group with host members as one host call, its other members
//! staged through a host member, below `HOST_STAGED_BELOW_BYTES` a shard; the graph at it. And
//! those of a CUDA device and a Vulkan device alone, staged through `cpu:0`; and the all_reduce,
//! all_gather and reduce_scatter of one CUDA device beside them as one CUDA kernel fanned out.
//!
//! Shared by the Vulkan and the CUDA tests: the same collectives, dtypes and sizes on each kind,
//! every output element against an f64 reference, each output's device, and each plan's shape.

use collectives::collective::{HOST_STAGED_BELOW_BYTES, HOST_STAGED_CUDA_PAIR_BELOW_BYTES};
use collectives::{CollectiveKind, DType, Device, DeviceGroup, Plan, ReduceKind, ReduceOp, Tensor};

use crate::{Range, check_all, fold_tol, magnitude, random, ref_reduce, rng, tensor, values};

/// Whether a collective of `kind` of `devices` (the first leads; one a CUDA device, one a host
/// or Vulkan device), from `root` where it is a broadcast or scatter, of shards of `bytes` below
/// `HOST_STAGED_BELOW_BYTES`, and not one [`cuda_fanned_as_measured`] takes, stages its CUDA
/// members through a host device: the rule `host_stages_cuda` documents, spelled as
/// `bench/gpu/46-cuda-staged`, `bench/gpu/47-vulkan-pair` and `bench/gpu/49-pair-calls` measured
/// it. With a host member: three or more members with one CUDA device, every collective with a
/// host call but the all_reduce (folded on the CUDA member, the star's hub whoever leads)
/// beside host devices only; two CUDA devices, the all_to_all; a pair, the all_to_all below
/// `HOST_STAGED_CUDA_PAIR_BELOW_BYTES`. With none: a pair, every collective below that bound but
/// the scatter from the CUDA device; two CUDA devices, the all_to_all and the broadcast.
pub fn cuda_staged_as_measured(devices: &[Device], kind: CollectiveKind, bytes: usize, root: Device) -> bool {
    if cuda_fanned_as_measured(devices, kind) {
        return false;
    }
    let cuda = devices.iter().filter(|d| matches!(d, Device::Cuda(_))).count();
    let vulkan = devices.iter().any(|d| matches!(d, Device::Vulkan(_)));
    let host = devices.iter().any(|d| d.is_host());
    let cuda_fold = kind == CollectiveKind::AllReduce && !vulkan;
    let all_to_all = kind == CollectiveKind::AllToAll;
    let below_pair_bound = bytes < HOST_STAGED_CUDA_PAIR_BELOW_BYTES;
    match (devices.len(), cuda, host) {
        (2, _, true) => all_to_all && below_pair_bound,
        (2, _, false) => {
            below_pair_bound && !(kind == CollectiveKind::Scatter && matches!(root, Device::Cuda(_)))
        }
        (_, 1, _) => !cuda_fold,
        (_, _, true) => all_to_all,
        (_, _, false) => all_to_all || kind == CollectiveKind::Broadcast,
    }
}

/// Whether a collective of `kind` of `devices`, of shards below `HOST_STAGED_BELOW_BYTES`, is one
/// kernel of the group's CUDA device, its result delivered to the others in the kernel's pass:
/// the rule `cuda_fans_out` documents, spelled as `bench/gpu/49-pair-calls` (runs e and f)
/// and `bench/gpu/50-all-to-all` measured it. The all_reduce, all_gather and reduce_scatter of
/// one CUDA device and host or Vulkan devices, a pair with a Vulkan member or three or more with
/// none; of a CUDA device and a host device alone, the reduce_scatter; the all_to_all of any
/// such pair, and of three or four members with no Vulkan one.
pub fn cuda_fanned_as_measured(devices: &[Device], kind: CollectiveKind) -> bool {
    use CollectiveKind::{AllGather, AllReduce, AllToAll, ReduceScatter};
    let count = |f: fn(&Device) -> bool| devices.iter().filter(|d| f(d)).count();
    let (cuda, vulkan) = (count(|d| matches!(d, Device::Cuda(_))), count(|d| matches!(d, Device::Vulkan(_))));
    let others_fit = cuda + vulkan + count(|d| d.is_host()) == devices.len();
    let shape = match devices.len() {
        2 => vulkan == 1 || matches!(kind, ReduceScatter | AllToAll),
        // The all_to_all up to four members (`FANNED_ALL_TO_ALL_MAX_MEMBERS`).
        n => n > 2 && vulkan == 0 && (kind != AllToAll || n <= 4),
    };
    matches!(kind, AllReduce | AllGather | ReduceScatter | AllToAll) && cuda == 1 && others_fit && shape
}

/// Shard i of `vals` on device i (shape `[len]` each).
fn shards(dtype: DType, vals: &[Vec<f64>], devices: &[Device]) -> Vec<Tensor> {
    vals.iter().zip(devices).map(|(v, &d)| tensor(dtype, v, [v.len()], d)).collect()
}

/// Whether `plan` is one host call with the members that are not host devices staged through a
/// host device, and nothing else (no hop, no other kernel); `false` where it has no host call.
/// Panics on a plan with a host call of any other shape.
pub fn staged_call(plan: &Plan, ctx: &str) -> bool {
    let calls: Vec<&str> =
        plan.kernels.iter().map(|k| k.op.as_str()).filter(|op| op.contains("host")).collect();
    if calls.is_empty() {
        return false;
    }
    assert_eq!(calls.len(), 1, "{ctx}: one host call\n{plan}");
    assert!(
        calls[0].starts_with("collective host") && calls[0].contains("staged through cpu:"),
        "{ctx}\n{plan}"
    );
    assert!(plan.hops.is_empty() && plan.kernels.len() == 1, "{ctx}: the staging is the call's own\n{plan}");
    true
}

/// Whether `plan` is one kernel of a CUDA device fanned out to the other members
/// (`backend/fanned.rs`), and nothing else.
pub fn fanned_call(plan: &Plan) -> bool {
    let fanned = |op: &str| op.starts_with("collective") && op.contains("fanned out from cuda:");
    plan.hops.is_empty() && plan.kernels.len() == 1 && fanned(&plan.kernels[0].op)
}

/// What a collective's plan must show: one host call staged through a host device
/// ([`staged_call`]), one CUDA kernel fanned out ([`fanned_call`]), or neither (the graph).
pub fn check_plan(outs: &[Tensor], (staged, fanned): (bool, bool), ctx: &str) {
    let plan = Plan::of(outs);
    let what = match (staged, fanned) {
        (true, _) => "one staged host call",
        (false, true) => "one CUDA kernel fanned out",
        (false, false) => "through the graph",
    };
    let got = (staged_call(&plan, ctx), fanned_call(&plan));
    assert_eq!(got, (staged, fanned), "{ctx}: {what}\n{plan}");
}

/// `want[i]` against output i, every element, and each on member i.
pub fn check_outs(
    outs: &[Tensor],
    devices: &[Device],
    want: &[Vec<f64>],
    tol: impl Fn(usize) -> f64 + Copy,
    ctx: &str,
) {
    assert_eq!(outs.len(), want.len(), "{ctx}");
    for (i, (t, w)) in outs.iter().zip(want).enumerate() {
        assert_eq!(t.device(), devices[i], "{ctx}: output {i}");
        check_all(&values(t), w, tol, &format!("{ctx} on {}", devices[i]));
    }
}

/// Every collective of `DeviceGroup` with one output per member (and the root's broadcast and
/// scatter, from the first member and from the last) on each group of `groups` (host devices
/// and others, or Vulkan and CUDA devices), on shards one step below `HOST_STAGED_BELOW_BYTES`
/// and at it, and one step below `HOST_STAGED_CUDA_PAIR_BELOW_BYTES` and at it, against an f64
/// reference, every element of every output. Below the first bound a collective that `staged`
/// accepts (the group's members, its kind, the shard's bytes, the root of a broadcast or scatter
/// or else the leader) must be one host call with the other members staged; every other must go
/// through the graph. Then an uneven all_gather whose one large shard, on a member that is not a
/// host device, decides the side of the bound.
pub fn small_calls_of_mixed_groups(
    groups: &[Vec<Device>],
    staged: impl Fn(&[Device], CollectiveKind, usize, Device) -> bool,
) {
    let seed = crate::fresh_seed();
    println!("seed {seed}");
    let mut r = rng(seed);
    for devices in groups {
        let g = DeviceGroup::new(devices.clone()).unwrap();
        let n = devices.len();
        for dtype in [DType::F32, DType::BF16, DType::I32, DType::U8] {
            let bounds =
                [HOST_STAGED_BELOW_BYTES, HOST_STAGED_CUDA_PAIR_BELOW_BYTES].map(|b| b / dtype.size());
            // About each bound, the largest multiple of n below it and the smallest at or past it.
            for len in bounds.into_iter().flat_map(|at| [(at - 1) / n * n, at.div_ceil(n) * n]) {
                let below = len * dtype.size() < HOST_STAGED_BELOW_BYTES;
                let ctx = format!("{devices:?} {dtype} {len}");
                let vals: Vec<Vec<f64>> =
                    (0..n).map(|_| random(dtype, len, Range::General, &mut r)).collect();
                let refs: Vec<&[f64]> = vals.iter().map(|v| v.as_slice()).collect();
                let src = shards(dtype, &vals, devices);
                let sum = ref_reduce(dtype, ReduceKind::Sum, None, &refs);
                let mag = magnitude(&refs);
                let tol = |i: usize| fold_tol(dtype, n, mag[i]);
                let part = len / n;
                let cut = |v: &[f64], i: usize| v[i * part..(i + 1) * part].to_vec();
                let plan = |outs: &[Tensor], kind: CollectiveKind, root: usize, ctx: &str| {
                    let staged = below && staged(devices, kind, len * dtype.size(), devices[root]);
                    let fanned = below && cuda_fanned_as_measured(devices, kind);
                    check_plan(outs, (staged, fanned), &format!("{} {ctx}", kind.name()))
                };

                let out = g.all_reduce(&src, ReduceOp::Sum).unwrap();
                plan(&out, CollectiveKind::AllReduce, 0, &ctx);
                check_outs(&out, devices, &vec![sum.clone(); n], tol, &format!("all_reduce {ctx}"));

                let out = g.reduce_scatter(&src, ReduceOp::Sum, 0).unwrap();
                plan(&out, CollectiveKind::ReduceScatter, 0, &ctx);
                let want: Vec<Vec<f64>> = (0..n).map(|i| cut(&sum, i)).collect();
                for (i, t) in out.iter().enumerate() {
                    assert_eq!(t.device(), devices[i], "reduce_scatter {ctx}");
                    let ctx = format!("reduce_scatter {ctx} part {i}");
                    check_all(&values(t), &want[i], |k| tol(i * part + k), &ctx);
                }

                let exact = |_: usize| 0.0;
                let out = g.all_gather(&src, 0).unwrap();
                plan(&out, CollectiveKind::AllGather, 0, &ctx);
                check_outs(&out, devices, &vec![vals.concat(); n], exact, &format!("all_gather {ctx}"));

                let out = g.all_to_all(&src, 0).unwrap();
                plan(&out, CollectiveKind::AllToAll, 0, &ctx);
                let want: Vec<Vec<f64>> =
                    (0..n).map(|j| vals.iter().flat_map(|v| cut(v, j)).collect()).collect();
                check_outs(&out, devices, &want, exact, &format!("all_to_all {ctx}"));

                for root in [0, n - 1] {
                    let ctx = format!("{ctx} from {}", devices[root]);
                    let out = g.broadcast(&src[root]).unwrap();
                    plan(&out, CollectiveKind::Broadcast, root, &ctx);
                    let want = vec![vals[root].clone(); n];
                    check_outs(&out, devices, &want, exact, &format!("broadcast {ctx}"));
                    let out = g.scatter(&src[root], 0).unwrap();
                    plan(&out, CollectiveKind::Scatter, root, &ctx);
                    let want: Vec<Vec<f64>> = (0..n).map(|i| cut(&vals[root], i)).collect();
                    check_outs(&out, devices, &want, exact, &format!("scatter {ctx}"));
                }
            }
        }
        uneven_all_gather(&g, &mut r, &staged);
        println!("{devices:?}: every collective checked on both sides of the bound");
    }
}

/// An all_gather of `g` whose one large shard is on its first member that is not a host device,
/// the others of 3 + i elements: below the bound by one element and at it.
fn uneven_all_gather(
    g: &DeviceGroup,
    r: &mut rand::rngs::StdRng,
    staged: &impl Fn(&[Device], CollectiveKind, usize, Device) -> bool,
) {
    let devices = g.devices();
    let other = devices.iter().position(|d| !d.is_host()).expect("a member that is not a host device");
    let at = HOST_STAGED_BELOW_BYTES / 4;
    for (big, below) in [(at - 1, true), (at, false)] {
        let lens: Vec<usize> = (0..devices.len()).map(|i| if i == other { big } else { 3 + i }).collect();
        let vals: Vec<Vec<f64>> = lens.iter().map(|&l| random(DType::F32, l, Range::General, r)).collect();
        let ctx = format!("uneven all_gather {devices:?} {lens:?}");
        let out = g.all_gather(&shards(DType::F32, &vals, devices), 0).unwrap();
        let kind = CollectiveKind::AllGather;
        let expect = (
            below && staged(devices, kind, 4 * big, devices[0]),
            below && cuda_fanned_as_measured(devices, kind),
        );
        check_plan(&out, expect, &ctx);
        check_outs(&out, devices, &vec![vals.concat(); devices.len()], |_| 0.0, &ctx);
    }
}
