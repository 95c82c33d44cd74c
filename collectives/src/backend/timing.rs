//! Timing for the GPU machine's probes (ignored tests in `cuda/probe.rs` and `vulkan/probe.rs`):
//! the same work timed one call at a time, its median and tenth percentile printed per row.

use std::time::Instant;

/// Median and tenth percentile (µs) of `iters` timed runs of `f` (a multiple of [`ROUNDS`]), one
/// at a time, after `iters / 20` untimed ones: [`in_turn`] of one row.
pub(crate) fn time(iters: usize, mut f: impl FnMut()) -> (f64, f64) {
    in_turn(iters, &mut [&mut f])[0]
}

/// Rounds of [`in_turn`]: each row's calls are spread over this many, so a drift of the machine
/// over the probe falls on every row alike.
const ROUNDS: usize = 20;

/// Median and tenth percentile (µs) of each of `rows`, timed in turn: [`ROUNDS`] rounds, each
/// timing every row `iters / ROUNDS` times one call at a time (starting one row later each round),
/// after `iters / 20` untimed calls of each. Rows timed one after another ([`time`]) can differ by
/// the machine's drift between them: the same kernel and its wait read 0.77 µs apart in two
/// consecutive rows (`bench/gpu/66-pair-and-trims`, run a).
pub(crate) fn in_turn(iters: usize, rows: &mut [&mut dyn FnMut()]) -> Vec<(f64, f64)> {
    for f in rows.iter_mut() {
        (0..iters / 20).for_each(|_| f());
    }
    let each = (iters / ROUNDS).max(1);
    let mut t = vec![Vec::with_capacity(each * ROUNDS); rows.len()];
    for round in 0..ROUNDS {
        for k in 0..rows.len() {
            let i = (round + k) % rows.len();
            for _ in 0..each {
                let s = Instant::now();
                rows[i]();
                t[i].push(s.elapsed().as_secs_f64() * 1e6);
            }
        }
    }
    t.into_iter().map(median_p10).collect()
}

/// The median and tenth percentile of `t` (not empty).
fn median_p10(mut t: Vec<f64>) -> (f64, f64) {
    t.sort_by(f64::total_cmp);
    (t[t.len() / 2], t[t.len() / 10])
}

/// Prints one probe row: `probe: <median> us median, <p10> p10  <what>`.
pub(crate) fn row(what: &str, (med, p10): (f64, f64)) {
    println!("probe: {med:7.2} us median, {p10:7.2} p10  {what}");
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// Every row is called its untimed calls, then `iters` timed ones spread over the rounds, each
    /// round starting one row later; one result per row, in the rows' order.
    #[test]
    fn rows_are_timed_in_turn_each_round_starting_one_later() {
        let calls = RefCell::new(Vec::new());
        let (mut a, mut b, mut c) =
            (|| calls.borrow_mut().push(0), || calls.borrow_mut().push(1), || calls.borrow_mut().push(2));
        let iters = 100;
        let got = in_turn(iters, &mut [&mut a, &mut b, &mut c]);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|&(med, p10)| p10 <= med && med >= 0.0));
        let calls = calls.into_inner();
        let warm = iters / 20;
        let mut one = 0;
        let (med, p10) = time(iters, || one += 1);
        assert!(p10 <= med && med >= 0.0);
        assert_eq!(one, warm + iters, "time: the untimed calls, then iters timed");
        assert_eq!(calls.len(), 3 * (warm + iters));
        assert_eq!(calls[..3 * warm], [vec![0; warm], vec![1; warm], vec![2; warm]].concat());
        let each = iters / ROUNDS;
        for (round, got) in calls[3 * warm..].chunks(3 * each).enumerate() {
            let want: Vec<usize> = (0..3).flat_map(|k| std::iter::repeat_n((round + k) % 3, each)).collect();
            assert_eq!(got, want, "round {round}");
        }
    }
}
