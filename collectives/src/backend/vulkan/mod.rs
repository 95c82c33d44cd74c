//! The Vulkan backend (feature `vulkan`): `Device::Vulkan(n)` through ash, with the loader opened
//! at run time, so the crate builds and runs on machines without Vulkan (the device is then
//! [`Error::DeviceUnavailable`]).
//!
//! Layers, bottom up:
//! - [`raw`]: thin `unsafe` wrappers of the ash calls, returning `Result`;
//! - [`instance`] (the loader, physical devices `Vulkan(0..)`, validation messages),
//!   [`device::Gpu`] (logical device, compute queue, timeline semaphore, allocator),
//!   [`memory::DevBuf`] (buffers from gpu-allocator, large ones recycled through [`cache`]),
//!   [`pipelines`] (cached per device) and
//!   [`submit`] (command recording, submission, retirement): owning types that free what they
//!   make;
//! - [`kernels`] and [`copy`]: ops planned into dispatches and buffer copies; [`on_host`]: the
//!   small ones of tensors in host memory done by the host instead; [`bridge`]: host memory
//!   imported for the staged CUDA ↔ Vulkan chain, and its chunk copies;
//! - [`VulkanBackend`] here: the [`Backend`] the executor calls.
//!
//! Every operation the host does not do itself ([`on_host`]) records one command buffer and
//! submits it without waiting; the result carries a [`submit::TimelineFence`]. Work on one
//! device runs in queue order, each command buffer starting with a barrier on all earlier
//! writes, so consumers on the device never wait on the host; host readers wait on the fence.
//! Host ↔ device copies go through host-visible staging, or straight through the mapping when
//! the device memory is host-visible (as on lavapipe); an owned host buffer uploaded again is
//! imported and copied from in place ([`register`]); copies within a device are buffer copies;
//! copies between two Vulkan devices stage through the host.
//!
//! Semantics match the CPU backend bit for bit (see `shaders/`), except: floating-point division,
//! which Vulkan lets be 2.5 ulp off (the H200's driver is up to 2 ulp off), is corrected by one fma
//! step on the exact remainder and can still differ in the last place where that remainder is
//! subnormal and flushed; and subnormal f32/bf16 values may be flushed to zero by drivers that do
//! so (Vulkan allows it).

pub(crate) mod bridge;
mod cache;
mod copy;
mod device;
pub(crate) mod export;
mod features;
mod instance;
mod join;
mod kernels;
mod memory;
mod on_host;
mod pipelines;
#[cfg(test)]
mod probe;
mod raw;
mod register;
mod submit;
mod view;

use std::sync::Arc;

use ash::vk;

use super::cpu::kernels::copy_bytes;
use super::{Backend, Buffer, Fence, Kernel, Mem, OutSpec, OwnedHost};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::BinaryOp;
pub use cache::VULKAN_POOL_ENV;
use copy::Rows;
use device::Gpu;
pub use device::{VULKAN_SPIN_ENV, VULKAN_SPIN_US};
use kernels::Fold;
use memory::{DevBuf, StagingHost, Usage, VkMem};
pub use memory::{VULKAN_HOST_BELOW_BYTES, VULKAN_HOST_ENV};
pub use on_host::{VULKAN_HOST_KERNEL_BYTES, VULKAN_HOST_KERNEL_ENV};
use submit::{Recorder, TimelineFence};
pub(crate) use view::view;

/// Opens `Vulkan(ordinal)`.
pub(crate) fn open(ordinal: u32) -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(VulkanBackend { gpu: Gpu::open(ordinal)? }))
}

/// How many usable Vulkan devices this machine has (0 without a loader or driver); cached.
pub(crate) fn device_count() -> u32 {
    instance::device_count()
}

/// The name of `Vulkan(ordinal)` and whether it is a software device (lavapipe), without opening
/// it; `None` when there is no such device.
pub(crate) fn device_name(ordinal: u32) -> Option<(String, bool)> {
    let inst = instance::get().ok()?;
    inst.devices.get(ordinal as usize).map(|p| (p.name.clone(), p.software))
}

/// Why this machine has no usable Vulkan device (no loader, no driver, none usable); `None` when
/// it has one.
pub(crate) fn unavailable_reason() -> Option<String> {
    instance::get().err().map(str::to_string)
}

