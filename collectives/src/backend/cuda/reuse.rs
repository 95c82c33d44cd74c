//! Freed device allocations kept per CUDA device for the next request of the same size on the
//! same stream, so work that allocates the same buffers on every call (a training step's
//! collectives, a benchmark loop) does not ask the driver each time.
//!
//! The pool (`cuMemAllocAsync` with its release threshold raised, see [`super::driver`]) already
//! keeps the memory, but each allocation and free is still a driver call, made before the work
//! that needs the memory can be issued. On two H200s the pair cost 3–7 µs of a 16 MiB NCCL
//! all_gather or reduce_scatter of about 110 µs (`bench/gpu/5-overhead`).
//!
//! A dropped [`super::memory::DevAlloc`] is parked here, under (home stream, size), with the
//! events of its readers on other streams. The next request of that size on that stream takes the
//! newest one back and makes the stream wait for those events, exactly as the free would have;
//! the home stream's own work is ordered by the stream. Parking never waits and makes no driver
//! call of its own. Allocations of at least [`REUSE_MIN_BYTES`] go on a shelf of at most
//! [`CUDA_POOL_ENV`] bytes per device (2 GiB unless set; `0` turns parking off); smaller ones on a
//! shelf of their own of at most [`SMALL_SHELF_BYTES`], so a workload of many small sizes can
//! neither crowd the large buffers out nor hold thousands of tiny allocations (each counts as at
//! least 64 KiB there). Small calls are where the driver's allocate and free show: parking them
//! took a 4 KiB `local_reduce` on one H200 from 15.6–16.2 to 13.9–15.0 µs and a 4 KiB all_reduce
//! of two virtual CUDA devices from 22.4–24.4 to 16.5–20.2 µs (`bench/gpu/19-floors`, runs c and
//! d). A newly parked allocation displaces the ones parked longest on its shelf, which are freed
//! then (as above, after their readers); an allocation that fails frees everything parked and
//! tries again, so parked memory never becomes an out-of-memory error.

use std::sync::Arc;

use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUdeviceptr;

use super::event::Event;
use parking_lot::Mutex;

use super::driver;
use crate::backend::shelf::Shelf;

/// Allocations smaller than this are parked on the small shelf.
pub(crate) const REUSE_MIN_BYTES: usize = 1 << 20;

/// The small shelf's bound per device, in bytes (less where [`CUDA_POOL_ENV`] is less).
pub(crate) const SMALL_SHELF_BYTES: usize = 16 << 20;

/// What a small allocation counts as, at least, against its shelf: so the shelf holds at most
/// 256 of them, and its lookups stay short however small they are.
const SMALL_MIN_CHARGE: usize = 64 << 10;

/// Environment variable bounding each CUDA device's shelf of freed allocations, in bytes (`0`
/// turns it off). Read when the device is opened.
pub const CUDA_POOL_ENV: &str = "COLLECTIVES_CUDA_POOL_BYTES";

/// Device memory nobody uses any more, freed on drop: on its home stream, after its readers.
pub(crate) struct Parked {
    /// The device address (0 once handed on).
    pub ptr: CUdeviceptr,
    /// The stream it was allocated on and is freed on.
    pub home: Arc<CudaStream>,
    /// Work on other streams that used it and may still be running.
    pub readers: Vec<Arc<Event>>,
}

impl Parked {
    /// The address, for a new owner whose stream already waits for the readers; leaves nothing
    /// for the drop to free.
    pub fn hand_on(mut self) -> CUdeviceptr {
        std::mem::take(&mut self.ptr)
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        // Errors cannot be returned from a drop; a failing context reports them on its next call.
        let _ = self.home.context().bind_to_thread();
        let stream = self.home.cu_stream();
        for e in self.readers.drain(..) {
            // SAFETY: the stream and the event are alive (held here).
            let _ = unsafe { driver::stream_wait(stream, e.cu_event()) };
        }
        // SAFETY: `ptr` was allocated on `home`, is freed once, and every use on another stream
        // is ordered before this point by the waits above.
        let _ = unsafe { driver::free_async(self.ptr, stream) };
    }
}

/// A shelf of parked allocations by (home stream, size in bytes).
type Parking = Mutex<Shelf<(usize, usize), Parked>>;

/// One device's parked allocations: the large shelf and the small one.
pub(crate) struct Reuse {
    large: Parking,
    small: Parking,
}

impl Default for Reuse {
    fn default() -> Self {
        let large = Shelf::from_env(CUDA_POOL_ENV);
        let small = Shelf::new(SMALL_SHELF_BYTES.min(large.limit()));
        Reuse { large: Mutex::new(large), small: Mutex::new(small) }
    }
}

impl Reuse {
    /// The shelf allocations of `bytes` go on.
    fn shelf(&self, bytes: usize) -> &Parking {
        if bytes < REUSE_MIN_BYTES { &self.small } else { &self.large }
    }

    /// The newest allocation of exactly `bytes` parked from `stream`, if any.
    pub fn take(&self, stream: &CudaStream, bytes: usize) -> Option<Parked> {
        self.shelf(bytes).lock().take((stream.cu_stream() as usize, bytes))
    }

    /// Parks `p` (`bytes` long); frees it instead when it is larger than its shelf, and frees
    /// what it displaced.
    pub fn park(&self, bytes: usize, p: Parked) {
        let key = (p.home.cu_stream() as usize, bytes);
        let charge = if bytes < REUSE_MIN_BYTES { bytes.max(SMALL_MIN_CHARGE) } else { bytes };
        let freed = self.shelf(bytes).lock().keep(key, charge, p);
        drop(freed); // outside the lock: each free is a driver call
    }

    /// Frees everything parked, and waits until the frees have happened (their streams are
    /// idle), so the pool can hand the memory out again on any stream.
    pub fn empty(&self) {
        let mut all = self.large.lock().drain();
        all.extend(self.small.lock().drain());
        let mut homes: Vec<Arc<CudaStream>> = all.iter().map(|p| p.home.clone()).collect();
        homes.sort_by_key(|s| s.cu_stream() as usize);
        homes.dedup_by_key(|s| s.cu_stream() as usize);
        drop(all);
        for s in homes {
            let _ = s.synchronize();
        }
    }

    /// How many allocations of `bytes` are parked from `stream`.
    #[cfg(test)]
    pub fn parked(&self, stream: &CudaStream, bytes: usize) -> usize {
        self.shelf(bytes).lock().count((stream.cu_stream() as usize, bytes))
    }

    /// Bytes parked (a small allocation counted as at least [`SMALL_MIN_CHARGE`]).
    #[cfg(feature = "failpoints")]
    pub fn bytes(&self) -> usize {
        self.large.lock().bytes() + self.small.lock().bytes()
    }
}
