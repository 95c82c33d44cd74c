//! Checks of a collective's arguments, each failing with a typed error before any graph is built.

use super::DeviceGroup;
use crate::error::{Error, Result};
use crate::graph::{Shape, Tensor};

/// Which shard counts a collective accepts.
#[derive(Clone, Copy)]
pub(crate) enum Count {
    /// Exactly one per device.
    All,
    /// One to one per device (shard i on device i; the first k devices take part).
    UpToAll,
}

/// How shard shapes must relate.
#[derive(Clone, Copy)]
pub(crate) enum Shapes {
    /// All equal.
    Equal,
    /// Equal except along `dim` (uneven shards).
    ExceptDim(usize),
}

impl DeviceGroup {
    /// Checks count, residency (shard i on device i), dtype and shapes of `shards`.
    pub(crate) fn check_shards(
        &self,
        op: &'static str,
        shards: &[Tensor],
        count: Count,
        shapes: Shapes,
    ) -> Result<()> {
        let (got, size) = (shards.len(), self.size());
        let ok = match count {
            Count::All => got == size,
            Count::UpToAll => (1..=size).contains(&got),
        };
        if !ok {
            let need = match count {
                Count::All => "pass exactly one shard per device, shard i on device i",
                Count::UpToAll => "pass one to size() shards, shard i on device i",
            };
            return Err(Error::ShardCount { op, got, size, need });
        }
        for (index, s) in shards.iter().enumerate() {
            let expected = self.devices()[index];
            if s.device() != expected {
                return Err(Error::ShardDevice { op, index, expected, got: s.device() });
            }
            if s.dtype() != shards[0].dtype() {
                let (expected, got) = (shards[0].dtype(), s.dtype());
                return Err(Error::DTypeMismatch { op, expected, got });
            }
        }
        match shapes {
            Shapes::Equal => check_equal(op, shards),
            Shapes::ExceptDim(dim) => check_except(op, shards, dim),
        }
    }

    /// Checks that `t` lives on a member; returns the member's index.
    pub(crate) fn check_member(&self, op: &'static str, t: &Tensor) -> Result<usize> {
        self.index_of(t.device()).ok_or_else(|| Error::NotMember {
            op,
            device: t.device(),
            members: self.member_list(),
        })
    }
}

fn check_equal(op: &'static str, shards: &[Tensor]) -> Result<()> {
    let first = shards[0].shape();
    match shards.iter().find(|s| s.shape() != first) {
        Some(s) => Err(Error::ShapeMismatch { op, expected: first.clone(), got: s.shape().clone() }),
        None => Ok(()),
    }
}

fn check_except(op: &'static str, shards: &[Tensor], dim: usize) -> Result<()> {
    check_dim(op, shards[0].shape(), dim)?;
    let first = shards[0].shape();
    for s in shards {
        let got = s.shape();
        let same =
            got.rank() == first.rank() && (0..first.rank()).all(|d| d == dim || got.dim(d) == first.dim(d));
        if !same {
            return Err(Error::ShapeMismatch { op, expected: first.clone(), got: got.clone() });
        }
    }
    Ok(())
}

/// Checks `dim < rank`.
pub(crate) fn check_dim(op: &'static str, shape: &Shape, dim: usize) -> Result<()> {
    if dim >= shape.rank() {
        return Err(Error::DimOutOfRange { op, dim, rank: shape.rank() });
    }
    Ok(())
}

/// Checks that dim `dim` of `shape` splits evenly into `parts`; returns the part length.
pub(crate) fn even_part(
    op: &'static str,
    shape: &Shape,
    dim: usize,
    parts: usize,
    hint: &'static str,
) -> Result<usize> {
    check_dim(op, shape, dim)?;
    let len = shape.dim(dim);
    if !len.is_multiple_of(parts) {
        return Err(Error::Uneven { op, dim, len, parts, hint });
    }
    Ok(len / parts)
}
