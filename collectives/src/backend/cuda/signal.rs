//! Host waits that see CUDA work finish sooner: a word of pinned host memory that the stream
//! writes behind the work (`cuStreamWriteValue32`), which the waiting thread spins on.
//!
//! Why: a realize waits on the host for every target, and on the H200 an event synchronize
//! returns 0.8–1.2 µs after a word the stream writes behind the same kernel has landed in host
//! memory (`bench/gpu/28-completion`, run a, the 4 KiB add: 10.6 / 9.6 µs launched and
//! event-synchronized, 9.4 / 8.8 with the stream's write; medians of 4000). Run b: the 4 KiB
//! `local_reduce` on `cuda:0` 11.6–13.1 µs waiting by events, 10.6–11.5 by signals.
//!
//! How: a wait takes a *slot* (one `u32` of a pinned page no one frees), sets it just below a new
//! sequence number, and has the fence's stream write the number after everything issued so far;
//! the work is complete once the slot reaches it. The write is issued when the host starts
//! waiting, so work queued on the stream since the fence's event delays it: the spin asks the
//! driver about the event every [`QUERY_EVERY`] too, which also reports a failed kernel, and
//! after [`SPIN_FOR`] the wait blocks in the driver as before. Work known complete is not waited
//! for, and work recorded [`FRESH`] ago or more is asked about first (the later outputs of one
//! call). A slot goes back to its pool when the wait ends; a write still pending on it later only
//! ever lowers it below a newer number. [`CUDA_SIGNAL_ENV`] `=0` turns signals off; a driver
//! without `cuStreamWriteValue32_v2`, or one that refuses it, waits by the event alone.

use std::ptr::NonNull;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use cudarc::driver::{CudaContext, CudaStream, DriverError};
use parking_lot::Mutex;

use super::driver;
use super::event::Event;
use crate::log::{LogLevel, log};

/// Environment variable turning the signalled host wait off (`0`); on by default.
pub const CUDA_SIGNAL_ENV: &str = "COLLECTIVES_CUDA_SIGNAL";

/// How long a signalled wait spins before it blocks in the driver: longer work gains nothing
/// from a microsecond.
pub(crate) const SPIN_FOR: Duration = Duration::from_micros(200);

/// Work recorded at least this long ago is likely complete (on the H200 a 4 KiB kernel completes
/// 5–6 µs after its launch returns): a wait queries its event first, which answers at once,
/// where a signal would still wait for the GPU to reach its write. The later waits of a call
/// with several outputs, each of its own event, are such waits.
pub(crate) const FRESH: Duration = Duration::from_micros(5);

/// How often a spinning wait also queries the event.
pub(crate) const QUERY_EVERY: Duration = Duration::from_micros(2);

/// Slots in one pinned page.
const PAGE_SLOTS: usize = 1024;

/// One `u32` of a pinned page: its host address, which is also its device address (unified
/// addressing maps pinned memory at the same address in every context).
struct Slot(NonNull<AtomicU32>);

// SAFETY: a slot points into a pinned page that is never freed; the word is only accessed
// atomically (by the host) or written by the device.
unsafe impl Send for Slot {}

impl Slot {
    fn word(&self) -> &AtomicU32 {
        // SAFETY: the page is never freed and the word is aligned (see `Slot`).
        unsafe { self.0.as_ref() }
    }
}

/// Free slots, of every page allocated so far.
fn free() -> &'static Mutex<Vec<Slot>> {
    static F: OnceLock<Mutex<Vec<Slot>>> = OnceLock::new();
    F.get_or_init(Default::default)
}

/// The next sequence number (wrapping; numbers are compared by their difference).
static SEQ: AtomicU32 = AtomicU32::new(0);

/// Set when the driver refused a stream write: signals are off for the process.
static REFUSED: AtomicBool = AtomicBool::new(false);

/// Whether waits take signals: on unless [`CUDA_SIGNAL_ENV`] is `0`, the driver lacks the entry
/// point, or it refused a write.
pub(crate) fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    let on =
        *ON.get_or_init(|| crate::knob::switch(CUDA_SIGNAL_ENV, true) && driver::signal_status().is_ok());
    on && !REFUSED.load(Ordering::Relaxed)
}

/// Turns signals on or off for the process (the on/off probe), as far as [`CUDA_SIGNAL_ENV`] and
/// the driver allow.
#[cfg(test)]
pub(crate) fn force(on: bool) {
    REFUSED.store(!on, Ordering::Relaxed);
}

/// A free slot; a new page when none is, allocated in `ctx`.
fn take(ctx: &CudaContext) -> Option<Slot> {
    if let Some(s) = free().lock().pop() {
        return Some(s);
    }
    ctx.bind_to_thread().ok()?;
    // SAFETY: a context is current (bound above). The page is never freed.
    let page = unsafe { driver::alloc_pinned(PAGE_SLOTS * 4) }.ok()?;
    let words = page.cast::<AtomicU32>();
    let slots = (0..PAGE_SLOTS).map(|i| {
        // SAFETY: `i` is within the page, which holds PAGE_SLOTS aligned words (pinned memory is
        // page-aligned); AtomicU32 has u32's layout, and the page is only used through it.
        let w = unsafe { words.add(i) };
        // SAFETY: as above, the write initialises the word before any use.
        unsafe { w.write(AtomicU32::new(0)) };
        Slot(NonNull::new(w).expect("a pinned page is not null"))
    });
    let mut f = free().lock();
    f.extend(slots);
    f.pop()
}

