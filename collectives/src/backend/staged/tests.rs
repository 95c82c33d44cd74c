//! The pipeline against mock ends whose copies run late (only when waited for, as a device
//! queue may), so a missing wait shows as wrong bytes; the Vulkan ends through lavapipe's
//! host-memory import and its exported memory; and each CUDA ↔ Vulkan pair's bridge as a group
//! lists it. The device bridge's tests on one GPU are `one_gpu.rs`.

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

pub(super) fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
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
    // A plan names it too, for each move between the two (shards of f32 on every member, at
    // `HOST_STAGED_BELOW_BYTES`: smaller ones are one host call, the others staged through it).
    let len = crate::collective::HOST_STAGED_BELOW_BYTES / 4;
    let plan =
        g.with_leader(cu).unwrap().plan(crate::CollectiveKind::AllReduce, [len], crate::DType::F32).unwrap();
    let named: Vec<_> = plan.bridges.iter().map(|m| (m.from, m.to, m.bytes, m.bridge.clone())).collect();
    let bytes = 4 * len;
    assert_eq!(named, [(vk, cu, bytes, Some(b.to_string())), (cu, vk, bytes, Some(b.to_string()))], "{plan}");
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
    // What a graph is built with (the drivers' device lists, no device opened) agrees.
    let device = b == Bridge::Device;
    assert_eq!(super::ring::listed(cu, vk) == Bridge::Device, device, "{g}");
    assert_eq!((will_share_gpu(cu, vk), will_share_gpu(vk, cu)), (device, device), "{g}");
}
