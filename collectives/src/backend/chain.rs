//! The staged chain's leaf: what both GPU backends and the chain share — the spans a chunk is
//! copied by ([`Span`]), an end of the chain ([`ChunkEnd`], implemented by the CUDA and the Vulkan
//! backend), the ring's shape ([`Geometry`]) and the pipeline over two ends ([`pump`]) — and the
//! chain's public knobs, all in one place. It imports neither GPU backend, so the CUDA end, the
//! Vulkan end and the chain itself (`backend::staged`, which imports both) form no circle.
//!
//! A graph moves a tensor between a CUDA and a Vulkan device with two `Op::Copy` (or `Op::Move`)
//! nodes through a host device. When the schedule finds such a pair whose host intermediate
//! nobody else needs — not a realize target, read by the second hop alone, not a move that must
//! hold its source's data — and the tensor has at least [`STAGED_MIN_BYTES`], it runs the pair as
//! one copy: the host node is never materialized, and the data is pipelined in chunks through a
//! ring of host memory that both GPUs copy to and from directly (or, where the two are one GPU,
//! through its own memory; there the second hop also reads the source when the host node *is*
//! needed elsewhere, beside it: `exec::staged`). Smaller tensors, and any chain when
//! [`STAGED_ENV`] is `0`, take the two hops as written.

use std::sync::{Arc, OnceLock};

use super::Fence;
use crate::device::Device;
use crate::error::{Error, Result};

/// Tensors smaller than this (in bytes) keep the plain two hops: a chunked pipeline only pays
/// once there is more than one chunk's worth of transfer to overlap, and a single small copy's
/// cost is its latency, not its bandwidth.
pub const STAGED_MIN_BYTES: usize = 4 << 20;

/// Tensors smaller than this (in bytes) keep the plain two hops between a CUDA and a Vulkan
/// device of one GPU too: from this size on the Vulkan device gives tensor buffers exportable
/// memory of their own, so a move is one CUDA copy straight into or out of it (12–15 µs on the
/// H200 from 256 KiB up, where two host hops took 29–75 µs at 256–512 KiB,
/// `bench/gpu/20-signals` run d); below it they live in host memory, where two host hops of a few
/// kilobytes cost about as much as the bridge and the host reads them without a submission.
pub const DEVICE_MIN_BYTES: usize = 256 << 10;

/// Environment variable: `0` (or `off`) turns the fusion off, so every CUDA ↔ Vulkan chain runs
/// as its two hops. Read once per process.
pub const STAGED_ENV: &str = "COLLECTIVES_STAGED_CHAIN";

/// Whether chains are fused in this process ([`STAGED_ENV`]).
pub(crate) fn fusion_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| crate::knob::switch(STAGED_ENV, true))
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
    /// Through the GPU's own memory: the two devices are one GPU (same UUID), so no byte
    /// crosses PCIe. A tensor whose Vulkan buffer has memory of its own (at least 256 KiB on an
    /// NVIDIA GPU) moves by one CUDA copy into or out of it (a contiguous part of one, however
    /// small, read in place); any other chunk by chunk through a ring of the Vulkan device's
    /// memory exported to CUDA, of this shape. Chains of at least [`DEVICE_MIN_BYTES`] are
    /// fused, and smaller ones of such parts; [`BRIDGE_ENV`] `=host` turns the bridge off.
    Device {
        /// Bytes per chunk ([`STAGED_CHUNK_ENV`]).
        chunk_bytes: usize,
        /// Chunks in the ring ([`STAGED_SLOTS_ENV`]).
        slots: usize,
    },
    /// Through a peer of the CUDA end: the Vulkan device is another GPU, which CUDA device `via`
    /// also drives (same UUID). A tensor whose Vulkan buffer has memory of its own (at least
    /// 256 KiB on an NVIDIA GPU) moves by one peer copy between the CUDA end and that memory,
    /// mapped into `via`; any other through the host ring of this shape, as
    /// [`StagedTransport::Pipelined`]. Chains of at least [`DEVICE_MIN_BYTES`] are fused.
    Peer {
        /// The CUDA device of the Vulkan device's GPU.
        via: Device,
        /// Bytes per chunk of the host ring ([`STAGED_CHUNK_ENV`]).
        chunk_bytes: usize,
        /// Chunks in the host ring ([`STAGED_SLOTS_ENV`]).
        slots: usize,
    },
    /// As two whole hops (a device copy to the host, then one from it), as unfused.
    TwoHops {
        /// Why no ring: no host-memory import on the Vulkan device, a device that is missing,
        /// fusion turned off, ...
        reason: String,
    },
}

