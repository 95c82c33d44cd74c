//! Binary ops, the n-ary reduce and scale on Vulkan, every dtype and size.

use collectives::{BinaryOp, DType, ReduceKind, Scale, Tensor};
use collectives_tests::{Range, eps, fold_tol, random, ref_binary, ref_reduce, ref_scale, rng, tiny};

use super::{check_op, dtypes, have_vulkan, pair, seed, sizes, vs_cpu};

const OPS: [BinaryOp; 6] =
    [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Max, BinaryOp::Min];

/// Random values of `range` with edge cases at fixed places when there is room: for floats NaN,
/// infinities and signed zeros (`side` picks which operand gets which); for i32, and with `min`
/// for i64, MIN (the f64 references cannot fold past MIN for i64: f64 does not hold every i64).
fn data(
    dtype: DType,
    n: usize,
    range: Range,
    side: usize,
    min: bool,
    rng: &mut rand::rngs::StdRng,
) -> Vec<f64> {
    let mut v = random(dtype, n, range, rng);
    if n < 7 {
        return v;
    }
    if dtype.is_float() && range != Range::Divisor {
        let edges =
            [[f64::NAN, 1.0], [0.5, f64::NAN], [0.0, -0.0], [-0.0, 0.0], [f64::INFINITY, f64::NEG_INFINITY]];
        for (i, e) in edges.iter().enumerate() {
            v[2 + i] = e[side];
        }
    }
    match dtype {
        DType::I32 if side == 0 => v[1] = i32::MIN as f64,
        DType::I64 if side == 0 && min => v[1] = i64::MIN as f64,
        _ => {}
    }
    v
}

/// Divisors: non-zero values, plus 0 and (for signed integers) -1 against MIN, -0.0 for floats.
fn divisors(dtype: DType, n: usize, rng: &mut rand::rngs::StdRng) -> Vec<f64> {
    let mut v = random(dtype, n, Range::Divisor, rng);
    if n >= 7 {
        v[2] = 0.0;
        if dtype.is_float() {
            v[3] = -0.0;
        } else if dtype != DType::U8 {
            v[1] = -1.0;
        }
    }
    v
}

/// The absolute error allowed against the f64 reference: one rounding to the dtype for `ulps`
/// operations computed in f32 (f16/bf16) or in the dtype; integers exact.
fn tol(dtype: DType, want: f64, ulps: f64) -> f64 {
    if dtype.is_int() {
        return 0.0;
    }
    ulps * eps(dtype) * want.abs() + tiny(dtype)
}

#[test]
fn binary_ops_every_dtype() {
    if !have_vulkan() {
        return;
    }
    let seed = seed("binary");
    for dtype in dtypes() {
        for &n in sizes() {
            let mut r = rng(seed ^ n as u64 ^ (dtype as u64) << 40);
            let a = data(dtype, n, Range::General, 0, true, &mut r);
            let b = data(dtype, n, Range::General, 1, true, &mut r);
            let d = divisors(dtype, n, &mut r);
            let (va, ca) = pair(dtype, &a, &[n]);
            let (vb, cb) = pair(dtype, &b, &[n]);
            let (vd, cd) = pair(dtype, &d, &[n]);
            for op in OPS {
                let (vr, cr, rhs) = if op == BinaryOp::Div { (&vd, &cd, &d) } else { (&vb, &cb, &b) };
                let ctx = format!("{op:?} {dtype} n={n}");
                let vk = va.binary(op, vr).unwrap();
                let want: Vec<f64> = (0..n).map(|i| ref_binary(dtype, op, a[i], rhs[i])).collect();
                check_op(
                    &vk,
                    vs_cpu(n).then(|| ca.binary(op, cr).unwrap()),
                    &want,
                    |i| tol(dtype, want[i], 1.0),
                    &ctx,
                );
            }
        }
    }
}

/// The scale each reduce kind is tested with (what collectives use: avg, pre-multiplied sums);
/// u8 takes factors in 0..=255 only, so its -3 is 253 (the same modulo 256).
fn scale_for(kind: ReduceKind, k: usize, dtype: DType) -> Scale {
    match kind {
        ReduceKind::Sum => Scale::Div(k as f64),
        ReduceKind::Prod => Scale::Mul(2.0),
        ReduceKind::Max => Scale::Mul(if dtype == DType::U8 { 253.0 } else { -3.0 }),
        ReduceKind::Min => Scale::Div(2.0),
    }
}

