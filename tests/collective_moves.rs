//! The data-moving collectives — `broadcast`, `gather`, `all_gather`, `scatter`,
//! `scatter_sizes`, `all_to_all` — for every dtype, groups of 1 to 8 virtual CPU devices and every
//! algorithm setting: uneven shards along any dim, zero-length parts, non-leader roots; exact
//! values and the device of every result checked.

use collectives::{DType, Device, DeviceGroup, Scale};
use collectives_tests::collective::{
    ALGORITHMS, DTYPES, Shards, check_exact, cpu_group, ref_concat, ref_narrow, with_dim,
};
use collectives_tests::{Range, fresh_seed, random, rng, tensor};
use rand::Rng;
use rand::rngs::StdRng;

/// One case: a group (algorithm forced), a dtype, the generator and a context.
struct Case<'a> {
    group: DeviceGroup,
    dtype: DType,
    rng: &'a mut StdRng,
    ctx: String,
}

/// Runs `f` for every group size 1..=8, dtype and algorithm, on fresh data.
fn each_case(mut f: impl FnMut(Case<'_>)) {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for n in 1..=8 {
        for dtype in DTYPES {
            for algo in ALGORITHMS {
                let ctx = format!("seed {seed}: n={n} {dtype} {algo}");
                let group = cpu_group(n).using(algo);
                f(Case { group, dtype, rng: &mut r, ctx });
            }
        }
    }
}

/// A rank-3 shape like [3, 5, 7] and a dim of it.
fn shape_and_dim(r: &mut StdRng) -> (Vec<usize>, usize) {
    let shape = vec![r.random_range(1..=4), r.random_range(1..=6), r.random_range(1..=7)];
    (shape, r.random_range(0..3))
}

/// `k` shapes equal to `shape` except along `dim`, lengths 0..=4 there (some zero).
fn uneven_shapes(shape: &[usize], dim: usize, k: usize, r: &mut StdRng) -> Vec<Vec<usize>> {
    (0..k).map(|_| with_dim(shape, dim, r.random_range(0..=4))).collect()
}

/// The reference of joining `s` (shaped `shapes`) along `dim`.
fn joined(s: &Shards, shapes: &[Vec<usize>], dim: usize) -> Vec<f64> {
    let parts: Vec<(&[f64], &[usize])> =
        s.vals.iter().map(Vec::as_slice).zip(shapes.iter().map(Vec::as_slice)).collect();
    ref_concat(&parts, dim)
}

/// A random tensor of `shape` on `device`, with its values.
fn one(dtype: DType, shape: &[usize], device: Device, r: &mut StdRng) -> (Vec<f64>, collectives::Tensor) {
    let vals = random(dtype, shape.iter().product(), Range::General, r);
    let t = tensor(dtype, &vals, shape, device);
    (vals, t)
}

#[test]
fn broadcast_from_every_member() {
    each_case(|c| {
        for root in 0..c.group.size() {
            let shape = [c.rng.random_range(1..=5), 3];
            let (vals, t) = one(c.dtype, &shape, c.group.devices()[root], c.rng);
            let ctx = format!("{} root {root}", c.ctx);
            let got = c.group.broadcast(&t).expect(&ctx);
            assert_eq!(got.len(), c.group.size(), "{ctx}");
            assert!(got[root].same_node(&t), "{ctx}: the root's entry is the input itself");
            for (t, &d) in got.iter().zip(c.group.devices()) {
                check_exact(t, d, &shape, &vals, &ctx);
            }
            // A root not yet realized: computed first, then read (in place on host groups).
            let lazy = t.scale(Scale::Mul(1.0)).expect("scale");
            assert!(!lazy.is_realized(), "{ctx}");
            for (t, &d) in c.group.broadcast(&lazy).expect(&ctx).iter().zip(c.group.devices()) {
                check_exact(t, d, &shape, &vals, &format!("{ctx}, lazy root"));
            }
        }
    });
}

#[test]
fn gather_joins_uneven_shards_on_the_leader() {
    each_case(|c| {
        let n = c.group.size();
        let (shape, dim) = shape_and_dim(c.rng);
        let k = c.rng.random_range(1..=n);
        let leader = c.group.devices()[c.rng.random_range(0..n)];
        let group = c.group.with_leader(leader).expect("member");
        let shapes = uneven_shapes(&shape, dim, k, c.rng);
        let s = Shards::of_shapes(c.dtype, &shapes, &group.devices()[..k], Range::General, c.rng);
        let ctx = format!("{} k={k} shapes {shapes:?} dim {dim} leader {leader}", c.ctx);
        let got = group.gather(&s.tensors, dim).expect(&ctx);
        let total = shapes.iter().map(|s| s[dim]).sum();
        check_exact(&got, leader, &with_dim(&shape, dim, total), &joined(&s, &shapes, dim), &ctx);
    });
}

