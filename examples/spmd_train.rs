//! SPMD training: one rank-wise training step, run unchanged as threads or as processes.
//!
//! The step is written once against `&dyn Communicator`: each rank holds its own batch of a
//! per-feature linear regression (`y = w * x`), computes its gradient, and the ranks train a
//! sharded optimizer (ZeRO-1 style): `reduce_scatter(Avg)` gives each rank the averaged gradient
//! of its slice of the parameters, each rank updates its slice, `all_gather` rebuilds the full
//! parameters. `broadcast` starts everyone from rank 0's parameters, `all_reduce` sums the
//! squared errors for the loss, `barrier` ends the run. Every rank checks its parameters and
//! losses against an f64 computation on the host and the program exits non-zero on a mismatch.
//!
//! As threads, one per device (`LocalComm`; four virtual CPU devices unless told otherwise):
//!
//! ```sh
//! cargo run --release -p collectives-examples --example spmd_train -- --ranks 4
//! cargo run --release -p collectives-examples --example spmd_train -- --devices cuda:0,cuda:1
//! ```
//!
//! As processes, one per GPU (`NcclComm`), bootstrapped from the launcher's environment:
//!
//! ```sh
//! cargo build --release -p collectives-examples --example spmd_train
//! B=target/release/examples/spmd_train
//! RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 $B --nccl &
//! RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 $B --nccl
//! # or: torchrun --nproc-per-node 2 --no-python $B --nccl
//! ```

use std::process::ExitCode;

use clap::Parser;
use collectives::{Communicator, Device, DeviceGroup, LocalComm, ReduceKind, ReduceOp, Scale, Tensor};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Command line.
#[derive(Parser, Debug, Clone)]
#[command(about = "One rank-wise training step, as threads (LocalComm) or processes (NcclComm)")]
struct Args {
    /// Threads over this many virtual CPU devices (ignored with --devices or --nccl).
    #[arg(long, default_value_t = 4)]
    ranks: u32,
    /// Threads over these devices, e.g. cuda:0,cuda:1 (rank i on device i).
    #[arg(long)]
    devices: Option<String>,
    /// One process per GPU through NCCL, from RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT
    /// (or mpirun's or Slurm's equivalents).
    #[arg(long)]
    nccl: bool,
    /// Parameters (a multiple of the world size; 840 divides by 1 to 8).
    #[arg(long, default_value_t = 840)]
    params: usize,
    /// Samples per rank and step.
    #[arg(long, default_value_t = 8)]
    batch: usize,
    /// Training steps.
    #[arg(long, default_value_t = 5)]
    steps: usize,
    /// Learning rate.
    #[arg(long, default_value_t = 0.1)]
    lr: f64,
    /// Seed of the data (every process must use the same).
    #[arg(long, default_value_t = 1234)]
    seed: u64,
}

/// What a rank ends with: its parameters and the loss of every step.
struct Outcome {
    params: Vec<f32>,
    losses: Vec<f64>,
}

/// The true weights (what training approaches) and rank 0's starting weights.
fn weights(a: &Args) -> (Vec<f32>, Vec<f32>) {
    let mut r = StdRng::seed_from_u64(a.seed);
    let truth = (0..a.params).map(|_| r.random_range(-2.0f32..2.0)).collect();
    let start = (0..a.params).map(|_| r.random_range(-0.5f32..0.5)).collect();
    (truth, start)
}

/// Rank `rank`'s batch at `step`: inputs x and targets y, each `batch × params`, row-major.
fn batch(a: &Args, rank: usize, step: usize) -> (Vec<f32>, Vec<f32>) {
    let (truth, _) = weights(a);
    let mut r = StdRng::seed_from_u64(a.seed ^ ((rank as u64) << 32) ^ (step as u64 + 1));
    let x: Vec<f32> = (0..a.batch * a.params).map(|_| r.random_range(-1.0f32..1.0)).collect();
    let y = x
        .iter()
        .enumerate()
        .map(|(i, &xi)| truth[i % a.params] * xi + r.random_range(-0.01f32..0.01))
        .collect();
    (x, y)
}

/// The sum over the batch (rows) of a `batch × params` tensor, scaled: `[params]`.
fn sum_rows(t: &Tensor, batch: usize, scale: f64) -> collectives::Result<Tensor> {
    let rows = (0..batch).map(|b| t.narrow(0, b, 1)).collect::<collectives::Result<Vec<_>>>()?;
    Tensor::reduce(&rows, ReduceKind::Sum, Some(Scale::Mul(scale)))?.flatten()
}

