//! Freed device allocations kept per CUDA device for the next request of the same size on the
//! same stream, so work that allocates the same buffers on every call (a training step's
//! collectives, a benchmark loop) does not ask the driver each time.
//!
//! The pool (`cuMemAllocAsync` with its release threshold raised, see [`super::driver`]) already
//! keeps the memory, but each allocation and free is still a driver call, made before the work
//! that needs the memory can be issued. On two H200s the pair cost 3–7 µs of a 16 MiB NCCL
//! all_gather or reduce_scatter of about 110 µs (`bench/gpu/5-overhead`).
//!
//! A [`super::memory::DevAlloc`] of at least [`REUSE_MIN_BYTES`] is parked here when dropped,
//! under (home stream, size), with the events of its readers on other streams. The next request
//! of that size on that stream takes the newest one back and makes the stream wait for those
//! events, exactly as the free would have; the home stream's own work is ordered by the stream.
//! Parking never waits and makes no driver call of its own. The shelf holds at most
//! [`CUDA_POOL_ENV`] bytes per device (2 GiB unless set; `0` turns it off): a newly parked
//! allocation displaces the ones parked longest, which are freed then (as above, after their
//! readers); an allocation that fails frees everything parked and tries again, so parked memory
//! never becomes an out-of-memory error.

use std::sync::Arc;

use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUdeviceptr;

use super::event::Event;
use parking_lot::Mutex;

use super::driver;
use crate::backend::shelf::Shelf;

/// Allocations smaller than this are freed, not parked.
pub(crate) const REUSE_MIN_BYTES: usize = 1 << 20;

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

/// One device's parked allocations by (home stream, size in bytes).
pub(crate) struct Reuse(Mutex<Shelf<(usize, usize), Parked>>);

impl Default for Reuse {
    fn default() -> Self {
        Reuse(Mutex::new(Shelf::from_env(CUDA_POOL_ENV)))
    }
}

impl Reuse {
    /// The newest allocation of exactly `bytes` parked from `stream`, if any.
    pub fn take(&self, stream: &CudaStream, bytes: usize) -> Option<Parked> {
        if bytes < REUSE_MIN_BYTES {
            return None;
        }
        self.0.lock().take((stream.cu_stream() as usize, bytes))
    }

    /// Parks `p` (`bytes` long); frees it instead when it is too small or larger than the
    /// shelf, and frees what it displaced.
    pub fn park(&self, bytes: usize, p: Parked) {
        if bytes < REUSE_MIN_BYTES {
            return drop(p);
        }
        let key = (p.home.cu_stream() as usize, bytes);
        let freed = self.0.lock().keep(key, bytes, p);
        drop(freed); // outside the lock: each free is a driver call
    }

    /// Frees everything parked, and waits until the frees have happened (their streams are
    /// idle), so the pool can hand the memory out again on any stream.
    pub fn empty(&self) {
        let all = self.0.lock().drain();
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
        self.0.lock().count((stream.cu_stream() as usize, bytes))
    }

    /// Bytes parked.
    #[cfg(feature = "failpoints")]
    pub fn bytes(&self) -> usize {
        self.0.lock().bytes()
    }
}
