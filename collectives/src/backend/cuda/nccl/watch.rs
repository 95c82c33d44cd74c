//! Liveness of `NcclComm`: the calls in flight, their deadlines, and who aborts the communicator.
//!
//! Every call this rank issues is numbered and its completion event kept ([`InFlight`]) until it
//! is seen complete. Polling ([`Shared::poll`]) checks `ncclCommGetAsyncError` and the oldest
//! call's deadline; on an error or past the deadline it aborts the communicator with
//! `ncclCommAbort`, which stops NCCL's kernels, so every wait on them — on the host or on the
//! device — ends. Three parties poll:
//!
//! - a host wait on a call's result (its fence carries an [`OpWatch`], polled every
//!   millisecond of the wait), and `barrier`, which is such a wait;
//! - a watchdog thread, every tick while calls are in flight: it covers calls nobody waits on
//!   on the host (a send; a result a CUDA kernel waits on on the device), so even those end by
//!   their deadline;
//! - the enqueue of the next call, which finds the communicator aborted.
//!
//! Aborting marks every call not yet complete as failed (`failed_from`): its result's host
//! wait, and any CUDA work issued afterwards that would read it, get [`Error::Comm`], never its
//! undefined data. CUDA work issued *before* the abort that waits on a failed call's result on
//! the device runs once the abort has stopped NCCL's kernels, on undefined data, and its own
//! fence cannot tell; the program learns of the failure from the next NcclComm call, the next
//! host wait on any NCCL result of this rank, or `barrier` — all errors from then on.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crate::backend::cuda::event::Event;
use cudarc::nccl::sys::{self, ncclResult_t};
use parking_lot::{Mutex, MutexGuard};

use super::describe;
use crate::backend::cuda::memory::Watch;
use crate::device::Device;
use crate::error::{Error, Result};

/// A call in flight: its number, its completion event and its deadline.
pub(super) struct InFlight {
    pub seq: u64,
    pub event: Arc<Event>,
    pub deadline: Instant,
    pub op: &'static str,
}

/// The communicator's mutable state.
pub(super) struct State {
    /// The communicator; null once aborted or destroyed.
    pub comm: sys::ncclComm_t,
    /// Why the communicator stopped, if it failed.
    pub failed: Option<String>,
    /// The next call's number.
    pub next: u64,
    /// Calls not yet seen complete, oldest first.
    pub in_flight: VecDeque<InFlight>,
}

// SAFETY: the communicator handle is used only under the mutex holding this state (NCCL allows a
// communicator on any thread, one call at a time); the events are thread-safe.
unsafe impl Send for State {}

/// What the users of one communicator share: the rank's calls, the watches on their results,
/// and the watchdog.
pub(super) struct Shared {
    device: Device,
    timeout: Duration,
    state: Mutex<State>,
    /// Calls numbered from this one on failed (`u64::MAX` while none has).
    failed_from: AtomicU64,
}

impl Shared {
    /// The state of a communicator `comm` just joined on `device`, whose calls may take `timeout`.
    pub fn new(device: Device, timeout: Duration, comm: sys::ncclComm_t) -> Arc<Shared> {
        let state = State { comm, failed: None, next: 0, in_flight: VecDeque::new() };
        let failed_from = AtomicU64::new(u64::MAX);
        Arc::new(Shared { device, timeout, state: Mutex::new(state), failed_from })
    }

    /// How long a call may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Locks the state.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// The live communicator, or why it stopped.
    pub fn usable(&self, st: &State, op: &'static str) -> Result<sys::ncclComm_t> {
        match (&st.failed, st.comm.is_null()) {
            (Some(why), _) => Err(Error::Comm { op, msg: why.clone() }),
            (None, true) => Err(Error::Comm { op, msg: "the communicator was destroyed".into() }),
            (None, false) => Ok(st.comm),
        }
    }

    /// Records call `op`, complete when `event` is, as in flight; returns its number.
    pub fn push(&self, st: &mut State, op: &'static str, event: Arc<Event>) -> u64 {
        // A failed query is left to the next poll, which aborts on it.
        let _ = prune(st);
        let seq = st.next;
        st.next += 1;
        st.in_flight.push_back(InFlight { seq, event, deadline: Instant::now() + self.timeout, op });
        seq
    }

    /// Checks the communicator: aborts it on an asynchronous error, or when the oldest call in
    /// flight is past its deadline. Whether a given call failed is [`Shared::verdict`]'s.
    pub fn poll(&self) {
        let mut st = self.state.lock();
        if st.comm.is_null() {
            return;
        }
        if let Err(why) = prune(&mut st) {
            self.abort_locked(&mut st, "nccl", why);
            return;
        }
        let Some(oldest) = st.in_flight.front() else { return };
        let (seq, op, deadline) = (oldest.seq, oldest.op, oldest.deadline);
        // SAFETY: the communicator is live (checked above) and used under the lock.
        let why = match unsafe { async_error(st.comm) } {
            Ok(()) if Instant::now() < deadline => return,
            Ok(()) => format!(
                "call {seq} ({op}) did not complete within {:?} (a peer died, or stopped making the \
                 same calls in the same order)",
                self.timeout
            ),
            Err(why) => why,
        };
        self.abort_locked(&mut st, op, why);
    }

