//! Elementwise ops — binary add/sub/mul/div/max/min, `Scale` and `Cast` — for every dtype against
//! an f64 reference on fresh random data: sizes 0, 1, 7 and 1M+3, non-power-of-two shapes, and
//! inputs that are slices of larger tensors. Every output element is checked; the seed of each
//! case is in its failure message.

use collectives::{BinaryOp, DType, Device, Error, Scale, Tensor};
use collectives_tests::{
    Range, check_all, fold_tol, fresh_seed, random, ref_binary, ref_cast, ref_scale, ref_slice, rng,
    round_op, round_to, tensor, values,
};
use rand::Rng;
use rand::rngs::StdRng;

/// Shapes every op is run on: empty, one element, odd, non-powers of two, an empty middle
/// dimension, and 1M+3 elements (past the kernels' parallel threshold, with a ragged last chunk).
const SHAPES: &[&[usize]] = &[&[0], &[1], &[7], &[3, 5, 7], &[4, 0, 9], &[(1 << 20) + 3]];

const BINARY: [BinaryOp; 6] =
    [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Max, BinaryOp::Min];

/// Binary ops on values exact in their dtype are exactly the f64 result rounded as the library
/// rounds (to the compute type, f32 for f16/bf16, then to the dtype).
fn binary_want(dtype: DType, op: BinaryOp, a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(&x, &y)| round_op(dtype, ref_binary(dtype, op, x, y))).collect()
}

#[test]
fn binary_ops_every_dtype_and_size() {
    for dtype in DType::ALL {
        for (si, &shape) in SHAPES.iter().enumerate() {
            let seed = fresh_seed();
            let mut r = rng(seed);
            let n: usize = shape.iter().product();
            let a = random(dtype, n, Range::General, &mut r);
            let b = random(dtype, n, Range::General, &mut r);
            let d = random(dtype, n, Range::Divisor, &mut r);
            // Small cases take the second operand from another device (the pass copies it).
            let other = Device::Cpu(if n < 1000 { 1 + si as u32 } else { 0 });
            let (ta, tb, td) = (
                tensor(dtype, &a, shape, Device::Cpu(0)),
                tensor(dtype, &b, shape, other),
                tensor(dtype, &d, shape, other),
            );
            for op in BINARY {
                let (rhs, trhs) = if op == BinaryOp::Div { (&d, &td) } else { (&b, &tb) };
                let out = ta.binary(op, trhs).unwrap();
                assert_eq!((out.dtype(), out.shape().dims(), out.device()), (dtype, shape, Device::Cpu(0)));
                let ctx = format!("{op:?} {dtype} {shape:?} seed {seed}");
                check_all(&values(&out), &binary_want(dtype, op, &a, rhs), |_| 0.0, &ctx);
            }
        }
    }
}

#[test]
fn named_binary_methods_are_the_binary_ops() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let dtype = DType::F64;
    let (a, b) = (random(dtype, 11, Range::General, &mut r), random(dtype, 11, Range::Divisor, &mut r));
    let (ta, tb) = (tensor(dtype, &a, [11], Device::Cpu(0)), tensor(dtype, &b, [11], Device::Cpu(0)));
    let named = [ta.add(&tb), ta.sub(&tb), ta.mul(&tb), ta.div(&tb), ta.maximum(&tb), ta.minimum(&tb)];
    for (op, t) in BINARY.into_iter().zip(named) {
        let t = t.unwrap();
        assert_eq!(t.op(), &collectives::Op::Binary(op));
        check_all(&values(&t), &binary_want(dtype, op, &a, &b), |_| 0.0, &format!("{op:?} seed {seed}"));
    }
}

