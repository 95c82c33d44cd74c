//! The pipeline against mock ends whose copies run late (only when waited for, as a device
//! queue may), so a missing wait shows as wrong bytes; and the Vulkan end through lavapipe's
//! host-memory import.

use std::any::Any;
use std::sync::Arc;

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};

use super::*;
use crate::backend::Fence;
use crate::backend::chain::{ChunkEnd, Geometry, Span, pump, settle};

type Op = Box<dyn FnOnce() + Send>;

/// A queue of copies run in order, lazily: only when a fence at or past them is waited for.
#[derive(Default)]
struct Queue {
    ops: Vec<Option<Op>>,
    run: usize,
}

impl Queue {
    fn run_to(&mut self, end: usize) {
        while self.run < end {
            let op = self.ops[self.run].take().expect("runs once");
            op();
            self.run += 1;
        }
    }
}

struct LazyFence {
    queue: Arc<Mutex<Queue>>,
    end: usize,
}

impl Fence for LazyFence {
    fn wait(&self) -> Result<()> {
        self.queue.lock().run_to(self.end);
        Ok(())
    }

    fn is_complete(&self) -> bool {
        self.queue.lock().run >= self.end
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A host buffer and a ring, copied between by a queue that runs a submission only when a fence
/// at or past it is waited for, or (`eager`) as soon as it is issued; fails its `fail_at`-th
/// submission.
struct MockEnd {
    data: Arc<Mutex<Vec<u8>>>,
    ring: usize,
    ring_len: usize,
    queue: Arc<Mutex<Queue>>,
    eager: bool,
    /// Chunks copied.
    issued: usize,
    /// Calls (each one submission of its spans).
    submissions: usize,
    fail_at: Option<usize>,
}

impl MockEnd {
    fn new(data: Vec<u8>, ring: &mut [u8]) -> Self {
        MockEnd {
            data: Arc::new(Mutex::new(data)),
            ring: ring.as_mut_ptr() as usize,
            ring_len: ring.len(),
            queue: Default::default(),
            eager: false,
            issued: 0,
            submissions: 0,
            fail_at: None,
        }
    }

    fn eager(mut self, eager: bool) -> Self {
        self.eager = eager;
        self
    }

    fn issue(&mut self, spans: &[Span], into_ring: bool) -> Result<Option<Arc<dyn Fence>>> {
        self.submissions += 1;
        self.issued += spans.len();
        if self.fail_at == Some(self.submissions) || spans.iter().any(|s| s.at + s.len > self.ring_len) {
            return Err(Error::driver(Device::Cpu(0), "mock copy", "failed"));
        }
        let (data, ring, spans) = (self.data.clone(), self.ring, spans.to_vec());
        let op: Op = Box::new(move || {
            let mut d = data.lock();
            for s in &spans {
                // SAFETY: the ring outlives the test's queues (flushed before it drops) and
                // `at + len` is within it (checked above).
                let r = unsafe { std::slice::from_raw_parts_mut((ring + s.at) as *mut u8, s.len) };
                if into_ring {
                    r.copy_from_slice(&d[s.off..s.off + s.len])
                } else {
                    d[s.off..s.off + s.len].copy_from_slice(r)
                }
            }
        });
        let mut q = self.queue.lock();
        q.ops.push(Some(op));
        let end = q.ops.len();
        if self.eager {
            q.run_to(end);
        }
        Ok(Some(Arc::new(LazyFence { queue: self.queue.clone(), end })))
    }

    fn flush(&self) {
        let mut q = self.queue.lock();
        let n = q.ops.len();
        q.run_to(n);
    }
}

impl ChunkEnd for MockEnd {
    fn buffer_to_ring(&mut self, spans: &[Span]) -> Result<Option<Arc<dyn Fence>>> {
        self.issue(spans, true)
    }

    fn ring_to_buffer(&mut self, spans: &[Span]) -> Result<Option<Arc<dyn Fence>>> {
        self.issue(spans, false)
    }
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random()).collect()
}

#[test]
fn every_byte_arrives_whatever_the_ring_and_length() {
    let seed: u64 = rand::rng().random();
    for geo in
        [Geometry { chunk: 7, slots: 2 }, Geometry { chunk: 64, slots: 3 }, Geometry { chunk: 33, slots: 5 }]
    {
        for len in [0, 1, geo.chunk - 1, geo.chunk, geo.chunk * geo.slots, geo.chunk * 11 + 5] {
            for (eager_src, eager_dst) in [(false, false), (true, false), (false, true), (true, true)] {
                let ctx = format!("{geo:?}, {len} bytes, eager {eager_src}/{eager_dst} (seed {seed})");
                let mut ring = vec![0u8; geo.bytes()];
                let want = random_bytes(len, seed ^ len as u64);
                let mut src = MockEnd::new(want.clone(), &mut ring).eager(eager_src);
                let mut dst = MockEnd::new(vec![0; len], &mut ring).eager(eager_dst);
                let mut busy = vec![None; geo.slots];
                pump(&mut src, &mut dst, len, geo, &mut busy).unwrap();
                // A second transfer through the same ring waits for the first's last copies.
                let again = random_bytes(len, seed ^ 7);
                let mut src2 = MockEnd::new(again.clone(), &mut ring).eager(eager_src);
                let mut dst2 = MockEnd::new(vec![0; len], &mut ring).eager(eager_dst);
                pump(&mut src2, &mut dst2, len, geo, &mut busy).unwrap();
                dst2.flush();
                dst.flush();
                assert_eq!(*dst.data.lock(), want, "{ctx}");
                assert_eq!(*dst2.data.lock(), again, "{ctx}, second");
                let chunks = len.div_ceil(geo.chunk);
                assert_eq!(src.issued + src2.issued, 2 * chunks, "one first hop per chunk, {ctx}");
                assert_eq!(dst.issued + dst2.issued, 2 * chunks, "one second hop per chunk, {ctx}");
                if eager_src && chunks > 1 {
                    // First hops that have landed leave together.
                    assert!(dst.submissions < chunks, "{} submissions, {ctx}", dst.submissions);
                }
            }
        }
    }
}

#[test]
fn a_failed_copy_is_returned_after_every_issued_copy_has_run() {
    let geo = Geometry { chunk: 16, slots: 3 };
    for fail_at in 1..8 {
        for fail_src in [true, false] {
            let mut ring = vec![0u8; geo.bytes()];
            let mut src = MockEnd::new(random_bytes(16 * 10, 1), &mut ring);
            let mut dst = MockEnd::new(vec![0; 160], &mut ring);
            if fail_src {
                src.fail_at = Some(fail_at)
            } else {
                dst.fail_at = Some(fail_at)
            }
            let mut busy = vec![None; geo.slots];
            let err = pump(&mut src, &mut dst, 160, geo, &mut busy).unwrap_err();
            assert!(err.to_string().contains("mock copy"), "{err}");
            assert!(busy.iter().all(Option::is_none), "settled");
            for q in [&src.queue, &dst.queue] {
                let q = q.lock();
                assert_eq!(q.run, q.ops.len(), "every issued copy ran before the error returned");
            }
        }
    }
}

#[test]
fn bad_rings_are_errors() {
    let mut ring = vec![0u8; 8];
    let mut a = MockEnd::new(vec![0; 8], &mut ring);
    let mut b = MockEnd::new(vec![0; 8], &mut ring);
    assert!(pump(&mut a, &mut b, 8, Geometry { chunk: 8, slots: 1 }, &mut [None]).is_err());
    assert!(pump(&mut a, &mut b, 8, Geometry { chunk: 4, slots: 2 }, &mut [None]).is_err());
    assert!(transfer(&Buffer::from_vec(Device::Cpu(0), vec![1u8]), Device::Vulkan(0)).is_err());
    assert!(transport(Device::Cuda(0), Device::Cuda(1)).is_err());
}

/// Host → Vulkan and Vulkan → host through lavapipe's import of a ring (the Vulkan half of the
/// chain; the CUDA half is the GPU machine's to test).
#[cfg(all(feature = "cuda", feature = "vulkan"))]
#[test]
fn vulkan_end_through_an_imported_ring() {
    use crate::backend::vulkan::bridge;
    let vk = Device::Vulkan(0);
    let align = match bridge::import_alignment(vk) {
        Ok(a) => a.max(4096),
        other => {
            let why = format!("{other:?}");
            let required = std::env::var("REQUIRE_VULKAN").is_ok_and(|v| v == "1");
            assert!(!required, "REQUIRE_VULKAN=1 but no host import on {vk}: {why}");
            println!("skipped: no Vulkan host import ({why})");
            return;
        }
    };
    let geo = Geometry { chunk: 40_000, slots: 3 };
    let slab = Arc::new(ring::Slab::new(geo.bytes().div_ceil(align) * align, align).unwrap());
    // SAFETY: the slab is aligned as asked and kept alive by the view.
    let view = unsafe { bridge::import(vk, slab.ptr(), slab.len(), slab.clone()) }.unwrap();
    // SAFETY: the mock ends touch the slab only through copies the pipeline orders.
    let ring = unsafe { std::slice::from_raw_parts_mut(slab.ptr().as_ptr(), slab.len()) };
    let be = crate::backend::get(vk).unwrap();
    let mut busy = vec![None; geo.slots];
    for len in [0usize, 5, 40_000, 1_000_003] {
        let want = random_bytes(len, len as u64 + 3);
        // Every first hop lands at once, so the Vulkan end takes several chunks per submission.
        let mut src = MockEnd::new(want.clone(), ring).eager(true);
        let mut dst = bridge::dest_end(vk, len, &view).unwrap();
        pump(&mut src, &mut dst, len, geo, &mut busy).unwrap();
        let on_vk = dst.into_buffer(crate::DType::U8, len);
        let back = be.dtoh(&on_vk, Device::Cpu(0)).unwrap();
        back.wait().unwrap();
        assert_eq!(back.host_bytes("test").unwrap(), &want[..], "host -> vulkan, {len} bytes");

        let mut from = bridge::source_end(&on_vk, &view).unwrap();
        let mut into = MockEnd::new(vec![0; len], ring);
        pump(&mut from, &mut into, len, geo, &mut busy).unwrap();
        into.flush();
        assert_eq!(*into.data.lock(), want, "vulkan -> host, {len} bytes");
    }
    settle(&mut busy);
}

/// Vulkan → Vulkan through lavapipe's own memory exported as a ring (the Vulkan half of the
/// device bridge; the CUDA import is the GPU machine's to test): every byte arrives, and the
/// exported descriptor is a live file.
#[cfg(all(feature = "cuda", feature = "vulkan"))]
#[test]
fn vulkan_ends_through_an_exported_ring() {
    use crate::backend::vulkan::{bridge, export};
    let vk = Device::Vulkan(0);
    let geo = Geometry { chunk: 40_000, slots: 3 };
    let ex = match export::export(vk, geo.bytes()) {
        Ok(ex) => ex,
        Err(e) => {
            let required = std::env::var("REQUIRE_VULKAN").is_ok_and(|v| v == "1");
            let missing = e.to_string().contains("VK_KHR_external_memory_fd");
            assert!(!required || missing, "REQUIRE_VULKAN=1 but exporting failed: {e}");
            println!("skipped: {vk} cannot export memory ({e})");
            return;
        }
    };
    assert!(ex.size >= geo.bytes() as u64);
    let stat = std::fs::File::from(ex.fd).metadata();
    assert!(stat.is_ok(), "the exported descriptor is not a file: {stat:?}");
    let be = crate::backend::get(vk).unwrap();
    let mut busy = vec![None; geo.slots];
    for len in [0usize, 7, 40_000, 1_000_003] {
        let want = random_bytes(len, len as u64 + 11);
        let src = be.htod(&Buffer::from_vec(Device::Cpu(0), want.clone())).unwrap();
        let mut from = bridge::source_end(&src, &ex.view).unwrap();
        let mut into = bridge::dest_end(vk, len, &ex.view).unwrap();
        pump(&mut from, &mut into, len, geo, &mut busy).unwrap();
        let out = into.into_buffer(crate::DType::U8, len);
        let back = be.dtoh(&out, Device::Cpu(0)).unwrap();
        back.wait().unwrap();
        assert_eq!(back.host_bytes("test").unwrap(), &want[..], "{len} bytes through the exported ring");
    }
    settle(&mut busy);
}

/// CUDA ↔ Vulkan of one GPU through the device ring, both ways, every byte, for lengths from
/// empty to several times the ring (the GPU machine's test; skipped without both devices).
#[cfg(all(feature = "cuda", feature = "vulkan"))]
#[test]
fn one_gpu_moves_through_its_own_memory() {
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(0));
    let (Ok(cbe), Ok(vbe)) = (crate::backend::get(cu), crate::backend::get(vk)) else {
        let required =
            ["REQUIRE_CUDA", "REQUIRE_VULKAN"].iter().all(|v| std::env::var(v).is_ok_and(|v| v == "1"));
        assert!(!required, "REQUIRE_CUDA=1 and REQUIRE_VULKAN=1 but {cu} or {vk} is absent");
        println!("skipped: needs {cu} and {vk}");
        return;
    };
    let choice = ring::choice(cu, vk);
    let want_device = choice == crate::backend::chain::Bridge::Device;
    println!("{cu} <-> {vk}: {choice:?}");
    for (from, to) in [(cu, vk), (vk, cu)] {
        let t = transport(from, to).unwrap();
        assert_eq!(matches!(t, StagedTransport::Device { .. }), want_device, "{from} -> {to}: {t:?}");
        for len in [0usize, 5, 1_000_003, (1 << 20) + 3, (300 << 20) + 12_345] {
            let want = random_bytes(len, len as u64 + 5);
            let src_be = if from == cu { &cbe } else { &vbe };
            let src = src_be.htod(&Buffer::from_vec(Device::Cpu(0), want.clone())).unwrap();
            let out = transfer(&src, to).unwrap();
            assert_eq!(out.device, to);
            let dst_be = if to == cu { &cbe } else { &vbe };
            let back = dst_be.dtoh(&out, Device::Cpu(0)).unwrap();
            back.wait().unwrap();
            let got = back.host_bytes("test").unwrap();
            let wrong = got.iter().zip(&want).filter(|(a, b)| a != b).count();
            assert!(got.len() == len && wrong == 0, "{from} -> {to}, {len} bytes: {wrong} wrong");
        }
    }
}

