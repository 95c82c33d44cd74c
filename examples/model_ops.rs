//! Tensor helpers the model examples build from the lazy `Tensor` ops (the API has no matmul and
//! no broadcasting), and their f64 host references.

use collectives::{ReduceKind, Result, Tensor};

/// `t` of shape `[1, m]` repeated to `[n, m]`.
pub fn tile_rows(t: &Tensor, n: usize) -> Result<Tensor> {
    Tensor::concat(&vec![t.clone(); n], 0)
}

/// `t` of shape `[n, 1]` repeated to `[n, m]`.
pub fn tile_cols(t: &Tensor, m: usize) -> Result<Tensor> {
    Tensor::concat(&vec![t.clone(); m], 1)
}

/// The sum of a rank-2 `t` along `dim`, keeping it as a dimension of 1.
pub fn sum_dim(t: &Tensor, dim: usize) -> Result<Tensor> {
    let parts = (0..t.shape().dim(dim)).map(|i| t.narrow(dim, i, 1)).collect::<Result<Vec<_>>>()?;
    Tensor::reduce(&parts, ReduceKind::Sum, None)
}

/// `a [n, k] @ b [k, m]`: the sum over p of column p of `a` times row p of `b`, both tiled.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (n, k, m) = (a.shape().dim(0), a.shape().dim(1), b.shape().dim(1));
    let terms = (0..k)
        .map(|p| tile_cols(&a.narrow(1, p, 1)?, m)?.mul(&tile_rows(&b.narrow(0, p, 1)?, n)?))
        .collect::<Result<Vec<_>>>()?;
    Tensor::reduce(&terms, ReduceKind::Sum, None)
}

/// `a [n, k] @ b [k, m]` on the host, in f64, row-major.
pub fn matmul_f64(a: &[f64], b: &[f64], n: usize, k: usize, m: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * m];
    for i in 0..n {
        for p in 0..k {
            for j in 0..m {
                out[i * m + j] += a[i * k + p] * b[p * m + j];
            }
        }
    }
    out
}

/// The largest `|got - want| / (1 + |want|)`; infinite when the lengths differ.
pub fn max_rel_err(got: &[f32], want: &[f64]) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    got.iter().zip(want).map(|(&g, &w)| (g as f64 - w).abs() / (1.0 + w.abs())).fold(0.0, f64::max)
}
