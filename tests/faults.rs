//! Fault injection (cargo feature `failpoints`): every collective, on a group of virtual CPU
//! devices, on groups with a lavapipe Vulkan device, and where there is a CUDA device on groups
//! with it, is run once counting the failpoints it
//! passes (N: backend allocations, copies, kernel launches, submissions), then N more times with
//! hit k failing, for every k in 1..=N (every other one issued with `collectives::issue` and then
//! waited for, the rest realized). Each of those runs must return the injected error (no
//! panic, no hang), leave its inputs as they were, and leave every backend figure (live buffers
//! and allocations, work in flight, command buffers, descriptor pools, pipelines) as before —
//! the pools of freed buffers may keep what a run freed ([`is_pool_size`]); the group must then
//! compute the right answer on fresh data.
//!
//! The failpoint state is process-wide (the executor issues each device's queue on a thread of
//! its own), so this binary holds one test function.
#![cfg(feature = "failpoints")]

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use collectives::failpoint::{self, Armed};
use collectives::{Algorithm, DType, Device, DeviceGroup, ReduceOp, Scale, Tensor};
use collectives_tests::collective::{Shards, check_exact, check_reduced, ref_concat, ref_narrow, with_dim};
use collectives_tests::{Range, cuda_required, device_works, fresh_seed, rng, vulkan_required};

/// Rows of every shard (splits evenly over groups of 3 and 4) and elements per row: 1.2 MB of
/// f32 a shard, so the host pool and the Vulkan buffer cache are in play.
const ROWS: usize = 12;
const WIDTH: usize = 24576;

/// Elements per row of the shards of the streamed sweep: each shard just over
/// `collectives::exec::STREAM_MIN_BYTES`, so a CUDA fold of a host member's shard streams its
/// upload and download in chunks (`exec/stream.rs`).
const STREAMED_WIDTH: usize = collectives::exec::STREAM_MIN_BYTES.div_ceil(4 * ROWS) + 8;

/// Elements per row of the shards of the small sweep: 48 f32 a shard, so a Vulkan member's folds
/// and a join's computed part are run by the host (`collectives::VULKAN_HOST_KERNEL_BYTES`), and
/// the star collectives with a host call are one, the Vulkan member staged through the host
/// (`collectives::collective::HOST_STAGED_BELOW_BYTES`).
const SMALL_WIDTH: usize = 4;

/// The cases of the small sweep: those where a Vulkan member folds or computes a join's part,
/// and the host calls with a Vulkan member (or a CUDA member) staged.
const SMALL: &[(Coll, Algorithm)] = &[
    (Coll::AllReduce, Algorithm::Star),
    (Coll::AllReduce, Algorithm::OneShot),
    (Coll::Reduce, Algorithm::Star),
    (Coll::ReduceScatter, Algorithm::Star),
    (Coll::ReduceScatter, Algorithm::OneShot),
    (Coll::AllGather, Algorithm::Star),
    (Coll::Broadcast, Algorithm::Star),
    (Coll::Scatter, Algorithm::Star),
    (Coll::AllToAll, Algorithm::Star),
    (Coll::AllReduceCoalesced, Algorithm::Star),
    (Coll::ComputedJoin, Algorithm::Auto),
];

/// The all_to_all alone: what a pair of a CUDA and a host device, or two CUDA devices with a host
/// device, stage through the host when small.
const STAGED_ALL_TO_ALL: &[(Coll, Algorithm)] = &[(Coll::AllToAll, Algorithm::Star)];

/// The cases of the streamed sweep: the star's folds on the CUDA leader.
const STREAMED: &[(Coll, Algorithm)] = &[
    (Coll::AllReduce, Algorithm::Star),
    (Coll::Reduce, Algorithm::Star),
    (Coll::ReduceScatter, Algorithm::Star),
];

/// A run taking longer than this is a hang: the watchdog ends the process.
const HANG: Duration = Duration::from_secs(120);

