//! The numerics of the reducing collectives: f16/bf16 sums accumulate in f32, NaN propagates
//! through Max/Min, integer results are exact (i64 beyond f64's 53 bits too), star and ring agree
//! exactly on integers, and results realized together equal results realized one by one.

use collectives::{Algorithm, DType, Device, DeviceGroup, ReduceOp, Tensor};
use collectives_tests::collective::{
    ALGORITHMS, DTYPES, Shards, all_ops, check_reduced, cpu_group, range_for,
};
use collectives_tests::{check_all, eps, fresh_seed, rng, round_to, tensor, values};
use rand::Rng;
use rand::rngs::StdRng;

/// Significand bits of a low-precision float (the spacing of values near 1 is 2^-bits).
fn bits(dtype: DType) -> i32 {
    match dtype {
        DType::BF16 => 7,
        DType::F16 => 10,
        _ => unreachable!(),
    }
}

/// Eight shards of `len` elements whose f32 sum is exact in `dtype` but which a sum rounded to
/// `dtype` after every add would lose: per element one shard holds `±2^e`, six hold half a unit
/// in its last place and one a whole unit. Returns the shards' values and the exact sums.
fn lost_in_low_precision(dtype: DType, len: usize, r: &mut StdRng) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut vals = vec![vec![0.0; len]; 8];
    let mut sums = Vec::with_capacity(len);
    for e in 0..len {
        let big = 2f64.powi(r.random_range(-4..=4)) * if r.random::<bool>() { 1.0 } else { -1.0 };
        let half_ulp = big * 2f64.powi(-bits(dtype) - 1);
        let at = r.random_range(0..8);
        let whole = (at + 1 + r.random_range(0..7)) % 8;
        for (d, v) in vals.iter_mut().enumerate() {
            v[e] = if d == at {
                big
            } else if d == whole {
                2.0 * half_ulp
            } else {
                half_ulp
            };
        }
        sums.push(big + 8.0 * half_ulp);
    }
    (vals, sums)
}

/// The sum of `vals` column-wise, rounded to `dtype` after every add (what f32 accumulation
/// avoids).
fn rounded_every_add(dtype: DType, vals: &[Vec<f64>]) -> Vec<f64> {
    (0..vals[0].len()).map(|e| vals.iter().fold(0.0, |acc, v| round_to(dtype, acc + v[e]))).collect()
}

#[test]
fn low_precision_sums_accumulate_in_f32_on_the_star() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let group = cpu_group(8).using(Algorithm::Star);
    for dtype in [DType::BF16, DType::F16] {
        let (vals, sums) = lost_in_low_precision(dtype, 16, &mut r);
        assert_ne!(rounded_every_add(dtype, &vals), sums, "the data must tell the two apart");
        assert!(sums.iter().all(|&s| round_to(dtype, s) == s), "exact sums");
        let shards: Vec<Tensor> =
            vals.iter().zip(group.devices()).map(|(v, &d)| tensor(dtype, v, [16], d)).collect();
        let ctx = format!("seed {seed}: {dtype}");
        let reduced = group.reduce(&shards, ReduceOp::Sum).expect(&ctx);
        check_all(&values(&reduced), &sums, |_| 0.0, &format!("{ctx} reduce"));
        for t in group.all_reduce(&shards, ReduceOp::Sum).expect(&ctx) {
            check_all(&values(&t), &sums, |_| 0.0, &format!("{ctx} all_reduce"));
        }
        let parts = group.reduce_scatter(&shards, ReduceOp::Sum, 0).expect(&ctx);
        for (i, t) in parts.iter().enumerate() {
            check_all(&values(t), &sums[2 * i..2 * i + 2], |_| 0.0, &format!("{ctx} reduce_scatter {i}"));
        }
    }
}

#[test]
fn low_precision_ring_sums_round_once_per_hop() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let group = cpu_group(8).using(Algorithm::Ring);
    for dtype in [DType::BF16, DType::F16] {
        let (vals, sums) = lost_in_low_precision(dtype, 16, &mut r);
        let shards: Vec<Tensor> =
            vals.iter().zip(group.devices()).map(|(v, &d)| tensor(dtype, v, [16], d)).collect();
        let ctx = format!("seed {seed}: {dtype}");
        // Seven hops each round the partial (magnitude below 1.1·|sum|) to half a unit.
        let tol = |i: usize| 8.0 * 0.5 * eps(dtype) * sums[i].abs() * 1.1;
        for t in group.all_reduce(&shards, ReduceOp::Sum).expect(&ctx) {
            check_all(&values(&t), &sums, tol, &format!("{ctx} ring all_reduce"));
        }
        let reduced = group.reduce(&shards, ReduceOp::Sum).expect(&ctx);
        check_all(&values(&reduced), &sums, tol, &format!("{ctx} ring reduce"));
    }
}

