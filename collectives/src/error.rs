//! The crate's one error type.
//!
//! Every failure — bad input to a graph op or a collective, a missing driver, an allocation the
//! device refused — is a variant here naming the operation and the offending values, and saying how
//! to fix it where there is a fix. Nothing in the crate panics on bad input, and an error never
//! leaves a caller's tensor changed (tensors are immutable; a failed realize caches nothing).

use crate::device::Device;
use crate::dtype::DType;
use crate::graph::Shape;

/// The result type of every fallible call in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong, each variant naming what was wrong and, where it helps, the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two tensors that must have the same shape do not.
    #[error(
        "{op}: shape mismatch: expected {expected}, got {got} (reshape, slice or concat one side to match)"
    )]
    ShapeMismatch {
        /// The operation that checked.
        op: &'static str,
        /// The shape it needed.
        expected: Shape,
        /// The shape it was given.
        got: Shape,
    },
    /// Two tensors that must have the same element type do not.
    #[error("{op}: dtype mismatch: expected {expected}, got {got} (cast one side with Tensor::cast)")]
    DTypeMismatch {
        /// The operation that checked.
        op: &'static str,
        /// The dtype it needed.
        expected: DType,
        /// The dtype it was given.
        got: DType,
    },
    /// Host data whose length is not the product of the shape.
    #[error(
        "from_vec: data has {got} elements but shape {shape} holds {expected}; pass {expected} elements or a shape of {got}"
    )]
    DataLength {
        /// The shape given.
        shape: Shape,
        /// Elements the shape holds.
        expected: usize,
        /// Elements the data has.
        got: usize,
    },
    /// A dimension index past the tensor's rank.
    #[error("{op}: dim {dim} is out of range for a tensor of rank {rank}")]
    DimOutOfRange {
        /// The operation that checked.
        op: &'static str,
        /// The dimension asked for.
        dim: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// A slice reaching past the end of a dimension.
    #[error("slice: range {start}..{end} is out of bounds for dim {dim} of size {size}")]
    SliceOutOfRange {
        /// The dimension sliced.
        dim: usize,
        /// Start of the range.
        start: usize,
        /// End of the range (exclusive).
        end: usize,
        /// Size of the dimension.
        size: usize,
    },
    /// Tensors to concatenate whose shapes differ outside the concat dimension.
    #[error(
        "concat: input {index} has shape {got}, which differs from the first input's {expected} outside dim {dim}"
    )]
    ConcatMismatch {
        /// The concatenation dimension.
        dim: usize,
        /// Which input differs.
        index: usize,
        /// The first input's shape.
        expected: Shape,
        /// The differing input's shape.
        got: Shape,
    },
    /// A reshape to a shape holding a different number of elements.
    #[error("reshape: cannot reshape {from} ({from_numel} elements) to {to} ({to_numel} elements)")]
    ReshapeMismatch {
        /// The shape before.
        from: Shape,
        /// Its element count.
        from_numel: usize,
        /// The shape asked for.
        to: Shape,
        /// Its element count.
        to_numel: usize,
    },
    /// An operation given no tensors where it needs at least one.
    #[error("{op}: needs at least one input tensor, got none")]
    NoInputs {
        /// The operation.
        op: &'static str,
    },
    /// Inputs of one compute op on different devices where they must share one.
    #[error("{op}: input {index} is on {got} but the op runs on {expected}; copy it first")]
    DeviceMismatch {
        /// The operation.
        op: &'static str,
        /// Which input.
        index: usize,
        /// The op's device.
        expected: Device,
        /// The input's device.
        got: Device,
    },
    /// A single copy between GPUs of different vendors, which no driver can do.
    #[error(
        "copy {from} -> {to}: a CUDA<->Vulkan copy cannot be one hop; stage it through the host: \
         t.copy_to_device(Device::Cpu(0))?.copy_to_device({to})"
    )]
    CrossVendorCopy {
        /// Source device.
        from: Device,
        /// Destination device.
        to: Device,
    },
    /// A device string that does not parse.
    #[error("unknown device {0:?}: expected cpu:N, cuda:N or vulkan:N (for example \"cuda:0\")")]
    UnknownDevice(String),
    /// A dtype string that does not parse.
    #[error("unknown dtype {0:?}: expected one of f32, f64, f16, bf16, i32, i64, u8")]
    UnknownDType(String),
    /// `to_vec::<T>` with a `T` other than the tensor's element type.
    #[error(
        "to_vec: tensor holds {actual} but {requested} was requested; use to_vec::<{rust}>() or cast first"
    )]
    ElementType {
        /// The tensor's dtype.
        actual: DType,
        /// The dtype of the requested `T`.
        requested: DType,
        /// The Rust type name that matches the tensor.
        rust: &'static str,
    },
    /// A scale factor an integer tensor cannot take exactly.
    #[error(
        "{op}: factor {factor} is not an integer, so it cannot scale a {dtype} tensor exactly; cast to a float dtype first"
    )]
    NonIntegerScale {
        /// The operation.
        op: &'static str,
        /// The factor.
        factor: f64,
        /// The integer dtype.
        dtype: DType,
    },
    /// An operation a backend or dtype does not support.
    #[error("{op} is not supported on {device} for {dtype}: {reason}")]
    Unsupported {
        /// The operation.
        op: String,
        /// The device.
        device: Device,
        /// The dtype.
        dtype: DType,
        /// Why, and what to do instead.
        reason: String,
    },
    /// A backend this build was compiled without.
    #[error("{device}: this build has no {feature} backend; enable the crate feature \"{feature}\"")]
    BackendNotBuilt {
        /// The device asked for.
        device: Device,
        /// The cargo feature that adds it.
        feature: &'static str,
    },
    /// A device whose driver, loader or hardware is absent.
    #[error("{device} is unavailable: {reason}. {}", device.kind().install_hint())]
    DeviceUnavailable {
        /// The device asked for.
        device: Device,
        /// What is missing.
        reason: String,
    },
    /// A device that could not allocate a buffer.
    #[error("{device}: out of memory allocating {bytes} bytes{}; drop tensors you no longer need, or lower the COLLECTIVES_*_POOL_BYTES caches of freed buffers", if detail.is_empty() { String::new() } else { format!(" ({detail})") })]
    OutOfMemory {
        /// The device.
        device: Device,
        /// The size asked for.
        bytes: usize,
        /// The driver's own words, if any.
        detail: String,
    },
    /// A driver call that failed.
    #[error("{device}: {op} failed: {msg}")]
    Driver {
        /// The device.
        device: Device,
        /// What was being done.
        op: String,
        /// The driver's message.
        msg: String,
    },
    /// A broken invariant of the library itself — a bug in `collectives`, not bad input and not a
    /// driver failure: an executor step handed a buffer of the wrong kind, a kernel whose inputs
    /// break its contract, a call without the outputs it promised.
    #[error("{op}: internal error: {invariant} (a bug in collectives; please report it)")]
    Internal {
        /// What was being done.
        op: String,
        /// The invariant that did not hold.
        invariant: String,
    },
    /// A device group given no devices.
    #[error("device group: the device list is empty; name at least one device")]
    EmptyGroup,
    /// A device group naming one device twice.
    #[error(
        "device group: {device} is listed twice (positions {first} and {second}); each device may appear once"
    )]
    DuplicateDevice {
        /// The device.
        device: Device,
        /// Its first position.
        first: usize,
        /// Its second position.
        second: usize,
    },
    /// A leader that is not a member of the group.
    #[error("device group: leader {leader} is not a member; members are {members}")]
    LeaderNotMember {
        /// The leader asked for.
        leader: Device,
        /// The members, comma separated.
        members: String,
    },
    /// A shard that does not live on the device its position names.
    #[error(
        "{op}: shard {index} is on {got} but the group's device {index} is {expected}; shard i must live on device i"
    )]
    ShardDevice {
        /// The collective.
        op: &'static str,
        /// Shard position.
        index: usize,
        /// The group's device at that position.
        expected: Device,
        /// Where the shard lives.
        got: Device,
    },
    /// A collective given a number of shards it cannot take.
    #[error("{op}: got {got} shards for a group of {size} devices; {need}")]
    ShardCount {
        /// The collective.
        op: &'static str,
        /// Shards given.
        got: usize,
        /// Group size.
        size: usize,
        /// What it needs.
        need: &'static str,
    },
    /// A tensor whose device is not in the group.
    #[error("{op}: {device} is not a member of the group ({members}); copy the tensor to a member first")]
    NotMember {
        /// The collective.
        op: &'static str,
        /// The device.
        device: Device,
        /// The members, comma separated.
        members: String,
    },
    /// Scatter sizes that do not add up to the dimension being split.
    #[error("{op}: sizes {sizes:?} sum to {sum}, but dim {dim} has length {len}")]
    SplitSizes {
        /// The collective.
        op: &'static str,
        /// The sizes given.
        sizes: Vec<usize>,
        /// Their sum.
        sum: usize,
        /// The dimension.
        dim: usize,
        /// Its length.
        len: usize,
    },
    /// A length that does not split evenly where the collective needs it to.
    #[error("{op}: dim {dim} has length {len}, which does not split evenly into {parts} parts; {hint}")]
    Uneven {
        /// The collective.
        op: &'static str,
        /// The dimension.
        dim: usize,
        /// Its length.
        len: usize,
        /// How many parts were needed.
        parts: usize,
        /// What to do instead.
        hint: &'static str,
    },
    /// A reduction operator a dtype cannot take.
    #[error("{op}: {redop} is not defined for {dtype}: {reason}")]
    BadReduceOp {
        /// The collective.
        op: &'static str,
        /// The reduction operator.
        redop: String,
        /// The dtype.
        dtype: DType,
        /// Why.
        reason: &'static str,
    },
    /// A setting or argument outside its allowed values.
    #[error("{what}: {msg}")]
    InvalidArgument {
        /// Which argument.
        what: &'static str,
        /// What was wrong and what is allowed.
        msg: String,
    },
    /// A size, element count or byte count too large for memory (past `isize::MAX` bytes, or
    /// past `usize` altogether).
    #[error(
        "{what}: {size} is too large: a tensor's elements times its dtype's size must be at most isize::MAX bytes; use smaller shapes or split the data"
    )]
    TooLarge {
        /// The operation.
        what: &'static str,
        /// What overflowed, with its operands (a shape and dtype, a sum of lengths).
        size: String,
    },
    /// An integer `Scale` factor outside the dtype's range (a product or quotient by it has no
    /// value the dtype holds that every backend agrees on).
    #[error(
        "{op}: {factor} is outside {dtype}'s range {min}..={max}; scale by a factor in range, or cast to a wider dtype first"
    )]
    ScaleOutOfRange {
        /// The operation.
        op: &'static str,
        /// The factor.
        factor: f64,
        /// The dtype.
        dtype: DType,
        /// The dtype's least value.
        min: i64,
        /// The dtype's greatest value.
        max: i64,
    },
    /// A rank of a multi-rank communicator that did not arrive or failed.
    #[error("{op}: {msg}")]
    Comm {
        /// The collective.
        op: &'static str,
        /// What happened.
        msg: String,
    },
}

impl Error {
    /// A driver error for `device` while doing `op`.
    pub(crate) fn driver(device: Device, op: impl Into<String>, msg: impl std::fmt::Display) -> Self {
        Error::Driver { device, op: op.into(), msg: msg.to_string() }
    }

    /// An internal error: `invariant` did not hold while doing `op`.
    pub(crate) fn internal(op: impl Into<String>, invariant: impl std::fmt::Display) -> Self {
        Error::Internal { op: op.into(), invariant: invariant.to_string() }
    }
}
