//! `issue`: chains of collectives issued without waiting, each call reading the outputs of the
//! one before while its devices may still be computing them, on every kind of group the machine
//! has (host devices; with Vulkan or CUDA present, groups with them), by the algorithm chosen and
//! by the ring (the general path's schedule over several queues), and from several threads at
//! once; and random chains of every shard-to-shard collective on random groups (`props`), issued
//! at random depths, some calls realized instead and some handles dropped; and a typed group's
//! calls, issued through their tensors. Once everything is done, every output element is checked
//! against the f64 reference of its call over the inputs that call read.

use std::collections::VecDeque;

use collectives::{Algorithm, DType, Device, DeviceGroup, DeviceKind, Issued, ReduceOp, Tensor, issue};
use collectives_tests::collective::{
    Shards, all_ops, check_exact, check_reduced, cpu_group, ref_concat, ref_narrow, with_dim,
};
use collectives_tests::props::{Case, cases, ok};
use collectives_tests::{Range, cuda_required, device_works, fresh_seed, rng, values, vulkan_required};
use proptest::prelude::*;
use proptest::test_runner::Config;
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

/// One call of a chain: the shards it read, its outputs.
struct Call {
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
        calls.push(Call { ins: std::mem::replace(&mut shards, outs.clone()), outs });
    }
    in_flight.into_iter().try_for_each(Issued::wait).expect("the calls in flight");
    calls
}

/// Checks every output of `calls` (all_reduces of `group`, by `ops`) against the f64 reference
/// over the values each call's inputs hold.
fn check_chain(group: &DeviceGroup, calls: &[Call], ops: &[ReduceOp], ctx: &str) {
    for (i, (call, &op)) in calls.iter().zip(ops).enumerate() {
        let ins: Vec<Vec<f64>> = call.ins.iter().map(values).collect();
        let ins: Vec<&[f64]> = ins.iter().map(Vec::as_slice).collect();
        for (out, &d) in call.outs.iter().zip(group.devices()) {
            check_reduced(out, d, op, &ins, &format!("{ctx}: call {i} ({op:?})"));
        }
    }
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
                check_chain(&group, &issue_chain(&group, first.tensors, &ops), &ops, &ctx);
            }
        }
    }
}

/// Four threads issue chains on the same group at once, each its own shards, 4099 f32 a shard.
#[test]
fn chains_issued_from_several_threads_at_once_match_the_reference() {
    let seed = fresh_seed();
    for group in groups() {
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let group = &group;
                s.spawn(move || {
                    let mut r = rng(seed.wrapping_add(t));
                    let ctx = format!("{group}, thread {t}, seed {seed}");
                    let first = Shards::even(DType::F32, &[4099], group.devices(), Range::General, &mut r);
                    let ops = chain_ops(DType::F32, &mut r);
                    check_chain(group, &issue_chain(group, first.tensors, &ops), &ops, &ctx);
                });
            }
        });
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

/// One call of a random chain: a collective from shards of one shape to shards of one shape.
#[derive(Clone, Copy, Debug)]
enum Step {
    AllReduce(ReduceOp),
    ReduceScatter(ReduceOp),
    AllGather,
    AllToAll,
    /// From the member at this index.
    Broadcast(usize),
}

/// Elements a shard may grow to by all_gathers.
const MAX_ELEMS: usize = 4096;
/// The bound on the values' magnitude (relative to the first shards') a chain's sums may reach.
const MAX_GROWTH: f64 = 256.0;