#[test]
fn binary_ops_on_slices() {
    for dtype in DType::ALL {
        let seed = fresh_seed();
        let mut r = rng(seed);
        let (xd, yd) = ([6usize, 10, 9], [6usize, 5, 13]);
        let x = random(dtype, xd.iter().product(), Range::General, &mut r);
        let y = random(dtype, yd.iter().product(), Range::Divisor, &mut r);
        let tx = tensor(dtype, &x, xd, Device::Cpu(2)).narrow(1, 3, 5).unwrap(); // [6, 5, 9]
        let ty = tensor(dtype, &y, yd, Device::Cpu(3)).slice(2, 4..13).unwrap(); // [6, 5, 9]
        let (sx, sy) = (ref_slice(&x, &xd, 1, 3, 5), ref_slice(&y, &yd, 2, 4, 9));
        for op in BINARY {
            let out = tx.binary(op, &ty).unwrap();
            let ctx = format!("{op:?} {dtype} on slices, seed {seed}");
            check_all(&values(&out), &binary_want(dtype, op, &sx, &sy), |_| 0.0, &ctx);
        }
    }
}

#[test]
fn integer_division_truncates_and_by_zero_gives_zero() {
    for dtype in [DType::I32, DType::I64, DType::U8] {
        let seed = fresh_seed();
        let mut r = rng(seed);
        let n = 301;
        let a = random(dtype, n, Range::General, &mut r);
        let mut b = random(dtype, n, Range::Divisor, &mut r);
        for v in b.iter_mut() {
            if r.random_ratio(1, 4) {
                *v = 0.0;
            }
        }
        let out =
            tensor(dtype, &a, [n], Device::Cpu(0)).div(&tensor(dtype, &b, [n], Device::Cpu(0))).unwrap();
        let got = values(&out);
        let ctx = format!("{dtype} seed {seed}");
        check_all(&got, &binary_want(dtype, BinaryOp::Div, &a, &b), |_| 0.0, &ctx);
        for i in 0..n {
            if b[i] == 0.0 {
                assert_eq!(got[i], 0.0, "{ctx}: x / 0 at {i}");
            } else {
                assert_eq!(got[i], (a[i] / b[i]).trunc(), "{ctx}: truncation at {i}");
            }
        }
    }
}

/// Integer add/sub/mul wrap exactly, checked in the native types against i128 arithmetic (i64
/// values beyond 2^53 cannot be carried as f64).
#[test]
fn integer_ops_wrap_exactly() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let n = 4097;
    macro_rules! case {
        ($t:ty) => {{
            let a: Vec<$t> = (0..n).map(|_| r.random()).collect();
            let b: Vec<$t> = (0..n).map(|_| r.random()).collect();
            let ta = Tensor::from_vec(a.clone(), [n], Device::Cpu(0)).unwrap();
            let tb = Tensor::from_vec(b.clone(), [n], Device::Cpu(1)).unwrap();
            let ops: [(BinaryOp, fn(i128, i128) -> i128); 5] = [
                (BinaryOp::Add, |x, y| x + y),
                (BinaryOp::Sub, |x, y| x - y),
                (BinaryOp::Mul, |x, y| x.wrapping_mul(y)),
                (BinaryOp::Max, |x, y| x.max(y)),
                (BinaryOp::Min, |x, y| x.min(y)),
            ];
            for (op, f) in ops {
                let got = ta.binary(op, &tb).unwrap().to_vec::<$t>().unwrap();
                for i in 0..n {
                    let want = f(a[i] as i128, b[i] as i128) as $t;
                    assert_eq!(
                        got[i],
                        want,
                        "{op:?} {} at {i}: {} {} (seed {seed})",
                        stringify!($t),
                        a[i],
                        b[i]
                    );
                }
            }
        }};
    }
    case!(i32);
    case!(i64);
    case!(u8);
}

