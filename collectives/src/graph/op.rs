//! `Op`: what a graph node computes.

use std::fmt;
use std::sync::Arc;

use crate::backend::Buffer;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// An elementwise binary operation on two same-shape, same-dtype tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b` (integers wrap).
    Add,
    /// `a - b` (integers wrap).
    Sub,
    /// `a * b` (integers wrap).
    Mul,
    /// `a / b` (integers truncate toward zero; integer division by zero gives 0).
    Div,
    /// The larger of `a` and `b`; NaN if either is NaN.
    Max,
    /// The smaller of `a` and `b`; NaN if either is NaN.
    Min,
}

/// The fold of an n-ary [`Op::Reduce`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    /// Sum (f16/bf16 accumulate in f32; integers wrap).
    Sum,
    /// Product (f16/bf16 accumulate in f32; integers wrap).
    Prod,
    /// Maximum; NaN propagates.
    Max,
    /// Minimum; NaN propagates.
    Min,
}

impl ReduceKind {
    /// The binary op that folds two values the same way.
    pub fn binary(self) -> BinaryOp {
        match self {
            ReduceKind::Sum => BinaryOp::Add,
            ReduceKind::Prod => BinaryOp::Mul,
            ReduceKind::Max => BinaryOp::Max,
            ReduceKind::Min => BinaryOp::Min,
        }
    }
}

/// A scalar scaling, applied in the compute type (f32 for f16/bf16) before rounding once.
///
/// On an integer dtype the factor must be an integer the dtype holds (`0..=255` for u8,
/// `i32::MIN..=i32::MAX` for i32, `-2^63..2^63` for i64), and non-zero for `Div`: a factor
/// outside the range is [`Error::ScaleOutOfRange`](crate::Error::ScaleOutOfRange) (a wrapped
/// or saturated factor would give each backend its own answer), a fractional one
/// [`Error::NonIntegerScale`](crate::Error::NonIntegerScale). [`Scale::check`] is the rule;
/// every op that scales (`Tensor::scale`, `Tensor::reduce`, a collective's `PreMulSum` and
/// `Avg`) applies it when the op is built, before any backend sees the factor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    /// `x * s` (integers wrap on overflow).
    Mul(f64),
    /// `x / s`. On integer dtypes the result truncates toward zero (as NCCL's integer average
    /// does); `MIN / -1` wraps to `MIN`.
    Div(f64),
}

impl Scale {
    /// The factor.
    pub fn factor(self) -> f64 {
        match self {
            Scale::Mul(s) | Scale::Div(s) => s,
        }
    }

    /// Checks that `dtype` can take this scale (see [`Scale`]); `op` names the caller in the
    /// error.
    pub fn check(self, op: &'static str, dtype: DType) -> Result<()> {
        let f = self.factor();
        if !dtype.is_int() {
            return Ok(());
        }
        if matches!(self, Scale::Div(_)) && f == 0.0 {
            let msg = format!("Scale::Div(0) would divide {dtype} values by zero");
            return Err(Error::InvalidArgument { what: op, msg });
        }
        if !(f.is_finite() && f.fract() == 0.0) {
            return Err(Error::NonIntegerScale { op, factor: f, dtype });
        }
        let (min, max) = match dtype {
            DType::U8 => (0, 255),
            DType::I32 => (i32::MIN.into(), i32::MAX.into()),
            _ => (i64::MIN, i64::MAX),
        };
        // `max as f64` rounds i64::MAX up to 2^63, which is out of range: compare below it.
        if f < min as f64 || f >= max as f64 + 1.0 {
            return Err(Error::ScaleOutOfRange { op, factor: f, dtype, min, max });
        }
        Ok(())
    }

    /// Applies the scale to an `f64` (the reference semantics for float dtypes).
    pub fn apply_f64(self, x: f64) -> f64 {
        match self {
            Scale::Mul(s) => x * s,
            Scale::Div(s) => x / s,
        }
    }
}

