//! `issue`: chains of collectives issued without waiting, each call reading the outputs of the
//! one before while its devices may still be computing them, on every kind of group the machine
//! has (host devices; with Vulkan or CUDA present, groups with them), by the algorithm chosen and
//! by the ring (the general path's schedule over several queues). Once everything is done,
//! every output element is checked against the f64 reference of its call over the inputs that
//! call read.

use std::collections::VecDeque;

use collectives::{Algorithm, DType, Device, DeviceGroup, DeviceKind, Issued, ReduceOp, Tensor, issue};
use collectives_tests::collective::{Shards, check_reduced, cpu_group};
use collectives_tests::{Range, cuda_required, device_works, fresh_seed, rng, values, vulkan_required};
use rand::Rng;
use rand::rngs::StdRng;

/// Calls in flight at once: the oldest is waited for before a new one would pass this many.
const DEPTH: usize = 3;
/// Elements per shard: one, odd, and past 64 Ki.
const SIZES: [usize; 3] = [1, 7, 65537];
/// A float, an integer and a 16-bit float (accumulated in f32).
const DTYPES: [DType; 3] = [DType::F32, DType::I32, DType::BF16];

/// The ops of a chain, one call each; `PreMulSum`'s scalar drawn for `dtype`.
fn chain_ops(dtype: DType, rng: &mut StdRng) -> [ReduceOp; 5] {
    let s = if dtype.is_int() { [2.0, -3.0][rng.random_range(0..2)] } else { rng.random_range(0.25..1.5) };
    [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Avg, ReduceOp::Min, ReduceOp::PreMulSum(s)]
}

/// Host devices alone, and beside Vulkan and CUDA devices where they work.
fn groups() -> Vec<DeviceGroup> {
    let (vk, cu, cpu) = (Device::Vulkan(0), Device::Cuda(0), [Device::Cpu(0), Device::Cpu(1)]);
    let mut lists = vec![];
    let vulkan = device_works(vk, vulkan_required());
    if vulkan {
        lists.extend([vec![vk, cpu[0]], vec![cpu[0], cpu[1], vk]]);
    }
    if device_works(cu, cuda_required()) {
        let cudas: Vec<Device> =
            collectives::available_devices().into_iter().filter(|d| d.kind() == DeviceKind::Cuda).collect();
        if cudas.len() > 1 {
            lists.push(cudas);
        }
        lists.extend([vec![cu, cpu[0]], vec![cpu[0], cu, cpu[1]]]);
        if vulkan {
            lists.push(vec![cu, vk, cpu[0]]);
        }
    }
    let mut groups = vec![cpu_group(3)];
    groups.extend(lists.into_iter().map(|l| DeviceGroup::new(l).expect("distinct devices")));
    groups
}

/// One call of a chain: its op, the shards it read, its outputs.
struct Call {
    op: ReduceOp,
    ins: Vec<Tensor>,
    outs: Vec<Tensor>,
}

/// all_reduces of `group` chained on `first`, each issued before the last is done (at most
/// [`DEPTH`] in flight); returns the calls once every one is complete.
fn issue_chain(group: &DeviceGroup, first: Vec<Tensor>, ops: &[ReduceOp]) -> Vec<Call> {
    let (mut calls, mut in_flight) = (Vec::<Call>::new(), VecDeque::<Issued>::new());
    let mut shards = first;
    for &op in ops {
        let outs = group.all_reduce(&shards, op).expect("all_reduce");
        if in_flight.len() == DEPTH {
            in_flight.pop_front().expect("a call in flight").wait().expect("the oldest call");
        }
        in_flight.push_back(issue(&outs).expect("issue"));
        calls.push(Call { op, ins: std::mem::replace(&mut shards, outs.clone()), outs });
    }
    in_flight.into_iter().try_for_each(Issued::wait).expect("the calls in flight");
    calls
}

#[test]
fn chains_of_issued_calls_match_the_reference_on_every_group() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let every = groups().into_iter().flat_map(|g| [g.using(Algorithm::Ring), g]);
    for group in every {
        for dtype in DTYPES {
            for len in SIZES {
                let ctx = format!("{group} ({}), {dtype}, {len} elements, seed {seed}", group.algorithm());
                let first = Shards::even(dtype, &[len], group.devices(), Range::General, &mut r);
                let ops = chain_ops(dtype, &mut r);
                for (i, call) in issue_chain(&group, first.tensors, &ops).iter().enumerate() {
                    let ins: Vec<Vec<f64>> = call.ins.iter().map(values).collect();
                    let ins: Vec<&[f64]> = ins.iter().map(Vec::as_slice).collect();
                    for (out, &d) in call.outs.iter().zip(group.devices()) {
                        check_reduced(out, d, call.op, &ins, &format!("{ctx}: call {i} ({:?})", call.op));
                    }
                }
            }
        }
    }
}

#[test]
fn an_issued_call_keeps_what_it_reads_and_writes_until_it_is_done() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for group in groups() {
        let ctx = format!("{group}, seed {seed}");
        let shards = Shards::even(DType::F32, &[65537], group.devices(), Range::General, &mut r);
        let issued =
            issue(&group.all_reduce(&shards.tensors, ReduceOp::Sum).expect("all_reduce")).expect("issue");
        // The handle alone holds the call now: the shards and the outputs the caller had are gone.
        let (vals, devices) =
            (shards.vals.clone(), issued.targets().iter().map(Tensor::device).collect::<Vec<_>>());
        drop(shards);
        let outs = issued.targets().to_vec();
        issued.wait().expect("the call");
        let ins: Vec<&[f64]> = vals.iter().map(Vec::as_slice).collect();
        for (out, d) in outs.iter().zip(devices) {
            check_reduced(out, d, ReduceOp::Sum, &ins, &ctx);
        }
    }
}
