//! One CUDA device: its context, streams, memory pool and compiled kernels, opened once per
//! process and shared by everything that uses the device.
//!
//! Streams: `compute` runs kernels, `copy_in` runs copies onto the device (host → device and peer
//! → device), `copy_out` runs copies off it (device → host), so uploads, downloads and kernels of
//! independent steps overlap. Dependencies between them are events (see [`super::memory`]).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys::{self, CUdevice_attribute};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr};
use parking_lot::Mutex;

use super::memory::DevAlloc;
use super::numbers::Numbers;
use super::relaunch::Graphs;
use super::reuse::{Parked, Reuse};
use super::staging::Ring;
use super::{driver, flag, nvrtc, virt};
use crate::device::Device;
use crate::error::{Error, Result};

/// A memory pool handle (the driver's pools are thread-safe).
struct PoolHandle(sys::CUmemoryPool);
// SAFETY: a CUmemoryPool is an opaque handle the driver allows from any thread.
unsafe impl Send for PoolHandle {}
// SAFETY: as above.
unsafe impl Sync for PoolHandle {}

/// The most threads a kernel launched as one block runs (CUDA's limit per block).
const ONE_BLOCK_MOST: u64 = 1024;

/// A loaded kernel.
#[derive(Clone)]
pub(crate) struct Func {
    /// The function.
    pub f: CudaFunction,
    /// The most threads one block of it runs: [`ONE_BLOCK_MOST`], or fewer where the kernel's
    /// registers do not allow as many (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`), in whole warps.
    pub one_block: u64,
}

/// An opened CUDA device.
pub(crate) struct CudaDevice {
    pub device: Device,
    /// The physical GPU behind this logical device ([`super::virt`]).
    pub physical: u32,
    pub ctx: Arc<CudaContext>,
    /// Each stream's graphs of one kernel launch, through which its launches go where graph
    /// launches are on ([`super::relaunch`]). Declared before the kernels' modules, so the
    /// graphs that launch their functions are freed before the modules unload.
    pub graphs: Graphs,
    pub compute: Arc<CudaStream>,
    pub copy_in: Arc<CudaStream>,
    pub copy_out: Arc<CudaStream>,
    /// Streaming multiprocessors (sizes kernel grids).
    pub sms: u32,
    /// Compute capability (major, minor).
    pub arch: (i32, i32),
    /// Device memory in bytes.
    pub total_mem: usize,
    /// Whether kernels can read pinned host memory at its host address (unified addressing).
    pub unified: bool,
    pool: PoolHandle,
    /// Freed allocations kept for reuse on their stream.
    reuse: Arc<Reuse>,
    functions: Mutex<HashMap<String, Func>>,
    modules: Mutex<HashMap<String, Arc<CudaModule>>>,
    /// Double-buffered pinned staging for host → device copies of pageable memory.
    pub stage_in: Mutex<Ring>,
    /// Double-buffered pinned staging for chunked device → host transfers.
    pub stage_out: Mutex<Ring>,
    /// The compute stream's block counter ([`CudaDevice::block_counter`]) and, after it, the
    /// last number of its numbered flags: the two words and their address, once allocated;
    /// `None` where that failed.
    counter: OnceLock<Option<(CudaSlice<u32>, sys::CUdeviceptr)>>,
    /// The compute stream's numbered flags ([`CudaDevice::numbers`]), once asked for.
    numbers: OnceLock<Option<Numbers>>,
}

type Table = Mutex<HashMap<u32, Arc<CudaDevice>>>;

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(Default::default)
}

/// The CUDA device behind `device`, opened on first use; an internal error naming `op` for a
/// device of another kind.
pub(crate) fn of(device: Device, op: &str) -> Result<Arc<CudaDevice>> {
    match device {
        Device::Cuda(n) => get(n),
        _ => Err(Error::internal(op, format!("{device} is not a CUDA device"))),
    }
}

/// The device `Cuda(ordinal)`, opened on first use.
pub(crate) fn get(ordinal: u32) -> Result<Arc<CudaDevice>> {
    let device = Device::Cuda(ordinal);
    if let Err(reason) = driver::driver_status() {
        return Err(Error::DeviceUnavailable { device, reason: reason.clone() });
    }
    let physical = virt::physical(ordinal).map_err(|reason| Error::DeviceUnavailable { device, reason })?;
    let mut t = table().lock();
    if let Some(d) = t.get(&ordinal) {
        return Ok(d.clone());
    }
    let d = Arc::new(CudaDevice::open(ordinal, physical)?);
    t.insert(ordinal, d.clone());
    Ok(d)
}

