//! The schedule's tests: which nodes become steps, which copies fuse into the steps that feed them,
//! and which host slices run as views.

use super::*;
use crate::dtype::DType;
use crate::graph::opt::insert_cross_device_copies;
use crate::graph::{STAGING_HOST, Shape};

const CU: Device = Device::Cuda(0);
const VK: Device = Device::Vulkan(0);
const BIG: usize = crate::backend::chain::STAGED_MIN_BYTES / 4;

fn input(device: Device, numel: usize) -> Tensor {
    Tensor::placeholder(Shape::from(vec![numel]), DType::F32, device)
}

fn step<'a>(s: &'a Schedule, t: &Tensor) -> (usize, &'a Step) {
    let i = s.steps.iter().position(|st| st.tensor.same_node(t)).expect("scheduled");
    (i, &s.steps[i])
}

/// A host kernel's copies to other host devices are its fanout, but not a contiguous host
/// slice's (a view): its copy stays a copy, or is placed by the join that reads it — a mixed
/// all_to_all's host part, sliced on `cpu:1` and joined on `cpu:0`, is one placement. A slice
/// of two ranges a row is a pass, and fans out.
#[test]
fn a_host_slice_that_is_a_view_has_no_fanout() {
    let host = |d: Device, dims: Vec<usize>| Tensor::placeholder(Shape::from(dims), DType::F32, d);
    let (a, b) = (host(Device::Cpu(1), vec![8, 4]), host(Device::Cpu(1), vec![8, 4]));
    let to = Device::Cpu(0);
    let sum_copy = a.add(&b).unwrap().copy_to_device(to).unwrap();
    let rows_copy = a.narrow(0, 2, 3).unwrap().copy_to_device(to).unwrap();
    let cols_copy = a.narrow(1, 1, 2).unwrap().copy_to_device(to).unwrap();
    let s = unfused(&[sum_copy.clone(), rows_copy.clone(), cols_copy.clone()]);
    let fused = |t: &Tensor| matches!(step(&s, t).1.action, Action::Fused);
    assert!(fused(&sum_copy), "an add writes its copy");
    assert!(!fused(&rows_copy), "rows are a view: the copy stays");
    assert!(fused(&cols_copy), "two ranges a row: a pass, which writes its copy");
    let part = a.narrow(0, 0, 4).unwrap().copy_to_device(to).unwrap();
    let joined = Tensor::concat(&[part.clone(), host(to, vec![4, 4])], 0).unwrap();
    let s = build(std::slice::from_ref(&joined));
    assert!(matches!(step(&s, &part).1.action, Action::Fused), "{}", s.summary());
    let (j, _) = step(&s, &joined);
    assert!(s.describe(j).contains("1 placed from other devices"), "{}", s.describe(j));
}

/// Asserts that `host -> dst` was fused: the host hop never issued, `dst` reading `src`.
fn assert_fused(s: &Schedule, src: &Tensor, host: &Tensor, dst: &Tensor) {
    let (si, _) = step(s, src);
    let (_, h) = step(s, host);
    let (_, d) = step(s, dst);
    assert!(matches!(h.action, Action::Fused), "host hop fused");
    assert!(matches!(d.action, Action::Copy { .. }) && d.inputs == vec![si], "second hop reads the source");
}

fn assert_plain(s: &Schedule, host: &Tensor, dst: &Tensor) {
    let (hi, h) = step(s, host);
    let (_, d) = step(s, dst);
    assert!(matches!(h.action, Action::Copy { .. }) && d.inputs == vec![hi], "two plain hops");
}

#[test]
fn a_large_chain_fuses_both_ways() {
    for (from, to) in [(CU, VK), (VK, CU), (Device::Cuda(1), Device::Vulkan(2))] {
        let src = input(from, BIG);
        let host = src.copy_to_device(STAGING_HOST).unwrap();
        let dst = host.copy_to_device(to).unwrap();
        let s = build(std::slice::from_ref(&dst));
        assert_fused(&s, &src, &host, &dst);
        assert_eq!(step(&s, &dst).1.queue, to, "issued by the destination's queue");
    }
}

