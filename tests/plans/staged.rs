//! Which small collectives of a group with a CUDA member and a host member, or a CUDA member and
//! a Vulkan member alone, are one host call with the CUDA member staged through a host device
//! (the host member, or `cpu:0`; `host_stages_cuda`), and which one kernel of the CUDA member
//! fanned out to the others (`cuda_fans_out`), against the rules as measured
//! (`collectives_tests::staged::cuda_staged_as_measured`, `cuda_fanned_as_measured`). Plans
//! only: no device is touched.

use collectives::collective::{HOST_STAGED_BELOW_BYTES, HOST_STAGED_CUDA_PAIR_BELOW_BYTES};
use collectives::{CollectiveKind, DType, Device, DeviceGroup};

use collectives_tests::staged::{cuda_fanned_as_measured, cuda_staged_as_measured, fanned_call, staged_call};

use super::{CPU0, CUDA0, CUDA1, VK0};

/// The collectives with a host call.
const KINDS: [CollectiveKind; 6] = [
    CollectiveKind::AllReduce,
    CollectiveKind::AllGather,
    CollectiveKind::ReduceScatter,
    CollectiveKind::Broadcast,
    CollectiveKind::Scatter,
    CollectiveKind::AllToAll,
];

#[test]
fn small_collectives_with_a_cuda_member_are_staged_where_measured_faster() {
    let (cpu1, cpu2, cpu3) = (Device::Cpu(1), Device::Cpu(2), Device::Cpu(3));
    let groups = [
        vec![CUDA0, CPU0, cpu1, cpu2, cpu3],
        vec![CUDA0, CPU0, cpu1],
        vec![CUDA0, CPU0, cpu1, cpu2],
        vec![CPU0, cpu1, cpu2, CUDA0],
        vec![CUDA0, VK0, CPU0],
        vec![VK0, CUDA0, CPU0],
        vec![CUDA0, CUDA1, CPU0],
        vec![CUDA0, CPU0],
        vec![CPU0, CUDA0],
        vec![CUDA0, VK0],
        vec![VK0, CUDA0],
        vec![CUDA0, CUDA1, VK0],
    ];
    let pair = HOST_STAGED_CUDA_PAIR_BELOW_BYTES / 4;
    let bound = HOST_STAGED_BELOW_BYTES / 4;
    // f32 elements, multiples of 60 (every group size divides them) but at the bounds; a length
    // its group's size does not divide is left out for that group (the pair bound, for five).
    let lens = [60, (pair - 1) / 60 * 60, pair, (bound - 1) / 60 * 60, bound.div_ceil(60) * 60];
    let (mut seen, mut fanned) = ([false; 2], [false; 2]);
    for devices in groups {
        let g = DeviceGroup::new(devices.clone()).unwrap();
        for kind in KINDS {
            for len in lens.into_iter().filter(|len| len % devices.len() == 0) {
                let plan = g.plan(kind, [len], DType::F32).unwrap();
                let below = 4 * len < HOST_STAGED_BELOW_BYTES;
                let expect = below && cuda_staged_as_measured(&devices, kind, 4 * len, devices[0]);
                let fans = below && cuda_fanned_as_measured(&devices, kind);
                let ctx = format!("{devices:?} {kind:?} {len}");
                assert_eq!(staged_call(&plan, &ctx), expect, "{ctx}: {plan}");
                assert_eq!(fanned_call(&plan), fans, "{ctx}: {plan}");
                seen[expect as usize] = true;
                fanned[fans as usize] = true;
            }
        }
    }
    assert_eq!((seen, fanned), ([true, true], [true, true]), "both sides of each rule");
}
