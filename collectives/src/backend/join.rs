//! Joins: buffers of several devices laid end to end in one new buffer, each copied once,
//! straight into its range — what a concatenation whose parts arrive by copies becomes
//! (`exec/join.rs` decides where).
//!
//! Why: a gather, all_gather or all_to_all of a mixed group joins parts that hop from other
//! devices; as a copy then a concat kernel, each of those parts was written twice, the second
//! time by a pass over the whole output. A part copied into its range is written once: on the
//! host that is a memcpy pass saved per gathered byte, on a GPU a kernel over the output.
//!
//! Which pairs: parts on CUDA or host devices, into a CUDA or host device ([`placeable`]). A
//! Vulkan copy into a range of another buffer is not written: Vulkan parts and destinations keep
//! the copy, then the concat kernel.
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

use super::{Buffer, OutSpec};
use crate::device::{Device, DeviceKind};
use crate::error::{Error, Result};

/// Whether a part on `from` can be copied straight into a range of a buffer on `to`.
pub(crate) fn placeable(from: Device, to: Device) -> bool {
    let direct = |d: Device| d.is_host() || (cfg!(feature = "cuda") && d.kind() == DeviceKind::Cuda);
    direct(from) && direct(to)
}

/// `parts` (each on a device [`placeable`] into `to`) end to end in a new buffer on `to`, shaped
/// by `out` (the parts' dtype, their total length).
pub(crate) fn join(to: Device, parts: &[&Buffer], out: OutSpec) -> Result<Buffer> {
    check(to, parts, out)?;
    #[cfg(feature = "cuda")]
    {
        if to.kind() == DeviceKind::Cuda {
            return super::cuda::join::on_device(to, parts, out);
        }
        if parts.iter().any(|p| p.device.kind() == DeviceKind::Cuda) {
            return super::cuda::join::to_host(to, parts, out);
        }
    }
    super::cpu::join(to, parts, out)
}

/// An internal error unless every part can be placed in `to` and the parts make up `out`.
fn check(to: Device, parts: &[&Buffer], out: OutSpec) -> Result<()> {
    if let Some(p) = parts.iter().find(|p| !placeable(p.device, to) || p.dtype != out.dtype) {
        let msg = format!("a part of {} x {} on {} cannot be placed in {to}", p.len, p.dtype, p.device);
        return Err(Error::internal("join", msg));
    }
    let len: usize = parts.iter().map(|p| p.len).sum();
    if len != out.len {
        let msg = format!("parts of {len} elements in total do not make an output of {}", out.len);
        return Err(Error::internal("join", msg));
    }
    Ok(())
}