#[test]
fn reduce_every_kind_with_and_without_scale() {
    if !have_vulkan() {
        return;
    }
    let seed = seed("reduce");
    let kinds = [ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min];
    for dtype in dtypes() {
        for &n in sizes() {
            // k = 10 takes two passes through the accumulator (8 inputs per pass).
            let ks: &[usize] = if n > 1000 { &[3] } else { &[1, 3, 10] };
            let mut r = rng(seed ^ n as u64 ^ (dtype as u64) << 40);
            let kmax = *ks.iter().max().unwrap();
            let general: Vec<Vec<f64>> =
                (0..kmax).map(|j| data(dtype, n, Range::General, j % 2, false, &mut r)).collect();
            let product: Vec<Vec<f64>> =
                (0..kmax).map(|_| random(dtype, n, Range::Product, &mut r)).collect();
            let up = |vals: &[Vec<f64>]| -> Vec<(Tensor, Tensor)> {
                vals.iter().map(|v| pair(dtype, v, &[n])).collect()
            };
            let (tg, tp) = (up(&general), up(&product));
            for &k in ks {
                for kind in kinds {
                    let (vals, ts) = if kind == ReduceKind::Prod { (&product, &tp) } else { (&general, &tg) };
                    for scale in [None, Some(scale_for(kind, k, dtype))] {
                        check_reduce(dtype, kind, scale, &vals[..k], &ts[..k]);
                    }
                }
            }
        }
    }
}

fn check_reduce(
    dtype: DType,
    kind: ReduceKind,
    scale: Option<Scale>,
    vals: &[Vec<f64>],
    ts: &[(Tensor, Tensor)],
) {
    let (k, n) = (vals.len(), vals[0].len());
    let ctx = format!("reduce {kind:?} {scale:?} {dtype} k={k} n={n}");
    let vk: Vec<Tensor> = ts.iter().map(|t| t.0.clone()).collect();
    let cpu: Vec<Tensor> = ts.iter().map(|t| t.1.clone()).collect();
    let got = Tensor::reduce(&vk, kind, scale).unwrap();
    let refs: Vec<&[f64]> = vals.iter().map(|v| v.as_slice()).collect();
    let want = ref_reduce(dtype, kind, scale, &refs);
    // The accumulated error scales with the sum of magnitudes (Sum) or the product (Prod).
    let mag: Vec<f64> = (0..n)
        .map(|i| match kind {
            ReduceKind::Prod => refs.iter().map(|x| x[i].abs()).product(),
            _ => refs.iter().map(|x| x[i].abs()).sum(),
        })
        .collect();
    let smag = scale.map_or(1.0, |s| match s {
        Scale::Mul(f) => f.abs(),
        Scale::Div(f) => 1.0 / f.abs(),
    });
    let t = |i: usize| fold_tol(dtype, k + 1, mag[i]) * smag + tol(dtype, want[i], 1.0);
    check_op(&got, vs_cpu(n).then(|| Tensor::reduce(&cpu, kind, scale).unwrap()), &want, t, &ctx);
}

#[test]
fn scale_every_dtype() {
    if !have_vulkan() {
        return;
    }
    let seed = seed("scale");
    for dtype in dtypes() {
        let scales: &[Scale] = match dtype {
            d if d.is_float() => &[Scale::Mul(2.5), Scale::Mul(-0.1), Scale::Div(3.0), Scale::Div(-0.7)],
            DType::U8 => &[Scale::Mul(3.0), Scale::Mul(253.0), Scale::Div(3.0), Scale::Div(7.0)],
            _ => &[Scale::Mul(3.0), Scale::Mul(-7.0), Scale::Div(2.0), Scale::Div(-3.0)],
        };
        for &n in sizes() {
            let mut r = rng(seed ^ n as u64 ^ (dtype as u64) << 40);
            let x = data(dtype, n, Range::General, 0, true, &mut r);
            let (vx, cx) = pair(dtype, &x, &[n]);
            // Past the small sizes, one Mul and one Div (the kernel is the same for every factor).
            let scales = if vs_cpu(n) { scales } else { &[scales[0], scales[2]] };
            for &s in scales {
                let ctx = format!("scale {s:?} {dtype} n={n}");
                let got = vx.scale(s).unwrap();
                let want: Vec<f64> = x.iter().map(|&v| ref_scale(dtype, s, v)).collect();
                check_op(
                    &got,
                    vs_cpu(n).then(|| cx.scale(s).unwrap()),
                    &want,
                    |i| tol(dtype, want[i], 1.0),
                    &ctx,
                );
            }
        }
    }
}