/// A chain of 2 to 6 steps from shards of `c.even_shape()` over `c.n` members along `c.dim`,
/// each step one the shape allows (a split needs `n` equal parts of the dim, a gather leaves at
/// most [`MAX_ELEMS`]), with each step's input shape.
fn draw_chain(c: &Case, r: &mut StdRng) -> Vec<(Step, Vec<usize>)> {
    let (n, dim) = (c.n, c.dim);
    let (mut shape, mut growth, mut steps) = (c.even_shape(), 1.0f64, vec![]);
    for _ in 0..r.random_range(2..=6) {
        let splits = shape[dim] % n == 0;
        let step = match r.random_range(0..5) {
            1 if splits => Step::ReduceScatter(chain_op(c, &mut growth, r)),
            2 if shape.iter().product::<usize>() * n <= MAX_ELEMS => Step::AllGather,
            3 if splits => Step::AllToAll,
            4 => Step::Broadcast(r.random_range(0..n)),
            _ => Step::AllReduce(chain_op(c, &mut growth, r)),
        };
        let next = match step {
            Step::ReduceScatter(_) => with_dim(&shape, dim, shape[dim] / n),
            Step::AllGather => with_dim(&shape, dim, shape[dim] * n),
            _ => shape.clone(),
        };
        steps.push((step, std::mem::replace(&mut shape, next)));
    }
    steps
}

/// A reduce step's op, drawn as `c.op` draws them less `Prod` (chained products leave the range
/// the references are exact in); a sum is taken as `Avg` where it would grow the values, by
/// `growth` so far, past [`MAX_GROWTH`].
fn chain_op(c: &Case, growth: &mut f64, r: &mut StdRng) -> ReduceOp {
    let op = all_ops(c.dtype, r)[[0, 2, 3, 4, 5][r.random_range(0..5)]];
    let grows = match op {
        ReduceOp::Sum => c.n as f64,
        ReduceOp::PreMulSum(s) => c.n as f64 * s.abs(),
        _ => 1.0,
    };
    if *growth * grows > MAX_GROWTH {
        return ReduceOp::Avg;
    }
    *growth *= grows.max(1.0);
    op
}

/// `step` of `group` over `shards` along `dim`.
fn call(group: &DeviceGroup, step: Step, shards: &[Tensor], dim: usize) -> collectives::Result<Vec<Tensor>> {
    match step {
        Step::AllReduce(op) => group.all_reduce(shards, op),
        Step::ReduceScatter(op) => group.reduce_scatter(shards, op, dim),
        Step::AllGather => group.all_gather(shards, dim),
        Step::AllToAll => group.all_to_all(shards, dim),
        Step::Broadcast(root) => group.broadcast(&shards[root]),
    }
}

/// Checks every output of `step` (over inputs of `shape`) against the f64 reference over the
/// values its inputs hold.
fn check_step(group: &DeviceGroup, (step, shape): &(Step, Vec<usize>), done: &Call, dim: usize, ctx: &str) {
    let ins: Vec<Vec<f64>> = done.ins.iter().map(values).collect();
    let n = group.devices().len();
    let part = shape[dim] / n;
    let part_of = |v: &Vec<f64>, j: usize| ref_narrow(v, shape, dim, j * part, part);
    for (j, (out, &d)) in done.outs.iter().zip(group.devices()).enumerate() {
        let ctx = format!("{ctx}: {step:?} of {shape:?}, output {j}");
        match *step {
            Step::AllReduce(op) => {
                check_reduced(out, d, op, &ins.iter().map(Vec::as_slice).collect::<Vec<_>>(), &ctx)
            }
            Step::ReduceScatter(op) => {
                let parts: Vec<Vec<f64>> = ins.iter().map(|v| part_of(v, j)).collect();
                assert_eq!(out.shape().dims(), with_dim(shape, dim, part), "{ctx}: shape");
                check_reduced(out, d, op, &parts.iter().map(Vec::as_slice).collect::<Vec<_>>(), &ctx);
            }
            Step::AllGather => {
                let joined: Vec<(&[f64], &[usize])> =
                    ins.iter().map(|v| (v.as_slice(), shape.as_slice())).collect();
                check_exact(out, d, &with_dim(shape, dim, shape[dim] * n), &ref_concat(&joined, dim), &ctx);
            }
            Step::AllToAll => {
                let (pieces, part_shape) =
                    (ins.iter().map(|v| part_of(v, j)).collect::<Vec<_>>(), with_dim(shape, dim, part));
                let joined: Vec<(&[f64], &[usize])> =
                    pieces.iter().map(|p| (p.as_slice(), part_shape.as_slice())).collect();
                check_exact(out, d, shape, &ref_concat(&joined, dim), &ctx);
            }
            Step::Broadcast(root) => check_exact(out, d, shape, &ins[root], &ctx),
        }
    }
}

