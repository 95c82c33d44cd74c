//! The staged CUDA ↔ Vulkan chain: a tensor moved from a CUDA device to a Vulkan device (or
//! back) through host memory, chunked and pipelined so that the two hops overlap.
//!
//! The graph spells such a move as two `Op::Copy` nodes through a host device (the seed's
//! semantics); the executor fuses the pair into one call of [`transfer`] (see
//! `crate::exec::STAGED_MIN_BYTES` for when). The data goes through a *ring*: `slots` chunks of
//! host memory that the CUDA driver has page-locked (`cuMemHostRegister`) and the Vulkan device
//! has imported as a buffer (`VK_EXT_external_memory_host`), so both GPUs copy to and from it by
//! DMA and no CPU touches the data. Chunk i goes from the source into slot `i % slots` (the first
//! hop) and from there into the destination (the second hop); while the destination copies chunk
//! i out, the source is already copying the next chunks into the other slots ([`pump`]).
//!
//! One ring per (source device, destination device), made on first use and kept for the
//! process. Where no ring can be made (no import extension, memory that cannot be registered), or
//! in a build without both backends, [`transfer`] makes the two hops whole, as the unfused graph
//! would; [`transport`] says which it will be.

#[cfg(all(feature = "cuda", feature = "vulkan"))]
mod ring;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use super::{Buffer, Fence};
use crate::device::Device;
use crate::error::{Error, Result};

/// Environment variable setting the ring's chunk size in bytes (default 16 MiB); read when a
/// ring is made.
pub const STAGED_CHUNK_ENV: &str = "COLLECTIVES_STAGED_CHUNK_BYTES";

/// Environment variable setting how many chunks the ring holds (default 8, at least 2); read
/// when a ring is made.
pub const STAGED_SLOTS_ENV: &str = "COLLECTIVES_STAGED_SLOTS";

/// One end of a staged chain: a device buffer and the device's access to the ring. Copies are
/// issued (not waited for); each returns the fence of its completion, or `None` when it is done
/// already.
pub(crate) trait ChunkEnd {
    /// Issues a copy of `len` bytes at byte `off` of this end's buffer into the ring at byte `at`.
    fn buffer_to_ring(&mut self, at: usize, off: usize, len: usize) -> Result<Option<Arc<dyn Fence>>>;
    /// Issues a copy of `len` bytes of the ring at byte `at` into this end's buffer at byte `off`.
    fn ring_to_buffer(&mut self, at: usize, off: usize, len: usize) -> Result<Option<Arc<dyn Fence>>>;
}

/// The shape of a ring: `slots` chunks of `chunk` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// Bytes per chunk.
    pub chunk: usize,
    /// Chunks in the ring (at least 2).
    pub slots: usize,
}

impl Geometry {
    /// 8 chunks of 16 MiB: a chunk is long enough (about 0.3 ms at 55 GB/s) that the host's
    /// hand-over between the hops is small beside it, and 8 slots keep the source several
    /// chunks ahead while the destination drains one. On the H200 machine a 1 GiB CUDA → Vulkan
    /// move ran at 42.0 GB/s with 4 × 4 MiB, 44.2 with 4 × 64 MiB and 45.6 with 8 × 16 MiB
    /// (`bench/gpu/`).
    pub const DEFAULT: Geometry = Geometry { chunk: 16 << 20, slots: 8 };

    /// [`Geometry::DEFAULT`], with [`STAGED_CHUNK_ENV`] and [`STAGED_SLOTS_ENV`] where set.
    pub fn from_env() -> Geometry {
        let var = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse::<usize>().ok());
        Geometry {
            chunk: var(STAGED_CHUNK_ENV).unwrap_or(Self::DEFAULT.chunk).max(1),
            slots: var(STAGED_SLOTS_ENV).unwrap_or(Self::DEFAULT.slots).max(2),
        }
    }

    /// The ring's size in bytes.
    pub fn bytes(self) -> usize {
        self.chunk * self.slots
    }
}

