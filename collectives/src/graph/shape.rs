//! `Shape`: the dimensions of a tensor, row-major.

use std::fmt;

use smallvec::SmallVec;

use crate::dtype::DType;
use crate::error::{Error, Result};

/// Dimensions a shape holds without a heap allocation: every collective call builds a shape per
/// output, so a rank up to this costs no `malloc` (an eight-device call made 16 of them).
const INLINE_RANK: usize = 4;

/// The dimensions of a tensor, outermost first; elements are stored row-major and contiguous.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(SmallVec<[usize; INLINE_RANK]>);

impl Shape {
    /// A shape from its dimensions.
    pub fn new(dims: impl Into<Vec<usize>>) -> Self {
        Shape::from(dims.into())
    }

    /// The dimensions.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// Number of elements (1 for a rank-0 shape; 0 if any dimension is 0). Saturates at
    /// `usize::MAX` for a shape no tensor can have (see [`Shape::checked_numel`]).
    pub fn numel(&self) -> usize {
        if self.0.contains(&0) { 0 } else { self.checked_numel().unwrap_or(usize::MAX) }
    }

    /// The product of the non-zero dimensions, or `None` if it overflows `usize`. A tensor's
    /// shape always has one, and it times the dtype's size is at most `isize::MAX`
    /// ([`Shape::bytes`]): a zero dimension does not excuse the others' product (as NumPy's
    /// "array is too big").
    pub fn checked_numel(&self) -> Option<usize> {
        self.0.iter().filter(|&&d| d != 0).try_fold(1usize, |acc, &d| acc.checked_mul(d))
    }

    /// The bytes a tensor of this shape and `dtype` holds, or [`Error::TooLarge`] naming `what`
    /// if the non-zero dimensions' product times the dtype's size passes `isize::MAX`.
    pub fn bytes(&self, what: &'static str, dtype: DType) -> Result<usize> {
        let fits = self
            .checked_numel()
            .and_then(|n| n.checked_mul(dtype.size()))
            .filter(|&b| b <= isize::MAX as usize);
        match fits {
            Some(_) => Ok(self.numel() * dtype.size()),
            None => Err(Error::TooLarge { what, size: format!("shape {self} of {dtype}") }),
        }
    }

    /// Size of dimension `dim` (panics if out of range: callers check `dim < rank` first).
    pub fn dim(&self, dim: usize) -> usize {
        self.0[dim]
    }

    /// The shape with dimension `dim` set to `len`.
    pub fn with_dim(&self, dim: usize, len: usize) -> Shape {
        let mut d = self.0.clone();
        d[dim] = len;
        Shape(d)
    }

    /// Elements before, at and after `dim`: the (outer, mid, inner) view every slice and concat
    /// kernel works on.
    pub fn split_at_dim(&self, dim: usize) -> (usize, usize, usize) {
        let outer = self.0[..dim].iter().product();
        let inner = self.0[dim + 1..].iter().product();
        (outer, self.0[dim], inner)
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{d}")?;
        }
        write!(f, "]")
    }
}

impl<const N: usize> From<[usize; N]> for Shape {
    fn from(d: [usize; N]) -> Self {
        Shape(SmallVec::from_slice(&d))
    }
}

impl From<&[usize]> for Shape {
    fn from(d: &[usize]) -> Self {
        Shape(SmallVec::from_slice(d))
    }
}

impl From<Vec<usize>> for Shape {
    fn from(d: Vec<usize>) -> Self {
        Shape(SmallVec::from_vec(d))
    }
}

impl From<&Shape> for Shape {
    fn from(s: &Shape) -> Self {
        s.clone()
    }
}

impl From<usize> for Shape {
    fn from(n: usize) -> Self {
        Shape(SmallVec::from_slice(&[n]))
    }
}
