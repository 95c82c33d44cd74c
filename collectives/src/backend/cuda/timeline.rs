//! Vulkan timeline semaphores imported into a CUDA device, so that neither API's work waits for
//! the other's on the host: the ordering half of the device bridge between a CUDA and a Vulkan
//! device of one GPU (`super::interop` maps the memory).
//!
//! - **Vulkan, then CUDA.** Every Vulkan submission signals the next value of its device's
//!   timeline, and a Vulkan buffer's fence is that value (`backend/vulkan/submit.rs`). Where the
//!   Vulkan device exports its timeline as an opaque file descriptor
//!   (`VK_KHR_external_semaphore_fd`, NVIDIA), the CUDA device imports it once
//!   (`cuImportExternalSemaphore`) and a move out of a Vulkan buffer has its CUDA stream wait for
//!   the value (`cuWaitExternalSemaphoresAsync`, [`await_vulkan`]).
//! - **CUDA, then Vulkan.** A CUDA copy into a Vulkan buffer (the bridge's move to Vulkan) then
//!   signals the next value of a timeline the Vulkan device made for that CUDA stream to signal
//!   (`cuSignalExternalSemaphoresAsync`, [`signal_vulkan`]); the buffer's fence carries the value,
//!   and a Vulkan submission reading the buffer waits for it on the device
//!   (`backend/vulkan/export.rs`, `foreign_waits`). Each CUDA copy stream signals a timeline of its
//!   own, so its values are signalled in the order they are issued.
//!
//! Where an import fails, the reason is warned about once and that pair's waits stay host waits.
//!
//! Only work the device does may wait this way: a host buffer a Vulkan copy wrote (a readback)
//! is read by the host when an upload of it is issued, so `memory::await_on` keeps waiting for it
//! on the host, and the bridge's copy out of Vulkan memory (`interop::copy_from_mapped`) is the
//! one caller of [`await_vulkan`].
//!
//! A stream or a queue waiting on a value waits as long as the other API's work runs; a device
//! that is lost never signals it. The host waits they replace were unbounded too
//! (`vkWaitSemaphores` without a timeout, `cuEventSynchronize`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUexternalSemaphore;
use parking_lot::Mutex;

use super::device::CudaDevice;
use super::driver;
use crate::backend::Fence;
use crate::backend::vulkan::export::Inbound;
use crate::device::Device;
use crate::error::{Error, Result};

/// A Vulkan device's timeline semaphore imported into one CUDA device, kept for the process
/// (like the devices themselves).
#[derive(Clone, Copy)]
struct ImportedTimeline(CUexternalSemaphore);

// SAFETY: the handle is a plain value the driver lets any thread use with the context bound.
unsafe impl Send for ImportedTimeline {}
// SAFETY: as above.
unsafe impl Sync for ImportedTimeline {}

/// Every pair's import, or `None` where it failed.
type Imports = Mutex<HashMap<(Device, Device), Option<ImportedTimeline>>>;

fn imports() -> &'static Imports {
    static IMPORTS: OnceLock<Imports> = OnceLock::new();
    IMPORTS.get_or_init(Default::default)
}

/// The timeline of Vulkan device `vk` imported into `dev`, on first use; `None` when it cannot
/// be (warned about once, with the reason), and then for the rest of the process.
fn timeline(dev: &CudaDevice, vk: Device) -> Option<ImportedTimeline> {
    #[cfg(test)]
    if FAIL_TIMELINE.with(|f| f.get()) {
        return None;
    }
    let mut imports = imports().lock();
    let entry = imports.entry((dev.device, vk)).or_insert_with(|| {
        let warn = |e: &Error| {
            let key = format!("timeline {} {vk}", dev.device);
            crate::knob::warn_once(&key, &format!("{} waits for {vk} on the host: {e}", dev.device));
        };
        import_timeline(dev, vk).inspect_err(warn).ok()
    });
    *entry
}

/// Whether `vk`'s timeline is imported into `cu` (so moves out of `vk` wait on the GPU).
#[cfg(test)]
pub(crate) fn imported(cu: Device, vk: Device) -> bool {
    imports().lock().get(&(cu, vk)).is_some_and(Option::is_some)
}

