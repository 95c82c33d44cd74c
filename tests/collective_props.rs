//! Property tests: random groups of 1 to 8 virtual CPU devices (distinct ordinals below 16 in any
//! order, so the leader is not always `Cpu(0)`), random shapes (rank 1 to 3, dims
//! 0 to 9), dims, dtypes, ops and algorithms, every collective against its f64 reference. The
//! data seed is part of each case, so a failing case prints everything needed to replay it.

use collectives::{Algorithm, DType, Device, DeviceGroup, ReduceOp};
use collectives_tests::collective::{
    ALGORITHMS, DTYPES, Shards, all_ops, check_exact, check_reduced, range_for, ref_concat, ref_narrow,
    with_dim,
};
use collectives_tests::{Range, random, rng, tensor};
use proptest::prelude::*;
use proptest::test_runner::Config;
use rand::Rng;
use rand::rngs::StdRng;

/// One random case.
#[derive(Clone, Debug)]
struct Case {
    n: usize,
    devices: Vec<Device>,
    shape: Vec<usize>,
    dim: usize,
    dtype: DType,
    op: usize,
    algo: Algorithm,
    seed: u64,
}

impl Case {
    fn group(&self) -> DeviceGroup {
        let g = DeviceGroup::new(self.devices.clone()).expect("distinct devices");
        g.using(self.algo)
    }

    fn rng(&self) -> StdRng {
        rng(self.seed)
    }

    /// The op, its `PreMulSum` scalar drawn from the seed.
    fn op(&self, r: &mut StdRng) -> ReduceOp {
        all_ops(self.dtype, r)[self.op]
    }

    /// The shape with `dim` a multiple of the group size (at most 3 parts each).
    fn even_shape(&self) -> Vec<usize> {
        with_dim(&self.shape, self.dim, self.n * (self.shape[self.dim] % 4))
    }
}

fn cases() -> impl Strategy<Value = Case> {
    let ordinals: Vec<u32> = (0..16).collect();
    let devices = (1usize..=8).prop_flat_map(move |n| {
        prop::sample::subsequence(ordinals.clone(), n)
            .prop_shuffle()
            .prop_map(|v| v.into_iter().map(Device::Cpu).collect::<Vec<_>>())
    });
    let shape = prop::collection::vec(0usize..=9, 1..=3);
    (
        devices,
        shape,
        any::<prop::sample::Index>(),
        prop::sample::select(DTYPES.to_vec()),
        0usize..6,
        prop::sample::select(ALGORITHMS.to_vec()),
        any::<u64>(),
    )
        .prop_map(|(devices, shape, dim, dtype, op, algo, seed)| Case {
            n: devices.len(),
            devices,
            dim: dim.index(shape.len()),
            shape,
            dtype,
            op,
            algo,
            seed,
        })
}

fn config() -> Config {
    Config { cases: 64, failure_persistence: None, ..Config::default() }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn all_reduce_matches_the_reference(c in cases()) {
        let (g, mut r) = (c.group(), c.rng());
        let op = c.op(&mut r);
        let s = Shards::even(c.dtype, &c.shape, g.devices(), range_for(op), &mut r);
        let got = g.all_reduce(&s.tensors, op).unwrap();
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
        let got = g.reduce(&s.tensors, op).unwrap();
        check_reduced(&got, g.leader(), op, &s.slices(), &format!("{c:?} {op} k={k} leader {leader}"));
    }

    #[test]
    fn reduce_scatter_matches_the_reference(c in cases()) {
        let (g, mut r, shape) = (c.group(), c.rng(), c.even_shape());
        let op = c.op(&mut r);
        let part = shape[c.dim] / c.n;
        let s = Shards::even(c.dtype, &shape, g.devices(), range_for(op), &mut r);
        let got = g.reduce_scatter(&s.tensors, op, c.dim).unwrap();
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