/// A view of a Vulkan tensor in memory CUDA maps (a slice from an aligned offset) moves to CUDA
/// through the device bridge from its offset in the parent's mapping, every element right; and a
/// Vulkan kernel reads the view (the GPU machine's test; skipped without both devices of one GPU).
#[cfg(all(feature = "cuda", feature = "vulkan"))]
#[test]
fn a_vulkan_view_moves_to_cuda_from_its_offset() {
    use crate::backend::{Kernel, OutSpec};
    use crate::dtype::DType;
    use crate::graph::BinaryOp;
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(0));
    let Some((cbe, vbe)) = one_gpu_pair() else { return };
    let n = 1 << 20;
    let values: Vec<f32> =
        random_bytes(n * 4, 77).chunks(4).map(|c| f32::from(c[0]) - f32::from(c[1]) * 0.5).collect();
    let parent = Arc::new(vbe.htod(&Buffer::from_vec(Device::Cpu(0), values.clone())).unwrap());
    let read = |b: &Buffer, be: &Arc<dyn crate::backend::Backend>| -> Vec<f32> {
        let host = be.dtoh(b, Device::Cpu(0)).unwrap();
        host.wait().unwrap();
        bytemuck::cast_slice(host.host_bytes("test").unwrap()).to_vec()
    };
    for (start, len) in [(16384usize, 100_003usize), (n / 2, n / 2), (0, 5)] {
        let slice = Kernel::Slice { outer: 1, in_mid: n, start, len, inner: 1 };
        let view = crate::backend::view(&slice, &parent, vk).unwrap().expect("a view at a 64 KiB multiple");
        let moved = super::direct::to_cuda(&view, cu).unwrap().expect("through the device bridge");
        assert_eq!(read(&moved, &cbe), values[start..start + len], "from element {start}");
        let spec = OutSpec { dtype: DType::F32, len };
        let twice = read(&vbe.compute(&Kernel::Binary(BinaryOp::Add), &[&view, &view], spec).unwrap(), &vbe);
        for (i, got) in twice.into_iter().enumerate() {
            assert_eq!(got as f64, values[start + i] as f64 * 2.0, "add, element {}", start + i);
        }
    }
}

