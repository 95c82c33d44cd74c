//! The algorithm a plan shows: `choose(..)`'s documented expression (and `choose_without_nccl`'s
//! where NCCL is absent or not faster), the thresholds `DeviceGroup::algorithm_for` adds for the
//! leader it knows, and the per-group and per-call overrides.

use collectives::collective::{
    ALL_GATHER_IN_PLACE_MIN_BYTES, CUDA_STAR_MAX_BYTES, ONE_GPU_STAR_MAX_BYTES, RING_MIN_BYTES,
    TWO_SHOT_MIN_BYTES, choose, choose_without_nccl, nccl_available, on_one_gpu,
};
use collectives::{Algorithm, CollectiveKind, DType, Device, DeviceGroup};

use super::{CPU0, CUDA0, VK0, folds, mixed};

#[test]
fn the_plan_shows_the_documented_choice() {
    let vk3 = vec![VK0, Device::Vulkan(1), Device::Vulkan(2)];
    let groups =
        [mixed(), DeviceGroup::new(vk3.clone()).unwrap(), DeviceGroup::new(vk3[..2].to_vec()).unwrap()];
    for g in &groups {
        for numel in [4, RING_MIN_BYTES / 4 - 3, RING_MIN_BYTES / 4 + 3] {
            let bytes = numel * 4;
            let plan = g.plan(CollectiveKind::AllReduce, [numel], DType::F32).unwrap();
            assert_eq!(plan.algorithm, Some(choose(AR, g.devices(), bytes)), "{g}");
            assert_eq!(g.algorithm_for(AR, bytes), choose(AR, g.devices(), bytes));
        }
    }
}

const AR: CollectiveKind = CollectiveKind::AllReduce;

#[test]
fn choose_is_the_documented_expression() {
    let (vk, cuda, cpu) = (Device::Vulkan, Device::Cuda, Device::Cpu);
    let big = RING_MIN_BYTES;
    assert_eq!(choose(AR, &[vk(0), vk(1), vk(2)], big), Algorithm::Ring);
    assert_eq!(choose(AR, &[vk(0), vk(1), vk(2)], big - 1), Algorithm::Star, "small messages");
    assert_eq!(choose(AR, &[vk(0), vk(1)], big * 8), Algorithm::Star, "two devices");
    assert_eq!(choose(AR, &[vk(0), vk(1), cpu(0)], big * 8), Algorithm::Star, "a host member");
    assert_eq!(choose(AR, &[cuda(0), vk(0), vk(1)], big * 8), Algorithm::Star, "mixed vendors");
    let cpus: Vec<Device> = (0..8).map(cpu).collect();
    assert_eq!(choose(AR, &cpus, big * 8), Algorithm::Star, "virtual CPU devices");
    assert_eq!(choose(AR, &[cuda(0)], big), Algorithm::Star, "one device");
    // Where NCCL runs (its collectives, two or more CUDA devices each on a GPU of its own), NCCL;
    // otherwise (virtual devices, no libnccl) `choose_without_nccl`, whatever this machine has.
    let cudas = [cuda(0), cuda(1), cuda(2)];
    let two = [cuda(0), cuda(1)];
    for kind in [
        AR,
        CollectiveKind::Reduce,
        CollectiveKind::Broadcast,
        CollectiveKind::AllGather,
        CollectiveKind::ReduceScatter,
    ] {
        for (devs, bytes) in [(&cudas[..], big), (&cudas[..], big - 1), (&two[..], big * 8)] {
            let (got, native) = (choose(kind, devs, bytes), choose_without_nccl(kind, devs, bytes));
            let nccl_ok = kind != CollectiveKind::Broadcast || devs.len() > 2;
            assert!(
                got == native || (nccl_ok && nccl_available() && got == Algorithm::Nccl),
                "{kind:?} {got}"
            );
        }
    }
    let all_to_all = if on_one_gpu(&cudas) { Algorithm::Star } else { Algorithm::OneShot };
    assert_eq!(choose(CollectiveKind::AllToAll, &cudas, big), all_to_all, "no NCCL form: one call");
    let two_a2a = if on_one_gpu(&two) { Algorithm::Star } else { Algorithm::OneShot };
    assert_eq!(choose(CollectiveKind::AllToAll, &two, 1), two_a2a, "no NCCL form: one call");
    // Two devices: across GPUs one peer copy; on one GPU the leader's one launch.
    let two_broadcast = if on_one_gpu(&two) { Algorithm::Star } else { Algorithm::OneShot };
    assert_eq!(choose(CollectiveKind::Broadcast, &two, big), two_broadcast);
    if on_one_gpu(&cudas) {
        // Logical devices of one GPU (`COLLECTIVES_CUDA_DEVICES=0,0,0`): the star all_reduce and
        // reduce at every size, the others' below ONE_GPU_STAR_MAX_BYTES; `collective::algo`'s
        // own test covers the whole expression on any machine.
        let top = ONE_GPU_STAR_MAX_BYTES;
        for bytes in [1, CUDA_STAR_MAX_BYTES, top, TWO_SHOT_MIN_BYTES * 4] {
            assert_eq!(choose_without_nccl(AR, &cudas, bytes), Algorithm::Star, "{bytes}");
            assert_eq!(
                choose_without_nccl(CollectiveKind::Reduce, &cudas, bytes),
                Algorithm::Star,
                "{bytes}"
            );
            for kind in [CollectiveKind::ReduceScatter, CollectiveKind::Broadcast, CollectiveKind::AllGather]
            {
                let moved = if kind == CollectiveKind::AllGather { bytes * 3 } else { bytes };
                let want = if moved < top { Algorithm::Star } else { Algorithm::OneShot };
                assert_eq!(choose_without_nccl(kind, &cudas, bytes), want, "{kind:?} {bytes}");
            }
        }
    } else {
        across_gpus(&cudas, &two);
    }
    assert_eq!(choose_without_nccl(AR, &[cuda(0)], big), Algorithm::Star, "one device");
    // A CUDA device and a host device: the one-shot all_gather (each joins the other's shard)
    // from its threshold, in either order; not with a third member, nor for other collectives.
    let gather = |devs: &[Device], bytes| choose_without_nccl(CollectiveKind::AllGather, devs, bytes);
    let at = ALL_GATHER_IN_PLACE_MIN_BYTES;
    let host = cpu(0);
    for devs in [[cuda(0), host], [host, cuda(0)]] {
        assert_eq!(gather(&devs, at), Algorithm::OneShot, "{devs:?}");
        assert_eq!(gather(&devs, at - 1), Algorithm::Star, "{devs:?}");
        assert_eq!(choose(CollectiveKind::AllGather, &devs, at), Algorithm::OneShot, "{devs:?}");
        assert_eq!(choose_without_nccl(CollectiveKind::AllToAll, &devs, at), Algorithm::Star);
    }
    assert_eq!(gather(&[cuda(0), host, cpu(1)], at), Algorithm::Star, "three members");
    assert_eq!(gather(&[vk(0), host], at), Algorithm::Star, "no CUDA device");
}

