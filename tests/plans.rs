//! Routes and plans of groups naming CUDA and Vulkan devices, built without hardware: a
//! CUDA↔Vulkan hop is two `Op::Copy` nodes through `Cpu(0)`, a same-vendor or host hop is one;
//! bytes per hop are the shard's bytes; the algorithm shown is `choose(..)` unless overridden per
//! group or per call (`choice`); `Display` of a group and of a plan names routes and algorithm.

#[path = "plans/choice.rs"]
mod choice;
#[path = "plans/staged.rs"]
mod staged;

use collectives::collective::{
    HOST_STAGED_BELOW_BYTES, HOST_STAGED_CUDA_PAIR_BELOW_BYTES, PlannedHop, on_one_gpu,
};
use collectives::{Algorithm, CollectiveKind, DType, Device, DeviceGroup, Op, Plan, ReduceOp, Route, Tensor};

const CUDA0: Device = Device::Cuda(0);
const CUDA1: Device = Device::Cuda(1);
const VK0: Device = Device::Vulkan(0);
const CPU0: Device = Device::Cpu(0);

/// Cuda(0) (leader), Cuda(1), Vulkan(0), Cpu(0).
fn mixed() -> DeviceGroup {
    DeviceGroup::new(vec![CUDA0, CUDA1, VK0, CPU0]).unwrap()
}

/// Elements of an f32 shard at `HOST_STAGED_BELOW_BYTES`: a smaller collective of a group with
/// a host member is one host call, its other members staged through it, and plans no hop.
const LEN: usize = HOST_STAGED_BELOW_BYTES / 4;

/// `n` f32 shards of [`LEN`] elements on the group's devices (no device is touched to build them).
fn shards(g: &DeviceGroup) -> Vec<Tensor> {
    g.devices()
        .iter()
        .enumerate()
        .map(|(i, &d)| Tensor::from_vec(vec![i as f32 + 0.5; LEN], [LEN], d).unwrap())
        .collect()
}

/// The hops of `plan` as sorted `(from, to, bytes)`.
fn hops(plan: &Plan) -> Vec<(Device, Device, usize)> {
    let mut v: Vec<_> = plan.hops.iter().map(|h: &PlannedHop| (h.from, h.to, h.bytes)).collect();
    v.sort();
    v
}

/// Asserts `t` is an `Op::Copy` to `to` and returns its input.
fn copy_to(t: &Tensor, to: Device) -> Tensor {
    assert_eq!(t.op(), &Op::Copy { to }, "{t:?}");
    assert_eq!(t.device(), to);
    assert_eq!(t.inputs().len(), 1);
    t.inputs()[0].clone()
}

#[test]
fn routes_between_members() {
    let g = mixed();
    let staged = Route::Staged { via: CPU0 };
    for (from, to, route) in [
        (CUDA0, VK0, staged),
        (VK0, CUDA1, staged),
        (CUDA0, CUDA1, Route::Direct),
        (VK0, Device::Vulkan(1), staged),
        (VK0, CPU0, Route::Direct),
        (CPU0, CUDA1, Route::Direct),
        (Device::Cpu(1), CPU0, Route::Direct),
        (CUDA1, CUDA1, Route::Local),
    ] {
        assert_eq!(g.route(from, to), route, "{from} -> {to}");
    }
    assert_eq!((staged.copies(), Route::Direct.copies(), Route::Local.copies()), (2, 1, 0));
}

#[test]
fn a_staged_broadcast_hop_is_two_copies_through_the_host() {
    let g = mixed();
    let root = &shards(&g)[0];
    let out = g.broadcast(root).unwrap();
    assert!(out[0].same_node(root));
    assert!(copy_to(&out[1], CUDA1).same_node(root), "same vendor: one copy");
    let via = copy_to(&out[2], VK0);
    assert!(copy_to(&via, CPU0).same_node(root), "cuda -> cpu:0 -> vulkan");
    assert!(copy_to(&out[3], CPU0).same_node(root), "to the host: one copy");
    assert!(out[3].same_node(&via), "the staged hop shares the host copy");
}

#[test]
fn a_staged_reduce_hop_is_two_copies_into_the_leader() {
    let g = mixed();
    let s = shards(&g);
    let r = g.using(Algorithm::Star).reduce(&s, ReduceOp::Sum).unwrap();
    assert!(matches!(r.op(), Op::Reduce { .. }) && r.device() == CUDA0);
    let ins = r.inputs();
    assert!(ins[0].same_node(&s[0]));
    assert!(ins[1].same_node(&s[1]), "a CUDA peer is read in place");
    let via = copy_to(&ins[2], CUDA0);
    assert!(copy_to(&via, CPU0).same_node(&s[2]), "vulkan -> cpu:0 -> cuda");
    assert!(copy_to(&ins[3], CUDA0).same_node(&s[3]));
}

