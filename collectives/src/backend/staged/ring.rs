//! The rings: host memory registered with CUDA and imported into Vulkan, one per (source,
//! destination) pair, made on first use and kept for the process.

use std::alloc::Layout;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::backend::chain::{
    Bridge, Geometry, StagedTransport, bridge_forced_host, choose_bridge, pump, settle,
};
use crate::backend::vulkan::bridge::{self, RingView};
use crate::backend::{Buffer, Fence, cuda};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::log::{LogLevel, log};

/// Page-aligned host memory, zeroed, freed on drop.
pub(super) struct Slab {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the slab owns its allocation; it is written and read only by device copies that the
// ring orders (and by tests through raw pointers, likewise ordered).
unsafe impl Send for Slab {}
// SAFETY: as above.
unsafe impl Sync for Slab {}

impl Slab {
    /// `len` zeroed bytes aligned to `align` (a power of two).
    pub fn new(len: usize, align: usize) -> Result<Slab> {
        let oom =
            |detail: String| Error::OutOfMemory { device: crate::route::STAGING_HOST, bytes: len, detail };
        let layout = Layout::from_size_align(len.max(1), align).map_err(|e| oom(e.to_string()))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or_else(|| oom("the staged chain's ring".into()))?;
        Ok(Slab { ptr, layout })
    }

    /// The first byte.
    pub fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.layout.size()
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// One pair's ring and the copies still using its slots.
struct Ring {
    geo: Geometry,
    busy: Vec<Option<Arc<dyn Fence>>>,
    /// CUDA's access to the ring; dropped (unregistered, unmapped) before the Vulkan side.
    cuda: CudaSide,
    /// Vulkan's view: host memory imported (it holds the slab too, for copies still in flight
    /// when the ring drops), or its own memory exported to CUDA.
    vk: RingView,
}

/// How CUDA reaches a ring.
enum CudaSide {
    /// Host memory CUDA has registered (the host ring), and the memory itself.
    Host { cuda: cuda::Registered, _slab: Arc<Slab> },
    /// The Vulkan device's memory, imported (the device ring: both devices are one GPU).
    Device(cuda::ImportedMem),
}

impl Ring {
    /// The ring between CUDA device `cu` and Vulkan device `vk`: in device memory when the pair
    /// is one GPU ([`Bridge::Device`]), else (or when that fails, which is warned about) in host
    /// memory — also for the peer bridge, whose large moves go direct ([`super::direct`]).
    fn new(cu: Device, vk: Device) -> Result<Ring> {
        let bridge = choice(cu, vk);
        match &bridge {
            Bridge::Host(why) => log!(LogLevel::Info, "bridge {cu} <-> {vk}: through the host ({why})"),
            Bridge::Peer { via } => log!(
                LogLevel::Info,
                "bridge {cu} <-> {vk}: through {via} ({vk}'s GPU, a peer of {cu}) for buffers CUDA maps, the host ring otherwise"
            ),
            Bridge::Device => match Self::on_device(cu, vk) {
                Ok(ring) => {
                    log!(
                        LogLevel::Info,
                        "bridge {cu} <-> {vk}: through the device (one GPU: CUDA maps Vulkan's memory)"
                    );
                    return Ok(ring);
                }
                Err(e) => crate::knob::warn_once(
                    &format!("bridge {cu} {vk}"),
                    &format!(
                        "{cu} and {vk} are one GPU, but sharing its memory failed ({e}); staging through the host"
                    ),
                ),
            },
        }
        Self::on_host(cu, vk)
    }

    /// A ring of [`Geometry::DEVICE`] in `vk`'s memory, imported into `cu`.
    fn on_device(cu: Device, vk: Device) -> Result<Ring> {
        let geo = Geometry::from_env(Geometry::DEVICE);
        let bytes = geo.chunk.checked_mul(geo.slots).ok_or_else(|| Error::TooLarge {
            what: "the staged chain's ring",
            size: format!("{} chunks of {} bytes", geo.slots, geo.chunk),
        })?;
        crate::backend::chain::fail_share()?;
        let ex = bridge_export(vk, bytes)?;
        // SAFETY: the descriptor names `ex.size` bytes of `vk`'s memory, the same GPU as `cu`
        // (UUIDs match); the import drops before the view frees the memory (field order).
        let mem = unsafe { cuda::ImportedMem::new(cu, ex.fd, ex.size, bytes) }?;
        Ok(Ring { geo, busy: vec![None; geo.slots], cuda: CudaSide::Device(mem), vk: ex.view })
    }

