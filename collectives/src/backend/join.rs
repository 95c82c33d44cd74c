//! Joins: buffers of several devices laid end to end in one new buffer, each copied once,
//! straight into its range — what a concatenation whose parts arrive by copies becomes
//! (`exec/join.rs` decides where).
//!
//! Why: a gather, all_gather or all_to_all of a mixed group joins parts that hop from other
//! devices; as a copy then a concat kernel, each of those parts was written twice, the second
//! time by a pass over the whole output. A part copied into its range is written once: on the
//! host that is a memcpy pass saved per gathered byte, on a GPU a kernel over the output.
//!
//! How, by destination: a CUDA device copies each part on its `copy_in` stream
//! (`cuda/join.rs`); a Vulkan device writes host parts through its output's mapping (or one
//! staging buffer) and copies its own in one submission (`vulkan/join.rs`); a host device
//! downloads CUDA parts into one pinned buffer and copies host and Vulkan parts in.
//!
//! Which pairs ([`placeable`]): into a host device, parts of any device; into a CUDA device,
//! parts on CUDA or host devices; into a Vulkan device, its own parts and host parts. A part
//! crossing between CUDA and Vulkan, or between two Vulkan devices, keeps its copy (its route is
//! the bridge, or the host), and the join copies the copied buffer.
//!
//! A part that an elementwise kernel of the join's own device computes for the join alone (say a
//! member's own result beside the results it gathers from its peers) is computed as part of the
//! join ([`Part::Computed`], on every kind of device: [`computable`]): on the host by the CPU
//! kernel writing the range; on a CUDA device by the kernel launched into it on the compute
//! stream, which the copies' stream then waits for on the device; on a Vulkan device by the
//! kernel recorded into the join's one submission, writing the range where it starts on the
//! binding alignment and holds whole 16-byte blocks (or ends the output), else a scratch buffer
//! that the same submission copies in. (A ring all_reduce's own folded part is also sent on to
//! the next member, so it keeps a buffer of its own.)
//!
//! ```
//! use collectives::{Device, Tensor};
//! let a = Tensor::from_vec(vec![1.0f32, 2.0], [2], Device::Cpu(0))?;
//! let b = Tensor::from_vec(vec![3.0f32], [1], Device::Cpu(1))?;
//! // `a` hops to cpu:1 straight into the first two elements of the result.
//! let joined = Tensor::concat(&[a.copy_to_device(Device::Cpu(1))?, b], 0)?;
//! assert_eq!(joined.to_vec::<f32>()?, vec![1.0, 2.0, 3.0]);
//! # Ok::<(), collectives::Error>(())
//! ```

use super::{Buffer, Kernel, OutSpec};
use crate::device::{Device, DeviceKind};
use crate::error::{Error, Result};

/// One part of a join: a buffer copied into its range, or a kernel computed straight into it.
pub(crate) enum Part<'a> {
    /// A buffer on a device [`placeable`] into the join's.
    Copy(&'a Buffer),
    /// `kernel` over `inputs` (checked against `out` by the caller), computed into the range on
    /// the join's device, which is [`computable`].
    Computed {
        /// The kernel.
        kernel: Kernel,
        /// Its inputs, as the device's kernels read them.
        inputs: Vec<&'a Buffer>,
        /// Its result: the part's dtype and length.
        out: OutSpec,
    },
}

impl<'a> Part<'a> {
    /// The part's length in elements.
    pub fn len(&self) -> usize {
        match self {
            Part::Copy(b) => b.len,
            Part::Computed { out, .. } => out.len,
        }
    }

    /// The part's bytes.
    pub fn bytes(&self) -> usize {
        match self {
            Part::Copy(b) => b.bytes(),
            Part::Computed { out, .. } => out.len * out.dtype.size(),
        }
    }

    /// The buffer a copied part copies; `None` for a computed part.
    pub fn copied(&self) -> Option<&'a Buffer> {
        match self {
            Part::Copy(b) => Some(b),
            Part::Computed { .. } => None,
        }
    }
}