#[test]
fn the_all_reduce_plan_lists_every_hop_with_the_shard_bytes() {
    let g = mixed();
    let b = LEN * 4;
    let want = {
        // cuda:1's shard is read in place by the reduce on cuda:0 (peers); no hop.
        let mut v = vec![(VK0, CPU0, b), (CPU0, CUDA0, b), (CPU0, CUDA0, b)];
        v.extend([(CUDA0, CUDA1, b), (CUDA0, CPU0, b), (CPU0, VK0, b)]);
        v.sort();
        v
    };
    let outputs = g.all_reduce(&shards(&g), ReduceOp::Sum).unwrap();
    assert_eq!(hops(&Plan::of(&outputs)), want);
    let plan = g.plan(CollectiveKind::AllReduce, [LEN], DType::F32).unwrap();
    assert_eq!(hops(&plan), want, "{plan}");
    assert_eq!(plan.algorithm, Some(Algorithm::Star));
    assert_eq!(plan.bytes_moved(), 6 * b);
    let reduce: Vec<_> = plan.kernels.iter().filter(|k| k.op.starts_with("reduce")).collect();
    assert_eq!(reduce.len(), 1, "{plan}");
    assert_eq!((reduce[0].device, reduce[0].inputs, reduce[0].bytes), (CUDA0, 4, b));
}

#[test]
fn a_vulkan_leader_of_a_mixed_group_leaves_the_all_reduce_fold_and_all_gather_join_to_cuda() {
    let g = DeviceGroup::new(vec![VK0, CPU0, CUDA1]).unwrap();
    assert_eq!((g.leader(), g.star_hub()), (VK0, CUDA1));
    for kind in [CollectiveKind::AllReduce, CollectiveKind::ReduceScatter] {
        let plan = g.using(Algorithm::Star).plan(kind, [3 * LEN / 2], DType::F32).unwrap();
        let reduce: Vec<_> = plan.kernels.iter().filter(|k| k.op.starts_with("reduce")).collect();
        assert_eq!(reduce.len(), 1, "{plan}");
        assert_eq!((reduce[0].device, reduce[0].inputs), (CUDA1, 3), "{plan}");
    }
    // The star all_gather joins there too: the one concat on CUDA1, its result hopped out.
    let plan = g.using(Algorithm::Star).plan(CollectiveKind::AllGather, [3 * LEN / 2], DType::F32).unwrap();
    let joins: Vec<_> = plan.kernels.iter().map(|k| (k.device, k.op.as_str(), k.inputs)).collect();
    assert_eq!(joins, [(CUDA1, "concat dim 0", 3)], "{plan}");
    // `reduce` puts its result on the leader, and folds there: a result this small even where
    // cuda:1 shares vulkan:0's GPU (see the test after `folds`).
    let r = g.using(Algorithm::Star).reduce(&shards(&g), ReduceOp::Sum).unwrap();
    assert!(matches!(r.op(), Op::Reduce { .. }) && r.device() == VK0);
    // Without CUDA, or with a CUDA leader, the hub is the leader; a host leader leaves it to
    // the first CUDA member too.
    let vk_cpu = DeviceGroup::new(vec![VK0, CPU0]).unwrap();
    assert_eq!(vk_cpu.star_hub(), VK0);
    assert_eq!(mixed().star_hub(), CUDA0);
    assert_eq!(DeviceGroup::new(vec![CPU0, VK0, CUDA1, CUDA0]).unwrap().star_hub(), CUDA1);
}

#[test]
fn a_plan_names_each_cuda_vulkan_move_with_its_bridge() {
    let g = mixed();
    let b = LEN * 4;
    let plan = g.plan(CollectiveKind::AllReduce, [LEN], DType::F32).unwrap();
    // vulkan:0's shard to the leader, and the result back: each two hops through cpu:0.
    let mut moves: Vec<_> = plan.bridges.iter().map(|m| (m.from, m.to, m.bytes)).collect();
    moves.sort();
    assert_eq!(moves, [(CUDA0, VK0, b), (VK0, CUDA0, b)], "{plan}");
    for m in &plan.bridges {
        // Planning decides nothing; a bridge is named once a move or validate() decided it.
        let named = m.bridge.as_deref().is_none_or(|x| x.starts_with("device (") || x.starts_with("host ("));
        assert!(named, "{plan}");
        assert!(
            plan.to_string().contains(&format!("  bridge {} -> {}  {b} bytes: ", m.from, m.to)),
            "{plan}"
        );
    }
    // Host and same-vendor hops are no bridges.
    let cuda_cpu = DeviceGroup::new(vec![CUDA0, CUDA1, CPU0]).unwrap();
    let plan = cuda_cpu.plan(CollectiveKind::AllGather, [8, 3 * LEN / 8], DType::BF16).unwrap();
    assert!(!plan.hops.is_empty() && plan.bridges.is_empty(), "{plan}");
}

