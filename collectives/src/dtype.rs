//! Element types: the runtime tag [`DType`] and the Rust types behind it ([`Element`]).
//!
//! The graph carries a `DType` per tensor so it can be built and checked without knowing `T`;
//! `Element` links each Rust type (f16/bf16 from the `half` crate) to its tag, for `from_vec` and
//! `to_vec`. Kernels widen f16 and bf16 to f32 to compute, so low-precision sums accumulate in f32.
//!
//! ```
//! use collectives::{DType, Element};
//! use half::bf16;
//! assert_eq!(<bf16 as Element>::DTYPE, DType::BF16);
//! assert_eq!(DType::BF16.size(), 2);
//! assert_eq!("f16".parse::<DType>()?, DType::F16);
//! # Ok::<(), collectives::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;

use half::{bf16, f16};

use crate::error::{Error, Result};

/// The element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// 32-bit IEEE float.
    F32,
    /// 64-bit IEEE float.
    F64,
    /// 16-bit IEEE float (`half::f16`).
    F16,
    /// bfloat16 (`half::bf16`).
    BF16,
    /// 32-bit signed integer.
    I32,
    /// 64-bit signed integer.
    I64,
    /// 8-bit unsigned integer.
    U8,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 7] =
        [DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64, DType::U8];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::U8 => 1,
        }
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }

    /// Whether this is an integer type.
    pub fn is_int(self) -> bool {
        !self.is_float()
    }

    /// The short name (`f32`, `bf16`, ...), as nccl-tests and PyTorch print it.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
        }
    }

    /// The Rust type that holds this dtype, as written in `to_vec::<T>()`.
    pub fn rust_name(self) -> &'static str {
        match self {
            DType::F16 => "half::f16",
            DType::BF16 => "half::bf16",
            other => other.name(),
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = Error;

    /// Parses the short names (`f32`, `bf16`, ...) and the common long ones (`float`, `half`,
    /// `bfloat16`, `int32`, `uint8`, ...).
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "f32" | "float" | "float32" => DType::F32,
            "f64" | "double" | "float64" => DType::F64,
            "f16" | "half" | "float16" => DType::F16,
            "bf16" | "bfloat16" => DType::BF16,
            "i32" | "int" | "int32" => DType::I32,
            "i64" | "int64" | "long" => DType::I64,
            "u8" | "uint8" | "byte" => DType::U8,
            _ => return Err(Error::UnknownDType(s.to_string())),
        })
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that can be a tensor element. Implemented for `f32`, `f64`, `half::f16`,
/// `half::bf16`, `i32`, `i64` and `u8`; sealed.
pub trait Element:
    bytemuck::Pod + Send + Sync + fmt::Debug + PartialEq + PartialOrd + sealed::Sealed + 'static
{
    /// The dtype tag of this type.
    const DTYPE: DType;
    /// The value as an `f64` (exact for every type but i64 beyond 2^53).
    fn to_f64(self) -> f64;
    /// The nearest value to `v`, rounded once to nearest-even (integers truncate toward zero and
    /// saturate, NaN gives 0).
    fn from_f64(v: f64) -> Self;
}

macro_rules! element {
    ($t:ty, $d:ident, |$x:ident| $to:expr, |$v:ident| $from:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn to_f64(self) -> f64 {
                let $x = self;
                $to
            }
            fn from_f64($v: f64) -> Self {
                $from
            }
        }
    };
}

element!(f32, F32, |x| x as f64, |v| v as f32);
element!(f64, F64, |x| x, |v| v);
element!(f16, F16, |x| x.to_f64(), |v| f16::from_f32(f32_round_odd(v)));
element!(bf16, BF16, |x| x.to_f64(), |v| bf16::from_f32(f32_round_odd(v)));

/// `v` rounded to f32 with round-to-odd: when inexact, the neighbour whose last bit is 1. A
/// second rounding, to nearest-even in a format at least two bits narrower (f16, bf16), then
/// gives the correctly rounded result; rounding `v` to nearest f32 first may not (a double
/// rounding), and neither does `half`'s `from_f64`, which drops the low 32 bits of the f64.
pub(crate) fn f32_round_odd(v: f64) -> f32 {
    let r = v as f32;
    if !r.is_finite() || r as f64 == v || r.to_bits() & 1 == 1 {
        return r;
    }
    // `r` is even and inexact: step one ulp toward `v` (same sign, so the bits move by one).
    if (r as f64).abs() < v.abs() { f32::from_bits(r.to_bits() + 1) } else { f32::from_bits(r.to_bits() - 1) }
}
element!(i32, I32, |x| x as f64, |v| v as i32);
element!(i64, I64, |x| x as f64, |v| v as i64);
element!(u8, U8, |x| x as f64, |v| v as u8);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>().unwrap(), d);
        }
        assert!("f8".parse::<DType>().is_err());
    }

    #[test]
    fn sizes_match_rust_types() {
        assert_eq!(DType::F16.size(), std::mem::size_of::<f16>());
        assert_eq!(DType::BF16.size(), std::mem::size_of::<bf16>());
        assert_eq!(DType::I64.size(), std::mem::size_of::<i64>());
        assert_eq!(DType::U8.size(), 1);
    }
}