/// Runs `steps` of `group` from `first`, each call issued while up to `depth` earlier ones are in
/// flight (the oldest waited for, or its handle dropped, which waits, before a new one passes
/// that), about one call in four realized instead; `None` where a call is void for the case
/// ([`ok`]). Returns the calls once every one is complete.
fn run_chain(
    c: &Case,
    group: &DeviceGroup,
    first: Vec<Tensor>,
    steps: &[(Step, Vec<usize>)],
    r: &mut StdRng,
) -> Option<Vec<Call>> {
    let depth = r.random_range(1..=4);
    let (mut calls, mut in_flight, mut shards) = (Vec::<Call>::new(), VecDeque::<Issued>::new(), first);
    for &(step, _) in steps {
        let outs = ok(c, call(group, step, &shards, c.dim))?;
        if in_flight.len() == depth {
            let oldest = in_flight.pop_front().expect("a call in flight");
            if r.random_range(0..3) == 0 { drop(oldest) } else { ok(c, oldest.wait())? }
        }
        if r.random_range(0..4) == 0 {
            ok(c, collectives::realize(&outs))?;
        } else {
            in_flight.push_back(ok(c, issue(&outs))?);
        }
        calls.push(Call { ins: std::mem::replace(&mut shards, outs.clone()), outs });
    }
    for i in in_flight {
        ok(c, i.wait())?;
    }
    Some(calls)
}

/// Cases of the chain property: 256 (about 1000 calls) take a fraction of a second on a 2-core
/// machine with lavapipe (this whole file took 15 s on one H200, its groups holding `cuda:0` too).
fn config() -> Config {
    Config { cases: 256, failure_persistence: None, ..Config::default() }
}

proptest! {
    #![proptest_config(config())]

    /// Random chains of every shard-to-shard collective on random groups ([`cases`]), issued
    /// at random depths, checked once all are done.
    #[test]
    fn random_chains_of_issued_collectives_match_the_reference(c in cases()) {
        let (group, mut r) = (c.group(), c.rng());
        let steps = draw_chain(&c, &mut r);
        let first = Shards::even(c.dtype, &c.even_shape(), group.devices(), Range::General, &mut r);
        let Some(calls) = run_chain(&c, &group, first.tensors, &steps, &mut r) else { return Ok(()) };
        for (i, (done, step)) in calls.iter().zip(&steps).enumerate() {
            check_step(&group, step, done, c.dim, &format!("{c:?}: call {i}"));
        }
    }
}

/// A typed group's outputs are issued through their tensors (`ShardsOf::tensors`), and the next
/// typed call reads them in flight.
#[test]
fn a_typed_groups_calls_are_issued_through_their_tensors() {
    use collectives::device_group;
    use collectives::typed::ShardsOf;
    let seed = fresh_seed();
    let mut r = rng(seed);
    let g = device_group!(Cpu(0), Cpu(1), Cpu(2)).expect("three host devices");
    let first = Shards::even(DType::F32, &[4099], g.devices(), Range::General, &mut r);
    let [a, b, c] = [0, 1, 2].map(|i| first.tensors[i].clone());
    let (m0, m1, m2) = g.members();
    let shards = (m0.shard(a).unwrap(), m1.shard(b).unwrap(), m2.shard(c).unwrap());
    let sums = g.all_reduce(shards.clone(), ReduceOp::Sum).expect("all_reduce");
    let issued = issue(&sums.tensors()).expect("issue");
    let maxes = g.all_reduce(sums.clone(), ReduceOp::Max).expect("all_reduce of the sums in flight");
    issue(&maxes.tensors()).expect("issue").wait().expect("the maxes");
    issued.wait().expect("the sums");
    let calls = [
        Call { ins: shards.tensors(), outs: sums.tensors() },
        Call { ins: sums.tensors(), outs: maxes.tensors() },
    ];
    check_chain(g.runtime(), &calls, &[ReduceOp::Sum, ReduceOp::Max], &format!("typed, seed {seed}"));
}
