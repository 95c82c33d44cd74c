//! A Vulkan device's timeline semaphore imported into a CUDA device, so a CUDA stream waits for
//! a Vulkan submission on the GPU instead of the host waiting for it: the ordering half of the
//! device bridge between a CUDA and a Vulkan device of one GPU (`super::interop` maps the
//! memory).
//!
//! Every Vulkan submission signals the next value of its device's timeline, and a Vulkan buffer's
//! fence is that value (`backend/vulkan/submit.rs`). Where the Vulkan device exports its timeline
//! as an opaque file descriptor (`VK_KHR_external_semaphore_fd`, NVIDIA), the CUDA device imports
//! it once (`cuImportExternalSemaphore`) and a move out of a Vulkan buffer has its CUDA stream
//! wait for the value (`cuWaitExternalSemaphoresAsync`). Where the import fails, the reason is
//! warned about once and that pair's waits stay host waits.
//!
//! Only work the device does may wait this way: a host buffer a Vulkan copy wrote (a readback)
//! is read by the host when an upload of it is issued, so `memory::await_on` keeps waiting for it
//! on the host, and the bridge's copy out of Vulkan memory (`interop::copy_from_mapped`) is the
//! one caller.
//!
//! The other direction is not ordered this way yet: a Vulkan submission that reads a buffer a
//! CUDA copy wrote waits for that copy on the host (`backend/vulkan/mod.rs`, `await_foreign`).
//!
//! A stream waiting on a value waits as long as the Vulkan submission runs; a Vulkan device that
//! is lost never signals it. The host wait it replaces was unbounded too (`vkWaitSemaphores`
//! without a timeout).

use std::collections::HashMap;
use std::sync::OnceLock;

use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUexternalSemaphore;
use parking_lot::Mutex;

use super::device::CudaDevice;
use super::driver;
use crate::backend::Fence;
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
    if let Err(reason) = driver::semaphore_status() {
        return Err(Error::driver(dev.device, "import a timeline semaphore", reason.clone()));
    }
    let fd = crate::backend::vulkan::export::timeline_fd(vk)?;
    dev.bind()?;
    // SAFETY: the context is current; the descriptor names `vk`'s timeline, a semaphore of the
    // same GPU (the bridge pairs devices by UUID); the import is kept for the process.
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