#[test]
fn nan_propagates_through_max_and_min() {
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let seed = fresh_seed();
        let mut r = rng(seed);
        let n = 1000;
        let mut a = random(dtype, n, Range::General, &mut r);
        let mut b = random(dtype, n, Range::General, &mut r);
        for i in 0..n {
            match r.random_range(0..6) {
                0 => a[i] = f64::NAN,
                1 => b[i] = f64::NAN,
                2 => (a[i], b[i]) = (f64::NAN, f64::NAN),
                _ => {}
            }
        }
        let (ta, tb) = (tensor(dtype, &a, [n], Device::Cpu(0)), tensor(dtype, &b, [n], Device::Cpu(0)));
        for op in [BinaryOp::Max, BinaryOp::Min] {
            let got = values(&ta.binary(op, &tb).unwrap());
            let ctx = format!("{op:?} {dtype} seed {seed}");
            check_all(&got, &binary_want(dtype, op, &a, &b), |_| 0.0, &ctx);
            for i in 0..n {
                assert_eq!(got[i].is_nan(), a[i].is_nan() || b[i].is_nan(), "{ctx}: NaN at {i}");
            }
        }
    }
}

/// Factors for `Scale` on a dtype: float factors are arbitrary (rounded to f32 for f32, f16 and
/// bf16, which compute in f32); integer factors are integers in the dtype's range, its ends
/// included (those outside are `Error::ScaleOutOfRange`: see `out_of_range_factors`).
fn scale_factors(dtype: DType, r: &mut StdRng) -> Vec<Scale> {
    if dtype.is_float() {
        let f: f64 = r.random_range(-4.0..4.0);
        let g: f64 = r.random_range(0.1..3.0);
        return vec![
            Scale::Mul(f),
            Scale::Div(g),
            Scale::Mul(0.5),
            Scale::Div(3.0),
            Scale::Mul(-2.0),
            Scale::Mul(0.0),
        ];
    }
    let (min, max) = range(dtype);
    let ints = [min, -3.0, -1.0, 0.0, 1.0, 2.0, 7.0, 255.0, 1000.0, max];
    let ints: Vec<f64> = ints.into_iter().filter(|f| (min..=max).contains(f)).collect();
    let mut v: Vec<Scale> = ints.iter().map(|&f| Scale::Mul(f)).collect();
    v.extend(ints.iter().filter(|&&f| f != 0.0).map(|&f| Scale::Div(f)));
    v
}

/// The least and greatest factor an integer dtype takes (i64's greatest as f64 is 2^63 - 1024).
fn range(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::U8 => (0.0, 255.0),
        DType::I32 => (-2147483648.0, 2147483647.0),
        _ => (-9223372036854775808.0, 9223372036854774784.0),
    }
}

#[test]
fn out_of_range_factors_are_errors() {
    for dtype in [DType::U8, DType::I32, DType::I64] {
        let (min, max) = range(dtype);
        let t = tensor(dtype, &[1.0, 2.0], [2], Device::Cpu(0));
        let past = if dtype == DType::I64 { 2f64.powi(63) } else { max + 1.0 };
        for f in [min - 1.0, past, -1e30, 1e30].into_iter().filter(|&f| f < min || f > max) {
            for s in [Scale::Mul(f), Scale::Div(f)] {
                let e = t.scale(s).unwrap_err();
                assert!(
                    matches!(e, Error::ScaleOutOfRange { dtype: d, .. } if d == dtype),
                    "{dtype} {s:?}: {e:?}"
                );
            }
        }
    }
}

#[test]
fn scale_every_dtype_and_size() {
    for dtype in DType::ALL {
        for &shape in SHAPES {
            let seed = fresh_seed();
            let mut r = rng(seed);
            let n: usize = shape.iter().product();
            let x = random(dtype, n, Range::General, &mut r);
            let t = tensor(dtype, &x, shape, Device::Cpu(1));
            let mut factors = scale_factors(dtype, &mut r);
            if n > 100_000 {
                // The large size runs the kernel's parallel path; one Mul and one Div suffice.
                let div = factors.iter().find(|s| matches!(s, Scale::Div(f) if f.abs() > 1.5));
                factors = vec![factors[0], *div.expect("a division by more than 1.5")];
            }
            for s in factors {
                let out = t.scale(s).unwrap();
                assert_eq!((out.dtype(), out.shape().dims(), out.device()), (dtype, shape, Device::Cpu(1)));
                let want: Vec<f64> = x.iter().map(|&v| ref_scale(dtype, s, v)).collect();
                let tol = |i: usize| fold_tol(dtype, 2, want[i].abs());
                check_all(&values(&out), &want, tol, &format!("{s:?} {dtype} {shape:?} seed {seed}"));
            }
        }
    }
}