#[test]
fn the_summary_counts_steps_and_bytes_by_pair() {
    let src = input(CU, BIG);
    let host = src.copy_to_device(STAGING_HOST).unwrap();
    let dst = host.copy_to_device(VK).unwrap();
    let line = build(std::slice::from_ref(&dst)).summary();
    let bytes = BIG * 4;
    assert_eq!(
        line,
        format!(
            "3 steps: 0 kernels, 0 joins, 1 uploads, 1 copies, 0 calls, 1 fused; copies [cuda:0->vulkan:0 {bytes} B]"
        )
    );
}

#[test]
fn any_host_device_and_moves_fuse() {
    let src = input(CU, BIG);
    let host = src.clone().move_to_device(Device::Cpu(3)).unwrap();
    let dst = host.clone().move_to_device(VK).unwrap();
    let s = build(std::slice::from_ref(&dst));
    assert_fused(&s, &src, &host, &dst);
}

/// Small tensors keep two hops through a host ring; where the pair is one GPU (the GPU
/// machine), the device bridge takes them from `DEVICE_MIN_BYTES`.
#[test]
fn small_tensors_keep_two_hops_unless_the_pair_is_one_gpu() {
    let src = input(CU, BIG - 1);
    let host = src.copy_to_device(STAGING_HOST).unwrap();
    let dst = host.copy_to_device(VK).unwrap();
    let s = build(std::slice::from_ref(&dst));
    if (BIG - 1) * 4 >= crate::backend::staged::fuse_min_bytes(CU, VK) {
        assert_fused(&s, &src, &host, &dst);
    } else {
        assert_plain(&s, &host, &dst);
    }
}

/// Below the device bridge's bound a Vulkan → CUDA chain of one GPU fuses where its source is a
/// view of a Vulkan tensor of at least `DEVICE_MIN_BYTES` (a contiguous part, through reshapes):
/// the bridge reads it in place. Not a strided part (a Vulkan kernel cuts it out), nor a part of
/// a smaller tensor (in host memory), nor any chain of two GPUs.
#[test]
fn a_small_view_of_a_large_vulkan_tensor_fuses_on_one_gpu() {
    use crate::backend::chain::DEVICE_MIN_BYTES;
    let at = DEVICE_MIN_BYTES / 4;
    let rows = input(VK, at).reshape([2, at / 2]).unwrap();
    let small = input(VK, at - 4).reshape([2, at / 2 - 2]).unwrap();
    let cases = [
        (rows.narrow(0, 1, 1).unwrap(), true, true),
        (rows.narrow(0, 1, 1).unwrap().flatten().unwrap(), true, true),
        (rows.narrow(1, 0, at / 4).unwrap(), true, false),
        (small.narrow(0, 1, 1).unwrap(), true, false),
        (rows.narrow(0, 1, 1).unwrap(), false, false),
    ];
    for (part, one_gpu, fuses) in cases {
        let host = part.copy_to_device(STAGING_HOST).unwrap();
        let dst = host.copy_to_device(CU).unwrap();
        let mut s = unfused(std::slice::from_ref(&dst));
        fuse_staged_chains(&mut s.steps, |_, _| DEVICE_MIN_BYTES, |_, _| one_gpu);
        match fuses {
            true => assert_fused(&s, &part, &host, &dst),
            false => assert_plain(&s, &host, &dst),
        }
    }
}

/// [`unfused`] with the chains fused as `one_gpu` says of every pair (any size fuses).
fn fused_as(targets: &[Tensor], one_gpu: bool) -> Schedule {
    let mut s = unfused(targets);
    fuse_staged_chains(&mut s.steps, |_, _| 0, |_, _| one_gpu);
    s
}

