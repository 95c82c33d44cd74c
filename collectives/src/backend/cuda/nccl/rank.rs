//! One process's rank of a multi-process NCCL job (`NcclComm`): whether CUDA and NCCL can run
//! here, and one NCCL communicator for this rank, on its own stream of the CUDA backend's device.
//!
//! The communicator is *blocking* (`ncclConfig_t::blocking = 1`, as PyTorch's by default): an
//! enqueue launches NCCL's kernels on the calling thread and returns, and no call waits for a
//! peer on the host once the communicator is up, except the setup of a connection NCCL makes
//! lazily on the first call of an algorithm (`NCCL_RUNTIME_CONNECT=0` makes them all at init).
//! Joining runs on a helper thread abandoned at the deadline. Every wait for a call's completion
//! (a CUDA event) is a poll of `ncclCommGetAsyncError` with a deadline: a peer that dies leaves
//! NCCL's kernels spinning; at the deadline (or on an asynchronous error) the communicator is
//! aborted with `ncclCommAbort`, which stops those kernels, and every later call returns the
//! reason. This is NCCL's documented fault-tolerance model, and the one PyTorch's watchdog uses;
//! [`super::watch`] holds who polls and when. An enqueue answering `ncclInProgress` (the
//! environment can force nonblocking communicators) is polled out with the same deadline.

use std::ffi::c_void;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUdeviceptr;

use crate::backend::cuda::event::Event;
use cudarc::nccl::sys::{self, ncclResult_t};

use super::watch::{OpWatch, Shared, async_state, spawn_watchdog};
use super::{RedOp, describe, issue};
use crate::backend::Fence;
use crate::backend::cuda::device::CudaDevice;
use crate::backend::cuda::driver;
use crate::backend::cuda::memory::{self, CudaFence, DevAlloc, Watch};
use crate::backend::nccl::NcclCall;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// libnccl entry points `NcclComm` calls beyond those the CUDA backend's clique checks
/// (`ncclCommInitRankConfig` needs NCCL 2.14 or later).
const NCCL_SYMBOLS: &[&str] = &[
    "ncclGetVersion",
    "ncclGetUniqueId",
    "ncclCommInitRankConfig",
    "ncclCommGetAsyncError",
    "ncclCommAbort",
    "ncclCommFinalize",
    "ncclSend",
    "ncclRecv",
];

/// Why NCCL cannot run in this process, if it cannot: libcuda or libnccl missing or lacking a
/// symbol (the backend's checks, and [`NCCL_SYMBOLS`]). Checked before anything calls into
/// either (cudarc panics otherwise).
pub(crate) fn unavailable() -> Option<String> {
    if let Err(why) = driver::driver_status() {
        return Some(why.clone());
    }
    if let Err(why) = driver::nccl_status() {
        return Some(format!("{why} (NcclComm needs NCCL 2.14 or later)"));
    }
    let lacking = driver::nccl_lacks(NCCL_SYMBOLS);
    (!lacking.is_empty())
        .then(|| format!("libnccl lacks {} (NcclComm needs NCCL 2.14 or later)", lacking.join(", ")))
}

/// A fresh NCCL unique id (rank 0 makes it; the rendezvous hands it out).
pub(crate) fn unique_id() -> std::result::Result<[u8; 128], String> {
    let id = cudarc::nccl::result::get_uniqueid().map_err(|e| describe(e.0))?;
    Ok(id.internal.map(|c| c as u8))
}

/// A call just enqueued: its number and the event recorded after it.
pub(crate) struct Issued {
    pub seq: u64,
    pub event: Arc<Event>,
}

/// This rank's NCCL communicator on its own stream of the backend's device, with a one-byte
/// scratch buffer for barriers.
pub(crate) struct RankComm {
    dev: Arc<CudaDevice>,
    world: usize,
    stream: Arc<CudaStream>,
    shared: Arc<Shared>,
    scratch: Arc<DevAlloc>,
}

