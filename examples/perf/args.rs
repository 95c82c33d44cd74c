//! Command-line arguments of the perf tool.

use std::path::PathBuf;

use clap::Parser;

/// nccl-tests-style bandwidth sweep of the collectives.
#[derive(Parser, Debug, Clone)]
#[command(name = "perf", about = "Bandwidth of collectives over a device group (nccl-tests columns)")]
pub struct Args {
    /// Collectives to run, comma separated: all_reduce, all_gather, reduce_scatter, broadcast,
    /// reduce, all_to_all, gather, scatter; or local_reduce (the n-ary reduce kernel of the first device over n
    /// shards living there; busbw is then its memory bandwidth, bytes read + written).
    #[arg(long, default_value = "all_reduce")]
    pub op: String,
    /// Devices, comma separated (first is the leader), e.g. cpu:0,cpu:1 or cuda:0,cuda:1.
    #[arg(long, default_value = "cpu:0,cpu:1,cpu:2,cpu:3")]
    pub devices: String,
    /// Sizes in bytes (nccl-tests' size column): a list `1M,16M` or a range `1K..1G` (doubling;
    /// `1K..1G:4` multiplies by 4).
    #[arg(long, default_value = "1K..64M")]
    pub sizes: String,
    /// Smallest size in bytes (nccl-tests' -b); with -e and -f it replaces `--sizes`.
    #[arg(short = 'b', long = "minbytes")]
    pub min_bytes: Option<String>,
    /// Largest size in bytes (nccl-tests' -e).
    #[arg(short = 'e', long = "maxbytes")]
    pub max_bytes: Option<String>,
    /// Multiplication factor between sizes (nccl-tests' -f; default 2).
    #[arg(short = 'f', long = "stepfactor")]
    pub step_factor: Option<usize>,
    /// Element types, comma separated: f32, f64, f16, bf16, i32, i64, u8 (nccl-tests' -d).
    #[arg(short = 'd', long, default_value = "f32")]
    pub dtype: String,
    /// Reduction: sum, prod, max, min, avg, premulsum[:scalar].
    #[arg(long, default_value = "sum")]
    pub redop: String,
    /// Algorithms, comma separated: auto, star, ring, nccl, oneshot, twoshot.
    #[arg(long, default_value = "auto")]
    pub algo: String,
    /// Timed iterations per size (the median is reported; nccl-tests' -n).
    #[arg(short = 'n', long, default_value_t = 20)]
    pub iters: usize,
    /// Untimed iterations before timing (nccl-tests' -w).
    #[arg(short = 'w', long, default_value_t = 5)]
    pub warmup: usize,
    /// Issue each call without waiting for it (`collectives::issue`), with up to this many calls
    /// in flight (each call's graph built while they run, then the oldest waited for if this many
    /// are), as a loop that reads its results later runs; the time is then the whole timed
    /// loop's, its last wait included, per call (nccl-tests' way), not a median. 0: each call
    /// realized and waited for.
    #[arg(long, default_value_t = 0)]
    pub in_flight: usize,
    /// Also time a plain host memcpy of each size and report the all_reduce floor beside it.
    #[arg(long)]
    pub floor: bool,
    /// Skip the correctness check (#wrong is then -1).
    #[arg(long)]
    pub no_check: bool,
    /// Write every row as JSON here (with the timed calls' tenth and ninetieth percentiles,
    /// `p10_us` and `p90_us`, where they are timed one at a time).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Draw bus bandwidth against size as an SVG here.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Sample the host CPU during each row's runs (pprof, 4999 Hz) and write, into this folder,
    /// a flame graph and a list of the hottest functions per row. Needs the `profile` feature
    /// (`--features profile`); keep the binary's symbols (do not strip it).
    #[arg(long)]
    pub profile: Option<PathBuf>,
}

/// Parses `4K`, `16M`, `1G` or a plain number of bytes.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&s[..s.len() - 1], 1usize << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let n = num.parse::<usize>().map_err(|_| format!("bad size {s:?}"))?;
    n.checked_mul(mult).ok_or_else(|| format!("size {s:?} does not fit in a usize"))
}

/// Parses the `--sizes` argument.
pub fn parse_sizes(s: &str) -> Result<Vec<usize>, String> {
    if let Some((lo, rest)) = s.split_once("..") {
        let (hi, factor) = match rest.split_once(':') {
            Some((hi, f)) => (hi, f.parse::<usize>().map_err(|_| format!("bad factor {f:?}"))?),
            None => (rest, 2),
        };
        let (mut at, hi) = (parse_size(lo)?, parse_size(hi)?);
        if factor < 2 || at == 0 {
            return Err("a range needs a start above 0 and a factor of at least 2".into());
        }
        let mut out = vec![];
        while at <= hi {
            out.push(at);
            match at.checked_mul(factor) {
                Some(next) => at = next,
                None => break,
            }
        }
        return Ok(out);
    }
    s.split(',').map(parse_size).collect()
}

impl Args {
    /// The sizes to run: `-b`..`-e` by `-f` where any of them is given, else `--sizes`.
    pub fn sizes(&self) -> Result<Vec<usize>, String> {
        if self.min_bytes.is_none() && self.max_bytes.is_none() && self.step_factor.is_none() {
            return parse_sizes(&self.sizes);
        }
        let lo = self.min_bytes.as_deref().unwrap_or("1K");
        let hi = self.max_bytes.as_deref().unwrap_or(lo);
        parse_sizes(&format!("{lo}..{hi}:{}", self.step_factor.unwrap_or(2)))
    }
}

/// Splits a comma-separated list.
pub fn list(s: &str) -> Vec<String> {
    s.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect()
}