/// Environment variable setting the ring's chunk size in bytes (default 16 MiB); read when a
/// ring is made.
pub const STAGED_CHUNK_ENV: &str = "COLLECTIVES_STAGED_CHUNK_BYTES";

/// Environment variable setting how many chunks the ring holds (default 8, at least 2); read
/// when a ring is made.
pub const STAGED_SLOTS_ENV: &str = "COLLECTIVES_STAGED_SLOTS";

/// Environment variable choosing how a CUDA ↔ Vulkan move travels: `auto` (the default) shares
/// GPU memory between the two APIs where it can — the GPU's own where both are one GPU
/// ([`StagedTransport::Device`]), the Vulkan GPU's through a CUDA peer of it
/// ([`StagedTransport::Peer`]); `host` stages every move through host memory. Read once per
/// process.
pub const BRIDGE_ENV: &str = "COLLECTIVES_BRIDGE";

/// Whether [`BRIDGE_ENV`] forces host staging in this process.
pub(crate) fn bridge_forced_host() -> bool {
    static HOST: OnceLock<bool> = OnceLock::new();
    *HOST.get_or_init(|| {
        let v = crate::knob::var(BRIDGE_ENV, "auto or host", |v: &String| v == "auto" || v == "host");
        v.is_some_and(|v| v == "host")
    })
}

#[cfg(test)]
thread_local! {
    /// Set by a test on its own thread: every attempt of that thread to share memory between a
    /// CUDA and a Vulkan device fails, as an import the driver refuses would (the fallback to the
    /// host is then what runs).
    pub(crate) static FAIL_SHARE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `Err` when a test has made memory sharing fail on this thread ([`FAIL_SHARE`]); `Ok` otherwise
/// (always, outside tests).
pub(crate) fn fail_share() -> Result<()> {
    #[cfg(test)]
    if FAIL_SHARE.with(|f| f.get()) {
        return Err(Error::driver(crate::route::STAGING_HOST, "share device memory", "failed by the test"));
    }
    Ok(())
}

/// The bridge between a CUDA and a Vulkan device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Bridge {
    /// Through the GPU's own memory, which both devices address (they are one GPU).
    Device,
    /// Through the Vulkan device's memory mapped into `via`, a CUDA device of the Vulkan device's
    /// GPU that the CUDA end reaches as a peer: a large move is one peer copy (over NVLink, where
    /// the two GPUs have it), never through the host.
    Peer {
        /// The CUDA device of the Vulkan device's GPU, which maps its memory and orders its work.
        via: Device,
    },
    /// Through host memory, and why not through the device.
    Host(String),
}

impl std::fmt::Display for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bridge::Device => f.write_str("device (one GPU: CUDA and Vulkan share its memory)"),
            Bridge::Peer { via } => write!(
                f,
                "peer (the Vulkan device is {via}'s GPU: {via} maps its memory, the CUDA end copies to and from it as a peer)"
            ),
            Bridge::Host(why) => write!(f, "host ({why})"),
        }
    }
}

/// The bridge for a pair, from each side's UUID (or why that side cannot share memory: no
/// export extension, no import entry points) and whether host staging is forced. Where the two
/// are different GPUs, `peer` is asked for a CUDA device of the Vulkan device's GPU (by its UUID)
/// that the CUDA end reaches as a peer, or why there is none.
pub(crate) fn choose_bridge(
    forced_host: bool,
    cuda: std::result::Result<[u8; 16], String>,
    vulkan: std::result::Result<[u8; 16], String>,
    peer: impl FnOnce([u8; 16]) -> std::result::Result<Device, String>,
) -> Bridge {
    match (cuda, vulkan) {
        _ if forced_host => Bridge::Host(format!("{BRIDGE_ENV}=host")),
        (Err(e), _) | (_, Err(e)) => Bridge::Host(e),
        (Ok(c), Ok(v)) if c != v => match peer(v) {
            Ok(via) => Bridge::Peer { via },
            Err(why) => Bridge::Host(format!("the two devices are different GPUs (UUIDs differ), and {why}")),
        },
        _ => Bridge::Device,
    }
}

/// One chunk's copy between the ring and an end's buffer: `len` bytes at byte `at` of the ring
/// and at byte `off` of the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    /// Offset in the ring.
    pub at: usize,
    /// Offset in the end's buffer.
    pub off: usize,
    /// Bytes.
    pub len: usize,
}