/// A sequence number a stream writes into a slot when it reaches it.
pub(crate) struct Armed {
    slot: Option<Slot>,
    seq: u32,
}

impl Armed {
    /// Whether the slot has reached the number: the stream got there.
    pub fn reached(&self) -> bool {
        let Some(s) = &self.slot else { return false };
        reached(s.word().load(Ordering::Acquire), self.seq)
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        if let Some(s) = self.slot.take() {
            free().lock().push(s);
        }
    }
}

/// Whether `value`, read from a slot armed with `seq`, is `seq` or a later number.
fn reached(value: u32, seq: u32) -> bool {
    (value.wrapping_sub(seq) as i32) >= 0
}

/// Arms a slot on `stream` (of `ctx`): the stream writes a new number into it after the work
/// issued so far. `None` when signals are off, or a slot or the write failed (then they are off).
pub(crate) fn arm(ctx: &CudaContext, stream: &CudaStream) -> Option<Armed> {
    if !enabled() {
        return None;
    }
    let slot = take(ctx)?;
    let seq = SEQ.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
    slot.word().store(seq.wrapping_sub(1), Ordering::Relaxed);
    let addr = slot.0.as_ptr() as u64;
    let written = ctx.bind_to_thread().and_then(|()| {
        // SAFETY: the slot is pinned memory that is never freed, mapped at its host address
        // (unified addressing); the stream is alive for the call.
        unsafe { driver::stream_write_value(stream.cu_stream(), addr, seq) }
    });
    let armed = Armed { slot: Some(slot), seq };
    match written {
        Ok(()) => Some(armed),
        Err(e) => {
            REFUSED.store(true, Ordering::Relaxed);
            log!(
                LogLevel::Info,
                "cuda: host waits by events alone: the stream write failed ({})",
                driver::describe(e)
            );
            None
        }
    }
}

/// Waits for `event`'s work by `armed` (spinning) and by querying `event` every [`QUERY_EVERY`];
/// `true` once the work is complete, `false` after `spin` (the caller then blocks on the event).
pub(crate) fn spin(event: &Event, armed: &Armed, spin: Duration) -> Result<bool, DriverError> {
    let start = Instant::now();
    let mut next_query = start + QUERY_EVERY;
    loop {
        if armed.reached() {
            event.set_done();
            return Ok(true);
        }
        let now = Instant::now();
        if now >= next_query {
            if event.try_is_complete()? {
                return Ok(true);
            }
            if now - start >= spin {
                return Ok(false);
            }
            next_query = now + QUERY_EVERY;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use cudarc::driver::result::memset_d8_async;

    use super::{arm, reached, spin};
    use crate::backend::cuda::event;
    use crate::backend::cuda::tests::devices;

    /// On a CUDA device (skipped without): the stream's write lands in the slot; a wait whose
    /// write is queued behind more work ends by the event; a wait out of budget says so.
    #[test]
    fn a_signalled_wait_ends_by_the_streams_write_or_by_the_event_behind_later_work() {
        let Some(dev) = devices().into_iter().next() else {
            return;
        };
        if !(super::enabled() && dev.unified) {
            println!("skipped: signals are off on this device");
            return;
        }
        const BIG: usize = 1 << 30;
        let big = dev.alloc(BIG, &dev.compute).expect("alloc");
        dev.bind().unwrap();
        let (s, raw) = (&dev.compute, dev.compute.cu_stream());
        // SAFETY (every memset below): `big` holds BIG bytes on this device, alive until the
        // stream is synchronized at the end; the stream is alive.
        let fill = |bytes: usize| unsafe { memset_d8_async(big.ptr(), 7, bytes, raw).unwrap() };
        fill(4096);
        let e = event::record(s, dev.device).unwrap();
        let armed = arm(&dev.ctx, s).expect("armed");
        assert!(spin(&e, &armed, Duration::from_secs(10)).unwrap());
        s.synchronize().unwrap();
        assert!(armed.reached(), "the stream's write landed in the slot");

        fill(4096);
        let e = event::record(s, dev.device).unwrap();
        (0..4).for_each(|_| fill(BIG));
        let later = arm(&dev.ctx, s).expect("armed");
        assert!(spin(&e, &later, Duration::from_secs(10)).unwrap(), "the event ends the wait");
        let e = event::record(s, dev.device).unwrap();
        (0..4).for_each(|_| fill(BIG));
        let last = event::record(s, dev.device).unwrap();
        let armed = arm(&dev.ctx, s).expect("armed");
        assert!(!spin(&last, &armed, Duration::ZERO).unwrap(), "4 GiB of memsets outlast the budget");
        e.synchronize().unwrap();
        s.synchronize().unwrap();
        assert!(later.reached() && armed.reached());
    }

    #[test]
    fn a_slot_has_reached_its_number_once_it_holds_it_or_a_later_one_across_the_wrap() {
        assert!(!reached(4, 5));
        assert!(reached(5, 5));
        assert!(reached(6, 5));
        // The arm sets the slot just below its number, also where the number wraps.
        assert!(!reached(u32::MAX, 0));
        assert!(reached(0, u32::MAX));
        assert!(reached(2, u32::MAX - 1));
        // A stale write of an older number lowers the slot below a newer one.
        assert!(!reached(u32::MAX - 3, 7));
    }
}
