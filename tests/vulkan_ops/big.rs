//! f32 and u8 tensors over 128 MiB, more than one storage-buffer binding holds on lavapipe, so
//! every kernel runs in pieces: every op on them, every element checked against the f64
//! references of `collectives_tests` (`ref_binary`, `ref_scale`, `ref_cast`, each rounded once
//! to the dtype: bit for bit the IEEE result, division included), computed per element on the
//! host to keep host memory bounded.

use collectives::{BinaryOp, DType, ReduceKind, Scale, Tensor};
use collectives_tests::{ref_binary, ref_cast, ref_scale, round_op};
use rand::{Rng, RngCore};

use super::{VK, have_vulkan, seed};

/// f32 elements: 134,220,000 bytes, over 128 MiB; a multiple of 5 for the 2D slices.
const N_F32: usize = 33_555_000;
/// u8 elements: over 128 MiB; a multiple of 3 for the 2D slices.
const N_U8: usize = 134_220_000;

const OPS: [BinaryOp; 6] =
    [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Max, BinaryOp::Min];

/// Checks every element: `got[i]` (as f64) equals `want(i)`, or both are NaN; panics with the
/// count of wrong elements and the first five.
fn check<T: Copy + std::fmt::Debug>(
    got: &[T],
    n: usize,
    f64_of: impl Fn(T) -> f64,
    want: impl Fn(usize) -> f64,
    ctx: &str,
) {
    assert_eq!(got.len(), n, "{ctx}: length");
    let ok = |g: f64, w: f64| g == w || (g.is_nan() && w.is_nan());
    let bad: Vec<usize> = (0..n).filter(|&i| !ok(f64_of(got[i]), want(i))).collect();
    if !bad.is_empty() {
        let show: Vec<String> =
            bad.iter().take(5).map(|&i| format!("[{i}] got {:?} want {}", got[i], want(i))).collect();
        panic!("{ctx}: {} of {n} elements wrong: {}", bad.len(), show.join("; "));
    }
}

/// `a op b` in f32 from the f64 reference, rounded once.
fn f32_op(op: BinaryOp, a: f64, b: f64) -> f64 {
    round_op(DType::F32, ref_binary(DType::F32, op, a, b))
}

/// `s` applied in f32 from the f64 reference (the factor as f32, as the kernels take it).
fn f32_scale(s: Scale, x: f64) -> f64 {
    let f = f64::from(s.factor() as f32);
    let s = match s {
        Scale::Mul(_) => Scale::Mul(f),
        Scale::Div(_) => Scale::Div(f),
    };
    round_op(DType::F32, ref_scale(DType::F32, s, x))
}

const REDUCES: [(ReduceKind, BinaryOp, Scale); 4] = [
    (ReduceKind::Sum, BinaryOp::Add, Scale::Div(3.0)),
    (ReduceKind::Prod, BinaryOp::Mul, Scale::Mul(2.0)),
    (ReduceKind::Max, BinaryOp::Max, Scale::Mul(3.0)),
    (ReduceKind::Min, BinaryOp::Min, Scale::Div(2.0)),
];

fn up<T: collectives::Element>(v: &[T], shape: &[usize]) -> Tensor {
    let t = Tensor::from_vec(v.to_vec(), shape, VK).unwrap();
    t.realize().unwrap();
    t
}

#[test]
#[cfg_attr(not(feature = "slow"), ignore = "slow: run with --features slow")]
fn f32_over_128_mib_every_op() {
    if !have_vulkan() {
        return;
    }
    let mut r = collectives_tests::rng(seed("big f32"));
    let n = N_F32;
    let mut draw = |lo: f32, hi: f32| -> Vec<f32> { (0..n).map(|_| r.random_range(lo..hi)).collect() };
    let (a, b, c, wide) = (draw(-1.0, 1.0), draw(-1.0, 1.0), draw(-1.0, 1.0), draw(-300.0, 300.0));
    let (ta, tb, tc, tw) = (up(&a, &[n]), up(&b, &[n]), up(&c, &[n]), up(&wide, &[n]));
    let x = |v: &[f32], i: usize| f64::from(v[i]);
    for op in OPS {
        let got = ta.binary(op, &tb).unwrap().to_vec::<f32>().unwrap();
        check(&got, n, f64::from, |i| f32_op(op, x(&a, i), x(&b, i)), &format!("f32 {op:?}"));
    }
    for (kind, op, s) in REDUCES {
        for scale in [None, Some(s)] {
            let got = Tensor::reduce(&[ta.clone(), tb.clone(), tc.clone()], kind, scale)
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
            let fold = |i: usize| f32_op(op, f32_op(op, x(&a, i), x(&b, i)), x(&c, i));
            let want = |i| scale.map_or(fold(i), |s| f32_scale(s, fold(i)));
            check(&got, n, f64::from, want, &format!("f32 reduce {kind:?} {scale:?}"));
        }
    }
    for s in [Scale::Mul(2.5), Scale::Div(3.0)] {
        let got = ta.scale(s).unwrap().to_vec::<f32>().unwrap();
        check(&got, n, f64::from, |i| f32_scale(s, x(&a, i)), &format!("f32 scale {s:?}"));
    }
    let to_u8 = tw.cast(DType::U8).unwrap().to_vec::<u8>().unwrap();
    check(&to_u8, n, f64::from, |i| ref_cast(DType::F32, DType::U8, x(&wide, i)), "f32 -> u8");
    let to_f16 = tw.cast(DType::F16).unwrap().to_vec::<half::f16>().unwrap();
    check(&to_f16, n, half::f16::to_f64, |i| ref_cast(DType::F32, DType::F16, x(&wide, i)), "f32 -> f16");
    let sl = ta.narrow(0, 3, n - 7).unwrap().to_vec::<f32>().unwrap();
    check(&sl, n - 7, f64::from, |i| x(&a, i + 3), "f32 slice");
    let rows = n / 5;
    let sl2 = ta.reshape([rows, 5]).unwrap().narrow(1, 1, 3).unwrap().to_vec::<f32>().unwrap();
    check(&sl2, rows * 3, f64::from, |i| x(&a, i / 3 * 5 + 1 + i % 3), "f32 2D slice");
    let cat = Tensor::concat(&[ta.clone(), tb.clone()], 0).unwrap().to_vec::<f32>().unwrap();
    check(&cat, 2 * n, f64::from, |i| if i < n { x(&a, i) } else { x(&b, i - n) }, "f32 concat");
}

