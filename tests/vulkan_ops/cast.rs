//! Casts between every pair of dtypes on Vulkan: random data against the f64 reference, and edge
//! values (saturation, NaN, infinities, rounding ties, integers past 2^24 and 2^53) against an
//! exact host reference (`Exact`: floats as f64, integers as i128, so every i64 edge is held),
//! every element.

use collectives::{DType, Element, Tensor};
use collectives_tests::{Range, random, ref_cast, rng, round_nearest_even, round_to, with_type};

use super::{VK, check_op, dtypes, have_vulkan, seed, sizes};

#[test]
fn cast_every_pair_random() {
    if !have_vulkan() {
        return;
    }
    let seed = seed("cast");
    let all = dtypes();
    for &from in &all {
        for &n in sizes() {
            let mut r = rng(seed ^ n as u64 ^ (from as u64) << 40);
            let mut x = random(from, n, Range::General, &mut r);
            if from.is_float() {
                // Spread floats over [-300, 300] so integer targets truncate and saturate.
                x.iter_mut().for_each(|v| *v = round_to(from, *v * 300.0));
                if n >= 7 {
                    for (v, e) in x.iter_mut().zip([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e10, -0.0]) {
                        *v = round_to(from, e);
                    }
                }
            }
            let vx = collectives_tests::tensor(from, &x, [n], VK);
            for &to in &all {
                let ctx = format!("cast {from} -> {to} n={n}");
                let got = vx.cast(to).unwrap();
                let want: Vec<f64> = x.iter().map(|&v| ref_cast(from, to, v)).collect();
                check_op(&got, None, &want, |_| 0.0, &ctx);
            }
        }
    }
}

/// f32 values at the edges of every conversion.
fn f32_edges() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        0.999,
        -0.999,
        1.5,
        2.5,
        -2.5,
        254.5,
        255.0,
        255.9,
        256.0,
        300.0,
        -1.0,
        -300.0,
        2147483520.0,
        2147483648.0,
        -2147483648.0,
        -2147483904.0,
        9.223372e18,
        -9.223372e18,
        1e20,
        -1e20,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        65504.0,
        65519.99,
        65520.0,
        -65520.0,
        1e-30,
        5.9604645e-8,
        2.9802322e-8,
        3.0e-5,
        6.1e-5,
        1.0000001,
    ];
    // bf16 rounding: ties to even, above-tie, and ties whose low 3 bits `half` drops through f64.
    for b in [0x3f80_8000u32, 0x3f81_8000, 0x3f80_8001, 0x3f80_8004, 0x3f80_7fff, 0x3f80_fff8, 0xbf81_8004] {
        v.push(f32::from_bits(b));
    }
    v
}

/// f64 values at the edges of every conversion, including the double roundings of the CPU path.
fn f64_edges() -> Vec<f64> {
    let p = |e: i32| 2f64.powi(e);
    let mut v: Vec<f64> = f32_edges().into_iter().map(f64::from).collect();
    v.extend([
        1.0 + p(-24),
        1.0 + p(-24) + p(-50),
        1.0 - p(-25),
        1.0 + p(-8) + p(-40),
        1.0 + p(-8) + p(-30),
        1.0 + p(-11) + p(-40),
        1.0 + p(-11) + p(-20),
        1e300,
        -1e300,
        2147483647.5,
        -2147483648.5,
        -2147483649.0,
        p(63),
        -p(63),
        p(63) - 1024.0,
        9.3e18,
        255.5,
        -0.3,
        4.9e-324,
        123456.789,
        -0.1,
    ]);
    v
}

fn i32_edges() -> Vec<i32> {
    let mut v =
        vec![0, 1, -1, 2, 127, 128, 255, 256, -256, 300, 65504, 65519, 65520, -65520, i32::MAX, i32::MIN];
    v.extend([(1 << 24) + 1, (1 << 24) + 3, -((1 << 24) + 1), (1 << 25) + 3, 123_456_789, -987_654_321]);
    // bf16 through f64: 24 significant bits of which `half` keeps 21, turning these into ties.
    v.extend([(1 << 23) + (1 << 15) + 1, (1 << 23) + (3 << 15) + 1, -((1 << 23) + (1 << 15) + 1)]);
    v
}

fn i64_edges() -> Vec<i64> {
    let mut v: Vec<i64> = i32_edges().into_iter().map(i64::from).collect();
    v.extend([
        i64::MAX,
        i64::MIN,
        i64::MAX - 1,
        i64::MIN + 1,
        1 << 53,
        (1 << 53) + 1,
        (1 << 53) + 3,
        -((1 << 53) + 1),
    ]);
    v.extend([
        (1 << 62) + (1 << 38) + 1,
        (1 << 62) + (1 << 38),
        (1 << 40) + (1 << 16) + 1,
        (1 << 40) + (1 << 32) + (1 << 19),
    ]);
    v.extend([
        i64::from(i32::MAX) + 1,
        i64::from(i32::MIN) - 1,
        (1 << 32) + 255,
        -(1 << 32) - 1,
        4_294_967_296 * 3 + 7,
    ]);
    v
}

/// A value held exactly: a float (any f32/f16/bf16/f64 value is an f64) or an integer.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Exact {
    /// A float value (NaN equal to NaN when compared by `same`).
    F(f64),
    /// An integer value.
    I(i128),
}

