//! Host buffers the copy engine reads in place: pinned blocks, and owned pageable buffers
//! page-locked (registered) once they are uploaded again (when: `backend/lock.rs`).
//!
//! Why: a pageable upload is two copies — the host copies each chunk into pinned staging, then
//! the copy engine moves it — and on the H200 the first is the slower (about 36 GB/s against the
//! bus's 55, `bench/gpu/17-streamed`); in a mixed group's streamed all_reduce it also competes
//! with both DMA directions for host memory, and it holds the issuing thread, so a download issued
//! after it waits for it (a mixed all_to_all's two directions ran one after the other, GPU run
//! 34c). A registered buffer, or a slice of one, is read by DMA directly. A locking the driver
//! refuses leaves the buffer staged for good (it is not tried again on every upload); one over
//! [`crate::HOST_REGISTER_ENV`]'s bound is tried again later.

use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::device::CudaDevice;
use super::event::Event;
use super::pinned::{self, PinnedBlock};
use super::staging::Registered;
use crate::backend::lock::{self, LockedBytes};
use crate::backend::{Buffer, Declined, HostPin};
use crate::log::{LogLevel, log};

/// Host memory the copy engine reads in place: `offset` bytes into a pinned block or a locked
/// buffer (more than 0 where the buffer uploaded is a view of another, `backend/view.rs`).
pub(crate) struct Direct<'a> {
    /// The memory.
    held: Held<'a>,
    /// Where in it the buffer uploaded starts.
    offset: usize,
}

/// Memory the copy engine reads in place.
pub(crate) enum Held<'a> {
    /// A pinned block (a download's result).
    Pinned(&'a PinnedBlock),
    /// An owned buffer this backend page-locked.
    Locked(&'a HostLock),
}

impl Direct<'_> {
    /// The first byte's address.
    pub fn ptr(&self) -> *mut u8 {
        let base = match self.held {
            Held::Pinned(b) => b.ptr(),
            Held::Locked(l) => l.reg.ptr(),
        };
        // In the memory: a view lies within the buffer it views (checked when it was made).
        base.wrapping_add(self.offset)
    }

    /// Records device work (complete when `event` is) that reads the memory.
    pub fn note_use(&self, event: &Arc<Event>) {
        match self.held {
            Held::Pinned(b) => b.note_use(event),
            Held::Locked(l) => l.note_use(event),
        }
    }
}

/// How `dev` reads host buffer `b` in an upload: in place ([`Direct`]) when its memory is pinned,
/// or that of an owned buffer locked now or before ([`lock::pin_for_upload`]: a view reads the
/// memory of the buffer it views); `None` when it is staged. Counts the upload.
pub(crate) fn direct<'a>(dev: &CudaDevice, b: &'a Buffer) -> Option<Direct<'a>> {
    let (owner, offset) = lock::owner_of(b);
    if let Some(p) = pinned::host_of(owner) {
        return p.block().map(|block| Direct { held: Held::Pinned(block), offset });
    }
    let pin = lock::pin_for_upload(b, owner, |ptr, len| self::lock(dev, ptr, len))?;
    let locked = pin.as_any().downcast_ref::<HostLock>()?;
    Some(Direct { held: Held::Locked(locked), offset })
}

/// Locks the `len` bytes at `ptr` (a `HostPages` allocation) if the bound allows; with the reason
/// logged, [`Declined::ForNow`] where it does not, [`Declined::ForGood`] where the driver refuses.
fn lock(dev: &CudaDevice, ptr: *mut u8, len: usize) -> Result<Box<dyn HostPin>, Declined> {
    // A `HostPages` allocation is never empty, so never at a null address.
    let at = std::ptr::NonNull::new(ptr).ok_or(Declined::ForGood)?;
    let bytes = LockedBytes::reserve(dev.device, len)?;
    let start = Instant::now();
    // SAFETY: a `HostPages` allocation is `len` bytes of its own pages at `at`, and it drops
    // its locking (this value) before it frees them; `HostLock::drop` waits for the copies that
    // read it first.
    match unsafe { Registered::new(dev.device, at, len) } {
        Ok(reg) => {
            log!(
                LogLevel::Info,
                "{}: locked {len} host bytes in {:.1} ms (uploaded again)",
                dev.device,
                start.elapsed().as_secs_f64() * 1e3
            );
            Ok(Box::new(HostLock { reg, pending: Mutex::new(Vec::new()), _bytes: bytes }))
        }
        Err(e) => {
            log!(
                LogLevel::Info,
                "{}: {len} host bytes left staged for good: locking failed: {e}",
                dev.device
            );
            Err(Declined::ForGood)
        }
    }
}