impl Span {
    /// Checks that every span lies within a ring of `ring` bytes and a buffer of `buf` bytes of
    /// `device`.
    pub fn check_all(spans: &[Span], ring: usize, buf: usize, device: Device) -> Result<()> {
        let within =
            |start: usize, len: usize, size: usize| start.checked_add(len).is_some_and(|e| e <= size);
        match spans.iter().find(|s| !(within(s.at, s.len, ring) && within(s.off, s.len, buf))) {
            None => Ok(()),
            Some(s) => {
                let msg = format!("chunk {}+{} (ring {}) outside {buf} / {ring} bytes", s.off, s.len, s.at);
                Err(Error::driver(device, "staged copy", msg))
            }
        }
    }
}

/// One end of a staged chain: a device buffer and the device's access to the ring. Copies are
/// issued (not waited for), all the spans of one call as one submission where the device has
/// such a thing; each call returns the fence of their completion, or `None` when they are done
/// already.
pub(crate) trait ChunkEnd {
    /// Issues copies of `spans` from this end's buffer into the ring.
    fn buffer_to_ring(&mut self, spans: &[Span]) -> Result<Option<Arc<dyn Fence>>>;
    /// Issues copies of `spans` from the ring into this end's buffer.
    fn ring_to_buffer(&mut self, spans: &[Span]) -> Result<Option<Arc<dyn Fence>>>;
    /// Orders this end's next copies after `fence`, the other end's copies (or an earlier
    /// call's): on the device where this end can wait for such a fence there (the device
    /// ring's two ends, one GPU), else by waiting for it on the host, as this default does.
    fn after(&mut self, fence: &Arc<dyn Fence>) -> Result<()> {
        fence.wait()
    }
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
    /// chunks ahead while the destination drains a batch. On the H200 machine, with batched
    /// destination submissions, a 1 GiB CUDA → Vulkan move ran at 46.5–46.7 GB/s with 8 × 16
    /// MiB, 46.0–46.7 with 8 × 32 MiB and 46.7 with 4 × 32 MiB; the Vulkan queue's own copies
    /// from host memory reach 48–50 GB/s in 16–32 MiB submissions (`bench/gpu/7-staged-batches`).
    pub const DEFAULT: Geometry = Geometry { chunk: 16 << 20, slots: 8 };

    /// The device ring's shape: 4 chunks of 64 MiB. Device-to-device copies run at HBM speed (a
    /// 64 MiB chunk in about 30 µs on an H200), so chunks are larger than the host ring's to keep
    /// each hand-over (a host wait and a Vulkan submission) small beside them.
    pub const DEVICE: Geometry = Geometry { chunk: 64 << 20, slots: 4 };