#[cfg(test)]
thread_local! {
    /// Set by a test on its own thread: no Vulkan timeline is imported for that thread's waits
    /// (as when the driver refuses the import), so they are host waits.
    pub(crate) static FAIL_TIMELINE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn import_timeline(dev: &CudaDevice, vk: Device) -> Result<ImportedTimeline> {
    import(dev, crate::backend::vulkan::export::timeline_fd(vk)?)
}

/// Imports the timeline semaphore `fd` names (a Vulkan device's, of the same GPU) into `dev`.
fn import(dev: &CudaDevice, fd: std::os::fd::OwnedFd) -> Result<ImportedTimeline> {
    if let Err(reason) = driver::semaphore_status() {
        return Err(Error::driver(dev.device, "import a timeline semaphore", reason.clone()));
    }
    dev.bind()?;
    // SAFETY: the context is current; the descriptor names a timeline semaphore of a Vulkan device
    // of the same GPU (the bridge pairs devices by UUID); the import is kept for the process.
    let sem = unsafe { driver::import_timeline(fd) }
        .map_err(driver::err(dev.device, "cuImportExternalSemaphore"))?;
    Ok(ImportedTimeline(sem))
}

/// Makes `stream` (of `dev`) wait, on the device, for the Vulkan submission `fence` stands for:
/// `true` when it does; `false`, having done nothing, when `fence` is not a Vulkan submission's
/// or that device's timeline cannot be imported into `dev` — the caller waits on the host then.
///
/// A fence already complete needs no wait (`true`, nothing issued).
pub(crate) fn await_vulkan(dev: &CudaDevice, stream: &CudaStream, fence: &dyn Fence) -> Result<bool> {
    let Some((vk, value)) = crate::backend::vulkan::export::timeline_point(fence) else { return Ok(false) };
    let Some(t) = timeline(dev, vk) else { return Ok(false) };
    if fence.is_complete() {
        return Ok(true);
    }
    dev.bind()?;
    // SAFETY: `t` was imported into this context and is kept for the process; the stream belongs
    // to `dev`; the value was submitted (a fence is made after its submission), so the wait ends
    // when that submission does.
    unsafe { driver::wait_timeline(t.0, value, stream.cu_stream()) }
        .map_err(driver::err(dev.device, "wait on a Vulkan timeline"))?;
    Ok(true)
}

/// As [`await_vulkan`] for `stream` of `dev` where the Vulkan device's timeline is imported into
/// `owner`, a CUDA device of the Vulkan device's GPU (the peer bridge's `via`): `owner`'s download
/// stream waits for the value and `stream` waits for that stream by an event, so the relay
/// costs no host wait. When `owner` is `dev`, [`await_vulkan`] itself.
pub(crate) fn await_vulkan_from(
    owner: &CudaDevice,
    dev: &CudaDevice,
    stream: &CudaStream,
    fence: &dyn Fence,
) -> Result<bool> {
    if owner.device == dev.device {
        return await_vulkan(dev, stream, fence);
    }
    let relay = &owner.copy_out;
    if !await_vulkan(owner, relay, fence)? {
        return Ok(false);
    }
    let relayed = super::memory::record(relay, owner.device)?;
    dev.bind()?;
    // SAFETY: both streams and the event are alive for the call; a wait captures the event's
    // state when issued, so the pooled event may be recorded again after it.
    unsafe { driver::stream_wait(stream.cu_stream(), relayed.cu_event()) }
        .map_err(driver::err(dev.device, "wait on a relayed Vulkan timeline"))?;
    Ok(true)
}

/// One CUDA stream's signals to one Vulkan device: the timeline that device made for it,
/// imported here, and the last value signalled.
struct Outbound {
    imported: ImportedTimeline,
    to: Inbound,
    last: u64,
}

/// Every (CUDA device, Vulkan device, stream)'s signals, or `None` where they cannot be made.
type Signals = Mutex<HashMap<(Device, Device, usize), Option<Outbound>>>;

fn signals() -> &'static Signals {
    static SIGNALS: OnceLock<Signals> = OnceLock::new();
    SIGNALS.get_or_init(Default::default)
}

/// Makes `stream`, one of `dev`'s two copy streams, signal the next value of the timeline `vk`
/// reads that stream's copies by, once the work issued to it so far has run: each stream signals
/// a timeline of its own, so its values are signalled in the order they are issued. Returns that
/// timeline and value, for the fence of that work; `None`, having done nothing, when the pair
/// cannot signal (warned about once, with the reason; `vk`'s submissions then wait for the work
/// on the host) or `stream` is not a copy stream of `dev`.
pub(crate) fn signal_vulkan(
    dev: &CudaDevice,
    stream: &Arc<CudaStream>,
    vk: Device,
) -> Option<(Inbound, u64)> {
    #[cfg(test)]
    if FAIL_TIMELINE.with(|f| f.get()) {
        return None;
    }
    if !Arc::ptr_eq(stream, &dev.copy_out) && !Arc::ptr_eq(stream, &dev.copy_in) {
        return None;
    }
    let mut signals = signals().lock();
    let entry = signals.entry((dev.device, vk, stream.cu_stream() as usize)).or_insert_with(|| {
        let made = crate::backend::vulkan::export::inbound_timeline(vk)
            .and_then(|(to, fd)| Ok(Outbound { imported: import(dev, fd)?, to, last: 0 }));
        made.inspect_err(|e| signal_failed(dev.device, vk, e)).ok()
    });
    let out = entry.as_mut()?;
    let value = out.last + 1;
    // SAFETY: the semaphore was imported into this context and is kept for the process; the
    // stream belongs to `dev` and lives as long; `value` is above every value issued before on
    // this stream, the only one signalling this timeline.
    let signalled = dev.bind().and_then(|()| {
        unsafe { driver::signal_timeline(out.imported.0, value, stream.cu_stream()) }
            .map_err(driver::err(dev.device, "signal a Vulkan timeline"))
    });
    match signalled {
        Ok(()) => {
            out.last = value;
            Some((out.to, value))
        }
        Err(e) => {
            signal_failed(dev.device, vk, &e);
            *entry = None;
            None
        }
    }
}

/// Warns, once per pair, that `vk` waits for `cu`'s copies on the host, and why.
fn signal_failed(cu: Device, vk: Device, e: &Error) {
    crate::knob::warn_once(
        &format!("signal {cu} {vk}"),
        &format!("{vk} waits for {cu}'s copies on the host: {e}"),
    );
}

/// How many of `cu`'s streams signal `vk` (so `vk` waits for their copies on the device).
#[cfg(test)]
pub(crate) fn signalling(cu: Device, vk: Device) -> usize {
    let signals = signals().lock();
    signals.iter().filter(|((c, v, _), out)| (*c, *v) == (cu, vk) && out.is_some()).count()
}
