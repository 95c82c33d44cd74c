//! Coalesced collectives (gradient buckets): many tensors of mixed shapes and two dtypes per
//! device, moved as one flat buffer per dtype; results equal to the per-tensor collectives and to
//! the f64 reference, on the documented devices; bucket mismatches are typed errors.

use collectives::{Algorithm, CollectiveKind, DType, Device, DeviceGroup, Error, Plan, ReduceOp, Tensor};
use collectives_tests::collective::{ALGORITHMS, all_ops, check_exact, check_reduced, cpu_group, range_for};
use collectives_tests::{Range, fresh_seed, random, rng, tensor, values};
use rand::Rng;
use rand::rngs::StdRng;

/// Buckets: `vals[i][j]` and `tensors[i][j]` are device i's tensor at position j.
struct Buckets {
    shapes: Vec<Vec<usize>>,
    vals: Vec<Vec<Vec<f64>>>,
    tensors: Vec<Vec<Tensor>>,
}

impl Buckets {
    /// `positions` tensors of random shapes (some empty) alternating between `dtypes`, on each of
    /// `devices`.
    fn new(dtypes: [DType; 2], positions: usize, devices: &[Device], range: Range, r: &mut StdRng) -> Self {
        let shapes: Vec<Vec<usize>> = (0..positions)
            .map(|_| (0..r.random_range(1..=3)).map(|_| r.random_range(0..=5)).collect())
            .collect();
        let dtype = |j: usize| dtypes[j % 2];
        let vals: Vec<Vec<Vec<f64>>> = devices
            .iter()
            .map(|_| {
                shapes
                    .iter()
                    .enumerate()
                    .map(|(j, s)| random(dtype(j), s.iter().product(), range, r))
                    .collect()
            })
            .collect();
        let tensors = vals
            .iter()
            .zip(devices)
            .map(|(b, &d)| {
                b.iter().enumerate().map(|(j, v)| tensor(dtype(j), v, shapes[j].as_slice(), d)).collect()
            })
            .collect();
        Buckets { shapes, vals, tensors }
    }

    /// Every device's values at position `j`.
    fn at(&self, j: usize) -> Vec<&[f64]> {
        self.vals.iter().map(|b| b[j].as_slice()).collect()
    }

    /// Every device's tensor at position `j`.
    fn column(&self, j: usize) -> Vec<Tensor> {
        self.tensors.iter().map(|b| b[j].clone()).collect()
    }
}

/// Runs `f` for group sizes 1..=8, every algorithm setting and two dtype pairs.
fn each_case(mut f: impl FnMut(&DeviceGroup, [DType; 2], &mut StdRng, &str)) {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for n in 1..=8 {
        for algo in ALGORITHMS {
            for dtypes in [[DType::F32, DType::I32], [DType::BF16, DType::I64], [DType::F64, DType::U8]] {
                let ctx = format!("seed {seed}: n={n} {algo} {dtypes:?}");
                f(&cpu_group(n).using(algo), dtypes, &mut r, &ctx);
            }
        }
    }
}

/// Whether per-tensor and coalesced results must agree bit for bit: integers always, floats when
/// both fold every element in the same order (the star's one n-ary pass).
fn bitwise(group: &DeviceGroup, dtype: DType) -> bool {
    dtype.is_int()
        || group.algorithm_for(CollectiveKind::AllReduce, 0) == Algorithm::Star
        || group.size() <= 2
}

#[test]
fn all_reduce_coalesced_equals_per_tensor_all_reduce_and_the_reference() {
    each_case(|g, dtypes, r, ctx| {
        // u8's ops: integral PreMulSum scalars every dtype of the pairs takes (u8 only 0..=255).
        for op in all_ops(DType::U8, r) {
            let b = Buckets::new(dtypes, r.random_range(1..=7), g.devices(), range_for(op), r);
            let ctx = format!("{ctx} {op}");
            let got = g.all_reduce_coalesced(&b.tensors, op).expect(&ctx);
            assert_eq!(got.len(), g.size(), "{ctx}");
            collectives::realize(&got.concat()).expect(&ctx);
            for (j, shape) in b.shapes.iter().enumerate() {
                let single = g.all_reduce(&b.column(j), op).expect(&ctx);
                for (i, (row, &d)) in got.iter().zip(g.devices()).enumerate() {
                    let (t, c) = (&row[j], format!("{ctx} device {i} position {j}"));
                    assert_eq!(t.shape().dims(), shape.as_slice(), "{c}");
                    check_reduced(t, d, op, &b.at(j), &c);
                    if bitwise(g, t.dtype()) {
                        check_exact(t, d, shape, &values(&single[i]), &c);
                    }
                }
            }
        }
    });
}

