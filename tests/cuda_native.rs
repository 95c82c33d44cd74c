//! The native CUDA path on groups of 2, 3, 4 and 8 CUDA devices — virtual devices of one GPU
//! (`COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0`) on a one-GPU machine — against f64 references:
//! the star all_reduce (the leader's one kernel reads every shard in place and writes every
//! member's output) and the one-shot all_reduce (every member reads every shard in place) with
//! every op and dtype at sizes 1, 7 and 65537, their results bitwise identical on every member;
//! the two-shot all_reduce (each member folds its part, then copies the others') the same way, at
//! sizes that leave members without a part and at one that gives every member an uneven one; the
//! one-shot reduce_scatter, all_gather (uneven shards), broadcast (every root) and all_to_all,
//! each one multi-device call, along outer and inner dims, and the same through the star (each
//! one call of the leader or root; a reduce_scatter or all_to_all along a dim that does not cut
//! contiguous parts goes through the graph); the scatter (one form: one call of the root where
//! the parts are contiguous, uneven and empty parts too); and the automatic choice taking them
//! where NCCL cannot run. The one-shot
//! checks also run on virtual host devices.
//!
//! Skipped (and says so) without CUDA devices, and for group sizes the machine does not list;
//! `REQUIRE_CUDA=1` makes a missing CUDA driver a failure.

#[path = "cuda_common/mod.rs"]
mod cuda_common;

use collectives::collective::{TWO_SHOT_MIN_BYTES, on_one_gpu};
use collectives::{Algorithm, CollectiveKind, DType, DeviceGroup};
use collectives_tests::collective::{
    DTYPES, Shards, all_ops, check_exact, check_reduced, cpu_group, op_tol, range_for, ref_concat,
    ref_narrow, ref_op, with_dim,
};
use collectives_tests::{Range, check_all, fresh_seed, random, rng, tensor, values};
use cuda_common::cuda_devices;
use rand::rngs::StdRng;

const SIZES: [usize; 4] = [2, 3, 4, 8];

/// The groups `Cuda(0..n)` this machine lists, for each n of [`SIZES`].
fn groups() -> Vec<DeviceGroup> {
    let have = cuda_devices();
    let groups: Vec<DeviceGroup> = SIZES
        .iter()
        .filter(|&&n| n <= have.len())
        .map(|&n| DeviceGroup::new(have[..n].to_vec()).expect("distinct devices"))
        .collect();
    if !have.is_empty() && groups.len() < SIZES.len() {
        println!(
            "skipped: groups larger than {} (set COLLECTIVES_CUDA_DEVICES for virtual devices)",
            have.len()
        );
    }
    groups
}

/// Whether two results are the same bits.
fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[test]
fn star_all_reduce_every_op_dtype_and_size() {
    all_reduce_on(groups(), Algorithm::Star);
}

#[test]
fn one_shot_all_reduce_every_op_dtype_and_size() {
    all_reduce_on(groups(), Algorithm::OneShot);
}

/// 1 and 7 elements leave members without a part; 65537 gives each of 8 members one, the last
/// shorter, in every dtype.
#[test]
fn two_shot_all_reduce_every_op_dtype_and_size() {
    all_reduce_on(groups(), Algorithm::TwoShot);
}

/// The same on virtual host devices (which read each other in place too), so every machine runs
/// this file's logic (about 30 s on two cores, so with `--features slow`).
#[test]
#[cfg_attr(not(feature = "slow"), ignore = "slow: run with --features slow")]
fn one_shot_all_reduce_on_host_devices() {
    all_reduce_on(SIZES.iter().map(|&n| cpu_group(n)).collect(), Algorithm::OneShot);
}