/// Where a device-ring hop's time goes on the GPU machine (run with `--ignored --nocapture`):
/// each side's issue and completion, for a small and a large chunk, both ways.
#[cfg(all(feature = "cuda", feature = "vulkan"))]
#[test]
#[ignore = "a timing probe for the GPU machine"]
fn device_ring_timing() {
    use crate::backend::{cuda, vulkan};
    use std::time::Instant;
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(0));
    let (Ok(cbe), Ok(vbe)) = (crate::backend::get(cu), crate::backend::get(vk)) else { return };
    let ring = 64usize << 20;
    let ex = vulkan::export::export(vk, ring).unwrap();
    // SAFETY: the descriptor names `ex.size` bytes of the same GPU; dropped before `ex.view`.
    let mem = unsafe { cuda::ImportedMem::new(cu, ex.fd, ex.size, ring) }.unwrap();
    let us = |t: Instant| t.elapsed().as_secs_f64() * 1e6;
    for len in [4096usize, 64 << 20] {
        let data = random_bytes(len, 1);
        let on_cu = cbe.htod(&Buffer::from_vec(Device::Cpu(0), data.clone())).unwrap();
        let on_vk = vbe.htod(&Buffer::from_vec(Device::Cpu(0), data)).unwrap();
        on_cu.wait().unwrap();
        on_vk.wait().unwrap();
        let span = [Span { at: 0, off: 0, len }];
        for round in 0..4 {
            let t = Instant::now();
            let mut from = cuda::source_end(&on_cu, cuda::RingMem::Device { mem: &mem, vk }).unwrap();
            let mut into = vulkan::bridge::dest_end(vk, len, &ex.view).unwrap();
            let t_ends = us(t);
            let t = Instant::now();
            let f = from.buffer_to_ring(&span).unwrap().unwrap();
            let t_issue_cu = us(t);
            let t = Instant::now();
            f.wait().unwrap();
            let t_wait_cu = us(t);
            let t = Instant::now();
            let g = into.ring_to_buffer(&span).unwrap().unwrap();
            let t_issue_vk = us(t);
            let t = Instant::now();
            g.wait().unwrap();
            let t_wait_vk = us(t);
            let t = Instant::now();
            let mut vfrom = vulkan::bridge::source_end(&on_vk, &ex.view).unwrap();
            let h = vfrom.buffer_to_ring(&span).unwrap().unwrap();
            h.wait().unwrap();
            let t_vk_out = us(t);
            let t = Instant::now();
            let mut cinto = cuda::dest_end(cu, len, cuda::RingMem::Device { mem: &mem, vk }).unwrap();
            let k = cinto.ring_to_buffer(&span).unwrap().unwrap();
            k.wait().unwrap();
            let t_cu_in = us(t);
            println!(
                "{len} B round {round}: ends {t_ends:.1} | cuda->ring issue {t_issue_cu:.1} wait {t_wait_cu:.1} | \
                 ring->vk issue {t_issue_vk:.1} wait {t_wait_vk:.1} | vk->ring {t_vk_out:.1} | ring->cuda {t_cu_in:.1} (us)"
            );
        }
    }
    drop(mem);
    for len in [4096usize, 1 << 20, 64 << 20, 1 << 30] {
        let on_cu = cbe.htod(&Buffer::from_vec(Device::Cpu(0), random_bytes(len, 2))).unwrap();
        on_cu.wait().unwrap();
        for round in 0..3 {
            let t = Instant::now();
            let out = transfer(&on_cu, vk).unwrap();
            out.wait().unwrap();
            let there = us(t);
            let t = Instant::now();
            let back = transfer(&out, cu).unwrap();
            back.wait().unwrap();
            let back_us = us(t);
            let gbs = |t: f64| len as f64 / t / 1e3;
            println!(
                "{len} B transfer round {round}: to vk {there:.1} us ({:.0} GB/s), back {back_us:.1} us ({:.0} GB/s)",
                gbs(there),
                gbs(back_us)
            );
        }
    }
}

