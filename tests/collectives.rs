//! The reducing collectives — `reduce`, `all_reduce`, `reduce_scatter` — for every `ReduceOp`,
//! every dtype, groups of 1 to 8 virtual CPU devices and every algorithm setting, against f64
//! references of the exact inputs; every element and the device of every result checked.

use collectives::{DType, Device, DeviceGroup, ReduceOp, Tensor};
use collectives_tests::collective::{
    ALGORITHMS, DTYPES, Shards, all_ops, check_reduced, cpu_group, range_for, with_dim,
};
use collectives_tests::{fresh_seed, rng};
use rand::Rng;
use rand::rngs::StdRng;

/// One case: a group (algorithm forced), a dtype, an op, the generator and a context naming all
/// of them and the seed.
struct Case<'a> {
    group: DeviceGroup,
    dtype: DType,
    op: ReduceOp,
    rng: &'a mut StdRng,
    ctx: String,
}

/// Runs `f` for every group size 1..=8, dtype, op and algorithm, on fresh data.
fn each_case(mut f: impl FnMut(Case<'_>)) {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for n in 1..=8 {
        for dtype in DTYPES {
            for op in all_ops(dtype, &mut r) {
                for algo in ALGORITHMS {
                    let ctx = format!("seed {seed}: n={n} {dtype} {op} {algo}");
                    let group = cpu_group(n).using(algo);
                    f(Case { group, dtype, op, rng: &mut r, ctx });
                }
            }
        }
    }
}

/// A shape of rank 1 to 3 with dims 1 to 9 (not powers of two on purpose).
fn some_shape(r: &mut StdRng) -> Vec<usize> {
    let rank = r.random_range(1..=3);
    (0..rank).map(|_| r.random_range(1..=9)).collect()
}

#[test]
fn reduce_lands_on_the_leader() {
    each_case(|c| {
        let shape = some_shape(c.rng);
        let s = Shards::even(c.dtype, &shape, c.group.devices(), range_for(c.op), c.rng);
        let got = c.group.reduce(&s.tensors, c.op).expect(&c.ctx);
        check_reduced(&got, Device::Cpu(0), c.op, &s.slices(), &c.ctx);
    });
}

#[test]
fn reduce_onto_any_member_named_leader() {
    each_case(|c| {
        let n = c.group.size() as u32;
        let leader = Device::Cpu(c.rng.random_range(0..n));
        let group = c.group.with_leader(leader).expect("member");
        assert_eq!(group.leader(), leader);
        let s = Shards::even(c.dtype, &[4, 5], group.devices(), range_for(c.op), c.rng);
        let got = group.reduce(&s.tensors, c.op).expect(&c.ctx);
        check_reduced(&got, leader, c.op, &s.slices(), &format!("{} leader {leader}", c.ctx));
    });
}

#[test]
fn reduce_of_the_first_k_shards() {
    each_case(|c| {
        let n = c.group.size();
        let k = c.rng.random_range(1..=n);
        let leader = Device::Cpu(c.rng.random_range(0..n as u32));
        let group = c.group.with_leader(leader).expect("member");
        let devices = &group.devices()[..k];
        let s = Shards::even(c.dtype, &[7], devices, range_for(c.op), c.rng);
        let ctx = format!("{} k={k} leader {leader}", c.ctx);
        let got = group.reduce(&s.tensors, c.op).expect(&ctx);
        check_reduced(&got, leader, c.op, &s.slices(), &ctx);
    });
}

#[test]
fn all_reduce_lands_on_every_device() {
    each_case(|c| {
        let shape = some_shape(c.rng);
        let s = Shards::even(c.dtype, &shape, c.group.devices(), range_for(c.op), c.rng);
        let got = c.group.all_reduce(&s.tensors, c.op).expect(&c.ctx);
        assert_eq!(got.len(), c.group.size(), "{}", c.ctx);
        collectives::realize(&got).expect(&c.ctx);
        for (i, (t, &d)) in got.iter().zip(c.group.devices()).enumerate() {
            assert_eq!(t.shape().dims(), shape.as_slice(), "{}", c.ctx);
            check_reduced(t, d, c.op, &s.slices(), &format!("{} result {i}", c.ctx));
        }
    });
}

#[test]
fn all_reduce_with_a_non_first_leader() {
    each_case(|c| {
        let n = c.group.size() as u32;
        let leader = Device::Cpu(n - 1);
        let group = c.group.with_leader(leader).expect("member");
        let s = Shards::even(c.dtype, &[2, 9], group.devices(), range_for(c.op), c.rng);
        let got = group.all_reduce(&s.tensors, c.op).expect(&c.ctx);
        for (i, (t, &d)) in got.iter().zip(group.devices()).enumerate() {
            check_reduced(t, d, c.op, &s.slices(), &format!("{} result {i}", c.ctx));
        }
    });
}

/// Shard `vals` narrowed to part `i` of `part` along `dim`, as the reference sees it.
fn part_of(vals: &[f64], shape: &[usize], dim: usize, i: usize, part: usize) -> Vec<f64> {
    collectives_tests::collective::ref_narrow(vals, shape, dim, i * part, part)
}