#[test]
fn integer_scale_division_truncates_toward_zero() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for dtype in [DType::I32, DType::I64] {
        let x = random(dtype, 500, Range::General, &mut r);
        for k in [2.0, 3.0, -4.0, 7.0] {
            let got = values(&tensor(dtype, &x, [500], Device::Cpu(0)).scale(Scale::Div(k)).unwrap());
            let want: Vec<f64> = x.iter().map(|v| (v / k).trunc()).collect();
            check_all(&got, &want, |_| 0.0, &format!("{dtype} / {k} seed {seed}"));
        }
    }
}

/// Sources for casts: values that exercise rounding, truncation, saturation, wrapping and the
/// specials (NaN, infinities, -0) of each dtype.
fn cast_source(dtype: DType, n: usize, r: &mut StdRng) -> Vec<f64> {
    const SPECIAL: [f64; 16] = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        0.5,
        -0.5,
        1.5,
        -1.5,
        255.5,
        256.0,
        -1.0,
        1e10,
        -1e10,
        65504.0,
        65520.0,
        3.0e38,
    ];
    (0..n)
        .map(|_| {
            let v = match dtype {
                _ if dtype.is_float() && r.random_ratio(1, 5) => SPECIAL[r.random_range(0..SPECIAL.len())],
                DType::F64 if r.random_ratio(1, 10) => 1e300 * r.random_range(-1.0..1.0),
                _ if dtype.is_float() => r.random_range(-400.0..400.0),
                DType::I32 if r.random() => r.random::<i32>() as f64,
                DType::I64 if r.random() => r.random_range(-(1i64 << 50)..(1 << 50)) as f64,
                DType::U8 => r.random::<u8>() as f64,
                _ => r.random_range(-300..=300) as f64,
            };
            round_to(dtype, v)
        })
        .collect()
}

#[test]
fn cast_every_pair_and_size() {
    for from in DType::ALL {
        for &shape in SHAPES {
            let seed = fresh_seed();
            let n: usize = shape.iter().product();
            let x = cast_source(from, n, &mut rng(seed));
            let t = tensor(from, &x, shape, Device::Cpu(0));
            for to in DType::ALL {
                let out = t.cast(to).unwrap();
                assert_eq!((out.dtype(), out.shape().dims()), (to, shape));
                let want: Vec<f64> = x.iter().map(|&v| ref_cast(from, to, v)).collect();
                check_all(&values(&out), &want, |_| 0.0, &format!("{from} -> {to} {shape:?} seed {seed}"));
            }
        }
    }
}

#[test]
fn cast_semantics_spot_checks() {
    // Spelled out once, so the reference's own rules are pinned: truncation toward zero,
    // saturation, NaN to 0, integer wrapping, round-to-nearest-even into f16.
    let x = Tensor::from_vec(vec![-1.7f32, 2.9, 300.0, -5.0, f32::NAN, f32::INFINITY], [6], Device::Cpu(0))
        .unwrap();
    assert_eq!(x.cast(DType::U8).unwrap().to_vec::<u8>().unwrap(), vec![0, 2, 255, 0, 0, 255]);
    assert_eq!(x.cast(DType::I32).unwrap().to_vec::<i32>().unwrap(), vec![-1, 2, 300, -5, 0, i32::MAX]);
    let w = Tensor::from_vec(vec![300i32, -1, 65_536 + 7, i32::MIN], [4], Device::Cpu(1)).unwrap();
    assert_eq!(w.cast(DType::U8).unwrap().to_vec::<u8>().unwrap(), vec![44, 255, 7, 0]);
    assert_eq!(w.cast(DType::I64).unwrap().to_vec::<i64>().unwrap(), vec![300, -1, 65_543, i32::MIN as i64]);
    let h = Tensor::from_vec(vec![2049i32, 2051, 70_000], [3], Device::Cpu(0)).unwrap();
    let got: Vec<f64> =
        h.cast(DType::F16).unwrap().to_vec::<half::f16>().unwrap().into_iter().map(f64::from).collect();
    assert_eq!(got, vec![2048.0, 2052.0, f64::INFINITY]);
    let e = x.cast(DType::F32).unwrap().to_vec::<f64>().unwrap_err();
    assert!(matches!(e, Error::ElementType { .. }));
}