/// A CUDA and a Vulkan device of one GPU whose memory sharing fails (made to, on this thread):
/// a new ring is a host ring, a direct move goes through the ring instead, and every byte still
/// arrives (the GPU machine's test; skipped without both devices).
#[cfg(all(feature = "cuda", feature = "vulkan"))]
#[test]
fn a_failed_share_falls_back_and_every_byte_still_arrives() {
    use crate::backend::chain::FAIL_SHARE;
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(0));
    let (Ok(cbe), Ok(vbe)) = (crate::backend::get(cu), crate::backend::get(vk)) else {
        println!("skipped: needs {cu} and {vk}");
        return;
    };
    // The table's rings are made before sharing fails, as other tests expect them.
    let before = [transport(cu, vk).unwrap(), transport(vk, cu).unwrap()];
    FAIL_SHARE.with(|f| f.set(true));
    let len = (3 << 20) + 16;
    let want = random_bytes(len, 77);
    let on_cu = cbe.htod(&Buffer::from_vec(Device::Cpu(0), want.clone())).unwrap();
    let check = |b: &Buffer, what: &str| {
        let be = if b.device == cu { &cbe } else { &vbe };
        let back = be.dtoh(b, Device::Cpu(0)).unwrap();
        back.wait().unwrap();
        assert_eq!(back.host_bytes("test").unwrap(), &want[..], "{what}");
    };
    let fresh = ring::fresh_transfer(&on_cu, vk);
    let direct = transfer(&on_cu, vk);
    FAIL_SHARE.with(|f| f.set(false));
    let (t, out) = fresh.unwrap();
    if matches!(before[0], StagedTransport::Device { .. }) {
        assert!(matches!(t, StagedTransport::Pipelined { .. }), "a failed share makes a host ring: {t:?}");
    }
    check(&out, "through a fresh ring");
    check(&direct.unwrap(), "a direct move whose import failed");
    let back = transfer(&out, cu).unwrap();
    back.wait().unwrap();
    check(&back, "back to CUDA");
}

