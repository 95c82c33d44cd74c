//! Pooled CUDA events: each recorded point of a stream takes an event from its device's pool,
//! and the event goes back to the pool when its last holder drops it.
//!
//! An event remembers once its work is seen complete (by a query or a wait), and answers later
//! queries and waits without the driver. A buffer's reader list is pruned by querying its
//! readers, and a query costs about 1–2 µs: on eight virtual devices of one H200, those queries
//! were half the host time of a 4 KiB all_reduce (`bench/gpu/15-two-shot`), though every
//! one of them asked about work already waited for.
//!
//! Every CUDA operation records an event (its output's fence, a staging slot's use, an NCCL
//! call's completion), so creating and destroying one per operation put two driver calls on
//! every operation of every collective. An event nobody holds any more can be recorded again: a
//! stream wait already issued on it waits for the recording it saw (`cuStreamWaitEvent` captures
//! the event's state when it is called), and no host thread can be waiting on it.

use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream, DriverError};
use parking_lot::Mutex;

use super::device::CudaDevice;
use super::driver;
use super::flag::{self, Flag};
use crate::device::Device;
use crate::error::Result;

/// Free events a device's pool keeps; more are destroyed when given back.
const POOL_MAX: usize = 1024;

/// The free events of one device.
#[derive(Default)]
struct Pool {
    free: Mutex<Vec<CudaEvent>>,
}

/// A recorded event of `device`'s pool.
pub(crate) struct Event {
    event: ManuallyDrop<CudaEvent>,
    pool: Arc<Pool>,
    /// Set once the recorded work is seen complete.
    done: AtomicBool,
    /// A flag the recorded kernel stores when done ([`super::flag`]), if it took one.
    flag: Option<Flag>,
}

impl Event {
    /// Whether the recorded work is complete: known already, or asked of the driver. (Shadows
    /// [`CudaEvent::try_is_complete`], so every query through an `Event` is remembered.)
    pub fn try_is_complete(&self) -> std::result::Result<bool, DriverError> {
        if self.done.load(Ordering::Acquire) || self.flag.as_ref().is_some_and(Flag::reached) {
            return Ok(true);
        }
        let done = self.event.try_is_complete()?;
        if done {
            self.done.store(true, Ordering::Release);
        }
        Ok(done)
    }

    /// Blocks until the recorded work is complete, unless it is known to be: spinning on its
    /// kernel's flag for up to [`flag::SPIN_FOR`] where it has one, then (or else) in the
    /// driver. (Shadows [`CudaEvent::synchronize`].)
    pub fn synchronize(&self) -> std::result::Result<(), DriverError> {
        if self.done.load(Ordering::Acquire) {
            return Ok(());
        }
        let flagged = match &self.flag {
            Some(f) => flag::spin(f, flag::SPIN_FOR, || self.event.try_is_complete())?,
            None => false,
        };
        if !flagged {
            self.event.synchronize()?;
        }
        self.done.store(true, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
impl Event {
    /// The flag its kernel stores, if it took one.
    pub fn flag(&self) -> Option<&Flag> {
        self.flag.as_ref()
    }
}

impl Deref for Event {
    type Target = CudaEvent;

    fn deref(&self) -> &CudaEvent {
        &self.event
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: `event` is taken once, here, and not used after.
        let event = unsafe { ManuallyDrop::take(&mut self.event) };
        let mut free = self.pool.free.lock();
        if free.len() < POOL_MAX {
            free.push(event);
        }
    }
}

/// `device`'s pool.
fn pool(device: Device) -> Arc<Pool> {
    static POOLS: OnceLock<Mutex<HashMap<Device, Arc<Pool>>>> = OnceLock::new();
    POOLS.get_or_init(Default::default).lock().entry(device).or_default().clone()
}

/// Makes `stream` (of `device`, in the bound context) wait on the device for `event`: later work
/// on it runs after the work the event was recorded after.
pub(crate) fn wait_on(stream: &CudaStream, event: &CudaEvent, device: Device) -> Result<()> {
    // SAFETY: the stream and the event are alive for the call.
    unsafe { driver::stream_wait(stream.cu_stream(), event.cu_event()) }
        .map_err(driver::err(device, "wait on event"))
}

/// Records an event on `stream` (of `device`) after the work issued so far.
pub(crate) fn record(stream: &CudaStream, device: Device) -> Result<Arc<Event>> {
    record_flagged(stream, device, None)
}

/// Issues a kernel step on `stream` of `dev` offered a completion flag — the stream's numbered
/// one ([`super::numbers`]) where it has them, else one of the pool ([`super::flag`]) where `dev`
/// can have one; `issue` returns whether its last launch stores it — then records the event after
/// it, holding the flag where it is stored (a flag not stored goes back unused).
pub(crate) fn issue_flagged(
    dev: &CudaDevice,
    stream: &Arc<CudaStream>,
    issue: impl FnOnce(Option<&Flag>) -> Result<bool>,
) -> Result<Arc<Event>> {
    let flag = match dev.numbers(stream) {
        Some(numbers) => numbers.issue(dev, stream, issue)?,
        None => {
            let flag = Flag::take(dev);
            let stored = issue(flag.as_ref())?;
            flag.filter(|_| stored)
        }
    };
    record_flagged(stream, dev.device, flag)
}

/// [`record`] after a kernel that stores `flag` when done, which host waits spin on.
fn record_flagged(stream: &CudaStream, device: Device, flag: Option<Flag>) -> Result<Arc<Event>> {
    crate::failpoint::hit(device, "cuda event record")?;
    let pool = pool(device);
    let reused = pool.free.lock().pop();
    let event = match reused {
        Some(e) => e,
        None => stream
            .context()
            .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .map_err(driver::err(device, "create event"))?,
    };
    event.record(stream).map_err(driver::err(device, "record event"))?;
    Ok(Arc::new(Event { event: ManuallyDrop::new(event), pool, done: AtomicBool::new(false), flag }))
}