impl RankComm {
    /// Joins rank `rank` of `world` on `dev` to the clique named by `id`, waiting at most
    /// `timeout` for every rank to join.
    pub fn init(
        dev: Arc<CudaDevice>,
        (rank, world): (usize, usize),
        id: &[u8],
        timeout: Duration,
    ) -> Result<Self> {
        let id: [u8; 128] = id.try_into().map_err(|_| Error::Comm {
            op: "nccl init",
            msg: format!("the rendezvous gave {} bytes, not a 128-byte NCCL unique id", id.len()),
        })?;
        let device = dev.device;
        dev.bind()?;
        let stream = dev.ctx.new_stream().map_err(driver::err(device, "create the NCCL stream"))?;
        // Barriers all-reduce this byte; its value does not matter.
        let scratch = dev.alloc(1, &stream)?;
        let comm = init_comm(&dev, (rank, world), id, timeout)?;
        let shared = Shared::new(device, timeout, comm);
        spawn_watchdog(&shared)?;
        Ok(RankComm { dev, world, stream, shared, scratch })
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.dev.device
    }

    /// The CUDA backend's device this rank runs on.
    pub fn cuda(&self) -> &Arc<CudaDevice> {
        &self.dev
    }

    /// The stream NCCL runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The watch on the result of call `seq` (named `op`).
    pub fn watch(&self, seq: u64, op: &'static str) -> Arc<dyn Watch> {
        Arc::new(OpWatch { shared: self.shared.clone(), seq, op })
    }

    /// Enqueues `call` of `count` elements of `dtype` from `send` into `recv` on the stream, and
    /// records it in flight.
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
    ) -> Result<Issued> {
        let op = call.name();
        crate::failpoint::hit(self.device(), "nccl call")?;
        let mut st = self.shared.lock();
        let comm = self.shared.usable(&st, op)?;
        self.dev.bind()?;
        let stream = self.stream.cu_stream() as sys::cudaStream_t;
        // SAFETY: `comm` is live under the lock.
        let (redop, made) = unsafe { RedOp::new(call.red_op(), dtype, comm, self.world)? };
        self.shared.settle(&mut st, made, "ncclRedOpCreatePreMulSum")?;
        let (send, recv) = (send as *const c_void, recv as *mut c_void);
        // SAFETY: the caller guarantees the buffers; `comm` is live under the lock.
        let res = unsafe { issue(call, (send, recv), (count, dtype), redop.get(), comm, stream) };
        let issued = self.shared.settle(&mut st, res, op);
        if !st.comm.is_null() {
            // SAFETY: the op was made for this communicator; NCCL keeps what an enqueued call needs.
            unsafe { redop.destroy(st.comm) };
        }
        issued?;
        let event = memory::record(&self.stream, self.device())?;
        let seq = self.shared.push(&mut st, op, event.clone());
        Ok(Issued { seq, event })
    }

    /// Enqueues an all_reduce of the scratch byte and waits for it (polling, bounded by the
    /// timeout): every rank has arrived.
    pub fn barrier(&self) -> Result<()> {
        let p = self.scratch.ptr();
        // SAFETY: the scratch byte is this device's memory, alive as long as `self`.
        let issued = unsafe { self.issue(NcclCall::Barrier, (p, p), 1, DType::U8)? };
        self.wait(issued.seq, issued.event, "barrier")
    }

    /// Waits on the host for call `seq`, complete when `event` is, polling the communicator.
    fn wait(&self, seq: u64, event: Arc<Event>, op: &'static str) -> Result<()> {
        CudaFence::watched(event, &self.stream, self.device(), self.watch(seq, op)).wait()
    }

    /// Aborts the communicator (once) with `why`; every later call is an error carrying it.
    pub fn abort(&self, why: &str) {
        let mut st = self.shared.lock();
        if st.failed.is_none() {
            self.shared.abort_locked(&mut st, "abort", why.to_string());
        }
    }
}