/// The schedules where a host intermediate is needed besides the chain (a realize target, a
/// host kernel, a second chain), with the source, the host hop and the chain's second hop.
fn needed_host_hops() -> Vec<(Vec<Tensor>, Tensor, Tensor, Tensor)> {
    let src = input(CU, BIG);
    let host = src.copy_to_device(STAGING_HOST).unwrap();
    let dst = host.copy_to_device(VK).unwrap();
    let other = host.copy_to_device(Device::Vulkan(1)).unwrap();
    let sum = host.add(&host).unwrap();
    [vec![host.clone(), dst.clone()], vec![dst.clone(), sum], vec![dst.clone(), other]]
        .into_iter()
        .map(|targets| (targets, src.clone(), host.clone(), dst.clone()))
        .collect()
}

#[test]
fn a_host_intermediate_someone_needs_is_not_fused() {
    for (targets, _, host, dst) in needed_host_hops() {
        assert_plain(&fused_as(&targets, false), &host, &dst);
    }
}

/// On one GPU the second hop reads the source through the device bridge, beside a host hop
/// that stays for its other readers (the source gains a reader, the host hop loses one); a
/// host hop left with one chain to feed is then fused away as usual.
#[test]
fn on_one_gpu_a_needed_host_hop_runs_beside_the_bridge() {
    let cases = needed_host_hops();
    for (targets, src, host, dst) in &cases[..2] {
        let before = unfused(targets);
        let s = fused_as(targets, true);
        let ((si, src_before), (_, h), (_, d)) = (step(&before, src), step(&s, host), step(&s, dst));
        assert!(matches!(h.action, Action::Copy { .. }), "the host hop stays");
        assert_eq!(d.inputs, vec![si], "the second hop reads the source");
        assert_eq!(s.steps[si].consumers, src_before.consumers + 1);
        assert_eq!(h.consumers, step(&before, host).1.consumers - 1);
    }
    let (targets, src, host, dst) = &cases[2];
    let s = fused_as(targets, true);
    assert_fused(&s, src, host, dst);
    let other = &targets[1];
    assert_eq!(step(&s, other).1.inputs, vec![step(&s, src).0], "both chains read the source");
}

#[test]
fn a_move_is_never_run_beside() {
    let host = input(CU, BIG).move_to_device(STAGING_HOST).unwrap();
    let dst = host.clone().move_to_device(VK).unwrap();
    assert_plain(&fused_as(std::slice::from_ref(&dst), true), &host, &dst);
}

#[test]
fn a_move_that_takes_its_source_is_not_fused() {
    let host = input(CU, BIG).move_to_device(STAGING_HOST).unwrap();
    let dst = host.clone().move_to_device(VK).unwrap();
    let s = build(std::slice::from_ref(&dst));
    let (_, h) = step(&s, &host);
    assert!(
        matches!(h.action, Action::Copy { take: true, .. }),
        "the host hop holds the only handle on its source"
    );
    assert_plain(&s, &host, &dst);
}

#[test]
fn only_cuda_vulkan_pairs_fuse() {
    for (from, to) in
        [(CU, Device::Cuda(1)), (VK, Device::Vulkan(1)), (Device::Cpu(1), VK), (CU, Device::Cpu(2))]
    {
        let src = input(from, BIG);
        let host = src.copy_to_device(STAGING_HOST).unwrap();
        let dst = host.copy_to_device(to).unwrap();
        assert_plain(&build(std::slice::from_ref(&dst)), &host, &dst);
    }
}

#[test]
fn the_pass_inserted_edge_of_a_compute_op_fuses() {
    let a = input(VK, BIG);
    let b = input(CU, BIG);
    let sum = a.add(&b).unwrap();
    let rewritten = insert_cross_device_copies(&[sum]);
    let dst = rewritten[0].inputs()[1].clone();
    let host = dst.inputs()[0].clone();
    let s = build(&rewritten);
    assert_fused(&s, &b, &host, &dst);
    let (_, add) = step(&s, &rewritten[0]);
    assert!(matches!(add.action, Action::Kernel { .. }));
}