#[derive(Clone, Copy, Debug)]
enum Coll {
    AllReduce,
    Reduce,
    ReduceScatter,
    AllGather,
    Broadcast,
    Scatter,
    Gather,
    AllToAll,
    /// `all_reduce_coalesced` of two tensors a device: the shard and its first row.
    AllReduceCoalesced,
    /// `broadcast_coalesced` of the root's shard and its first row.
    BroadcastCoalesced,
    /// Not a collective: on each member, its shard doubled (a kernel there) joined with the next
    /// member's shard copied to it (through the host between CUDA and Vulkan) — a join that
    /// computes its own part as part of the join on every member (`exec/join.rs`; on a Vulkan
    /// member the kernel is recorded into the join's submission).
    ComputedJoin,
}

/// Every collective with each algorithm it takes (the one- and two-shot forms are one CUDA call
/// on CUDA groups and a host call on host groups; elsewhere the graph's one-shot all_reduce,
/// all_gather and reduce_scatter, and the star for the others).
const CASES: &[(Coll, Algorithm)] = &[
    (Coll::AllReduce, Algorithm::Star),
    (Coll::AllReduce, Algorithm::Ring),
    (Coll::AllReduce, Algorithm::OneShot),
    (Coll::AllReduce, Algorithm::TwoShot),
    (Coll::ReduceScatter, Algorithm::OneShot),
    (Coll::AllGather, Algorithm::OneShot),
    (Coll::Broadcast, Algorithm::OneShot),
    (Coll::Reduce, Algorithm::Star),
    (Coll::Reduce, Algorithm::Ring),
    (Coll::ReduceScatter, Algorithm::Star),
    (Coll::ReduceScatter, Algorithm::Ring),
    (Coll::AllGather, Algorithm::Star),
    (Coll::AllGather, Algorithm::Ring),
    (Coll::Broadcast, Algorithm::Star),
    (Coll::Broadcast, Algorithm::Ring),
    (Coll::Scatter, Algorithm::Star),
    (Coll::Gather, Algorithm::Star),
    (Coll::AllToAll, Algorithm::Star),
    (Coll::AllToAll, Algorithm::OneShot),
    (Coll::AllReduceCoalesced, Algorithm::Star),
    (Coll::AllReduceCoalesced, Algorithm::Ring),
    (Coll::BroadcastCoalesced, Algorithm::Star),
    (Coll::ComputedJoin, Algorithm::Auto),
];

/// The root of broadcast and scatter: member 1.
const ROOT: usize = 1;

/// How a run ends: realized, or issued and then waited for (`collectives::issue`).
#[derive(Clone, Copy, Debug)]
enum How {
    Realize,
    Issue,
}

/// Builds `c`'s result over `s` and computes it as `how` says.
fn run(c: Coll, g: &DeviceGroup, s: &Shards, how: How) -> collectives::Result<Vec<Tensor>> {
    let t = &s.tensors;
    let outs = match c {
        Coll::AllReduce => g.all_reduce(t, ReduceOp::Sum)?,
        Coll::Reduce => vec![g.reduce(t, ReduceOp::Sum)?],
        Coll::ReduceScatter => g.reduce_scatter(t, ReduceOp::Sum, 0)?,
        Coll::AllGather => g.all_gather(t, 0)?,
        Coll::Broadcast => g.broadcast(&t[ROOT])?,
        Coll::Scatter => g.scatter(&t[ROOT], 0)?,
        Coll::Gather => vec![g.gather(t, 0)?],
        Coll::AllToAll => g.all_to_all(t, 0)?,
        Coll::AllReduceCoalesced => {
            let buckets = t
                .iter()
                .map(|x| Ok(vec![x.clone(), x.narrow(0, 0, 1)?]))
                .collect::<collectives::Result<Vec<_>>>()?;
            g.all_reduce_coalesced(&buckets, ReduceOp::Sum)?.concat()
        }
        Coll::BroadcastCoalesced => {
            g.broadcast_coalesced(&[t[ROOT].clone(), t[ROOT].narrow(0, 0, 1)?])?.concat()
        }
        Coll::ComputedJoin => (0..t.len())
            .map(|i| {
                let (next, to) = (&t[(i + 1) % t.len()], t[i].device());
                // A CUDA <-> Vulkan pair is staged through the host, as the API asks.
                let next = match next.device().needs_staging(to) {
                    true => next.copy_to_device(Device::Cpu(0))?.copy_to_device(to)?,
                    false => next.copy_to_device(to)?,
                };
                Tensor::concat(&[t[i].scale(Scale::Mul(2.0))?, next], 0)
            })
            .collect::<collectives::Result<_>>()?,
    };
    match how {
        How::Realize => collectives::realize(&outs)?,
        How::Issue => collectives::issue(&outs)?.wait()?,
    }
    Ok(outs)
}

