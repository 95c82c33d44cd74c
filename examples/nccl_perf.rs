//! All-reduce bus bandwidth of `NcclComm`, one process per GPU, in nccl-tests' columns.
//!
//! Each rank all-reduces (sum) a buffer of every size and dtype asked for: warm-up calls, then
//! timed ones, each timed from the call to the end of the host wait on its result (`realize`);
//! the median is reported. busbw = 2(n-1)/n · bytes / time, as nccl-tests and `anchors.py`
//! compute it. The data are small random integers (exact in f32 and bf16 and in their sums), so
//! every element of the last result is checked exactly (`#wrong`). Rank 0 prints the table and
//! writes the JSON.
//!
//! ```sh
//! cargo build --release -p collectives-examples --example nccl_perf
//! target/release/examples/nccl_perf --ranks 2 --sizes 1M,16M,256M,1G --json nccl_perf.json
//! # or one process per GPU from a launcher: torchrun --nproc-per-node 2 --no-python nccl_perf
//! ```
//!
//! Without a launcher's rank variables in its environment the program launches `--ranks` copies
//! of itself on loopback (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR=127.0.0.1`, a free
//! `MASTER_PORT`) and exits with the first failure among them.

use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use clap::Parser;
use collectives::comm::Launch;
use collectives::{Communicator, DType, NcclComm, ReduceOp, Tensor};
use half::bf16;
use serde::Serialize;

/// Command line.
#[derive(Parser, Debug, Clone)]
#[command(about = "All-reduce bus bandwidth of NcclComm, one process per GPU")]
struct Args {
    /// Processes to launch when no launcher set RANK (one per GPU).
    #[arg(long, default_value_t = 2)]
    ranks: usize,
    /// Bytes per rank, comma-separated, with K, M or G suffixes.
    #[arg(long, default_value = "1M,4M,16M,64M,256M,1G")]
    sizes: String,
    /// Element types: f32, bf16.
    #[arg(long, default_value = "f32,bf16")]
    dtypes: String,
    /// Untimed calls before the timed ones.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// Timed calls per size (the median is reported).
    #[arg(long, default_value_t = 20)]
    iters: usize,
    /// How long a call may wait for the other ranks, in seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
    /// Where rank 0 writes the results as JSON.
    #[arg(long)]
    json: Option<String>,
    /// Seed of the data.
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

/// One size and dtype's figures.
#[derive(Serialize, Debug)]
struct Row {
    bytes: usize,
    count: usize,
    dtype: String,
    redop: &'static str,
    time_us: f64,
    min_us: f64,
    algbw_gbps: f64,
    busbw_gbps: f64,
    wrong: usize,
}

/// The JSON rank 0 writes.
#[derive(Serialize)]
struct Report<'a> {
    tool: &'static str,
    nccl_version: u32,
    world_size: usize,
    warmup: usize,
    iters: usize,
    timing: &'static str,
    rows: &'a [Row],
}

fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&s[..s.len() - 1], 1 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().map(|n| n * mult).map_err(|_| format!("{s:?} is not a size"))
}

fn parse_dtype(s: &str) -> Result<DType, String> {
    match s.trim() {
        "f32" => Ok(DType::F32),
        "bf16" => Ok(DType::BF16),
        other => Err(format!("{other:?}: this tool measures f32 and bf16")),
    }
}

/// Rank `rank`'s element `i`: a small integer in [-8, 8] from a hash of the seed, rank and index.
fn value(seed: u64, rank: usize, i: usize) -> f32 {
    let mut x = seed ^ ((rank as u64) << 40) ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 29;
    (x % 17) as f32 - 8.0
}

/// This rank's input of `count` elements of `dtype` on its device.
fn input(comm: &NcclComm, dtype: DType, count: usize, seed: u64) -> collectives::Result<Tensor> {
    let vals = (0..count).map(|i| value(seed, comm.rank(), i));
    let dev = comm.device();
    match dtype {
        DType::BF16 => Tensor::from_vec(vals.map(bf16::from_f32).collect::<Vec<_>>(), [count], dev),
        _ => Tensor::from_vec(vals.collect::<Vec<_>>(), [count], dev),
    }
}

/// How many elements of `got` differ from the sum over every rank's input.
fn wrong(got: &Tensor, world: usize, seed: u64) -> collectives::Result<usize> {
    let got: Vec<f32> = match got.dtype() {
        DType::BF16 => got.to_vec::<bf16>()?.into_iter().map(f32::from).collect(),
        _ => got.to_vec::<f32>()?,
    };
    let want = |i: usize| (0..world).map(|r| value(seed, r, i)).sum::<f32>();
    Ok(got.iter().enumerate().filter(|&(i, &g)| g != want(i)).count())
}