/// [`choose_is_the_documented_expression`]'s thresholds on CUDA devices of more than one GPU (or
/// none: a machine without CUDA).
fn across_gpus(cudas: &[Device], two: &[Device]) {
    let big = RING_MIN_BYTES;
    // Without NCCL: the one-shot where each member pulls its share, the two-shot for a large
    // all_reduce.
    for kind in [CollectiveKind::Broadcast, CollectiveKind::AllGather, CollectiveKind::ReduceScatter] {
        for devs in [cudas, two].into_iter().filter(|d| !on_one_gpu(d)) {
            assert_eq!(choose_without_nccl(kind, devs, big), Algorithm::OneShot, "{kind:?}");
        }
    }
    let gather = |devs: &[Device], bytes| choose_without_nccl(CollectiveKind::AllGather, devs, bytes);
    assert_eq!(gather(cudas, big - 1), Algorithm::Star, "small on three");
    // `two` may be two logical devices of one GPU beside an absent third
    // (`COLLECTIVES_CUDA_DEVICES=0,0`): the star there (`collective::algo`'s own test).
    let small_on_two = if on_one_gpu(two) { Algorithm::Star } else { Algorithm::OneShot };
    assert_eq!(gather(two, 1), small_on_two, "two devices");
    // reduce_scatter and broadcast: the star on three or more devices below its threshold (and on
    // two logical devices of one GPU).
    let star = CUDA_STAR_MAX_BYTES;
    for kind in [CollectiveKind::ReduceScatter, CollectiveKind::Broadcast] {
        assert_eq!(choose_without_nccl(kind, cudas, 1), Algorithm::Star, "{kind:?} small on three");
        assert_eq!(choose_without_nccl(kind, cudas, star - 1), Algorithm::Star, "{kind:?} on three");
        assert_eq!(choose_without_nccl(kind, cudas, star), Algorithm::OneShot, "{kind:?} from the threshold");
        assert_eq!(choose_without_nccl(kind, two, 1), small_on_two, "{kind:?} small on two");
    }
    let two_shot = TWO_SHOT_MIN_BYTES;
    for devs in [cudas, two] {
        if on_one_gpu(devs) {
            // `two` as two logical devices of one GPU beside an absent third
            // (`COLLECTIVES_CUDA_DEVICES=0,0`): the star all_reduce at every size.
            assert_eq!(choose_without_nccl(AR, devs, two_shot), Algorithm::Star, "one GPU");
            continue;
        }
        assert_eq!(choose_without_nccl(AR, devs, two_shot), Algorithm::TwoShot, "large");
        assert_eq!(choose_without_nccl(AR, devs, two_shot - 1), Algorithm::OneShot, "middle");
        assert_eq!(choose_without_nccl(AR, devs, CUDA_STAR_MAX_BYTES), Algorithm::OneShot, "middle");
        assert_eq!(choose_without_nccl(AR, devs, CUDA_STAR_MAX_BYTES - 1), Algorithm::Star, "small");
        assert_eq!(choose_without_nccl(AR, devs, 0), Algorithm::Star, "empty");
    }
    assert_eq!(choose_without_nccl(CollectiveKind::Reduce, cudas, big), Algorithm::Ring, "no one-shot form");
    assert_eq!(choose_without_nccl(CollectiveKind::Reduce, two, big), Algorithm::Star, "no one-shot form");
}