/// Checks every element of `c`'s result `outs` over `s` against the f64 reference.
fn check(c: Coll, g: &DeviceGroup, s: &Shards, outs: &[Tensor], ctx: &str) {
    let width = s.vals[0].len() / ROWS;
    let shape = [ROWS, width];
    let n = g.size();
    let part = ROWS / n;
    let part_shape = with_dim(&shape, 0, part);
    let narrow = |v: &[f64], i: usize| ref_narrow(v, &shape, 0, i * part, part);
    let all_parts: Vec<(&[f64], &[usize])> = s.vals.iter().map(|v| (v.as_slice(), &shape[..])).collect();
    let full = with_dim(&shape, 0, ROWS * n);
    match c {
        Coll::AllReduce => {
            for (t, &d) in outs.iter().zip(g.devices()) {
                check_reduced(t, d, ReduceOp::Sum, &s.slices(), ctx);
            }
        }
        Coll::Reduce => check_reduced(&outs[0], g.leader(), ReduceOp::Sum, &s.slices(), ctx),
        Coll::ReduceScatter => {
            for (i, (t, &d)) in outs.iter().zip(g.devices()).enumerate() {
                let parts: Vec<Vec<f64>> = s.vals.iter().map(|v| narrow(v, i)).collect();
                let inputs: Vec<&[f64]> = parts.iter().map(Vec::as_slice).collect();
                assert_eq!(t.shape().dims(), part_shape.as_slice(), "{ctx}");
                check_reduced(t, d, ReduceOp::Sum, &inputs, ctx);
            }
        }
        Coll::AllGather => {
            let want = ref_concat(&all_parts, 0);
            for (t, &d) in outs.iter().zip(g.devices()) {
                check_exact(t, d, &full, &want, ctx);
            }
        }
        Coll::Gather => check_exact(&outs[0], g.leader(), &full, &ref_concat(&all_parts, 0), ctx),
        Coll::Broadcast => {
            for (t, &d) in outs.iter().zip(g.devices()) {
                check_exact(t, d, &shape, &s.vals[ROOT], ctx);
            }
        }
        Coll::Scatter => {
            for (j, (t, &d)) in outs.iter().zip(g.devices()).enumerate() {
                check_exact(t, d, &part_shape, &narrow(&s.vals[ROOT], j), ctx);
            }
        }
        Coll::AllReduceCoalesced => {
            let rows: Vec<Vec<f64>> = s.vals.iter().map(|v| v[..width].to_vec()).collect();
            let rows: Vec<&[f64]> = rows.iter().map(Vec::as_slice).collect();
            for (pair, &d) in outs.chunks(2).zip(g.devices()) {
                check_reduced(&pair[0], d, ReduceOp::Sum, &s.slices(), ctx);
                check_reduced(&pair[1], d, ReduceOp::Sum, &rows, ctx);
            }
        }
        Coll::BroadcastCoalesced => {
            for (pair, &d) in outs.chunks(2).zip(g.devices()) {
                check_exact(&pair[0], d, &shape, &s.vals[ROOT], ctx);
                check_exact(&pair[1], d, &[1, width], &s.vals[ROOT][..width], ctx);
            }
        }
        Coll::ComputedJoin => {
            for (i, (t, &d)) in outs.iter().zip(g.devices()).enumerate() {
                let doubled: Vec<f64> = s.vals[i].iter().map(|v| 2.0 * v).collect();
                let next = &s.vals[(i + 1) % n];
                let joined = [(doubled.as_slice(), &shape[..]), (next.as_slice(), &shape[..])];
                check_exact(t, d, &with_dim(&shape, 0, 2 * ROWS), &ref_concat(&joined, 0), ctx);
            }
        }
        Coll::AllToAll => {
            for (j, (t, &d)) in outs.iter().zip(g.devices()).enumerate() {
                let pieces: Vec<Vec<f64>> = s.vals.iter().map(|v| narrow(v, j)).collect();
                let joined: Vec<(&[f64], &[usize])> =
                    pieces.iter().map(|p| (p.as_slice(), part_shape.as_slice())).collect();
                check_exact(t, d, &shape, &ref_concat(&joined, 0), ctx);
            }
        }
    }
}

