//! Helpers of the collective tests: groups of virtual CPU devices, random shards, and f64
//! references of every `ReduceOp` and of the data-moving collectives (narrow, concat).

use collectives::{Algorithm, DType, Device, DeviceGroup, ReduceKind, ReduceOp, Scale, Tensor};
use rand::Rng;
use rand::rngs::StdRng;

use crate::{Range, check_all, eps, fold_tol, magnitude, random, ref_reduce, tensor, values};

/// Every dtype the library has.
pub const DTYPES: [DType; 7] = DType::ALL;

/// The three algorithm settings a test forces.
pub const ALGORITHMS: [Algorithm; 3] = [Algorithm::Auto, Algorithm::Star, Algorithm::Ring];

/// A group of `n` virtual CPU devices `Cpu(0)..Cpu(n-1)`, leader `Cpu(0)`.
pub fn cpu_group(n: usize) -> DeviceGroup {
    DeviceGroup::new((0..n as u32).map(Device::Cpu).collect()).expect("distinct devices")
}

/// Every `ReduceOp`, the `PreMulSum` scalar drawn for `dtype` (integral on integer dtypes,
/// fractional on floats; never 0 or 1).
pub fn all_ops(dtype: DType, rng: &mut StdRng) -> [ReduceOp; 6] {
    let s = if dtype == DType::U8 {
        // u8 takes factors in 0..=255 only (`Error::ScaleOutOfRange`): 254 and 253 wrap as -2, -3.
        [2.0, 3.0, 254.0, 253.0][rng.random_range(0..4)]
    } else if dtype.is_int() {
        [2.0, 3.0, -2.0, -3.0][rng.random_range(0..4)]
    } else {
        let m: f64 = rng.random_range(0.25..2.0);
        if rng.random::<bool>() { m } else { -m }
    };
    [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg, ReduceOp::PreMulSum(s)]
}

/// The value range a test of `op` draws from (products stay bounded).
pub fn range_for(op: ReduceOp) -> Range {
    match op {
        ReduceOp::Prod => Range::Product,
        _ => Range::General,
    }
}

/// Random shards: `vals[i]` of `shapes[i]` on `devices[i]`.
pub struct Shards {
    /// The exact values of each shard.
    pub vals: Vec<Vec<f64>>,
    /// The shards.
    pub tensors: Vec<Tensor>,
}

impl Shards {
    /// One shard of `shape` per device.
    pub fn even(dtype: DType, shape: &[usize], devices: &[Device], range: Range, rng: &mut StdRng) -> Self {
        let shapes = vec![shape.to_vec(); devices.len()];
        Shards::of_shapes(dtype, &shapes, devices, range, rng)
    }

    /// Shard i of `shapes[i]` on `devices[i]`.
    pub fn of_shapes(
        dtype: DType,
        shapes: &[Vec<usize>],
        devices: &[Device],
        range: Range,
        rng: &mut StdRng,
    ) -> Self {
        let vals: Vec<Vec<f64>> =
            shapes.iter().map(|s| random(dtype, s.iter().product(), range, rng)).collect();
        let tensors = vals
            .iter()
            .zip(shapes)
            .zip(devices)
            .map(|((v, s), &d)| tensor(dtype, v, s.as_slice(), d))
            .collect();
        Shards { vals, tensors }
    }

    /// The values as slices, for the references.
    pub fn slices(&self) -> Vec<&[f64]> {
        self.vals.iter().map(Vec::as_slice).collect()
    }

    /// Asserts every shard still holds its original values (after an error, say).
    pub fn assert_untouched(&self, context: &str) {
        for (i, (t, v)) in self.tensors.iter().zip(&self.vals).enumerate() {
            assert_eq!(&values(t), v, "{context}: shard {i} changed");
        }
    }
}

/// The n-ary reduce (`Tensor::reduce`'s fold and scale) that `op` over `k` shards is.
pub fn kind_and_scale(op: ReduceOp, k: usize) -> (ReduceKind, Option<Scale>) {
    match op {
        ReduceOp::Sum => (ReduceKind::Sum, None),
        ReduceOp::Prod => (ReduceKind::Prod, None),
        ReduceOp::Max => (ReduceKind::Max, None),
        ReduceOp::Min => (ReduceKind::Min, None),
        ReduceOp::Avg => (ReduceKind::Sum, Some(Scale::Div(k as f64))),
        ReduceOp::PreMulSum(s) => (ReduceKind::Sum, Some(Scale::Mul(s))),
    }
}

/// The f64 reference of `op` over `inputs` (one contributing shard each), with the library's
/// integer semantics: wrapping folds, truncating average, integral pre-multiplier.
pub fn ref_op(dtype: DType, op: ReduceOp, inputs: &[&[f64]]) -> Vec<f64> {
    let (kind, scale) = kind_and_scale(op, inputs.len());
    ref_reduce(dtype, kind, scale, inputs)
}

/// The absolute tolerance of each element of `op` over `inputs` folded in up to `k` roundings:
/// 0 for integers and for Max/Min; `fold_tol` (scaled as the op scales) for sums; a relative
/// bound on the product's magnitude for Prod.
pub fn op_tol(dtype: DType, op: ReduceOp, inputs: &[&[f64]], want: &[f64]) -> Vec<f64> {
    let k = inputs.len();
    if dtype.is_int() || matches!(op, ReduceOp::Max | ReduceOp::Min) {
        return vec![0.0; want.len()];
    }
    if op == ReduceOp::Prod {
        let acc = if dtype == DType::F64 { f64::EPSILON } else { f32::EPSILON as f64 };
        let rel = (k as f64 + 1.0) * eps(dtype).max(acc) * 1.01;
        return want.iter().map(|w| rel * w.abs()).collect();
    }
    let factor = match op {
        ReduceOp::Avg => 1.0 / k as f64,
        ReduceOp::PreMulSum(s) => s.abs(),
        _ => 1.0,
    };
    magnitude(inputs).iter().map(|&m| fold_tol(dtype, k, m) * factor * 1.01).collect()
}

/// Checks that `got` lives on `device` and holds `op` over `inputs` in every element.
pub fn check_reduced(got: &Tensor, device: Device, op: ReduceOp, inputs: &[&[f64]], context: &str) {
    assert_eq!(got.device(), device, "{context}: result device");
    let want = ref_op(got.dtype(), op, inputs);
    let tol = op_tol(got.dtype(), op, inputs, &want);
    check_all(&values(got), &want, |i| tol[i], context);
}

/// Checks that `got` has `shape`, lives on `device` and holds exactly `want`.
pub fn check_exact(got: &Tensor, device: Device, shape: &[usize], want: &[f64], context: &str) {
    assert_eq!(got.device(), device, "{context}: result device");
    assert_eq!(got.shape().dims(), shape, "{context}: result shape");
    check_all(&values(got), want, |_| 0.0, context);
}

/// The host reference of `narrow(dim, start, len)` of `vals` shaped `shape` ([`crate::ref_slice`]).
pub fn ref_narrow(vals: &[f64], shape: &[usize], dim: usize, start: usize, len: usize) -> Vec<f64> {
    crate::ref_slice(vals, shape, dim, start, len)
}

/// The host reference of joining `parts` (values and shapes) along `dim`.
pub use crate::ref_concat;

/// `shape` with dim `dim` set to `len`.
pub fn with_dim(shape: &[usize], dim: usize, len: usize) -> Vec<usize> {
    let mut s = shape.to_vec();
    s[dim] = len;
    s
}