/// A move whose first hop (to the host) already ran is a host → device copy, not a bridge.
#[test]
fn a_move_whose_first_hop_ran_is_no_bridge() {
    if !collectives::available_devices().contains(&VK0) {
        assert!(!collectives_tests::vulkan_required(), "REQUIRE_VULKAN=1 but {VK0} is missing");
        println!("skipped: needs {VK0}");
        return;
    }
    let on_host = Tensor::from_vec(vec![1.5f32; 8], [8], VK0).unwrap().copy_to_device(CPU0).unwrap();
    let to_cuda = on_host.copy_to_device(CUDA0).unwrap();
    let before = Plan::of(std::slice::from_ref(&to_cuda));
    assert_eq!(
        before.bridges.iter().map(|m| (m.from, m.to, m.bytes)).collect::<Vec<_>>(),
        [(VK0, CUDA0, 32)]
    );
    on_host.realize().unwrap(); // runs the first hop
    assert_eq!(on_host.to_vec::<f32>().unwrap(), vec![1.5; 8]);
    let after = Plan::of(&[to_cuda]);
    assert_eq!((hops(&after), after.bridges.len()), (vec![(CPU0, CUDA0, 32)], 0), "{after}");
}

#[test]
fn no_plan_has_a_direct_cross_vendor_hop() {
    use CollectiveKind::*;
    for leader in [CUDA0, CUDA1, VK0, CPU0] {
        let g = mixed().with_leader(leader).unwrap();
        for kind in [Reduce, AllReduce, Broadcast, Gather, AllGather, ReduceScatter, Scatter, AllToAll] {
            let plan = g.plan(kind, [8, 3 * LEN / 8], DType::BF16).unwrap();
            assert!(!plan.hops.is_empty(), "{kind:?} from {leader}: {plan}");
            for h in &plan.hops {
                assert_ne!(g.route(h.from, h.to), Route::Staged { via: CPU0 }, "{kind:?}: {plan}");
                assert!(h.bytes > 0 && h.bytes % (3 * 2) == 0, "{kind:?}: {plan}");
            }
        }
    }
}

#[test]
fn a_cuda_plan_reads_peers_in_place() {
    let devices = [CUDA0, CUDA1, Device::Cuda(2)];
    let g = DeviceGroup::new(devices.to_vec()).unwrap().with_algorithm(Algorithm::Star);
    for kind in [CollectiveKind::Reduce, CollectiveKind::Gather] {
        let plan = g.plan(kind, [5, 5], DType::F64).unwrap();
        assert!(plan.hops.is_empty(), "{plan}");
        assert_eq!(plan.kernels.len(), 1, "{plan}");
        assert_eq!((plan.kernels[0].device, plan.kernels[0].inputs), (CUDA0, 3), "{plan}");
    }
}

