//! Backends: the device-specific half of the executor, behind one trait.
//!
//! The executor knows graphs, schedules and queues; a [`Backend`] knows one device: how to run a
//! lowered [`Kernel`], and how to move a [`Buffer`] on or off it. Adding a backend touches nothing
//! above this module. Each backend is layered raw → safe: a thin layer of driver calls returning
//! `Result`, and owning types with `Drop` above it.
//!
//! Work may be asynchronous: a backend may return a buffer whose contents are still being written,
//! carrying a [`Fence`]. Whoever reads it first waits on the fence — on the host, or (for a backend
//! that recognises its own fence type) on the device, without a host round-trip.

pub(crate) mod chain;
mod copy;
pub(crate) mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
pub(crate) mod fanned;
mod host;
pub(crate) mod join;
mod kernel;
pub(crate) mod lock;
pub(crate) mod nccl;
mod registry;
mod shelf;
pub(crate) mod staged;
#[cfg(test)]
pub(crate) mod timing;
pub(crate) mod view;
#[cfg(feature = "vulkan")]
pub(crate) mod vulkan;

use std::any::Any;
use std::sync::Arc;

use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};

pub(crate) use copy::copy;
#[cfg(feature = "cuda")]
pub use cuda::{CUDA_DEVICES_ENV, reuse::CUDA_POOL_ENV};
pub use host::HOST_POOL_ENV;
#[cfg(any(feature = "cuda", feature = "vulkan"))]
pub(crate) use host::{Declined, HostPin};
pub(crate) use host::{HostMem, OwnedHost};
pub(crate) use kernel::{Delivery, Kernel, OutSpec};
pub use lock::HOST_REGISTER_ENV;
pub(crate) use registry::{
    device_count, device_name, get, nccl_available, nccl_usable, on_one_gpu, unavailable_reason,
};
pub(crate) use view::view;
#[cfg(feature = "vulkan")]
pub use vulkan::{
    VULKAN_HOST_BELOW_BYTES, VULKAN_HOST_ENV, VULKAN_HOST_KERNEL_BYTES, VULKAN_HOST_KERNEL_ENV,
    VULKAN_POOL_ENV, VULKAN_SPIN_ENV, VULKAN_SPIN_US,
};

/// Every backend's resource figures, by name (see `crate::failpoint::resources`).
#[cfg(feature = "failpoints")]
pub(crate) fn resources(out: &mut std::collections::BTreeMap<String, u64>) {
    host::resources(out);
    for b in registry::opened() {
        b.resources(out);
    }
}

/// Completion of asynchronous device work a buffer depends on.
pub(crate) trait Fence: Send + Sync {
    /// Blocks the calling thread until the work is done; reports a device failure as an error.
    fn wait(&self) -> Result<()>;
    /// Whether the work is known to be complete, without waiting: `false` while it runs, and
    /// when the fence cannot tell (a failure shows in [`Fence::wait`]).
    fn is_complete(&self) -> bool {
        false
    }
    /// For backends that recognise their own fences and wait on the device instead.
    fn as_any(&self) -> &dyn Any;
}

/// Where a buffer's bytes are.
pub(crate) enum Mem {
    /// Host memory (pageable or pinned), readable by the CPU backend.
    Host(Box<dyn HostMem>),
    /// Device memory, owned by a backend that downcasts it to its own type.
    Device(Box<dyn Any + Send + Sync>),
    /// The outputs of a multi-device call, one per `Op::Part`.
    Parts(Vec<Arc<Buffer>>),
}

/// A realized tensor's storage: `len` elements of `dtype` on `device`.
pub(crate) struct Buffer {
    pub device: Device,
    pub dtype: DType,
    pub len: usize,
    pub mem: Mem,
    /// Work that must finish before the bytes are valid.
    pub fence: Option<Arc<dyn Fence>>,
}

impl Buffer {
    /// A ready host buffer.
    pub fn host(device: Device, dtype: DType, len: usize, mem: Box<dyn HostMem>) -> Self {
        Buffer { device, dtype, len, mem: Mem::Host(mem), fence: None }
    }

    /// A ready host buffer holding `data`.
    pub fn from_vec<T: Element>(device: Device, data: Vec<T>) -> Self {
        let len = data.len();
        Buffer::host(device, T::DTYPE, len, Box::new(OwnedHost::from_vec(data)))
    }

    /// The outputs of a multi-device call, held by the call's node.
    pub fn parts(device: Device, dtype: DType, parts: Vec<Arc<Buffer>>) -> Self {
        Buffer { device, dtype, len: 0, mem: Mem::Parts(parts), fence: None }
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.len * self.dtype.size()
    }

    /// Blocks until the buffer's contents are valid.
    pub fn wait(&self) -> Result<()> {
        match &self.fence {
            Some(f) => f.wait(),
            None => Ok(()),
        }
    }