/// What a node computes from its inputs.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Data given by the caller (host data, or a buffer already on the device).
    Input,
    /// A copy of the one input to the node's device. A CUDA↔Vulkan copy is never one `Copy`.
    Copy {
        /// Destination device (the node's device).
        to: Device,
    },
    /// A copy that may release its source: when the source tensor is held by nothing but this
    /// node, its buffer is freed once copied (and the moved result stays cached).
    Move {
        /// Destination device (the node's device).
        to: Device,
    },
    /// Elementwise binary operation of two inputs.
    Binary(BinaryOp),
    /// One pass folding k same-shape inputs, then an optional scale of the accumulator.
    Reduce {
        /// The fold.
        kind: ReduceKind,
        /// Scale applied to the folded value before it is rounded to the output dtype.
        scale: Option<Scale>,
    },
    /// Elementwise scale of the one input.
    Scale(Scale),
    /// Elementwise conversion of the one input to the node's dtype.
    Cast(DType),
    /// The sub-tensor `start..start + len` along `dim`.
    Slice {
        /// The dimension sliced.
        dim: usize,
        /// First index kept.
        start: usize,
        /// Number of indices kept.
        len: usize,
    },
    /// The inputs joined along `dim`.
    Concat {
        /// The dimension joined.
        dim: usize,
    },
    /// The input with another shape of the same element count (no data moves).
    Reshape,
    /// A call spanning several devices, issued as one step (an NCCL group call, say). Its inputs
    /// live on several devices; each of its outputs is taken by an [`Op::Part`] node.
    Collective(CollectiveCall),
    /// Output `index` of the [`Op::Collective`] input, which lives on this node's device.
    Part {
        /// Which output.
        index: usize,
    },
}

/// The call behind an [`Op::Collective`] node (opaque: shown by name, equal by identity).
#[derive(Clone)]
pub struct CollectiveCall(pub(crate) Arc<dyn MultiKernel>);

impl CollectiveCall {
    /// What the call does, for plans and messages.
    pub fn name(&self) -> String {
        self.0.name()
    }
}

impl fmt::Debug for CollectiveCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CollectiveCall({})", self.name())
    }
}

impl PartialEq for CollectiveCall {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// A multi-device kernel: reads one buffer per input (on their own devices) and returns one
/// buffer per output, each on the device of the `Op::Part` node that takes it.
pub(crate) trait MultiKernel: Send + Sync {
    /// What the call does.
    fn name(&self) -> String;
    /// Issues the call over `inputs`, whose handles an output may keep (a host call hands its
    /// members views of an input: host devices share one memory, and a buffer never changes
    /// once realized).
    fn run(&self, inputs: &[Arc<Buffer>]) -> Result<Vec<Arc<Buffer>>>;
}

impl Op {
    /// Whether the op moves data between devices (`Copy` or `Move`).
    pub fn is_transfer(&self) -> bool {
        matches!(self, Op::Copy { .. } | Op::Move { .. })
    }

    /// Whether the op takes inputs on other devices as they are: transfers, collective calls and
    /// their parts. The copy pass leaves such nodes' inputs alone.
    pub fn spans_devices(&self) -> bool {
        matches!(self, Op::Copy { .. } | Op::Move { .. } | Op::Collective(_) | Op::Part { .. })
    }

    /// A short name for messages and plans.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Input => "input",
            Op::Copy { .. } => "copy",
            Op::Move { .. } => "move",
            Op::Binary(_) => "binary",
            Op::Reduce { .. } => "reduce",
            Op::Scale(_) => "scale",
            Op::Cast(_) => "cast",
            Op::Slice { .. } => "slice",
            Op::Concat { .. } => "concat",
            Op::Reshape => "reshape",
            Op::Collective(_) => "collective",
            Op::Part { .. } => "part",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Copy { to } => write!(f, "copy -> {to}"),
            Op::Move { to } => write!(f, "move -> {to}"),
            Op::Binary(b) => write!(f, "{b:?}"),
            Op::Reduce { kind, scale } => match scale {
                Some(s) => write!(f, "reduce {kind:?} then {s:?}"),
                None => write!(f, "reduce {kind:?}"),
            },
            Op::Scale(s) => write!(f, "scale {s:?}"),
            Op::Cast(d) => write!(f, "cast {d}"),
            Op::Slice { dim, start, len } => write!(f, "slice dim {dim} {start}..{}", start + len),
            Op::Concat { dim } => write!(f, "concat dim {dim}"),
            Op::Collective(c) => write!(f, "collective {}", c.name()),
            Op::Part { index } => write!(f, "part {index}"),
            other => f.write_str(other.name()),
        }
    }
}
