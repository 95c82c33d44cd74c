//! Bad input to a group or a collective: each a typed `Error` at the call, under every algorithm
//! setting, with the inputs untouched (read back after the error and compared to the originals).

use std::fmt::Debug;

use collectives::{Algorithm, DType, Device, DeviceGroup, Error, ReduceOp};
use collectives_tests::collective::{ALGORITHMS, Shards, cpu_group};
use collectives_tests::{Range, fresh_seed, rng};
use rand::rngs::StdRng;

/// The error of `r`, which must have failed.
fn err<T: Debug>(r: collectives::Result<T>, ctx: &str) -> Error {
    match r {
        Ok(v) => panic!("{ctx}: expected an error, got {v:?}"),
        Err(e) => e,
    }
}

/// Asserts that `e` is [`Error::ShardCount`] for `got` shards on a group of `size`.
fn assert_shard_count(e: &Error, got: usize, size: usize, ctx: &str) {
    assert!(
        matches!(e, Error::ShardCount { got: g, size: s, .. } if (*g, *s) == (got, size)),
        "{ctx}: {e:?}"
    );
}

/// Runs `f` on groups of 2 to 8 CPU devices under every algorithm setting, with a generator.
fn each_group(mut f: impl FnMut(&DeviceGroup, &mut StdRng, &str)) {
    let seed = fresh_seed();
    let mut r = rng(seed);
    for n in 2..=8 {
        for algo in ALGORITHMS {
            f(&cpu_group(n).using(algo), &mut r, &format!("seed {seed}: n={n} {algo}"));
        }
    }
}

/// f32 shards of `shape` on the group's devices.
fn shards(g: &DeviceGroup, shape: &[usize], r: &mut StdRng) -> Shards {
    Shards::even(DType::F32, shape, g.devices(), Range::General, r)
}

#[test]
fn an_empty_group_is_an_error() {
    assert_eq!(DeviceGroup::new(vec![]), Err(Error::EmptyGroup));
}

#[test]
fn a_duplicate_device_is_an_error() {
    let devices = vec![Device::Cpu(0), Device::Cuda(1), Device::Cpu(2), Device::Cuda(1)];
    let e = err(DeviceGroup::new(devices), "duplicate");
    let want = Error::DuplicateDevice { device: Device::Cuda(1), first: 1, second: 3 };
    assert_eq!(e, want);
}

#[test]
fn a_leader_outside_the_group_is_an_error() {
    for leader in [Device::Cpu(8), Device::Cuda(0), Device::Vulkan(0)] {
        let e = err(cpu_group(3).with_leader(leader), "leader");
        assert!(matches!(e, Error::LeaderNotMember { leader: l, .. } if l == leader), "{e:?}");
    }
}

#[test]
fn a_shard_on_the_wrong_device_is_an_error() {
    each_group(|g, r, ctx| {
        let mut s = shards(g, &[2 * g.size()], r);
        s.tensors.swap(0, 1);
        s.vals.swap(0, 1);
        let t = &s.tensors;
        let errors = [
            err(g.reduce(t, ReduceOp::Sum), "reduce"),
            err(g.all_reduce(t, ReduceOp::Avg), "all_reduce"),
            err(g.gather(t, 0), "gather"),
            err(g.all_gather(t, 0), "all_gather"),
            err(g.reduce_scatter(t, ReduceOp::Max, 0), "reduce_scatter"),
            err(g.all_to_all(t, 0), "all_to_all"),
        ];
        for e in errors {
            let want = (0, Device::Cpu(0), Device::Cpu(1));
            assert!(
                matches!(e, Error::ShardDevice { index, expected, got, .. } if (index, expected, got) == want),
                "{ctx}: {e:?}"
            );
        }
        s.assert_untouched(ctx);
    });
}

#[test]
fn a_root_outside_the_group_is_an_error() {
    each_group(|g, r, ctx| {
        let outside = Device::Cpu(g.size() as u32);
        let s = Shards::even(DType::F32, &[g.size()], &[outside], Range::General, r);
        let t = &s.tensors[0];
        let sizes = vec![1; g.size()];
        for e in [
            err(g.broadcast(t), "broadcast"),
            err(g.scatter(t, 0), "scatter"),
            err(g.scatter_sizes(t, 0, &sizes), "scatter_sizes"),
        ] {
            assert!(matches!(e, Error::NotMember { device, .. } if device == outside), "{ctx}: {e:?}");
        }
        s.assert_untouched(ctx);
    });
}

