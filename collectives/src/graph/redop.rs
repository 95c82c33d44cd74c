//! `ReduceOp`: how a collective combines the shards, in the graph's vocabulary beside [`ReduceKind`] and
//! [`Scale`] (which it lowers to), so that backends (NCCL's operators) take it directly.

use std::fmt;

use super::{ReduceKind, Scale};
use crate::dtype::DType;
use crate::error::{Error, Result};

/// How a reducing collective combines shards, as NCCL's `ncclRedOp_t`.
///
/// Low-precision sums (f16, bf16) accumulate in f32 inside each fold; integer results are exact
/// (wrapping on overflow); NaN propagates through `Max` and `Min`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReduceOp {
    /// Elementwise sum.
    Sum,
    /// Elementwise product.
    Prod,
    /// Elementwise maximum.
    Max,
    /// Elementwise minimum.
    Min,
    /// Sum divided by the number of shards (integers truncate toward zero, as NCCL's `ncclAvg`).
    Avg,
    /// `scalar * x_i` summed over shards (`ncclRedOpCreatePreMulSum`). The scalar multiplies the
    /// f32/f64 accumulator once, which equals pre-multiplying every input up to rounding (the
    /// ring pre-multiplies f16 contributions instead, so its f16 partials cannot overflow where
    /// the result would not). On integer dtypes the scalar must be an integer.
    PreMulSum(f64),
}

impl ReduceOp {
    /// The fold and the scale applied after it, for `shards` contributing shards.
    pub(crate) fn lower(self, shards: usize) -> (ReduceKind, Option<Scale>) {
        match self {
            ReduceOp::Sum => (ReduceKind::Sum, None),
            ReduceOp::Prod => (ReduceKind::Prod, None),
            ReduceOp::Max => (ReduceKind::Max, None),
            ReduceOp::Min => (ReduceKind::Min, None),
            ReduceOp::Avg => (ReduceKind::Sum, Some(Scale::Div(shards as f64))),
            ReduceOp::PreMulSum(s) => (ReduceKind::Sum, Some(Scale::Mul(s))),
        }
    }

    /// Checks that `dtype` can take this op.
    pub(crate) fn check(self, op: &'static str, dtype: DType) -> Result<()> {
        if let ReduceOp::PreMulSum(s) = self {
            let integral = s.is_finite() && s.fract() == 0.0;
            if dtype.is_int() && !integral {
                return Err(Error::BadReduceOp {
                    op,
                    redop: self.to_string(),
                    dtype,
                    reason: "an integer dtype takes only an integer scalar; cast to a float dtype first",
                });
            }
            if !s.is_finite() {
                return Err(Error::BadReduceOp {
                    op,
                    redop: self.to_string(),
                    dtype,
                    reason: "the scalar must be finite",
                });
            }
            Scale::Mul(s).check(op, dtype)?;
        }
        Ok(())
    }

    /// The name nccl-tests prints (`sum`, `prod`, `max`, `min`, `avg`, `premulsum`).
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Avg => "avg",
            ReduceOp::PreMulSum(_) => "premulsum",
        }
    }
}

impl fmt::Display for ReduceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReduceOp::PreMulSum(s) => write!(f, "premulsum({s})"),
            other => f.write_str(other.name()),
        }
    }
}

impl std::str::FromStr for ReduceOp {
    type Err = Error;

    /// Parses `sum`, `prod`, `max`, `min`, `avg`, or `premulsum:<scalar>` (`premulsum` alone
    /// means a scalar of 2). `premulsum(<scalar>)`, as `Display` writes it, parses too.
    fn from_str(s: &str) -> Result<Self> {
        let mut lower = s.trim().to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("premulsum(").and_then(|r| r.strip_suffix(')')) {
            lower = format!("premulsum:{v}");
        }
        let bad = || Error::InvalidArgument {
            what: "reduce op",
            msg: format!("{s:?} is not one of sum, prod, max, min, avg, premulsum[:scalar]"),
        };
        Ok(match lower.split_once(':') {
            Some(("premulsum", v)) => ReduceOp::PreMulSum(v.parse().map_err(|_| bad())?),
            Some(_) => return Err(bad()),
            None => match lower.as_str() {
                "sum" => ReduceOp::Sum,
                "prod" => ReduceOp::Prod,
                "max" => ReduceOp::Max,
                "min" => ReduceOp::Min,
                "avg" => ReduceOp::Avg,
                "premulsum" => ReduceOp::PreMulSum(2.0),
                _ => return Err(bad()),
            },
        })
    }
}
