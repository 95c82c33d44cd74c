//! Numbered flags: the compute stream's one completion word, whose numbers its kernels keep on
//! the device, so that a launch's parameters repeat from one call to the next.
//!
//! Why: a flag of the pool ([`super::flag`]) gives each launch a slot and a number of its own,
//! both among the launch's parameters, so no two launches' parameters are alike, and a launch
//! through a graph ([`super::relaunch`]) must set its node's parameters first. On an H100 that
//! cost 0.20–0.53 µs of a 4 KiB reduce or copy and its wait (`bench/gpu/63-final-tree`, run b,
//! `graph_launch_probe`: 6.76–7.64 µs without, 6.99–8.12 with). A stream's launches run one after
//! another, so the stream can number them itself.
//!
//! How: the compute stream keeps one slot for good, of a new page (no flag of the pool has had
//! it, so none of their stores can land there), and, in the word after its block counter
//! ([`super::device::CudaDevice::block_counter`]), the last number its kernels stored. A flagged
//! launch there is handed `DONE_NUMBERED` (its slot and counter, the same every time); its storing
//! thread stores one more than that word holds, into the word and the slot (`signal_done` in
//! `kernels.cu`). The host counts the launches it hands the flag to, under a lock held while a
//! step is issued, so the stream's numbered launches run in the order they are counted, and the
//! step's event waits for the count it reached. The host's count is never behind the device's:
//! a launch is counted when it is handed the flag, before it is made. Where issuing fails, a
//! launch counted may not have run; the host then waits for the stream and reads the word back
//! (a count left ahead would only send every later wait to its event).

use std::sync::atomic::Ordering;

use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUdeviceptr;
use parking_lot::Mutex;

use super::device::CudaDevice;
use super::driver;
use super::flag::{Flag, Slot, fresh_slot};
use crate::error::Result;

/// The numbered flags of a stream with a block counter.
pub(crate) struct Numbers {
    /// The stream's slot, which no other flag takes.
    slot: Slot,
    /// The stream's block counter; the word after it holds the last number stored.
    ctr: CUdeviceptr,
    /// The last number counted, held while a step is issued.
    last: Mutex<u32>,
}

impl Numbers {
    /// Numbers for the stream of `dev` whose block counter is `ctr` (the word after it zero), in
    /// a slot no flag has had ([`fresh_slot`]): a pooled flag's store still pending on a slot it
    /// gave back is of an unrelated number, which could land after this stream's own and read as
    /// reached a number the stream has not; `None` where no slot could be had.
    pub fn new(dev: &CudaDevice, ctr: CUdeviceptr) -> Option<Numbers> {
        let slot = fresh_slot(dev)?;
        slot.word().store(0, Ordering::Relaxed);
        Some(Numbers { slot, ctr, last: Mutex::new(0) })
    }

    /// Issues `issue` on `stream` (this one's, of `dev`) offered the stream's flag; returns the
    /// flag, numbered for the last launch it was handed to, where `issue` says that launch stores
    /// it (`None` where it stores none).
    pub fn issue(
        &self,
        dev: &CudaDevice,
        stream: &CudaStream,
        issue: impl FnOnce(Option<&Flag>) -> Result<bool>,
    ) -> Result<Option<Flag>> {
        let mut last = self.last.lock();
        let mut flag = Flag::numbered(self.slot, self.ctr);
        let stored = issue(Some(&flag));
        let handed = flag.handed();
        let stored = stored.inspect_err(|_| {
            if handed > 0 {
                self.read_back(dev, stream, &mut last);
            }
        })?;
        *last = last.wrapping_add(handed);
        flag.number(*last);
        Ok(Some(flag).filter(|_| stored && handed > 0))
    }

    /// Sets `last` to the number the device holds, once `stream`'s work has run; leaves it where
    /// the device cannot be asked (a wait then ends on its event).
    fn read_back(&self, dev: &CudaDevice, stream: &CudaStream, last: &mut u32) {
        if let Some(word) = dev.bind().ok().and_then(|()| read_word(stream, self.ctr + 4)) {
            *last = word;
        }
    }
}