/// The training run of one rank: the code is the same for every communicator.
fn train(comm: &dyn Communicator, a: &Args) -> collectives::Result<Outcome> {
    let (rank, n, dev) = (comm.rank(), comm.world_size(), comm.device());
    let (p, b) = (a.params, a.batch);
    let (_, start) = weights(a);
    let mine = if rank == 0 { start } else { vec![0.0; p] };
    let mut w = comm.broadcast(&Tensor::from_vec(mine, [p], dev)?, 0)?;
    let mut losses = Vec::new();
    for step in 0..a.steps {
        let (x, y) = batch(a, rank, step);
        let (x, y) = (Tensor::from_vec(x, [b, p], dev)?, Tensor::from_vec(y, [b, p], dev)?);
        let tiled = Tensor::concat(&vec![w.reshape([1, p])?; b], 0)?;
        let err = x.mul(&tiled)?.sub(&y)?;
        let grad = sum_rows(&err.mul(&x)?, b, 2.0 / b as f64)?; // d(mean sq. error)/dw, this rank
        let sq = comm.all_reduce(&sum_rows(&err.mul(&err)?, b, 1.0)?, ReduceOp::Sum)?;
        let g = comm.reduce_scatter(&grad, ReduceOp::Avg, 0)?; // my slice, averaged over ranks
        let slice = w.narrow(0, rank * p / n, p / n)?;
        let updated = slice.sub(&g.scale(Scale::Mul(a.lr))?)?;
        w = comm.all_gather(&updated, 0)?;
        collectives::realize(&[w.clone(), sq.clone()])?;
        let loss = sq.to_vec::<f32>()?.iter().map(|&v| v as f64).sum::<f64>() / (b * n * p) as f64;
        if rank == 0 {
            println!("step {step}: loss {loss:.6}");
        }
        losses.push(loss);
    }
    comm.barrier()?;
    Ok(Outcome { params: w.to_vec()?, losses })
}

/// The same training in f64 on the host, for `world` ranks.
fn reference(a: &Args, world: usize) -> Outcome {
    let (p, b) = (a.params, a.batch);
    let mut w: Vec<f64> = weights(a).1.iter().map(|&v| v as f64).collect();
    let mut losses = Vec::new();
    for step in 0..a.steps {
        let (mut grad, mut sq) = (vec![0.0; p], 0.0);
        for rank in 0..world {
            let (x, y) = batch(a, rank, step);
            for i in 0..b * p {
                let (xi, e) = (x[i] as f64, w[i % p] * x[i] as f64 - y[i] as f64);
                grad[i % p] += 2.0 / b as f64 * e * xi / world as f64;
                sq += e * e;
            }
        }
        w.iter_mut().zip(&grad).for_each(|(wi, g)| *wi -= a.lr * g);
        losses.push(sq / (b * world * p) as f64);
    }
    Outcome { params: w.iter().map(|&v| v as f32).collect(), losses }
}

/// Where `got` differs from `want` beyond f32 rounding, if anywhere.
fn compare(rank: usize, got: &Outcome, want: &Outcome) -> Result<(), String> {
    let bad = got.params.iter().zip(&want.params).position(|(g, w)| (g - w).abs() > 1e-4 * (1.0 + w.abs()));
    if let Some(i) = bad {
        return Err(format!(
            "rank {rank}: parameter {i} is {} but should be {}",
            got.params[i], want.params[i]
        ));
    }
    for (s, (g, w)) in got.losses.iter().zip(&want.losses).enumerate() {
        if (g - w).abs() > 1e-4 * (1.0 + w.abs()) {
            return Err(format!("rank {rank}: loss of step {s} is {g} but should be {w}"));
        }
    }
    Ok(())
}

/// Threads over a group: one `LocalComm` per device.
fn run_threads(a: &Args) -> Result<(), String> {
    let devices = match &a.devices {
        Some(list) => collectives::parse_devices(list).map_err(|e| e.to_string())?,
        None => (0..a.ranks).map(Device::Cpu).collect(),
    };
    let group = DeviceGroup::new(devices).map_err(|e| e.to_string())?;
    let names: Vec<String> = group.devices().iter().map(ToString::to_string).collect();
    println!("{} ranks as threads (LocalComm) over {}", group.size(), names.join(", "));
    let want = reference(a, group.size());
    std::thread::scope(|s| {
        let hs: Vec<_> = LocalComm::new(&group).into_iter().map(|c| s.spawn(move || train(&c, a))).collect();
        hs.into_iter().enumerate().try_for_each(|(rank, h)| {
            let got = h
                .join()
                .map_err(|_| format!("rank {rank} panicked"))?
                .map_err(|e| format!("rank {rank}: {e}"))?;
            compare(rank, &got, &want)
        })
    })
}

/// This process as one rank of an NCCL job.
fn run_process(a: &Args) -> Result<(), String> {
    let comm = collectives::NcclComm::from_env().map_err(|e| e.to_string())?;
    let rank = comm.rank();
    println!("rank {rank} of {} on {} (NcclComm)", comm.world_size(), comm.device());
    let got = train(&comm, a).map_err(|e| format!("rank {rank}: {e}"))?;
    compare(rank, &got, &reference(a, comm.world_size()))
}

fn main() -> ExitCode {
    let a = Args::parse();
    let run = if a.nccl { run_process(&a) } else { run_threads(&a) };
    match run {
        Ok(()) => {
            println!("ok: every rank's parameters and losses match the f64 reference");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
