//! Kernels reading narrowed Vulkan tensors that start anywhere: such a `narrow` is a view, bound
//! from the 16-byte block at or below its start (`backend/vulkan/view.rs`), and every reader of
//! it starts at its data — the fold (binary ops, a reduce of views at every skew, in two passes),
//! the cast, the strided copy, a join on the device and on the host, the read to the host. Every
//! dtype; parents in host memory (small) and in device memory (1 MiB and up); starts at every
//! element of a block and past the middle. Results element by element against the f64
//! references, and bit for bit against the CPU backend where the op rounds; and a property test
//! over random parents, starts and lengths.

use collectives::{BinaryOp, DType, Device, ReduceKind, Scale, Tensor};
use collectives_tests::{
    Range, check_all, eps, fold_tol, random, ref_binary, ref_cast, ref_concat, ref_reduce, ref_slice, rng,
    tensor, tiny, values,
};

use proptest::prelude::*;

use super::{VK, check_op, dtypes, have_vulkan, pair, seed};

const CPU: Device = Device::Cpu(0);

/// Parent lengths of `dtype`: one in host memory, one in device memory (from 1 MiB; 2 MiB, so
/// that the strided copy of most of it, over 1 MiB too, runs as a kernel).
fn lengths(dtype: DType) -> [usize; 2] {
    [4099, (2 << 20) / dtype.size() + 5]
}

/// Starts: every element of a 16-byte block and the next one, and one past the middle.
fn starts(dtype: DType, n: usize) -> Vec<usize> {
    let mut s: Vec<usize> = (0..=16 / dtype.size()).collect();
    s.push(n / 2 + 1);
    s
}

/// One rounding in `dtype` (integers exact).
fn tol(dtype: DType, want: f64) -> f64 {
    if dtype.is_int() { 0.0 } else { eps(dtype) * want.abs() + tiny(dtype) }
}

/// The same values on `VK` and `CPU`, narrowed at `start` for `len`.
fn narrowed(pair: &(Tensor, Tensor), start: usize, len: usize) -> (Tensor, Tensor) {
    (pair.0.narrow(0, start, len).unwrap(), pair.1.narrow(0, start, len).unwrap())
}

#[test]
fn views_at_any_element_are_read_right() {
    if !have_vulkan() {
        return;
    }
    let seed = seed("views read");
    for dtype in DType::ALL {
        for n in lengths(dtype) {
            let x = random(dtype, n, Range::General, &mut rng(seed ^ n as u64 ^ (dtype as u64) << 40));
            let t = tensor(dtype, &x, [n], VK);
            t.realize().unwrap();
            for s in starts(dtype, n) {
                let len = n - s - 3;
                let v = t.narrow(0, s, len).unwrap();
                let ctx = format!("{dtype} n={n} from {s}");
                check_all(&values(&v), &x[s..s + len], |_| 0.0, &format!("read {ctx}"));
                // A strided copy out of the view: its rows from the second element, 2-D.
                let (rows, cols) = (len / 64, 64);
                let grid = v.narrow(0, 0, rows * cols).unwrap().reshape([rows, cols]).unwrap();
                let want = ref_slice(&x[s..s + rows * cols], &[rows, cols], 1, 1, cols - 3);
                check_all(
                    &values(&grid.narrow(1, 1, cols - 3).unwrap()),
                    &want,
                    |_| 0.0,
                    &format!("strided {ctx}"),
                );
                // Joins: two views on the device, and a view beside a host tensor on the host.
                let w = t.narrow(0, (s * 3 + 1) % 17, 5).unwrap();
                let parts = [(&x[s..s + len], &[len][..]), (&x[(s * 3 + 1) % 17..][..5], &[5][..])];
                let joined = Tensor::concat(&[v.clone(), w], 0).unwrap();
                check_all(&values(&joined), &ref_concat(&parts, 0), |_| 0.0, &format!("join {ctx}"));
                let host = tensor(dtype, &x[..7], [7], CPU);
                let on_host = Tensor::concat(&[host, v.copy_to_device(CPU).unwrap()], 0).unwrap();
                let parts = [(&x[..7], &[7][..]), (&x[s..s + len], &[len][..])];
                check_all(&values(&on_host), &ref_concat(&parts, 0), |_| 0.0, &format!("host join {ctx}"));
            }
        }
    }
}

