//! The staged CUDA ↔ Vulkan chain: a tensor moved from a CUDA device to a Vulkan device (or
//! back) as one transfer — through the GPU's own memory where the two are one GPU (the device
//! bridge), else through host memory, chunked and pipelined so that the two hops overlap.
//!
//! The graph spells such a move as two `Op::Copy` nodes through a host device (a cross-vendor
//! copy is never one node); the executor fuses the pair into one call of [`transfer`] (see
//! [`super::chain`] for when).
//!
//! Where the CUDA and the Vulkan device are one GPU (same UUID, [`super::chain::choose_bridge`];
//! `COLLECTIVES_BRIDGE=host` turns this off), a large tensor moves by one CUDA copy straight into
//! or out of the Vulkan buffer's own exportable memory ([`direct`]); anything else between them
//! goes through a ring of the Vulkan device's memory mapped into CUDA (device-to-device copies on
//! both sides). Should sharing the memory fail, the pair falls back to the host ring, with a
//! warning saying why. Where the Vulkan device is another GPU that a CUDA device of this process
//! also drives, and the two GPUs are peers (the peer bridge), a large tensor moves by one peer
//! copy between the CUDA device and the Vulkan buffer's memory mapped into that GPU's CUDA
//! device; smaller ones take the host ring.
//!
//! Between two GPUs the data goes through a host *ring*: `slots` chunks of
//! host memory that the CUDA driver has page-locked (`cuMemHostRegister`) and the Vulkan device
//! has imported as a buffer (`VK_EXT_external_memory_host`), so both GPUs copy to and from it by
//! DMA and no CPU touches the data. Chunk i goes from the source into slot `i % slots` (the first
//! hop) and from there into the destination (the second hop); while the destination copies chunk
//! i out, the source is already copying the next chunks into the other slots
//! ([`super::chain::pump`]).
//!
//! One ring per (source device, destination device), made on first use and kept for the
//! process. Where no ring can be made (no import extension, memory that cannot be registered), or
//! in a build without both backends, [`transfer`] makes the two hops whole, as the unfused graph
//! would; [`transport`] says which it will be.

#[cfg(all(feature = "cuda", feature = "vulkan"))]
mod direct;
#[cfg(all(test, feature = "cuda", feature = "vulkan"))]
mod one_gpu;
#[cfg(all(test, feature = "cuda", feature = "vulkan"))]
mod peer_tests;
#[cfg(all(feature = "cuda", feature = "vulkan"))]
mod ring;
#[cfg(test)]
mod tests;

use super::Buffer;
use super::chain::{Bridge, StagedTransport, fusion_enabled};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::route::STAGING_HOST;

/// Checks that `from → to` is a pair the chain serves: a CUDA and a Vulkan device, either way
/// ([`Device::needs_staging`]).
pub(crate) fn check_pair(from: Device, to: Device) -> Result<()> {
    if from.needs_staging(to) {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        what: "staged copy",
        msg: format!(
            "{from} -> {to} is not a staged pair: the chain runs between a CUDA and a Vulkan device"
        ),
    })
}

/// The pair `from`, `to` (a CUDA and a Vulkan device, either way round) as (CUDA, Vulkan).
#[cfg(all(feature = "cuda", feature = "vulkan"))]
fn cuda_and_vulkan(from: Device, to: Device) -> (Device, Device) {
    if matches!(from, Device::Cuda(_)) { (from, to) } else { (to, from) }
}

/// The bridge between a CUDA and a Vulkan device (`a` and `b`, either order) if this process has
/// decided it — by a move between them or by [`decide_bridge`]; decides nothing. `None` for any
/// other pair and for a pair not decided yet.
pub(crate) fn decided_bridge(a: Device, b: Device) -> Option<Bridge> {
    bridge(a, b, false)
}

/// Decides the bridge between a CUDA and a Vulkan device (`a` and `b`, either order) now, as
/// their first move would: both drivers are asked for the GPU's UUID. `None` for any other pair.
pub(crate) fn decide_bridge(a: Device, b: Device) -> Option<Bridge> {
    bridge(a, b, true)
}

