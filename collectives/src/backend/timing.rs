//! Timing for the GPU machine's probes (ignored tests in `cuda/probe.rs` and `vulkan/probe.rs`):
//! the same work timed one call at a time, its median and tenth percentile printed per row.

use std::time::Instant;

/// Median and tenth percentile (µs) of `iters` timed runs of `f`, one at a time, after
/// `iters / 20` untimed ones.
pub(crate) fn time(iters: usize, mut f: impl FnMut()) -> (f64, f64) {
    for _ in 0..iters / 20 {
        f();
    }
    let mut t: Vec<f64> = (0..iters)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[iters / 2], t[iters / 10])
}

/// Prints one probe row: `probe: <median> us median, <p10> p10  <what>`.
pub(crate) fn row(what: &str, (med, p10): (f64, f64)) {
    println!("probe: {med:7.2} us median, {p10:7.2} p10  {what}");
}
