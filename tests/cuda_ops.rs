//! Every op × dtype on each CUDA device, through the public `Tensor` API: each result is checked
//! element by element against the f64 reference (`support`) and against the CPU backend running
//! the same graph, which it must match exactly. Without a CUDA device the tests print that they
//! skipped, unless `REQUIRE_CUDA=1`.

mod cuda_common;

use collectives::{BinaryOp, DType, Device, ReduceKind, Scale, Tensor};
use collectives_tests::*;
use cuda_common::{cuda_devices, same_as_cpu, specials};

const OPS: [BinaryOp; 6] =
    [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Max, BinaryOp::Min];
const KINDS: [ReduceKind; 4] = [ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min];

/// The smallest positive value of a float dtype (the absolute error floor of a rounding into its
/// subnormal range); 0 for integers.
fn tiny(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2f64.powi(-24),
        DType::BF16 => 2f64.powi(-133),
        DType::F32 => 2f64.powi(-149),
        DType::F64 => f64::from_bits(1),
        _ => 0.0,
    }
}

/// The same data as a tensor on `dev` and on `Cpu(0)`.
fn pair(dtype: DType, vals: &[f64], shape: &[usize], dev: Device) -> (Tensor, Tensor) {
    (tensor(dtype, vals, shape, dev), tensor(dtype, vals, shape, Device::Cpu(0)))
}

#[test]
fn binary_ops_every_dtype() {
    let n = (1 << 18) + 3;
    for dev in cuda_devices() {
        for dtype in DType::ALL {
            for op in OPS {
                let seed = fresh_seed();
                let mut r = rng(seed);
                let mut a = random(dtype, n, Range::General, &mut r);
                let range_b = if op == BinaryOp::Div { Range::Divisor } else { Range::General };
                let mut b = random(dtype, n, range_b, &mut r);
                specials(dtype, op, &mut a, &mut b);
                let ((ga, ca), (gb, cb)) = (pair(dtype, &a, &[n], dev), pair(dtype, &b, &[n], dev));
                let (g, c) = (ga.binary(op, &gb).unwrap(), ca.binary(op, &cb).unwrap());
                let want: Vec<f64> = a.iter().zip(&b).map(|(&x, &y)| ref_binary(dtype, op, x, y)).collect();
                let ctx = format!("{dev} {dtype} {op:?} seed {seed}");
                check_all(&values(&g), &want, |i| eps(dtype) * want[i].abs() + tiny(dtype), &ctx);
                same_as_cpu(&g, &c, &ctx);
            }
        }
    }
}

/// Tolerance of `scale(fold(inputs))` at element `i` against the f64 reference.
fn reduce_tol(
    dtype: DType,
    kind: ReduceKind,
    s: Option<Scale>,
    ins: &[Vec<f64>],
    i: usize,
    want: f64,
) -> f64 {
    let k = ins.len();
    let mag = match kind {
        ReduceKind::Sum => ins.iter().map(|x| x[i].abs()).sum::<f64>(),
        ReduceKind::Prod => ins.iter().map(|x| x[i].abs()).product::<f64>(),
        _ => 0.0,
    };
    let f = s.map_or(1.0, |s| s.factor().abs().max(1.0 / s.factor().abs()));
    fold_tol(dtype, k + 1, mag * f) + eps(dtype) * want.abs() + tiny(dtype)
}

fn check_reduce(dev: Device, dtype: DType, kind: ReduceKind, s: Option<Scale>, k: usize, n: usize) {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let range = if kind == ReduceKind::Prod { Range::Product } else { Range::General };
    let mut ins: Vec<Vec<f64>> = (0..k).map(|_| random(dtype, n, range, &mut r)).collect();
    if dtype.is_float() && matches!(kind, ReduceKind::Max | ReduceKind::Min) && n > 5 {
        ins[k / 2][5] = f64::NAN;
    }
    let (gs, cs): (Vec<Tensor>, Vec<Tensor>) = ins.iter().map(|x| pair(dtype, x, &[n], dev)).unzip();
    let g = Tensor::reduce(&gs, kind, s).unwrap();
    let c = Tensor::reduce(&cs, kind, s).unwrap();
    let refs: Vec<&[f64]> = ins.iter().map(Vec::as_slice).collect();
    let want = ref_reduce(dtype, kind, s, &refs);
    let ctx = format!("{dev} {dtype} {kind:?} {s:?} k={k} n={n} seed {seed}");
    check_all(&values(&g), &want, |i| reduce_tol(dtype, kind, s, &ins, i, want[i]), &ctx);
    same_as_cpu(&g, &c, &ctx);
}

