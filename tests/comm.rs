//! The SPMD seam: `IdentityComm`, the communicator of a world of one, returns its input (scaled
//! where the op scales); roots other than 0 and tensors on another device are typed errors.

use collectives::{Communicator, DType, Device, Error, IdentityComm, ReduceOp, Tensor};
use collectives_tests::collective::{DTYPES, all_ops, range_for};
use collectives_tests::{check_all, eps, fresh_seed, random, ref_scale, rng, tensor, values};
use rand::rngs::StdRng;

const HOME: Device = Device::Cpu(1);

/// A random tensor of `dtype` on `device`, with its values.
fn input(dtype: DType, op: ReduceOp, device: Device, r: &mut StdRng) -> (Vec<f64>, Tensor) {
    let vals = random(dtype, 12, range_for(op), r);
    let t = tensor(dtype, &vals, [3, 4], device);
    (vals, t)
}

#[test]
fn a_world_of_one() {
    let comm = IdentityComm::new(HOME);
    assert_eq!((comm.rank(), comm.world_size(), comm.device()), (0, 1, HOME));
    let boxed: Box<dyn Communicator> = Box::new(comm);
    assert_eq!(boxed.world_size(), 1);
}

#[test]
fn all_reduce_returns_the_input_and_pre_mul_sum_scales_it() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let comm = IdentityComm::new(HOME);
    for dtype in DTYPES {
        for op in all_ops(dtype, &mut r) {
            let (vals, t) = input(dtype, op, HOME, &mut r);
            let ctx = format!("seed {seed}: {dtype} {op}");
            let got = comm.all_reduce(&t, op).expect(&ctx);
            assert_eq!((got.device(), got.dtype(), got.shape()), (HOME, dtype, t.shape()), "{ctx}");
            let ReduceOp::PreMulSum(s) = op else {
                assert!(got.same_node(&t), "{ctx}: one rank has nothing to reduce");
                continue;
            };
            let want: Vec<f64> =
                vals.iter().map(|&v| ref_scale(dtype, collectives::Scale::Mul(s), v)).collect();
            let tol = |i: usize| 2.0 * eps(dtype) * want[i].abs();
            check_all(&values(&got), &want, tol, &ctx);
            assert_eq!(values(&t), vals, "{ctx}: input untouched");
        }
    }
}

#[test]
fn the_other_collectives_return_the_input() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let comm = IdentityComm::new(HOME);
    for dtype in DTYPES {
        let (vals, t) = input(dtype, ReduceOp::Sum, HOME, &mut r);
        let ctx = format!("seed {seed}: {dtype}");
        let got = [
            comm.reduce(&t, ReduceOp::Max, 0).expect(&ctx).expect("the root gets Some"),
            comm.broadcast(&t, 0).expect(&ctx),
            comm.all_gather(&t, 1).expect(&ctx),
            comm.reduce_scatter(&t, ReduceOp::Avg, 0).expect(&ctx),
        ];
        for g in got {
            assert!(g.same_node(&t), "{ctx}");
        }
        assert_eq!(values(&t), vals, "{ctx}");
    }
}

#[test]
fn a_root_other_than_zero_is_an_error() {
    let mut r = rng(fresh_seed());
    let comm = IdentityComm::new(HOME);
    let (vals, t) = input(DType::F32, ReduceOp::Sum, HOME, &mut r);
    for root in [1, 2, usize::MAX] {
        let e = comm.reduce(&t, ReduceOp::Sum, root).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { what: "reduce", .. }), "{e:?}");
        let e = comm.broadcast(&t, root).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { what: "broadcast", .. }), "{e:?}");
    }
    assert_eq!(values(&t), vals);
}

#[test]
fn a_tensor_on_another_device_is_an_error() {
    let mut r = rng(fresh_seed());
    let comm = IdentityComm::new(HOME);
    let (vals, t) = input(DType::I64, ReduceOp::Sum, Device::Cpu(0), &mut r);
    let errors = [
        comm.all_reduce(&t, ReduceOp::Sum).unwrap_err(),
        comm.reduce(&t, ReduceOp::Sum, 0).unwrap_err(),
        comm.broadcast(&t, 0).unwrap_err(),
        comm.all_gather(&t, 0).unwrap_err(),
        comm.reduce_scatter(&t, ReduceOp::Sum, 0).unwrap_err(),
    ];
    for e in errors {
        let want = (HOME, Device::Cpu(0));
        assert!(matches!(e, Error::DeviceMismatch { expected, got, .. } if (expected, got) == want), "{e:?}");
    }
    assert_eq!(values(&t), vals);
}

#[test]
fn bad_dims_and_scalars_are_errors() {
    let mut r = rng(fresh_seed());
    let comm = IdentityComm::new(HOME);
    let (vals, t) = input(DType::I32, ReduceOp::Sum, HOME, &mut r);
    let e = comm.all_gather(&t, 2).unwrap_err();
    assert!(matches!(e, Error::DimOutOfRange { dim: 2, rank: 2, .. }), "{e:?}");
    let e = comm.reduce_scatter(&t, ReduceOp::Sum, 2).unwrap_err();
    assert!(matches!(e, Error::DimOutOfRange { dim: 2, rank: 2, .. }), "{e:?}");
    let e = comm.all_reduce(&t, ReduceOp::PreMulSum(0.5)).unwrap_err();
    assert!(matches!(e, Error::BadReduceOp { dtype: DType::I32, .. }), "{e:?}");
    assert_eq!(values(&t), vals);
}
