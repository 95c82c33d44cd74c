//! Helpers shared by the examples: random data exact in its dtype, and the f64 reference of a
//! reduction, so every example checks what it computes.

use collectives::{DType, Element, ReduceOp};
use rand::Rng;

/// `n` random values of `T`, drawn so that folding up to 16 of them with any [`ReduceOp`] stays
/// exact for integers (no wrap-around) and well scaled for floats.
pub fn random_data<T: Element>(n: usize, prod: bool, rng: &mut impl Rng) -> Vec<T> {
    let d = T::DTYPE;
    (0..n)
        .map(|_| {
            let v = match (d.is_float(), prod, d) {
                (true, false, _) => rng.random_range(-1.0..1.0),
                (true, true, _) => rng.random_range(0.5..1.5) * if rng.random::<bool>() { 1.0 } else { -1.0 },
                (false, true, DType::U8) => rng.random_range(0..=1) as f64,
                (false, true, _) => rng.random_range(-2..=2) as f64,
                (false, false, DType::U8) => rng.random_range(0..=15) as f64,
                (false, false, _) => rng.random_range(-1000..=1000) as f64,
            };
            T::from_f64(v)
        })
        .collect()
}

/// The f64 reference of folding `xs` with `op` (integer average truncates toward zero).
pub fn fold(dtype: DType, op: ReduceOp, xs: impl Iterator<Item = f64> + Clone) -> f64 {
    let n = xs.clone().count() as f64;
    let sum = || xs.clone().sum::<f64>();
    match op {
        ReduceOp::Sum => sum(),
        ReduceOp::Prod => xs.clone().product(),
        ReduceOp::Max => xs.clone().fold(f64::NEG_INFINITY, f64::max),
        ReduceOp::Min => xs.clone().fold(f64::INFINITY, f64::min),
        ReduceOp::Avg if dtype.is_int() => (sum() / n).trunc(),
        ReduceOp::Avg => sum() / n,
        ReduceOp::PreMulSum(s) => s * sum(),
    }
}

/// Allowed absolute error of a fold of values whose magnitudes sum to `mag` (0 for integers).
pub fn tolerance(dtype: DType, n: usize, mag: f64) -> f64 {
    let eps = match dtype {
        DType::F64 => f64::EPSILON,
        DType::F32 => f32::EPSILON as f64,
        DType::F16 => 2f64.powi(-10),
        DType::BF16 => 2f64.powi(-7),
        _ => return 0.0,
    };
    eps * (n as f64 + 2.0) * mag.max(1e-30)
}