/// Whether the host runs an elementwise kernel over tensors of at most `each` bytes that moves
/// `bytes` (inputs and output together): tensors that small live in host memory (under
/// [`VULKAN_HOST_ENV`]'s bound) and the kernel is under [`VULKAN_HOST_KERNEL_ENV`]'s
/// ([`on_host`]).
pub(crate) fn kernel_on_host(each: usize, bytes: usize) -> bool {
    (each as u64) < device::host_below() && (bytes as u64) < on_host::host_kernel_below()
}

/// One Vulkan device.
pub(crate) struct VulkanBackend {
    gpu: Arc<Gpu>,
}

impl VulkanBackend {
    /// The device buffer of input `b`, which must live on this device (a submission reading it
    /// waits for its writer through [`export::foreign_waits`]).
    fn mem<'b>(&self, b: &'b Buffer, op: &str) -> Result<&'b Arc<DevBuf>> {
        let m = b.device_mem::<VkMem>(op)?;
        if !Arc::ptr_eq(&m.0.gpu, &self.gpu) {
            return Err(Error::internal(
                op,
                format!("a buffer of {} handed to {}", b.device, self.gpu.device),
            ));
        }
        Ok(&m.0)
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<Arc<DevBuf>> {
        DevBuf::new(&self.gpu, (len * dtype.size()) as u64, Usage::Device)
    }

    fn output(
        &self,
        buf: Arc<DevBuf>,
        dtype: DType,
        len: usize,
        fence: Option<Arc<TimelineFence>>,
    ) -> Buffer {
        Buffer {
            device: self.gpu.device,
            dtype,
            len,
            mem: Mem::Device(Box::new(VkMem(buf))),
            fence: fence.map(|f| f as Arc<dyn Fence>),
        }
    }

    /// Records `kernel` of `ins` into `out` from byte `out_at` on: 0, or for an elementwise
    /// kernel ([`elementwise`]) a multiple of [`VulkanBackend::kernel_align`].
    fn record(
        &self,
        rec: &mut Recorder<'_>,
        kernel: &Kernel,
        ins: &[&Arc<DevBuf>],
        in_dtype: DType,
        (out, out_at): (&Arc<DevBuf>, u64),
        spec: OutSpec,
    ) -> Result<()> {
        let (dtype, n) = (spec.dtype, spec.len as u64);
        match kernel {
            Kernel::Binary(op) => Fold { dtype, op: *op, scale: None }.record(rec, ins, out, out_at, n),
            Kernel::Reduce { kind, scale } => {
                Fold { dtype, op: kind.binary(), scale: *scale }.record(rec, ins, out, out_at, n)
            }
            Kernel::Scale(s) => {
                Fold { dtype, op: BinaryOp::Mul, scale: Some(*s) }.record(rec, ins, out, out_at, n)
            }
            Kernel::Cast if in_dtype == dtype => {
                let size = n * dtype.size() as u64;
                rec.copy(ins[0], out, &[vk::BufferCopy { src_offset: 0, dst_offset: out_at, size }]);
                Ok(())
            }
            Kernel::Cast => kernels::cast(rec, (in_dtype, dtype), ins[0], out, out_at, n),
            Kernel::Slice { .. } | Kernel::Concat { .. } if out_at != 0 => Err(Error::internal(
                kernel.name(),
                format!("a {} recorded {out_at} bytes into its output", kernel.name()),
            )),
            Kernel::Slice { .. } | Kernel::Concat { .. } => {
                copy::record(rec, &row_copies(kernel, ins, dtype).unwrap_or_default(), out)
            }
        }
    }

    /// The alignment of a byte offset an elementwise kernel may write from: the device's
    /// `minStorageBufferOffsetAlignment`, and at least the kernels' 16-byte block.
    fn kernel_align(&self) -> u64 {
        self.gpu.limits.offset_align.max(16)
    }

    /// A copy of `src` (a buffer of this device) into a new buffer of this device.
    fn copy_within(&self, src: &Buffer) -> Result<Buffer> {
        crate::failpoint::hit(self.gpu.device, "vulkan copy")?;
        let from = self.mem(src, "copy")?;
        let out = self.alloc(src.dtype, src.len)?;
        if src.len == 0 {
            return Ok(self.output(out, src.dtype, 0, None));
        }
        let waits = export::foreign_waits(&self.gpu, &[src])?;
        let mut rec = Recorder::begin(&self.gpu)?;
        rec.wait_for(&waits);
        rec.copy(from, &out, &[vk::BufferCopy { src_offset: 0, dst_offset: 0, size: src.bytes() as u64 }]);
        let fence = rec.submit()?;
        Ok(self.output(out, src.dtype, src.len, Some(fence)))
    }
}

