//! `Shape`: the dimensions of a tensor, row-major.

use std::fmt;

/// The dimensions of a tensor, outermost first; elements are stored row-major and contiguous.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(Vec<usize>);

impl Shape {
    /// A shape from its dimensions.
    pub fn new(dims: impl Into<Vec<usize>>) -> Self {
        Shape(dims.into())
    }

    /// The dimensions.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// Number of elements (1 for a rank-0 shape).
    pub fn numel(&self) -> usize {
        self.0.iter().product()
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
        Shape(d.to_vec())
    }
}

impl From<&[usize]> for Shape {
    fn from(d: &[usize]) -> Self {
        Shape(d.to_vec())
    }
}

impl From<Vec<usize>> for Shape {
    fn from(d: Vec<usize>) -> Self {
        Shape(d)
    }
}

impl From<&Shape> for Shape {
    fn from(s: &Shape) -> Self {
        s.clone()
    }
}

impl From<usize> for Shape {
    fn from(n: usize) -> Self {
        Shape(vec![n])
    }
}
