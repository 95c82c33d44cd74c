//! The rings: host memory registered with CUDA and imported into Vulkan, one per (source,
//! destination) pair, made on first use and kept for the process.

use std::alloc::Layout;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::backend::chain::{Geometry, pump, settle};
use crate::backend::vulkan::bridge::{self, HostView};
use crate::backend::{Buffer, Fence, cuda};
use crate::device::Device;
use crate::error::{Error, Result};

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
    /// CUDA's registration; dropped (unregistered) before the slab is freed.
    cuda: cuda::Registered,
    /// Vulkan's import; it holds the slab too, for copies still in flight when the ring drops.
    vk: HostView,
    _slab: Arc<Slab>,
}

impl Ring {
    /// A ring of [`Geometry::from_env`] between CUDA device `cu` and Vulkan device `vk`.
    fn new(cu: Device, vk: Device) -> Result<Ring> {
        let align = bridge::import_alignment(vk)?;
        let align = align.max(4096).next_power_of_two();
        let geo = Geometry::from_env();
        let slab = Arc::new(Slab::new(geo.bytes().div_ceil(align) * align, align)?);
        // Both drivers pin the same pages; should one of them refuse pages the other has pinned
        // already, the other order is tried too.
        let (cuda, view) = match Self::share(&slab, cu, vk, true) {
            Ok(both) => both,
            Err(first) => Self::share(&slab, cu, vk, false)
                .map_err(|second| Error::driver(vk, "staged copy ring", format!("{first}; {second}")))?,
        };
        Ok(Ring { geo, busy: vec![None; geo.slots], cuda, vk: view, _slab: slab })
    }

    /// `slab` registered with CUDA device `cu` and imported into Vulkan device `vk`, CUDA first
    /// or not.
    fn share(
        slab: &Arc<Slab>,
        cu: Device,
        vk: Device,
        cuda_first: bool,
    ) -> Result<(cuda::Registered, HostView)> {
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

    /// `src` moved to `to` through the ring.
    fn run(&mut self, src: &Buffer, to: Device) -> Result<Buffer> {
        let bytes = src.bytes();
        match src.device {
            Device::Cuda(_) => {
                let mut from = cuda::source_end(src, &self.cuda)?;
                let mut into = bridge::dest_end(to, bytes, &self.vk)?;
                pump(&mut from, &mut into, bytes, self.geo, &mut self.busy)?;
                Ok(into.into_buffer(src.dtype, src.len))
            }
            _ => {
                let mut from = bridge::source_end(src, &self.vk)?;
                let mut into = cuda::dest_end(to, bytes, &self.cuda)?;
                pump(&mut from, &mut into, bytes, self.geo, &mut self.busy)?;
                into.into_buffer(src.dtype, src.len)
            }
        }
    }
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
    let (cu, vk) = if matches!(from, Device::Cuda(_)) { (from, to) } else { (to, from) };
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

/// The pair's ring shape, or why it has none.
pub(super) fn geometry(from: Device, to: Device) -> std::result::Result<Geometry, String> {
    entry(from, to).map(|r| r.lock().geo)
}