/// Checks the device features `kernel`'s dtypes need (the kernel contract, `backend::kernel`,
/// has checked its inputs).
fn check_features(gpu: &Gpu, kernel: &Kernel, inputs: &[&Buffer], spec: OutSpec) -> Result<()> {
    let in_dtype = inputs.first().map_or(spec.dtype, |b| b.dtype);
    let op = kernel.name();
    match kernel {
        Kernel::Binary(_) | Kernel::Reduce { .. } | Kernel::Scale(_) => {
            gpu.features.require(gpu.device, op, &[spec.dtype])
        }
        Kernel::Cast if in_dtype != spec.dtype => {
            gpu.features.require(gpu.device, op, &[in_dtype, spec.dtype])
        }
        _ => Ok(()),
    }
}

/// The row copies of a slice or concat of `ins` (elements of `dtype`); `None` for other kernels.
fn row_copies<'a>(
    kernel: &Kernel,
    ins: &[&'a Arc<DevBuf>],
    dtype: DType,
) -> Option<Vec<(&'a Arc<DevBuf>, Rows)>> {
    let inner_bytes = |inner: usize| (inner * dtype.size()) as u64;
    match kernel {
        Kernel::Slice { outer, in_mid, start, len, inner } => {
            let (o, m, s, l) = (*outer as u64, *in_mid as u64, *start as u64, *len as u64);
            Some(vec![(ins[0], Rows::slice(o, m, s, l, inner_bytes(*inner)))])
        }
        Kernel::Concat { outer, mids, inner } => {
            let mids: Vec<u64> = mids.iter().map(|&m| m as u64).collect();
            let row = |k| Rows::concat_input(*outer as u64, &mids, k, inner_bytes(*inner));
            Some((0..mids.len()).map(|k| (ins[k], row(k))).collect())
        }
        _ => None,
    }
}

/// Whether `kernel` computes each output element from the same element of its inputs (so it may
/// write into a range of a larger buffer): a binary op, a reduce, a scale or a cast.
fn elementwise(kernel: &Kernel) -> bool {
    matches!(kernel, Kernel::Binary(_) | Kernel::Reduce { .. } | Kernel::Scale(_) | Kernel::Cast)
}

/// The pipeline `kernel` runs (slices and concats may also get by with buffer copies alone).
fn pipeline_key(kernel: &Kernel, from: DType, to: DType) -> Option<pipelines::Key> {
    use pipelines::Key;
    Some(match kernel {
        Kernel::Binary(op) => Key::Fold(to, *op),
        Kernel::Reduce { kind, .. } => Key::Fold(to, kind.binary()),
        Kernel::Scale(_) => Key::Fold(to, BinaryOp::Mul),
        Kernel::Cast if from == to => return None,
        Kernel::Cast => Key::Cast(from, to),
        Kernel::Slice { .. } | Kernel::Concat { .. } => Key::CopyBytes,
    })
}

impl Backend for VulkanBackend {
    fn device(&self) -> Device {
        self.gpu.device
    }

    fn compute(&self, kernel: &Kernel, inputs: &[&Buffer], spec: OutSpec) -> Result<Buffer> {
        check_features(&self.gpu, kernel, inputs, spec)?;
        let ins = inputs.iter().map(|b| self.mem(b, kernel.name())).collect::<Result<Vec<_>>>()?;
        let in_dtype = inputs.first().map_or(spec.dtype, |b| b.dtype);
        let out = self.alloc(spec.dtype, spec.len)?;
        if spec.len == 0 || self.on_host(kernel, inputs, &ins, &out, spec)? {
            return Ok(self.output(out, spec.dtype, spec.len, None));
        }
        // Build the kernel's pipeline (on first use) before taking the queue.
        if let Some(key) = pipeline_key(kernel, in_dtype, spec.dtype) {
            self.gpu.pipelines.get(&self.gpu, key)?;
        }
        let waits = export::foreign_waits(&self.gpu, inputs)?;
        let mut rec = Recorder::begin(&self.gpu)?;
        rec.wait_for(&waits);
        self.record(&mut rec, kernel, &ins, in_dtype, (&out, 0), spec)?;
        rec.keep(&out);
        let fence = rec.submit()?;
        Ok(self.output(out, spec.dtype, spec.len, Some(fence)))
    }

