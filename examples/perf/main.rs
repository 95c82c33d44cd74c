//! perf: an nccl-tests-style bandwidth tool for the collectives.
//!
//! ```sh
//! cargo run --release -p collectives-examples --example perf -- \
//!     --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 \
//!     --sizes 1K..256M --dtype f32 --floor --json out.json --svg out.svg
//! ```
//!
//! Columns as nccl-tests prints them: `size` in bytes (all_gather: the gathered output;
//! reduce_scatter: each device's input), `count` elements per device input, time (median of
//! `--iters`), algbw = size / time, busbw = algbw × the collective's bus factor, and `#wrong`,
//! elements that differ from an f64 host reference of the same random inputs.
//!
//! `--floor` times a plain host memcpy of each size in the same run. For all_reduce over virtual
//! CPU devices (one memory system) the floor is n memcpys: every one of the n results must be
//! written and every input read, which is n memcpys' worth of memory traffic.

mod args;
mod collect;
mod output;
mod profile;

use std::time::Instant;

use clap::Parser;
use collectives::{Algorithm, DType, DeviceGroup, Element, ReduceOp, Tensor, parse_devices};
use half::{bf16, f16};
use indicatif::{ProgressBar, ProgressStyle};

use args::{Args, list};
use collect::{Coll, Timing, count_wrong, make_data, time_runs};
use output::Row;