impl Drop for RankComm {
    /// Waits for the calls in flight (bounded by the timeout; aborted past it), then finalizes
    /// and destroys a healthy communicator (aborting it if finalizing does not complete).
    fn drop(&mut self) {
        let last = self.shared.lock().in_flight.back().map(|c| (c.seq, c.event.clone(), c.op));
        if let Some((seq, event, op)) = last {
            let _ = self.wait(seq, event, op);
        }
        let mut st = self.shared.lock();
        if st.comm.is_null() {
            return;
        }
        let _ = self.dev.bind();
        // SAFETY: the communicator is live under the lock; once finalized it is destroyed.
        let mut state = unsafe { sys::ncclCommFinalize(st.comm) };
        let deadline = Instant::now() + self.shared.timeout();
        while state == ncclResult_t::ncclInProgress && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
            // SAFETY: as above.
            state = unsafe { async_state(st.comm) };
        }
        if state != ncclResult_t::ncclSuccess {
            let why = format!("finalizing on drop did not complete: {}", describe(state));
            self.shared.abort_locked(&mut st, "drop", why);
            return;
        }
        // SAFETY: the communicator is finalized, destroyed once, and nulled.
        let _ = unsafe { sys::ncclCommDestroy(st.comm) };
        st.comm = std::ptr::null_mut();
        st.in_flight.clear();
    }
}

/// A blocking `ncclCommInitRankConfig` on a helper thread, waited for at most `timeout`.
///
/// NCCL cannot safely be interrupted in the middle of initialising (aborting frees the
/// communicator the initialising thread still uses), so a rank that never joins leaves the helper
/// blocked and this rank gets an error: the process should then exit. The rendezvous just before
/// has seen every rank alive, which keeps that window short.
fn init_comm(
    dev: &Arc<CudaDevice>,
    (rank, world): (usize, usize),
    id: [u8; 128],
    timeout: Duration,
) -> Result<sys::ncclComm_t> {
    let device = dev.device;
    let fail = |msg: String| Error::Comm {
        op: "nccl init",
        msg: format!("rank {rank} of {world} on {device}: {msg}"),
    };
    let ctx = dev.ctx.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let helper = move || {
        let joined = ctx.bind_to_thread().map_err(|e| format!("bind context: {e:?}")).and_then(|()| {
            let mut config = blocking_config()?;
            let id = sys::ncclUniqueId { internal: id.map(|b| b as std::ffi::c_char) };
            let mut comm: sys::ncclComm_t = std::ptr::null_mut();
            // SAFETY: `comm` and `config` are valid for the call; the id is 128 bytes from rank 0;
            // the device's context is current on this thread.
            let res =
                unsafe { sys::ncclCommInitRankConfig(&mut comm, world as i32, id, rank as i32, &mut config) };
            match (res, comm.is_null()) {
                (ncclResult_t::ncclSuccess, false) => Ok(comm as usize),
                (ncclResult_t::ncclSuccess, true) => Err("NCCL returned no communicator".to_string()),
                (e, _) => Err(describe(e)),
            }
        });
        let _ = tx.send(joined);
    };
    let name = format!("nccl-init-{device}");
    std::thread::Builder::new().name(name).spawn(helper).map_err(|e| fail(format!("no init thread: {e}")))?;
    match rx.recv_timeout(timeout) {
        Ok(joined) => joined.map(|c| c as sys::ncclComm_t).map_err(fail),
        Err(_) => Err(fail(format!(
            "not every rank joined within {timeout:?} (the initialising thread is left blocked in NCCL)"
        ))),
    }
}

/// `NCCL_CONFIG_INITIALIZER` with `blocking = 1`, for the NCCL version loaded (its fields are a
/// prefix of the struct cudarc declares, and NCCL reads no further than its own).
///
/// Blocking, because a nonblocking communicator launches every call from a new thread (NCCL
/// 2.28), which costs tens of microseconds a call; the deadlines are kept on the host instead
/// (see `watch.rs`).
fn blocking_config() -> std::result::Result<sys::ncclConfig_t, String> {
    const UNDEF_INT: i32 = i32::MIN;
    let version = cudarc::nccl::result::get_nccl_version().map_err(|e| describe(e.0))?;
    if version < 21400 {
        return Err(format!("NCCL {version} is older than 2.14, which ncclCommInitRankConfig needs"));
    }
    // SAFETY: every field of the config is an integer or a pointer, for which zero is valid; each
    // is set below to NCCL's "undefined" value, as NCCL_CONFIG_INITIALIZER does.
    let mut c: sys::ncclConfig_t = unsafe { std::mem::zeroed() };
    c.size = std::mem::size_of::<sys::ncclConfig_t>();
    c.magic = 0xcafebeef;
    c.version = version.min(23000) as u32;
    c.blocking = 1;
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