#[test]
#[cfg_attr(not(feature = "slow"), ignore = "slow: run with --features slow")]
fn u8_over_128_mib_every_op() {
    if !have_vulkan() {
        return;
    }
    let mut r = collectives_tests::rng(seed("big u8"));
    let n = N_U8;
    let mut draw = || -> Vec<u8> {
        let mut v = vec![0u8; n];
        r.fill_bytes(&mut v);
        v
    };
    let (a, b, c) = (draw(), draw(), draw());
    let (ta, tb, tc) = (up(&a, &[n]), up(&b, &[n]), up(&c, &[n]));
    let x = |v: &[u8], i: usize| f64::from(v[i]);
    let u8_op = |op, a: f64, b: f64| ref_binary(DType::U8, op, a, b);
    for op in OPS {
        let got = ta.binary(op, &tb).unwrap().to_vec::<u8>().unwrap();
        check(&got, n, f64::from, |i| u8_op(op, x(&a, i), x(&b, i)), &format!("u8 {op:?}"));
    }
    for (kind, op, s) in REDUCES {
        for scale in [None, Some(s)] {
            let got = Tensor::reduce(&[ta.clone(), tb.clone(), tc.clone()], kind, scale)
                .unwrap()
                .to_vec::<u8>()
                .unwrap();
            let fold = |i: usize| u8_op(op, u8_op(op, x(&a, i), x(&b, i)), x(&c, i));
            let want = |i| scale.map_or(fold(i), |s| ref_scale(DType::U8, s, fold(i)));
            check(&got, n, f64::from, want, &format!("u8 reduce {kind:?} {scale:?}"));
        }
    }
    for s in [Scale::Mul(3.0), Scale::Div(7.0)] {
        let got = ta.scale(s).unwrap().to_vec::<u8>().unwrap();
        check(&got, n, f64::from, |i| ref_scale(DType::U8, s, x(&a, i)), &format!("u8 scale {s:?}"));
    }
    let to_f16 = ta.cast(DType::F16).unwrap().to_vec::<half::f16>().unwrap();
    check(&to_f16, n, half::f16::to_f64, |i| ref_cast(DType::U8, DType::F16, x(&a, i)), "u8 -> f16");
    let sl = ta.narrow(0, 3, n - 7).unwrap().to_vec::<u8>().unwrap();
    check(&sl, n - 7, f64::from, |i| x(&a, i + 3), "u8 slice");
    let rows = n / 3;
    let (ta2, tb2) = (ta.reshape([rows, 3]).unwrap(), tb.reshape([rows, 3]).unwrap());
    let sl2 = ta2.narrow(1, 1, 2).unwrap().to_vec::<u8>().unwrap();
    check(&sl2, rows * 2, f64::from, |i| x(&a, i / 2 * 3 + 1 + i % 2), "u8 2D slice (unaligned rows)");
    let cat = Tensor::concat(&[ta.clone(), tb.clone()], 0).unwrap().to_vec::<u8>().unwrap();
    check(&cat, 2 * n, f64::from, |i| if i < n { x(&a, i) } else { x(&b, i - n) }, "u8 concat");
    let narrow_b = tb2.narrow(1, 2, 1).unwrap();
    let cat2 = Tensor::concat(&[ta2, narrow_b], 1).unwrap().to_vec::<u8>().unwrap();
    let want2 = |i: usize| {
        if i % 4 < 3 { x(&a, i / 4 * 3 + i % 4) } else { x(&b, i / 4 * 3 + 2) }
    };
    check(&cat2, rows * 4, f64::from, want2, "u8 2D concat (unaligned rows)");
}