fn main() -> std::process::ExitCode {
    match run(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let devices = parse_devices(&args.devices)?;
    let sizes = args.sizes()?;
    let redop: ReduceOp = args.redop.parse()?;
    let colls = list(&args.op).iter().map(|s| Coll::parse(s)).collect::<Result<Vec<_>, _>>()?;
    let dtypes = list(&args.dtype).iter().map(|s| s.parse()).collect::<Result<Vec<DType>, _>>()?;
    let algos = list(&args.algo).iter().map(|s| s.parse()).collect::<Result<Vec<Algorithm>, _>>()?;
    let group = DeviceGroup::new(devices)?;
    println!("# collectives perf: {} devices [{}], leader {}", group.size(), args.devices, group.leader());
    println!("# {command}");
    if args.in_flight > 0 {
        let n = args.in_flight;
        println!(
            "# each call issued (collectives::issue), up to {n} in flight: time is the loop's mean per call"
        );
    }

    let total = (colls.len() * dtypes.len() * algos.len() * sizes.len() * args.iters.max(1)) as u64;
    let bar = ProgressBar::new(total).with_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")?);
    let mut rows = vec![];
    for &coll in &colls {
        for &dtype in &dtypes {
            for &algo in &algos {
                output::header(args.floor);
                let g = group.using(algo);
                let sweep = Sweep { args: &args, group: &g, coll, redop, algo, bar: &bar };
                let got = match dtype {
                    DType::F32 => sweep.run::<f32>(&sizes),
                    DType::F64 => sweep.run::<f64>(&sizes),
                    DType::F16 => sweep.run::<f16>(&sizes),
                    DType::BF16 => sweep.run::<bf16>(&sizes),
                    DType::I32 => sweep.run::<i32>(&sizes),
                    DType::I64 => sweep.run::<i64>(&sizes),
                    _ => sweep.run::<u8>(&sizes),
                };
                match got {
                    Ok(got) => rows.extend(got),
                    Err(e) if unsupported(e.as_ref()) => {
                        println!("# skipped {} {dtype} {algo}: {e}", coll.name());
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    bar.finish_and_clear();
    output::footer(&rows);
    if let Some(p) = &args.json {
        output::write_json(p, &command, group.devices(), &rows)?;
    }
    if let Some(p) = &args.svg {
        output::write_svg(p, group.devices(), &rows)?;
    }
    let wrong: i64 = rows.iter().map(|r| r.wrong.max(0)).sum();
    if wrong > 0 {
        return Err(format!("{wrong} wrong elements").into());
    }
    Ok(())
}

/// One (collective, dtype, algorithm) over all sizes.
struct Sweep<'a> {
    args: &'a Args,
    group: &'a DeviceGroup,
    coll: Coll,
    redop: ReduceOp,
    algo: Algorithm,
    bar: &'a ProgressBar,
}

/// Whether `e` says the combination itself is not supported (a dtype the device lacks, an
/// algorithm the group cannot run, a reduction the dtype or NCCL does not take): the sweep skips
/// it, as nccl-tests skips what a build lacks, instead of ending the run.
fn unsupported(e: &(dyn std::error::Error + 'static)) -> bool {
    use collectives::Error as E;
    matches!(
        e.downcast_ref::<E>(),
        Some(
            E::Unsupported { .. }
                | E::InvalidArgument { .. }
                | E::BadReduceOp { .. }
                | E::ElementType { .. }
                | E::NonIntegerScale { .. }
                | E::ScaleOutOfRange { .. }
        )
    )
}

impl Sweep<'_> {
    fn run<T: Element>(&self, sizes: &[usize]) -> Result<Vec<Row>, Box<dyn std::error::Error>> {
        let n = self.group.size();
        let max_count =
            sizes.iter().map(|&s| self.coll.input_count(s, T::DTYPE.size(), n)).max().unwrap_or(0);
        let data = make_data::<T>(n, max_count, self.coll, self.redop)?;
        let mut rows = vec![];
        for &size in sizes {
            let count = self.coll.input_count(size, T::DTYPE.size(), n);
            let host: Vec<Vec<T>> = data.iter().map(|d| d[..count].to_vec()).collect();
            let row = self.one::<T>(size, count, &host)?;
            output::print(&row);
            rows.push(row);
        }
        Ok(rows)
    }

    fn one<T: Element>(
        &self,
        size: usize,
        count: usize,
        host: &[Vec<T>],
    ) -> Result<Row, Box<dyn std::error::Error>> {
        let (g, n) = (self.group, self.group.size());
        let home = |i: usize| if self.coll == Coll::LocalReduce { g.devices()[0] } else { g.devices()[i] };
        let shards = host
            .iter()
            .enumerate()
            .map(|(i, d)| Tensor::from_vec(d.clone(), [count], home(i)))
            .collect::<Result<Vec<_>, _>>()?;
        collectives::realize(&shards)?; // uploads are not part of the collective
        self.bar.set_message(format!("{} {} {}", self.coll.name(), T::DTYPE, output::human(size)));
        let tick = || self.bar.inc(1);
        let dir = self.args.profile.as_deref();
        let profile = profile::Guard::start(dir)?;
        let timing =
            Timing { warmup: self.args.warmup, iters: self.args.iters, in_flight: self.args.in_flight };
        let (timed, outs) = time_runs(self.coll, g, &shards, self.redop, timing, &tick)?;
        let secs = timed.secs;
        let name = format!("{}-{}-{}-{}-{size}", self.coll.name(), T::DTYPE, self.algo, n);
        profile.finish(dir, &name)?;
        let wrong =
            if self.args.no_check { -1 } else { count_wrong(self.coll, g, host, &outs, self.redop)? as i64 };
        let memcpy_us = self.args.floor.then(|| memcpy_secs(size, self.args.iters) * 1e6);
        let algbw = size as f64 / secs / 1e9;
        Ok(Row {
            op: self.coll.name().into(),
            dtype: T::DTYPE.to_string(),
            redop: if self.coll.reduces() { self.redop.to_string() } else { "none".into() },
            algo: self.algo.to_string(),
            algorithm: g.algorithm_for(self.coll.kind(), count * T::DTYPE.size()).to_string(),
            devices: n,
            in_flight: self.args.in_flight,
            size,
            count,
            time_us: secs * 1e6,
            p10_us: timed.p10_p90.map(|(p10, _)| p10 * 1e6),
            p90_us: timed.p10_p90.map(|(_, p90)| p90 * 1e6),
            algbw_gbps: algbw,
            busbw_gbps: algbw * self.coll.bus_factor(n),
            wrong,
            memcpy_us,
            floor_us: memcpy_us.filter(|_| self.coll == Coll::AllReduce).map(|m| m * n as f64),
        })
    }
}

/// Median seconds of a plain memcpy of `bytes` between two pre-touched host buffers.
fn memcpy_secs(bytes: usize, iters: usize) -> f64 {
    let src = vec![1u8; bytes];
    let mut dst = vec![2u8; bytes];
    dst.copy_from_slice(&src);
    let mut times: Vec<f64> = (0..iters.max(3))
        .map(|_| {
            let t0 = Instant::now();
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&dst);
            t0.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}