#[test]
fn a_one_or_two_shot_collective_of_cuda_devices_is_one_call_and_no_hop() {
    let devices = [CUDA0, CUDA1, Device::Cuda(2)];
    let g = DeviceGroup::new(devices.to_vec()).unwrap().with_algorithm(Algorithm::OneShot);
    for (kind, name, inputs) in [
        (CollectiveKind::AllReduce, "collective cuda all_reduce", 3),
        (CollectiveKind::ReduceScatter, "collective cuda reduce_scatter", 3),
        (CollectiveKind::AllGather, "collective cuda all_gather", 3),
        (CollectiveKind::Broadcast, "collective cuda broadcast", 1),
    ] {
        let plan = g.plan(kind, [999], DType::BF16).unwrap();
        assert_eq!(plan.algorithm, Some(Algorithm::OneShot), "{plan}");
        assert!(plan.hops.is_empty(), "{plan}");
        let ks: Vec<_> = plan.kernels.iter().map(|k| (k.device, k.op.as_str(), k.inputs)).collect();
        assert_eq!(ks, [(CUDA0, name, inputs)], "{plan}");
    }
    // all_to_all along contiguous parts: one call, the star or the one-shot (for any other
    // setting); Auto takes the star on logical devices of one GPU below ONE_GPU_STAR_MAX_BYTES.
    let auto = if on_one_gpu(&devices) { Algorithm::Star } else { Algorithm::OneShot };
    for (algo, want) in [
        (Algorithm::Auto, auto),
        (Algorithm::Star, Algorithm::Star),
        (Algorithm::OneShot, Algorithm::OneShot),
        (Algorithm::Ring, Algorithm::OneShot),
        (Algorithm::Nccl, Algorithm::OneShot),
    ] {
        let plan = g.using(algo).plan(CollectiveKind::AllToAll, [999], DType::BF16).unwrap();
        assert_eq!(plan.algorithm, Some(want), "{algo}: {plan}");
        assert!(plan.hops.is_empty(), "{plan}");
        let star = if want == Algorithm::Star { "star " } else { "" };
        let name = format!("collective cuda {star}all_to_all");
        let ks: Vec<_> = plan.kernels.iter().map(|k| (k.device, k.op.as_str(), k.inputs)).collect();
        assert_eq!(ks, [(CUDA0, name.as_str(), 3)], "{plan}");
    }
    let plan = g.using(Algorithm::TwoShot).plan(CollectiveKind::AllReduce, [999], DType::BF16).unwrap();
    assert_eq!(plan.algorithm, Some(Algorithm::TwoShot), "{plan}");
    assert!(plan.hops.is_empty(), "{plan}");
    let ks: Vec<_> = plan.kernels.iter().map(|k| (k.device, k.op.as_str(), k.inputs)).collect();
    assert_eq!(ks, [(CUDA0, "collective cuda two-shot all_reduce", 3)], "{plan}");
}

/// A scatter of CUDA devices into contiguous parts is one call of the root, whatever the setting
/// (from any member, evenly or not): its part a view, the others copied by its launch, no hop.
/// Into parts along a later dim (not contiguous) it is the star's slices and hops.
#[test]
fn a_cuda_scatter_into_contiguous_parts_is_one_call_of_the_root() {
    let devices = [CUDA0, CUDA1, Device::Cuda(2)];
    let g = DeviceGroup::new(devices.to_vec()).unwrap();
    for algo in [Algorithm::Auto, Algorithm::Star, Algorithm::OneShot, Algorithm::Ring, Algorithm::Nccl] {
        let plan = g.using(algo).plan(CollectiveKind::Scatter, [999], DType::BF16).unwrap();
        assert_eq!(plan.algorithm, Some(Algorithm::Star), "{algo}: {plan}");
        assert!(plan.hops.is_empty(), "{plan}");
        let ks: Vec<_> = plan.kernels.iter().map(|k| (k.device, k.op.as_str(), k.inputs)).collect();
        assert_eq!(ks, [(CUDA0, "collective cuda scatter", 1)], "{algo}: {plan}");
    }
    let rows = Tensor::from_vec(vec![1.5f32; 6 * 4], [1, 6, 4], CUDA1).unwrap();
    let uneven = Plan::of(&g.scatter_sizes(&rows, 1, &[0, 5, 1]).unwrap());
    let ks: Vec<_> = uneven.kernels.iter().map(|k| (k.device, k.op.as_str(), k.inputs)).collect();
    assert_eq!(ks, [(CUDA0, "collective cuda scatter", 1)], "{uneven}");
    assert!(uneven.hops.is_empty(), "{uneven}");
    let cols = Tensor::from_vec(vec![1.5f32; 2 * 6], [2, 6], CUDA1).unwrap();
    let strided = Plan::of(&g.scatter(&cols, 1).unwrap());
    assert_eq!(hops(&strided), [(CUDA1, CUDA0, 16), (CUDA1, Device::Cuda(2), 16)], "{strided}");
    assert!(strided.kernels.iter().all(|k| k.op.starts_with("slice")), "{strided}");
}

#[test]
fn a_vulkan_plan_goes_through_the_host() {
    // No Vulkan device reads another's memory: each member's hop is two copies through cpu:0.
    let devices = [VK0, Device::Vulkan(1), Device::Vulkan(2)];
    let g = DeviceGroup::new(devices.to_vec()).unwrap().with_algorithm(Algorithm::Star);
    let plan = g.plan(CollectiveKind::Reduce, [5, 5], DType::F64).unwrap();
    let mut want: Vec<_> = devices[1..].iter().flat_map(|&d| [(d, CPU0, 200), (CPU0, VK0, 200)]).collect();
    want.sort();
    assert_eq!(hops(&plan), want, "{plan}");
}

