//! The raw layer of `NcclComm`: whether libcuda and libnccl load, one nonblocking NCCL
//! communicator for this process's rank, and the deadlines that turn a dead peer into an error.
//!
//! The communicator is made *nonblocking* (`ncclConfig_t::blocking = 0`): no NCCL call blocks
//! the host, and every wait — for initialisation, for an enqueue that reports `ncclInProgress`,
//! for a collective's completion (a CUDA event) — is a poll of `ncclCommGetAsyncError` with a
//! deadline. A peer that dies leaves NCCL's kernels spinning; at the deadline (or on an
//! asynchronous error) the communicator is aborted with `ncclCommAbort`, which stops those
//! kernels, and every later call returns the reason. This is NCCL's documented fault-tolerance
//! model, and the one PyTorch's watchdog uses.

use std::ffi::{CStr, c_void};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys::{CUdeviceptr, CUresult};
use cudarc::driver::{CudaContext, CudaStream, result as cu};
use cudarc::nccl::sys::{self, ncclResult_t};
use parking_lot::Mutex;

use super::ops::{NcclCall, nccl_type, op_of, scalar_bytes};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// libnccl entry points `NcclComm` calls (checked before the first call: cudarc panics on a
/// missing symbol). `ncclCommInitRankConfig` needs NCCL 2.14 or later.
const NCCL_SYMBOLS: &[&str] = &[
    "ncclGetVersion",
    "ncclGetUniqueId",
    "ncclCommInitRankConfig",
    "ncclCommGetAsyncError",
    "ncclCommAbort",
    "ncclCommFinalize",
    "ncclCommDestroy",
    "ncclGetErrorString",
    "ncclAllReduce",
    "ncclReduce",
    "ncclBroadcast",
    "ncclAllGather",
    "ncclReduceScatter",
    "ncclSend",
    "ncclRecv",
    "ncclGroupStart",
    "ncclGroupEnd",
    "ncclRedOpCreatePreMulSum",
    "ncclRedOpDestroy",
];

/// libcuda entry points used through cudarc here.
const CUDA_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxSetCurrent",
    "cuCtxGetCurrent",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventDestroy_v2",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemsetD8_v2",
    "cuGetErrorString",
    "cuGetErrorName",
];

/// Why NCCL cannot run in this process, if it cannot: libcuda or libnccl missing or lacking a
/// symbol. Checked before anything calls into either (cudarc panics otherwise).
pub(super) fn unavailable() -> Option<String> {
    // SAFETY: `is_culib_present` only tries to open the library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Some("libcuda was not found on the library path (is an NVIDIA driver installed?)".into());
    }
    // SAFETY: as above.
    if !unsafe { sys::is_culib_present() } {
        return Some("libnccl was not found on the library path (install NCCL 2.14 or later)".into());
    }
    // SAFETY: both libraries load (checked above), so `culib()` does not panic; looking a symbol
    // up does not call it.
    let lacking = |names: &[&'static str], cuda: bool| -> Vec<&'static str> {
        let has = |n: &str| unsafe {
            if cuda {
                cudarc::driver::sys::culib().get::<unsafe extern "C" fn()>(n.as_bytes()).is_ok()
            } else {
                sys::culib().get::<unsafe extern "C" fn()>(n.as_bytes()).is_ok()
            }
        };
        names.iter().copied().filter(|n| !has(n)).collect()
    };
    let (cuda, nccl) = (lacking(CUDA_SYMBOLS, true), lacking(NCCL_SYMBOLS, false));
    match (cuda.is_empty(), nccl.is_empty()) {
        (false, _) => Some(format!("libcuda lacks {}", cuda.join(", "))),
        (_, false) => Some(format!("libnccl lacks {} (NCCL 2.14 or later is needed)", nccl.join(", "))),
        _ => None,
    }
}

/// NCCL's text for a result code.
pub(super) fn describe(r: ncclResult_t) -> String {
    // SAFETY: ncclGetErrorString returns a static string for any code.
    let p = unsafe { sys::ncclGetErrorString(r) };
    if p.is_null() {
        return format!("{r:?}");
    }
    // SAFETY: non-null, NUL-terminated, static.
    format!("{r:?}: {}", unsafe { CStr::from_ptr(p) }.to_string_lossy())
}

/// A fresh NCCL unique id (rank 0 makes it; the rendezvous hands it out).
pub(super) fn unique_id() -> std::result::Result<[u8; 128], String> {
    let id = cudarc::nccl::result::get_uniqueid().map_err(|e| describe(e.0))?;
    Ok(id.internal.map(|c| c as u8))
}

/// The communicator, and why it stopped if it did. `comm` is null once aborted or destroyed.
struct Handle {
    comm: sys::ncclComm_t,
    failed: Option<String>,
}