#[test]
fn all_gather_joins_uneven_shards_everywhere() {
    each_case(|c| {
        let n = c.group.size();
        let (shape, dim) = shape_and_dim(c.rng);
        let shapes = uneven_shapes(&shape, dim, n, c.rng);
        let s = Shards::of_shapes(c.dtype, &shapes, c.group.devices(), Range::General, c.rng);
        let ctx = format!("{} shapes {shapes:?} dim {dim}", c.ctx);
        let got = c.group.all_gather(&s.tensors, dim).expect(&ctx);
        assert_eq!(got.len(), n, "{ctx}");
        collectives::realize(&got).expect(&ctx);
        let total = shapes.iter().map(|s| s[dim]).sum();
        let want = joined(&s, &shapes, dim);
        for (t, &d) in got.iter().zip(c.group.devices()) {
            check_exact(t, d, &with_dim(&shape, dim, total), &want, &ctx);
        }
    });
}

/// Shards still to compute (a cast to their own dtype, not yet run) and a non-first leader: the
/// host group's all_gather call is then a step of the general schedule, not the direct path.
#[test]
fn all_gather_of_lazy_shards_with_any_leader() {
    each_case(|c| {
        let n = c.group.size();
        let leader = Device::Cpu(c.rng.random_range(0..n as u32));
        let group = c.group.with_leader(leader).expect("member");
        let (shape, dim) = shape_and_dim(c.rng);
        let shapes = uneven_shapes(&shape, dim, n, c.rng);
        let s = Shards::of_shapes(c.dtype, &shapes, group.devices(), Range::General, c.rng);
        let lazy: Vec<_> = s.tensors.iter().map(|t| t.cast(c.dtype).expect("cast")).collect();
        let ctx = format!("{} leader {leader} shapes {shapes:?} dim {dim}", c.ctx);
        assert!(lazy.iter().all(|t| !t.is_realized()), "{ctx}");
        let got = group.all_gather(&lazy, dim).expect(&ctx);
        collectives::realize(&got).expect(&ctx);
        let total = shapes.iter().map(|s| s[dim]).sum();
        let want = joined(&s, &shapes, dim);
        for (t, &d) in got.iter().zip(group.devices()) {
            check_exact(t, d, &with_dim(&shape, dim, total), &want, &ctx);
        }
        s.assert_untouched(&ctx);
    });
}

#[test]
fn all_gather_of_even_shards() {
    each_case(|c| {
        let (shape, dim) = shape_and_dim(c.rng);
        let s = Shards::even(c.dtype, &shape, c.group.devices(), Range::General, c.rng);
        let shapes = vec![shape.clone(); c.group.size()];
        let ctx = format!("{} shape {shape:?} dim {dim}", c.ctx);
        let got = c.group.all_gather(&s.tensors, dim).expect(&ctx);
        let full = with_dim(&shape, dim, shape[dim] * c.group.size());
        let want = joined(&s, &shapes, dim);
        for (t, &d) in got.iter().zip(c.group.devices()) {
            check_exact(t, d, &full, &want, &ctx);
        }
    });
}

/// Checks that `got[i]` is on device i and holds `vals` (shaped `shape`) narrowed along `dim`
/// to the i-th run of `sizes`.
fn check_parts(
    got: &[collectives::Tensor],
    group: &DeviceGroup,
    vals: &[f64],
    shape: &[usize],
    dim: usize,
    sizes: &[usize],
    ctx: &str,
) {
    assert_eq!(got.len(), group.size(), "{ctx}");
    let mut start = 0;
    for (i, (t, &d)) in got.iter().zip(group.devices()).enumerate() {
        let want = ref_narrow(vals, shape, dim, start, sizes[i]);
        check_exact(t, d, &with_dim(shape, dim, sizes[i]), &want, &format!("{ctx} part {i}"));
        start += sizes[i];
    }
}

