//! Completion flags: a word of pinned host memory that a kernel writes as its last act, so a host
//! wait sees the kernel finish without the driver's event wake-up.
//!
//! Why: a realize waits on the host for every target, and on the H200 an event synchronize
//! returns 1.2–1.6 µs after a flag the kernel itself writes has landed in host memory
//! (`bench/gpu/28-completion`, run a: a 4 KiB add event-synchronized in 10.6 / 9.6 µs, the flag
//! spun on in 9.0 / 8.2). A word the *stream* writes behind the kernel (`cuStreamWriteValue32`)
//! was tried first and not kept: it is one more command for the GPU, and calls with an event per
//! output lost more by it than one-kernel calls gained (runs c, d). A kernel's own store costs
//! the GPU nothing more: alternated with events alone in one process (run e), every call ending
//! in a reduce gained 0.8–2.0 µs in every run (`local_reduce` on `cuda:0` 1.0–1.5, the 4 KiB
//! all_reduce of `cuda:0, cpu:0` 1.0–2.0) and no call lost; with copies flagged too (run g), the
//! star broadcast and reduce_scatter of eight devices and the all_gather of two gained 1.1–1.7.
//!
//! How: a kernel step takes a [`Flag`] — a *slot* (one `u32` of a pinned page no one frees) set
//! just below a new sequence number — and passes its address and number to its last launch
//! ([`super::launch::Done`]). Each block of that launch fences its writes — for its GPU alone where
//! every output lies in that GPU's memory ([`super::launch::Launcher::writing`]), else for the
//! system (`__threadfence_system`) — and syncs; a launch of one block (up to 1024 items, as many as
//! the kernel's registers allow: [`super::launch::Launcher::launch`]) then stores the number, and a
//! launch of more blocks counts its blocks done in a word of device memory, the block counted last
//! storing it (`kernels.cu`, `signal_done`), in either case after a system fence, which, fences
//! being cumulative, orders every block's writes before the store for the host too. That counter is
//! the stream's ([`super::device::CudaDevice::block_counter`]): launches on one stream run one
//! after another and each leaves it at zero, so no two launches count in it at once — which a
//! counter kept with the slot could not promise, since a slot goes back to its pool with its event,
//! even one whose kernel has not run. Only the compute stream has one; a launch of more blocks
//! elsewhere stores no flag. Every kernel of `kernels.cu` — reduce, segment copy (`copyseg`),
//! binary op, scale, cast, strided copy — takes the flag, and a small contiguous copy is a
//! `copyseg` launch rather than a driver copy so that it does too. The event recorded after the
//! launch holds the flag ([`super::event::issue_flagged`]); its waits spin on the slot, querying
//! the event every [`QUERY_EVERY`] (which also reports a failed kernel), and block on the event
//! after [`SPIN_FOR`]. A store still pending on a slot back in its pool only ever lowers it below a
//! newer number. The copy engine's copies are waited for by their events alone. A step on the
//! compute stream takes that stream's numbered flag instead ([`super::numbers`]): one slot kept
//! for good, and a number the stream's kernels keep on the device, so that a launch's parameters
//! do not change with its flag.

use std::ptr::NonNull;
use std::sync::OnceLock;
#[cfg(test)]
use std::sync::atomic::AtomicBool;
#[cfg(test)]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::device::CudaDevice;
use super::driver;

/// How long a flagged wait spins before it blocks on the event: longer work gains nothing from a
/// microsecond.
pub(crate) const SPIN_FOR: Duration = Duration::from_micros(200);

/// How often a spinning wait also queries the event. The queries cost next to nothing: against
/// every 20 µs and every 200 µs, alternated in one process, every call read within 0.13 µs
/// (`query_interval_probe`, `bench/gpu/55-verify` run a), and the soonest query reports a failed
/// kernel soonest.
pub(crate) const QUERY_EVERY: Duration = Duration::from_micros(2);

/// Slots in one pinned page.
const PAGE_SLOTS: usize = 1024;