fn all_reduce_on(groups: Vec<DeviceGroup>, algo: Algorithm) {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for g in groups {
        let g = g.with_algorithm(algo);
        for dtype in DTYPES {
            for op in all_ops(dtype, &mut r) {
                for len in [1usize, 7, 65537] {
                    let ctx = format!("seed {seed} {algo} n={} {dtype} {op} len {len}", g.size());
                    let s = Shards::even(dtype, &[len], g.devices(), range_for(op), &mut r);
                    let out = g.all_reduce(&s.tensors, op).expect(&ctx);
                    let first = values(&out[0]);
                    for (t, &d) in out.iter().zip(g.devices()) {
                        check_reduced(t, d, op, &s.slices(), &ctx);
                        assert!(same_bits(&values(t), &first), "{ctx}: {d} differs from {}", g.devices()[0]);
                    }
                    s.assert_untouched(&ctx);
                }
            }
        }
    }
}

#[test]
fn one_shot_reduce_scatter_all_gather_and_broadcast() {
    others_on(groups(), Algorithm::OneShot);
}

/// The star: each one call of the leader (a broadcast's root); a reduce_scatter along a dim that
/// does not cut contiguous parts goes through the graph.
#[test]
fn star_reduce_scatter_all_gather_and_broadcast() {
    others_on(groups(), Algorithm::Star);
}

/// The same on virtual host devices, where the one-shot of these collectives is the host star.
#[test]
#[cfg_attr(not(feature = "slow"), ignore = "slow: run with --features slow")]
fn one_shot_reduce_scatter_all_gather_and_broadcast_on_host_devices() {
    others_on(SIZES.iter().map(|&n| cpu_group(n)).collect(), Algorithm::OneShot);
}

fn others_on(groups: Vec<DeviceGroup>, algo: Algorithm) {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for g in groups {
        let g = g.with_algorithm(algo);
        for dtype in DTYPES {
            let ctx = format!("seed {seed} {algo} n={} {dtype}", g.size());
            for op in all_ops(dtype, &mut r) {
                reduce_scatter(&g, dtype, op, &mut r, &format!("{ctx} {op}"));
            }
            all_gather(&g, dtype, &mut r, &ctx);
            broadcast(&g, dtype, &mut r, &ctx);
            all_to_all(&g, dtype, &mut r, &ctx);
            scatter(&g, dtype, &mut r, &ctx);
        }
    }
}

/// Parts of 1, 7 and 65537 elements along dim 0 (the call), and of 2 columns along dim 1 (no
/// contiguous parts: the graph's star, or its one-shot, each member folding its own columns).
fn reduce_scatter(g: &DeviceGroup, dtype: DType, op: collectives::ReduceOp, r: &mut StdRng, ctx: &str) {
    let n = g.size();
    for (shape, dim) in [(vec![n], 0), (vec![n * 7, 1], 0), (vec![n * 65537], 0), (vec![3, n * 2], 1)] {
        let ctx = format!("{ctx} reduce_scatter {shape:?} along {dim}");
        let s = Shards::even(dtype, &shape, g.devices(), range_for(op), r);
        let out = g.reduce_scatter(&s.tensors, op, dim).expect(&ctx);
        let want = ref_op(dtype, op, &s.slices());
        let tol = op_tol(dtype, op, &s.slices(), &want);
        let part = shape[dim] / n;
        for (i, (t, &d)) in out.iter().zip(g.devices()).enumerate() {
            assert_eq!((t.device(), t.shape().dims()), (d, with_dim(&shape, dim, part).as_slice()), "{ctx}");
            let want = ref_narrow(&want, &shape, dim, i * part, part);
            let tol = ref_narrow(&tol, &shape, dim, i * part, part);
            check_all(&values(t), &want, |k| tol[k], &format!("{ctx}: part {i}"));
        }
        s.assert_untouched(&ctx);
    }
}

