//! f32 and u8 tensors over 128 MiB, more than one storage-buffer binding holds on lavapipe, so
//! every kernel runs in pieces: every op on them, checked element by element (computed on the
//! host per element, in the CPU backend's arithmetic, to keep host memory bounded).

use collectives::{BinaryOp, DType, ReduceKind, Scale, Tensor};
use rand::{Rng, RngCore};

use super::{VK, have_vulkan, seed};

/// f32 elements: 134,220,000 bytes, over 128 MiB; a multiple of 5 for the 2D slices.
const N_F32: usize = 33_555_000;
/// u8 elements: over 128 MiB; a multiple of 3 for the 2D slices.
const N_U8: usize = 134_220_000;

const OPS: [BinaryOp; 6] =
    [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Max, BinaryOp::Min];

/// Checks `got[i] == want(i)` for every element (within `ulps` units in the last place, for
/// floats); panics with the first differences.
fn check<T: Copy + PartialEq + std::fmt::Debug>(
    got: &[T],
    n: usize,
    want: impl Fn(usize) -> T,
    close: impl Fn(T, T) -> bool,
    ctx: &str,
) {
    assert_eq!(got.len(), n, "{ctx}: length");
    let bad: Vec<usize> = (0..n).filter(|&i| !close(got[i], want(i))).take(5).collect();
    if let Some(&i) = bad.first() {
        panic!("{ctx}: element {i}: got {:?} want {:?} (first bad: {bad:?})", got[i], want(i));
    }
}

fn f32_close(ulps: f32) -> impl Fn(f32, f32) -> bool {
    move |g, w| {
        (g.is_nan() && w.is_nan())
            || g.to_bits() == w.to_bits()
            || (g - w).abs() <= ulps * f32::EPSILON * w.abs()
    }
}

/// `a op b` as the CPU backend computes it in f32.
fn f32_op(op: BinaryOp, a: f32, b: f32) -> f32 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Max => {
            if a.is_nan() || b.is_nan() {
                f32::NAN
            } else if a >= b {
                a
            } else {
                b
            }
        }
        BinaryOp::Min => {
            if a.is_nan() || b.is_nan() {
                f32::NAN
            } else if a <= b {
                a
            } else {
                b
            }
        }
    }
}

/// `a op b` as the CPU backend computes it in u8 (wrapping; division by zero is 0).
fn u8_op(op: BinaryOp, a: u8, b: u8) -> u8 {
    match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Div => a.checked_div(b).unwrap_or(0),
        BinaryOp::Max => a.max(b),
        BinaryOp::Min => a.min(b),
    }
}

fn f32_scale(s: Scale, x: f32) -> f32 {
    match s {
        Scale::Mul(f) => x * f as f32,
        Scale::Div(f) => x / f as f32,
    }
}