#[test]
fn binary_ops_and_casts_of_views_at_any_element() {
    if !have_vulkan() {
        return;
    }
    let seed = seed("views binary");
    for dtype in dtypes() {
        let to = if dtype == DType::F32 { DType::F16 } else { DType::F32 };
        for n in lengths(dtype) {
            let mut r = rng(seed ^ n as u64 ^ (dtype as u64) << 40);
            let (a, b) = (random(dtype, n, Range::General, &mut r), random(dtype, n, Range::General, &mut r));
            let (ta, tb) = (pair(dtype, &a, &[n]), pair(dtype, &b, &[n]));
            for s in starts(dtype, n) {
                // The other operand starts elsewhere in its block.
                let (s2, len) = ((s * 5 + 3) % (16 / dtype.size() + 1), n - s.max(16) - 3);
                let ((va, ca), (vb, cb)) = (narrowed(&ta, s, len), narrowed(&tb, s2, len));
                for op in [BinaryOp::Add, BinaryOp::Max] {
                    let ctx = format!("{op:?} {dtype} n={n} from {s} and {s2}");
                    let want: Vec<f64> =
                        (0..len).map(|i| ref_binary(dtype, op, a[s + i], b[s2 + i])).collect();
                    let cpu = Some(ca.binary(op, &cb).unwrap());
                    check_op(&va.binary(op, &vb).unwrap(), cpu, &want, |i| tol(dtype, want[i]), &ctx);
                }
                let ctx = format!("cast {dtype} -> {to} n={n} from {s}");
                let want: Vec<f64> = a[s..s + len].iter().map(|&v| ref_cast(dtype, to, v)).collect();
                check_op(&va.cast(to).unwrap(), Some(ca.cast(to).unwrap()), &want, |_| 0.0, &ctx);
            }
        }
    }
}

/// Ten views of one parent, each starting at another element (every skew of a block for the
/// narrower dtypes): two passes of the fold, with a scale.
#[test]
fn a_reduce_of_views_at_every_skew() {
    if !have_vulkan() {
        return;
    }
    let seed = seed("views reduce");
    for dtype in dtypes() {
        for n in lengths(dtype) {
            let x = random(dtype, n, Range::General, &mut rng(seed ^ n as u64 ^ (dtype as u64) << 40));
            let t = pair(dtype, &x, &[n]);
            let len = n - 16;
            let (vk, cpu): (Vec<Tensor>, Vec<Tensor>) = (0..10).map(|j| narrowed(&t, j, len)).unzip();
            let inputs: Vec<&[f64]> = (0..10).map(|j| &x[j..j + len]).collect();
            let scale = Some(Scale::Div(if dtype == DType::U8 { 3.0 } else { 10.0 }));
            let want = ref_reduce(dtype, ReduceKind::Sum, scale, &inputs);
            let mag: Vec<f64> = (0..len).map(|i| inputs.iter().map(|v| v[i].abs()).sum()).collect();
            let ctx = format!("reduce of 10 views {dtype} n={n}");
            let got = Tensor::reduce(&vk, ReduceKind::Sum, scale).unwrap();
            let cpu = Tensor::reduce(&cpu, ReduceKind::Sum, scale).unwrap();
            check_op(&got, Some(cpu), &want, |i| fold_tol(dtype, 11, mag[i]) + tol(dtype, want[i]), &ctx);
        }
    }
}

/// One random case of [`views_anywhere_match_the_cpu`].
#[derive(Clone, Debug)]
struct Case {
    dtype: DType,
    n: usize,
    /// Where the two operands start, and their length.
    starts: (usize, usize),
    len: usize,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (0..DType::ALL.len(), 1usize..3000, any::<u64>()).prop_flat_map(|(d, n, seed)| {
        (0..n, 0..n).prop_flat_map(move |(a, b)| {
            let room = n - a.max(b);
            (1..=room).prop_map(move |len| Case { dtype: DType::ALL[d], n, starts: (a, b), len, seed })
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random parents, starts and lengths: the sum and the max of two views, a view cast to
    /// another dtype, and two views joined, each bit for bit the CPU backend's and (the join)
    /// the reference's.
    #[test]
    fn views_anywhere_match_the_cpu(c in case()) {
        if !have_vulkan() || !dtypes().contains(&c.dtype) {
            return Ok(());
        }
        let (dtype, n, (s1, s2), len) = (c.dtype, c.n, c.starts, c.len);
        let mut r = rng(c.seed);
        let (a, b) = (random(dtype, n, Range::General, &mut r), random(dtype, n, Range::General, &mut r));
        let ((va, ca), (vb, cb)) = (narrowed(&pair(dtype, &a, &[n]), s1, len), narrowed(&pair(dtype, &b, &[n]), s2, len));
        for op in [BinaryOp::Add, BinaryOp::Max] {
            let want: Vec<f64> = (0..len).map(|i| ref_binary(dtype, op, a[s1 + i], b[s2 + i])).collect();
            let ctx = format!("{op:?} {c:?}");
            check_op(&va.binary(op, &vb).unwrap(), Some(ca.binary(op, &cb).unwrap()), &want, |i| tol(dtype, want[i]), &ctx);
        }
        let to = if dtype == DType::F64 { DType::F32 } else { DType::F64 };
        if dtypes().contains(&to) {
            let want: Vec<f64> = a[s1..s1 + len].iter().map(|&v| ref_cast(dtype, to, v)).collect();
            check_op(&va.cast(to).unwrap(), Some(ca.cast(to).unwrap()), &want, |_| 0.0, &format!("cast {c:?}"));
        }
        let parts = [(&a[s1..s1 + len], &[len][..]), (&b[s2..s2 + len], &[len][..])];
        let joined = Tensor::concat(&[va, vb], 0).unwrap();
        check_all(&values(&joined), &ref_concat(&parts, 0), |_| 0.0, &format!("join {c:?}"));
    }
}