#[test]
fn overrides_per_group_and_per_call_change_the_plan() {
    let vk3 = DeviceGroup::new(vec![VK0, Device::Vulkan(1), Device::Vulkan(2)]).unwrap();
    let small = [30];
    let auto = vk3.plan(CollectiveKind::AllReduce, small, DType::F32).unwrap();
    let ring = vk3.clone().with_algorithm(Algorithm::Ring);
    assert_eq!(ring.algorithm(), Algorithm::Ring);
    let forced = ring.plan(CollectiveKind::AllReduce, small, DType::F32).unwrap();
    assert_eq!((auto.algorithm, forced.algorithm), (Some(Algorithm::Star), Some(Algorithm::Ring)));
    assert_eq!(auto.hops.len(), 7, "star: 2 in and 2 out through the host, the result crossing once\n{auto}");
    assert_eq!(
        forced.hops.len(),
        24,
        "ring: 2 hops per chunk to reduce, 2 to gather, each through the host\n{forced}"
    );
    assert!(forced.hops.iter().all(|h| h.bytes == 40), "a third of the shard per hop\n{forced}");
    let back = ring.using(Algorithm::Star).plan(CollectiveKind::AllReduce, small, DType::F32).unwrap();
    assert_eq!(back, auto, "per call overrides the group's setting");
    assert_eq!(ring.algorithm(), Algorithm::Ring, "using() leaves the group as it was");
    let restored = ring.with_algorithm(Algorithm::Auto).plan(CollectiveKind::AllReduce, small, DType::F32);
    assert_eq!(restored.unwrap(), auto);
}

/// The reduce_scatter of one host device and one CUDA device takes the star at every size,
/// whichever leads, and folds on the CUDA device (the star's hub): one fold of both shards, each
/// part sent on. A setting overrides it.
#[test]
fn a_cuda_and_host_pair_reduce_scatters_by_the_star_on_cuda_whichever_leads() {
    use CollectiveKind::ReduceScatter;
    let host_led = DeviceGroup::new(vec![CPU0, CUDA0]).unwrap();
    let moved = DeviceGroup::new(vec![CUDA0, CPU0]).unwrap().with_leader(CPU0).unwrap();
    let cuda_led = DeviceGroup::new(vec![CUDA0, CPU0]).unwrap();
    for g in [&host_led, &moved, &cuda_led] {
        assert_eq!(g.star_hub(), CUDA0, "{g}");
        for bytes in [4 << 10, 1 << 20, 256 << 20] {
            assert_eq!(g.algorithm_for(ReduceScatter, bytes), Algorithm::Star, "{g} {bytes}");
        }
        let len = (1 << 20) / 4;
        let plan = g.plan(ReduceScatter, [len], DType::F32).unwrap();
        assert_eq!(plan.algorithm, Some(Algorithm::Star), "{plan}");
        assert_eq!(folds(&plan), [(CUDA0, 2, 4 * len)], "one fold on the hub: {plan}");
        let forced = g.using(Algorithm::OneShot).plan(ReduceScatter, [len], DType::F32).unwrap();
        let mut got = folds(&forced);
        got.sort();
        assert_eq!(got, [(CPU0, 2, 2 * len), (CUDA0, 2, 2 * len)], "each folds its part: {forced}");
    }
}
