//! The graph-building ops on [`Tensor`]: each checks its inputs and returns a new node, touching
//! no device. A compute op runs on its first input's device; inputs elsewhere are copied there
//! when the graph runs (see [`super::opt::insert_cross_device_copies`]).

use smallvec::smallvec;

use super::{BinaryOp, Op, ReduceKind, Scale, Shape, Tensor};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

impl Tensor {
    /// One `Op::Copy` of this tensor to `to`. Copying to the tensor's own device makes a real
    /// copy (a new buffer). A CUDA↔Vulkan copy is an [`Error::CrossVendorCopy`]: stage it through
    /// the host with two copies.
    pub fn copy_to_device(&self, to: Device) -> Result<Tensor> {
        self.transfer(Op::Copy { to }, to)
    }

    /// One `Op::Move` of this tensor to `to`: a copy that frees the source's buffer once copied
    /// when nothing else holds the source (pass the last handle). Moving to the tensor's own
    /// device is free. Cross-vendor GPU moves are rejected as for [`Tensor::copy_to_device`].
    pub fn move_to_device(self, to: Device) -> Result<Tensor> {
        self.transfer(Op::Move { to }, to)
    }

    fn transfer(&self, op: Op, to: Device) -> Result<Tensor> {
        if self.device().needs_staging(to) {
            return Err(Error::CrossVendorCopy { from: self.device(), to });
        }
        Ok(self.unary(op, to, self.dtype(), self.shape().clone()))
    }

    fn unary(&self, op: Op, device: Device, dtype: DType, shape: Shape) -> Tensor {
        Tensor::new_node(op, smallvec![self.clone()], device, dtype, shape, None)
    }

    /// Elementwise `op` of two tensors of equal shape and dtype; runs on `self`'s device.
    pub fn binary(&self, op: BinaryOp, other: &Tensor) -> Result<Tensor> {
        check_like("binary", self, other)?;
        let inputs = smallvec![self.clone(), other.clone()];
        let (d, t, s) = (self.device(), self.dtype(), self.shape().clone());
        Ok(Tensor::new_node(Op::Binary(op), inputs, d, t, s, None))
    }

