//! Shared helpers of the integration tests: random data that is exact in its dtype, f64 host
//! references with the library's integer semantics, and a comparison that checks every element.
//!
//! Values are carried as `f64` so tests are written once for every dtype: [`random`] draws values
//! already rounded to the dtype (so the reference sees exactly what the device sees), [`tensor`]
//! builds a tensor of them, [`values`] reads any tensor back as `f64`.

use collectives::{BinaryOp, DType, Device, Element, ReduceKind, Scale, Shape, Tensor};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Runs `$body` with `$T` bound to the Rust type of `$dtype`.
#[macro_export]
macro_rules! with_type {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            collectives::DType::F32 => {
                type $T = f32;
                $body
            }
            collectives::DType::F64 => {
                type $T = f64;
                $body
            }
            collectives::DType::F16 => {
                type $T = half::f16;
                $body
            }
            collectives::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            collectives::DType::I32 => {
                type $T = i32;
                $body
            }
            collectives::DType::I64 => {
                type $T = i64;
                $body
            }
            collectives::DType::U8 => {
                type $T = u8;
                $body
            }
        }
    };
}

/// A seeded generator; the seed is printed on failure by the callers' messages.
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// A fresh seed (tests print it so a failure can be replayed).
pub fn fresh_seed() -> u64 {
    rand::rng().random()
}

/// The kinds of value range a test wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Range {
    /// Signed values of moderate size (floats in [-1, 1), integers in [-1000, 1000], u8 any).
    General,
    /// Values safe for repeated products: floats of magnitude in [0.5, 1.5], integers in [-3, 3]
    /// (u8 in [0, 3]).
    Product,
    /// Values safe as divisors: floats of magnitude in [0.5, 2], integers non-zero.
    Divisor,
}

/// `n` random values of `dtype` (already rounded to it), as f64.
pub fn random(dtype: DType, n: usize, range: Range, rng: &mut StdRng) -> Vec<f64> {
    (0..n).map(|_| round_to(dtype, draw(dtype, range, rng))).collect()
}

fn draw(dtype: DType, range: Range, rng: &mut StdRng) -> f64 {
    let sign = if rng.random::<bool>() { 1.0 } else { -1.0 };
    match (dtype.is_float(), range) {
        (true, Range::General) => rng.random_range(-1.0..1.0),
        (true, Range::Product) => sign * rng.random_range(0.5..1.5),
        (true, Range::Divisor) => sign * rng.random_range(0.5..2.0),
        (false, Range::General) if dtype == DType::U8 => rng.random_range(0..=255) as f64,
        (false, Range::General) => rng.random_range(-1000..=1000) as f64,
        (false, Range::Product) if dtype == DType::U8 => rng.random_range(0..=3) as f64,
        (false, Range::Product) => rng.random_range(-3..=3) as f64,
        (false, Range::Divisor) if dtype == DType::U8 => rng.random_range(1..=20) as f64,
        (false, Range::Divisor) => sign * rng.random_range(1..=20) as f64,
    }
}

/// `v` as the nearest value of `dtype`, ties to even (integers wrap as the library's integer ops
/// do). f16 and bf16 are rounded by [`round_nearest_even`], not by the `half` crate, whose
/// `from_f64` ignores the low 32 bits of the f64 and so can round a value just past a tie the
/// wrong way.
pub fn round_to(dtype: DType, v: f64) -> f64 {
    match dtype {
        DType::F32 => v as f32 as f64,
        DType::F64 => v,
        DType::F16 => round_nearest_even(v, 11, -14, 15),
        DType::BF16 => round_nearest_even(v, 8, -126, 127),
        DType::I32 => wrap_int(dtype, v as i128),
        DType::I64 => wrap_int(dtype, v as i128),
        DType::U8 => wrap_int(dtype, v as i128),
    }
}