/// The backends of `cuda:0` and `vulkan:0` where the two are one GPU whose memory they share (the
/// device bridge); `None`, having printed why, elsewhere.
#[cfg(all(feature = "cuda", feature = "vulkan"))]
fn one_gpu_pair() -> Option<(Arc<dyn crate::backend::Backend>, Arc<dyn crate::backend::Backend>)> {
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(0));
    let (Ok(cbe), Ok(vbe)) = (crate::backend::get(cu), crate::backend::get(vk)) else {
        println!("skipped: needs {cu} and {vk}");
        return None;
    };
    if ring::choice(cu, vk) != crate::backend::chain::Bridge::Device {
        println!("skipped: {cu} and {vk} are not one GPU");
        return None;
    }
    Some((cbe, vbe))
}

/// A move out of a Vulkan buffer issued while its Vulkan writer may still run waits for it on
/// the GPU, through the Vulkan timeline imported into CUDA, and reads the written values; with
/// the import refused (on this thread) it waits on the host, with the same values (the GPU
/// machine's test; skipped without both devices of one GPU).
#[cfg(all(feature = "cuda", feature = "vulkan"))]
#[test]
fn a_move_from_vulkan_waits_for_its_writer_on_the_gpu() {
    use crate::backend::cuda::timeline::{FAIL_TIMELINE, imported};
    use crate::backend::{Kernel, OutSpec};
    use crate::dtype::DType;
    use crate::graph::BinaryOp;
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(0));
    let Some((cbe, vbe)) = one_gpu_pair() else { return };
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let len = 16 << 20; // 64 MiB of f32: the fold runs long enough to be caught running
    for refused in [false, true] {
        let a: Vec<f32> = (0..len).map(|_| rng.random_range(-1.0..1.0)).collect();
        let b: Vec<f32> = (0..len).map(|_| rng.random_range(-1.0..1.0)).collect();
        let up = |v: &Vec<f32>| vbe.htod(&Buffer::from_vec(Device::Cpu(0), v.clone())).unwrap();
        let (va, vb) = (up(&a), up(&b));
        let spec = OutSpec { dtype: DType::F32, len };
        let sum = vbe.compute(&Kernel::Binary(BinaryOp::Add), &[&va, &vb], spec).unwrap();
        let running = !sum.fence.as_ref().is_none_or(|f| f.is_complete());
        FAIL_TIMELINE.with(|f| f.set(refused));
        // Straight to the direct move: an earlier test may have marked the pair's sharing
        // failed for this process, which only `transfer`'s choice reads.
        let out = direct::to_cuda(&sum, cu).unwrap().expect("shared memory");
        FAIL_TIMELINE.with(|f| f.set(false));
        assert_eq!(out.device, cu);
        assert!(imported(cu, vk), "{vk}'s timeline is imported into {cu}");
        let back = cbe.dtoh(&out, Device::Cpu(0)).unwrap();
        back.wait().unwrap();
        let got: &[f32] = bytemuck::cast_slice(back.host_bytes("test").unwrap());
        let want = |i: usize| (f64::from(a[i]) + f64::from(b[i])) as f32;
        let wrong = (0..len).filter(|&i| got[i] != want(i)).count();
        println!("import refused: {refused}; the writer still ran when the move was issued: {running}");
        assert!(got.len() == len && wrong == 0, "import refused: {refused}: {wrong} of {len} wrong");
    }
}