/// Fresh random f32 shards of `ROWS` × `width` on the group's devices, uploaded.
fn shards(g: &DeviceGroup, seed: u64, width: usize) -> Shards {
    let s = Shards::even(DType::F32, &[ROWS, width], g.devices(), Range::General, &mut rng(seed));
    collectives::realize(&s.tensors).expect("upload the shards");
    s
}

/// Every device of `g` idle, then the backends' figures.
fn settled(g: &DeviceGroup) -> BTreeMap<String, u64> {
    for &d in g.devices() {
        collectives::synchronize(d).expect("synchronize");
    }
    failpoint::resources()
}

/// Whether figure `name` is the size of a pool or cache of freed buffers. Those are not compared:
/// they keep freed buffers for reuse (each bounded by its limit), and which sizes a run leaves
/// parked depends on thread timing (on the 16-core GPU machine a CPU ring parked one more host
/// buffer after a failed run than after a good one; dropping CUDA buffers parks them in the
/// device's reuse pool). A buffer that is never given back shows in the live counts instead.
fn is_pool_size(name: &str) -> bool {
    name.ends_with("pool bytes") || name.ends_with("cache bytes")
}

/// The figures (other than pool sizes) that differ between `base` and `now`.
fn leaks(base: &BTreeMap<String, u64>, now: &BTreeMap<String, u64>) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = base.keys().chain(now.keys()).collect();
    keys.into_iter()
        .filter(|k| !is_pool_size(k) && base.get(*k) != now.get(*k))
        .map(|k| format!("{k}: {:?} -> {:?}", base.get(k), now.get(k)))
        .collect()
}

/// Counts of one sweep.
#[derive(Default)]
struct Sweep {
    calls: u64,
    failed: u64,
    errors: u64,
    leaks: u64,
}

/// One group of the sweep: its name, its members, the width of its shards and its cases.
struct Group {
    kind: &'static str,
    devices: Vec<Device>,
    width: usize,
    cases: &'static [(Coll, Algorithm)],
}

impl Group {
    fn new(kind: &'static str, devices: Vec<Device>) -> Self {
        Group { kind, devices, width: WIDTH, cases: CASES }
    }
}