    /// `default`, with [`STAGED_CHUNK_ENV`] and [`STAGED_SLOTS_ENV`] where set.
    pub fn from_env(default: Geometry) -> Geometry {
        use crate::knob::var;
        Geometry {
            chunk: var(STAGED_CHUNK_ENV, "a byte count of 1 or more", |&n: &usize| n >= 1)
                .unwrap_or(default.chunk),
            slots: var(STAGED_SLOTS_ENV, "a slot count of 2 or more", |&n: &usize| n >= 2)
                .unwrap_or(default.slots),
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
        return Err(Error::driver(crate::route::STAGING_HOST, "staged copy", format!("bad ring {geo:?}")));
    }
    let out = pump_chunks(src, dst, len, geo, busy);
    if out.is_err() {
        settle(busy);
    }
    out
}

/// Waits for every copy in `busy` (errors ignored: the first error is already being returned).
pub(crate) fn settle(busy: &mut [Option<Arc<dyn Fence>>]) {
    for f in busy.iter_mut().filter_map(Option::take) {
        let _ = f.wait();
    }
}

/// The body of [`pump`]. Chunk i lives in slot `i % slots`; the source runs up to `slots`
/// chunks ahead of the destination.
///
/// Each first hop is its own call, so each chunk can leave the ring as soon as it has landed.
/// The destination takes chunks in batches: chunk i once it has landed, with every following
/// chunk that has landed too, in one call (a Vulkan submission costs its queue about 16 µs
/// beside a 16 MiB copy's 330 µs on the H200s, `bench/gpu/5-overhead`). After issuing a batch,
/// the slots of the batch before it are refilled as soon as that batch's copies out of them have
/// completed, while this batch keeps the destination busy.
fn pump_chunks(
    src: &mut dyn ChunkEnd,
    dst: &mut dyn ChunkEnd,
    len: usize,
    geo: Geometry,
    busy: &mut [Option<Arc<dyn Fence>>],
) -> Result<()> {
    let n = geo.slots;
    let chunks = len.div_ceil(geo.chunk);
    let span = |i: usize| Span {
        at: (i % n) * geo.chunk,
        off: i * geo.chunk,
        len: geo.chunk.min(len - i * geo.chunk),
    };
    let mut issued = 0;
    let mut fill = |upto: usize, issued: &mut usize, busy: &mut [Option<Arc<dyn Fence>>]| -> Result<()> {
        for k in *issued..upto.min(chunks) {
            if let Some(f) = busy[k % n].take() {
                src.after(&f)?;
            }
            busy[k % n] = src.buffer_to_ring(&[span(k)])?;
            *issued = k + 1;
        }
        Ok(())
    };
    fill(n, &mut issued, busy)?;
    // The last batch issued, whose slots are not refilled yet.
    let mut unfilled: Option<std::ops::Range<usize>> = None;
    let mut i = 0;
    while i < chunks {
        if i == issued {
            // Every chunk issued so far left in the last batch: refill its slots first.
            let last = unfilled.take().map_or(i, |r| r.end);
            fill(last + n, &mut issued, busy)?;
        }
        if let Some(f) = busy[i % n].take() {
            dst.after(&f)?;
        }
        let mut end = i + 1;
        while end < issued && busy[end % n].as_ref().is_none_or(|f| f.is_complete()) {
            busy[end % n] = None;
            end += 1;
        }
        let spans: Vec<Span> = (i..end).map(span).collect();
        let fence = dst.ring_to_buffer(&spans)?;
        (i..end).for_each(|k| busy[k % n] = fence.clone());
        if let Some(r) = unfilled.replace(i..end) {
            fill(r.end + n, &mut issued, busy)?;
        }
        i = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: [u8; 16] = [7; 16];
    const B: [u8; 16] = [9; 16];

    /// No CUDA device on the Vulkan device's GPU, for pairs that must not look for one.
    fn none(_: [u8; 16]) -> std::result::Result<Device, String> {
        Err("no CUDA device of this process is that GPU".into())
    }

    #[test]
    fn one_gpu_shares_its_memory_and_everything_else_stages_through_the_host() {
        let never =
            |_: [u8; 16]| -> std::result::Result<Device, String> { panic!("one GPU: no peer asked for") };
        assert_eq!(choose_bridge(false, Ok(A), Ok(A), never), Bridge::Device);
        // A UUID mismatch (a CUDA GPU and another Vulkan GPU) with no CUDA device of the Vulkan
        // GPU stages.
        let Bridge::Host(why) = choose_bridge(false, Ok(A), Ok(B), none) else {
            panic!("two GPUs shared memory")
        };
        assert!(why.contains("different GPUs") && why.contains("no CUDA device"), "{why}");
        // Forced, or either side unable to share: staged, with the reason.
        assert_eq!(choose_bridge(true, Ok(A), Ok(A), none), Bridge::Host(format!("{BRIDGE_ENV}=host")));
        assert_eq!(choose_bridge(true, Ok(A), Ok(B), none), Bridge::Host(format!("{BRIDGE_ENV}=host")));
        let no_export = "VK_KHR_external_memory_fd is missing".to_string();
        assert_eq!(choose_bridge(false, Ok(A), Err(no_export.clone()), none), Bridge::Host(no_export));
        let no_import = "libcuda lacks symbols cuImportExternalMemory".to_string();
        assert_eq!(choose_bridge(false, Err(no_import.clone()), Ok(A), none), Bridge::Host(no_import));
    }

    #[test]
    fn another_gpu_with_a_cuda_peer_is_reached_through_that_peer() {
        let via = Device::Cuda(3);
        let found = |uuid: [u8; 16]| {
            assert_eq!(uuid, B, "asked for the Vulkan device's GPU");
            Ok(via)
        };
        assert_eq!(choose_bridge(false, Ok(A), Ok(B), found), Bridge::Peer { via });
        let shown = Bridge::Peer { via }.to_string();
        assert!(shown.starts_with("peer (") && shown.contains("cuda:3"), "{shown}");
        // Forced host staging wins over a peer.
        assert_eq!(choose_bridge(true, Ok(A), Ok(B), found), Bridge::Host(format!("{BRIDGE_ENV}=host")));
    }
}
