//! Property tests: random groups of 1 to 8 devices — virtual CPU devices (distinct ordinals below
//! 16 in any order, so the leader is not always `Cpu(0)`), with the lavapipe Vulkan device
//! `Vulkan(0)` in a random place in most groups where one works (CPU-only groups otherwise, said
//! once), and `Cuda(0)` in another place in about two of five where one is present (drawn half
//! the time, and not where the Vulkan device is; so a GPU machine runs mixed groups of a CUDA
//! device, host devices and a Vulkan device) — random shapes (rank 1 to 3, dims 0 to 9), dims,
//! dtypes, ops and algorithms (one-shot too), every collective against its f64 reference, every
//! element. The data seed is part of each case, so a failing case prints everything needed to
//! replay it.

use collectives::Tensor;
use collectives_tests::collective::{
    Shards, check_exact, check_reduced, range_for, ref_concat, ref_narrow, with_dim,
};
use collectives_tests::props::{CU, VK, cases, have_cuda, have_vulkan, ok};
use collectives_tests::{Range, random, tensor};
use proptest::prelude::*;
use proptest::test_runner::Config;
use rand::Rng;

/// `ts`, realized.
fn realized(ts: Vec<Tensor>) -> collectives::Result<Vec<Tensor>> {
    collectives::realize(&ts)?;
    Ok(ts)
}

/// Cases per property: 6 x 1024 run in about 10 s on a 2-core machine with lavapipe.
fn config() -> Config {
    Config { cases: 1024, failure_persistence: None, ..Config::default() }
}