/// The sweep of one collective on `g`'s devices; `started` is the watchdog's clock of the current
/// run.
fn sweep(g: &Group, c: Coll, algo: Algorithm, seed: u64, started: &AtomicU64) -> Sweep {
    let (kind, width) = (g.kind, g.width);
    let ctx = format!("{kind} {c:?} {algo} seed {seed}");
    let g = DeviceGroup::new(g.devices.clone()).expect("distinct devices").using(algo);
    let s = shards(&g, seed, width);
    // Warm up (pipelines built, pools filled to the call's peak), checking the answer.
    for _ in 0..3 {
        let outs = run(c, &g, &s, How::Realize).unwrap_or_else(|e| panic!("{ctx}: warm-up: {e}"));
        check(c, &g, &s, &outs, &ctx);
    }
    let mut base = settled(&g);
    // The detector sees a buffer held past the baseline.
    let held = shards(&g, seed, width);
    assert!(!leaks(&base, &settled(&g)).is_empty(), "{ctx}: held buffers are not seen");
    drop(held);
    assert_eq!(leaks(&base, &settled(&g)), Vec::<String>::new(), "{ctx}: after dropping them");
    let n = {
        let _armed = Armed::count();
        let outs = run(c, &g, &s, How::Realize).unwrap_or_else(|e| panic!("{ctx}: counting run: {e}"));
        drop(outs);
        failpoint::hits()
    };
    // A host group's broadcast, and its scatter into contiguous parts, hand each member a view of
    // the root's tensor: nothing is allocated or launched, so nothing can fail. Every other call
    // passes a failpoint.
    let views_only = g.devices().iter().all(|d| d.is_host()) && matches!(c, Coll::Broadcast | Coll::Scatter);
    assert!(n > 0 || views_only, "{ctx}: the call passed no failpoint");
    let mut out = Sweep { calls: n, ..Sweep::default() };
    for k in 1..=n {
        // Every other run is issued, then waited for: it passes the same failpoints.
        let how = if k % 2 == 0 { How::Issue } else { How::Realize };
        let at = format!("{ctx}, hit {k} of {n}, {how:?}");
        started.store(epoch_ms(), Ordering::Release);
        let got = {
            let _armed = Armed::fail_at(k);
            let got = catch_unwind(AssertUnwindSafe(|| run(c, &g, &s, how).map(drop)));
            (got, failpoint::injected())
        };
        started.store(0, Ordering::Release);
        match got {
            (Err(_), _) => panic!("{at}: the call panicked"),
            (Ok(Ok(())), None) => panic!("{at}: the hit was not reached (the call passed fewer failpoints)"),
            (Ok(Ok(())), Some((d, site))) => panic!("{at}: {site} on {d} failed, yet the call returned Ok"),
            (Ok(Err(e)), inj) => {
                let (d, site) = inj.unwrap_or_else(|| panic!("{at}: an error with no failure injected: {e}"));
                out.failed += 1;
                assert!(
                    e.to_string().contains("injected failure"),
                    "{at}: {site} on {d} failed, but the call returned another error: {e}"
                );
                out.errors += 1;
            }
        }
        s.assert_untouched(&at);
        let now = settled(&g);
        let diff = leaks(&base, &now);
        if !diff.is_empty() {
            // Counted and reported at the end; the next run is measured from here.
            out.leaks += 1;
            println!("LEAK {at}: the backends did not return to their baseline: {diff:?}");
            base = now;
        }
    }
    // The group still works, on fresh data.
    let fresh = shards(&g, seed ^ 0x9e37_79b9_7f4a_7c15, width);
    let outs = run(c, &g, &fresh, How::Issue).unwrap_or_else(|e| panic!("{ctx}: after the sweep: {e}"));
    check(c, &g, &fresh, &outs, &format!("{ctx}, after the sweep"));
    out
}

fn epoch_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_millis() as u64)
}