    /// `self + other`, elementwise.
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Add, other)
    }

    /// `self - other`, elementwise.
    pub fn sub(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Sub, other)
    }

    /// `self * other`, elementwise.
    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Mul, other)
    }

    /// `self / other`, elementwise (integer division by zero gives 0).
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Div, other)
    }

    /// The elementwise maximum (NaN propagates).
    pub fn maximum(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Max, other)
    }

    /// The elementwise minimum (NaN propagates).
    pub fn minimum(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Min, other)
    }

    /// One pass folding `inputs` (equal shape and dtype) with `kind`, then `scale` applied to the
    /// accumulator. Runs on the first input's device; f16/bf16 accumulate in f32.
    pub fn reduce(inputs: &[Tensor], kind: ReduceKind, scale: Option<Scale>) -> Result<Tensor> {
        let first = inputs.first().ok_or(Error::NoInputs { op: "reduce" })?;
        Tensor::reduce_on(first.device(), inputs, kind, scale)
    }

    /// As [`Tensor::reduce`], run on `device`: inputs it can read in place (its own, or other
    /// host devices' for a host device) are read there, others are copied to it.
    pub fn reduce_on(
        device: Device,
        inputs: &[Tensor],
        kind: ReduceKind,
        scale: Option<Scale>,
    ) -> Result<Tensor> {
        let first = inputs.first().ok_or(Error::NoInputs { op: "reduce" })?;
        for t in &inputs[1..] {
            check_like("reduce", first, t)?;
        }
        if let Some(s) = scale {
            check_scale("reduce", s, first.dtype())?;
        }
        let (t, s) = (first.dtype(), first.shape().clone());
        Ok(Tensor::new_node(Op::Reduce { kind, scale }, inputs.into(), device, t, s, None))
    }

    /// Elementwise scale (`Scale::Mul(s)` or `Scale::Div(s)`). On integer dtypes the factor must
    /// be an integer (and non-zero for `Div`), else [`Error::NonIntegerScale`].
    pub fn scale(&self, s: Scale) -> Result<Tensor> {
        check_scale("scale", s, self.dtype())?;
        Ok(self.unary(Op::Scale(s), self.device(), self.dtype(), self.shape().clone()))
    }

    /// Elementwise conversion to `dtype` (floats to integers truncate toward zero and saturate;
    /// NaN becomes 0).
    pub fn cast(&self, dtype: DType) -> Result<Tensor> {
        self.shape().bytes("cast", dtype)?;
        Ok(self.unary(Op::Cast(dtype), self.device(), dtype, self.shape().clone()))
    }

    /// The sub-tensor `start..start + len` along `dim`. Where the sub-tensor is one contiguous
    /// range of the source (every dimension before `dim` has size 1) on a host or a CUDA device,
    /// or on a Vulkan device where the range starts on the buffer's alignment (the driver's, and
    /// at least 16 bytes), it reads the source's buffer in place and keeps that whole buffer
    /// alive while it lives; otherwise it is a copy. The values are the same either way: tensors
    /// are immutable.
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Result<Tensor> {
        let rank = self.shape().rank();
        if dim >= rank {
            return Err(Error::DimOutOfRange { op: "narrow", dim, rank });
        }
        let size = self.shape().dim(dim);
        let end = start.checked_add(len).filter(|&e| e <= size);
        let end = end.ok_or(Error::SliceOutOfRange { dim, start, end: start.saturating_add(len), size })?;
        let shape = self.shape().with_dim(dim, end - start);
        Ok(self.unary(Op::Slice { dim, start, len }, self.device(), self.dtype(), shape))
    }

    /// The sub-tensor `range` along `dim`; as [`Tensor::narrow`].
    pub fn slice(&self, dim: usize, range: std::ops::Range<usize>) -> Result<Tensor> {
        if range.end < range.start {
            let size = self.shape().dims().get(dim).copied().unwrap_or(0);
            let (start, end) = (range.start, range.end);
            return Err(Error::SliceOutOfRange { dim, start, end, size });
        }
        self.narrow(dim, range.start, range.end - range.start)
    }

    /// `inputs` joined along `dim`; they must agree in dtype and in every other dimension. Runs
    /// on the first input's device.
    pub fn concat(inputs: &[Tensor], dim: usize) -> Result<Tensor> {
        let first = inputs.first().ok_or(Error::NoInputs { op: "concat" })?;
        Tensor::concat_on(first.device(), inputs, dim)
    }

    /// As [`Tensor::concat`], run on `device` (inputs elsewhere are read in place where `device`
    /// can, else copied to it).
    pub fn concat_on(device: Device, inputs: &[Tensor], dim: usize) -> Result<Tensor> {
        let first = inputs.first().ok_or(Error::NoInputs { op: "concat" })?;
        let rank = first.shape().rank();
        if dim >= rank {
            return Err(Error::DimOutOfRange { op: "concat", dim, rank });
        }
        let mut total = 0usize;
        for (index, t) in inputs.iter().enumerate() {
            check_dtype("concat", first.dtype(), t.dtype())?;
            let got = t.shape();
            if got.rank() != rank || (0..rank).any(|d| d != dim && got.dim(d) != first.shape().dim(d)) {
                let (expected, got) = (first.shape().clone(), got.clone());
                return Err(Error::ConcatMismatch { dim, index, expected, got });
            }
            total = total.checked_add(got.dim(dim)).ok_or_else(|| too_long(inputs, dim))?;
        }
        let shape = first.shape().with_dim(dim, total);
        shape.bytes("concat", first.dtype())?;
        Ok(Tensor::new_node(Op::Concat { dim }, inputs.into(), device, first.dtype(), shape, None))
    }

    /// The same elements with another shape of equal element count (no data moves).
    pub fn reshape(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        let to = shape.into();
        to.bytes("reshape", self.dtype())?;
        if to.numel() != self.numel() {
            return Err(Error::ReshapeMismatch {
                from: self.shape().clone(),
                from_numel: self.numel(),
                to_numel: to.numel(),
                to,
            });
        }
        Ok(self.unary(Op::Reshape, self.device(), self.dtype(), to))
    }

    /// The tensor as one dimension.
    pub fn flatten(&self) -> Result<Tensor> {
        self.reshape([self.numel()])
    }
}

/// The error of a concat whose joined length passes `usize`.
fn too_long(inputs: &[Tensor], dim: usize) -> Error {
    let lens: Vec<usize> = inputs.iter().map(|t| t.shape().dim(dim)).collect();
    Error::TooLarge { what: "concat", size: format!("the sum of the lengths {lens:?} along dim {dim}") }
}

fn check_dtype(op: &'static str, expected: DType, got: DType) -> Result<()> {
    if expected != got {
        return Err(Error::DTypeMismatch { op, expected, got });
    }
    Ok(())
}

/// Same dtype and shape.
pub(crate) fn check_like(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    check_dtype(op, a.dtype(), b.dtype())?;
    if a.shape() != b.shape() {
        let (expected, got) = (a.shape().clone(), b.shape().clone());
        return Err(Error::ShapeMismatch { op, expected, got });
    }
    Ok(())
}

/// A scale `dtype` can apply (the rule is [`Scale::check`]).
pub(crate) fn check_scale(op: &'static str, s: Scale, dtype: DType) -> Result<()> {
    s.check(op, dtype)
}