#[test]
fn display_names_members_leader_routes_and_algorithm() {
    let g = mixed().with_leader(VK0).unwrap().with_algorithm(Algorithm::Star);
    let text = g.to_string();
    for needle in [
        "cuda:0",
        "cuda:1",
        "vulkan:0",
        "cpu:0",
        "leader: vulkan:0",
        "star",
        "cuda:0 -> vulkan:0: staged via cpu:0",
        "cuda:0 -> cuda:1: direct",
        "vulkan:0 -> cpu:0: direct",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from\n{text}");
    }
    let plan = g.plan(CollectiveKind::Broadcast, [2 * LEN], DType::F16).unwrap();
    let text = plan.to_string();
    for needle in [
        "algorithm star",
        "copy   vulkan:0 -> cpu:0  131072 bytes",
        "copy   cpu:0 -> cuda:0  131072 bytes",
        "copy   cpu:0 -> cuda:1  131072 bytes",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from\n{text}");
    }
    assert_eq!(plan.hops.len(), 3, "{text}");
}

#[test]
fn realized_outputs_have_nothing_left_to_plan() {
    let g = DeviceGroup::new(vec![CPU0, Device::Cpu(1), Device::Cpu(2)]).unwrap();
    let out = g.all_reduce(&shards(&g), ReduceOp::Max).unwrap();
    // A host group's all_reduce is one call, planned once for its three parts.
    let before = Plan::of(&out);
    assert_eq!((before.hops.len(), before.kernels.len()), (0, 1), "{before}");
    collectives::realize(&out).unwrap();
    assert_eq!(Plan::of(&out), Plan::default());
    assert!(out.iter().all(|t| t.to_vec::<f32>().unwrap() == vec![2.5; LEN]));
    // The ring's graph of hops and reduces: nothing left once it ran.
    let out = g.using(Algorithm::Ring).all_reduce(&shards(&g), ReduceOp::Max).unwrap();
    let before = Plan::of(&out);
    assert_eq!(before.hops.len(), 6, "two hops per member: {before}");
    collectives::realize(&out).unwrap();
    assert_eq!(Plan::of(&out), Plan::default());
    assert!(out.iter().all(|t| t.to_vec::<f32>().unwrap() == vec![2.5; LEN]));
}

#[test]
fn a_user_copy_across_vendors_is_refused() {
    let t = Tensor::from_vec(vec![1.0f32; 4], [4], CUDA0).unwrap();
    let e = t.copy_to_device(VK0).unwrap_err();
    assert_eq!(e, collectives::Error::CrossVendorCopy { from: CUDA0, to: VK0 });
}

#[test]
fn staging_goes_through_cpu0_even_when_it_is_not_a_member() {
    let g = DeviceGroup::new(vec![VK0, CUDA1]).unwrap();
    assert_eq!(g.route(CUDA1, VK0), Route::Staged { via: CPU0 });
    // At the bound, the graph's hops; below it, the broadcast is one host call on cpu:0
    // (`host_stages_cuda`), the all_reduce and the all_to_all each one kernel of cuda:1 whose
    // host copy is on cpu:0 (`cuda_fans_out`).
    let plan = g.plan(CollectiveKind::AllReduce, [LEN], DType::F32).unwrap();
    let b = 4 * LEN;
    let want = vec![(CPU0, CUDA1, b), (CPU0, VK0, b), (CUDA1, CPU0, b), (VK0, CPU0, b)];
    assert_eq!(hops(&plan), want, "{plan}");
    for (kind, at, op) in [
        (CollectiveKind::Broadcast, CPU0, "staged through cpu:0"),
        (CollectiveKind::AllReduce, CUDA1, "fanned out from cuda:1"),
        (CollectiveKind::AllToAll, CUDA1, "fanned out from cuda:1"),
    ] {
        let plan = g.plan(kind, [10], DType::I64).unwrap();
        assert!(plan.hops.is_empty() && plan.kernels.len() == 1, "{plan}");
        assert_eq!(plan.kernels[0].device, at, "{plan}");
        assert!(plan.kernels[0].op.contains(op), "{plan}");
    }
    // The fold is on cuda:1 (the star's hub: the Vulkan leader leaves it to CUDA), the result
    // staged back to vulkan:0 through cpu:0.
    let out = g.all_reduce(&shards(&g), ReduceOp::Min).unwrap();
    let via = copy_to(&out[0], VK0);
    let reduced = copy_to(&via, CPU0);
    assert!(reduced.same_node(&out[1]) && reduced.device() == CUDA1);
}