/// This rank's NCCL communicator on its own stream, with a one-byte scratch buffer for barriers.
pub(super) struct RawComm {
    device: Device,
    timeout: Duration,
    handle: Mutex<Handle>,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    scratch: CUdeviceptr,
}

// SAFETY: the NCCL communicator is only touched under `handle`'s mutex (NCCL communicators may
// be used from any thread, one call at a time); the scratch pointer is a plain device address.
unsafe impl Send for RawComm {}
// SAFETY: as above: all shared use of the communicator goes through the mutex.
unsafe impl Sync for RawComm {}

fn cuda_err(device: Device, what: &'static str) -> impl Fn(cu::DriverError) -> Error {
    move |e| Error::driver(device, what, format!("{:?}", e.0))
}

impl RawComm {
    /// Joins rank `rank` of `world` on `device` (`Cuda(local)`) to the clique named by `id`,
    /// waiting at most `timeout` for every rank to join.
    pub fn init(device: Device, (rank, world): (usize, usize), id: &[u8], timeout: Duration) -> Result<Self> {
        let id: [u8; 128] = id.try_into().map_err(|_| Error::Comm {
            op: "nccl init",
            msg: format!("the rendezvous gave {} bytes, not a 128-byte NCCL unique id", id.len()),
        })?;
        let ctx = CudaContext::new(device.ordinal() as usize).map_err(cuda_err(device, "open context"))?;
        let stream = ctx.new_stream().map_err(cuda_err(device, "create stream"))?;
        // SAFETY: the context is current on this thread (CudaContext::new binds it).
        let scratch = unsafe { cu::malloc_sync(1) }.map_err(cuda_err(device, "allocate scratch"))?;
        // SAFETY: `scratch` is one byte of device memory just allocated.
        unsafe { cu::memset_d8_sync(scratch, 0, 1) }.map_err(cuda_err(device, "clear scratch"))?;
        let comm = init_comm(device, (rank, world), id, timeout);
        let handle = Mutex::new(Handle { comm: std::ptr::null_mut(), failed: None });
        let raw = RawComm { device, timeout, handle, ctx, stream, scratch };
        raw.handle.lock().comm = comm?;
        Ok(raw)
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Enqueues `call` of `count` elements of `dtype` from `send` into `recv` on the stream.
    ///
    /// # Safety
    /// `send` and `recv` must be device memory of this rank's device holding what `call` reads
    /// and writes for `count` (see `ops::NcclCall`), alive until the stream has run the call.
    pub unsafe fn issue(
        &self,
        call: NcclCall,
        (send, recv): (CUdeviceptr, CUdeviceptr),
        count: usize,
        dtype: DType,
    ) -> Result<()> {
        let op = call.name();
        let mut h = self.handle.lock();
        let comm = self.usable(&h, op)?;
        self.ctx.bind_to_thread().map_err(cuda_err(self.device, "bind context"))?;
        let (t, stream) = (nccl_type(dtype), self.stream.cu_stream() as sys::cudaStream_t);
        let (send, recv) = (send as *const c_void, recv as *mut c_void);
        let mut redop = op_of(call);
        let custom = call.pre_mul_sum();
        if let Some(scalar) = custom {
            let mut scalar = scalar_bytes(scalar, dtype)?;
            let residence = sys::ncclScalarResidence_t::ncclScalarHostImmediate;
            let p = scalar.as_mut_ptr() as *mut c_void;
            // SAFETY: `scalar` holds one value of `dtype`, read during the call (host immediate);
            // `comm` is live under the lock.
            let res = unsafe { sys::ncclRedOpCreatePreMulSum(&mut redop, p, t, residence, comm) };
            self.settle(&mut h, res, "ncclRedOpCreatePreMulSum")?;
        }
        // SAFETY: the caller guarantees the buffers; `comm` is live under the lock.
        let res = unsafe { call.issue((send, recv), count, t, redop, comm, stream) };
        let issued = self.settle(&mut h, res, op);
        if custom.is_some() && !h.comm.is_null() {
            // SAFETY: the op was made for this communicator; NCCL keeps what an enqueued call needs.
            let _ = unsafe { sys::ncclRedOpDestroy(redop, h.comm) };
        }
        issued
    }

    /// Enqueues an all_reduce of the scratch byte and waits for it: every rank has arrived.
    pub fn barrier(&self) -> Result<()> {
        // SAFETY: the scratch byte is this device's memory, alive as long as `self`.
        unsafe { self.issue(NcclCall::Barrier, (self.scratch, self.scratch), 1, DType::U8)? };
        self.wait_stream("barrier")
    }

    /// Waits until the stream has run everything enqueued so far, polling NCCL for errors;
    /// aborts at the deadline.
    pub fn wait_stream(&self, op: &'static str) -> Result<()> {
        self.ctx.bind_to_thread().map_err(cuda_err(self.device, "bind context"))?;
        let event = self.stream.record_event(None).map_err(cuda_err(self.device, "record event"))?;
        let deadline = Instant::now() + self.timeout;
        let mut pause = Duration::from_micros(20);
        loop {
            // SAFETY: the event is live (owned above) and belongs to the current context.
            match unsafe { cu::event::query(event.cu_event()) } {
                Ok(()) => return Ok(()),
                Err(e) if e.0 == CUresult::CUDA_ERROR_NOT_READY => {}
                Err(e) => return Err(cuda_err(self.device, "wait for NCCL")(e)),
            }
            self.poll(op, deadline)?;
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
        }
    }

    /// Fails (aborting the communicator) if NCCL reports an asynchronous error or `deadline` has
    /// passed.
    fn poll(&self, op: &'static str, deadline: Instant) -> Result<()> {
        let mut h = self.handle.lock();
        let comm = self.usable(&h, op)?;
        let mut state = ncclResult_t::ncclSuccess;
        // SAFETY: `comm` is live under the lock; `state` is a valid out-pointer.
        let res = unsafe { sys::ncclCommGetAsyncError(comm, &mut state) };
        let why = match (res, state) {
            (ncclResult_t::ncclSuccess, ncclResult_t::ncclSuccess | ncclResult_t::ncclInProgress) => {
                if Instant::now() < deadline {
                    return Ok(());
                }
                format!("timed out after {:?} (a peer died or stopped calling {op})", self.timeout)
            }
            (ncclResult_t::ncclSuccess, e) => format!("NCCL reported {}", describe(e)),
            (e, _) => format!("ncclCommGetAsyncError failed: {}", describe(e)),
        };
        Err(self.abort_locked(&mut h, op, why))
    }

    /// Settles a call's result: `ncclInProgress` is waited out (nonblocking communicators
    /// return it while enqueueing), an error aborts.
    fn settle(&self, h: &mut Handle, res: ncclResult_t, op: &'static str) -> Result<()> {
        let deadline = Instant::now() + self.timeout;
        let mut res = res;
        loop {
            match res {
                ncclResult_t::ncclSuccess => return Ok(()),
                ncclResult_t::ncclInProgress if Instant::now() < deadline => {
                    std::thread::yield_now();
                    // SAFETY: `h.comm` is live (checked by the caller under the same lock).
                    let state = unsafe { async_state(h.comm) };
                    res = state;
                }
                ncclResult_t::ncclInProgress => {
                    let why = format!("still in progress after {:?}", self.timeout);
                    return Err(self.abort_locked(h, op, why));
                }
                e => return Err(self.abort_locked(h, op, describe(e))),
            }
        }
    }

    /// The live communicator, or the reason it stopped.
    fn usable(&self, h: &Handle, op: &'static str) -> Result<sys::ncclComm_t> {
        match (&h.failed, h.comm.is_null()) {
            (Some(why), _) => Err(Error::Comm { op, msg: why.clone() }),
            (None, true) => Err(Error::Comm { op, msg: "the communicator was destroyed".into() }),
            (None, false) => Ok(h.comm),
        }
    }

    /// Aborts the communicator (once) with `why`; returns the error every later call gets.
    pub fn abort(&self, why: &str) {
        let mut h = self.handle.lock();
        if h.failed.is_none() {
            self.abort_locked(&mut h, "abort", why.to_string());
        }
    }

    fn abort_locked(&self, h: &mut Handle, op: &'static str, why: String) -> Error {
        let msg = format!("rank on {}: {op}: {why}; the NCCL communicator was aborted", self.device);
        h.failed.get_or_insert(msg.clone());
        if !h.comm.is_null() {
            // SAFETY: the communicator is live and, nulled here, never used again.
            let _ = unsafe { sys::ncclCommAbort(h.comm) };
            h.comm = std::ptr::null_mut();
        }
        Error::Comm { op, msg }
    }
}

/// The communicator's asynchronous state (`ncclInProgress` while an operation settles).
///
/// # Safety
/// `comm` must be a live communicator.
unsafe fn async_state(comm: sys::ncclComm_t) -> ncclResult_t {
    let mut state = ncclResult_t::ncclSuccess;
    // SAFETY: as the caller guarantees; `state` is a valid out-pointer.
    let res = unsafe { sys::ncclCommGetAsyncError(comm, &mut state) };
    if res == ncclResult_t::ncclSuccess { state } else { res }
}

/// `ncclCommInitRankConfig` with `blocking = 0`, polled until every rank has joined or the
/// deadline passes (then aborted).
fn init_comm(
    device: Device,
    (rank, world): (usize, usize),
    id: [u8; 128],
    timeout: Duration,
) -> Result<sys::ncclComm_t> {
    let fail = |msg: String| Error::Comm {
        op: "nccl init",
        msg: format!("rank {rank} of {world} on {device}: {msg}"),
    };
    let mut config = nonblocking_config().map_err(fail)?;
    let id = sys::ncclUniqueId { internal: id.map(|b| b as std::ffi::c_char) };
    let mut comm: sys::ncclComm_t = std::ptr::null_mut();
    // SAFETY: `comm` and `config` are valid for the call; the id is 128 bytes from rank 0.
    let res = unsafe { sys::ncclCommInitRankConfig(&mut comm, world as i32, id, rank as i32, &mut config) };
    let deadline = Instant::now() + timeout;
    let mut state = res;
    while state == ncclResult_t::ncclInProgress && !comm.is_null() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
        // SAFETY: `comm` was returned by the init call above and is not yet aborted.
        state = unsafe { async_state(comm) };
    }
    if state == ncclResult_t::ncclSuccess && !comm.is_null() {
        return Ok(comm);
    }
    if !comm.is_null() {
        // SAFETY: the communicator is live and is not used again.
        let _ = unsafe { sys::ncclCommAbort(comm) };
    }
    Err(fail(match state {
        ncclResult_t::ncclInProgress => format!("not every rank joined within {timeout:?}"),
        e => describe(e),
    }))
}