/// A Vulkan kernel reading a tensor just moved from CUDA, issued while the CUDA work before the
/// move may still run, waits for the move's signal on the GPU (a timeline of the Vulkan device
/// imported into CUDA and signalled after the copy) and reads the moved values; with the import
/// refused (on this thread) it waits on the host, with the same values (the GPU machine's test;
/// skipped without both devices of one GPU).
#[cfg(all(feature = "cuda", feature = "vulkan"))]
#[test]
fn a_vulkan_kernel_after_a_move_from_cuda_waits_for_it_on_the_gpu() {
    use crate::backend::cuda::timeline::{FAIL_TIMELINE, signalling};
    use crate::backend::vulkan::export::Signalled;
    use crate::backend::{Kernel, OutSpec};
    use crate::dtype::DType;
    use crate::graph::BinaryOp;
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(0));
    let Some((cbe, vbe)) = one_gpu_pair() else { return };
    let mut rng = rand::rngs::StdRng::seed_from_u64(12);
    let len = 16 << 20; // 64 MiB of f32; eight CUDA adds before the move keep it waiting
    let spec = OutSpec { dtype: DType::F32, len };
    let add = Kernel::Binary(BinaryOp::Add);
    for refused in [false, true] {
        let mut random = || (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect::<Vec<f32>>();
        let (a, b, c) = (random(), random(), random());
        let on = |be: &Arc<dyn crate::backend::Backend>, v: &Vec<f32>| {
            be.htod(&Buffer::from_vec(Device::Cpu(0), v.clone())).unwrap()
        };
        let (ca, cb, vc) = (on(&cbe, &a), on(&cbe, &b), on(&vbe, &c));
        vc.wait().unwrap();
        let mut sum = cbe.compute(&add, &[&ca, &cb], spec).unwrap();
        for _ in 1..8 {
            sum = cbe.compute(&add, &[&sum, &cb], spec).unwrap();
        }
        FAIL_TIMELINE.with(|f| f.set(refused));
        // Straight to the direct move: an earlier test may have marked the pair's sharing
        // failed for this process, which only `transfer`'s choice reads.
        let moved = direct::to_vulkan(&sum, vk).unwrap().expect("shared memory");
        FAIL_TIMELINE.with(|f| f.set(false));
        let fence = moved.fence.clone().expect("the copy's fence");
        let running = !fence.is_complete();
        let out = vbe.compute(&add, &[&moved, &vc], spec).unwrap();
        assert_eq!(fence.as_any().is::<Signalled>(), !refused, "import refused: {refused}");
        assert!(signalling(cu, vk) > 0, "{cu} signals {vk}");
        let back = vbe.dtoh(&out, Device::Cpu(0)).unwrap();
        back.wait().unwrap();
        let got: &[f32] = bytemuck::cast_slice(back.host_bytes("test").unwrap());
        let want = |i: usize| {
            let s = (1..8).fold((f64::from(a[i]) + f64::from(b[i])) as f32, |s, _| {
                (f64::from(s) + f64::from(b[i])) as f32
            });
            (f64::from(s) + f64::from(c[i])) as f32
        };
        let wrong = (0..len).filter(|&i| got[i] != want(i)).count();
        println!(
            "import refused: {refused}; the move still ran when the Vulkan kernel was issued: {running}"
        );
        assert!(got.len() == len && wrong == 0, "import refused: {refused}: {wrong} of {len} wrong");
    }
}