/// Whether a part on `from` can be copied straight into a range of a buffer on `to`.
pub(crate) fn placeable(from: Device, to: Device) -> bool {
    let (cuda, vulkan) = (cfg!(feature = "cuda"), cfg!(feature = "vulkan"));
    match (from.kind(), to.kind()) {
        _ if from.is_host() && to.is_host() => true,
        (_, DeviceKind::Cuda) => cuda && (from.is_host() || from.kind() == DeviceKind::Cuda),
        (DeviceKind::Cuda, _) => cuda && to.is_host(),
        (_, DeviceKind::Vulkan) => vulkan && (from.is_host() || from == to),
        (DeviceKind::Vulkan, _) => vulkan && to.is_host(),
        _ => false,
    }
}

/// Whether a join on `to` computes a part of its own device's kernel as part of the join: on
/// every kind of device with its backend built.
pub(crate) fn computable(to: Device) -> bool {
    match to.kind() {
        _ if to.is_host() => true,
        DeviceKind::Cuda => cfg!(feature = "cuda"),
        DeviceKind::Vulkan => cfg!(feature = "vulkan"),
        _ => false,
    }
}

/// `parts` (each copied from a device [`placeable`] into `to`, or computed there) end to end in a
/// new buffer on `to`, shaped by `out` (the parts' dtype, their total length).
pub(crate) fn join(to: Device, parts: &[Part], out: OutSpec) -> Result<Buffer> {
    check(to, parts, out)?;
    #[cfg(feature = "vulkan")]
    if to.kind() == DeviceKind::Vulkan {
        return with_vulkan(to, |vk| vk.join(parts, out));
    }
    #[cfg(feature = "cuda")]
    {
        if to.kind() == DeviceKind::Cuda {
            return super::cuda::join::on_device(to, parts, out);
        }
        if parts.iter().filter_map(Part::copied).any(|b| b.device.kind() == DeviceKind::Cuda) {
            return super::cuda::join::to_host(to, parts, out);
        }
    }
    super::cpu::join(to, parts, out)
}

/// An internal error unless every part can be placed (or computed) in `to` and the parts make up
/// `out`.
fn check(to: Device, parts: &[Part], out: OutSpec) -> Result<()> {
    for p in parts {
        let (ok, dtype) = match p {
            Part::Copy(b) => (placeable(b.device, to), b.dtype),
            Part::Computed { out, .. } => (computable(to), out.dtype),
        };
        if !ok || dtype != out.dtype {
            let what = match p {
                Part::Copy(b) => format!("a part on {}", b.device),
                Part::Computed { .. } => "a computed part".to_string(),
            };
            let msg = format!("{what} of {} x {dtype} cannot be placed in {to}", p.len());
            return Err(Error::internal("join", msg));
        }
    }
    let len: usize = parts.iter().map(Part::len).sum();
    if len != out.len {
        let msg = format!("parts of {len} elements in total do not make an output of {}", out.len);
        return Err(Error::internal("join", msg));
    }
    Ok(())
}

/// Writes part `part` into `dst`, its range of an output on host device `to`: a copy of a host
/// or Vulkan buffer once its writer is done, or the CPU kernel computing it there.
pub(crate) fn write_host_part(part: &Part, to: Device, dst: &mut [u8]) -> Result<()> {
    match part {
        Part::Copy(b) => read_into(b, dst),
        Part::Computed { kernel, inputs, out } => super::cpu::compute_into(to, kernel, inputs, *out, dst),
    }
}

/// Copies `part` (on a host or Vulkan device) into `dst` on the host, once its writer is done:
/// the host parts of a host join.
pub(crate) fn read_into(part: &Buffer, dst: &mut [u8]) -> Result<()> {
    #[cfg(feature = "vulkan")]
    if part.device.kind() == DeviceKind::Vulkan {
        return with_vulkan(part.device, |vk| vk.read_into(part, dst));
    }
    part.wait()?;
    super::cpu::kernels::copy_bytes(part.host_bytes("join")?, dst);
    Ok(())
}

/// `f` of the Vulkan backend of `device`.
#[cfg(feature = "vulkan")]
fn with_vulkan<R>(device: Device, f: impl FnOnce(&super::vulkan::VulkanBackend) -> Result<R>) -> Result<R> {
    let be = super::get(device)?;
    match be.as_any().and_then(|a| a.downcast_ref::<super::vulkan::VulkanBackend>()) {
        Some(vk) => f(vk),
        None => Err(Error::internal("join", format!("{device} has no Vulkan backend"))),
    }
}