#[test]
fn a_host_star_collective_is_one_call_on_the_leader() {
    let cpus: Vec<Device> = (0..4).map(Device::Cpu).collect();
    let g = DeviceGroup::new(cpus.clone()).unwrap().with_leader(Device::Cpu(2)).unwrap();
    let plan = g.plan(CollectiveKind::AllReduce, [16], DType::F32).unwrap();
    assert_eq!(plan.algorithm, Some(Algorithm::Star));
    assert!(plan.hops.is_empty(), "{plan}");
    assert_eq!(plan.kernels.len(), 1, "{plan}");
    let k = &plan.kernels[0];
    assert_eq!(
        (k.device, k.op.as_str(), k.inputs),
        (Device::Cpu(2), "collective host all_reduce", 4),
        "{plan}"
    );
    let gather = g.plan(CollectiveKind::AllGather, [16, 3], DType::F32).unwrap();
    assert!(gather.hops.is_empty(), "{gather}");
    let ks: Vec<_> = gather.kernels.iter().map(|k| (k.device, k.op.as_str(), k.inputs)).collect();
    assert_eq!(ks, [(Device::Cpu(2), "collective host all_gather", 4)], "{gather}");
    let scatter = g.plan(CollectiveKind::ReduceScatter, [16, 3], DType::F32).unwrap();
    assert!(scatter.hops.is_empty(), "{scatter}");
    let ks: Vec<_> = scatter.kernels.iter().map(|k| (k.device, k.op.as_str(), k.inputs)).collect();
    assert_eq!(ks, [(Device::Cpu(2), "collective host reduce_scatter", 4)], "{scatter}");
    // The broadcast's one input is the root's tensor, which the other three members read in place.
    let bcast = g.plan(CollectiveKind::Broadcast, [16, 3], DType::F32).unwrap();
    assert!(bcast.hops.is_empty(), "{bcast}");
    let ks: Vec<_> = bcast.kernels.iter().map(|k| (k.device, k.op.as_str(), k.inputs)).collect();
    assert_eq!(ks, [(Device::Cpu(2), "collective host broadcast", 1)], "{bcast}");
    assert_eq!(bcast.algorithm, Some(Algorithm::Star), "{bcast}");
    // The other algorithms stay graphs of hops and reduces.
    let one_shot = g.using(Algorithm::OneShot).plan(CollectiveKind::AllReduce, [16], DType::F32).unwrap();
    assert_eq!(one_shot.kernels.len(), 4, "{one_shot}");
    assert!(one_shot.kernels.iter().all(|k| k.op.starts_with("reduce")), "{one_shot}");
    // With a CUDA member, the small all_reduce and all_gather are one kernel of it whoever leads,
    // its result written to the host in the same pass (`cuda_fans_out`); the small broadcast from
    // the leader is one host call with the CUDA member staged through it; at the bound, a graph.
    let with_gpu = DeviceGroup::new(vec![CPU0, Device::Cpu(1), CUDA0]).unwrap();
    let bcast = with_gpu.plan(CollectiveKind::Broadcast, [16], DType::F32).unwrap();
    let ks: Vec<_> = bcast.kernels.iter().map(|k| (k.device, k.op.as_str(), k.inputs)).collect();
    assert_eq!(ks, [(CPU0, "collective host broadcast (staged through cpu:0)", 1)], "{bcast}");
    let cuda_led = with_gpu.clone().with_leader(CUDA0).unwrap();
    for (g, kind) in [&with_gpu, &cuda_led]
        .into_iter()
        .flat_map(|g| [(g, CollectiveKind::AllReduce), (g, CollectiveKind::AllGather)])
    {
        let plan = g.plan(kind, [16], DType::F32).unwrap();
        let ks: Vec<_> = plan.kernels.iter().map(|k| (k.device, k.inputs)).collect();
        assert_eq!(ks, [(CUDA0, 3)], "{plan}");
        assert!(plan.hops.is_empty() && plan.kernels[0].op.contains("fanned out from cuda:0"), "{plan}");
    }
    let at_bound = with_gpu.plan(CollectiveKind::AllReduce, [LEN], DType::F32).unwrap();
    assert!(at_bound.kernels.iter().all(|k| !k.op.starts_with("collective")), "{at_bound}");
}

