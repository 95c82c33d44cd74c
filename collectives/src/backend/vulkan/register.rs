//! Host buffers a Vulkan device copies from in place: an owned host buffer uploaded again is
//! imported into the device (`VK_EXT_external_memory_host`) as a buffer of its own, and later
//! uploads of it, or of a slice of it, are one buffer copy from that import (when: the policy
//! CUDA's page-locking shares, `backend/lock.rs`).
//!
//! Why: where a tensor's device memory is not host-visible (a discrete GPU), an upload is two
//! copies — the calling thread fills a staging buffer, then the device copies it — and the first
//! holds the calling thread for the whole upload. From an import the device reads the host pages
//! itself, and the call returns once the copy is submitted. Where the device memory is mapped
//! (lavapipe, integrated GPUs) the host writes it directly, as before.
//!
//! The import holds no reference to the host memory: the allocation ([`HostPages`]) owns it and
//! drops it first; dropping it waits for every copy that read it ([`ImportedHost::wait_idle`]),
//! then frees the imported memory, then the pages are freed. Copies from it are recorded without
//! the recorder keeping the import ([`Recorder::copy_borrowed`]), so nothing outlives that order.
//!
//! [`HostPages`]: crate::backend::host::HostPages
//! [`ImportedHost::wait_idle`]: crate::backend::HostPin::wait_idle
//! [`Recorder::copy_borrowed`]: super::submit::Recorder::copy_borrowed

use std::any::Any;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Instant;

use ash::vk;
use parking_lot::Mutex;

use super::VulkanBackend;
use super::device::Gpu;
use super::memory::DevBuf;
use super::submit::{Recorder, TimelineFence};
use crate::backend::lock::{self, LockedBytes};
use crate::backend::{Buffer, Declined, Fence, HostPin};
use crate::error::Result;
use crate::log::{LogLevel, log};

/// An owned host buffer's pages imported into one Vulkan device while the value lives.
pub(super) struct ImportedHost {
    /// The pages as a buffer of the device (freed after `ImportedHost::drop` has waited).
    buf: Arc<DevBuf>,
    /// Copies that read it.
    pending: Mutex<Vec<Arc<TimelineFence>>>,
    /// The bytes counted against the bound, released after the import is freed.
    _bytes: LockedBytes,
}

/// Imports held by host allocations now, and their bytes: reported as a cache beside the host
/// pool's (`failpoint::resources`), since the pool keeps them with the allocations it keeps.
#[cfg(feature = "failpoints")]
pub(super) static HELD: [std::sync::atomic::AtomicU64; 2] =
    [std::sync::atomic::AtomicU64::new(0), std::sync::atomic::AtomicU64::new(0)];

impl ImportedHost {
    /// The import `buf` of `bytes`' pages.
    fn new(buf: Arc<DevBuf>, bytes: LockedBytes) -> Self {
        #[cfg(feature = "failpoints")]
        {
            use std::sync::atomic::Ordering;
            HELD[0].fetch_add(1, Ordering::AcqRel);
            HELD[1].fetch_add(buf.size, Ordering::AcqRel);
        }
        ImportedHost { buf, pending: Mutex::new(Vec::new()), _bytes: bytes }
    }

    /// Records a copy (complete when `fence` is) that reads the memory.
    fn note_use(&self, fence: &Arc<TimelineFence>) {
        let mut p = self.pending.lock();
        p.retain(|f| !f.is_complete());
        p.push(fence.clone());
    }
}

