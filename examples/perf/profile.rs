//! `--profile DIR`: a sampled profile of the host CPU while one row runs, written as a flame graph
//! (`<row>.svg`) and the hottest functions by own and by inclusive samples (`<row>.txt`).
//!
//! Why: a collective's fixed cost is mostly host work (graph, executor, driver calls) and waits;
//! which of them is not something a wall-clock median can say. pprof (tikv's sampling profiler)
//! samples every thread on the process's CPU-time clock, so a thread spinning in a driver wait
//! shows where it spins. Built only with the `profile` feature; without it `--profile` is an error.

use std::path::Path;

/// A running profile, or nothing when none was asked for.
pub struct Guard(#[cfg(feature = "profile")] Option<pprof::ProfilerGuard<'static>>);

/// Samples per second of CPU time asked for; the kernel's timer tick may give fewer (250 Hz is
/// common), so time a row for seconds (`--iters`) to gather thousands of samples.
#[cfg(feature = "profile")]
const HZ: i32 = 4999;
/// Functions listed in the text report, per ranking.
#[cfg(feature = "profile")]
const TOP: usize = 40;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

impl Guard {
    /// Starts sampling when `dir` is given.
    pub fn start(dir: Option<&Path>) -> Res<Guard> {
        #[cfg(feature = "profile")]
        {
            let guard = match dir {
                Some(_) => Some(pprof::ProfilerGuardBuilder::default().frequency(HZ).build()?),
                None => None,
            };
            Ok(Guard(guard))
        }
        #[cfg(not(feature = "profile"))]
        match dir {
            Some(_) => Err("--profile needs the perf tool built with `--features profile`".into()),
            None => Ok(Guard()),
        }
    }

    /// Stops sampling and writes `<dir>/<name>.svg` and `<dir>/<name>.txt`.
    pub fn finish(self, dir: Option<&Path>, name: &str) -> Res<()> {
        #[cfg(feature = "profile")]
        if let (Some(guard), Some(dir)) = (self.0, dir) {
            let report = guard.report().build()?;
            std::fs::create_dir_all(dir)?;
            report.flamegraph(std::fs::File::create(dir.join(format!("{name}.svg")))?)?;
            std::fs::write(dir.join(format!("{name}.txt")), text(&report))?;
        }
        let _ = (dir, name);
        Ok(())
    }
}

/// The hottest functions of `report`: by samples in the function itself, and by samples with the
/// function anywhere on the stack (counted once per stack).
#[cfg(feature = "profile")]
fn text(report: &pprof::Report) -> String {
    use std::collections::{HashMap, HashSet};
    let (mut own, mut incl, mut total) = (HashMap::new(), HashMap::new(), 0isize);
    for (frames, &count) in &report.data {
        total += count;
        let names: Vec<String> = frames.frames.iter().flatten().map(|s| s.name()).collect();
        if let Some(leaf) = names.first() {
            *own.entry(leaf.clone()).or_insert(0) += count;
        }
        for n in names.into_iter().collect::<HashSet<_>>() {
            *incl.entry(n).or_insert(0) += count;
        }
    }
    let mut out = format!("{total} samples of CPU time (asked for {HZ} Hz)\n");
    for (title, map) in [("own", own), ("inclusive", incl)] {
        let mut v: Vec<(String, isize)> = map.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out += &format!("\n# by {title} samples\n");
        for (name, c) in v.into_iter().take(TOP) {
            out += &format!("{:6.2}% {c:7} {name}\n", 100.0 * c as f64 / total.max(1) as f64);
        }
    }
    out
}