/// An owned host buffer's pages, locked for every CUDA context while the value lives.
pub(crate) struct HostLock {
    /// The locking (undone when it drops, after `HostLock::drop` has waited for the copies).
    reg: Registered,
    /// Copies that read the memory.
    pending: Mutex<Vec<Arc<Event>>>,
    /// The bytes counted against the bound, released after `reg` has unlocked them.
    _bytes: LockedBytes,
}

impl HostLock {
    /// Records a copy (complete when `event` is) that reads the memory.
    fn note_use(&self, event: &Arc<Event>) {
        let mut p = self.pending.lock();
        p.retain(|e| !matches!(e.try_is_complete(), Ok(true)));
        p.push(event.clone());
    }
}

impl HostPin for HostLock {
    fn wait_idle(&self) {
        let pending: Vec<_> = self.pending.lock().drain(..).collect();
        for e in pending {
            // A failed wait means the device faulted; nothing reads the memory any more then.
            let _ = e.synchronize();
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for HostLock {
    fn drop(&mut self) {
        self.wait_idle();
        // `reg` unlocks the pages as it drops, after this; then `_bytes` releases their count.
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::super::tests::{devices, download};
    use super::super::{copy, stream};
    use super::*;
    use crate::backend::lock::{LOCK_MIN_UPLOAD, locked_bytes};
    use crate::backend::view::host_slice;
    use crate::backend::{Kernel, Mem, OutSpec};
    use crate::device::Device;
    use crate::dtype::DType;
    use crate::graph::ReduceKind;

    fn random_f32(n: usize, r: &mut StdRng) -> Vec<f32> {
        (0..n).map(|_| r.random_range(-1000.0f32..1000.0)).collect()
    }

    fn pages(b: &Buffer) -> &crate::backend::host::HostPages {
        let Mem::Host(h) = &b.mem else { panic!("a host buffer") };
        h.pages().expect("a large host buffer is paged")
    }

    fn host_f32(b: &Buffer) -> Vec<f32> {
        b.wait().expect("wait");
        bytemuck::pod_collect_to_vec(b.host_bytes("test").expect("host bytes"))
    }

    /// A buffer is staged on its first upload and locked on its second; every upload reads it
    /// whole; a buffer dropped while its copy runs is recycled (with its locking) only after the
    /// copy, and the recycled allocation's new contents upload in place.
    #[test]
    fn a_buffer_uploaded_again_is_locked_read_in_place_and_recycled_locked() {
        let Some(dev) = devices().into_iter().next() else { return };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        // A size no other test uses (the host pool hands this allocation back below).
        let n = LOCK_MIN_UPLOAD / 4 * 6 + 1237;
        let data = random_f32(n, &mut r);
        let src = Buffer::from_vec(Device::Cpu(0), data.clone());
        let first = copy::htod(&dev, &src).expect("staged upload");
        assert!(pages(&src).pin().is_none(), "one upload is staged");
        let second = copy::htod(&dev, &src).expect("upload that locks");
        assert!(pages(&src).pin().is_some(), "the second upload locks the buffer");
        assert!(locked_bytes() >= pages(&src).len());
        let third = copy::htod(&dev, &src).expect("locked upload");
        for (i, b) in [first, second, third].iter().enumerate() {
            assert_eq!(download::<f32>(&dev, b), data, "upload {i}, seed {seed}");
        }
        assert_eq!(host_f32(&src), data, "source unchanged");
        let ptr = pages(&src).ptr();
        let pending = copy::htod(&dev, &src).expect("locked upload");
        drop(src);
        let other = random_f32(n, &mut r);
        let again = Buffer::from_vec(Device::Cpu(0), other.clone());
        assert_eq!(pages(&again).ptr(), ptr, "the allocation is recycled");
        assert_eq!(
            download::<f32>(&dev, &pending),
            data,
            "the copy ran before the memory was rewritten, seed {seed}"
        );
        assert!(pages(&again).pin().is_some(), "recycled with its locking");
        let up = copy::htod(&dev, &again).expect("upload of the recycled buffer");
        assert_eq!(download::<f32>(&dev, &up), other, "recycled contents, seed {seed}");
    }

    /// A streamed fold reading a host shard twice: staged the first time, in place (locked) the
    /// second; both against the f64 reference, every element.
    #[test]
    fn a_streamed_kernel_reads_a_locked_shard_in_place() {
        let Some(dev) = devices().into_iter().next() else { return };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        let n = LOCK_MIN_UPLOAD / 4 * 3 + 4099;
        let (a, b) = (random_f32(n, &mut r), random_f32(n, &mut r));
        // Kept alive, so that `host` gets another allocation (the pool would hand this one, and
        // its upload count, to a buffer of the same size).
        let a_host = Buffer::from_vec(Device::Cpu(0), a.clone());
        let on_dev = copy::htod(&dev, &a_host).expect("htod");
        let host = Buffer::from_vec(Device::Cpu(1), b.clone());
        let want: Vec<f32> = (0..n).map(|i| (f64::from(a[i]) + f64::from(b[i])) as f32).collect();
        let kernel = Kernel::Reduce { kind: ReduceKind::Sum, scale: None };
        for round in 0..2 {
            let out = OutSpec { dtype: DType::F32, len: n };
            let (res, copies) = stream::compute_streamed(
                &dev,
                &kernel,
                &[&on_dev, &host],
                out,
                &[Device::Cpu(0)],
                Some(1 << 18),
            )
            .expect("streamed");
            assert_eq!(pages(&host).pin().is_some(), round == 1, "locked on the second read");
            assert_eq!(download::<f32>(&dev, &res), want, "device result, round {round}, seed {seed}");
            assert_eq!(host_f32(&copies[0]), want, "host copy, round {round}, seed {seed}");
        }
        assert_eq!(host_f32(&host), b, "host shard unchanged");
        drop(a_host);
    }

    /// Views of a large host buffer — its two halves, the second starting off any page, and a view
    /// of that view — are staged until twice the buffer's size has been uploaded from them, then
    /// read in place at their offsets in the buffer's locking; a view of a pinned download is read
    /// in place in its block. Every upload against the values viewed, every element.
    #[test]
    fn views_upload_from_their_owners_memory_at_their_offsets() {
        let Some(dev) = devices().into_iter().next() else { return };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        // A size no other test uses (1284 pages); halves of more than LOCK_MIN_UPLOAD.
        let n = LOCK_MIN_UPLOAD / 4 * 5 + 2 * 1931;
        let (data, half) = (random_f32(n, &mut r), n / 2);
        let owner = Arc::new(Buffer::from_vec(Device::Cpu(0), data.clone()));
        let halves = [host_slice(&owner, 0, half), host_slice(&owner, half, half)];
        for upload in 0..6 {
            let k = upload % 2;
            let up = copy::htod(&dev, &halves[k]).expect("upload of a view");
            let want = &data[k * half..(k + 1) * half];
            assert_eq!(download::<f32>(&dev, &up), want, "upload {upload}, seed {seed}");
            assert_eq!(
                pages(&owner).pin().is_some(),
                upload >= 3,
                "locked at twice its size, upload {upload}"
            );
        }
        let base = pages(&owner).ptr() as usize;
        let inner = host_slice(&halves[1], 7, half - 7);
        for (v, at) in [(&halves[1], half), (&inner, half + 7)] {
            let d = direct(&dev, v).expect("read in place");
            assert!(
                matches!(d.held, Held::Locked(_)) && d.ptr() as usize == base + at * 4,
                "at element {at}"
            );
            let up = copy::htod(&dev, v).expect("upload of a locked view");
            assert_eq!(download::<f32>(&dev, &up), data[at..at + v.len], "from {at}, seed {seed}");
        }
        let pinned = Arc::new(copy::dtoh(&dev, &copy::htod(&dev, &owner).unwrap(), Device::Cpu(0)).unwrap());
        let tail = host_slice(&pinned, 5, n - 5);
        let Some(Direct { held: Held::Pinned(block), .. }) = direct(&dev, &tail) else { panic!("pinned") };
        assert_eq!(direct(&dev, &tail).unwrap().ptr() as usize, block.ptr() as usize + 20);
        let up = copy::htod(&dev, &tail).expect("upload of a pinned view");
        assert_eq!(download::<f32>(&dev, &up), data[5..], "pinned view, seed {seed}");
        assert_eq!(host_f32(&owner), data, "the owner unchanged");
    }

    #[test]
    fn small_and_pinned_buffers_are_never_locked() {
        let Some(dev) = devices().into_iter().next() else { return };
        let small = Buffer::from_vec(Device::Cpu(0), vec![1.5f32; LOCK_MIN_UPLOAD / 4 - 1]);
        let Mem::Host(h) = &small.mem else { unreachable!() };
        // The host pool may hand out an allocation of the same pages that another test's large
        // buffer had locked (it keeps the locking): what matters is that staging adds none.
        let locked_before = h.pages().expect("paged").pin().is_some();
        for _ in 0..3 {
            assert!(direct(&dev, &small).is_none(), "below LOCK_MIN_UPLOAD: staged");
        }
        assert_eq!(h.pages().expect("paged").pin().is_some(), locked_before, "a small buffer is not locked");
        let pinned = copy::dtoh(&dev, &copy::htod(&dev, &small).unwrap(), Device::Cpu(0)).unwrap();
        assert!(matches!(direct(&dev, &pinned), Some(Direct { held: Held::Pinned(_), .. })));
    }
}
