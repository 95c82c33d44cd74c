//! `Tensor`: a cheap, immutable handle on a node of the lazy graph.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use smallvec::SmallVec;

use super::{Op, Shape};
use crate::backend::Buffer;
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};

/// A node's inputs, two of them held inline: most nodes have one or two (a copy, a part of a
/// collective call, a binary op), and a collective call builds one node per member, so a `Vec`
/// here cost a `malloc` and a `free` per member per call.
pub(crate) type Inputs = SmallVec<[Tensor; 2]>;

/// A node of the graph: what it computes, from what, and where; plus its buffer once realized.
pub(crate) struct Node {
    pub id: u64,
    pub op: Op,
    pub inputs: Inputs,
    pub device: Device,
    pub dtype: DType,
    pub shape: Shape,
    /// The realized buffer: set for inputs from the start, for other nodes once realized.
    pub value: Mutex<Option<Arc<Buffer>>>,
}

impl Drop for Node {
    /// Drops the inputs with an explicit stack: a long chain of nodes would otherwise be dropped
    /// recursively, one stack frame per node, and overflow the stack.
    fn drop(&mut self) {
        // The inputs' own small vector as the stack: no allocation unless the graph is wide.
        let mut stack = std::mem::take(&mut self.inputs);
        while let Some(t) = stack.pop() {
            if let Some(mut node) = Arc::into_inner(t.0) {
                match stack.is_empty() {
                    true => stack = std::mem::take(&mut node.inputs),
                    false => stack.extend(node.inputs.drain(..)),
                }
            }
        }
    }
}