#[test]
fn more_shards_than_devices_is_an_error() {
    each_group(|g, r, ctx| {
        let n = g.size();
        let devices: Vec<Device> = (0..=n as u32).map(Device::Cpu).collect();
        let s = Shards::even(DType::I32, &[2 * n + 2], &devices, Range::General, r);
        let t = &s.tensors;
        let errors = [
            err(g.reduce(t, ReduceOp::Sum), "reduce"),
            err(g.all_reduce(t, ReduceOp::Sum), "all_reduce"),
            err(g.gather(t, 0), "gather"),
            err(g.all_gather(t, 0), "all_gather"),
            err(g.reduce_scatter(t, ReduceOp::Sum, 0), "reduce_scatter"),
            err(g.all_to_all(t, 0), "all_to_all"),
        ];
        for e in errors {
            assert_shard_count(&e, n + 1, n, ctx);
        }
        s.assert_untouched(ctx);
    });
}

#[test]
fn fewer_shards_than_devices_is_an_error_where_every_device_takes_part() {
    each_group(|g, r, ctx| {
        let n = g.size();
        let s = Shards::even(DType::F64, &[2 * n], &g.devices()[..n - 1], Range::General, r);
        let t = &s.tensors;
        let errors = [
            err(g.all_reduce(t, ReduceOp::Sum), "all_reduce"),
            err(g.all_gather(t, 0), "all_gather"),
            err(g.reduce_scatter(t, ReduceOp::Sum, 0), "reduce_scatter"),
            err(g.all_to_all(t, 0), "all_to_all"),
        ];
        for e in errors {
            assert_shard_count(&e, n - 1, n, ctx);
        }
        for e in [err(g.reduce(&[], ReduceOp::Sum), "reduce"), err(g.gather(&[], 0), "gather")] {
            assert!(matches!(e, Error::ShardCount { got: 0, .. }), "{ctx}: {e:?}");
        }
        s.assert_untouched(ctx);
    });
}

#[test]
fn a_dtype_mismatch_across_shards_is_an_error() {
    each_group(|g, r, ctx| {
        let n = g.size();
        let mut s = shards(g, &[2 * n], r);
        let odd = Shards::even(DType::I32, &[2 * n], &g.devices()[n - 1..], Range::General, r);
        s.tensors[n - 1] = odd.tensors[0].clone();
        s.vals[n - 1] = odd.vals[0].clone();
        let t = &s.tensors;
        let errors = [
            err(g.reduce(t, ReduceOp::Sum), "reduce"),
            err(g.all_reduce(t, ReduceOp::Sum), "all_reduce"),
            err(g.gather(t, 0), "gather"),
            err(g.all_gather(t, 0), "all_gather"),
            err(g.reduce_scatter(t, ReduceOp::Sum, 0), "reduce_scatter"),
            err(g.all_to_all(t, 0), "all_to_all"),
        ];
        for e in errors {
            let want = (DType::F32, DType::I32);
            assert!(
                matches!(e, Error::DTypeMismatch { expected, got, .. } if (expected, got) == want),
                "{ctx}: {e:?}"
            );
        }
        s.assert_untouched(ctx);
    });
}

#[test]
fn a_shape_mismatch_across_shards_is_an_error() {
    each_group(|g, r, ctx| {
        let n = g.size();
        let mut shapes = vec![vec![2, n]; n];
        shapes[n - 1] = vec![3, n];
        let s = Shards::of_shapes(DType::BF16, &shapes, g.devices(), Range::General, r);
        let t = &s.tensors;
        let errors = [
            err(g.reduce(t, ReduceOp::Sum), "reduce"),
            err(g.all_reduce(t, ReduceOp::Sum), "all_reduce"),
            err(g.gather(t, 1), "gather along the other dim"),
            err(g.all_gather(t, 1), "all_gather along the other dim"),
            err(g.reduce_scatter(t, ReduceOp::Sum, 1), "reduce_scatter"),
            err(g.all_to_all(t, 1), "all_to_all"),
        ];
        for e in errors {
            assert!(matches!(&e, Error::ShapeMismatch { got, .. } if got.dims() == [3, n]), "{ctx}: {e:?}");
        }
        s.assert_untouched(ctx);
    });
}

#[test]
fn a_rank_mismatch_across_uneven_shards_is_an_error() {
    each_group(|g, r, ctx| {
        let n = g.size();
        let mut shapes = vec![vec![2, 3]; n];
        shapes[1] = vec![2, 3, 1];
        let s = Shards::of_shapes(DType::U8, &shapes, g.devices(), Range::General, r);
        for e in [err(g.gather(&s.tensors, 0), "gather"), err(g.all_gather(&s.tensors, 0), "all_gather")] {
            assert!(matches!(e, Error::ShapeMismatch { .. }), "{ctx}: {e:?}");
        }
        s.assert_untouched(ctx);
    });
}