#[test]
fn reduce_every_kind_scale_and_fan_in() {
    let scales = [None, Some(Scale::Mul(3.0)), Some(Scale::Div(4.0))];
    for dev in cuda_devices() {
        for dtype in DType::ALL {
            for kind in KINDS {
                for s in scales {
                    for k in [1, 2, 3, 16, 17, 35] {
                        check_reduce(dev, dtype, kind, s, k, 4099);
                    }
                }
            }
        }
    }
}

#[test]
fn reduce_large_vectorized() {
    for dev in cuda_devices() {
        for dtype in [DType::F32, DType::BF16, DType::F16, DType::I32, DType::U8, DType::F64] {
            check_reduce(dev, dtype, ReduceKind::Sum, None, 4, (1 << 22) + 1);
            check_reduce(dev, dtype, ReduceKind::Max, Some(Scale::Div(2.0)), 20, 1 << 20);
        }
    }
}

#[test]
fn scale_every_dtype() {
    let n = (1 << 18) + 7;
    for dev in cuda_devices() {
        for dtype in DType::ALL {
            // (A negative divisor of a u8 is 256 - d in the library, which `ref_scale` does not model.)
            let d = if dtype == DType::U8 { 7.0 } else { -7.0 };
            let m = if dtype == DType::U8 { 255.0 } else { -1.0 };
            let mut factors = vec![Scale::Mul(3.0), Scale::Div(d), Scale::Mul(m), Scale::Div(3.0)];
            if dtype.is_float() {
                factors.extend([Scale::Mul(0.1), Scale::Div(0.3)]);
            }
            for s in factors {
                let seed = fresh_seed();
                let x = random(dtype, n, Range::General, &mut rng(seed));
                let (g, c) = pair(dtype, &x, &[n], dev);
                let (g, c) = (g.scale(s).unwrap(), c.scale(s).unwrap());
                let want: Vec<f64> = x.iter().map(|&v| ref_scale(dtype, s, v)).collect();
                let ctx = format!("{dev} {dtype} {s:?} seed {seed}");
                check_all(&values(&g), &want, |i| 2.0 * eps(dtype) * want[i].abs() + tiny(dtype), &ctx);
                same_as_cpu(&g, &c, &ctx);
            }
        }
    }
}

/// Values that probe a cast: the dtype's edges, NaN and infinities, rounding ties.
fn cast_inputs(from: DType, seed: u64) -> Vec<f64> {
    let mut v = random(from, 4099, Range::General, &mut rng(seed));
    let edges: &[f64] = if from.is_float() {
        &[
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            1e10,
            -1e10,
            3.7,
            -3.7,
            255.5,
            256.0,
            -0.9,
            2147483647.5,
            -2147483649.0,
            9.3e18,
            -9.3e18,
            65519.0,
            65520.0,
            1e-8,
            1.00048828125,
            300.0,
        ]
    } else if from == DType::U8 {
        &[0.0, 1.0, 127.0, 128.0, 255.0]
    } else {
        &[
            -2147483648.0,
            2147483647.0,
            -1.0,
            0.0,
            255.0,
            256.0,
            -129.0,
            65504.0,
            65520.0,
            16777217.0,
            1e15 + 1.0,
        ]
    };
    for (i, &e) in edges.iter().enumerate() {
        v[i * 3] = round_to(from, e);
    }
    v
}

#[test]
fn cast_every_pair() {
    for dev in cuda_devices() {
        for from in DType::ALL {
            for to in DType::ALL {
                let seed = fresh_seed();
                let x = cast_inputs(from, seed);
                let (g, c) = pair(from, &x, &[x.len()], dev);
                let (g, c) = (g.cast(to).unwrap(), c.cast(to).unwrap());
                let want: Vec<f64> = x.iter().map(|&v| ref_cast(from, to, v)).collect();
                let ctx = format!("{dev} cast {from} -> {to} seed {seed}");
                check_all(&values(&g), &want, |_| 0.0, &ctx);
                same_as_cpu(&g, &c, &ctx);
            }
        }
    }
}