/// Values just past a rounding tie in the bits below the top 20 of the f64 mantissa, where
/// rounding through `half`'s `from_f64` (which drops those bits) or through f32 (a double
/// rounding) goes the wrong way. A cast rounds once, to nearest-even.
#[test]
fn casts_to_half_types_round_once() {
    let p = |e: i32| 2f64.powi(e);
    let f32s = [1.0 + p(-8) + p(-23), -(1.0 + p(-8) + p(-22)), 3.0 * (1.0 + p(-11) + p(-23))];
    let x = Tensor::from_vec(f32s.map(|v| v as f32).to_vec(), [3], Device::Cpu(0)).unwrap();
    let want: Vec<f64> = f32s.iter().map(|&v| round_to(DType::BF16, v)).collect();
    assert_eq!(want[0], 1.0 + p(-7), "the reference itself");
    assert_eq!(values(&x.cast(DType::BF16).unwrap()), want, "f32 -> bf16");
    let f64s = [1.0 + p(-11) + p(-40), -(1.0 + p(-8) + p(-50)), 1.0 + p(-9) + p(-11) + p(-30)];
    let y = Tensor::from_vec(f64s.to_vec(), [3], Device::Cpu(0)).unwrap();
    for to in [DType::F16, DType::BF16] {
        let want: Vec<f64> = f64s.iter().map(|&v| round_to(to, v)).collect();
        assert_eq!(values(&y.cast(to).unwrap()), want, "f64 -> {to}");
    }
    assert_eq!(round_to(DType::F16, f64s[0]), 1.0 + p(-10), "the reference itself");
    let ints = [(1i64 << 30) + (1 << 22) + 1, -(1i64 << 40) - (1 << 32) - 1, (1 << 24) + 1];
    let z = Tensor::from_vec(ints.to_vec(), [3], Device::Cpu(0)).unwrap();
    let want: Vec<f64> = ints.iter().map(|&v| round_to(DType::BF16, v as f64)).collect();
    assert_eq!(want[0], p(30) + p(23));
    assert_eq!(values(&z.cast(DType::BF16).unwrap()), want, "i64 -> bf16");
    let w = Tensor::from_vec(ints.map(|v| v as i32).to_vec(), [3], Device::Cpu(0)).unwrap();
    let want: Vec<f64> = ints.iter().map(|&v| round_to(DType::BF16, v as i32 as f64)).collect();
    assert_eq!(values(&w.cast(DType::BF16).unwrap()), want, "i32 -> bf16");
}

/// The tests' own rounding to f16/bf16 agrees with `half`'s f32 conversions (which are correctly
/// rounded) on random f32 bit patterns, specials included.
#[test]
fn reference_rounding_matches_half_from_f32() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for _ in 0..200_000 {
        let x = f32::from_bits(r.random());
        let (h, b) = (round_to(DType::F16, x as f64), round_to(DType::BF16, x as f64));
        let (wh, wb) = (half::f16::from_f32(x).to_f64(), half::bf16::from_f32(x).to_f64());
        assert!(h == wh || h.is_nan() && wh.is_nan(), "f16 of {x:e}: {h} vs {wh} (seed {seed})");
        assert!(b == wb || b.is_nan() && wb.is_nan(), "bf16 of {x:e}: {b} vs {wb} (seed {seed})");
    }
}