/// A lazy tensor: a handle on a graph node. Cloning is cheap (an `Arc`); building ops on tensors
/// touches no device; [`Tensor::realize`], [`crate::realize`] and [`Tensor::to_vec`] run the graph.
///
/// ```
/// use collectives::{Device, Tensor};
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3], Device::Cpu(0))?;
/// let b = Tensor::from_vec(vec![10.0f32, 20.0, 30.0], [3], Device::Cpu(1))?;
/// let sum = a.add(&b)?; // b is copied to cpu:0 when this runs
/// assert_eq!(sum.to_vec::<f32>()?, vec![11.0, 22.0, 33.0]);
/// # Ok::<(), collectives::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<Node>);

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Tensor {
    /// A new node (inputs already validated by the caller).
    pub(crate) fn new_node(
        op: Op,
        inputs: Inputs,
        device: Device,
        dtype: DType,
        shape: Shape,
        value: Option<Arc<Buffer>>,
    ) -> Tensor {
        Tensor(Arc::new(Node {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            op,
            inputs,
            device,
            dtype,
            shape,
            value: Mutex::new(value),
        }))
    }

    /// A tensor holding `data` with `shape` on `device`. The data stays on the host until the
    /// tensor is first realized on a GPU device, then lives there.
    ///
    /// Errors with [`Error::DataLength`] if `data.len()` is not the shape's element count.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: impl Into<Shape>, device: Device) -> Result<Tensor> {
        let shape = shape.into();
        shape.bytes("from_vec", T::DTYPE)?;
        if data.len() != shape.numel() {
            return Err(Error::DataLength { expected: shape.numel(), got: data.len(), shape });
        }
        let host = if device.is_host() { device } else { crate::route::STAGING_HOST };
        let buf = Buffer::from_vec(host, data);
        Ok(Tensor::new_node(Op::Input, Inputs::new(), device, T::DTYPE, shape, Some(Arc::new(buf))))
    }

    /// As [`Tensor::from_vec`], copying from a slice.
    pub fn from_slice<T: Element>(data: &[T], shape: impl Into<Shape>, device: Device) -> Result<Tensor> {
        Tensor::from_vec(data.to_vec(), shape, device)
    }

    /// A tensor of `shape` on `device` with every element `value` (its dtype is `T`'s).
    ///
    /// ```
    /// use collectives::{Device, Tensor};
    /// let t = Tensor::full([2, 3], 1.5f32, Device::Cpu(0))?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![1.5; 6]);
    /// # Ok::<(), collectives::Error>(())
    /// ```
    ///
    /// Errors with [`Error::TooLarge`] for a shape past `isize::MAX` bytes and
    /// [`Error::OutOfMemory`] when the host cannot hold it (before any element is written).
    pub fn full<T: Element>(shape: impl Into<Shape>, value: T, device: Device) -> Result<Tensor> {
        let shape = shape.into();
        let bytes = shape.bytes("full", T::DTYPE)?;
        let mut data = Vec::new();
        data.try_reserve_exact(shape.numel()).map_err(|e| Error::OutOfMemory {
            device: crate::route::STAGING_HOST,
            bytes,
            detail: e.to_string(),
        })?;
        data.resize(shape.numel(), value);
        Tensor::from_vec(data, shape, device)
    }

    /// A tensor of `shape` and `dtype` on `device` with every element zero.
    ///
    /// ```
    /// use collectives::{DType, Device, Tensor};
    /// let t = Tensor::zeros([4], DType::I64, Device::Cpu(0))?;
    /// assert_eq!((t.dtype(), t.to_vec::<i64>()?), (DType::I64, vec![0; 4]));
    /// # Ok::<(), collectives::Error>(())
    /// ```
    pub fn zeros(shape: impl Into<Shape>, dtype: DType, device: Device) -> Result<Tensor> {
        use half::{bf16, f16};
        crate::backend::cpu::with_type!(dtype, T => Tensor::full(shape, T::from_f64(0.0), device))
    }

    /// An input with no data yet, for plans: building on it works, realizing it is an error.
    pub(crate) fn placeholder(shape: Shape, dtype: DType, device: Device) -> Tensor {
        Tensor::new_node(Op::Input, Inputs::new(), device, dtype, shape, None)
    }

    /// A tensor wrapping an already realized buffer.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // NcclComm's outputs
    pub(crate) fn from_buffer(buf: Arc<Buffer>, shape: Shape) -> Tensor {
        let (device, dtype) = (buf.device, buf.dtype);
        Tensor::new_node(Op::Input, Inputs::new(), device, dtype, shape, Some(buf))
    }

    /// The device the tensor lives on (for a `Copy`, its destination).
    pub fn device(&self) -> Device {
        self.0.device
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.0.shape
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.0.shape.numel()
    }

    /// Size in bytes of the tensor's data.
    pub fn nbytes(&self) -> usize {
        // A tensor's bytes fit in isize (checked when its shape was made): no overflow.
        self.numel() * self.dtype().size()
    }

    /// What the node computes.
    pub fn op(&self) -> &Op {
        &self.0.op
    }

    /// The node's inputs.
    pub fn inputs(&self) -> &[Tensor] {
        &self.0.inputs
    }

    /// A process-unique id of the node (stable for the tensor's life).
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// Whether two handles name the same node.
    pub fn same_node(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Whether the tensor's buffer is cached on its device: by [`crate::realize`], computed; by
    /// [`crate::issue`], perhaps still being computed (every read of it waits).
    pub fn is_realized(&self) -> bool {
        self.0.value.lock().as_ref().is_some_and(|b| b.device == self.0.device)
    }

    /// The cached buffer, if any (for an input not yet uploaded, the host copy).
    pub(crate) fn value(&self) -> Option<Arc<Buffer>> {
        self.0.value.lock().clone()
    }

    /// The cached buffer if it is on the tensor's device (not an input's host copy still to
    /// upload): the tensor is ready there.
    pub(crate) fn value_here(&self) -> Option<Arc<Buffer>> {
        self.value().filter(|b| b.device == self.device())
    }

    /// Computes the tensor and caches it on its device. See [`crate::realize`].
    pub fn realize(&self) -> Result<()> {
        crate::exec::realize(std::slice::from_ref(self))
    }

    /// Realizes the tensor and copies it to the host as a `Vec<T>`.
    ///
    /// Errors with [`Error::ElementType`] (before running anything) if `T` is not the tensor's
    /// element type.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(Error::ElementType {
                actual: self.dtype(),
                requested: T::DTYPE,
                rust: self.dtype().rust_name(),
            });
        }
        self.realize()?;
        let buf = self.value().ok_or_else(|| Error::internal("to_vec", "a realized tensor has no buffer"))?;
        crate::exec::read_host::<T>(&buf)
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor#{}({} {} {} on {})",
            self.id(),
            self.op(),
            self.dtype(),
            self.shape(),
            self.device()
        )
    }
}
