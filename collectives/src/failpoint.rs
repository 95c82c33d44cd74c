//! Fault injection for tests: a failpoint at every backend allocation, copy, kernel launch,
//! submission and NCCL call, so a test can make the k-th of them fail and check that the library
//! returns an error, leaves its inputs alone and leaks nothing.
//!
//! Built only with the cargo feature `failpoints`; without it the crate's `hit` is an inlined `Ok(())` and
//! the public controls do not exist. The state is process-wide, not per thread (the executor
//! issues each device's queue on a thread of its own): a test arming it runs alone in its test
//! binary (`tests/faults.rs` is one test function), and [`Armed`] serialises arming within it.
//!
//! Sites: `cpu alloc` / `cpu copy` / `cpu kernel launch`; `vulkan alloc` / `vulkan copy` /
//! `vulkan dispatch` / `vulkan submit`; `cuda alloc` / `cuda copy` / `cuda peer copy` /
//! `cuda kernel launch` / `cuda event record` (a submission's completion event); `nccl group call`
//! (a clique's) and `nccl call` (a communicator rank's).
//!
//! ```ignore
//! let _armed = collectives::failpoint::Armed::count();  // count the hits of one call
//! group.all_reduce(&shards, ReduceOp::Sum)?.realize()?;
//! let n = collectives::failpoint::hits();
//! let _armed = collectives::failpoint::Armed::fail_at(3); // the 3rd hit fails
//! ```

use crate::device::Device;
use crate::error::Result;

/// Passes failpoint `site` on `device`: an injected [`crate::Error::Driver`] when this is the
/// armed hit, else `Ok(())`. A no-op without the `failpoints` feature.
#[inline(always)]
pub(crate) fn hit(device: Device, site: &'static str) -> Result<()> {
    #[cfg(feature = "failpoints")]
    {
        imp::hit(device, site)
    }
    #[cfg(not(feature = "failpoints"))]
    {
        let _ = (device, site);
        Ok(())
    }
}

#[cfg(feature = "failpoints")]
pub(crate) use imp::live;
#[cfg(feature = "failpoints")]
pub use imp::{Armed, hits, injected, resources};

#[cfg(feature = "failpoints")]
mod imp {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use parking_lot::{Mutex, MutexGuard};

    use crate::device::Device;
    use crate::error::{Error, Result};

    static COUNTING: AtomicBool = AtomicBool::new(false);
    static HITS: AtomicU64 = AtomicU64::new(0);
    /// The hit that fails (1-based); 0 when none does.
    static FAIL_AT: AtomicU64 = AtomicU64::new(0);
    static INJECTED: Mutex<Option<(Device, &'static str)>> = Mutex::new(None);
    static ARMING: Mutex<()> = Mutex::new(());

    pub(super) fn hit(device: Device, site: &'static str) -> Result<()> {
        if !COUNTING.load(Ordering::Acquire) {
            return Ok(());
        }
        let n = HITS.fetch_add(1, Ordering::AcqRel) + 1;
        if n == FAIL_AT.load(Ordering::Acquire) {
            *INJECTED.lock() = Some((device, site));
            return Err(Error::driver(device, site, format!("injected failure (failpoint hit {n})")));
        }
        Ok(())
    }

    /// Failpoints counting (and possibly failing) while held; dropping it stops counting. Holds a
    /// process-wide lock, so two of them never overlap.
    pub struct Armed {
        _lock: MutexGuard<'static, ()>,
    }

    impl Armed {
        /// Counts hits from zero, failing none.
        pub fn count() -> Armed {
            Armed::fail_at(0)
        }

        /// Counts hits from zero and fails hit `k` (1-based; 0 fails none).
        pub fn fail_at(k: u64) -> Armed {
            let lock = ARMING.lock();
            HITS.store(0, Ordering::Release);
            FAIL_AT.store(k, Ordering::Release);
            *INJECTED.lock() = None;
            COUNTING.store(true, Ordering::Release);
            Armed { _lock: lock }
        }
    }

    impl Drop for Armed {
        fn drop(&mut self) {
            COUNTING.store(false, Ordering::Release);
            FAIL_AT.store(0, Ordering::Release);
        }
    }

    /// Failpoints passed since the last arming.
    pub fn hits() -> u64 {
        HITS.load(Ordering::Acquire)
    }

    /// The device and site of the failure injected since the last arming, if one was.
    pub fn injected() -> Option<(Device, &'static str)> {
        *INJECTED.lock()
    }

    /// What the backends hold now, by name: live buffers, pooled bytes, command buffers and
    /// descriptor pools not accounted for, cached pipelines. A run that fails must leave every
    /// figure as it found it (once the devices are synchronised).
    pub fn resources() -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        crate::backend::resources(&mut out);
        out
    }

    /// Live-object counters of the backends' owning types.
    pub(crate) mod live {
        use std::sync::atomic::{AtomicI64, Ordering};

        /// Live `OwnedHost` buffers.
        pub static HOST: AtomicI64 = AtomicI64::new(0);
        /// Live Vulkan `DevBuf`s.
        pub static VULKAN: AtomicI64 = AtomicI64::new(0);
        /// Live CUDA `DevAlloc`s.
        #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
        pub static CUDA: AtomicI64 = AtomicI64::new(0);

        /// One more of `c`.
        pub fn inc(c: &AtomicI64) {
            c.fetch_add(1, Ordering::AcqRel);
        }

        /// One fewer of `c`.
        pub fn dec(c: &AtomicI64) {
            c.fetch_sub(1, Ordering::AcqRel);
        }
    }
}