/// i64 values beyond 2^53 (not representable in the f64 helpers) cast exactly as on the CPU.
#[test]
fn cast_wide_i64() {
    let data: Vec<i64> =
        vec![i64::MIN, i64::MAX, (1 << 53) + 1, -(1 << 53) - 3, (1 << 62) + 12345, -7, 1 << 31];
    for dev in cuda_devices() {
        for to in DType::ALL {
            let g = Tensor::from_vec(data.clone(), [data.len()], dev).unwrap().cast(to).unwrap();
            let c = Tensor::from_vec(data.clone(), [data.len()], Device::Cpu(0)).unwrap().cast(to).unwrap();
            same_as_cpu(&g, &c, &format!("{dev} cast i64 -> {to}"));
        }
    }
}

/// `x[o, start + m, i]` of an `outer × mid × inner` tensor, as a flat f64 vector.
fn ref_narrow(x: &[f64], (outer, mid, inner): (usize, usize, usize), start: usize, len: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(outer * len * inner);
    for o in 0..outer {
        let row = &x[(o * mid + start) * inner..(o * mid + start + len) * inner];
        out.extend_from_slice(row);
    }
    out
}

#[test]
fn slice_and_concat_every_dtype() {
    let shapes: [[usize; 3]; 3] = [[7, 13, 5], [1000, 33, 3], [2, 4099, 1]];
    for dev in cuda_devices() {
        for dtype in DType::ALL {
            for shape in shapes {
                for dim in 0..3 {
                    let seed = fresh_seed();
                    let x = random(dtype, shape.iter().product(), Range::General, &mut rng(seed));
                    let (g, c) = pair(dtype, &x, &shape, dev);
                    let size = shape[dim];
                    let (start, len) = (size / 3, size - size / 3 - 1);
                    let outer: usize = shape[..dim].iter().product();
                    let inner: usize = shape[dim + 1..].iter().product();
                    let want = ref_narrow(&x, (outer, size, inner), start, len);
                    let ctx = format!("{dev} {dtype} narrow {shape:?} dim {dim} seed {seed}");
                    let (gn, cn) = (g.narrow(dim, start, len).unwrap(), c.narrow(dim, start, len).unwrap());
                    check_all(&values(&gn), &want, |_| 0.0, &ctx);
                    same_as_cpu(&gn, &cn, &ctx);
                    let parts = |t: &Tensor| {
                        vec![t.narrow(dim, 0, 1).unwrap(), t.clone(), t.narrow(dim, start, len).unwrap()]
                    };
                    let gc = Tensor::concat(&parts(&g), dim).unwrap();
                    let cc = Tensor::concat(&parts(&c), dim).unwrap();
                    same_as_cpu(&gc, &cc, &format!("{dev} {dtype} concat {shape:?} dim {dim} seed {seed}"));
                }
            }
        }
    }
}

/// A concat along the outermost dim is one copy launch per 16 inputs (`copyseg`): 20 inputs of
/// 1 + 3i elements (uneven offsets, so every copy width is taken), every dtype.
#[test]
fn concat_of_many_parts_every_dtype() {
    for dev in cuda_devices() {
        for dtype in DType::ALL {
            let seed = fresh_seed();
            let mut r = rng(seed);
            let vals: Vec<Vec<f64>> =
                (0..20).map(|i| random(dtype, 1 + 3 * i, Range::General, &mut r)).collect();
            let on =
                |d: Device| -> Vec<Tensor> { vals.iter().map(|v| tensor(dtype, v, [v.len()], d)).collect() };
            let (g, c) =
                (Tensor::concat(&on(dev), 0).unwrap(), Tensor::concat(&on(Device::Cpu(0)), 0).unwrap());
            let ctx = format!("{dev} {dtype} concat of 20 seed {seed}");
            check_all(&values(&g), &vals.concat(), |_| 0.0, &ctx);
            same_as_cpu(&g, &c, &ctx);
        }
    }
}

#[test]
fn empty_tensors() {
    for dev in cuda_devices() {
        for dtype in DType::ALL {
            let (g, _) = pair(dtype, &[], &[0], dev);
            let y = Tensor::reduce(&[g.clone(), g.clone()], ReduceKind::Sum, None).unwrap();
            let z = y.add(&g).unwrap().cast(DType::F32).unwrap();
            assert!(values(&z).is_empty(), "{dev} {dtype}");
        }
    }
}
