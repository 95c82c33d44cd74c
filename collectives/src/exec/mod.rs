//! The executor: runs a graph's passes, schedules its nodes on per-device queues, and caches the
//! results.
//!
//! [`realize`] is the one entry: it rewrites the targets' graph
//! ([`crate::graph::opt::insert_cross_device_copies`]), orders the nodes topologically, gives each
//! device a queue so independent devices work at once, frees every intermediate buffer once its
//! last reader has run, and caches the targets' buffers in their nodes. A large tensor's
//! CUDA → host → Vulkan chain (or back) runs as one pipelined transfer ([`StagedTransport`]).
//!
//! ```
//! use collectives::{realize, Device, Tensor};
//! let a = Tensor::from_vec(vec![1i32, 2, 3, 4], [2, 2], Device::Cpu(0))?;
//! let b = a.copy_to_device(Device::Cpu(1))?.add(&a)?; // runs on cpu:1
//! let c = a.narrow(1, 1, 1)?;
//! realize(&[b.clone(), c.clone()])?;                   // one run for both
//! assert!(b.is_realized() && c.is_realized());
//! assert_eq!(b.to_vec::<i32>()?, vec![2, 4, 6, 8]);
//! assert_eq!(c.to_vec::<i32>()?, vec![2, 4]);
//! # Ok::<(), collectives::Error>(())
//! ```

mod direct;
mod issued;
mod join;
mod run;
mod schedule;
mod staged;
mod step;
mod stream;

use std::sync::Arc;

use smallvec::SmallVec;

use crate::backend::{self, Buffer};
use crate::dtype::Element;
use crate::error::Result;
use crate::graph::{Tensor, opt};
use crate::log::{LogLevel, log};
pub use issued::{Issued, issue};
pub use run::ONE_THREAD_BELOW_BYTES;
pub(crate) use schedule::{cut_from, views_vulkan_device_memory};
pub use staged::{
    BRIDGE_ENV, DEVICE_MIN_BYTES, STAGED_CHUNK_ENV, STAGED_ENV, STAGED_MIN_BYTES, STAGED_SLOTS_ENV,
    StagedTransport, staged_transport,
};
pub use stream::{STREAM_CHUNK_ENV, STREAM_ENV, STREAM_MIN_BYTES, STREAM_SMALL_BYTES};

/// Computes `targets` (and everything they need) and caches each on its device.
///
/// Returns once every target's data is complete, also a target realized earlier whose work may
/// still run (by [`issue`]). The first failure is returned: where this call's own work fails,
/// nothing new is cached and no input is changed; where an earlier `issue`'s work failed, its
/// target returns that failure to every read.
pub fn realize(targets: &[Tensor]) -> Result<()> {
    // What this call computes is waited for before it is cached; a target realized earlier (by
    // `issue`) may still be being computed.
    match compute(targets, Finish::Wait)? < targets.len() {
        true => issued::wait_all(targets),
        false => Ok(()),
    }
}

/// Whether a run waits for its targets before caching them ([`realize`]) or caches them while
/// their devices still compute them ([`issue`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Finish {
    /// Wait, then cache: nothing is cached if the work fails.
    Wait,
    /// Cache at once; whoever reads a target waits on its fence.
    Leave,
}

/// Runs the graph of `targets` not yet realized and caches them as `finish` says; returns how
/// many it computed.
fn compute(targets: &[Tensor], finish: Finish) -> Result<usize> {
    // Inline for the usual few targets: a call's allocations show in its fixed cost.
    let pending: SmallVec<[Tensor; 4]> = targets.iter().filter(|t| !t.is_realized()).cloned().collect();
    if pending.is_empty() {
        return Ok(0);
    }
    // The clock is read only where the timings are logged.
    let debug = crate::log::enabled(LogLevel::Debug);
    let start = debug.then(std::time::Instant::now);
    if let Some(done) = direct::try_realize(&pending, finish) {
        if let Some(start) = start {
            log!(LogLevel::Debug, "realize: issued directly, {:.1} us", us(start));
        }
        return done.map(|()| pending.len());
    }
    let rewritten = opt::insert_cross_device_copies(&pending);
    let sched = Arc::new(schedule::build(&rewritten));
    let summary = debug.then(|| sched.summary());
    let (bufs, timeline) = run::run(&sched, debug)?;
    let lines = timeline.map(|t| t.lines(&sched));
    let issued = start.map(us);
    // Freed while the devices still work, not after.
    drop((sched, rewritten));
    let done = cache(&pending, bufs, finish);
    if let (Some(summary), Some(lines), Some(start), Some(issued)) = (summary, lines, start, issued) {
        let total = us(start);
        log!(LogLevel::Debug, "realize: {summary}; {total:.1} us ({issued:.1} issuing, then waiting)");
        log!(
            LogLevel::Debug,
            "realize steps (inputs ready, issued, us since the run began):\n  {}",
            lines.join("\n  ")
        );
    }
    done.map(|()| pending.len())
}

/// Microseconds since `start`.
fn us(start: std::time::Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e6
}

/// Caches each of `bufs` (the targets' results, in order) in its target; with [`Finish::Wait`],
/// first waits for every one, and caches nothing if a wait fails. `bufs` is a `Vec`, or an array
/// where the count is known (one target needs no allocation).
fn cache<B>(targets: &[Tensor], bufs: B, finish: Finish) -> Result<()>
where
    B: IntoIterator<Item = Arc<Buffer>> + AsRef<[Arc<Buffer>]>,
{
    if finish == Finish::Wait {
        for b in bufs.as_ref() {
            b.wait()?;
        }
    }
    for (t, b) in targets.iter().zip(bufs) {
        *t.0.value.lock() = Some(b);
    }
    Ok(())
}

/// `target`'s buffer once the work computing it is *issued*: the cached buffer of a realized
/// tensor, else the graph's result, neither waited for nor cached. The buffer's fence says when
/// its contents are valid: for callers that hand it to more device work (a communicator's NCCL
/// stream), which waits for it on the device rather than the host.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))] // NcclComm's inputs
pub(crate) fn issued_buffer(target: &Tensor) -> Result<Arc<Buffer>> {
    if target.is_realized()
        && let Some(buf) = target.value()
    {
        return Ok(buf);
    }
    let rewritten = opt::insert_cross_device_copies(std::slice::from_ref(target));
    let sched = Arc::new(schedule::build(&rewritten));
    let (mut bufs, _) = run::run(&sched, false)?;
    bufs.pop()
        .ok_or_else(|| crate::Error::internal("issue", "the schedule returned no result for its target"))
}

/// Waits until every operation issued to `device` has finished, reporting a device failure as an
/// error. [`realize`] already waits for its targets; this is for callers timing or handing
/// buffers to other libraries.
pub fn synchronize(device: crate::Device) -> Result<()> {
    backend::get(device)?.synchronize()
}

/// Copies a realized buffer into a `Vec<T>` on the host (the dtype was checked by the caller).
pub(crate) fn read_host<T: Element>(buf: &Buffer) -> Result<Vec<T>> {
    let staged;
    let host = if buf.device.is_host() {
        buf
    } else {
        staged = backend::copy(buf, crate::route::STAGING_HOST)?;
        &staged
    };
    host.wait()?;
    let bytes = host.host_bytes("to_vec")?;
    let mut out = vec![T::zeroed(); buf.len];
    bytemuck::cast_slice_mut::<T, u8>(&mut out).copy_from_slice(bytes);
    Ok(out)
}