/// One `u32` of a pinned page: its host address, which is also its device address (unified
/// addressing maps pinned memory at the same address in every context). A copy names the same
/// word; only a flag taken from the pool gives its slot back.
#[derive(Clone, Copy)]
pub(super) struct Slot(NonNull<AtomicU32>);

// SAFETY: a slot points into a pinned page that is never freed; the host only accesses the word
// atomically, and the device only stores to it.
unsafe impl Send for Slot {}
// SAFETY: as above.
unsafe impl Sync for Slot {}

impl Slot {
    pub(super) fn word(&self) -> &AtomicU32 {
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

/// Set by the on/off probe to take no flags.
#[cfg(test)]
static OFF: AtomicBool = AtomicBool::new(false);

/// Turns flags on or off for the process (the on/off probe, `probe.rs`).
#[cfg(test)]
pub(crate) fn force(on: bool) {
    OFF.store(!on, Ordering::Relaxed);
}

/// The query probe's interval between event queries in µs, in place of [`QUERY_EVERY`] (0: the
/// constant's).
#[cfg(test)]
static QUERY_US: AtomicU64 = AtomicU64::new(0);

/// Sets how often a spinning wait queries the event, for the process (the query probe,
/// `probe/flags.rs`); `None`: every [`QUERY_EVERY`].
#[cfg(test)]
pub(crate) fn force_query_every(every: Option<Duration>) {
    QUERY_US.store(every.map_or(0, |d| d.as_micros().max(1) as u64), Ordering::Relaxed);
}

/// How often a spinning wait queries the event: [`QUERY_EVERY`], or the probe's.
fn query_every() -> Duration {
    #[cfg(test)]
    if let us @ 1.. = QUERY_US.load(Ordering::Relaxed) {
        return Duration::from_micros(us);
    }
    QUERY_EVERY
}

/// Whether kernels take flags: always, but in the test binary, where the on/off probe turns them
/// off ([`force`]).
pub(super) fn taking() -> bool {
    #[cfg(test)]
    if OFF.load(Ordering::Relaxed) {
        return false;
    }
    true
}

/// A free slot; a new page when none is, allocated in `dev`'s context.
fn take_slot(dev: &CudaDevice) -> Option<Slot> {
    if let Some(s) = free().lock().pop() {
        return Some(s);
    }
    fresh_slot(dev)
}

/// A slot no flag has had, so that no kernel's store can still be pending on it: one of a new
/// page, allocated in `dev`'s context, whose other slots join the free ones.
pub(super) fn fresh_slot(dev: &CudaDevice) -> Option<Slot> {
    dev.bind().ok()?;
    // SAFETY: a context is current (bound above). The page is never freed.
    let page = unsafe { driver::alloc_pinned(PAGE_SLOTS * 4) }.ok()?;
    let words = page.cast::<AtomicU32>();
    let mut slots: Vec<Slot> = (0..PAGE_SLOTS)
        .map(|i| {
            // SAFETY: `i` is within the page, which holds PAGE_SLOTS aligned words (pinned memory
            // is page-aligned); AtomicU32 has u32's layout, and the page is only used through it.
            let w = unsafe { words.add(i) };
            // SAFETY: as above; the write initialises the word before any use.
            unsafe { w.write(AtomicU32::new(0)) };
            Slot(NonNull::new(w).expect("a pinned page is not null"))
        })
        .collect();
    let slot = slots.pop();
    free().lock().extend(slots);
    slot
}

/// A sequence number a kernel stores into a slot when it is done: a slot of the pool's and the
/// number given it, or a stream's numbered flag ([`super::numbers`]).
pub(crate) struct Flag {
    slot: Option<Slot>,
    seq: u32,
    /// Where the flag is a stream's numbered one: that stream's block counter (the launches it
    /// is handed to run there) and how many launches it was handed to.
    numbered: Option<(u64, AtomicU32)>,
}

/// The number a launch handed a flag stores ([`Flag::hand_out`]).
pub(crate) enum Number {
    /// This one.
    Given(u32),
    /// The stream's next, kept on the device (`DONE_NUMBERED` in `kernels.cu`).
    Streams,
}

impl Flag {
    /// A new flag for a kernel of `dev`, where its memory maps pinned host memory at its host
    /// address; `None` where not, or no slot could be had.
    pub fn take(dev: &CudaDevice) -> Option<Flag> {
        if !taking() || !dev.unified {
            return None;
        }
        let slot = take_slot(dev)?;
        let seq = SEQ.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        slot.word().store(seq.wrapping_sub(1), Ordering::Relaxed);
        Some(Flag { slot: Some(slot), seq, numbered: None })
    }

    /// The numbered flag of the stream whose block counter is `ctr`, in `slot` (its word), to be
    /// handed to that stream's launches; its number is set once they are issued ([`Flag::number`]).
    pub(super) fn numbered(slot: Slot, ctr: u64) -> Flag {
        Flag { slot: Some(slot), seq: 0, numbered: Some((ctr, AtomicU32::new(0))) }
    }

    /// The number a launch on the stream whose block counter is `ctr` (0: none) stores, counting
    /// the launch where the stream numbers it; `None` where this is another stream's numbered
    /// flag (that launch then stores none).
    pub fn hand_out(&self, ctr: u64) -> Option<Number> {
        match &self.numbered {
            None => Some(Number::Given(self.seq)),
            Some((c, handed)) if *c == ctr && ctr != 0 => {
                handed.fetch_add(1, Ordering::Relaxed);
                Some(Number::Streams)
            }
            Some(_) => None,
        }
    }

    /// How many launches a numbered flag was handed to (0 for a pool's).
    pub(super) fn handed(&self) -> u32 {
        self.numbered.as_ref().map_or(0, |(_, n)| n.load(Ordering::Relaxed))
    }

    /// Sets the number a numbered flag's last launch stores, once they are issued.
    pub(super) fn number(&mut self, seq: u32) {
        self.seq = seq;
    }

    /// The slot's address (host and device), as the kernel takes it.
    pub fn addr(&self) -> u64 {
        self.slot.as_ref().map_or(0, |s| s.0.as_ptr() as u64)
    }

    /// The number the kernel stores.
    #[cfg(test)]
    pub fn seq(&self) -> u32 {
        self.seq
    }

    /// Whether the kernel has stored its number (or a later one is there).
    pub fn reached(&self) -> bool {
        self.slot.as_ref().is_some_and(|s| reached(s.word().load(Ordering::Acquire), self.seq))
    }
}

impl Drop for Flag {
    fn drop(&mut self) {
        // A numbered flag's slot is its stream's, kept for good.
        if let Some(s) = self.slot.take().filter(|_| self.numbered.is_none()) {
            free().lock().push(s);
        }
    }
}

/// Whether `value`, read from a slot armed with `seq`, is `seq` or a later number.
fn reached(value: u32, seq: u32) -> bool {
    (value.wrapping_sub(seq) as i32) >= 0
}

/// Spins until `flag` is reached or `query` (the event's) says the work is complete, asking it
/// every [`QUERY_EVERY`]; `true` once complete, `false` after `spin` (the caller then blocks).
pub(crate) fn spin<E>(
    flag: &Flag,
    spin: Duration,
    mut query: impl FnMut() -> Result<bool, E>,
) -> Result<bool, E> {
    let start = Instant::now();
    let every = query_every();
    let mut next_query = start + every;
    loop {
        if flag.reached() {
            return Ok(true);
        }
        let now = Instant::now();
        if now >= next_query {
            if query()? {
                return Ok(true);
            }
            if now - start >= spin {
                return Ok(false);
            }
            next_query = now + every;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::{Flag, reached, spin};
    use crate::backend::cuda::device::CudaDevice;
    use crate::backend::cuda::event::issue_flagged;
    use crate::backend::cuda::launch::{self, Launcher, Seg, copy_segments_flagged};
    use crate::backend::cuda::memory::{CudaFence, alloc_of};
    use crate::backend::cuda::tests::{
        as_dtype, close, devices, download, expected, random_vals, to_buffer, to_f64s, upload,
    };
    use crate::backend::{Kernel, OutSpec};
    use crate::dtype::DType;
    use crate::graph::ReduceOp;

    /// A reduce takes a flag, stores it by the time its wait returns, and its result is right:
    /// every dtype, 1, 7 and 1024 elements (one block: 64 to 512 threads), 65 537 and 1 048 576
    /// (more blocks: the last to finish stores it) and none (no launch, no flag), three inputs of
    /// fresh random values, every element against the f64 reference, read back by a copy the
    /// flag alone orders (the event is not waited for). The compute stream's block counter is
    /// back at zero after. On a CUDA device (skipped without).
    #[test]
    fn a_reduce_stores_its_flag_before_its_wait_returns() {
        let Some(dev) = devices().into_iter().next() else {
            return;
        };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        for dtype in DType::ALL {
            for n in [0usize, 1, 7, 1024, 65_537, 1 << 20] {
                let ins: Vec<Vec<f64>> = (0..3).map(|_| random_vals(dtype, n, false, &mut r)).collect();
                let bufs: Vec<_> = ins.iter().map(|x| to_buffer(&dev, dtype, x)).collect();
                let refs: Vec<_> = bufs.iter().collect();
                let (kind, scale) = ReduceOp::Sum.lower(3);
                let out =
                    launch::compute(&dev, &Kernel::Reduce { kind, scale }, &refs, OutSpec { dtype, len: n })
                        .expect("reduce");
                let fence = out.fence.as_ref().expect("a fence");
                let event = &fence.as_any().downcast_ref::<CudaFence>().expect("a CUDA fence").event;
                let ctx = format!("seed {seed} {dtype} n {n}");
                // An empty reduce launches nothing; any other stores the flag, in one block or more.
                assert_eq!(event.flag().is_some(), n > 0, "{ctx}: a flag where a kernel runs");
                out.wait().expect("wait");
                assert!(event.flag().is_none_or(Flag::reached), "{ctx}: the kernel stored its flag");
                let (want, mag) = expected(ReduceOp::Sum, dtype, &ins);
                for (i, (g, w)) in to_f64s(&dev, &out).into_iter().zip(want).enumerate() {
                    assert!(close(dtype, g, w, mag[i], 3), "{ctx}: [{i}] got {g:e} want {w:e}");
                }
            }
        }
        assert_eq!(block_count(&dev), 0, "seed {seed}: every launch left the counter at zero");
    }

    /// The compute stream's block counter, read once its work has run.
    fn block_count(dev: &CudaDevice) -> u32 {
        let ctr = dev.block_counter(&dev.compute);
        assert_ne!(ctr, 0, "the compute stream has a block counter");
        dev.synchronize().unwrap();
        crate::backend::cuda::numbers::read_word(&dev.compute, ctr).expect("the block counter")
    }

    /// A `copyseg` launch takes a flag and stores it by the time its event's wait returns, and
    /// every byte lands: segments of 1 and 7 bytes (one block of byte units), two of 4 KiB (one
    /// block of 16-byte units); two of 4 KiB and one of 13 bytes (byte units, more blocks) and one
    /// of 1 MiB (more blocks), on the compute stream, which has a block counter. On another
    /// stream, which has none, only the one-block launches store it. Fresh random bytes, every
    /// byte compared. On a CUDA device (skipped without).
    #[test]
    fn a_copy_stores_its_flag_and_copies_every_byte() {
        let Some(dev) = devices().into_iter().next() else {
            return;
        };
        let mut r = rand::rng();
        let cases = [
            (vec![1usize, 7], true),
            (vec![4096, 4096], true),
            (vec![4096, 4096, 13], false),
            (vec![1 << 20], false),
        ];
        for (lens, one_block) in cases {
            for (stream, counted) in [(&dev.compute, true), (&dev.copy_in, false)] {
                let total: usize = lens.iter().sum();
                let bytes: Vec<u8> = (0..total).map(|_| r.random()).collect();
                let (src, dst) = (upload(&dev, bytes.clone()), upload(&dev, vec![0u8; total]));
                src.wait().unwrap();
                dst.wait().unwrap();
                let (s, d) = (alloc_of(&src, "t").unwrap().ptr(), alloc_of(&dst, "t").unwrap().ptr());
                let mut at = 0u64;
                let segs: Vec<Seg> = lens
                    .iter()
                    .map(|&n| {
                        at += n as u64;
                        (s + at - n as u64, d + at - n as u64, n as u64)
                    })
                    .collect();
                let ctx = format!("{lens:?}, counted {counted}");
                let stores = one_block || counted;
                let l = Launcher::new(&dev, stream);
                let e = issue_flagged(&dev, stream, |flag| {
                    assert!(flag.is_some(), "a flag on a device with unified addressing");
                    // SAFETY: every segment lies within `src` and `dst` (distinct allocations of
                    // `total` bytes on this device), alive until the event below is waited for.
                    let flagged = unsafe { copy_segments_flagged(&l, &segs, flag) }?;
                    assert_eq!(flagged, stores, "{ctx}");
                    Ok(flagged)
                })
                .expect("copy");
                assert_eq!(e.flag().is_some(), stores, "{ctx}: the event holds the stored flag");
                e.synchronize().unwrap();
                assert!(e.flag().is_none_or(Flag::reached), "{ctx}: the kernel stored its flag");
                assert!(download::<u8>(&dev, &dst) == bytes, "{ctx}: every byte copied");
            }
        }
        assert_eq!(block_count(&dev), 0, "every launch left the counter at zero");
    }

    /// Every other kernel stores its flag too: an add, a scale (f32 and i32), a cast to f16, a
    /// copy (a cast to the same dtype: `copyseg`), a strided slice and a concat of rows, at 1, 7
    /// and 1024 elements (one block, or more where the kernel's registers do not allow 1024
    /// threads) and 65 537 (more blocks); the kernel has stored it by the time the wait returns.
    /// Fresh random inputs, every element against the f64 reference, read back by a copy the flag
    /// alone orders. On a CUDA device (skipped without).
    #[test]
    fn every_kernel_stores_its_flag() {
        let Some(dev) = devices().into_iter().next() else {
            return;
        };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        for n in [1usize, 7, 1024, 65_537] {
            for (what, kernel, ins, in_dtype, dtype, want) in cases(n, &mut r) {
                let ctx = format!("seed {seed}, {what}, n {n}");
                let bufs: Vec<_> = ins.iter().map(|x| to_buffer(&dev, in_dtype, x)).collect();
                let refs: Vec<_> = bufs.iter().collect();
                let out =
                    launch::compute(&dev, &kernel, &refs, OutSpec { dtype, len: want.len() }).expect(&ctx);
                let fence = out.fence.as_ref().expect("a fence");
                let event = &fence.as_any().downcast_ref::<CudaFence>().expect("a CUDA fence").event;
                assert!(event.flag().is_some(), "{ctx}: the kernel takes a flag");
                out.wait().expect("wait");
                assert!(event.flag().is_none_or(Flag::reached), "{ctx}: the kernel stored its flag");
                // An add rounds once against its inputs' magnitude; the rest are exact or one rounding.
                let mag = |i: usize| match kernel {
                    Kernel::Binary(_) => ins[0][i].abs() + ins[1][i].abs(),
                    _ => want[i].abs(),
                };
                for (i, (g, w)) in to_f64s(&dev, &out).into_iter().zip(&want).enumerate() {
                    assert!(close(dtype, g, *w, mag(i), 3), "{ctx}: [{i}] got {g:e} want {w:e}");
                }
            }
        }
        assert_eq!(block_count(&dev), 0, "seed {seed}: every launch left the counter at zero");
    }

    /// One case of [`every_kernel_stores_its_flag`]: what, the kernel, its inputs'
    /// values and dtype, the output dtype, the f64 reference of every output element.
    type Case = (&'static str, Kernel, Vec<Vec<f64>>, DType, DType, Vec<f64>);

    /// The cases at `n` elements (a slice or concat: `n` rows).
    fn cases(n: usize, r: &mut StdRng) -> Vec<Case> {
        use crate::graph::{BinaryOp, Scale};
        let (f32s, i32s) = (random_vals(DType::F32, n, false, r), random_vals(DType::I32, n, false, r));
        let other = random_vals(DType::F32, n, false, r);
        let add = f32s.iter().zip(&other).map(|(a, b)| as_dtype(DType::F32, a + b)).collect();
        let rows = random_vals(DType::F32, n * 5, false, r);
        // Columns 1..4 of 5; and rows of 2 and 3 columns joined.
        let sliced = rows.chunks(5).flat_map(|row| row[1..4].to_vec()).collect();
        let (left, right): (Vec<f64>, Vec<f64>) = (rows[..n * 2].to_vec(), rows[n * 2..].to_vec());
        let joined =
            (0..n).flat_map(|i| [&left[i * 2..i * 2 + 2], &right[i * 3..i * 3 + 3]].concat()).collect();
        vec![
            (
                "add f32",
                Kernel::Binary(BinaryOp::Add),
                vec![f32s.clone(), other],
                DType::F32,
                DType::F32,
                add,
            ),
            (
                "scale f32",
                Kernel::Scale(Scale::Mul(3.0)),
                vec![f32s.clone()],
                DType::F32,
                DType::F32,
                f32s.iter().map(|x| as_dtype(DType::F32, x * 3.0)).collect(),
            ),
            (
                "scale i32",
                Kernel::Scale(Scale::Mul(-3.0)),
                vec![i32s.clone()],
                DType::I32,
                DType::I32,
                i32s.iter().map(|x| x * -3.0).collect(),
            ),
            (
                "cast f32 -> f16",
                Kernel::Cast,
                vec![f32s.clone()],
                DType::F32,
                DType::F16,
                f32s.iter().map(|&x| as_dtype(DType::F16, x)).collect(),
            ),
            ("copy (cast to f32)", Kernel::Cast, vec![f32s.clone()], DType::F32, DType::F32, f32s),
            (
                "strided slice",
                Kernel::Slice { outer: n, in_mid: 5, start: 1, len: 3, inner: 1 },
                vec![rows],
                DType::F32,
                DType::F32,
                sliced,
            ),
            (
                "concat of rows",
                Kernel::Concat { outer: n, mids: vec![2, 3], inner: 1 },
                vec![left, right],
                DType::F32,
                DType::F32,
                joined,
            ),
        ]
    }

    #[test]
    fn a_slot_has_reached_its_number_once_it_holds_it_or_a_later_one_across_the_wrap() {
        assert!(!reached(4, 5));
        assert!(reached(5, 5));
        assert!(reached(6, 5));
        // A flag sets its slot just below its number, also where the number wraps.
        assert!(!reached(u32::MAX, 0));
        assert!(reached(0, u32::MAX));
        assert!(reached(2, u32::MAX - 1));
        // A stale store of an older number lowers the slot below a newer one.
        assert!(!reached(u32::MAX - 3, 7));
    }

    /// A spin ends when the flag is reached, when the query says done, or out of its budget; a
    /// query's error ends it. On a CUDA device (skipped without), where slots exist.
    #[test]
    fn a_spin_ends_by_the_flag_the_query_or_the_budget() {
        let Some(dev) = devices().into_iter().next() else {
            return;
        };
        let f = Flag::take(&dev).expect("a flag on a device with unified addressing");
        assert!(!f.reached());
        assert_eq!(spin(&f, Duration::ZERO, || Ok::<_, ()>(false)), Ok(false));
        assert_eq!(spin(&f, Duration::from_secs(10), || Ok::<_, ()>(true)), Ok(true));
        assert_eq!(spin(&f, Duration::from_secs(10), || Err::<bool, _>("failed")), Err("failed"));
        // SAFETY: the slot is this flag's, alive while it is; the host stores as the kernel would.
        unsafe {
            (*(f.addr() as *const std::sync::atomic::AtomicU32))
                .store(f.seq(), std::sync::atomic::Ordering::Release)
        };
        assert!(f.reached());
        assert_eq!(spin(&f, Duration::ZERO, || Err::<bool, _>("not asked")), Ok(true));
        let g = Flag::take(&dev).expect("flag");
        assert_ne!(f.addr(), g.addr(), "two live flags have two slots");
        assert!(!g.reached(), "a new flag starts below its number");
    }
}
