//! When a GPU backend reads an owned host buffer by DMA instead of staging it: the policy the CUDA
//! backend's page-locking (`cuda/register.rs`) and the Vulkan backend's host import
//! (`vulkan/register.rs`) share, and the bound on the bytes they hold locked between them.
//!
//! Why one policy: locking (or importing) pages costs more than one staged upload, so it pays only
//! for a buffer uploaded again; the host pool keeps the locking with the allocation
//! (`backend/host.rs`), so a loop that uploads a buffer of the same size each step locks it once.
//! An allocation is locked once twice its size has been uploaded from it, in uploads of at least
//! [`LOCK_MIN_UPLOAD`]: two of the whole buffer, or four of its halves, since a slice of it (a
//! view, `backend/view.rs`) reads the memory it slices. Both backends lock whole allocations
//! ([`HostPages`]), and each allocation holds one locking: the first backend to lock it reads it
//! by DMA, another stages.
//!
//! ```no_run
//! # fn main() -> collectives::Result<()> {
//! use collectives::{Device, Tensor};
//! let host = Tensor::from_vec(vec![1.0f32; 1 << 22], [1 << 22], Device::Cpu(0))?;
//! for _ in 0..3 {
//!     // The first upload is staged; the second locks the buffer's pages, and reads them by DMA.
//!     host.copy_to_device(Device::Cuda(0))?.realize()?;
//! }
//! # Ok(())
//! # }
//! ```

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::host::{Declined, HostPages, HostPin};
use super::{Buffer, Mem};
use crate::device::Device;
use crate::log::{LogLevel, log};

/// Environment variable bounding the bytes of owned host buffers the GPU backends keep locked for
/// DMA at a time (CUDA's page-locked buffers and Vulkan's imported ones together; `0` turns
/// locking off; 4 GiB unless set). Read once per process.
pub const HOST_REGISTER_ENV: &str = "COLLECTIVES_HOST_REGISTER_BYTES";

/// The bound where [`HOST_REGISTER_ENV`] is unset.
const DEFAULT_LIMIT: usize = 4 << 30;

/// Uploads smaller than this are always staged: the staging copy is cheap there. On the H200 a
/// staged upload of 1 MiB to CUDA took 120–290 µs (the host's fill of the staging slot; its DMA
/// about 20), locking 4 MiB 0.4 ms (`bench/gpu/18-locked`, runs f and a).
pub(crate) const LOCK_MIN_UPLOAD: usize = 1 << 20;

/// How many times its owner's size must have been uploaded from an allocation before it is locked
/// (two: one upload does not say it is reused).
const LOCK_AFTER: u64 = 2;

/// Bytes locked now, by every backend.
static LOCKED: AtomicUsize = AtomicUsize::new(0);

/// The bound on [`LOCKED`].
fn limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        crate::knob::var(HOST_REGISTER_ENV, "a byte count (0 turns locking off)", |_: &usize| true)
            .unwrap_or(DEFAULT_LIMIT)
    })
}

/// The buffer whose host memory `b` is, and the byte of it `b` starts at: `b` itself at 0, or for
/// a view (of a view…) the buffer it views.
pub(crate) fn owner_of(b: &Buffer) -> (&Buffer, usize) {
    let (mut owner, mut offset) = (b, 0);
    while let Mem::Host(h) = &owner.mem
        && let Some((of, at)) = h.viewed()
    {
        (owner, offset) = (of, offset + at);
    }
    (owner, offset)
}

/// The locking to read host buffer `b` through in an upload, counting the upload: the one the
/// allocation of `owner` (`b`'s [`owner_of`]) has, or the one `make` (given the allocation's
/// address and length) attaches now where the allocation is due (see the module doc). `None`
/// where `b` is staged: it is small, its memory is no owned allocation of pages, or it is not due.
pub(crate) fn pin_for_upload<'a>(
    b: &Buffer,
    owner: &'a Buffer,
    make: impl FnOnce(*mut u8, usize) -> Result<Box<dyn HostPin>, Declined>,
) -> Option<&'a dyn HostPin> {
    let Mem::Host(h) = &owner.mem else { return None };
    let pages = h.pages()?;
    if b.bytes() < LOCK_MIN_UPLOAD {
        return None;
    }
    let uploaded = pages.note_upload(b.bytes());
    if let Some(p) = pages.pin() {
        return Some(p);
    }
    if uploaded < LOCK_AFTER * owner.bytes() as u64 {
        return None;
    }
    lock_once(pages, make)
}

/// Attaches `make`'s locking to `pages`, one locking at a time: two uploads of one buffer racing
/// would lock it twice.
fn lock_once(
    pages: &HostPages,
    make: impl FnOnce(*mut u8, usize) -> Result<Box<dyn HostPin>, Declined>,
) -> Option<&dyn HostPin> {
    static LOCKING: Mutex<()> = Mutex::new(());
    let _one = LOCKING.lock();
    pages.pin_with(make)
}

/// `len` bytes counted against [`HOST_REGISTER_ENV`]'s bound while the value lives: held by a
/// locking, released after it is undone.
pub(crate) struct LockedBytes(usize);

impl LockedBytes {
    /// Counts `len` bytes `device` is about to lock; with the reason logged,
    /// [`Declined::ForNow`] where the bound does not allow them.
    pub fn reserve(device: Device, len: usize) -> Result<LockedBytes, Declined> {
        let held = LOCKED.fetch_add(len, Ordering::AcqRel);
        if held + len > limit() {
            LOCKED.fetch_sub(len, Ordering::AcqRel);
            log!(
                LogLevel::Info,
                "{device}: {len} host bytes left staged: {held} are locked, the bound is {} ({HOST_REGISTER_ENV})",
                limit()
            );
            return Err(Declined::ForNow);
        }
        Ok(LockedBytes(len))
    }
}

impl Drop for LockedBytes {
    fn drop(&mut self) {
        LOCKED.fetch_sub(self.0, Ordering::AcqRel);
    }
}

/// Bytes locked now.
#[cfg(test)]
pub(crate) fn locked_bytes() -> usize {
    LOCKED.load(Ordering::Acquire)
}