/// `v` rounded to the nearest value, ties to even, of a binary float format with `p` significant
/// bits and normal exponents `emin..=emax` (with subnormals below, and infinity past the largest
/// finite value). Plain f64 arithmetic: scaling by a power of two is exact, and so is
/// `round_ties_even` of the scaled value.
pub fn round_nearest_even(v: f64, p: i32, emin: i32, emax: i32) -> f64 {
    if !v.is_finite() || v == 0.0 {
        return v;
    }
    let e = (((v.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(emin);
    let ulp = 2f64.powi(e - p + 1);
    let r = (v / ulp).round_ties_even() * ulp;
    let max = (2.0 - 2f64.powi(1 - p)) * 2f64.powi(emax);
    if r.abs() > max { f64::INFINITY.copysign(v) } else { r }
}

/// An exact integer wrapped to `dtype`'s range, as f64.
pub fn wrap_int(dtype: DType, v: i128) -> f64 {
    match dtype {
        DType::I32 => v as i32 as f64,
        DType::I64 => v as i64 as f64,
        DType::U8 => v as u8 as f64,
        _ => v as f64,
    }
}

/// A tensor of `dtype` holding `vals` (each exact in the dtype) on `device`.
pub fn tensor(dtype: DType, vals: &[f64], shape: impl Into<Shape>, device: Device) -> Tensor {
    with_type!(dtype, T => {
        let data: Vec<T> = vals.iter().map(|&v| T::from_f64(v)).collect();
        Tensor::from_vec(data, shape, device).expect("valid tensor")
    })
}

/// A tensor's elements as f64 (realizing it).
pub fn values(t: &Tensor) -> Vec<f64> {
    with_type!(t.dtype(), T => t.to_vec::<T>().expect("realize").into_iter().map(Element::to_f64).collect())
}

/// A tensor's elements as f64, or the error realizing it gave.
pub fn try_values(t: &Tensor) -> collectives::Result<Vec<f64>> {
    with_type!(t.dtype(), T => Ok(t.to_vec::<T>()?.into_iter().map(Element::to_f64).collect()))
}

/// Unit roundoff of a float dtype's storage (0 for integers: they must be exact).
pub fn eps(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => f32::EPSILON as f64,
        DType::F64 => f64::EPSILON,
        DType::F16 => 2f64.powi(-10),
        DType::BF16 => 2f64.powi(-7),
        _ => 0.0,
    }
}

fn as_int(v: f64) -> i128 {
    v as i128
}

/// `a op b` with the library's semantics in `dtype` (integers wrap; integer x/0 is 0; NaN
/// propagates through max and min).
pub fn ref_binary(dtype: DType, op: BinaryOp, a: f64, b: f64) -> f64 {
    if dtype.is_float() {
        return match op {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Max if a.is_nan() || b.is_nan() => f64::NAN,
            BinaryOp::Min if a.is_nan() || b.is_nan() => f64::NAN,
            BinaryOp::Max => a.max(b),
            BinaryOp::Min => a.min(b),
        };
    }
    let (x, y) = (as_int(a), as_int(b));
    let r = match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div if y == 0 => 0,
        BinaryOp::Div => x / y,
        BinaryOp::Max => x.max(y),
        BinaryOp::Min => x.min(y),
    };
    wrap_int(dtype, r)
}

/// `scale(fold(inputs))` elementwise, in f64 (integers exactly, then wrapped).
pub fn ref_reduce(dtype: DType, kind: ReduceKind, scale: Option<Scale>, inputs: &[&[f64]]) -> Vec<f64> {
    let n = inputs[0].len();
    (0..n)
        .map(|i| {
            let mut acc = inputs[0][i];
            for x in &inputs[1..] {
                acc = fold(dtype, kind, acc, x[i]);
            }
            match scale {
                Some(s) => ref_scale(dtype, s, acc),
                None => acc,
            }
        })
        .collect()
}

fn fold(dtype: DType, kind: ReduceKind, a: f64, b: f64) -> f64 {
    if dtype.is_float() {
        return ref_binary(dtype, kind.binary(), a, b);
    }
    // Integers: fold exactly, wrapping at every step as the device does.
    ref_binary(dtype, kind.binary(), a, b)
}

/// `s` applied to `x` in `dtype` (integer division truncates toward zero).
pub fn ref_scale(dtype: DType, s: Scale, x: f64) -> f64 {
    if dtype.is_float() {
        return s.apply_f64(x);
    }
    let f = s.factor() as i128;
    match s {
        Scale::Mul(_) => wrap_int(dtype, as_int(x) * f),
        Scale::Div(_) => wrap_int(dtype, as_int(x) / f),
    }
}

/// `x` cast to `to` with the library's semantics (float→int truncates and saturates, NaN → 0;
/// int→int wraps).
pub fn ref_cast(from: DType, to: DType, x: f64) -> f64 {
    if from.is_int() && to.is_int() {
        return wrap_int(to, x as i128);
    }
    if to.is_float() {
        return round_to(to, x);
    }
    with_type!(to, T => T::from_f64(x).to_f64())
}

/// Checks every element of `got` against `want`, allowing `tol(i)` absolute error at element `i`.
/// NaN must match NaN. Panics with the first few differences and `context`.
pub fn check_all(got: &[f64], want: &[f64], tol: impl Fn(usize) -> f64, context: &str) {
    assert_eq!(got.len(), want.len(), "{context}: length");
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| {
            let (g, w) = (got[i], want[i]);
            !((g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= tol(i))
        })
        .collect();
    if !bad.is_empty() {
        let show: Vec<String> = bad
            .iter()
            .take(5)
            .map(|&i| format!("[{i}] got {} want {} (tol {:e})", got[i], want[i], tol(i)))
            .collect();
        panic!("{context}: {} of {} elements wrong: {}", bad.len(), got.len(), show.join("; "));
    }
}

/// Tolerance for a value computed by folding `k` inputs whose magnitudes sum to `mag`, with
/// roundings at up to `k` steps in `dtype` (plus f32 accumulation for f16/bf16). Integers: 0.
pub fn fold_tol(dtype: DType, k: usize, mag: f64) -> f64 {
    if dtype.is_int() {
        return 0.0;
    }
    let acc = if dtype == DType::F64 { f64::EPSILON } else { f32::EPSILON as f64 };
    (eps(dtype) + k as f64 * acc.max(eps(dtype))) * mag.max(f64::MIN_POSITIVE) * 1.01
        + (k + 1) as f64 * tiny(dtype)
}

/// The largest absolute error of one rounding into `dtype`'s subnormal range (half its smallest
/// subnormal), where a relative bound does not hold; 0 for integers.
pub fn tiny(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => 2f64.powi(-150),
        DType::F64 => f64::MIN_POSITIVE * f64::EPSILON,
        DType::F16 => 2f64.powi(-25),
        DType::BF16 => 2f64.powi(-134),
        _ => 0.0,
    }
}