/// Shards of a float dtype with NaN at random elements of random shards.
fn shards_with_nans(dtype: DType, group: &DeviceGroup, len: usize, r: &mut StdRng) -> Shards {
    let mut s = Shards::even(dtype, &[len], group.devices(), range_for(ReduceOp::Max), r);
    for _ in 0..r.random_range(1..=3) {
        let (i, e) = (r.random_range(0..group.size()), r.random_range(0..len));
        s.vals[i][e] = f64::NAN;
    }
    s.tensors = s.vals.iter().zip(group.devices()).map(|(v, &d)| tensor(dtype, v, [len], d)).collect();
    s
}

#[test]
fn nan_propagates_through_max_and_min() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for n in 1..=8 {
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            for algo in ALGORITHMS {
                let group = cpu_group(n).using(algo);
                let s = shards_with_nans(dtype, &group, 4 * n, &mut r);
                for op in [ReduceOp::Max, ReduceOp::Min] {
                    let ctx = format!("seed {seed}: n={n} {dtype} {algo} {op}");
                    let got = group.all_reduce(&s.tensors, op).expect(&ctx);
                    for (t, &d) in got.iter().zip(group.devices()) {
                        assert!(values(t).iter().any(|v| v.is_nan()), "{ctx}: a NaN must survive");
                        check_reduced(t, d, op, &s.slices(), &ctx);
                    }
                    let on_leader = group.reduce(&s.tensors, op).expect(&ctx);
                    check_reduced(&on_leader, Device::Cpu(0), op, &s.slices(), &ctx);
                    let parts = group.reduce_scatter(&s.tensors, op, 0).expect(&ctx);
                    let whole: Vec<f64> = parts.iter().flat_map(values).collect();
                    let want = collectives_tests::collective::ref_op(dtype, op, &s.slices());
                    check_all(&whole, &want, |_| 0.0, &format!("{ctx} reduce_scatter"));
                }
            }
        }
    }
}

#[test]
fn i64_results_are_exact_beyond_f64_precision() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for n in 1..=8 {
        for algo in ALGORITHMS {
            let group = cpu_group(n).using(algo);
            let data: Vec<Vec<i64>> = (0..n)
                .map(|_| (0..9).map(|_| (1i64 << 59) + r.random_range(-999..=999) * 2 + 1).collect())
                .collect();
            let shards: Vec<Tensor> = data
                .iter()
                .zip(group.devices())
                .map(|(v, &d)| Tensor::from_slice(v, [9], d).unwrap())
                .collect();
            let sum: Vec<i64> = (0..9).map(|e| data.iter().fold(0i64, |a, v| a.wrapping_add(v[e]))).collect();
            let ctx = format!("seed {seed}: n={n} {algo}");
            for t in group.all_reduce(&shards, ReduceOp::Sum).expect(&ctx) {
                assert_eq!(t.to_vec::<i64>().unwrap(), sum, "{ctx} sum");
            }
            let avg: Vec<i64> = sum.iter().map(|s| s / n as i64).collect();
            for t in group.all_reduce(&shards, ReduceOp::Avg).expect(&ctx) {
                assert_eq!(t.to_vec::<i64>().unwrap(), avg, "{ctx} avg");
            }
            let max: Vec<i64> = (0..9).map(|e| data.iter().map(|v| v[e]).max().unwrap()).collect();
            let got = group.reduce(&shards, ReduceOp::Max).expect(&ctx);
            assert_eq!(got.to_vec::<i64>().unwrap(), max, "{ctx} max");
        }
    }
}

/// Every reducing collective's results under `algo`, as values, in a fixed order.
fn reduced_under(group: &DeviceGroup, algo: Algorithm, s: &Shards, op: ReduceOp) -> Vec<Vec<f64>> {
    let g = group.using(algo);
    let mut out: Vec<Tensor> = g.all_reduce(&s.tensors, op).unwrap();
    out.push(g.reduce(&s.tensors, op).unwrap());
    out.extend(g.reduce_scatter(&s.tensors, op, 0).unwrap());
    out.iter().map(values).collect()
}

#[test]
fn star_and_ring_agree_exactly_on_integers() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for n in 1..=8 {
        for dtype in [DType::I32, DType::I64, DType::U8] {
            for op in all_ops(dtype, &mut r) {
                let group = cpu_group(n);
                let s = Shards::even(dtype, &[2 * n], group.devices(), range_for(op), &mut r);
                let star = reduced_under(&group, Algorithm::Star, &s, op);
                let ring = reduced_under(&group, Algorithm::Ring, &s, op);
                assert_eq!(star, ring, "seed {seed}: n={n} {dtype} {op}");
            }
        }
    }
}