impl Exact {
    /// Equal values, or both NaN (signed zeros count).
    fn same(self, other: Exact) -> bool {
        match (self, other) {
            (Exact::F(a), Exact::F(b)) => (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits(),
            (a, b) => a == b,
        }
    }
}

/// The library's cast of `x` to `to`: to a float, rounded to nearest even through f64; floats
/// to integers truncate toward zero and saturate, NaN to 0; integers wrap.
fn ref_exact(x: Exact, to: DType) -> Exact {
    let (min, max): (i128, i128) = match to {
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        DType::I64 => (i64::MIN.into(), i64::MAX.into()),
        _ => (0, 255),
    };
    match (x, to.is_float()) {
        (Exact::F(v), true) => Exact::F(round_to(to, v)),
        (Exact::F(v), false) if v.is_nan() => Exact::I(0),
        (Exact::F(v), false) => Exact::I((v.trunc() as i128).clamp(min, max)),
        (Exact::I(v), false) => Exact::I(match to {
            DType::I32 => i128::from(v as i32),
            DType::I64 => i128::from(v as i64),
            _ => i128::from(v as u8),
        }),
        // Through f64 (Rust's `as` rounds to nearest even), as the library defines a cast
        // involving a float: an i64 past 2^53 rounds twice, to f64 and then to the target.
        (Exact::I(v), true) => Exact::F(round_to(to, v as f64)),
    }
}

/// The edge values of `from`, exactly.
fn edges(from: DType) -> Vec<Exact> {
    let ints = |v: Vec<i128>| v.into_iter().map(Exact::I).collect();
    let floats = |v: Vec<f64>| v.into_iter().map(Exact::F).collect();
    match from {
        DType::F32 => floats(f32_edges().into_iter().map(f64::from).collect()),
        DType::F64 => floats(f64_edges()),
        DType::F16 => {
            floats(f32_edges().into_iter().map(|v| round_nearest_even(v.into(), 11, -14, 15)).collect())
        }
        DType::BF16 => {
            floats(f32_edges().into_iter().map(|v| round_nearest_even(v.into(), 8, -126, 127)).collect())
        }
        DType::I32 => ints(i32_edges().into_iter().map(i128::from).collect()),
        DType::I64 => ints(i64_edges().into_iter().map(i128::from).collect()),
        _ => ints((0..=255).collect()),
    }
}

/// The integer of an `Exact::I` (0 for a float: not reached, integer dtypes hold integers).
fn int(v: Exact) -> i128 {
    if let Exact::I(i) = v { i } else { 0 }
}

/// The float of an `Exact::F` (0 for an integer: not reached, float dtypes hold floats).
fn float(v: Exact) -> f64 {
    if let Exact::F(f) = v { f } else { 0.0 }
}

/// `vals` of `dtype` as a tensor on `VK`, exactly.
fn upload(dtype: DType, vals: &[Exact]) -> Tensor {
    let up = |data| Tensor::from_vec(data, [vals.len()], VK).unwrap();
    match dtype {
        DType::I64 => {
            Tensor::from_vec(vals.iter().map(|&v| int(v) as i64).collect(), [vals.len()], VK).unwrap()
        }
        DType::I32 => {
            Tensor::from_vec(vals.iter().map(|&v| int(v) as i32).collect(), [vals.len()], VK).unwrap()
        }
        DType::U8 => up(vals.iter().map(|&v| int(v) as u8).collect()),
        _ => with_type!(dtype, T => {
            let data: Vec<T> = vals.iter().map(|&v| T::from_f64(float(v))).collect();
            Tensor::from_vec(data, [vals.len()], VK).unwrap()
        }),
    }
}

/// The elements of `t`, exactly.
fn download(t: &Tensor) -> Vec<Exact> {
    let ints = |v: Vec<i128>| v.into_iter().map(Exact::I).collect();
    match t.dtype() {
        DType::I64 => ints(t.to_vec::<i64>().unwrap().into_iter().map(i128::from).collect()),
        DType::I32 => ints(t.to_vec::<i32>().unwrap().into_iter().map(i128::from).collect()),
        DType::U8 => ints(t.to_vec::<u8>().unwrap().into_iter().map(i128::from).collect()),
        d => with_type!(d, T => t.to_vec::<T>().unwrap().into_iter().map(|v| Exact::F(v.to_f64())).collect()),
    }
}

#[test]
fn cast_edge_values_are_exact() {
    if !have_vulkan() {
        return;
    }
    let all = dtypes();
    for &from in &all {
        let src = edges(from);
        let vx = upload(from, &src);
        for &to in &all {
            let got = download(&vx.cast(to).unwrap());
            let bad: Vec<usize> = (0..src.len()).filter(|&i| !got[i].same(ref_exact(src[i], to))).collect();
            let show: Vec<String> = bad
                .iter()
                .take(8)
                .map(|&i| format!("{:?} -> {:?}, want {:?}", src[i], got[i], ref_exact(src[i], to)))
                .collect();
            assert!(
                bad.is_empty(),
                "cast edges {from} -> {to}: {} of {} wrong: {}",
                bad.len(),
                src.len(),
                show.join("; ")
            );
        }
    }
}