impl CudaDevice {
    fn open(ordinal: u32, physical: u32) -> Result<Self> {
        let device = Device::Cuda(ordinal);
        let e = |op| driver::err(device, op);
        let ctx = CudaContext::new(physical as usize).map_err(e("create context"))?;
        let stream = || ctx.new_stream().map_err(e("create stream"));
        let (compute, copy_in, copy_out) = (stream()?, stream()?, stream()?);
        let sms = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(e("query device"))?;
        let arch = ctx.compute_capability().map_err(e("query device"))?;
        let total_mem = ctx.total_mem().map_err(e("query device"))?;
        let unified = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) == Ok(1);
        // SAFETY: the device handle is the context's own, and the context is current (new()
        // binds it to this thread).
        let pool = unsafe { driver::default_pool(ctx.cu_device()) }.map_err(e("configure memory pool"))?;
        Ok(CudaDevice {
            device,
            physical,
            sms: sms.max(1) as u32,
            arch,
            total_mem,
            unified,
            pool: PoolHandle(pool),
            reuse: Arc::default(),
            functions: Mutex::default(),
            modules: Mutex::default(),
            stage_in: Mutex::new(Ring::default()),
            stage_out: Mutex::new(Ring::default()),
            counter: OnceLock::new(),
            numbers: OnceLock::new(),
            graphs: Graphs::new(ctx.clone()),
            ctx,
            compute,
            copy_in,
            copy_out,
        })
    }

    /// Makes the device's context current on the calling thread.
    pub fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(driver::err(self.device, "bind context"))
    }

    /// `bytes` of device memory, ordered on (and later freed or parked on) `stream`: an
    /// allocation of that size parked from `stream` if there is one ([`super::reuse`]), else
    /// the pool's.
    ///
    /// When the pool is exhausted, frees everything parked, waits for the device's queued work
    /// (so pending frees land), releases the pool's cached memory and tries once more; then
    /// [`Error::OutOfMemory`].
    pub fn alloc(&self, bytes: usize, stream: &Arc<CudaStream>) -> Result<Arc<DevAlloc>> {
        if let Some(parked) = self.reuse.take(stream, bytes) {
            return self.reclaim(parked, bytes, stream);
        }
        self.alloc_with(bytes, stream, Some(self.reuse.clone()))
    }

    /// As [`CudaDevice::alloc`], but never parked when dropped: for streams that may end before
    /// the process does (a communicator's), whose parked memory no later request would take.
    pub fn alloc_unparked(&self, bytes: usize, stream: &Arc<CudaStream>) -> Result<Arc<DevAlloc>> {
        self.alloc_with(bytes, stream, None)
    }

    /// Bytes parked for reuse (see `crate::failpoint::resources`).
    #[cfg(feature = "failpoints")]
    pub fn reuse_bytes(&self) -> u64 {
        self.reuse.bytes() as u64
    }

    /// A new allocation from the pool, returned to `reuse` when dropped if given.
    fn alloc_with(
        &self,
        bytes: usize,
        stream: &Arc<CudaStream>,
        reuse: Option<Arc<Reuse>>,
    ) -> Result<Arc<DevAlloc>> {
        if bytes == 0 {
            return Ok(Arc::new(DevAlloc::new(0, 0, self.device, stream.clone(), None)));
        }
        crate::failpoint::hit(self.device, "cuda alloc")?;
        self.bind()?;
        // SAFETY: the stream belongs to this device's context, which is current.
        let first = unsafe { driver::alloc_async(stream.cu_stream(), bytes) };
        let ptr = match first {
            Ok(p) => p,
            Err(e) if driver::is_oom(e) || bytes > self.total_mem => {
                self.reuse.empty();
                self.synchronize()?;
                // SAFETY: the pool is this device's default pool, live for the process.
                unsafe { driver::trim_pool(self.pool.0) }.map_err(driver::err(self.device, "trim pool"))?;
                // SAFETY: as for the first attempt.
                unsafe { driver::alloc_async(stream.cu_stream(), bytes) }.map_err(|e| self.oom(bytes, e))?
            }
            Err(e) => return Err(driver::err(self.device, "allocate device memory")(e)),
        };
        Ok(Arc::new(DevAlloc::new(ptr, bytes, self.device, stream.clone(), reuse)))
    }

    /// A parked allocation (from `stream`) in use again: `stream` waits for its last readers.
    fn reclaim(&self, parked: Parked, bytes: usize, stream: &Arc<CudaStream>) -> Result<Arc<DevAlloc>> {
        if !parked.readers.is_empty() {
            // On failure `parked` drops, which frees it after its readers.
            self.bind()?;
            for e in &parked.readers {
                super::event::wait_on(stream, e, self.device)?;
            }
        }
        let reuse = Some(self.reuse.clone());
        Ok(Arc::new(DevAlloc::new(parked.hand_on(), bytes, self.device, stream.clone(), reuse)))
    }

    /// How many freed allocations of `bytes` are parked from `stream`.
    #[cfg(test)]
    pub fn parked(&self, stream: &CudaStream, bytes: usize) -> usize {
        self.reuse.parked(stream, bytes)
    }

    fn oom(&self, bytes: usize, e: cudarc::driver::DriverError) -> Error {
        if driver::is_oom(e) || bytes > self.total_mem {
            let detail = format!("{}; the device has {} bytes", driver::describe(e), self.total_mem);
            return Error::OutOfMemory { device: self.device, bytes, detail };
        }
        driver::err(self.device, "allocate device memory")(e)
    }

    /// The word of device memory in which a flagged launch of more than one block on `stream`
    /// counts its finished blocks, so that the last stores the flag (`signal_done` in
    /// `kernels.cu`, [`super::flag`]): the compute stream's, allocated zeroed on first use — its
    /// launches run one after another, and each leaves it at zero — or 0 (such launches store no
    /// flag) for any other stream, or where it could not be allocated. The word after it holds
    /// the stream's last number ([`super::numbers`]).
    pub fn block_counter(&self, stream: &Arc<CudaStream>) -> sys::CUdeviceptr {
        if !Arc::ptr_eq(stream, &self.compute) {
            return 0;
        }
        let counter = self.counter.get_or_init(|| {
            let words = self.compute.alloc_zeros::<u32>(2).ok()?;
            let (ptr, _) = words.device_ptr(&self.compute);
            Some((words, ptr))
        });
        counter.as_ref().map_or(0, |&(_, ptr)| ptr)
    }

    /// The numbered flags of `stream` ([`super::numbers`]): the compute stream's, made on first
    /// use; `None` for any other stream, where kernels take no flags ([`flag::taking`]), or where
    /// the stream has no block counter or no slot could be had.
    pub fn numbers(&self, stream: &Arc<CudaStream>) -> Option<&Numbers> {
        if !Arc::ptr_eq(stream, &self.compute) || !flag::taking() || !self.unified {
            return None;
        }
        let numbers = self.numbers.get_or_init(|| match self.block_counter(stream) {
            0 => None,
            ctr => Numbers::new(self, ctr),
        });
        numbers.as_ref()
    }

    /// Waits for all work queued on the device's streams.
    pub fn synchronize(&self) -> Result<()> {
        for s in [&self.compute, &self.copy_in, &self.copy_out] {
            s.synchronize().map_err(driver::err(self.device, "synchronize"))?;
        }
        Ok(())
    }

    /// The kernel `name`, compiling and loading its module on first use.
    pub fn function(&self, name: &str) -> Result<Func> {
        if let Some(f) = self.functions.lock().get(name) {
            return Ok(f.clone());
        }
        let module = self.module(nvrtc::group_of(name))?;
        let f = module.load_function(name).map_err(driver::err(self.device, "load kernel"))?;
        let most = f.max_threads_per_block().map_err(driver::err(self.device, "kernel attributes"))?;
        // Whole warps, at least one; and no more than a block may hold.
        let one_block = (most.max(32) as u64 / 32 * 32).min(ONE_BLOCK_MOST);
        let func = Func { f, one_block };
        self.functions.lock().insert(name.to_string(), func.clone());
        Ok(func)
    }

    fn module(&self, group: &str) -> Result<Arc<CudaModule>> {
        let mut modules = self.modules.lock();
        if let Some(m) = modules.get(group) {
            return Ok(m.clone());
        }
        let image = nvrtc::image(group, self.arch, self.device)?;
        let m = self.ctx.load_module(image.to_ptx()).map_err(driver::err(self.device, "load kernels"))?;
        modules.insert(group.to_string(), m.clone());
        Ok(m)
    }
}

