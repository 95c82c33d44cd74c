//! The arithmetic of every element type, in its compute type: f16/bf16 widen to f32, the others
//! compute as themselves. Integers wrap; integer division by zero gives 0; Max/Min propagate NaN.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

use crate::dtype::Element;
use crate::graph::{BinaryOp, Scale};

/// The type an element computes in.
pub(crate) trait Acc: Copy + Send + Sync {
    /// `a op b`.
    fn bin(op: BinaryOp, a: Self, b: Self) -> Self;
    /// `s` applied to `a`.
    fn scale(s: Scale, a: Self) -> Self;
    /// The value as an f64 (exact for every compute type but i64 beyond 2^53).
    fn to_f64(self) -> f64;
}

/// An element type with its compute type.
pub(crate) trait Num: Element {
    /// The compute type.
    type A: Acc;
    /// Widens to the compute type.
    fn widen(self) -> Self::A;
    /// Rounds back from the compute type.
    fn narrow(a: Self::A) -> Self;
    /// The value as an i64 if an integer type (for exact integer casts).
    fn to_i64(self) -> Option<i64>;
    /// The integer `v` converted as Rust's `as` does (wrapping), for integer types.
    fn from_i64(v: i64) -> Self;
    /// Whether the kernels convert a block at a time ([`Num::widen_slice`],
    /// [`Num::narrow_slice`]; the widening exact) rather than one element at a time inside their
    /// loops: for f16, whose slice conversions (`half`'s) run the F16C instructions eight
    /// elements at a time, checking for them once per slice, where one element's conversion
    /// checks each time and keeps the loop from vectorizing (a two-shard f16 fold ran 15 ×
    /// slower than f32's).
    const SLICES: bool = false;
    /// `dst[i] = src[i].widen()`, over equal lengths.
    #[inline(always)]
    fn widen_slice(src: &[Self], dst: &mut [Self::A]) {
        dst.iter_mut().zip(src).for_each(|(d, &s)| *d = s.widen());
    }
    /// `dst[i] = Self::narrow(src[i])`, over equal lengths.
    #[inline(always)]
    fn narrow_slice(src: &[Self::A], dst: &mut [Self]) {
        dst.iter_mut().zip(src).for_each(|(d, &s)| *d = Self::narrow(s));
    }
    /// `dst[i]` = `src[i]` cast to this type, rounded once as [`Element::from_f64`] rounds, over
    /// equal lengths: the cast from f32.
    #[inline(always)]
    fn from_f32_slice(src: &[f32], dst: &mut [Self]) {
        dst.iter_mut().zip(src).for_each(|(d, &s)| *d = Self::from_f64(f64::from(s)));
    }
}

macro_rules! float_acc {
    ($t:ty) => {
        impl Acc for $t {
            #[inline(always)]
            fn bin(op: BinaryOp, a: Self, b: Self) -> Self {
                match op {
                    BinaryOp::Add => a + b,
                    BinaryOp::Sub => a - b,
                    BinaryOp::Mul => a * b,
                    BinaryOp::Div => a / b,
                    BinaryOp::Max => {
                        if a.is_nan() || b.is_nan() {
                            <$t>::NAN
                        } else if a >= b {
                            a
                        } else {
                            b
                        }
                    }
                    BinaryOp::Min => {
                        if a.is_nan() || b.is_nan() {
                            <$t>::NAN
                        } else if a <= b {
                            a
                        } else {
                            b
                        }
                    }
                }
            }
            #[inline(always)]
            fn scale(s: Scale, a: Self) -> Self {
                match s {
                    Scale::Mul(f) => a * (f as $t),
                    Scale::Div(f) => a / (f as $t),
                }
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    };
}
float_acc!(f32);
float_acc!(f64);

macro_rules! int_acc {
    ($t:ty) => {
        impl Acc for $t {
            #[inline(always)]
            fn bin(op: BinaryOp, a: Self, b: Self) -> Self {
                match op {
                    BinaryOp::Add => a.wrapping_add(b),
                    BinaryOp::Sub => a.wrapping_sub(b),
                    BinaryOp::Mul => a.wrapping_mul(b),
                    BinaryOp::Div => {
                        if b == 0 {
                            0
                        } else {
                            a.wrapping_div(b)
                        }
                    }
                    BinaryOp::Max => a.max(b),
                    BinaryOp::Min => a.min(b),
                }
            }
            #[inline(always)]
            fn scale(s: Scale, a: Self) -> Self {
                // Factors were checked integral (and non-zero for Div) when the op was built.
                // A product wraps, so only the factor modulo 2^bits matters (a factor of 2^127 or
                // more is a multiple of 2^bits); a quotient must not wrap its divisor (u8 / 300
                // is 0, not u8 / 44), so a divisor outside the type divides exactly in i128.
                let f = s.factor();
                match s {
                    Scale::Mul(_) => {
                        a.wrapping_mul(if f.abs() < 2f64.powi(127) { f as i128 as $t } else { 0 })
                    }
                    Scale::Div(_) => match <$t>::try_from(f as i128) {
                        Ok(0) => 0,
                        Ok(f) => a.wrapping_div(f),
                        Err(_) => (a as i128 / f as i128) as $t,
                    },
                }
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
        impl Num for $t {
            type A = $t;
            #[inline(always)]
            fn widen(self) -> $t {
                self
            }
            #[inline(always)]
            fn narrow(a: $t) -> $t {
                a
            }
            fn to_i64(self) -> Option<i64> {
                Some(self as i64)
            }
            fn from_i64(v: i64) -> Self {
                v as $t
            }
        }
    };
}
int_acc!(i32);
int_acc!(i64);
int_acc!(u8);

macro_rules! float_num {
    ($t:ty, $a:ty, |$x:ident| $widen:expr, |$y:ident| $narrow:expr $(, { $($extra:tt)* })?) => {
        impl Num for $t {
            type A = $a;
            #[inline(always)]
            fn widen(self) -> $a {
                let $x = self;
                $widen
            }
            #[inline(always)]
            fn narrow($y: $a) -> $t {
                $narrow
            }
            fn to_i64(self) -> Option<i64> {
                None
            }
            fn from_i64(v: i64) -> Self {
                <$t as Element>::from_f64(v as f64)
            }
            $($($extra)*)?
        }
    };
}
float_num!(f32, f32, |x| x, |y| y);
float_num!(f64, f64, |x| x, |y| y);
float_num!(bf16, f32, |x| x.to_f32(), |y| bf16::from_f32(y));

// f16 converts by slices: `half`'s, F16C eight elements at a time (see `Num::SLICES`).
float_num!(f16, f32, |x| x.to_f32(), |y| f16::from_f32(y), {
    const SLICES: bool = true;
    fn widen_slice(src: &[f16], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }
    fn narrow_slice(src: &[f32], dst: &mut [f16]) {
        dst.convert_from_f32_slice(src);
    }
    fn from_f32_slice(src: &[f32], dst: &mut [f16]) {
        Self::narrow_slice(src, dst);
    }
});