/// Uneven shards (shard i has 1 + 7i rows, or 65537 elements for the last), joined along dim 0
/// and along dim 1.
fn all_gather(g: &DeviceGroup, dtype: DType, r: &mut StdRng, ctx: &str) {
    let n = g.size();
    let rows = |i: usize| if i + 1 == n { 65537 } else { 1 + 7 * i };
    for dim in [0, 1] {
        let shapes: Vec<Vec<usize>> = (0..n).map(|i| with_dim(&[2, 2], dim, rows(i))).collect();
        let ctx = format!("{ctx} all_gather along {dim}");
        let s = Shards::of_shapes(dtype, &shapes, g.devices(), Range::General, r);
        let out = g.all_gather(&s.tensors, dim).expect(&ctx);
        let parts: Vec<(&[f64], &[usize])> =
            s.vals.iter().zip(&shapes).map(|(v, sh)| (&v[..], &sh[..])).collect();
        let want = ref_concat(&parts, dim);
        let joined = with_dim(&[2, 2], dim, (0..n).map(rows).sum());
        for (t, &d) in out.iter().zip(g.devices()) {
            check_exact(t, d, &joined, &want, &format!("{ctx}: on {d}"));
        }
    }
}

/// Parts of 1, 7 rows of 3 and 65537 elements along dim 0 (one call: the leader's launches copy
/// every part, or member j copies part j of every shard), and of 2 columns along dim 1 (no
/// contiguous parts: the graph's hops and joins).
fn all_to_all(g: &DeviceGroup, dtype: DType, r: &mut StdRng, ctx: &str) {
    let n = g.size();
    for (shape, dim) in [(vec![n], 0), (vec![n * 7, 3], 0), (vec![n * 65537], 0), (vec![3, n * 2], 1)] {
        let ctx = format!("{ctx} all_to_all {shape:?} along {dim}");
        let s = Shards::even(dtype, &shape, g.devices(), Range::General, r);
        let out = g.all_to_all(&s.tensors, dim).expect(&ctx);
        let part = shape[dim] / n;
        let part_shape = with_dim(&shape, dim, part);
        for (j, (t, &d)) in out.iter().zip(g.devices()).enumerate() {
            let parts: Vec<Vec<f64>> =
                s.vals.iter().map(|v| ref_narrow(v, &shape, dim, j * part, part)).collect();
            let parts: Vec<(&[f64], &[usize])> = parts.iter().map(|p| (&p[..], &part_shape[..])).collect();
            check_exact(t, d, &shape, &ref_concat(&parts, dim), &format!("{ctx}: on {d}"));
        }
        s.assert_untouched(&ctx);
    }
}

/// 1, 7 and 65537 elements from every root.
fn broadcast(g: &DeviceGroup, dtype: DType, r: &mut StdRng, ctx: &str) {
    for len in [1usize, 7, 65537] {
        for (root, &from) in g.devices().iter().enumerate() {
            let ctx = format!("{ctx} broadcast {len} from {from}");
            let vals = random(dtype, len, Range::General, r);
            let t = tensor(dtype, &vals, [len], from);
            let out = g.broadcast(&t).expect(&ctx);
            assert!(out[root].same_node(&t), "{ctx}: the root's entry is its tensor");
            for (o, &d) in out.iter().zip(g.devices()) {
                check_exact(o, d, &[len], &vals, &format!("{ctx}: on {d}"));
            }
        }
    }
}

