//! The n-ary `Reduce` (Sum, Prod, Max, Min; with and without `Scale`) for every dtype against an
//! f64 reference on fresh random data: k = 1..8 inputs on as many virtual devices, sizes 0, 1, 7
//! and 1M+3, non-power-of-two shapes. Plus what a reduce must guarantee: f16/bf16 sums accumulate
//! in f32, integers are exact (wrapping), NaN propagates through Max and Min.

use collectives::{DType, Device, ReduceKind, Scale, Tensor};
use collectives_tests::{Range, check_all, fold_tol, fresh_seed, random, ref_reduce, rng, tensor, values};
use rand::Rng;
use rand::rngs::StdRng;

const KINDS: [ReduceKind; 4] = [ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min];

/// The scales tried on a dtype: none, a multiply and a divide (an average, for integers).
fn scales(dtype: DType, k: usize, r: &mut StdRng) -> [Option<Scale>; 3] {
    if dtype.is_float() {
        [
            None,
            Some(Scale::Mul(r.random_range(-2.0..2.0))),
            Some(Scale::Div(k as f64 + r.random_range(0.0..1.0))),
        ]
    } else {
        // u8 takes factors in 0..=255 only: 253 is -3 modulo 256.
        let m = if dtype == DType::U8 { 253.0 } else { -3.0 };
        [None, Some(Scale::Mul(m)), Some(Scale::Div(k as f64))]
    }
}

/// The size of the error a float reduce may make at element `i`: the magnitude the fold's
/// roundings are relative to, times the scale's factor.
fn magnitude(kind: ReduceKind, scale: Option<Scale>, xs: &[&[f64]], i: usize) -> f64 {
    let m = match kind {
        ReduceKind::Sum => xs.iter().map(|x| x[i].abs()).sum(),
        ReduceKind::Prod => xs.iter().map(|x| x[i].abs()).product(),
        ReduceKind::Max | ReduceKind::Min => xs.iter().map(|x| x[i].abs()).fold(0.0, f64::max),
    };
    match scale {
        None => m,
        Some(Scale::Mul(f)) => m * f.abs(),
        Some(Scale::Div(f)) => m / f.abs(),
    }
}

/// Runs `Tensor::reduce` over `xs` (input j on `cpu:devs[j]`) and checks every element.
fn check_reduce(
    dtype: DType,
    kind: ReduceKind,
    scale: Option<Scale>,
    xs: &[Vec<f64>],
    shape: &[usize],
    ctx: &str,
) {
    let k = xs.len();
    let ts: Vec<Tensor> =
        xs.iter().enumerate().map(|(j, x)| tensor(dtype, x, shape, Device::Cpu(j as u32))).collect();
    let out = Tensor::reduce(&ts, kind, scale).unwrap();
    assert_eq!((out.dtype(), out.shape().dims(), out.device()), (dtype, shape, Device::Cpu(0)), "{ctx}");
    let refs: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let want = ref_reduce(dtype, kind, scale, &refs);
    let tol = |i: usize| fold_tol(dtype, k + 1, magnitude(kind, scale, &refs, i));
    check_all(&values(&out), &want, tol, ctx);
}

#[test]
fn reduce_every_kind_dtype_and_size() {
    let shapes: [&[usize]; 5] = [&[0], &[1], &[7], &[3, 5, 7], &[2, 0, 5]];
    for dtype in DType::ALL {
        for shape in shapes {
            for k in [1, 2, 3, 8] {
                let seed = fresh_seed();
                let mut r = rng(seed);
                let n: usize = shape.iter().product();
                for kind in KINDS {
                    let range = if kind == ReduceKind::Prod { Range::Product } else { Range::General };
                    let xs: Vec<Vec<f64>> = (0..k).map(|_| random(dtype, n, range, &mut r)).collect();
                    for scale in scales(dtype, k, &mut r) {
                        let ctx = format!("{kind:?} {scale:?} {dtype} {shape:?} k={k} seed {seed}");
                        check_reduce(dtype, kind, scale, &xs, shape, &ctx);
                    }
                }
            }
        }
    }
}

/// 1M+3 elements: the kernel's parallel path, with a ragged last block and chunk.
#[test]
fn reduce_large_every_kind_and_dtype() {
    let n = (1 << 20) + 3;
    for dtype in DType::ALL {
        let seed = fresh_seed();
        let mut r = rng(seed);
        let general: Vec<Vec<f64>> = (0..3).map(|_| random(dtype, n, Range::General, &mut r)).collect();
        let product: Vec<Vec<f64>> = (0..3).map(|_| random(dtype, n, Range::Product, &mut r)).collect();
        for kind in KINDS {
            let xs = if kind == ReduceKind::Prod { &product } else { &general };
            let scale = if kind == ReduceKind::Sum { Some(Scale::Div(3.0)) } else { None };
            let ctx = format!("{kind:?} {scale:?} {dtype} [{n}] seed {seed}");
            check_reduce(dtype, kind, scale, xs, &[n], &ctx);
        }
    }
}