    /// The error of call `seq` (named `op`), if it failed.
    pub fn verdict(&self, seq: u64, op: &'static str) -> Option<Error> {
        if seq < self.failed_from.load(Ordering::Acquire) {
            return None;
        }
        let why = self.state.lock().failed.clone();
        Some(Error::Comm { op, msg: why.unwrap_or_else(|| "the communicator was aborted".into()) })
    }

    /// Aborts the communicator (once) because of `why`, found during `op`; marks the calls not
    /// yet complete as failed; returns the error every later call gets.
    pub fn abort_locked(&self, st: &mut State, op: &'static str, why: String) -> Error {
        let msg = format!("rank on {}: {op}: {why}; the NCCL communicator was aborted", self.device);
        let msg = st.failed.get_or_insert(msg).clone();
        // Marked before the abort: the abort completes the failed calls' events.
        let first_bad = st.in_flight.iter().find(|c| !complete(&c.event)).map_or(st.next, |c| c.seq);
        self.failed_from.fetch_min(first_bad, Ordering::AcqRel);
        if !st.comm.is_null() {
            // SAFETY: the communicator is live and, nulled here, never used again.
            let _ = unsafe { sys::ncclCommAbort(st.comm) };
            st.comm = std::ptr::null_mut();
        }
        st.in_flight.clear();
        Error::Comm { op, msg }
    }

    /// Settles an enqueue's result: `ncclInProgress` is polled out until the deadline (a
    /// nonblocking communicator, which the environment can force, returns it while it sets a
    /// call up), an error aborts.
    pub fn settle(&self, st: &mut State, res: ncclResult_t, op: &'static str) -> Result<()> {
        let deadline = Instant::now() + self.timeout;
        let mut res = res;
        loop {
            match res {
                ncclResult_t::ncclSuccess => return Ok(()),
                ncclResult_t::ncclInProgress if Instant::now() < deadline && !st.comm.is_null() => {
                    std::thread::yield_now();
                    // SAFETY: the communicator is live (checked in the guard) and used under the lock.
                    res = unsafe { async_state(st.comm) };
                }
                ncclResult_t::ncclInProgress => {
                    let why = format!("still in progress after {:?}", self.timeout);
                    return Err(self.abort_locked(st, op, why));
                }
                e => return Err(self.abort_locked(st, op, describe(e))),
            }
        }
    }
}

/// Whether `event` is complete (a query error counts as not).
fn complete(event: &Event) -> bool {
    matches!(event.try_is_complete(), Ok(true))
}

/// Drops the calls seen complete from the front; a failed query is the device's error.
fn prune(st: &mut State) -> std::result::Result<(), String> {
    while let Some(c) = st.in_flight.front() {
        match c.event.try_is_complete() {
            Ok(true) => drop(st.in_flight.pop_front()),
            Ok(false) => break,
            Err(e) => return Err(format!("the device failed: {e:?}")),
        }
    }
    Ok(())
}

/// The communicator's asynchronous state (`ncclInProgress` while an operation settles).
///
/// # Safety
/// `comm` must be a live communicator, used by no other thread meanwhile.
pub(super) unsafe fn async_state(comm: sys::ncclComm_t) -> ncclResult_t {
    let mut state = ncclResult_t::ncclSuccess;
    // SAFETY: as the caller guarantees; `state` is a valid out-pointer.
    let res = unsafe { sys::ncclCommGetAsyncError(comm, &mut state) };
    if res == ncclResult_t::ncclSuccess { state } else { res }
}

/// `Ok` while the communicator is healthy (or still settling a call), else NCCL's error.
///
/// # Safety
/// As [`async_state`].
unsafe fn async_error(comm: sys::ncclComm_t) -> std::result::Result<(), String> {
    // SAFETY: as the caller guarantees.
    match unsafe { async_state(comm) } {
        ncclResult_t::ncclSuccess | ncclResult_t::ncclInProgress => Ok(()),
        e => Err(format!("NCCL reported {}", describe(e))),
    }
}

/// The watch on one call's result: failed once the call is marked failed; polling polls the
/// communicator.
pub(super) struct OpWatch {
    pub shared: Arc<Shared>,
    pub seq: u64,
    pub op: &'static str,
}

impl Watch for OpWatch {
    fn failed(&self) -> Option<Error> {
        self.shared.verdict(self.seq, self.op)
    }

    fn poll(&self) -> Result<()> {
        self.shared.poll();
        match self.failed() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Starts the watchdog of `shared`: every tick (a twentieth of the timeout, 10 to 100 ms) it
/// polls while calls are in flight; it ends with the communicator.
pub(super) fn spawn_watchdog(shared: &Arc<Shared>) -> Result<()> {
    let tick = (shared.timeout / 20).clamp(Duration::from_millis(10), Duration::from_millis(100));
    let weak: Weak<Shared> = Arc::downgrade(shared);
    let name = format!("nccl-watchdog-{}", shared.device);
    let spawned = std::thread::Builder::new().name(name).spawn(move || {
        loop {
            std::thread::sleep(tick);
            let Some(s) = weak.upgrade() else { return };
            if s.state.lock().comm.is_null() {
                return;
            }
            s.poll();
        }
    });
    let msg = |e: std::io::Error| format!("cannot start the watchdog thread: {e}");
    spawned.map(drop).map_err(|e| Error::Comm { op: "nccl init", msg: msg(e) })
}