    /// Whether the contents are known valid, without waiting: no fence, or a complete one
    /// ([`Fence::is_complete`]).
    pub fn is_complete(&self) -> bool {
        self.fence.as_ref().is_none_or(|f| f.is_complete())
    }

    /// The host bytes, or an error naming `op` if the buffer is device memory. Does not wait.
    pub fn host_bytes(&self, op: &str) -> Result<&[u8]> {
        match &self.mem {
            Mem::Host(h) => Ok(&h.as_bytes()[..self.bytes()]),
            _ => Err(Error::internal(
                op,
                format!("expected a host buffer, got device memory of {}", self.device),
            )),
        }
    }

    /// The device memory, downcast to the backend's own type.
    pub fn device_mem<M: 'static>(&self, op: &str) -> Result<&M> {
        match &self.mem {
            Mem::Device(d) => d.downcast_ref::<M>().ok_or_else(|| {
                Error::internal(op, format!("a buffer of {} belongs to another backend", self.device))
            }),
            _ => Err(Error::internal(
                op,
                format!("expected device memory, got a host buffer of {}", self.device),
            )),
        }
    }
}

/// The buffers behind `bufs`' handles, for the calls that only read them (up to eight held
/// inline: a call over a group of eight allocates nothing for them).
pub(crate) fn refs(bufs: &[Arc<Buffer>]) -> smallvec::SmallVec<[&Buffer; 8]> {
    bufs.iter().map(|b| b.as_ref()).collect()
}

/// [`Backend::compute`] on `be`, then each of `to`: a copy of the result, or of a slice of it
/// (computed here, then copied): what [`Backend::compute_fanout`] does unless a backend writes
/// the copies itself.
pub(crate) fn compute_then_copy<B: Backend + ?Sized>(
    be: &B,
    kernel: &Kernel,
    inputs: &[&Buffer],
    out: OutSpec,
    to: &[Delivery],
) -> Result<(Buffer, Vec<Buffer>)> {
    let first = be.compute(kernel, inputs, out)?;
    let deliver = |d: &Delivery| {
        if d.is_whole(out.len) {
            return copy(&first, d.to);
        }
        let (start, len) = (d.range.start, d.range.len());
        let slice = Kernel::Slice { outer: 1, in_mid: out.len, start, len, inner: 1 };
        copy(&be.compute(&slice, &[&first], d.out(out))?, d.to)
    };
    let copies = to.iter().map(deliver).collect::<Result<Vec<_>>>()?;
    Ok((first, copies))
}

/// One device's compute and copies. Copies are named by direction, from the host's view:
/// `htod` (host → this device), `dtoh` (this device → host), `dtod` (this device → another device
/// of the same vendor: a peer copy, or a copy within one device).
pub(crate) trait Backend: Send + Sync {
    /// The device this backend drives.
    fn device(&self) -> Device;

    /// Runs `kernel` on `inputs` (all on this device) into a new buffer shaped by `out`.
    fn compute(&self, kernel: &Kernel, inputs: &[&Buffer], out: OutSpec) -> Result<Buffer>;

    /// As [`Backend::compute`], also delivering the result, or a range of it, to each host
    /// device of `to` (other host devices of a host backend, or where a GPU's result is copied
    /// to), one new buffer each, in `to`'s order; the caller has checked the ranges
    /// ([`Delivery::check_all`]). The default computes, then copies; the CPU backend writes every
    /// copy while the result is still in cache; the CUDA backend streams a kernel whose inputs
    /// (then possibly on host devices, see `exec/stream.rs`) or copies cross to the host.
    fn compute_fanout(
        &self,
        kernel: &Kernel,
        inputs: &[&Buffer],
        out: OutSpec,
        to: &[Delivery],
    ) -> Result<(Buffer, Vec<Buffer>)> {
        compute_then_copy(self, kernel, inputs, out, to)
    }

    /// Copies a host buffer (on any CPU device) onto this device.
    fn htod(&self, src: &Buffer) -> Result<Buffer>;

    /// Copies a buffer of this device into host memory belonging to host device `to`.
    fn dtoh(&self, src: &Buffer, to: Device) -> Result<Buffer>;

    /// Copies a buffer of this device to `to`, a device of the same vendor (possibly this one).
    fn dtod(&self, src: &Buffer, to: Device) -> Result<Buffer>;

    /// Waits for all work queued on this device.
    fn synchronize(&self) -> Result<()>;

    /// Adds this backend's resource figures to `out` (see `crate::failpoint::resources`).
    #[cfg(feature = "failpoints")]
    fn resources(&self, out: &mut std::collections::BTreeMap<String, u64>) {
        let _ = out;
    }

    /// The concrete backend, for cross-backend glue that needs a backend's own API (the staged
    /// CUDA ↔ Vulkan chain). `None` by default.
    fn as_any(&self) -> Option<&dyn Any> {
        None
    }
}