    /// A ring of [`Geometry::DEFAULT`] in host memory, registered with `cu` and imported into
    /// `vk`.
    fn on_host(cu: Device, vk: Device) -> Result<Ring> {
        let align = bridge::import_alignment(vk)?;
        let align = align.max(4096).next_power_of_two();
        let geo = Geometry::from_env(Geometry::DEFAULT);
        let slab = Arc::new(Slab::new(geo.bytes().div_ceil(align) * align, align)?);
        // Both drivers pin the same pages; should one of them refuse pages the other has pinned
        // already, the other order is tried too.
        let (cuda, view) = match Self::share(&slab, cu, vk, true) {
            Ok(both) => both,
            Err(first) => Self::share(&slab, cu, vk, false)
                .map_err(|second| Error::driver(vk, "staged copy ring", format!("{first}; {second}")))?,
        };
        let cuda = CudaSide::Host { cuda, _slab: slab };
        Ok(Ring { geo, busy: vec![None; geo.slots], cuda, vk: view })
    }

    /// `slab` registered with CUDA device `cu` and imported into Vulkan device `vk`, CUDA first
    /// or not.
    fn share(
        slab: &Arc<Slab>,
        cu: Device,
        vk: Device,
        cuda_first: bool,
    ) -> Result<(cuda::Registered, RingView)> {
        // SAFETY: the slab outlives the registration (the ring drops it first, after waiting for
        // its copies).
        let register = || unsafe { cuda::Registered::new(cu, slab.ptr(), slab.len()) };
        // SAFETY: the slab is aligned as the device asks and kept alive by the import.
        let import = || unsafe { bridge::import(vk, slab.ptr(), slab.len(), slab.clone()) };
        if cuda_first {
            let cuda = register()?;
            Ok((cuda, import()?))
        } else {
            let view = import()?;
            Ok((register()?, view))
        }
    }

    /// How this ring moves data.
    fn transport(&self) -> StagedTransport {
        let (chunk_bytes, slots) = (self.geo.chunk, self.geo.slots);
        match self.cuda {
            CudaSide::Host { .. } => StagedTransport::Pipelined { chunk_bytes, slots },
            CudaSide::Device(_) => StagedTransport::Device { chunk_bytes, slots },
        }
    }