/// Moves `len` bytes from `src`'s buffer to `dst`'s through a ring of `geo`, chunk by chunk.
///
/// `busy[s]` is the last copy using slot `s` (from an earlier call too): a slot is written only
/// once that copy has completed. On return `busy` holds the copies still in flight (the last
/// chunks' second hops); on error, every copy issued has been waited for and `busy` is empty.
pub(crate) fn pump(
    src: &mut dyn ChunkEnd,
    dst: &mut dyn ChunkEnd,
    len: usize,
    geo: Geometry,
    busy: &mut [Option<Arc<dyn Fence>>],
) -> Result<()> {
    if geo.slots < 2 || busy.len() != geo.slots || geo.chunk == 0 {
        return Err(Error::driver(crate::graph::STAGING_HOST, "staged copy", format!("bad ring {geo:?}")));
    }
    let out = pump_chunks(src, dst, len, geo, busy);
    if out.is_err() {
        settle(busy);
    }
    out
}

/// Waits for every copy in `busy` (errors ignored: the first error is already being returned).
fn settle(busy: &mut [Option<Arc<dyn Fence>>]) {
    for f in busy.iter_mut().filter_map(Option::take) {
        let _ = f.wait();
    }
}

/// The body of [`pump`]. Chunk i lives in slot `i % slots`; the source runs up to `slots - 1`
/// chunks ahead of the destination.
fn pump_chunks(
    src: &mut dyn ChunkEnd,
    dst: &mut dyn ChunkEnd,
    len: usize,
    geo: Geometry,
    busy: &mut [Option<Arc<dyn Fence>>],
) -> Result<()> {
    let n = geo.slots;
    let chunks = len.div_ceil(geo.chunk);
    let span = |i: usize| (i * geo.chunk, geo.chunk.min(len - i * geo.chunk));
    let at = |i: usize| (i % n) * geo.chunk;
    // The first hop of chunk i, once its slot's last copy has completed.
    let mut first = |i: usize, busy: &mut [Option<Arc<dyn Fence>>]| -> Result<()> {
        if let Some(f) = busy[i % n].take() {
            f.wait()?;
        }
        let (off, l) = span(i);
        busy[i % n] = src.buffer_to_ring(at(i), off, l)?;
        Ok(())
    };
    for i in 0..chunks.min(n) {
        first(i, busy)?;
    }
    for i in 0..chunks {
        // The second hop of chunk i, once its first hop has landed.
        if let Some(f) = busy[i % n].take() {
            f.wait()?;
        }
        let (off, l) = span(i);
        busy[i % n] = dst.ring_to_buffer(at(i), off, l)?;
        // Refill the slot the previous chunk's second hop reads (waiting for it, while this
        // chunk's second hop keeps the destination busy).
        if i >= 1 && i - 1 + n < chunks {
            first(i - 1 + n, busy)?;
        }
    }
    Ok(())
}

/// Whether `from → to` is a pair the chain serves: CUDA → Vulkan or Vulkan → CUDA.
fn is_pair(from: Device, to: Device) -> bool {
    use Device::{Cuda, Vulkan};
    matches!((from, to), (Cuda(_), Vulkan(_)) | (Vulkan(_), Cuda(_)))
}

/// `src` (on a CUDA or Vulkan device) copied to `to` (a device of the other vendor) through the
/// host: pipelined through the pair's ring where there is one, else as two whole hops.
pub(crate) fn transfer(src: &Buffer, to: Device) -> Result<Buffer> {
    if !is_pair(src.device, to) {
        let msg = "a staged copy runs between a CUDA and a Vulkan device";
        return Err(Error::driver(src.device, format!("staged copy to {to}"), msg));
    }
    #[cfg(all(feature = "cuda", feature = "vulkan"))]
    if let Some(out) = ring::transfer(src, to) {
        return out;
    }
    two_hops(src, to)
}

/// `src` copied to the staging host, then from there to `to`: the unfused chain.
pub(crate) fn two_hops(src: &Buffer, to: Device) -> Result<Buffer> {
    let host = super::get(src.device)?.dtoh(src, crate::graph::STAGING_HOST)?;
    super::get(to)?.htod(&host)
}

/// How [`transfer`] moves data from `from` to `to`: `Ok(Ok(geometry))` through a ring of that
/// shape (made now if need be), `Ok(Err(why))` as two whole hops.
pub(crate) fn transport(from: Device, to: Device) -> Result<std::result::Result<Geometry, String>> {
    if !is_pair(from, to) {
        return Err(Error::driver(from, format!("staged copy to {to}"), "not a CUDA <-> Vulkan pair"));
    }
    #[cfg(all(feature = "cuda", feature = "vulkan"))]
    return Ok(ring::geometry(from, to));
    #[cfg(not(all(feature = "cuda", feature = "vulkan")))]
    Ok(Err("built without both the cuda and vulkan features".to_string()))
}