/// The `u32` of device memory at `addr`, read once `stream`'s work has run (its context current);
/// `None` where the stream or the copy fails.
pub(super) fn read_word(stream: &CudaStream, addr: CUdeviceptr) -> Option<u32> {
    let mut word = 0u32;
    let raw = stream.cu_stream();
    stream.synchronize().ok()?;
    // SAFETY: `addr` is a word of device memory the caller keeps alive; `word` outlives the copy,
    // which the synchronize below completes.
    unsafe { driver::dtoh_async((&raw mut word).cast(), addr, 4, raw) }.ok()?;
    stream.synchronize().ok()?;
    Some(word)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::backend::cuda::flag::Number;
    use crate::backend::cuda::launch::{self, Launcher, Seg, copy_segments_flagged};
    use crate::backend::cuda::memory::{CudaFence, alloc_of};
    use crate::backend::cuda::tests::{devices, download, upload};
    use crate::backend::{Buffer, Kernel, OutSpec};
    use crate::dtype::DType;
    use crate::error::Error;
    use crate::graph::ReduceKind;

    /// The word after `ctr` (the last number stored there), read once `stream`'s work has run.
    fn device_number(stream: &CudaStream, ctr: CUdeviceptr) -> u32 {
        read_word(stream, ctr + 4).expect("the stream's last number")
    }

    /// Spins until `flag` is reached (at most ten seconds).
    fn reached(flag: &Flag) -> bool {
        let start = Instant::now();
        while !flag.reached() {
            if start.elapsed() > Duration::from_secs(10) {
                return false;
            }
            std::hint::spin_loop();
        }
        true
    }

    /// Copies of fresh random bytes (one block, and more counted in the stream's counter) on a
    /// stream of the test's own with numbers of its own, issued back to back: each step's flag is
    /// numbered one past the step before and, spun on newest first, is reached; the device's word
    /// and the host's count then both hold the last number, and every byte landed. A step handed
    /// the flag that fails before its launch reads the device's number back (the count does not
    /// move), and the next step is numbered one past it and reached. A launch on another stream
    /// is handed nothing by this flag. The stream's slot is not the one a pooled flag just gave
    /// back. On a CUDA device (skipped without).
    #[test]
    fn a_stream_numbers_its_steps_on_the_device_as_the_host_counts_them() {
        let Some(dev) = devices().into_iter().next() else {
            return;
        };
        let mut r = rand::rng();
        let stream = dev.ctx.new_stream().unwrap();
        let words = stream.alloc_zeros::<u32>(2).unwrap();
        let (ctr, _) = cudarc::driver::DevicePtr::device_ptr(&words, &stream);
        // A slot given back to the pool (where a store of its flag could still be pending) is the
        // pool's next; the stream's numbers take a slot no flag has had.
        let given_back = Flag::take(&dev).expect("a pooled flag").addr();
        let numbers = Numbers::new(&dev, ctr).expect("a slot");
        assert_ne!(numbers.slot.word().as_ptr() as u64, given_back, "a slot no flag has had");
        let l = Launcher::with_counter(&dev, &stream, ctr);
        let mut step = |bytes: usize| {
            let data: Vec<u8> = (0..bytes).map(|_| r.random()).collect();
            let (src, dst) = (upload(&dev, data.clone()), upload(&dev, vec![0u8; bytes]));
            src.wait().unwrap();
            dst.wait().unwrap();
            let seg: Seg =
                (alloc_of(&src, "t").unwrap().ptr(), alloc_of(&dst, "t").unwrap().ptr(), bytes as u64);
            // SAFETY: both ranges hold `bytes` on this device, alive until the stream is synchronized
            // (each step's buffers are kept to the end).
            let flag =
                numbers.issue(&dev, &stream, |flag| unsafe { copy_segments_flagged(&l, &[seg], flag) });
            (flag.unwrap().expect("the copy stores the flag"), dst, data)
        };
        let steps: Vec<_> = (0..40).map(|i| step([1, 4096, 1 << 20, 13][i % 4])).collect();
        for (i, w) in steps.windows(2).enumerate() {
            assert_eq!(
                w[1].0.seq(),
                w[0].0.seq().wrapping_add(1),
                "step {} numbered one past step {i}",
                i + 1
            );
        }
        for (i, (flag, _, _)) in steps.iter().enumerate().rev() {
            assert!(reached(flag), "step {i}'s flag reached");
        }
        let last = steps.last().unwrap().0.seq();
        assert_eq!((device_number(&stream, ctr), *numbers.last.lock()), (last, last));
        for (i, (_, dst, data)) in steps.iter().enumerate() {
            assert!(download::<u8>(&dev, dst) == *data, "step {i}: every byte copied");
        }

        let failed = numbers.issue(&dev, &stream, |flag| {
            let flag = flag.expect("the stream's flag");
            assert!(matches!(flag.hand_out(ctr), Some(Number::Streams)));
            assert!(flag.hand_out(dev.block_counter(&dev.copy_in)).is_none(), "another stream's launch");
            Err(Error::internal("numbers test", "a step that fails after taking its flag"))
        });
        assert!(failed.is_err());
        assert_eq!(*numbers.last.lock(), last, "read back: nothing launched");
        let (flag, dst, data) = step(4096);
        assert_eq!(flag.seq(), last.wrapping_add(1), "the next step");
        assert!(reached(&flag), "its flag reached");
        assert!(download::<u8>(&dev, &dst) == data, "after the failed step");
    }

    /// The library's kernels on the compute stream hold its numbered flag: reduces of fresh
    /// random inputs (one block and more) issued back to back, none waited for before the last,
    /// each numbered past the one before (other tests' steps may come between); waited for
    /// newest first, each finds its flag reached, and every output element is its f64 sum rounded
    /// once. On a CUDA device (skipped without).
    #[test]
    fn the_compute_streams_steps_take_its_numbered_flag() {
        let Some(dev) = devices().into_iter().next() else {
            return;
        };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        let numbers = dev.numbers(&dev.compute).expect("numbered flags on a device with unified addressing");
        let flag_of = |out: &Buffer| {
            let fence = out.fence.as_ref().expect("a fence");
            let event = &fence.as_any().downcast_ref::<CudaFence>().expect("a CUDA fence").event;
            event.flag().map(|f| (f.addr(), f.seq(), f.reached()))
        };
        let mut reduce = |n: usize| {
            let (a, b): (Vec<f32>, Vec<f32>) =
                (0..n).map(|_| (r.random_range(-1f32..1.0), r.random_range(-1f32..1.0))).unzip();
            let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| (*x as f64 + *y as f64) as f32).collect();
            let (a, b) = (upload(&dev, a), upload(&dev, b));
            let kernel = Kernel::Reduce { kind: ReduceKind::Sum, scale: None };
            (launch::compute(&dev, &kernel, &[&a, &b], OutSpec { dtype: DType::F32, len: n }).unwrap(), want)
        };
        let runs: Vec<_> = (0..40).map(|i| reduce([1, 7, 1000, 65_537][i % 4])).collect();
        let flags: Vec<_> = runs.iter().map(|(out, _)| flag_of(out).expect("a flag")).collect();
        assert!(
            flags.iter().all(|f| f.0 == numbers.slot.word().as_ptr() as u64),
            "seed {seed}: the stream's slot"
        );
        for w in flags.windows(2) {
            assert!((w[1].1.wrapping_sub(w[0].1) as i32) > 0, "seed {seed}: numbered in issue order");
        }
        for (i, (out, want)) in runs.iter().enumerate().rev() {
            out.wait().unwrap();
            assert_eq!(flag_of(out).map(|f| f.2), Some(true), "seed {seed}: step {i}'s flag reached");
            assert!(download::<f32>(&dev, out) == *want, "seed {seed}: step {i}, {} elements", want.len());
        }
    }
}