    /// `src` moved to `to` through the ring.
    fn run(&mut self, src: &Buffer, to: Device) -> Result<Buffer> {
        let bytes = src.bytes();
        let (_, vk) = super::cuda_and_vulkan(src.device, to);
        let mem = match &self.cuda {
            CudaSide::Host { cuda, .. } => cuda::RingMem::Host(cuda),
            CudaSide::Device(mem) => cuda::RingMem::Device { mem, vk },
        };
        match src.device {
            Device::Cuda(_) => {
                let mut from = cuda::source_end(src, mem)?;
                let mut into = bridge::dest_end(to, bytes, &self.vk)?;
                pump(&mut from, &mut into, bytes, self.geo, &mut self.busy)?;
                Ok(into.into_buffer(src.dtype, src.len))
            }
            _ => {
                let mut from = bridge::source_end(src, &self.vk)?;
                let mut into = cuda::dest_end(to, bytes, mem)?;
                pump(&mut from, &mut into, bytes, self.geo, &mut self.busy)?;
                into.into_buffer(src.dtype, src.len)
            }
        }
    }
}

/// `bytes` of Vulkan device `vk`'s memory exported for CUDA.
fn bridge_export(vk: Device, bytes: usize) -> Result<crate::backend::vulkan::export::Exported> {
    crate::backend::vulkan::export::export(vk, bytes)
}

/// The bridge of each CUDA / Vulkan pair decided so far.
static CHOICES: OnceLock<Mutex<HashMap<(Device, Device), Bridge>>> = OnceLock::new();

/// The bridge between CUDA device `cu` and Vulkan device `vk` if [`choice`] has decided it;
/// decides nothing.
pub(super) fn decided(cu: Device, vk: Device) -> Option<Bridge> {
    CHOICES.get()?.lock().get(&(cu, vk)).cloned()
}

/// The bridge between CUDA device `cu` and Vulkan device `vk` ([`choose_bridge`] on their UUIDs,
/// and for two GPUs on the CUDA devices of the Vulkan device's GPU), decided once per pair.
pub(super) fn choice(cu: Device, vk: Device) -> Bridge {
    let mut made = CHOICES.get_or_init(Default::default).lock();
    made.entry((cu, vk))
        .or_insert_with(|| {
            let cuda = cuda::uuid(cu).map_err(|e| e.to_string());
            asked(cu, cuda, crate::backend::vulkan::export::uuid(vk).map_err(|e| e.to_string()))
        })
        .clone()
}

/// Whether the pair's bridge is (or, once decided, will be) the device bridge: [`choice`]'s
/// answer where it is decided, else the same question asked of the drivers' device lists, which
/// opens no device and records nothing (planning touches no device and decides no bridge).
pub(super) fn will_be_device(from: Device, to: Device) -> bool {
    let (cu, vk) = super::cuda_and_vulkan(from, to);
    decided(cu, vk).unwrap_or_else(|| listed(cu, vk)) == Bridge::Device
}

/// The bridge [`choice`] would decide for the pair, asked of the drivers' device lists: opens no
/// device, records nothing.
pub(super) fn listed(cu: Device, vk: Device) -> Bridge {
    let vulkan = crate::backend::vulkan::export::listed_uuid(vk).map_err(|e| e.to_string());
    asked(cu, cuda::gpu_uuid(cu), vulkan)
}

/// The bridge [`choice`] decides for the pair from the GPUs' UUIDs (`cuda`, `vulkan`, or why
/// either is unknown).
fn asked(
    cu: Device,
    cuda: std::result::Result<[u8; 16], String>,
    vulkan: std::result::Result<[u8; 16], String>,
) -> Bridge {
    let cuda = cuda.and_then(|u| {
        let import = cuda::driver::interop_status().clone();
        import.map(|()| u).map_err(|e| format!("CUDA cannot import memory: {e}"))
    });
    choose_bridge(bridge_forced_host(), cuda, vulkan, |uuid| cuda::peer_on(cu, uuid))
}

impl Drop for Ring {
    fn drop(&mut self) {
        settle(&mut self.busy);
    }
}

/// A pair's ring, or why it has none.
type Entry = std::result::Result<Arc<Mutex<Ring>>, String>;

/// The ring of `from → to`, made on first use. A failure to make it is remembered (drivers do not
/// gain extensions mid-process) unless it was for lack of memory, which may be there next time:
/// then this call has no ring, and the next one tries again.
fn entry(from: Device, to: Device) -> Entry {
    static TABLE: OnceLock<Mutex<HashMap<(Device, Device), Entry>>> = OnceLock::new();
    let mut table = TABLE.get_or_init(Default::default).lock();
    if let Some(e) = table.get(&(from, to)) {
        return e.clone();
    }
    let (cu, vk) = super::cuda_and_vulkan(from, to);
    let made = Ring::new(cu, vk);
    if let Err(e @ Error::OutOfMemory { .. }) = &made {
        return Err(e.to_string());
    }
    let e = made.map(|r| Arc::new(Mutex::new(r))).map_err(|e| e.to_string());
    table.insert((from, to), e.clone());
    e
}

/// `src` moved to `to` through the pair's ring, or `None` when the pair has no ring.
pub(super) fn transfer(src: &Buffer, to: Device) -> Option<Result<Buffer>> {
    let ring = entry(src.device, to).ok()?;
    let mut ring = ring.lock();
    Some(ring.run(src, to))
}

/// `src` moved to `to` through a new ring of the pair, made outside the table (tests), with how
/// that ring moves data.
#[cfg(test)]
pub(super) fn fresh_transfer(src: &Buffer, to: Device) -> Result<(StagedTransport, Buffer)> {
    let (cu, vk) = super::cuda_and_vulkan(src.device, to);
    let mut ring = Ring::new(cu, vk)?;
    let out = ring.run(src, to)?;
    out.wait()?;
    Ok((ring.transport(), out))
}

/// How the pair moves data, or why it has no ring: its ring's way, or for the peer bridge
/// ([`Bridge::Peer`]) direct moves beside a host ring.
pub(super) fn transport(from: Device, to: Device) -> std::result::Result<StagedTransport, String> {
    let ring = entry(from, to).map(|r| r.lock().transport())?;
    let (cu, vk) = super::cuda_and_vulkan(from, to);
    Ok(match (ring, choice(cu, vk)) {
        (StagedTransport::Pipelined { chunk_bytes, slots }, Bridge::Peer { via }) => {
            StagedTransport::Peer { via, chunk_bytes, slots }
        }
        (ring, _) => ring,
    })
}

/// Whether the pair is one GPU whose memory the two devices share ([`Bridge::Device`]); makes
/// no ring (most of its moves go direct, [`super::direct`], and the ring is made on first use).
pub(super) fn on_device(from: Device, to: Device) -> bool {
    let (cu, vk) = super::cuda_and_vulkan(from, to);
    choice(cu, vk) == Bridge::Device
}

/// Whether the pair's large moves go direct, as one CUDA copy ([`Bridge::Device`] or
/// [`Bridge::Peer`], [`super::direct`]); makes no ring.
pub(super) fn direct(from: Device, to: Device) -> bool {
    let (cu, vk) = super::cuda_and_vulkan(from, to);
    !matches!(choice(cu, vk), Bridge::Host(_))
}