/// `NCCL_CONFIG_INITIALIZER` with `blocking = 0`, for the NCCL version loaded (its fields are a
/// prefix of the struct cudarc declares, so declaring the loaded version reads only those).
fn nonblocking_config() -> std::result::Result<sys::ncclConfig_t, String> {
    const UNDEF_INT: i32 = i32::MIN;
    let version = cudarc::nccl::result::get_nccl_version().map_err(|e| describe(e.0))?;
    if version < 21400 {
        return Err(format!("NCCL {version} is older than 2.14, which nonblocking communicators need"));
    }
    // SAFETY: every field of the config is an integer or a pointer, for which zero is valid; each
    // is set below to NCCL's "undefined" value, as NCCL_CONFIG_INITIALIZER does.
    let mut c: sys::ncclConfig_t = unsafe { std::mem::zeroed() };
    c.size = std::mem::size_of::<sys::ncclConfig_t>();
    c.magic = 0xcafebeef;
    c.version = version.min(23000) as u32;
    c.blocking = 0;
    for f in [&mut c.cgaClusterSize, &mut c.minCTAs, &mut c.maxCTAs, &mut c.splitShare] {
        *f = UNDEF_INT;
    }
    for f in [&mut c.trafficClass, &mut c.collnetEnable, &mut c.CTAPolicy, &mut c.shrinkShare] {
        *f = UNDEF_INT;
    }
    for f in [&mut c.nvlsCTAs, &mut c.nChannelsPerNetPeer, &mut c.nvlinkCentricSched] {
        *f = UNDEF_INT;
    }
    for f in [&mut c.graphUsageMode, &mut c.numRmaCtx, &mut c.maxP2pPeers] {
        *f = UNDEF_INT;
    }
    Ok(c)
}