#[test]
fn a_dim_out_of_range_is_an_error() {
    each_group(|g, r, ctx| {
        let n = g.size();
        let s = shards(g, &[n, n], r);
        let (t, root) = (&s.tensors, &s.tensors[0]);
        let errors = [
            err(g.gather(t, 2), "gather"),
            err(g.all_gather(t, 2), "all_gather"),
            err(g.reduce_scatter(t, ReduceOp::Sum, 2), "reduce_scatter"),
            err(g.all_to_all(t, 5), "all_to_all"),
            err(g.scatter(root, 2), "scatter"),
            err(g.scatter_sizes(root, 3, &vec![1; n]), "scatter_sizes"),
        ];
        for e in errors {
            assert!(matches!(e, Error::DimOutOfRange { rank: 2, dim, .. } if dim >= 2), "{ctx}: {e:?}");
        }
        s.assert_untouched(ctx);
    });
}

#[test]
fn scatter_sizes_must_sum_to_the_length_one_per_device() {
    each_group(|g, r, ctx| {
        let n = g.size();
        let s = shards(g, &[3, 2 * n], r);
        let root = &s.tensors[n - 1];
        let (mut over, mut under) = (vec![2; n], vec![2; n]);
        over[0] = 3;
        under[n - 1] = 1;
        for (sizes, sum) in [(over, 2 * n + 1), (under, 2 * n - 1)] {
            let e = err(g.scatter_sizes(root, 1, &sizes), "sizes");
            let want = Error::SplitSizes { op: "scatter_sizes", sizes, sum, dim: 1, len: 2 * n };
            assert_eq!(e, want, "{ctx}");
        }
        let e = err(g.scatter_sizes(root, 1, &vec![1; n + 1]), "count");
        assert_shard_count(&e, n + 1, n, ctx);
        s.assert_untouched(ctx);
    });
}

#[test]
fn uneven_lengths_are_an_error_where_the_op_splits_evenly() {
    each_group(|g, r, ctx| {
        let n = g.size();
        let len = 2 * n + 1;
        let s = shards(g, &[2, len], r);
        let errors = [
            err(g.reduce_scatter(&s.tensors, ReduceOp::Sum, 1), "reduce_scatter"),
            err(g.all_to_all(&s.tensors, 1), "all_to_all"),
            err(g.scatter(&s.tensors[1], 1), "scatter"),
        ];
        for e in errors {
            assert!(
                matches!(e, Error::Uneven { dim: 1, len: l, parts, .. } if (l, parts) == (len, n)),
                "{ctx}: {e:?}"
            );
        }
        s.assert_untouched(ctx);
    });
}

#[test]
fn a_fractional_pre_mul_sum_on_an_integer_dtype_is_an_error() {
    each_group(|g, r, ctx| {
        let n = g.size();
        for dtype in [DType::I32, DType::I64, DType::U8] {
            let s = Shards::even(dtype, &[n], g.devices(), Range::General, r);
            let t = &s.tensors;
            let op = ReduceOp::PreMulSum(0.5);
            let errors = [
                err(g.reduce(t, op), "reduce"),
                err(g.all_reduce(t, op), "all_reduce"),
                err(g.reduce_scatter(t, op, 0), "reduce_scatter"),
            ];
            for e in errors {
                assert!(matches!(e, Error::BadReduceOp { dtype: d, .. } if d == dtype), "{ctx}: {e:?}");
            }
            s.assert_untouched(ctx);
        }
    });
}

#[test]
fn a_non_finite_pre_mul_sum_scalar_is_an_error() {
    each_group(|g, r, ctx| {
        let s = shards(g, &[g.size()], r);
        for scalar in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let e = err(g.all_reduce(&s.tensors, ReduceOp::PreMulSum(scalar)), "scalar");
            assert!(matches!(e, Error::BadReduceOp { .. }), "{ctx}: {e:?}");
        }
        s.assert_untouched(ctx);
    });
}

#[test]
fn forcing_nccl_on_a_cpu_group_is_an_error() {
    let mut r = rng(fresh_seed());
    let g = cpu_group(3).using(Algorithm::Nccl);
    let s = shards(&g, &[3], &mut r);
    let errors = [
        err(g.all_reduce(&s.tensors, ReduceOp::Sum), "all_reduce"),
        err(g.reduce(&s.tensors, ReduceOp::Sum), "reduce"),
        err(g.broadcast(&s.tensors[0]), "broadcast"),
        err(g.all_gather(&s.tensors, 0), "all_gather"),
        err(g.reduce_scatter(&s.tensors, ReduceOp::Sum, 0), "reduce_scatter"),
    ];
    for e in errors {
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    }
    s.assert_untouched("nccl");
}

#[test]
fn a_failed_call_leaves_the_group_usable() {
    each_group(|g, r, ctx| {
        let s = shards(g, &[g.size() + 1], r);
        err(g.reduce_scatter(&s.tensors, ReduceOp::Sum, 0), "uneven");
        let sums = g.all_reduce(&s.tensors, ReduceOp::Sum).expect(ctx);
        collectives::realize(&sums).expect(ctx);
        s.assert_untouched(ctx);
    });
}
