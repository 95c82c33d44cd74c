//! One collective at one size: inputs, the timed runs, and the check against an f64 reference.

use std::collections::VecDeque;
use std::time::Instant;

use rayon::prelude::*;

use collectives::{CollectiveKind, DeviceGroup, Element, Issued, ReduceKind, ReduceOp, Scale, Tensor};
use collectives_examples::{fold, random_data, tolerance};

/// The collectives the tool measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Coll {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    AllToAll,
    /// The shards joined on the leader (nccl-tests' gather; `size` is the joined output).
    Gather,
    /// The leader's tensor cut into one part per device (nccl-tests' scatter; `size` is the
    /// leader's tensor).
    Scatter,
    /// Not a collective: the n-ary reduce kernel on the first device, folding n shards that all
    /// live there (a device's local reduce bandwidth; "busbw" is bytes read + written per second).
    LocalReduce,
}

impl Coll {
    pub fn parse(s: &str) -> Result<Coll, String> {
        Ok(match s {
            "all_reduce" => Coll::AllReduce,
            "all_gather" => Coll::AllGather,
            "reduce_scatter" => Coll::ReduceScatter,
            "broadcast" => Coll::Broadcast,
            "reduce" => Coll::Reduce,
            "all_to_all" => Coll::AllToAll,
            "gather" => Coll::Gather,
            "scatter" => Coll::Scatter,
            "local_reduce" => Coll::LocalReduce,
            _ => return Err(format!("unknown op {s:?}")),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Coll::AllReduce => "all_reduce",
            Coll::AllGather => "all_gather",
            Coll::ReduceScatter => "reduce_scatter",
            Coll::Broadcast => "broadcast",
            Coll::Reduce => "reduce",
            Coll::AllToAll => "all_to_all",
            Coll::Gather => "gather",
            Coll::Scatter => "scatter",
            Coll::LocalReduce => "local_reduce",
        }
    }

    /// The library's name for the collective.
    pub fn kind(self) -> CollectiveKind {
        match self {
            Coll::AllReduce => CollectiveKind::AllReduce,
            Coll::AllGather => CollectiveKind::AllGather,
            Coll::ReduceScatter => CollectiveKind::ReduceScatter,
            Coll::Broadcast => CollectiveKind::Broadcast,
            Coll::Reduce => CollectiveKind::Reduce,
            Coll::AllToAll => CollectiveKind::AllToAll,
            Coll::Gather => CollectiveKind::Gather,
            Coll::Scatter => CollectiveKind::Scatter,
            Coll::LocalReduce => CollectiveKind::Reduce,
        }
    }

    /// nccl-tests' bus-bandwidth factor for `n` ranks.
    pub fn bus_factor(self, n: usize) -> f64 {
        let n = n as f64;
        match self {
            Coll::AllReduce => 2.0 * (n - 1.0) / n,
            Coll::AllGather | Coll::ReduceScatter | Coll::AllToAll | Coll::Gather | Coll::Scatter => {
                (n - 1.0) / n
            }
            Coll::Broadcast | Coll::Reduce => 1.0,
            Coll::LocalReduce => n + 1.0,
        }
    }

    /// Elements per device input for nccl-tests' `size` (bytes): all_gather's and gather's size
    /// is their output; reduce_scatter, all_to_all and scatter need a multiple of n.
    pub fn input_count(self, size: usize, esize: usize, n: usize) -> usize {
        let count = size / esize;
        match self {
            Coll::AllGather | Coll::Gather => count / n,
            Coll::ReduceScatter | Coll::AllToAll | Coll::Scatter => count / n * n,
            _ => count,
        }
    }

    /// Whether the collective reduces (else its redop column reads `none`).
    pub fn reduces(self) -> bool {
        matches!(self, Coll::AllReduce | Coll::ReduceScatter | Coll::Reduce | Coll::LocalReduce)
    }

    /// The lazy outputs of the collective on `shards`.
    pub fn build(self, g: &DeviceGroup, shards: &[Tensor], op: ReduceOp) -> collectives::Result<Vec<Tensor>> {
        match self {
            Coll::AllReduce => g.all_reduce(shards, op),
            Coll::AllGather => g.all_gather(shards, 0),
            Coll::ReduceScatter => g.reduce_scatter(shards, op, 0),
            Coll::Broadcast => g.broadcast(&shards[g.leader_index()]),
            Coll::Reduce => g.reduce(shards, op).map(|t| vec![t]),
            Coll::AllToAll => g.all_to_all(shards, 0),
            Coll::Gather => g.gather(shards, 0).map(|t| vec![t]),
            Coll::Scatter => g.scatter(&shards[g.leader_index()], 0),
            Coll::LocalReduce => {
                let (kind, scale) = match op {
                    ReduceOp::Sum => (ReduceKind::Sum, None),
                    ReduceOp::Prod => (ReduceKind::Prod, None),
                    ReduceOp::Max => (ReduceKind::Max, None),
                    ReduceOp::Min => (ReduceKind::Min, None),
                    ReduceOp::Avg => (ReduceKind::Sum, Some(Scale::Div(shards.len() as f64))),
                    ReduceOp::PreMulSum(s) => (ReduceKind::Sum, Some(Scale::Mul(s))),
                };
                Tensor::reduce(shards, kind, scale).map(|t| vec![t])
            }
        }
    }
}

/// How [`time_runs`] times: `warmup` untimed runs, then `iters` timed ones; with `in_flight` > 0
/// each issued with up to that many in flight.
#[derive(Clone, Copy)]
pub struct Timing {
    pub warmup: usize,
    pub iters: usize,
    pub in_flight: usize,
}

/// Seconds per run: the median of the timed runs and their tenth and ninetieth percentiles, or
/// with calls in flight their mean alone.
#[derive(Clone, Copy, Debug)]
pub struct Timed {
    pub secs: f64,
    pub p10_p90: Option<(f64, f64)>,
}

/// Seconds per run ([`Timed`]) and the outputs of the last run.
pub fn time_runs(
    coll: Coll,
    g: &DeviceGroup,
    shards: &[Tensor],
    op: ReduceOp,
    timing: Timing,
    tick: &dyn Fn(),
) -> collectives::Result<(Timed, Vec<Tensor>)> {
    let build = || coll.build(g, shards, op);
    let run = || -> collectives::Result<Vec<Tensor>> {
        let outs = build()?;
        collectives::realize(&outs)?;
        Ok(outs)
    };
    for _ in 0..timing.warmup {
        run()?;
    }
    if timing.in_flight > 0 {
        return time_issued(&build, timing, tick);
    }
    let mut times = Vec::with_capacity(timing.iters);
    let mut last = vec![];
    for _ in 0..timing.iters.max(1) {
        let t0 = Instant::now();
        last = run()?;
        times.push(t0.elapsed().as_secs_f64());
        tick();
    }
    times.sort_by(f64::total_cmp);
    let at = |q: usize| times[(times.len() * q / 10).min(times.len() - 1)];
    Ok((Timed { secs: at(5), p10_p90: Some((at(1), at(9))) }, last))
}

/// Mean seconds per call of `timing.iters` calls of `build`, each built, then issued once fewer
/// than `timing.in_flight` are in flight, the last waited for; and the last call's outputs.
fn time_issued(
    build: &dyn Fn() -> collectives::Result<Vec<Tensor>>,
    timing: Timing,
    tick: &dyn Fn(),
) -> collectives::Result<(Timed, Vec<Tensor>)> {
    let mut in_flight = VecDeque::with_capacity(timing.in_flight);
    let mut last = vec![];
    let t0 = Instant::now();
    for _ in 0..timing.iters.max(1) {
        // The graph is built while the calls in flight run; then the oldest is waited for.
        last = build()?;
        if in_flight.len() == timing.in_flight {
            in_flight.pop_front().map_or(Ok(()), Issued::wait)?;
        }
        in_flight.push_back(collectives::issue(&last)?);
        tick();
    }
    in_flight.into_iter().try_for_each(Issued::wait)?;
    let secs = t0.elapsed().as_secs_f64() / timing.iters.max(1) as f64;
    Ok((Timed { secs, p10_p90: None }, last))
}

/// Elements drawn per rayon task by [`make_data`].
const DRAW_CHUNK: usize = 1 << 20;

/// Host data for every device: `data[i]` is device i's shard. Drawn in parallel, a chunk per
/// task (each thread its own generator): a 1 GiB sweep of bf16 draws half a billion values.
/// An error, not an abort, when the host cannot hold the data at all.
pub fn make_data<T: Element>(
    n: usize,
    count: usize,
    coll: Coll,
    op: ReduceOp,
) -> Result<Vec<Vec<T>>, String> {
    let mut room: Vec<T> = Vec::new();
    room.try_reserve_exact(n.saturating_mul(count)).map_err(|e| {
        format!(
            "{n} x {count} elements of {} do not fit in host memory ({e}); ask for smaller sizes",
            T::DTYPE
        )
    })?;
    drop(room);
    let prod = coll.reduces() && op == ReduceOp::Prod;
    let draw = |len: usize| random_data::<T>(len, prod, &mut rand::rng());
    let shard = || {
        let lens: Vec<usize> =
            (0..count.div_ceil(DRAW_CHUNK)).map(|c| DRAW_CHUNK.min(count - c * DRAW_CHUNK)).collect();
        let parts: Vec<Vec<T>> = lens.into_par_iter().map(draw).collect();
        parts.concat()
    };
    Ok((0..n).map(|_| shard()).collect())
}

/// How many output elements differ from the f64 reference beyond rounding.
pub fn count_wrong<T: Element>(
    coll: Coll,
    g: &DeviceGroup,
    data: &[Vec<T>],
    outs: &[Tensor],
    op: ReduceOp,
) -> collectives::Result<usize> {
    let n = data.len();
    let got: Vec<Vec<T>> = outs.iter().map(|t| t.to_vec::<T>()).collect::<Result<_, _>>()?;
    let count = data[0].len();
    let x = |i: usize, j: usize| data[i][j].to_f64();
    let reduced = |j: usize| {
        let want = fold(T::DTYPE, op, (0..n).map(|i| x(i, j)));
        let mag = if op == ReduceOp::Prod {
            want.abs()
        } else {
            (0..n).map(|i| x(i, j).abs()).sum::<f64>() * scale_of(op)
        };
        (want, tolerance(T::DTYPE, n, mag))
    };
    let bad = |v: T, (w, tol): (f64, f64)| {
        let v = v.to_f64();
        !(v == w || (v - w).abs() <= tol || (v.is_nan() && w.is_nan()))
    };
    let part = count / n.max(1);
    let root = g.leader_index();
    let mut wrong = 0;
    for (d, out) in got.iter().enumerate() {
        let check = |len: usize, want: &(dyn Fn(usize) -> (f64, f64) + Sync)| {
            (0..len.min(out.len())).into_par_iter().filter(|&k| bad(out[k], want(k))).count()
        };
        wrong += match coll {
            Coll::AllReduce | Coll::Reduce | Coll::LocalReduce => check(count, &reduced),
            Coll::Broadcast => check(count, &|j| (x(root, j), 0.0)),
            Coll::AllGather | Coll::Gather => check(n * count, &|k| (x(k / count, k % count), 0.0)),
            Coll::ReduceScatter => check(part, &|j| reduced(d * part + j)),
            Coll::AllToAll => check(count, &|k| (x(k / part, d * part + k % part), 0.0)),
            Coll::Scatter => check(part, &|j| (x(root, d * part + j), 0.0)),
        };
        let expect_len = match coll {
            Coll::AllGather | Coll::Gather => n * count,
            Coll::ReduceScatter | Coll::Scatter => part,
            _ => count,
        };
        wrong += expect_len.abs_diff(out.len());
    }
    Ok(wrong)
}

fn scale_of(op: ReduceOp) -> f64 {
    match op {
        ReduceOp::PreMulSum(s) => s.abs().max(1.0),
        _ => 1.0,
    }
}