/// The device ring hands chunks over on the GPU, both ways: a move through it (four chunks
/// through two slots, so slots are reused too) is issued while the source's writer may still run
/// and reads every written value, the CUDA end's copies signalling the Vulkan end and the CUDA
/// end waiting on the Vulkan timeline; with the imports refused (on this thread), the same by
/// host waits (the GPU machine's test; skipped without both devices of one GPU).
#[cfg(all(feature = "cuda", feature = "vulkan"))]
#[test]
fn the_device_ring_hands_chunks_over_on_the_gpu() {
    use crate::backend::cuda::timeline::{FAIL_TIMELINE, signalling};
    use crate::backend::{Kernel, OutSpec, cuda, vulkan};
    use crate::dtype::DType;
    use crate::graph::BinaryOp;
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(0));
    let Some((cbe, vbe)) = one_gpu_pair() else { return };
    let len = 16 << 20; // 64 MiB of f32 through 2 slots of 16 MiB
    let geo = Geometry { chunk: 16 << 20, slots: 2 };
    let ex = vulkan::export::export(vk, geo.bytes()).unwrap();
    // SAFETY: the descriptor names `ex.size` bytes of the same GPU; dropped before `ex.view`.
    let mem = unsafe { cuda::ImportedMem::new(cu, ex.fd, ex.size, geo.bytes()) }.unwrap();
    let ring = cuda::RingMem::Device { mem: &mem, vk };
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    let spec = OutSpec { dtype: DType::F32, len };
    let add = Kernel::Binary(BinaryOp::Add);
    let mut busy = vec![None; geo.slots];
    for refused in [false, true] {
        for from_cuda in [true, false] {
            let (src_be, dst_be) = if from_cuda { (&cbe, &vbe) } else { (&vbe, &cbe) };
            let mut random = || (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect::<Vec<f32>>();
            let (a, b) = (random(), random());
            let up = |v: &Vec<f32>| src_be.htod(&Buffer::from_vec(Device::Cpu(0), v.clone())).unwrap();
            let (sa, sb) = (up(&a), up(&b));
            // Adds keep the source's writer running while the move is issued (more on Vulkan,
            // whose queue a submission reaches later than a CUDA launch its stream).
            let adds = if from_cuda { 8 } else { 64 };
            let mut sum = src_be.compute(&add, &[&sa, &sb], spec).unwrap();
            for _ in 1..adds {
                sum = src_be.compute(&add, &[&sum, &sb], spec).unwrap();
            }
            FAIL_TIMELINE.with(|f| f.set(refused));
            let t = std::time::Instant::now();
            let out = if from_cuda {
                let mut from = cuda::source_end(&sum, ring).unwrap();
                let mut into = vulkan::bridge::dest_end(vk, len * 4, &ex.view).unwrap();
                pump(&mut from, &mut into, len * 4, geo, &mut busy)
                    .map(|()| into.into_buffer(DType::F32, len))
            } else {
                let mut from = vulkan::bridge::source_end(&sum, &ex.view).unwrap();
                let mut into = cuda::dest_end(cu, len * 4, ring).unwrap();
                pump(&mut from, &mut into, len * 4, geo, &mut busy)
                    .and_then(|()| into.into_buffer(DType::F32, len))
            };
            let issue_us = t.elapsed().as_secs_f64() * 1e6;
            FAIL_TIMELINE.with(|f| f.set(false));
            let running = !sum.fence.as_ref().is_none_or(|f| f.is_complete());
            let back = dst_be.dtoh(&out.unwrap(), Device::Cpu(0)).unwrap();
            back.wait().unwrap();
            let got: &[f32] = bytemuck::cast_slice(back.host_bytes("test").unwrap());
            let want = |i: usize| {
                let s = (f64::from(a[i]) + f64::from(b[i])) as f32;
                (1..adds).fold(s, |s, _| (f64::from(s) + f64::from(b[i])) as f32)
            };
            let wrong = (0..len).filter(|&i| got[i] != want(i)).count();
            let way = if from_cuda { format!("{cu} -> {vk}") } else { format!("{vk} -> {cu}") };
            println!(
                "{way}, imports refused: {refused}; the move issued in {issue_us:.0} us, \
                 the writer still ran when it returned: {running}"
            );
            assert!(
                got.len() == len && wrong == 0,
                "{way}, imports refused: {refused}: {wrong} of {len} wrong"
            );
        }
        assert_eq!(signalling(cu, vk), 2, "both of {cu}'s copy streams signal {vk}");
    }
    settle(&mut busy);
}

/// The ceiling of the host ring on one GPU (run with `--ignored --nocapture` on the GPU machine):
/// the two hops of each direction's move as raw copies of 256 MiB between device memory and
/// page-locked host memory, each alone and both at once (on separate host buffers, so nothing
/// orders them), each copy's rate to its own completion. What the staged ring can reach on one
/// GPU is what the two APIs' copies reach together here.
#[cfg(all(feature = "cuda", feature = "vulkan"))]
#[test]
#[ignore = "a bandwidth probe for the GPU machine"]
fn two_apis_copying_at_once_probe() {
    use crate::backend::{cuda, vulkan};
    use std::time::Instant;
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(0));
    let (Ok(cbe), Ok(vbe)) = (crate::backend::get(cu), crate::backend::get(vk)) else { return };
    let len = 256usize << 20;
    let align = vulkan::bridge::import_alignment(vk).unwrap().max(4096);
    let slab = || Arc::new(ring::Slab::new(len.div_ceil(align) * align, align).unwrap());
    let (for_cuda, for_vulkan) = (slab(), slab());
    // SAFETY: the slabs outlive the registration and the import (dropped at the end, after every
    // copy has been waited for).
    let reg = unsafe { cuda::Registered::new(cu, for_cuda.ptr(), for_cuda.len()) }.unwrap();
    // SAFETY: as above; the view keeps its slab alive.
    let view = unsafe { vulkan::bridge::import(vk, for_vulkan.ptr(), for_vulkan.len(), for_vulkan.clone()) }
        .unwrap();
    let data = random_bytes(len, 9);
    let on_cu = cbe.htod(&Buffer::from_vec(Device::Cpu(0), data.clone())).unwrap();
    let on_vk = vbe.htod(&Buffer::from_vec(Device::Cpu(0), data)).unwrap();
    on_cu.wait().unwrap();
    on_vk.wait().unwrap();
    let span = [Span { at: 0, off: 0, len }];
    let gbps = |us: f64| len as f64 / us / 1e3;
    // Issues the copies `which` picks (cuda, vulkan), then polls both; each one's µs to completion.
    let run = |cuda_out: bool, which: (bool, bool)| -> (f64, f64) {
        let ring = cuda::RingMem::Host(&reg);
        let t = Instant::now();
        let mut fences: Vec<(usize, Arc<dyn Fence>)> = vec![];
        if which.0 {
            let f = if cuda_out {
                cuda::source_end(&on_cu, ring).unwrap().buffer_to_ring(&span)
            } else {
                cuda::dest_end(cu, len, ring).unwrap().ring_to_buffer(&span)
            };
            fences.push((0, f.unwrap().unwrap()));
        }
        if which.1 {
            let f = if cuda_out {
                vulkan::bridge::dest_end(vk, len, &view).unwrap().ring_to_buffer(&span)
            } else {
                vulkan::bridge::source_end(&on_vk, &view).unwrap().buffer_to_ring(&span)
            };
            fences.push((1, f.unwrap().unwrap()));
        }
        let mut done = [0.0f64; 2];
        while fences.iter().any(|(k, _)| done[*k] == 0.0) {
            for (k, f) in &fences {
                if done[*k] == 0.0 && f.is_complete() {
                    done[*k] = t.elapsed().as_secs_f64() * 1e6;
                }
            }
        }
        fences.iter().for_each(|(_, f)| f.wait().unwrap());
        (done[0], done[1])
    };
    for cuda_out in [true, false] {
        let (c, v) = if cuda_out { ("cuda d2h", "vulkan h2d") } else { ("cuda h2d", "vulkan d2h") };
        for round in 0..3 {
            let (alone_c, _) = run(cuda_out, (true, false));
            let (_, alone_v) = run(cuda_out, (false, true));
            let (both_c, both_v) = run(cuda_out, (true, true));
            println!(
                "round {round}: {c} alone {:.2} GB/s, {v} alone {:.2}; at once {c} {:.2}, {v} {:.2} GB/s",
                gbps(alone_c),
                gbps(alone_v),
                gbps(both_c),
                gbps(both_v)
            );
        }
    }
    drop(reg);
}