impl HostPin for ImportedHost {
    fn wait_idle(&self) {
        let pending: Vec<_> = self.pending.lock().drain(..).collect();
        for f in pending {
            // A failed wait means the device is lost; nothing reads the memory any more then.
            let _ = f.wait();
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for ImportedHost {
    fn drop(&mut self) {
        self.wait_idle();
        #[cfg(feature = "failpoints")]
        {
            use std::sync::atomic::Ordering;
            HELD[0].fetch_sub(1, Ordering::AcqRel);
            HELD[1].fetch_sub(self.buf.size, Ordering::AcqRel);
        }
        // `buf` frees the import as it drops, after this; then `_bytes` releases its count.
    }
}

/// The import of `vk`'s device that an upload of host buffer `b` reads, and the byte of it `b`
/// starts at: where `b`'s memory (or that of the buffer it views) is imported into this device
/// now or before ([`lock::pin_for_upload`]); `None` where it is staged. Counts the upload.
pub(super) fn direct<'a>(vk: &VulkanBackend, b: &'a Buffer) -> Option<(&'a ImportedHost, u64)> {
    vk.gpu.host_import.as_ref()?;
    let (owner, offset) = lock::owner_of(b);
    let pin = lock::pin_for_upload(b, owner, |ptr, len| import(&vk.gpu, ptr, len))?;
    let import = pin.as_any().downcast_ref::<ImportedHost>()?;
    Arc::ptr_eq(&import.buf.gpu, &vk.gpu).then_some((import, offset as u64))
}

/// Imports the `len` bytes at `ptr` (a `HostPages` allocation) into `gpu` if the bound allows;
/// with the reason logged, [`Declined::ForNow`] where it does not, [`Declined::ForGood`] where
/// the driver cannot (the allocation is off its import alignment, or the import fails).
fn import(gpu: &Arc<Gpu>, ptr: *mut u8, len: usize) -> std::result::Result<Box<dyn HostPin>, Declined> {
    // A `HostPages` allocation is never empty, so never at a null address.
    let at = NonNull::new(ptr).ok_or(Declined::ForGood)?;
    let bytes = LockedBytes::reserve(gpu.device, len)?;
    let start = Instant::now();
    // SAFETY: a `HostPages` allocation is `len` bytes of its own pages at `at`, readable and
    // writable, and it drops its locking (this import) before it frees them; the import is freed
    // only after `ImportedHost::drop` has waited for the copies that read it (see the module
    // doc). `import_on` checks the alignment.
    match unsafe { super::bridge::import_on(gpu, at, len, Arc::new(())) } {
        Ok(buf) => {
            log!(
                LogLevel::Info,
                "{}: imported {len} host bytes in {:.1} ms (uploaded again)",
                gpu.device,
                start.elapsed().as_secs_f64() * 1e3
            );
            Ok(Box::new(ImportedHost::new(buf, bytes)))
        }
        Err(e) => {
            log!(LogLevel::Info, "{}: {len} host bytes left staged for good: import failed: {e}", gpu.device);
            Err(Declined::ForGood)
        }
    }
}

/// Copies `bytes` bytes of `import` from byte `offset` into `dst` (from its start) in one
/// submission; returns its fence, noted on the import.
pub(super) fn upload(
    gpu: &Arc<Gpu>,
    import: &ImportedHost,
    offset: u64,
    dst: &Arc<DevBuf>,
    bytes: u64,
) -> Result<Arc<TimelineFence>> {
    let mut rec = Recorder::begin(gpu)?;
    let region = vk::BufferCopy { src_offset: offset, dst_offset: 0, size: bytes };
    // SAFETY: the import lives until every copy noted on it has run (`ImportedHost::drop`
    // waits), and this one is noted below once submitted; the region lies within both buffers
    // (`offset + bytes` within the allocation the import covers, `bytes` within `dst`: callers).
    unsafe { rec.copy_borrowed(&import.buf, dst, &[region]) };
    let fence = rec.submit()?;
    import.note_use(&fence);
    Ok(fence)
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::super::memory::Usage;
    use super::super::tests::backend;
    use super::*;
    use crate::backend::lock::LOCK_MIN_UPLOAD;
    use crate::backend::view::host_slice;
    use crate::backend::{Backend, Mem};
    use crate::device::Device;
    use crate::dtype::DType;

    fn read(vk: &VulkanBackend, b: &Buffer) -> Vec<f32> {
        let host = vk.dtoh(b, Device::Cpu(0)).unwrap();
        host.wait().unwrap();
        bytemuck::pod_collect_to_vec(host.host_bytes("test").unwrap())
    }

    fn pages_ptr(b: &Buffer) -> usize {
        let Mem::Host(h) = &b.mem else { panic!("a host buffer") };
        h.pages().expect("paged").ptr() as usize
    }

    /// `import`'s bytes from `offset` copied into a new device buffer of `len` f32, read back.
    fn through(vk: &VulkanBackend, import: &ImportedHost, offset: u64, len: usize) -> Vec<f32> {
        let dst = DevBuf::new(&vk.gpu, (len * 4) as u64, Usage::Device).unwrap();
        let fence = upload(&vk.gpu, import, offset, &dst, (len * 4) as u64).expect("upload");
        read(vk, &vk.output(dst, DType::F32, len, Some(fence)))
    }

    /// A large host buffer's halves (the second a view starting off any page) and a view of that
    /// view: not imported until twice the buffer's size has gone up from them, then copied from
    /// the one import at their offsets, every element against the values viewed; the buffer
    /// dropped while a copy from it runs is recycled with its import after the copy, and its new
    /// contents copied from the same import.
    #[test]
    fn an_uploaded_buffer_is_imported_once_and_copied_from_at_its_offsets() {
        let Some(vk) = backend() else { return };
        if vk.gpu.host_import.is_none() {
            println!("skipped: {} has no VK_EXT_external_memory_host", vk.gpu.device);
            return;
        }
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        // A size no other test uses (1794 pages); halves of more than LOCK_MIN_UPLOAD.
        let n = LOCK_MIN_UPLOAD / 4 * 7 + 2 * 977;
        let half = n / 2;
        let data: Vec<f32> = (0..n).map(|_| r.random_range(-1000.0f32..1000.0)).collect();
        let owner = Arc::new(Buffer::from_vec(Device::Cpu(0), data.clone()));
        let halves = [host_slice(&owner, 0, half), host_slice(&owner, half, half)];
        for upload in 0..6 {
            let k = upload % 2;
            let got = direct(&vk, &halves[k]);
            assert_eq!(got.is_some(), upload >= 3, "imported at twice its size, upload {upload}");
            if let Some((import, offset)) = got {
                assert_eq!(offset, (k * half * 4) as u64);
                let want = &data[k * half..(k + 1) * half];
                assert_eq!(through(&vk, import, offset, half), want, "half {k}, seed {seed}");
            }
        }
        let inner = host_slice(&halves[1], 7, half - 7);
        let (import, offset) = direct(&vk, &inner).expect("a view of a view: imported");
        assert_eq!(offset, ((half + 7) * 4) as u64);
        assert_eq!(through(&vk, import, offset, half - 7), data[half + 7..], "seed {seed}");
        let (import, _) = direct(&vk, &owner).expect("the whole buffer");
        let dst = DevBuf::new(&vk.gpu, (n * 4) as u64, Usage::Device).unwrap();
        let pending = upload(&vk.gpu, import, 0, &dst, (n * 4) as u64).expect("upload");
        let ptr = pages_ptr(&owner);
        drop((halves, inner, owner));
        let other: Vec<f32> = (0..n).map(|_| r.random_range(-1000.0f32..1000.0)).collect();
        let again = Buffer::from_vec(Device::Cpu(0), other.clone());
        assert_eq!(pages_ptr(&again), ptr, "the allocation is recycled");
        let copied = read(&vk, &vk.output(dst, DType::F32, n, Some(pending)));
        assert_eq!(copied, data, "the copy ran before the memory was rewritten, seed {seed}");
        let (import, offset) = direct(&vk, &again).expect("recycled with its import");
        assert_eq!(through(&vk, import, offset, n), other, "recycled contents, seed {seed}");
    }

    /// Small buffers are never imported, however often they go up.
    #[test]
    fn small_buffers_are_never_imported() {
        let Some(vk) = backend() else { return };
        let small = Buffer::from_vec(Device::Cpu(0), vec![1.5f32; LOCK_MIN_UPLOAD / 4 - 1]);
        for _ in 0..3 {
            assert!(direct(&vk, &small).is_none(), "below LOCK_MIN_UPLOAD: staged");
        }
    }
}
