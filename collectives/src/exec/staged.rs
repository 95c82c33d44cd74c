//! The staged CUDA ↔ Vulkan chain as the executor runs it: which chains are fused, and how a
//! fused chain moves its data.
//!
//! A graph moves a tensor between a CUDA and a Vulkan device with two `Op::Copy` (or `Op::Move`)
//! nodes through a host device (the seed's semantics; [`crate::graph::opt`] inserts them where a
//! compute op needs it). When the schedule finds such a pair whose host intermediate nobody else
//! needs — not a realize target, read by the second hop alone, not a move that must hold its
//! source's data — and the tensor has at least [`STAGED_MIN_BYTES`], it runs the pair as one
//! step: the host node is never materialized, and the data is pipelined in chunks through a ring
//! of host memory that both GPUs copy to and from directly (see [`staged_transport`]). Smaller
//! tensors, and any chain when [`STAGED_ENV`] is `0`, take the two hops as written.

use std::sync::OnceLock;

use crate::backend::staged;
use crate::device::Device;
use crate::error::Result;

pub use crate::backend::staged::{STAGED_CHUNK_ENV, STAGED_SLOTS_ENV};

/// Tensors smaller than this (in bytes) keep the plain two hops: a chunked pipeline only pays
/// once there is more than one chunk's worth of transfer to overlap, and a single small copy's
/// cost is its latency, not its bandwidth.
pub const STAGED_MIN_BYTES: usize = 4 << 20;

/// Environment variable: `0` (or `off`) turns the fusion off, so every CUDA ↔ Vulkan chain runs
/// as its two hops. Read once per process.
pub const STAGED_ENV: &str = "COLLECTIVES_STAGED_CHAIN";

/// Whether chains are fused in this process ([`STAGED_ENV`]).
pub(crate) fn fusion_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        !std::env::var(STAGED_ENV)
            .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "0" | "off"))
    })
}

/// How a fused CUDA ↔ Vulkan chain moves its data.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StagedTransport {
    /// Chunk by chunk through a ring of host memory registered with CUDA and imported into
    /// Vulkan: both devices copy by DMA, and the second hop of one chunk overlaps the first hop
    /// of the next.
    Pipelined {
        /// Bytes per chunk ([`STAGED_CHUNK_ENV`]).
        chunk_bytes: usize,
        /// Chunks in the ring ([`STAGED_SLOTS_ENV`]).
        slots: usize,
    },
    /// As two whole hops (a device copy to the host, then one from it), as unfused.
    TwoHops {
        /// Why no ring: no host-memory import on the Vulkan device, a device that is missing,
        /// fusion turned off, ...
        reason: String,
    },
}

/// How a fused chain from `from` to `to` (a CUDA and a Vulkan device, either way round) moves
/// its data in this process. Makes the pair's ring if it is not made yet.
///
/// ```
/// use collectives::Device;
/// use collectives::exec::{StagedTransport, staged_transport};
/// // On a machine without CUDA (or without Vulkan's host-memory import) the chain is two hops.
/// match staged_transport(Device::Cuda(0), Device::Vulkan(0))? {
///     StagedTransport::Pipelined { chunk_bytes, slots } => assert!(chunk_bytes > 0 && slots >= 2),
///     StagedTransport::TwoHops { reason } => assert!(!reason.is_empty()),
///     _ => {}
/// }
/// assert!(staged_transport(Device::Cuda(0), Device::Cuda(1)).is_err(), "not a staged pair");
/// # Ok::<(), collectives::Error>(())
/// ```
pub fn staged_transport(from: Device, to: Device) -> Result<StagedTransport> {
    if !fusion_enabled() {
        staged::check_pair(from, to)?;
        return Ok(StagedTransport::TwoHops { reason: format!("{STAGED_ENV} turns fusion off") });
    }
    Ok(match staged::transport(from, to)? {
        Ok(g) => StagedTransport::Pipelined { chunk_bytes: g.chunk, slots: g.slots },
        Err(reason) => StagedTransport::TwoHops { reason },
    })
}