/// The type a dtype computes in: f32 for f32, f16 and bf16; the dtype itself otherwise.
pub fn compute_type(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        other => other,
    }
}

/// `v`, the exact (or f64) result of one op on values of `dtype`, rounded as the library rounds
/// it: to the compute type, then to the dtype. For +, -, *, / of values exact in `dtype` this
/// is the library's result bit for bit.
pub fn round_op(dtype: DType, v: f64) -> f64 {
    round_to(dtype, round_to(compute_type(dtype), v))
}

/// Elementwise sum of magnitudes of `inputs` (the scale of a sum's rounding error).
pub fn magnitude(inputs: &[&[f64]]) -> Vec<f64> {
    (0..inputs[0].len()).map(|i| inputs.iter().map(|x| x[i].abs()).sum()).collect()
}

/// Whether a Vulkan device must be present (CI sets `REQUIRE_VULKAN=1`).
pub fn vulkan_required() -> bool {
    std::env::var("REQUIRE_VULKAN").is_ok_and(|v| v == "1")
}

/// Whether a CUDA device must be present (the GPU machine sets `REQUIRE_CUDA=1`).
pub fn cuda_required() -> bool {
    std::env::var("REQUIRE_CUDA").is_ok_and(|v| v == "1")
}

/// Whether `device` works here (a byte round trip); panics when `required` and it does not, else
/// prints why the tests with it are left out.
pub fn device_works(device: Device, required: bool) -> bool {
    match Tensor::from_vec(vec![1u8], [1], device).and_then(|t| t.to_vec::<u8>()) {
        Ok(_) => true,
        Err(e) if required => panic!("{device} is required (REQUIRE_*=1) but does not work: {e}"),
        Err(e) => {
            println!("the tests with {device} are left out: {e}");
            false
        }
    }
}

/// Whether CUDA device `cu` and Vulkan device `vk` are both present and share one GPU through
/// the device bridge (decided by validating the pair): where a Vulkan result computed from CUDA
/// inputs is computed by the CUDA device and copied over. `false` on a machine lacking either.
pub fn device_bridged(cu: Device, vk: Device) -> bool {
    let present = collectives::available_devices();
    if !present.contains(&cu) || !present.contains(&vk) {
        return false;
    }
    let pair = collectives::DeviceGroup::new(vec![cu, vk]).expect("two distinct devices");
    if pair.validate().is_err() {
        return false;
    }
    // A shard at `HOST_STAGED_BELOW_BYTES`: a smaller broadcast of the pair is one host call, no
    // hop.
    let len = collectives::collective::HOST_STAGED_BELOW_BYTES / 4;
    let plan = pair.plan(collectives::CollectiveKind::Broadcast, [len], DType::F32).expect("a plan");
    plan.bridges.iter().any(|b| b.bridge.as_deref().is_some_and(|x| x.starts_with("device")))
}

/// Helpers of the collective tests (groups, shards, references of every `ReduceOp`).
pub mod collective;

/// The random groups and cases of the property tests over groups.
pub mod props;

/// The small collectives of groups with host members staged through one, shared by the Vulkan
/// and CUDA tests.
pub mod staged;

/// The elements `start..start + len` along `dim` of row-major `vals` of shape `dims`.
pub fn ref_slice<T: Copy>(vals: &[T], dims: &[usize], dim: usize, start: usize, len: usize) -> Vec<T> {
    let outer: usize = dims[..dim].iter().product();
    let inner: usize = dims[dim + 1..].iter().product();
    let mid = dims[dim];
    let mut out = Vec::with_capacity(outer * len * inner);
    for o in 0..outer {
        let from = (o * mid + start) * inner;
        out.extend_from_slice(&vals[from..from + len * inner]);
    }
    out
}

/// Row-major `parts` (each with its dims) joined along `dim`.
pub fn ref_concat<T: Copy>(parts: &[(&[T], &[usize])], dim: usize) -> Vec<T> {
    let dims0 = parts[0].1;
    let outer: usize = dims0[..dim].iter().product();
    let inner: usize = dims0[dim + 1..].iter().product();
    let mut out = Vec::new();
    for o in 0..outer {
        for (vals, dims) in parts {
            let n = dims[dim] * inner;
            out.extend_from_slice(&vals[o * n..(o + 1) * n]);
        }
    }
    out
}