/// From every root: parts of 1, 7 rows of 3 and 65537 elements along dim 0 (one call of the
/// root: its part a view, the others copied by its launch), of 2 columns along dim 1 (no
/// contiguous parts: the graph's views and hops); and uneven parts along dim 0
/// (`scatter_sizes`), one of them empty.
fn scatter(g: &DeviceGroup, dtype: DType, r: &mut StdRng, ctx: &str) {
    let n = g.size();
    for (shape, dim) in [(vec![n], 0), (vec![n * 7, 3], 0), (vec![n * 65537], 0), (vec![3, n * 2], 1)] {
        let part = shape[dim] / n;
        for &from in g.devices() {
            let ctx = format!("{ctx} scatter {shape:?} along {dim} from {from}");
            let vals = random(dtype, shape.iter().product(), Range::General, r);
            let t = tensor(dtype, &vals, &shape[..], from);
            let out = g.scatter(&t, dim).expect(&ctx);
            for (i, (o, &d)) in out.iter().zip(g.devices()).enumerate() {
                let want = ref_narrow(&vals, &shape, dim, i * part, part);
                check_exact(o, d, &with_dim(&shape, dim, part), &want, &format!("{ctx}: part {i}"));
            }
            assert_eq!(values(&t), vals, "{ctx}: the root's tensor unchanged");
        }
    }
    // Member i gets 3i + 1 rows of 5, but member 1 none.
    let sizes: Vec<usize> = (0..n).map(|i| if i == 1 { 0 } else { 3 * i + 1 }).collect();
    let rows: usize = sizes.iter().sum();
    let from = g.devices()[n - 1];
    let ctx = format!("{ctx} scatter_sizes {sizes:?} from {from}");
    let vals = random(dtype, rows * 5, Range::General, r);
    let t = tensor(dtype, &vals, [rows, 5], from);
    let out = g.scatter_sizes(&t, 0, &sizes).expect(&ctx);
    let mut at = 0;
    for ((o, &d), &len) in out.iter().zip(g.devices()).zip(&sizes) {
        check_exact(o, d, &[len, 5], &vals[at * 5..(at + len) * 5], &format!("{ctx}: on {d}"));
        at += len;
    }
}

#[test]
fn the_automatic_choice_takes_one_call_where_nccl_cannot_run() {
    use CollectiveKind::{AllGather, AllReduce, AllToAll, Broadcast, ReduceScatter};
    for g in groups() {
        for kind in [AllReduce, ReduceScatter, AllGather, Broadcast, AllToAll] {
            let plan = g.plan(kind, [1024 * g.size()], DType::F32).expect("plan");
            let nccl = plan.algorithm == Some(Algorithm::Nccl);
            // A small all_reduce takes the star, and so do the others on three or more devices,
            // and on two logical devices of one GPU (`choose_without_nccl`); either is one call.
            // (all_to_all: across GPUs each member pulls its parts.)
            let one_gpu = on_one_gpu(g.devices());
            let star = match kind {
                AllReduce => true,
                AllToAll => one_gpu,
                _ => one_gpu || g.size() > 2,
            };
            let want = if star { Algorithm::Star } else { Algorithm::OneShot };
            assert!(
                nccl || plan.algorithm == Some(want),
                "{:?}: a small {kind:?} on CUDA devices runs NCCL or {want}\n{plan}",
                g.devices()
            );
            if !nccl {
                assert!(plan.hops.is_empty(), "one call moves nothing\n{plan}");
                let call = format!("collective cuda {}{}", if star { "star " } else { "" }, kind.name());
                assert!(plan.kernels.iter().all(|k| k.op == call), "one call\n{plan}");
            }
            println!("{} devices, {kind:?}: {:?}", g.size(), plan.algorithm);
        }
        // A large all_reduce: the two-shot across GPUs, the star on logical devices of one GPU;
        // the other collectives the one-shot on either.
        let numel = TWO_SHOT_MIN_BYTES / 4;
        let one_gpu = on_one_gpu(g.devices());
        let plan = g.plan(CollectiveKind::AllReduce, [numel], DType::F32).expect("plan");
        let want = if one_gpu { Algorithm::Star } else { Algorithm::TwoShot };
        assert!(
            plan.algorithm == Some(Algorithm::Nccl) || plan.algorithm == Some(want),
            "{:?}: a large all_reduce runs NCCL or {want}\n{plan}",
            g.devices()
        );
        for kind in [ReduceScatter, AllGather, Broadcast, AllToAll] {
            let plan = g.plan(kind, [numel * g.size()], DType::F32).expect("plan");
            let want = Algorithm::OneShot;
            assert!(
                plan.algorithm == Some(Algorithm::Nccl) || plan.algorithm == Some(want),
                "{:?}: a large {kind:?} runs NCCL or {want}\n{plan}",
                g.devices()
            );
        }
    }
}