/// A sum of many values each below half an ulp of the running total: accumulated in f16/bf16 it
/// would stall at the first value; accumulated in f32, as documented, it is right.
#[test]
fn low_precision_sums_accumulate_in_f32() {
    for (dtype, lo, hi) in
        [(DType::BF16, 2f64.powi(-10), 2f64.powi(-9)), (DType::F16, 2f64.powi(-13), 2f64.powi(-12))]
    {
        let seed = fresh_seed();
        let mut r = rng(seed);
        let (n, k) = (37, 256);
        let mut xs: Vec<Vec<f64>> =
            vec![(0..n).map(|_| collectives_tests::round_to(dtype, r.random_range(1.0..1.5))).collect()];
        for _ in 0..k {
            xs.push((0..n).map(|_| collectives_tests::round_to(dtype, r.random_range(lo..hi))).collect());
        }
        let ctx = format!("{dtype} sum of 1 + {k} small values, seed {seed}");
        check_reduce(dtype, ReduceKind::Sum, None, &xs, &[n], &ctx);
        // And the accumulator is not rounded to the dtype between steps: each small value alone
        // would be lost, together they move the sum by well over an ulp.
        let ts: Vec<Tensor> = xs.iter().map(|x| tensor(dtype, x, [n], Device::Cpu(0))).collect();
        let got = values(&Tensor::reduce(&ts, ReduceKind::Sum, None).unwrap());
        for i in 0..n {
            assert!(got[i] - xs[0][i] > k as f64 * lo / 2.0, "{ctx}: element {i} stalled at {}", got[i]);
        }
    }
}

#[test]
fn nan_propagates_through_reduce_max_and_min() {
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let seed = fresh_seed();
        let mut r = rng(seed);
        let (n, k) = (500, 5);
        let mut xs: Vec<Vec<f64>> = (0..k).map(|_| random(dtype, n, Range::General, &mut r)).collect();
        // Poison a third of the positions, each in one random input.
        let picks: Vec<Option<usize>> =
            (0..n).map(|_| r.random_ratio(1, 3).then(|| r.random_range(0..k))).collect();
        for (i, j) in picks.into_iter().enumerate() {
            if let Some(j) = j {
                xs[j][i] = f64::NAN;
            }
        }
        for kind in [ReduceKind::Max, ReduceKind::Min] {
            for scale in [None, Some(Scale::Div(k as f64))] {
                let ctx = format!("{kind:?} {scale:?} {dtype} seed {seed}");
                check_reduce(dtype, kind, scale, &xs, &[n], &ctx);
                let ts: Vec<Tensor> = xs.iter().map(|x| tensor(dtype, x, [n], Device::Cpu(0))).collect();
                let got = values(&Tensor::reduce(&ts, kind, scale).unwrap());
                for i in 0..n {
                    let any_nan = xs.iter().any(|x| x[i].is_nan());
                    assert_eq!(got[i].is_nan(), any_nan, "{ctx}: element {i}");
                }
            }
        }
    }
}

/// Integer reduces are exact: checked in the native types against i128 arithmetic on values of
/// the full range (so sums and products wrap), including an average (Sum then Div by k).
#[test]
fn integer_reduces_are_exact_and_wrap() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let (n, k) = (3001, 5);
    macro_rules! case {
        ($t:ty) => {{
            let xs: Vec<Vec<$t>> = (0..k).map(|_| (0..n).map(|_| r.random()).collect()).collect();
            let ts: Vec<Tensor> = xs
                .iter()
                .enumerate()
                .map(|(j, x)| Tensor::from_vec(x.clone(), [n], Device::Cpu(j as u32)).unwrap())
                .collect();
            let folds: [(ReduceKind, fn(i128, i128) -> i128); 4] = [
                (ReduceKind::Sum, |a, b| a + b),
                (ReduceKind::Prod, |a, b| a.wrapping_mul(b)),
                (ReduceKind::Max, |a, b| a.max(b)),
                (ReduceKind::Min, |a, b| a.min(b)),
            ];
            for (kind, f) in folds {
                for scale in [None, Some(Scale::Div(k as f64)), Some(Scale::Mul(7.0))] {
                    let got = Tensor::reduce(&ts, kind, scale).unwrap().to_vec::<$t>().unwrap();
                    for i in 0..n {
                        // Wrap at every step, as the device does.
                        let acc =
                            (1..k).fold(xs[0][i] as i128, |a, j| f(a, xs[j][i] as i128) as $t as i128) as $t;
                        let want = match scale {
                            None => acc,
                            Some(Scale::Div(_)) => (acc as i128 / k as i128) as $t,
                            Some(_) => (acc as i128 * 7) as $t,
                        };
                        let ctx = format!("{kind:?} {scale:?} {} at {i} (seed {seed})", stringify!($t));
                        assert_eq!(got[i], want, "{ctx}");
                    }
                }
            }
        }};
    }
    case!(i32);
    case!(i64);
    case!(u8);
}

#[test]
fn reduce_of_one_input_is_its_scale() {
    for dtype in DType::ALL {
        let seed = fresh_seed();
        let x = random(dtype, 19, Range::General, &mut rng(seed));
        let t = tensor(dtype, &x, [19], Device::Cpu(3));
        let same = Tensor::reduce(std::slice::from_ref(&t), ReduceKind::Max, None).unwrap();
        check_all(&values(&same), &x, |_| 0.0, &format!("{dtype} seed {seed}"));
        let twice =
            Tensor::reduce(std::slice::from_ref(&t), ReduceKind::Prod, Some(Scale::Mul(2.0))).unwrap();
        let want: Vec<f64> =
            x.iter().map(|v| collectives_tests::ref_scale(dtype, Scale::Mul(2.0), *v)).collect();
        check_all(
            &values(&twice),
            &want,
            |i| fold_tol(dtype, 1, want[i].abs()),
            &format!("{dtype} x2 seed {seed}"),
        );
        assert_eq!(twice.device(), Device::Cpu(3));
    }
}