/// gather, scatter and all_to_all have one form outside groups of CUDA devices: the plan reports
/// the star whatever the group's setting; the all_to_all and the scatter of host devices are each
/// one host call.
#[test]
fn collectives_of_one_form_report_the_star_whatever_the_setting() {
    let vk3 = DeviceGroup::new(vec![VK0, Device::Vulkan(1), Device::Vulkan(2)]).unwrap();
    let cpus = DeviceGroup::new((0..4).map(Device::Cpu).collect()).unwrap();
    for g in [mixed(), vk3, cpus] {
        for algo in [Algorithm::Auto, Algorithm::Star, Algorithm::Ring, Algorithm::OneShot, Algorithm::Nccl] {
            for kind in [CollectiveKind::Gather, CollectiveKind::Scatter, CollectiveKind::AllToAll] {
                let plan = g.using(algo).plan(kind, [g.size() * 4], DType::F32).unwrap();
                assert_eq!(plan.algorithm, Some(Algorithm::Star), "{g} {algo} {kind:?}: {plan}");
                assert!(plan.kernels.iter().all(|k| !k.op.starts_with("collective cuda")), "{plan}");
                let host_call = match kind {
                    CollectiveKind::AllToAll => "collective host all_to_all",
                    CollectiveKind::Scatter => "collective host scatter",
                    _ => "",
                };
                if !host_call.is_empty() && g.devices().iter().all(|d| d.is_host()) {
                    // Host devices: one call writing each member's output, no hop.
                    let ks: Vec<_> = plan.kernels.iter().map(|k| (k.device, k.op.as_str())).collect();
                    assert_eq!(ks, [(CPU0, host_call)], "{plan}");
                    assert!(plan.hops.is_empty(), "{plan}");
                }
            }
        }
    }
}

/// The one-shot reduce_scatter of a group that is not one call: each member folds its part of
/// every shard, so each other member's part crosses to it once (a CUDA ↔ Vulkan crossing as two
/// copies through the host), where the star brings every shard to the hub and sends every other
/// part back. The Vulkan member folds its own part wherever its GPU is: parts this small live in
/// host memory, where the host folds them (`site`). CUDA devices cut along a later dim (no
/// contiguous parts, so no one call) fold their parts so too, each reading the other's slice in
/// place.
#[test]
fn a_one_shot_reduce_scatter_moves_each_part_once() {
    // Columns per unit: shards of 48 K bytes, past HOST_STAGED_BELOW_BYTES (smaller, the star
    // is one host call, the others staged through it).
    const K: usize = 4096;
    let devices = [CUDA0, VK0, CPU0];
    let g = DeviceGroup::new(devices.to_vec()).unwrap();
    let one =
        g.using(Algorithm::OneShot).plan(CollectiveKind::ReduceScatter, [6, 2 * K], DType::F32).unwrap();
    let star = g.using(Algorithm::Star).plan(CollectiveKind::ReduceScatter, [6, 2 * K], DType::F32).unwrap();
    assert_eq!(one.algorithm, Some(Algorithm::OneShot), "{one}");
    let mut want = vec![
        (VK0, CPU0, 16 * K),
        (CPU0, CUDA0, 16 * K),
        (CPU0, CUDA0, 16 * K),
        (CUDA0, CPU0, 16 * K),
        (CUDA0, CPU0, 16 * K),
        (VK0, CPU0, 16 * K),
        // Part 1 of the CUDA and the host shard to the Vulkan device.
        (CPU0, VK0, 16 * K),
        (CPU0, VK0, 16 * K),
    ];
    want.sort();
    assert_eq!(hops(&one), want, "{one}");
    assert_eq!(folds(&one), [(CUDA0, 3, 16 * K), (VK0, 3, 16 * K), (CPU0, 3, 16 * K)], "{one}");
    assert_eq!((star.bytes_moved(), one.bytes_moved()), (192 * K, 128 * K), "{star}\n{one}");
    let g = DeviceGroup::new(vec![CUDA0, CUDA1]).unwrap().with_algorithm(Algorithm::OneShot);
    let cols: Vec<Tensor> =
        [CUDA0, CUDA1].map(|d| Tensor::from_vec(vec![1.5f32; 12], [3, 4], d).unwrap()).to_vec();
    let strided = Plan::of(&g.reduce_scatter(&cols, ReduceOp::Sum, 1).unwrap());
    assert!(strided.hops.is_empty(), "CUDA members read each other's slices in place: {strided}");
    assert_eq!(folds(&strided), [(CUDA0, 2, 24), (CUDA1, 2, 24)], "{strided}");
}

/// The folds of `plan`: each one's device, inputs and bytes out.
fn folds(plan: &Plan) -> Vec<(Device, usize, usize)> {
    let folds = plan.kernels.iter().filter(|k| k.op.starts_with("reduce"));
    folds.map(|k| (k.device, k.inputs, k.bytes)).collect()
}