#[test]
fn scatter_evenly_from_any_member() {
    each_case(|c| {
        let n = c.group.size();
        let (base, dim) = shape_and_dim(c.rng);
        let part = c.rng.random_range(0..=3);
        let shape = with_dim(&base, dim, n * part);
        let root = c.rng.random_range(0..n);
        let (vals, t) = one(c.dtype, &shape, c.group.devices()[root], c.rng);
        let ctx = format!("{} shape {shape:?} dim {dim} root {root}", c.ctx);
        let got = c.group.scatter(&t, dim).expect(&ctx);
        check_parts(&got, &c.group, &vals, &shape, dim, &vec![part; n], &ctx);
        let lazy = t.scale(Scale::Mul(1.0)).expect("scale");
        let got = c.group.scatter(&lazy, dim).expect(&ctx);
        check_parts(&got, &c.group, &vals, &shape, dim, &vec![part; n], &format!("{ctx}, lazy root"));
    });
}

#[test]
fn scatter_sizes_with_uneven_and_zero_parts() {
    each_case(|c| {
        let n = c.group.size();
        let (base, dim) = shape_and_dim(c.rng);
        let sizes: Vec<usize> = (0..n).map(|_| c.rng.random_range(0..=3)).collect();
        let shape = with_dim(&base, dim, sizes.iter().sum());
        let root = c.rng.random_range(0..n);
        let (vals, t) = one(c.dtype, &shape, c.group.devices()[root], c.rng);
        let ctx = format!("{} shape {shape:?} dim {dim} sizes {sizes:?} root {root}", c.ctx);
        let got = c.group.scatter_sizes(&t, dim, &sizes).expect(&ctx);
        check_parts(&got, &c.group, &vals, &shape, dim, &sizes, &ctx);
    });
}

/// Sizes where the host all_to_all call works in parallel: members side by side (four 8 MiB
/// shards along dim 0, 32 MiB of outputs) and rows side by side (300 rows of four parts of 256
/// bytes along dim 1), in f32 and u8, every element against the reference.
#[test]
fn a_large_all_to_all_of_host_devices_moves_every_element() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let g = cpu_group(4);
    for dtype in [DType::F32, DType::U8] {
        let wide = 1024 / dtype.size();
        for (shape, dim) in [(vec![(8 << 20) / dtype.size()], 0), (vec![300, wide], 1)] {
            let ctx = format!("seed {seed}: {dtype} shape {shape:?} dim {dim}");
            let s = Shards::even(dtype, &shape, g.devices(), Range::General, &mut r);
            let got = g.all_to_all(&s.tensors, dim).expect(&ctx);
            let part = shape[dim] / 4;
            let part_shape = with_dim(&shape, dim, part);
            for (j, (t, &d)) in got.iter().zip(g.devices()).enumerate() {
                let pieces: Vec<Vec<f64>> =
                    s.vals.iter().map(|v| ref_narrow(v, &shape, dim, j * part, part)).collect();
                let parts: Vec<(&[f64], &[usize])> =
                    pieces.iter().map(|p| (p.as_slice(), part_shape.as_slice())).collect();
                check_exact(t, d, &shape, &ref_concat(&parts, dim), &format!("{ctx} device {j}"));
            }
            s.assert_untouched(&ctx);
        }
    }
}

#[test]
fn all_to_all_sends_part_j_of_every_shard_to_device_j() {
    each_case(|c| {
        let n = c.group.size();
        let (base, dim) = shape_and_dim(c.rng);
        let part = c.rng.random_range(1..=2);
        let shape = with_dim(&base, dim, n * part);
        let s = Shards::even(c.dtype, &shape, c.group.devices(), Range::General, c.rng);
        let ctx = format!("{} shape {shape:?} dim {dim}", c.ctx);
        let got = c.group.all_to_all(&s.tensors, dim).expect(&ctx);
        assert_eq!(got.len(), n, "{ctx}");
        let part_shape = with_dim(&shape, dim, part);
        for (j, (t, &d)) in got.iter().zip(c.group.devices()).enumerate() {
            let pieces: Vec<Vec<f64>> =
                s.vals.iter().map(|v| ref_narrow(v, &shape, dim, j * part, part)).collect();
            let parts: Vec<(&[f64], &[usize])> =
                pieces.iter().map(|p| (p.as_slice(), part_shape.as_slice())).collect();
            let want = ref_concat(&parts, dim);
            check_exact(t, d, &with_dim(&shape, dim, n * part), &want, &format!("{ctx} device {j}"));
        }
    });
}
