//! Collectives under load: shards large enough to cross the CPU kernels' parallel thresholds,
//! collectives chained on each other's lazy results, and several threads calling at once. Inputs
//! are read back after every run and must be unchanged.

use std::thread;

use collectives::{Algorithm, DType, DeviceGroup, ReduceOp, Tensor};
use collectives_tests::collective::{
    Shards, check_exact, check_reduced, cpu_group, range_for, ref_concat, with_dim,
};
use collectives_tests::{fresh_seed, rng, values};

/// Elements per shard: more than the kernels' parallel threshold (1 << 16), not a power of two.
const BIG: usize = 3 * 40_009;

#[test]
fn large_shards_reduce_and_gather_correctly() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for (n, dtype) in [(3, DType::F32), (5, DType::BF16), (4, DType::I64)] {
        for algo in [Algorithm::Star, Algorithm::Ring] {
            let g = cpu_group(n).using(algo);
            let op = ReduceOp::Avg;
            let s = Shards::even(dtype, &[3, BIG / 3], g.devices(), range_for(op), &mut r);
            let ctx = format!("seed {seed}: n={n} {dtype} {algo}");
            let sums = g.all_reduce(&s.tensors, op).expect(&ctx);
            let cats = g.all_gather(&s.tensors, 1).expect(&ctx);
            collectives::realize(&[sums.clone(), cats.clone()].concat()).expect(&ctx);
            let shapes = vec![vec![3, BIG / 3]; n];
            let parts: Vec<(&[f64], &[usize])> =
                s.vals.iter().map(Vec::as_slice).zip(shapes.iter().map(Vec::as_slice)).collect();
            let joined = ref_concat(&parts, 1);
            for ((t, c), &d) in sums.iter().zip(&cats).zip(g.devices()) {
                check_reduced(t, d, op, &s.slices(), &ctx);
                check_exact(c, d, &[3, n * BIG / 3], &joined, &ctx);
            }
            s.assert_untouched(&ctx);
        }
    }
}

#[test]
fn large_shards_scatter_and_swap_correctly() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let n = 6;
    for algo in [Algorithm::Star, Algorithm::Ring] {
        let g = cpu_group(n).using(algo);
        let shape = [2, n * 11_001, 3];
        let s = Shards::even(DType::F16, &shape, g.devices(), range_for(ReduceOp::Max), &mut r);
        let ctx = format!("seed {seed}: {algo}");
        let maxes = g.reduce_scatter(&s.tensors, ReduceOp::Max, 1).expect(&ctx);
        let swapped = g.all_to_all(&s.tensors, 1).expect(&ctx);
        for (j, &d) in g.devices().iter().enumerate() {
            let pieces: Vec<Vec<f64>> = s
                .vals
                .iter()
                .map(|v| collectives_tests::collective::ref_narrow(v, &shape, 1, j * 11_001, 11_001))
                .collect();
            let inputs: Vec<&[f64]> = pieces.iter().map(Vec::as_slice).collect();
            check_reduced(&maxes[j], d, ReduceOp::Max, &inputs, &ctx);
            let part_shape = with_dim(&shape, 1, 11_001);
            let joined: Vec<(&[f64], &[usize])> =
                inputs.iter().map(|p| (*p, part_shape.as_slice())).collect();
            check_exact(&swapped[j], d, &shape, &ref_concat(&joined, 1), &ctx);
        }
        s.assert_untouched(&ctx);
    }
}

#[test]
fn reduce_scatter_then_all_gather_is_all_reduce() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for n in 1..=8 {
        for algo in [Algorithm::Star, Algorithm::Ring] {
            let g = cpu_group(n).using(algo);
            let s = Shards::even(DType::I32, &[3 * n, 5], g.devices(), range_for(ReduceOp::Sum), &mut r);
            let parts = g.reduce_scatter(&s.tensors, ReduceOp::Sum, 0).unwrap();
            let whole = g.all_gather(&parts, 0).unwrap();
            let direct = g.all_reduce(&s.tensors, ReduceOp::Sum).unwrap();
            let twice = g.all_reduce(&direct, ReduceOp::Max).unwrap();
            let ctx = format!("seed {seed}: n={n} {algo}");
            for ((w, d), t) in whole.iter().zip(&direct).zip(&twice) {
                assert_eq!(values(w), values(d), "{ctx}");
                assert_eq!(values(t), values(d), "{ctx}: max of equal tensors is the tensor");
            }
            s.assert_untouched(&ctx);
        }
    }
}

/// One caller's work: an all_reduce and an all_gather on its own shards, checked.
fn one_caller(g: &DeviceGroup, seed: u64) {
    let mut r = rng(seed);
    for round in 0..20 {
        let s = Shards::even(DType::F64, &[7, 3], g.devices(), range_for(ReduceOp::Sum), &mut r);
        let ctx = format!("seed {seed} round {round}");
        let sums = g.all_reduce(&s.tensors, ReduceOp::Sum).expect(&ctx);
        for (t, &d) in sums.iter().zip(g.devices()) {
            check_reduced(t, d, ReduceOp::Sum, &s.slices(), &ctx);
        }
        s.assert_untouched(&ctx);
    }
}

#[test]
fn several_threads_call_one_group_at_once() {
    let g = cpu_group(4);
    thread::scope(|scope| {
        for algo in [Algorithm::Star, Algorithm::Ring, Algorithm::Star, Algorithm::Ring] {
            let g = g.using(algo);
            scope.spawn(move || one_caller(&g, fresh_seed()));
        }
    });
}

#[test]
fn several_threads_realize_the_same_results() {
    let seed = fresh_seed();
    let g = cpu_group(5).using(Algorithm::Ring);
    let s = Shards::even(DType::F32, &[5 * 7], g.devices(), range_for(ReduceOp::Sum), &mut rng(seed));
    let sums: Vec<Tensor> = g.all_reduce(&s.tensors, ReduceOp::Sum).unwrap();
    thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| collectives::realize(&sums).expect("realize from a thread"));
        }
    });
    for (t, &d) in sums.iter().zip(g.devices()) {
        check_reduced(t, d, ReduceOp::Sum, &s.slices(), &format!("seed {seed}"));
    }
}