#[test]
fn reduce_coalesced_of_the_first_k_buckets_lands_on_the_leader() {
    each_case(|g, dtypes, r, ctx| {
        let n = g.size();
        let (k, leader) = (r.random_range(1..=n), Device::Cpu(r.random_range(0..n as u32)));
        let g = g.clone().with_leader(leader).expect("member");
        for op in all_ops(DType::U8, r) {
            let b = Buckets::new(dtypes, r.random_range(1..=6), &g.devices()[..k], range_for(op), r);
            let ctx = format!("{ctx} k={k} leader {leader} {op}");
            let got = g.reduce_coalesced(&b.tensors, op).expect(&ctx);
            assert_eq!(got.len(), b.shapes.len(), "{ctx}");
            for (j, t) in got.iter().enumerate() {
                let c = format!("{ctx} position {j}");
                assert_eq!(t.shape().dims(), b.shapes[j].as_slice(), "{c}");
                check_reduced(t, leader, op, &b.at(j), &c);
                if bitwise(&g, t.dtype()) {
                    let single = g.reduce(&b.column(j), op).expect(&c);
                    check_exact(t, leader, &b.shapes[j], &values(&single), &c);
                }
            }
        }
    });
}

#[test]
fn broadcast_coalesced_copies_every_tensor_everywhere() {
    each_case(|g, dtypes, r, ctx| {
        let root = r.random_range(0..g.size());
        let b = Buckets::new(dtypes, r.random_range(1..=7), &[g.devices()[root]], Range::General, r);
        let ctx = format!("{ctx} root {root}");
        let got = g.broadcast_coalesced(&b.tensors[0]).expect(&ctx);
        assert_eq!(got.len(), g.size(), "{ctx}");
        for (row, &d) in got.iter().zip(g.devices()) {
            assert_eq!(row.len(), b.shapes.len(), "{ctx}");
            for (j, t) in row.iter().enumerate() {
                assert_eq!(t.dtype(), dtypes[j % 2], "{ctx}");
                check_exact(t, d, &b.shapes[j], &b.vals[0][j], &format!("{ctx} position {j}"));
            }
        }
        // The source's entries are the inputs themselves, as `broadcast` and
        // torch.cuda.comm.broadcast_coalesced return them: no rebuilt slices of a flat copy.
        for (j, t) in got[root].iter().enumerate() {
            assert!(t.same_node(&b.tensors[0][j]), "{ctx}: the source's entry {j} is not the input");
        }
        let single = g.broadcast(&b.tensors[0][0]).expect(&ctx);
        assert!(single[root].same_node(&b.tensors[0][0]), "{ctx}: broadcast returns the input too");
    });
}

#[test]
fn coalescing_moves_one_buffer_per_dtype() {
    let mut r = rng(fresh_seed());
    for n in 2..=8 {
        let g = cpu_group(n).using(Algorithm::Star);
        let b = Buckets::new([DType::F32, DType::I32], 9, g.devices(), Range::General, &mut r);
        let got = g.all_reduce_coalesced(&b.tensors, ReduceOp::Sum).unwrap();
        let plan = Plan::of(&got.concat());
        // Per dtype, whatever the tensor count: one flat buffer per member, all-reduced by one
        // call of the host star (the leader reads the members' buffers in place and writes each
        // member's result), so no hop at all.
        assert!(plan.hops.is_empty(), "{plan}");
        let calls: Vec<_> = plan.kernels.iter().filter(|k| k.op == "collective host all_reduce").collect();
        assert_eq!(calls.len(), 2, "one call per dtype: {plan}");
        assert!(calls.iter().all(|k| k.device == g.leader() && k.inputs == n), "{plan}");
        let flat: usize = plan.kernels.iter().filter(|k| k.op.starts_with("concat")).map(|k| k.bytes).sum();
        let bytes: usize = b.tensors.iter().flatten().map(Tensor::nbytes).sum();
        assert_eq!(flat, bytes, "each tensor packed once: {plan}");
    }
}

/// The error of `r`, which must have failed.
fn err<T: std::fmt::Debug>(r: collectives::Result<T>, ctx: &str) -> Error {
    match r {
        Ok(v) => panic!("{ctx}: expected an error, got {v:?}"),
        Err(e) => e,
    }
}