#[test]
fn every_injected_failure_is_an_error_that_leaves_inputs_and_pools_as_they_were() {
    let started = std::sync::Arc::new(AtomicU64::new(0));
    let watch = started.clone();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let t = watch.load(Ordering::Acquire);
            if t != 0 && epoch_ms().saturating_sub(t) > HANG.as_millis() as u64 {
                eprintln!("a run with an injected failure hung for {HANG:?}");
                std::process::exit(101);
            }
        }
    });
    let (cpu, vk, cuda0, cuda1) = (Device::Cpu, Device::Vulkan(0), Device::Cuda(0), Device::Cuda(1));
    let mut groups = vec![Group::new("cpu x4", (0..4).map(cpu).collect())];
    let vulkan = device_works(vk, vulkan_required());
    if vulkan {
        groups.push(Group::new("vulkan+cpu x2", vec![vk, cpu(0), cpu(1)]));
        groups.push(Group::new("cpu x2+vulkan", vec![cpu(0), cpu(1), vk]));
        let devices = vec![vk, cpu(0), cpu(1)];
        groups.push(Group { kind: "vulkan+cpu x2, small", devices, width: SMALL_WIDTH, cases: SMALL });
    }
    // CUDA where there is one (the GPU machine; `COLLECTIVES_CUDA_DEVICES=0,0` makes two virtual
    // devices of one GPU): CUDA peers, and CUDA with host and Vulkan members (the staged chain).
    if device_works(cuda0, cuda_required()) {
        if device_works(cuda1, false) {
            groups.push(Group::new("cuda x2", vec![cuda0, cuda1]));
            groups.push(Group::new("cuda x2+cpu", vec![cuda0, cuda1, cpu(0)]));
        }
        if vulkan {
            groups.push(Group::new("cuda+cpu+vulkan", vec![cuda0, cpu(0), vk]));
            // No host member: the host calls staged through `cpu:0` all the same.
            let devices = vec![cuda0, vk];
            groups.push(Group { kind: "cuda+vulkan, small", devices, width: SMALL_WIDTH, cases: SMALL });
        }
        let streamed = vec![cuda0, cpu(0)];
        groups.push(Group {
            kind: "cuda+cpu, streamed",
            devices: streamed,
            width: STREAMED_WIDTH,
            cases: STREAMED,
        });
        // Small: the host calls with the CUDA member staged through a host member
        // (`collectives::collective::host_stages_cuda`): every one of two host devices and a CUDA
        // device, the all_to_all of a pair and of two CUDA devices with a host device.
        let devices = vec![cpu(0), cpu(1), cuda0];
        groups.push(Group { kind: "cpu x2+cuda, small", devices, width: SMALL_WIDTH, cases: SMALL });
        let (width, cases) = (SMALL_WIDTH, STAGED_ALL_TO_ALL);
        groups.push(Group { kind: "cpu+cuda, small", devices: vec![cpu(0), cuda0], width, cases });
        if device_works(cuda1, false) {
            groups.push(Group {
                kind: "cuda x2+cpu, small",
                devices: vec![cuda0, cuda1, cpu(0)],
                width,
                cases,
            });
        }
    }
    let seed = fresh_seed();
    println!("seed {seed}");
    let t0 = Instant::now();
    let mut total = Sweep::default();
    for group in &groups {
        let (kind, g) = (group.kind, DeviceGroup::new(group.devices.clone()).expect("distinct devices"));
        println!("{kind}: figures watched: {:?}", settled(&g).keys().collect::<Vec<_>>());
        for &(c, algo) in group.cases {
            let s = sweep(group, c, algo, seed, &started);
            println!(
                "{kind:>14} {:>22}: {:>3} failpoints, {:>3} calls failed, {:>3} errors returned, {} leaks",
                format!("{c:?} ({algo})"),
                s.calls,
                s.failed,
                s.errors,
                s.leaks
            );
            total.calls += s.calls;
            total.failed += s.failed;
            total.errors += s.errors;
            total.leaks += s.leaks;
        }
    }
    println!(
        "total: {} calls failed, {} errors returned, {} leaks ({:.1} s)",
        total.failed,
        total.errors,
        total.leaks,
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(total.leaks, 0, "runs that left the backends off their baseline (the LEAK lines above)");
    assert_eq!(total.errors, total.failed, "every injected failure is the error returned");
}