#[test]
fn most_groups_hold_the_vulkan_device_where_one_works() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = cases();
    let (mut with, mut with_cu, total) = (0, 0, 1000);
    for _ in 0..total {
        let c = strategy.new_tree(&mut runner).expect("a case").current();
        assert!((1..=8).contains(&c.n) && c.devices.len() == c.n, "{c:?}");
        with += usize::from(c.devices.contains(&VK));
        with_cu += usize::from(c.devices.contains(&CU));
    }
    println!("{with} of {total} sampled groups hold {VK}, {with_cu} hold {CU}");
    if have_cuda() {
        assert!(with_cu > total / 4 && with_cu < total * 3 / 4, "{with_cu} of {total}");
    } else {
        assert_eq!(with_cu, 0);
    }
    if have_vulkan() {
        assert!(with > total / 2 && with < total, "{with} of {total}");
    } else {
        assert_eq!(with, 0);
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn all_reduce_matches_the_reference(c in cases()) {
        let (g, mut r) = (c.group(), c.rng());
        let op = c.op(&mut r);
        let s = Shards::even(c.dtype, &c.shape, g.devices(), range_for(op), &mut r);
        let Some(got) = ok(&c, g.all_reduce(&s.tensors, op).and_then(realized)) else { return Ok(()) };
        for (t, &d) in got.iter().zip(g.devices()) {
            prop_assert_eq!(t.shape().dims(), c.shape.as_slice());
            check_reduced(t, d, op, &s.slices(), &format!("{c:?} {op}"));
        }
    }

    #[test]
    fn reduce_matches_the_reference(c in cases()) {
        let mut r = c.rng();
        let op = c.op(&mut r);
        let (k, leader) = (r.random_range(1..=c.n), r.random_range(0..c.n));
        let g = c.group().with_leader(c.group().devices()[leader]).unwrap();
        let s = Shards::even(c.dtype, &c.shape, &g.devices()[..k], range_for(op), &mut r);
        let Some(got) = ok(&c, g.reduce(&s.tensors, op).and_then(|t| t.realize().map(|()| t))) else { return Ok(()) };
        check_reduced(&got, g.leader(), op, &s.slices(), &format!("{c:?} {op} k={k} leader {leader}"));
    }

    #[test]
    fn reduce_scatter_matches_the_reference(c in cases()) {
        let (g, mut r, shape) = (c.group(), c.rng(), c.even_shape());
        let op = c.op(&mut r);
        let part = shape[c.dim] / c.n;
        let s = Shards::even(c.dtype, &shape, g.devices(), range_for(op), &mut r);
        let Some(got) = ok(&c, g.reduce_scatter(&s.tensors, op, c.dim).and_then(realized)) else { return Ok(()) };
        for (i, (t, &d)) in got.iter().zip(g.devices()).enumerate() {
            let parts: Vec<Vec<f64>> = s.vals.iter().map(|v| ref_narrow(v, &shape, c.dim, i * part, part)).collect();
            let inputs: Vec<&[f64]> = parts.iter().map(Vec::as_slice).collect();
            let part_shape = with_dim(&shape, c.dim, part);
            prop_assert_eq!(t.shape().dims(), part_shape.as_slice());
            check_reduced(t, d, op, &inputs, &format!("{c:?} {op} part {i}"));
        }
    }

    #[test]
    fn gathers_match_the_reference(c in cases()) {
        let (g, mut r) = (c.group(), c.rng());
        let shapes: Vec<Vec<usize>> = (0..c.n).map(|_| with_dim(&c.shape, c.dim, r.random_range(0..=9))).collect();
        let s = Shards::of_shapes(c.dtype, &shapes, g.devices(), Range::General, &mut r);
        let parts: Vec<(&[f64], &[usize])> = s.vals.iter().map(Vec::as_slice).zip(shapes.iter().map(Vec::as_slice)).collect();
        let full = with_dim(&c.shape, c.dim, shapes.iter().map(|s| s[c.dim]).sum());
        let want = ref_concat(&parts, c.dim);
        let ctx = format!("{c:?} shapes {shapes:?}");
        check_exact(&g.gather(&s.tensors, c.dim).unwrap(), g.leader(), &full, &want, &ctx);
        for (t, &d) in g.all_gather(&s.tensors, c.dim).unwrap().iter().zip(g.devices()) {
            check_exact(t, d, &full, &want, &ctx);
        }
    }

    #[test]
    fn broadcast_and_scatters_match_the_reference(c in cases()) {
        let (g, mut r) = (c.group(), c.rng());
        let root = g.devices()[r.random_range(0..c.n)];
        let sizes: Vec<usize> = (0..c.n).map(|_| r.random_range(0..=4)).collect();
        let shape = with_dim(&c.shape, c.dim, sizes.iter().sum());
        let vals = random(c.dtype, shape.iter().product(), Range::General, &mut r);
        let t = tensor(c.dtype, &vals, shape.as_slice(), root);
        let ctx = format!("{c:?} root {root} sizes {sizes:?}");
        for (b, &d) in g.broadcast(&t).unwrap().iter().zip(g.devices()) {
            check_exact(b, d, &shape, &vals, &ctx);
        }
        let mut start = 0;
        for (i, (p, &d)) in g.scatter_sizes(&t, c.dim, &sizes).unwrap().iter().zip(g.devices()).enumerate() {
            let want = ref_narrow(&vals, &shape, c.dim, start, sizes[i]);
            check_exact(p, d, &with_dim(&shape, c.dim, sizes[i]), &want, &ctx);
            start += sizes[i];
        }
    }

    #[test]
    fn scatter_and_all_to_all_match_the_reference(c in cases()) {
        let (g, mut r, shape) = (c.group(), c.rng(), c.even_shape());
        let part = shape[c.dim] / c.n;
        let s = Shards::even(c.dtype, &shape, g.devices(), Range::General, &mut r);
        let root = r.random_range(0..c.n);
        let part_shape = with_dim(&shape, c.dim, part);
        let ctx = format!("{c:?} root {root}");
        let parts = g.scatter(&s.tensors[root], c.dim).unwrap();
        let swapped = g.all_to_all(&s.tensors, c.dim).unwrap();
        for (j, &d) in g.devices().iter().enumerate() {
            let want = ref_narrow(&s.vals[root], &shape, c.dim, j * part, part);
            check_exact(&parts[j], d, &part_shape, &want, &ctx);
            let pieces: Vec<Vec<f64>> = s.vals.iter().map(|v| ref_narrow(v, &shape, c.dim, j * part, part)).collect();
            let joined: Vec<(&[f64], &[usize])> = pieces.iter().map(|p| (p.as_slice(), part_shape.as_slice())).collect();
            check_exact(&swapped[j], d, &shape, &ref_concat(&joined, c.dim), &ctx);
        }
    }
}