    fn htod(&self, src: &Buffer) -> Result<Buffer> {
        crate::failpoint::hit(self.gpu.device, "vulkan copy")?;
        src.wait()?;
        let bytes = src.host_bytes("copy to vulkan")?;
        let dst = self.alloc(src.dtype, src.len)?;
        if bytes.is_empty() {
            return Ok(self.output(dst, src.dtype, 0, None));
        }
        if dst.is_mapped() {
            // SAFETY: `dst` is new, mapped, at least `bytes.len()` long and not yet shared; a
            // later submission sees host writes made before it.
            copy_bytes(bytes, unsafe { dst.mapped_bytes_mut(bytes.len()) });
            return Ok(self.output(dst, src.dtype, src.len, None));
        }
        if let Some((import, offset)) = register::direct(self, src) {
            let fence = register::upload(&self.gpu, import, offset, &dst, bytes.len() as u64)?;
            return Ok(self.output(dst, src.dtype, src.len, Some(fence)));
        }
        let staging = DevBuf::new(&self.gpu, bytes.len() as u64, Usage::Upload)?;
        if !staging.is_mapped() {
            return Err(Error::driver(
                self.gpu.device,
                "copy to vulkan",
                "staging memory is not host-visible",
            ));
        }
        // SAFETY: as above, for the new staging buffer.
        copy_bytes(bytes, unsafe { staging.mapped_bytes_mut(bytes.len()) });
        let mut rec = Recorder::begin(&self.gpu)?;
        rec.copy(
            &staging,
            &dst,
            &[vk::BufferCopy { src_offset: 0, dst_offset: 0, size: bytes.len() as u64 }],
        );
        let fence = rec.submit()?;
        Ok(self.output(dst, src.dtype, src.len, Some(fence)))
    }

    fn dtoh(&self, src: &Buffer, to: Device) -> Result<Buffer> {
        if !to.is_host() {
            return Err(Error::internal(
                format!("copy {} -> {to}", self.gpu.device),
                "dtoh needs a host device",
            ));
        }
        crate::failpoint::hit(self.gpu.device, "vulkan copy")?;
        let from = self.mem(src, "copy to host")?;
        let bytes = src.bytes();
        if from.host_reads_fast() {
            let mut host = OwnedHost::uninit(bytes);
            join::read_mapped(src, from, host.bytes_mut())?;
            return Ok(Buffer::host(to, src.dtype, src.len, Box::new(host)));
        }
        let staging = DevBuf::new(&self.gpu, bytes as u64, Usage::Readback)?;
        if !staging.is_mapped() {
            return Err(Error::driver(
                self.gpu.device,
                "copy to host",
                "readback memory is not host-visible",
            ));
        }
        let mut fence = None;
        if bytes > 0 {
            let waits = export::foreign_waits(&self.gpu, &[src])?;
            let mut rec = Recorder::begin(&self.gpu)?;
            rec.wait_for(&waits);
            rec.copy(from, &staging, &[vk::BufferCopy { src_offset: 0, dst_offset: 0, size: bytes as u64 }]);
            fence = Some(rec.submit()? as Arc<dyn Fence>);
        }
        let mem = Mem::Host(Box::new(StagingHost { buf: staging, len: bytes }));
        Ok(Buffer { device: to, dtype: src.dtype, len: src.len, mem, fence })
    }

    fn dtod(&self, src: &Buffer, to: Device) -> Result<Buffer> {
        match to {
            _ if to == self.gpu.device => self.copy_within(src),
            _ => Err(Error::internal(
                format!("copy {} -> {to}", self.gpu.device),
                "dtod copies within one Vulkan device (the route of two Vulkan devices is staged)",
            )),
        }
    }

    fn synchronize(&self) -> Result<()> {
        self.gpu.synchronize()
    }

    #[cfg(feature = "failpoints")]
    fn resources(&self, out: &mut std::collections::BTreeMap<String, u64>) {
        use std::sync::atomic::Ordering;
        let d = self.gpu.device;
        let live = crate::failpoint::live::VULKAN.load(Ordering::Acquire);
        // Imports of host allocations stay with them in the host pool: counted as a cache.
        let [held, held_bytes] = register::HELD.each_ref().map(|a| a.load(Ordering::Acquire));
        out.insert("vulkan buffers live".into(), (live as u64).saturating_sub(held));
        out.insert("vulkan host import cache bytes".into(), held_bytes);
        out.insert(format!("{d} buffer cache bytes"), self.gpu.cache.lock().bytes());
        out.insert(format!("{d} pipelines"), self.gpu.pipelines.len() as u64);
        for (what, n) in self.gpu.state.lock().resources() {
            out.insert(format!("{d} {what}"), n);
        }
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

#[cfg(test)]
mod tests;