/// Where a CUDA device and a Vulkan device share one GPU (the device bridge), a result of 256 KiB
/// or more bound for the Vulkan device that is computed from CUDA inputs — each member's
/// all_to_all join, a Vulkan leader's gather and reduce, the Vulkan member's part of a one-shot
/// all_gather, reduce_scatter or all_reduce — is computed by the CUDA device and copied over, so
/// that no Vulkan kernel follows the call's CUDA work (on one GPU it waits about 340 µs for the
/// GPU to switch APIs); the one-shot all_reduce's fold so at every size (the CUDA member folds
/// anyway); so too a result from contiguous parts of a Vulkan tensor in device memory, which the
/// bridge reads in place. Smaller joins and folds (the host's, in host memory), strided parts
/// of one (cut out by a Vulkan kernel), and elsewhere, are computed on the Vulkan device. Runs
/// where both devices are present (the GPU machine).
#[test]
fn a_vulkan_result_from_cuda_inputs_is_computed_by_cuda_on_one_gpu() {
    if !collectives_tests::device_bridged(CUDA0, VK0) {
        let both = collectives_tests::cuda_required() && collectives_tests::vulkan_required();
        assert!(!both, "REQUIRE_CUDA=1 and REQUIRE_VULKAN=1, but {CUDA0} and {VK0} share no GPU");
        println!("skipped: needs {CUDA0} and {VK0} on one GPU");
        return;
    }
    let computes_on = |plan: &Plan, d: Device| {
        let work = plan.kernels.iter().filter(|k| k.op.starts_with("concat") || k.op.starts_with("reduce"));
        work.filter(|k| k.device == d).count()
    };
    for order in [[CUDA0, VK0], [VK0, CUDA0]] {
        let g = DeviceGroup::new(order.to_vec()).unwrap();
        let kinds = [
            (CollectiveKind::AllToAll, Algorithm::Auto, 2),
            (CollectiveKind::Gather, Algorithm::Auto, 1),
            (CollectiveKind::Reduce, Algorithm::Star, 1),
            (CollectiveKind::AllGather, Algorithm::OneShot, 2),
            (CollectiveKind::ReduceScatter, Algorithm::OneShot, 2),
            (CollectiveKind::AllReduce, Algorithm::Star, 1),
            (CollectiveKind::AllReduce, Algorithm::OneShot, 1),
        ];
        for (kind, algo, on_cuda) in kinds {
            let plan = g.using(algo).plan(kind, [64 << 10, 4], DType::F32).unwrap();
            let what = format!("{kind:?} {algo} of [{}, {}]: {plan}", order[0], order[1]);
            assert_eq!(computes_on(&plan, VK0), 0, "{what}");
            assert_eq!(computes_on(&plan, CUDA0), on_cuda, "{what}");
        }
    }
    // Below the device bridge's 256 KiB tensors live in host memory, where the Vulkan leader
    // joins them without a kernel and the host folds them; the one-shot all_reduce's fold is
    // still CUDA's, whose member computes it anyway, and the all_to_all one CUDA kernel fanned
    // out (`cuda_fans_out`). (Shards at `HOST_STAGED_CUDA_PAIR_BELOW_BYTES`: smaller, most of
    // the pair's collectives are one host call.)
    let g = DeviceGroup::new(vec![VK0, CUDA0]).unwrap();
    let rows = HOST_STAGED_CUDA_PAIR_BELOW_BYTES / 16;
    for (kind, algo, on_vulkan) in [
        (CollectiveKind::Gather, Algorithm::Auto, 1),
        (CollectiveKind::AllToAll, Algorithm::Auto, 0),
        (CollectiveKind::Reduce, Algorithm::Auto, 1),
        (CollectiveKind::ReduceScatter, Algorithm::OneShot, 1),
        (CollectiveKind::AllReduce, Algorithm::OneShot, 0),
    ] {
        let plan = g.using(algo).plan(kind, [rows, 4], DType::F32).unwrap();
        assert_eq!(computes_on(&plan, VK0), on_vulkan, "{kind:?} {algo}: {plan}");
    }
    // 256 KiB shards cut into 128 KiB parts: the Vulkan shard is in device memory, and a
    // contiguous part of it the device bridge reads in place, so the Vulkan member's join and
    // fold are CUDA's; a strided part (cut along dim 1) a Vulkan kernel cuts out, so the join of
    // the parts stays on the Vulkan device, not after the CUDA work.
    for (kind, algo) in
        [(CollectiveKind::AllToAll, Algorithm::Auto), (CollectiveKind::ReduceScatter, Algorithm::OneShot)]
    {
        let plan = g.using(algo).plan(kind, [16 << 10, 4], DType::F32).unwrap();
        assert_eq!(computes_on(&plan, VK0), 0, "{kind:?}: {plan}");
    }
    let shards = [VK0, CUDA0].map(|d| Tensor::from_vec(vec![1.0f32; 64 << 10], [16 << 10, 4], d).unwrap());
    let strided = Plan::of(&g.all_to_all(&shards, 1).unwrap());
    assert_eq!(computes_on(&strided, VK0), 1, "all_to_all along dim 1: {strided}");
}