fn u8_scale(s: Scale, x: u8) -> u8 {
    match s {
        Scale::Mul(f) => x.wrapping_mul(f as i64 as u8),
        Scale::Div(f) => x.checked_div(f as i64 as u8).unwrap_or(0),
    }
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
    for op in OPS {
        let got = ta.binary(op, &tb).unwrap().to_vec::<f32>().unwrap();
        let ulps = if op == BinaryOp::Div { 1.0 } else { 0.0 };
        check(&got, n, |i| f32_op(op, a[i], b[i]), f32_close(ulps), &format!("f32 {op:?}"));
    }
    for (kind, op, s) in REDUCES {
        for scale in [None, Some(s)] {
            let got = Tensor::reduce(&[ta.clone(), tb.clone(), tc.clone()], kind, scale)
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
            let fold = |i: usize| f32_op(op, f32_op(op, a[i], b[i]), c[i]);
            let want = |i| scale.map_or(fold(i), |s| f32_scale(s, fold(i)));
            let ulps = if matches!(scale, Some(Scale::Div(_))) { 1.0 } else { 0.0 };
            check(&got, n, want, f32_close(ulps), &format!("f32 reduce {kind:?} {scale:?}"));
        }
    }
    for s in [Scale::Mul(2.5), Scale::Div(3.0)] {
        let got = ta.scale(s).unwrap().to_vec::<f32>().unwrap();
        let ulps = if matches!(s, Scale::Div(_)) { 1.0 } else { 0.0 };
        check(&got, n, |i| f32_scale(s, a[i]), f32_close(ulps), &format!("f32 scale {s:?}"));
    }
    let to_u8 = tw.cast(DType::U8).unwrap().to_vec::<u8>().unwrap();
    check(&to_u8, n, |i| wide[i] as u8, |g, w| g == w, "f32 -> u8");
    let to_f16 = tw.cast(DType::F16).unwrap().to_vec::<half::f16>().unwrap();
    check(&to_f16, n, |i| half::f16::from_f32(wide[i]), |g, w| g.to_bits() == w.to_bits(), "f32 -> f16");
    let sl = ta.narrow(0, 3, n - 7).unwrap().to_vec::<f32>().unwrap();
    check(&sl, n - 7, |i| a[i + 3], |g, w| g == w, "f32 slice");
    let rows = n / 5;
    let sl2 = ta.reshape([rows, 5]).unwrap().narrow(1, 1, 3).unwrap().to_vec::<f32>().unwrap();
    check(&sl2, rows * 3, |i| a[i / 3 * 5 + 1 + i % 3], |g, w| g == w, "f32 2D slice");
    let cat = Tensor::concat(&[ta.clone(), tb.clone()], 0).unwrap().to_vec::<f32>().unwrap();
    check(&cat, 2 * n, |i| if i < n { a[i] } else { b[i - n] }, |g, w| g == w, "f32 concat");
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
    for op in OPS {
        let got = ta.binary(op, &tb).unwrap().to_vec::<u8>().unwrap();
        check(&got, n, |i| u8_op(op, a[i], b[i]), |g, w| g == w, &format!("u8 {op:?}"));
    }
    for (kind, op, s) in REDUCES {
        for scale in [None, Some(s)] {
            let got = Tensor::reduce(&[ta.clone(), tb.clone(), tc.clone()], kind, scale)
                .unwrap()
                .to_vec::<u8>()
                .unwrap();
            let fold = |i: usize| u8_op(op, u8_op(op, a[i], b[i]), c[i]);
            let want = |i| scale.map_or(fold(i), |s| u8_scale(s, fold(i)));
            check(&got, n, want, |g, w| g == w, &format!("u8 reduce {kind:?} {scale:?}"));
        }
    }
    for s in [Scale::Mul(3.0), Scale::Div(7.0)] {
        let got = ta.scale(s).unwrap().to_vec::<u8>().unwrap();
        check(&got, n, |i| u8_scale(s, a[i]), |g, w| g == w, &format!("u8 scale {s:?}"));
    }
    let to_f16 = ta.cast(DType::F16).unwrap().to_vec::<half::f16>().unwrap();
    check(
        &to_f16,
        n,
        |i| half::f16::from_f32(f32::from(a[i])),
        |g, w| g.to_bits() == w.to_bits(),
        "u8 -> f16",
    );
    let sl = ta.narrow(0, 3, n - 7).unwrap().to_vec::<u8>().unwrap();
    check(&sl, n - 7, |i| a[i + 3], |g, w| g == w, "u8 slice");
    let rows = n / 3;
    let (ta2, tb2) = (ta.reshape([rows, 3]).unwrap(), tb.reshape([rows, 3]).unwrap());
    let sl2 = ta2.narrow(1, 1, 2).unwrap().to_vec::<u8>().unwrap();
    check(&sl2, rows * 2, |i| a[i / 2 * 3 + 1 + i % 2], |g, w| g == w, "u8 2D slice (unaligned rows)");
    let cat = Tensor::concat(&[ta.clone(), tb.clone()], 0).unwrap().to_vec::<u8>().unwrap();
    check(&cat, 2 * n, |i| if i < n { a[i] } else { b[i - n] }, |g, w| g == w, "u8 concat");
    let narrow_b = tb2.narrow(1, 2, 1).unwrap();
    let cat2 = Tensor::concat(&[ta2, narrow_b], 1).unwrap().to_vec::<u8>().unwrap();
    let want2 = |i: usize| {
        if i % 4 < 3 { a[i / 4 * 3 + i % 4] } else { b[i / 4 * 3 + 2] }
    };
    check(&cat2, rows * 4, want2, |g, w| g == w, "u8 2D concat (unaligned rows)");
}