impl Drop for RawComm {
    /// A healthy communicator is finalized then destroyed (bounded by the timeout; aborted past
    /// it) and its scratch byte freed; a failed one was already aborted, and its scratch byte is
    /// left to the process's end rather than risk waiting on a stream a dead peer may still block.
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        let h = self.handle.get_mut();
        if h.comm.is_null() {
            if h.failed.is_none() {
                // SAFETY: the communicator never came up, so nothing ever used the scratch byte.
                let _ = unsafe { cu::free_sync(self.scratch) };
            }
            return;
        }
        // SAFETY: the communicator is live; once finalized it is destroyed and never used.
        let mut state = unsafe { sys::ncclCommFinalize(h.comm) };
        let deadline = Instant::now() + self.timeout;
        while state == ncclResult_t::ncclInProgress && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
            // SAFETY: as above.
            state = unsafe { async_state(h.comm) };
        }
        let healthy = state == ncclResult_t::ncclSuccess;
        // SAFETY: as above; abort when finalizing did not complete.
        let _ = unsafe { if healthy { sys::ncclCommDestroy(h.comm) } else { sys::ncclCommAbort(h.comm) } };
        h.comm = std::ptr::null_mut();
        if healthy && self.stream.synchronize().is_ok() {
            // SAFETY: the scratch byte came from cuMemAlloc and nothing uses it any more.
            let _ = unsafe { cu::free_sync(self.scratch) };
        }
    }
}