/// Enables direct access between two devices, both ways, once per pair: peer access between the
/// contexts and access to each other's memory pool (pool memory ignores context peer access).
/// Returns whether `a` can now read `b`'s memory in place: always for two logical devices of one
/// GPU; for two GPUs, where the hardware allows. Devices that cannot reach each other directly
/// still copy, staged by the driver.
pub(crate) fn enable_peer(a: &CudaDevice, b: &CudaDevice) -> Result<bool> {
    static DONE: OnceLock<Mutex<HashMap<(Device, Device), bool>>> = OnceLock::new();
    let done = DONE.get_or_init(Default::default);
    if a.physical == b.physical {
        return Ok(true);
    }
    if let Some(&on) = done.lock().get(&(a.device, b.device)) {
        return Ok(on);
    }
    for (x, y) in [(a, b), (b, a)] {
        let e = driver::err(x.device, "enable peer access");
        let on = driver::can_access_peer(x.ctx.cu_device(), y.ctx.cu_device()).map_err(&e)?;
        if on {
            x.bind()?;
            // SAFETY: `y.ctx` is a live context other than the current one (`x`'s).
            unsafe { driver::enable_peer(y.ctx.cu_ctx()) }.map_err(&e)?;
            // SAFETY: `y.pool` is `y`'s default pool, live for the process.
            unsafe { driver::grant_pool_access(y.pool.0, x.ctx.cu_device()) }.map_err(&e)?;
        }
        done.lock().insert((x.device, y.device), on);
    }
    Ok(done.lock()[&(a.device, b.device)])
}