/// Times the all_reduce of `count` elements of `dtype`.
fn measure(comm: &NcclComm, a: &Args, dtype: DType, count: usize) -> collectives::Result<Row> {
    let x = input(comm, dtype, count, a.seed)?;
    x.realize()?;
    comm.barrier()?;
    for _ in 0..a.warmup {
        comm.all_reduce(&x, ReduceOp::Sum)?.realize()?;
    }
    let mut times = Vec::with_capacity(a.iters);
    for _ in 0..a.iters {
        let start = Instant::now();
        let y = comm.all_reduce(&x, ReduceOp::Sum)?;
        y.realize()?;
        times.push(start.elapsed());
    }
    let last = comm.all_reduce(&x, ReduceOp::Sum)?;
    let wrong = wrong(&last, comm.world_size(), a.seed)?;
    times.sort();
    let (median, min) = (times[times.len() / 2].as_secs_f64(), times[0].as_secs_f64());
    let (bytes, n) = (count * dtype.size(), comm.world_size() as f64);
    let algbw = bytes as f64 / median / 1e9;
    Ok(Row {
        bytes,
        count,
        dtype: dtype.to_string(),
        redop: "sum",
        time_us: median * 1e6,
        min_us: min * 1e6,
        algbw_gbps: algbw,
        busbw_gbps: algbw * 2.0 * (n - 1.0) / n,
        wrong,
    })
}

fn print_row(r: &Row) {
    println!(
        "{:>12} {:>11} {:>6} {:>6} {:>10.1} {:>10.1} {:>8.2} {:>8.2} {:>7}",
        r.bytes, r.count, r.dtype, r.redop, r.time_us, r.min_us, r.algbw_gbps, r.busbw_gbps, r.wrong
    );
}

/// This process as one rank: measures every dtype and size; rank 0 reports.
fn run_rank(a: &Args, launch: &Launch) -> Result<(), String> {
    let sizes = a.sizes.split(',').map(parse_size).collect::<Result<Vec<_>, _>>()?;
    let dtypes = a.dtypes.split(',').map(parse_dtype).collect::<Result<Vec<_>, _>>()?;
    if a.iters == 0 {
        return Err("--iters must be at least 1".into());
    }
    let comm = NcclComm::new(launch, Duration::from_secs(a.timeout)).map_err(|e| e.to_string())?;
    let lead = comm.rank() == 0;
    if lead {
        println!(
            "# NcclComm all_reduce, {} ranks, median of {} after {} warm-up",
            comm.world_size(),
            a.iters,
            a.warmup
        );
        println!(
            "# {:>10} {:>11} {:>6} {:>6} {:>10} {:>10} {:>8} {:>8} {:>7}",
            "size(B)", "count", "type", "redop", "time(us)", "min(us)", "algbw", "busbw", "#wrong"
        );
    }
    let mut rows = Vec::new();
    for &dtype in &dtypes {
        for &bytes in &sizes {
            let row = measure(&comm, a, dtype, bytes / dtype.size())
                .map_err(|e| format!("rank {}: {e}", comm.rank()))?;
            if lead {
                print_row(&row);
            }
            rows.push(row);
        }
    }
    comm.barrier().map_err(|e| e.to_string())?;
    if lead {
        report(a, &comm, &rows)?;
    }
    match rows.iter().map(|r| r.wrong).sum::<usize>() {
        0 => Ok(()),
        bad => Err(format!("rank {}: {bad} wrong elements", comm.rank())),
    }
}

/// Prints the JSON and writes it where `--json` says.
fn report(a: &Args, comm: &NcclComm, rows: &[Row]) -> Result<(), String> {
    let timing = "median over iters of (all_reduce call + realize), after warmup";
    let nccl_version = comm.nccl_version().map_err(|e| e.to_string())?;
    let world_size = comm.world_size();
    let r = Report {
        tool: "nccl_perf",
        nccl_version,
        world_size,
        warmup: a.warmup,
        iters: a.iters,
        timing,
        rows,
    };
    let json = serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?;
    println!("{json}");
    if let Some(path) = &a.json {
        std::fs::write(path, &json).map_err(|e| format!("writing {path}: {e}"))?;
    }
    Ok(())
}

/// Launches `--ranks` copies of this program on loopback and waits for them.
fn launch_local(a: &Args) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut children = Vec::new();
    for rank in 0..a.ranks {
        let child = Command::new(&exe)
            .args(&args)
            .env("RANK", rank.to_string())
            .env("WORLD_SIZE", a.ranks.to_string())
            .env("LOCAL_RANK", rank.to_string())
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", port.to_string())
            .spawn()
            .map_err(|e| format!("launching rank {rank}: {e}"))?;
        children.push(child);
    }
    let mut failed = None;
    for (rank, mut c) in children.into_iter().enumerate() {
        let status = c.wait().map_err(|e| e.to_string())?;
        if !status.success() && failed.is_none() {
            failed = Some(format!("rank {rank} exited with {status}"));
        }
    }
    failed.map_or(Ok(()), Err)
}

fn main() -> ExitCode {
    let a = Args::parse();
    let has_rank = collectives::comm::Launcher::ALL.iter().any(|l| std::env::var(l.variables()[0]).is_ok());
    let run = if has_rank {
        Launch::from_env().map_err(|e| e.to_string()).and_then(|l| run_rank(&a, &l))
    } else {
        launch_local(&a)
    };
    match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
