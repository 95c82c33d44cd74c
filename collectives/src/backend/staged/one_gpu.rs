//! The device bridge on the GPU machine: a CUDA and a Vulkan device of one GPU moving tensors
//! through its own memory (the device ring and direct copies), the two APIs' work ordered on the
//! GPU, and the fallbacks when sharing fails; each test skips, saying why, without both devices
//! of one GPU. The probes (ignored) time the ring's hops and the host ring's ceiling.

use std::sync::Arc;

use rand::{Rng, SeedableRng};

use super::tests::random_bytes;
use super::*;
use crate::backend::chain::{ChunkEnd, Geometry, Span, pump, settle};

/// CUDA ↔ Vulkan of one GPU through the device ring, both ways, every byte, for lengths from
/// empty to several times the ring (the GPU machine's test; skipped without both devices).
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
        let moved = super::direct::to_cuda(&view, cu, cu).unwrap().expect("through the device bridge");
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
#[test]
fn a_move_from_vulkan_waits_for_its_writer_on_the_gpu() {
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(0));
    let Some((cbe, vbe)) = one_gpu_pair() else { return };
    from_vulkan_after_its_writer((&cbe, cu), (&vbe, vk), cu);
}

/// [`a_move_from_vulkan_waits_for_its_writer_on_the_gpu`] between `cu` and `vk` through `via`, a
/// CUDA device of `vk`'s GPU (`cu` itself, or its peer: the peer bridge).
pub(super) fn from_vulkan_after_its_writer(
    (cbe, cu): (&Arc<dyn crate::backend::Backend>, Device),
    (vbe, vk): (&Arc<dyn crate::backend::Backend>, Device),
    via: Device,
) {
    use crate::backend::cuda::timeline::{FAIL_TIMELINE, imported};
    use crate::backend::{Kernel, OutSpec};
    use crate::dtype::DType;
    use crate::graph::BinaryOp;
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let len = 16 << 20; // 64 MiB of f32: the fold runs long enough to be caught running
    for refused in [false, true] {
        let a: Vec<f32> = (0..len).map(|_| rng.random_range(-1.0..1.0)).collect();
        let b: Vec<f32> = (0..len).map(|_| rng.random_range(-1.0..1.0)).collect();
        let up = |v: &Vec<f32>| vbe.htod(&Buffer::from_vec(Device::Cpu(0), v.clone())).unwrap();
        let (va, vb) = (up(&a), up(&b));
        let spec = OutSpec { dtype: DType::F32, len };
        let sum = vbe.compute(&Kernel::Binary(BinaryOp::Add), &[&va, &vb], spec).unwrap();
        let running = !sum.is_complete();
        FAIL_TIMELINE.with(|f| f.set(refused));
        // Straight to the direct move: an earlier test may have marked the pair's sharing
        // failed for this process, which only `transfer`'s choice reads.
        let out = direct::to_cuda(&sum, cu, via).unwrap().expect("shared memory");
        FAIL_TIMELINE.with(|f| f.set(false));
        assert_eq!(out.device, cu);
        assert!(imported(via, vk), "{vk}'s timeline is imported into {via}");
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
#[test]
fn a_vulkan_kernel_after_a_move_from_cuda_waits_for_it_on_the_gpu() {
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(0));
    let Some((cbe, vbe)) = one_gpu_pair() else { return };
    vulkan_kernel_after_a_move((&cbe, cu), (&vbe, vk), cu);
}

/// [`a_vulkan_kernel_after_a_move_from_cuda_waits_for_it_on_the_gpu`] between `cu` and `vk`
/// through `via`, a CUDA device of `vk`'s GPU (`cu` itself, or its peer: the peer bridge).
pub(super) fn vulkan_kernel_after_a_move(
    (cbe, cu): (&Arc<dyn crate::backend::Backend>, Device),
    (vbe, vk): (&Arc<dyn crate::backend::Backend>, Device),
    via: Device,
) {
    use crate::backend::cuda::timeline::{FAIL_TIMELINE, signalling};
    use crate::backend::vulkan::export::Signalled;
    use crate::backend::{Kernel, OutSpec};
    use crate::dtype::DType;
    use crate::graph::BinaryOp;
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
        let (ca, cb, vc) = (on(cbe, &a), on(cbe, &b), on(vbe, &c));
        vc.wait().unwrap();
        let mut sum = cbe.compute(&add, &[&ca, &cb], spec).unwrap();
        for _ in 1..8 {
            sum = cbe.compute(&add, &[&sum, &cb], spec).unwrap();
        }
        assert_eq!(sum.device, cu, "the CUDA end");
        FAIL_TIMELINE.with(|f| f.set(refused));
        // Straight to the direct move: an earlier test may have marked the pair's sharing
        // failed for this process, which only `transfer`'s choice reads.
        let moved = direct::to_vulkan(&sum, vk, via).unwrap().expect("shared memory");
        FAIL_TIMELINE.with(|f| f.set(false));
        let fence = moved.fence.clone().expect("the copy's fence");
        let running = !fence.is_complete();
        let out = vbe.compute(&add, &[&moved, &vc], spec).unwrap();
        assert_eq!(fence.as_any().is::<Signalled>(), !refused, "import refused: {refused}");
        assert!(signalling(via, vk) > 0, "{via} signals {vk}");
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

/// What a Vulkan kernel pays for waiting on the GPU for a move from CUDA (run with `--ignored
/// --nocapture` on the GPU machine): run 34c's guess for the ~320 µs a call that the all_to_all of
/// `cuda:0,vulkan:0` spends beyond its all_gather, whose last step is the move itself. A 512 KiB
/// f32 tensor (the all_to_all's part at 1 MiB) moved from CUDA, then a Vulkan add of it and a
/// Vulkan tensor, waited for on the host, three ways in interleaved rounds: the add's submission
/// waiting on the timeline CUDA signals (as the library issues it), the host waiting for the move
/// before issuing the add, and the import refused (the move waits on the host); beside them the
/// move alone and the add alone. Median µs of 50 each; every result checked against the f64 sum.
#[test]
#[ignore = "a latency probe for the GPU machine"]
fn vulkan_kernel_waiting_on_cuda_probe() {
    use crate::backend::cuda::timeline::FAIL_TIMELINE;
    use crate::backend::{Kernel, OutSpec};
    use crate::dtype::DType;
    use crate::graph::BinaryOp;
    use std::time::Instant;
    let (cu, vk) = (Device::Cuda(0), Device::Vulkan(0));
    let Some((cbe, vbe)) = one_gpu_pair() else { return };
    let len = 128 << 10;
    let (spec, add) = (OutSpec { dtype: DType::F32, len }, Kernel::Binary(BinaryOp::Add));
    let mut rng = rand::rngs::StdRng::seed_from_u64(34);
    let (a, b): (Vec<f32>, Vec<f32>) =
        (0..len).map(|_| (rng.random_range(-1.0f32..1.0), rng.random_range(-1.0f32..1.0))).unzip();
    let src = cbe.htod(&Buffer::from_vec(Device::Cpu(0), a.clone())).unwrap();
    let vb = vbe.htod(&Buffer::from_vec(Device::Cpu(0), b.clone())).unwrap();
    src.wait().unwrap();
    vb.wait().unwrap();
    let moved = |refused: bool| {
        FAIL_TIMELINE.with(|f| f.set(refused));
        let out = direct::to_vulkan(&src, vk, cu).unwrap().expect("shared memory");
        FAIL_TIMELINE.with(|f| f.set(false));
        out
    };
    let check = |out: &Buffer, how: &str| {
        let back = vbe.dtoh(out, Device::Cpu(0)).unwrap();
        back.wait().unwrap();
        let got: &[f32] = bytemuck::cast_slice(back.host_bytes("probe").unwrap());
        let wrong = (0..len).filter(|&i| got[i] != (f64::from(a[i]) + f64::from(b[i])) as f32).count();
        assert!(got.len() == len && wrong == 0, "{how}: {wrong} of {len} wrong");
    };
    let ways: [(&str, &dyn Fn() -> Buffer); 5] = [
        ("add waits on the GPU", &|| vbe.compute(&add, &[&moved(false), &vb], spec).unwrap()),
        ("host waits for the move, then add", &|| {
            let m = moved(false);
            m.wait().unwrap();
            vbe.compute(&add, &[&m, &vb], spec).unwrap()
        }),
        ("import refused", &|| vbe.compute(&add, &[&moved(true), &vb], spec).unwrap()),
        ("the move alone", &|| moved(false)),
        ("the add alone", &|| vbe.compute(&add, &[&vb, &vb], spec).unwrap()),
    ];
    for round in 0..2 {
        for (how, run) in &ways {
            let mut us: Vec<f64> = (0..55)
                .map(|_| {
                    let t = Instant::now();
                    run().wait().unwrap();
                    t.elapsed().as_secs_f64() * 1e6
                })
                .skip(5)
                .collect();
            us.sort_by(f64::total_cmp);
            println!("round {round}: {how}: {:.1} us (median of 50; {:.1}..{:.1})", us[25], us[0], us[49]);
        }
        for (how, run) in &ways[..3] {
            check(&run(), how);
        }
    }
}

/// The device ring hands chunks over on the GPU, both ways: a move through it (four chunks
/// through two slots, so slots are reused too) is issued while the source's writer may still run
/// and reads every written value, the CUDA end's copies signalling the Vulkan end and the CUDA
/// end waiting on the Vulkan timeline; with the imports refused (on this thread), the same by
/// host waits (the GPU machine's test; skipped without both devices of one GPU).
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
            let running = !sum.is_complete();
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
    // With `by_kernel` the CUDA hop is the copy kernel over the registered memory (the
    // multiprocessors reading or writing the host across the bus) instead of a copy engine's.
    let run = |cuda_out: bool, which: (bool, bool), by_kernel: bool| -> (f64, f64) {
        let ring = cuda::RingMem::Host(&reg);
        let t = Instant::now();
        let mut fences: Vec<(usize, Box<dyn Fn() -> bool>)> = vec![];
        if which.0 && by_kernel {
            let dev = cuda::memory::alloc_of(&on_cu, "probe").unwrap().ptr();
            let host = reg.ptr() as u64;
            let (src, dst) = if cuda_out { (dev, host) } else { (host, dev) };
            // SAFETY: both ranges hold `len` bytes (registered host memory and `on_cu`), alive
            // until the event, waited for below, completes.
            let e = unsafe { cuda::probe::copy_by_kernel(cu, src, dst, len, cuda_out) }.unwrap();
            fences.push((0, Box::new(move || e.try_is_complete().unwrap())));
        } else if which.0 {
            let f = if cuda_out {
                cuda::source_end(&on_cu, ring).unwrap().buffer_to_ring(&span)
            } else {
                cuda::dest_end(cu, len, ring).unwrap().ring_to_buffer(&span)
            };
            let f = f.unwrap().unwrap();
            fences.push((0, Box::new(move || f.is_complete())));
        }
        if which.1 {
            let f = if cuda_out {
                vulkan::bridge::dest_end(vk, len, &view).unwrap().ring_to_buffer(&span)
            } else {
                vulkan::bridge::source_end(&on_vk, &view).unwrap().buffer_to_ring(&span)
            };
            let f = f.unwrap().unwrap();
            fences.push((1, Box::new(move || f.is_complete())));
        }
        let mut done = [0.0f64; 2];
        while fences.iter().any(|(k, _)| done[*k] == 0.0) {
            for (k, f) in &fences {
                if done[*k] == 0.0 && f() {
                    done[*k] = t.elapsed().as_secs_f64() * 1e6;
                }
            }
        }
        (done[0], done[1])
    };
    for by_kernel in [false, true] {
        for cuda_out in [true, false] {
            let (c, v) = if cuda_out { ("cuda d2h", "vulkan h2d") } else { ("cuda h2d", "vulkan d2h") };
            let how = if by_kernel { "copy kernel" } else { "copy engine" };
            for round in 0..3 {
                let (alone_c, _) = run(cuda_out, (true, false), by_kernel);
                let (_, alone_v) = run(cuda_out, (false, true), by_kernel);
                let (both_c, both_v) = run(cuda_out, (true, true), by_kernel);
                println!(
                    "round {round}: {c} ({how}) alone {:.2} GB/s, {v} alone {:.2}; at once {c} {:.2}, {v} {:.2} GB/s",
                    gbps(alone_c),
                    gbps(alone_v),
                    gbps(both_c),
                    gbps(both_v)
                );
            }
        }
    }
    drop(reg);
}
