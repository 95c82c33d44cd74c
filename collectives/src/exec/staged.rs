//! The staged CUDA ↔ Vulkan chain as the executor shows it: its public knobs (defined in the
//! chain's leaf, `backend::chain`) and how a fused chain moves its data ([`staged_transport`]).
//!
//! A graph moves a tensor between a CUDA and a Vulkan device with two `Op::Copy` (or `Op::Move`)
//! nodes through a host device ([`crate::graph::opt`] inserts them where a compute op needs it).
//! When the schedule finds such a pair whose host intermediate nobody else needs — not a realize
//! target, read by the second hop alone, not a move that must hold its source's data — and the
//! tensor has at least [`STAGED_MIN_BYTES`] ([`DEVICE_MIN_BYTES`] where the two devices share GPU
//! memory, and where they are one GPU any contiguous part of a Vulkan tensor that size, which
//! the bridge reads in place), it runs the pair as one copy: the host node is never materialized. Where the devices
//! are one GPU, the data moves through the GPU's own memory, which both APIs map
//! ([`StagedTransport::Device`]); where the Vulkan device is another GPU that a CUDA device of
//! this process drives as a peer of the CUDA end, large tensors move by one peer copy into or out
//! of its memory ([`StagedTransport::Peer`]; [`BRIDGE_ENV`] `=host` turns both off); else the
//! data is pipelined in chunks through a ring of host memory that both GPUs copy to and from
//! directly. Where the two
//! devices are one GPU and the host intermediate *is* needed elsewhere (a mixed group's host
//! member, say), the second hop still reads the chain's source through the GPU's memory, beside
//! the host hop, instead of waiting for the host copy. Smaller tensors, and any chain when
//! [`STAGED_ENV`] is `0`, take the two hops as written.

use crate::device::Device;
use crate::error::Result;

pub use crate::backend::chain::{
    BRIDGE_ENV, DEVICE_MIN_BYTES, STAGED_CHUNK_ENV, STAGED_ENV, STAGED_MIN_BYTES, STAGED_SLOTS_ENV,
    StagedTransport,
};

/// How a fused chain from `from` to `to` (a CUDA and a Vulkan device, either way round) moves
/// its data in this process. Makes the pair's ring if it is not made yet.
///
/// ```
/// use collectives::Device;
/// use collectives::exec::{StagedTransport, staged_transport};
/// // On a machine without CUDA (or without Vulkan's host-memory import) the chain is two hops.
/// match staged_transport(Device::Cuda(0), Device::Vulkan(0))? {
///     StagedTransport::Device { chunk_bytes, slots } => assert!(chunk_bytes > 0 && slots >= 2),
///     StagedTransport::Pipelined { chunk_bytes, slots } => assert!(chunk_bytes > 0 && slots >= 2),
///     StagedTransport::Peer { via, chunk_bytes, .. } => assert!(via != Device::Cuda(0) && chunk_bytes > 0),
///     StagedTransport::TwoHops { reason } => assert!(!reason.is_empty()),
///     _ => {}
/// }
/// assert!(staged_transport(Device::Cuda(0), Device::Cuda(1)).is_err(), "not a staged pair");
/// # Ok::<(), collectives::Error>(())
/// ```
pub fn staged_transport(from: Device, to: Device) -> Result<StagedTransport> {
    crate::backend::staged::transport(from, to)
}
