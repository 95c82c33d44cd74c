//! The native CUDA path on groups of 2, 3, 4 and 8 CUDA devices — virtual devices of one GPU
//! (`COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0`) on a one-GPU machine — against f64 references:
//! the one-shot all_reduce (every member reads every shard in place) with every op and dtype at
//! sizes 1, 7 and 65537, its results bitwise identical on every member, and the automatic choice
//! taking it where NCCL cannot run. The one-shot checks also run on virtual host devices.
//!
//! Skipped (and says so) without CUDA devices, and for group sizes the machine does not list;
//! `REQUIRE_CUDA=1` makes a missing CUDA driver a failure.

#[path = "cuda_common/mod.rs"]
mod cuda_common;

use collectives::{Algorithm, CollectiveKind, DType, Device, DeviceGroup};
use collectives_tests::collective::{DTYPES, Shards, all_ops, check_reduced, cpu_group, range_for};
use collectives_tests::{fresh_seed, rng, values};
use cuda_common::cuda_devices;

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
fn one_shot_all_reduce_every_op_dtype_and_size() {
    one_shot_on(groups());
}

/// The same on virtual host devices (which read each other in place too), so every machine runs
/// this file's logic (about 30 s on two cores, so with `--features slow`).
#[test]
#[cfg_attr(not(feature = "slow"), ignore = "slow: run with --features slow")]
fn one_shot_all_reduce_on_host_devices() {
    one_shot_on(SIZES.iter().map(|&n| cpu_group(n)).collect());
}

fn one_shot_on(groups: Vec<DeviceGroup>) {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for g in groups {
        let g = g.with_algorithm(Algorithm::OneShot);
        for dtype in DTYPES {
            for op in all_ops(dtype, &mut r) {
                for len in [1usize, 7, 65537] {
                    let ctx = format!("seed {seed} n={} {dtype} {op} len {len}", g.size());
                    let s = Shards::even(dtype, &[len], g.devices(), range_for(op), &mut r);
                    let out = g.all_reduce(&s.tensors, op).expect(&ctx);
                    let first = values(&out[0]);
                    for (t, &d) in out.iter().zip(g.devices()) {
                        check_reduced(t, d, op, &s.slices(), &ctx);
                        assert!(same_bits(&values(t), &first), "{ctx}: {d} differs from {}", g.devices()[0]);
                    }
                }
            }
        }
    }
}

#[test]
fn the_automatic_choice_takes_one_shot_where_nccl_cannot_run() {
    for g in groups() {
        let plan = g.plan(CollectiveKind::AllReduce, [1024], DType::F32).expect("plan");
        let physical: Vec<Device> = g.devices().to_vec();
        let nccl = plan.algorithm == Some(Algorithm::Nccl);
        assert!(
            nccl || plan.algorithm == Some(Algorithm::OneShot),
            "{physical:?}: a small all_reduce on CUDA devices runs NCCL or one-shot\n{plan}"
        );
        if !nccl {
            assert!(plan.hops.is_empty(), "one-shot moves nothing\n{plan}");
        }
        println!("{} devices: {:?}", g.size(), plan.algorithm);
    }
}