#[test]
fn reduce_scatter_puts_part_i_on_device_i() {
    each_case(|c| {
        let n = c.group.size();
        let base = some_shape(c.rng);
        let dim = c.rng.random_range(0..base.len());
        let part = c.rng.random_range(1..=3);
        let shape = with_dim(&base, dim, n * part);
        let s = Shards::even(c.dtype, &shape, c.group.devices(), range_for(c.op), c.rng);
        let ctx = format!("{} shape {shape:?} dim {dim}", c.ctx);
        let got = c.group.reduce_scatter(&s.tensors, c.op, dim).expect(&ctx);
        assert_eq!(got.len(), n, "{ctx}");
        for (i, (t, &d)) in got.iter().zip(c.group.devices()).enumerate() {
            assert_eq!(t.shape().dims(), with_dim(&shape, dim, part), "{ctx}");
            let parts: Vec<Vec<f64>> = s.vals.iter().map(|v| part_of(v, &shape, dim, i, part)).collect();
            let inputs: Vec<&[f64]> = parts.iter().map(Vec::as_slice).collect();
            check_reduced(t, d, c.op, &inputs, &format!("{ctx} part {i}"));
        }
    });
}

#[test]
fn reduce_scatter_with_a_zero_length_dim() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for n in 1..=8 {
        for algo in ALGORITHMS {
            let group = cpu_group(n).using(algo);
            let s = Shards::even(DType::F32, &[3, 0], group.devices(), range_for(ReduceOp::Sum), &mut r);
            let ctx = format!("seed {seed}: n={n} {algo}");
            let got = group.reduce_scatter(&s.tensors, ReduceOp::Sum, 1).expect(&ctx);
            for (t, &d) in got.iter().zip(group.devices()) {
                assert_eq!((t.device(), t.shape().dims()), (d, &[3, 0][..]), "{ctx}");
                assert!(collectives_tests::values(t).is_empty(), "{ctx}");
            }
        }
    }
}

#[test]
fn results_of_a_leader_reduce_are_lazy_until_realized() {
    let group = cpu_group(4);
    let mut r = rng(fresh_seed());
    let s = Shards::even(DType::F32, &[6], group.devices(), range_for(ReduceOp::Sum), &mut r);
    let got: Tensor = group.reduce(&s.tensors, ReduceOp::Sum).expect("reduce");
    assert!(!got.is_realized(), "building a collective must not run it");
    got.realize().expect("realize");
    assert!(got.is_realized());
    check_reduced(&got, Device::Cpu(0), ReduceOp::Sum, &s.slices(), "lazy reduce");
}

#[test]
fn rank_zero_shards_reduce_and_broadcast() {
    each_case(|c| {
        let n = c.group.size();
        let s = Shards::even(c.dtype, &[], c.group.devices(), range_for(c.op), c.rng);
        for (t, &d) in c.group.all_reduce(&s.tensors, c.op).expect(&c.ctx).iter().zip(c.group.devices()) {
            assert_eq!(t.shape().rank(), 0, "{}", c.ctx);
            check_reduced(t, d, c.op, &s.slices(), &c.ctx);
        }
        let on_leader = c.group.reduce(&s.tensors, c.op).expect(&c.ctx);
        check_reduced(&on_leader, Device::Cpu(0), c.op, &s.slices(), &c.ctx);
        let root = c.rng.random_range(0..n);
        for (t, &d) in c.group.broadcast(&s.tensors[root]).expect(&c.ctx).iter().zip(c.group.devices()) {
            let want = [s.vals[root].as_slice()];
            check_reduced(t, d, ReduceOp::Max, &want, &c.ctx);
        }
    });
}

/// The star all_reduce (and reduce_scatter) of host devices is one call; with shards still to
/// compute (here a product not yet run), the call is a step of the general schedule, not the
/// direct path, and its results feed more work in the same realize. Every element of every member's result, and
/// of the work after it, against the f64 reference; the inputs are unchanged.
#[test]
fn all_reduce_of_lazy_shards_inside_a_larger_graph() {
    let mut r = rng(fresh_seed());
    for n in [2, 3, 8] {
        for dtype in DTYPES {
            for op in all_ops(dtype, &mut r) {
                let group = cpu_group(n).with_leader(Device::Cpu(n as u32 / 2)).expect("member");
                let ctx = format!("n={n} {dtype} {op}");
                let s = Shards::even(dtype, &[3, 7], group.devices(), range_for(op), &mut r);
                let unit: Vec<Tensor> = group
                    .devices()
                    .iter()
                    .map(|&d| collectives_tests::tensor(dtype, &[1.0; 21], [3, 7], d))
                    .collect();
                let lazy: Vec<Tensor> =
                    s.tensors.iter().zip(&unit).map(|(x, u)| x.mul(u).expect(&ctx)).collect();
                assert!(lazy.iter().all(|t| !t.is_realized()), "{ctx}");
                let got = group.all_reduce(&lazy, op).expect(&ctx);
                let after = got[0].maximum(&got[n - 1]).expect(&ctx);
                if n == 3 {
                    // reduce_scatter of the same lazy shards along dim 0: part i on device i.
                    let parts = group.reduce_scatter(&lazy, op, 0).expect(&ctx);
                    for (i, (p, &d)) in parts.iter().zip(group.devices()).enumerate() {
                        let mine: Vec<&[f64]> = s.vals.iter().map(|v| &v[i * 7..(i + 1) * 7]).collect();
                        check_reduced(p, d, op, &mine, &format!("{ctx} reduce_scatter part {i}"));
                        assert_eq!(p.shape().dims(), &[1, 7], "{ctx}");
                    }
                }
                collectives::realize(&[got.clone(), vec![after.clone()]].concat()).expect(&ctx);
                for (i, (t, &d)) in got.iter().zip(group.devices()).enumerate() {
                    check_reduced(t, d, op, &s.slices(), &format!("{ctx} result {i}"));
                }
                check_reduced(&after, Device::Cpu(0), op, &s.slices(), &format!("{ctx} after"));
                s.assert_untouched(&ctx);
            }
        }
    }
}