/// The pair's bridge, deciding it first if `decide`.
fn bridge(a: Device, b: Device, decide: bool) -> Option<Bridge> {
    if !a.needs_staging(b) {
        return None;
    }
    #[cfg(all(feature = "cuda", feature = "vulkan"))]
    {
        let (cu, vk) = cuda_and_vulkan(a, b);
        if decide { Some(ring::choice(cu, vk)) } else { ring::decided(cu, vk) }
    }
    #[cfg(not(all(feature = "cuda", feature = "vulkan")))]
    {
        let _ = decide;
        Some(Bridge::Host(BOTH_BACKENDS.into()))
    }
}

/// Why a build without both GPU backends has only the host between them.
#[cfg(not(all(feature = "cuda", feature = "vulkan")))]
const BOTH_BACKENDS: &str = "built without both the cuda and vulkan features";

/// `src` (on a CUDA or Vulkan device) copied to `to` (a device of the other vendor) through the
/// host: pipelined through the pair's ring where there is one, else as two whole hops.
pub(crate) fn transfer(src: &Buffer, to: Device) -> Result<Buffer> {
    check_pair(src.device, to)?;
    #[cfg(all(feature = "cuda", feature = "vulkan"))]
    if let Some(out) = direct::transfer(src, to).or_else(|| ring::transfer(src, to)) {
        return out;
    }
    two_hops(src, to)
}

/// `src` copied to the staging host, then from there to `to`: the unfused chain.
pub(crate) fn two_hops(src: &Buffer, to: Device) -> Result<Buffer> {
    super::copy::direct(&super::copy::direct(src, STAGING_HOST)?, to)
}

/// The smallest tensor (in bytes) whose chain `from → to` is fused:
/// [`DEVICE_MIN_BYTES`](super::chain::DEVICE_MIN_BYTES) where the pair shares GPU memory (one GPU,
/// or the peer bridge), else [`STAGED_MIN_BYTES`](super::chain::STAGED_MIN_BYTES).
pub(crate) fn fuse_min_bytes(from: Device, to: Device) -> usize {
    #[cfg(all(feature = "cuda", feature = "vulkan"))]
    if from.needs_staging(to) && ring::direct(from, to) {
        return super::chain::DEVICE_MIN_BYTES;
    }
    let _ = (from, to);
    super::chain::STAGED_MIN_BYTES
}

/// Whether a chain from `from` to `to` (a CUDA and a Vulkan device) moves through one GPU's own
/// memory (the device bridge), so that reading its source again crosses no bus. Decides the
/// pair's bridge if it is not decided yet.
pub(crate) fn on_one_gpu(from: Device, to: Device) -> bool {
    #[cfg(all(feature = "cuda", feature = "vulkan"))]
    if from.needs_staging(to) {
        return ring::on_device(from, to);
    }
    let _ = (from, to);
    false
}

/// [`on_one_gpu`] without deciding the pair's bridge, for graph building (planning decides no
/// bridge): whether the bridge of `from` and `to` (a CUDA and a Vulkan device) is, or will be,
/// the device bridge. `false` for any other pair.
pub(crate) fn will_share_gpu(from: Device, to: Device) -> bool {
    #[cfg(all(feature = "cuda", feature = "vulkan"))]
    if from.needs_staging(to) {
        return ring::will_be_device(from, to);
    }
    let _ = (from, to);
    false
}

/// How a fused chain from `from` to `to` moves its data in this process; makes the pair's ring
/// if it is not made yet.
pub(crate) fn transport(from: Device, to: Device) -> Result<StagedTransport> {
    check_pair(from, to)?;
    if !fusion_enabled() {
        let reason = format!("{} turns fusion off", super::chain::STAGED_ENV);
        return Ok(StagedTransport::TwoHops { reason });
    }
    #[cfg(all(feature = "cuda", feature = "vulkan"))]
    return Ok(ring::transport(from, to).unwrap_or_else(|reason| StagedTransport::TwoHops { reason }));
    #[cfg(not(all(feature = "cuda", feature = "vulkan")))]
    Ok(StagedTransport::TwoHops { reason: BOTH_BACKENDS.to_string() })
}