/// Outputs of several collectives over `s` on `group`, built afresh.
fn several(group: &DeviceGroup, s: &Shards, op: ReduceOp) -> Vec<Tensor> {
    let mut out = group.all_reduce(&s.tensors, op).unwrap();
    out.push(group.reduce(&s.tensors, op).unwrap());
    out.extend(group.all_gather(&s.tensors, 0).unwrap());
    out.push(group.gather(&s.tensors, 0).unwrap());
    out.extend(group.broadcast(&s.tensors[group.size() - 1]).unwrap());
    out.extend(group.reduce_scatter(&s.tensors, op, 0).unwrap());
    out.extend(group.all_to_all(&s.tensors, 0).unwrap());
    out
}

#[test]
fn realizing_together_equals_realizing_one_by_one() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for n in 1..=8 {
        for dtype in DTYPES {
            for algo in ALGORITHMS {
                let group = cpu_group(n).using(algo);
                let op = all_ops(dtype, &mut r)[r.random_range(0..6)];
                let s = Shards::even(dtype, &[3 * n, 2], group.devices(), range_for(op), &mut r);
                let together = several(&group, &s, op);
                collectives::realize(&together).expect("realize together");
                assert!(together.iter().all(Tensor::is_realized));
                let singly: Vec<Vec<f64>> = several(&group, &s, op).iter().map(values).collect();
                let ctx = format!("seed {seed}: n={n} {dtype} {algo} {op}");
                for (i, (t, want)) in together.iter().zip(&singly).enumerate() {
                    check_all(&values(t), want, |_| 0.0, &format!("{ctx} output {i}"));
                }
            }
        }
    }
}

#[test]
fn f16_averages_stay_in_range_on_every_algorithm() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for n in 2..=8 {
        let group = cpu_group(n);
        // Each value is near f16's largest (65504), so any partial sum of two overflows f16.
        let vals: Vec<Vec<f64>> = (0..n)
            .map(|_| (0..4 * n).map(|_| round_to(DType::F16, r.random_range(35000.0..60000.0))).collect())
            .collect();
        let shards: Vec<Tensor> =
            vals.iter().zip(group.devices()).map(|(v, &d)| tensor(DType::F16, v, [4 * n], d)).collect();
        let inputs: Vec<&[f64]> = vals.iter().map(Vec::as_slice).collect();
        for algo in ALGORITHMS {
            for op in [ReduceOp::Avg, ReduceOp::PreMulSum(1.0 / n as f64)] {
                let g = group.using(algo);
                let ctx = format!("seed {seed}: n={n} {algo} {op}");
                for (t, &d) in g.all_reduce(&shards, op).expect(&ctx).iter().zip(g.devices()) {
                    check_reduced(t, d, op, &inputs, &ctx);
                }
                check_reduced(&g.reduce(&shards, op).expect(&ctx), Device::Cpu(0), op, &inputs, &ctx);
                let parts = g.reduce_scatter(&shards, op, 0).expect(&ctx);
                let whole: Vec<f64> = parts.iter().flat_map(values).collect();
                assert!(whole.iter().all(|v| v.is_finite()), "{ctx}: reduce_scatter overflowed: {whole:?}");
            }
        }
    }
}

#[test]
fn integer_averages_truncate_toward_zero() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for n in 2..=8i64 {
        for algo in ALGORITHMS {
            let group = cpu_group(n as usize).using(algo);
            // Negative sums that n does not divide, so truncation and flooring differ.
            let mut vals: Vec<i64> = (0..n).map(|_| r.random_range(-1000..=-1)).collect();
            vals[0] -= vals.iter().sum::<i64>().rem_euclid(n) + 1;
            let sum: i64 = vals.iter().sum();
            assert!(sum < 0 && sum % n != 0);
            let want = sum / n;
            assert_ne!(want, sum.div_euclid(n));
            for dtype in [DType::I32, DType::I64] {
                let shards: Vec<Tensor> = vals
                    .iter()
                    .zip(group.devices())
                    .map(|(&v, &d)| tensor(dtype, &[v as f64; 3], [3], d))
                    .collect();
                let ctx = format!("seed {seed}: n={n} {algo} {dtype} {vals:?}");
                for t in group.all_reduce(&shards, ReduceOp::Avg).expect(&ctx) {
                    assert_eq!(values(&t), vec![want as f64; 3], "{ctx}");
                }
            }
        }
    }
}