/// Asserts every tensor of `b` still holds its original values.
fn assert_untouched(b: &Buckets, ctx: &str) {
    for (i, bucket) in b.tensors.iter().enumerate() {
        for (j, t) in bucket.iter().enumerate() {
            assert_eq!(values(t), b.vals[i][j], "{ctx}: device {i} position {j} changed");
        }
    }
}

#[test]
fn bucket_mismatches_are_typed_errors() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let g = cpu_group(3);
    let fresh = |r: &mut StdRng| Buckets::new([DType::F32, DType::I32], 4, g.devices(), Range::General, r);
    let sum = ReduceOp::Sum;
    let b = fresh(&mut r);
    let mut short = b.tensors.clone();
    short[1].pop();
    let e = err(g.all_reduce_coalesced(&short, sum), "short bucket");
    assert!(matches!(e, Error::InvalidArgument { .. }), "seed {seed}: {e:?}");
    let e = err(g.reduce_coalesced(&short, sum), "short bucket");
    assert!(matches!(e, Error::InvalidArgument { .. }), "seed {seed}: {e:?}");
    let mut reshaped = b.tensors.clone();
    reshaped[2][2] = reshaped[2][2].reshape([1, 1, 1, b.shapes[2].iter().product::<usize>()]).unwrap();
    let e = err(g.all_reduce_coalesced(&reshaped, sum), "shape");
    assert!(matches!(e, Error::ShapeMismatch { .. }), "seed {seed}: {e:?}");
    let mut retyped = b.tensors.clone();
    retyped[1][3] = retyped[1][3].cast(DType::F64).unwrap();
    let e = err(g.all_reduce_coalesced(&retyped, sum), "dtype");
    assert!(matches!(e, Error::DTypeMismatch { .. }), "seed {seed}: {e:?}");
    let mut moved = b.tensors.clone();
    moved[1][2] = moved[1][2].copy_to_device(Device::Cpu(2)).unwrap();
    let e = err(g.all_reduce_coalesced(&moved, sum), "device");
    assert!(matches!(e, Error::ShardDevice { index: 1, .. }), "seed {seed}: {e:?}");
    let e = err(g.all_reduce_coalesced(&b.tensors, ReduceOp::PreMulSum(0.5)), "premulsum");
    assert!(matches!(e, Error::BadReduceOp { dtype: DType::I32, .. }), "seed {seed}: {e:?}");
    assert_untouched(&b, &format!("seed {seed}"));
}

#[test]
fn bucket_counts_and_empty_buckets_are_typed_errors() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let g = cpu_group(3);
    let devices: Vec<Device> = (0..4).map(Device::Cpu).collect();
    let b = Buckets::new([DType::F64, DType::U8], 3, &devices, Range::General, &mut r);
    let e = err(g.reduce_coalesced(&b.tensors, ReduceOp::Max), "4 buckets");
    assert!(matches!(e, Error::ShardCount { got: 4, size: 3, .. }), "seed {seed}: {e:?}");
    let e = err(g.all_reduce_coalesced(&b.tensors[..2], ReduceOp::Max), "2 buckets");
    assert!(matches!(e, Error::ShardCount { got: 2, size: 3, .. }), "seed {seed}: {e:?}");
    let e = err(g.all_reduce_coalesced(&[], ReduceOp::Sum), "no buckets");
    assert!(matches!(e, Error::NoInputs { .. }), "seed {seed}: {e:?}");
    let e = err(g.all_reduce_coalesced(&[vec![], vec![], vec![]], ReduceOp::Sum), "empty buckets");
    assert!(matches!(e, Error::NoInputs { .. }), "seed {seed}: {e:?}");
    let e = err(g.broadcast_coalesced(&[]), "nothing to broadcast");
    assert!(matches!(e, Error::NoInputs { .. }), "seed {seed}: {e:?}");
    let mixed = vec![b.tensors[0][0].clone(), b.tensors[1][1].clone()];
    let e = err(g.broadcast_coalesced(&mixed), "two devices");
    assert!(matches!(e, Error::DeviceMismatch { index: 1, .. }), "seed {seed}: {e:?}");
    let e = err(g.broadcast_coalesced(&b.tensors[3]), "outside");
    assert!(matches!(e, Error::NotMember { device: Device::Cpu(3), .. }), "seed {seed}: {e:?}");
    assert_untouched(&b, &format!("seed {seed}"));
}