/// The line `a -> b: ...` of `g`'s listing.
fn listed(g: &crate::collective::DeviceGroup, a: Device, b: Device) -> String {
    let head = format!("{a} -> {b}:");
    let text = g.to_string();
    text.lines()
        .find(|l| l.trim_start().starts_with(&head))
        .unwrap_or_else(|| panic!("no {head} in {text}"))
        .to_string()
}

/// A group lists each CUDA ↔ Vulkan pair's bridge once it is decided, whichever order decided
/// it. `cuda:13` exists on no machine this runs on, so the bridge is the host everywhere.
#[test]
fn a_group_lists_each_cuda_vulkan_pair_with_its_bridge_once_decided() {
    let (cu, vk, cpu) = (Device::Cuda(13), Device::Vulkan(0), Device::Cpu(0));
    let g = crate::collective::DeviceGroup::new(vec![cpu, cu, vk]).unwrap();
    assert_eq!(decided_bridge(cu, vk), None);
    assert!(
        listed(&g, cu, vk).ends_with(", bridge: decided at the first move between them, or by validate()")
    );
    let b = decide_bridge(vk, cu).expect("a CUDA / Vulkan pair");
    assert!(matches!(&b, Bridge::Host(why) if !why.is_empty()), "{b:?}");
    assert_eq!(decided_bridge(cu, vk).as_ref(), Some(&b));
    for (x, y) in [(cu, vk), (vk, cu)] {
        assert!(listed(&g, x, y).ends_with(&format!("staged via cpu:0, bridge: {b}")), "{g}");
    }
    assert!(listed(&g, cpu, cu).ends_with(": direct") && listed(&g, vk, cpu).ends_with(": direct"), "{g}");
    // A plan names it too, for each move between the two (shards of 16 f32 on every member).
    let plan =
        g.with_leader(cu).unwrap().plan(crate::CollectiveKind::AllReduce, [16], crate::DType::F32).unwrap();
    let named: Vec<_> = plan.bridges.iter().map(|m| (m.from, m.to, m.bytes, m.bridge.clone())).collect();
    assert_eq!(named, [(vk, cu, 64, Some(b.to_string())), (cu, vk, 64, Some(b.to_string()))], "{plan}");
    assert_eq!((decide_bridge(cpu, vk), decided_bridge(cu, Device::Cuda(14))), (None, None));
}

/// Where `cuda:0` and `vulkan:0` are both present, `validate` decides their bridge: the device
/// where they are one GPU (unless `COLLECTIVES_BRIDGE=host`), else the host.
#[test]
fn validate_decides_the_bridge_of_a_present_pair() {
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(0));
    let g = crate::collective::DeviceGroup::new(vec![cu, vk]).unwrap();
    if let Err(e) = g.validate() {
        println!("skipped: needs cuda:0 and vulkan:0 ({e})");
        return;
    }
    let b = decided_bridge(cu, vk).expect("validate decided it");
    println!("{g}");
    assert!(listed(&g, cu, vk).ends_with(&format!("bridge: {b}")), "{g}");
    let same_gpu = crate::backend::cuda::uuid(cu).ok() == crate::backend::vulkan::export::uuid(vk).ok();
    if same_gpu
        && !crate::backend::chain::bridge_forced_host()
        && crate::backend::cuda::driver::interop_status().is_ok()
    {
        assert_eq!(b, Bridge::Device, "{g}");
    }
}
