//! Sizes and factors at the edge of what fits: every size, count and byte computation reachable
//! from the public API is checked, so a shape, reshape, concat, gather, plan or split whose size
//! passes `usize` (or `isize::MAX` bytes) is `Error::TooLarge`, never a panic or a wrapped size;
//! and an integer `Scale` factor outside its dtype is `Error::ScaleOutOfRange` when the op is
//! built, on every backend alike, while the extremes inside the range compute the host's answer.

use collectives::{CollectiveKind, DType, Device, DeviceGroup, Error, ReduceKind, ReduceOp, Scale, Tensor};
use collectives_tests::{fresh_seed, rng, tensor, values, vulkan_required};
use rand::Rng;

const CPU0: Device = Device::Cpu(0);

/// The error of `r`, which must be one.
fn err<T: std::fmt::Debug>(r: collectives::Result<T>, ctx: &str) -> Error {
    match r {
        Ok(v) => panic!("{ctx}: expected an error, got {v:?}"),
        Err(e) => e,
    }
}

/// Asserts `e` is `TooLarge` from `what`, and that its message says how to fix it.
fn too_large(e: Error, what: &str) {
    match &e {
        Error::TooLarge { what: w, .. } => assert_eq!(*w, what, "{e}"),
        other => panic!("expected TooLarge from {what}, got {other:?}"),
    }
    assert!(e.to_string().contains("isize::MAX"), "{e}");
}

/// An empty u8 tensor whose dim 0 is `len` (a valid shape: `len` bytes fit).
fn empty_rows(len: usize, device: Device) -> Tensor {
    Tensor::from_vec(Vec::<u8>::new(), [len, 0], device).unwrap()
}

#[test]
fn full_and_zeros_check_the_size_before_allocating() {
    too_large(err(Tensor::full([usize::MAX, 2], 1.5f32, CPU0), "full"), "full");
    too_large(err(Tensor::zeros([1usize << 62, 4], DType::F64, CPU0), "zeros"), "full");
    // Fits isize::MAX bytes but no host: an out-of-memory error, not an abort.
    match err(Tensor::full([1usize << 61], 7u8, CPU0), "full 2 EiB") {
        Error::OutOfMemory { bytes, .. } => assert_eq!(bytes, 1 << 61),
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
}

#[test]
fn from_vec_of_a_shape_past_usize_is_too_large() {
    too_large(err(Tensor::from_vec(Vec::<f32>::new(), [usize::MAX, 2, 0], CPU0), "from_vec"), "from_vec");
    // Past isize::MAX bytes though the count fits usize.
    too_large(err(Tensor::from_vec(Vec::<f64>::new(), [1 << 61, 0], CPU0), "f64"), "from_vec");
    // The same count of u8 fits: an empty tensor of a large, valid shape.
    let t = Tensor::from_vec(Vec::<u8>::new(), [1 << 61, 0], CPU0).unwrap();
    assert_eq!(t.numel(), 0);
    assert_eq!(t.to_vec::<u8>().unwrap(), Vec::<u8>::new());
}

#[test]
fn reshape_and_cast_past_the_limit_are_too_large() {
    let t = Tensor::from_vec(vec![1.0f32, 2.0], [2], CPU0).unwrap();
    too_large(err(t.reshape([usize::MAX, 2]), "reshape"), "reshape");
    // Within the limit a mismatched count is still ReshapeMismatch.
    assert!(matches!(t.reshape([3]), Err(Error::ReshapeMismatch { .. })));
    // 2^62 u8 rows fit; as f64 they are 2^65 bytes.
    too_large(err(empty_rows(1 << 62, CPU0).cast(DType::F64), "cast"), "cast");
    assert_eq!(t.to_vec::<f32>().unwrap(), [1.0, 2.0], "the input is untouched");
}

#[test]
fn concat_and_gather_past_usize_are_too_large() {
    let parts: Vec<Tensor> = (0..4).map(|_| empty_rows(1 << 62, CPU0)).collect();
    too_large(err(Tensor::concat(&parts, 0), "concat"), "concat");
    // Two of them: 2^63 bytes, past isize::MAX.
    too_large(err(Tensor::concat(&parts[..2], 0), "concat of two"), "concat");
    let devices: Vec<Device> = (0..4).map(Device::Cpu).collect();
    let g = DeviceGroup::new(devices.clone()).unwrap();
    let shards: Vec<Tensor> = devices.iter().map(|&d| empty_rows(1 << 62, d)).collect();
    too_large(err(g.gather(&shards, 0), "gather"), "concat");
    too_large(err(g.all_gather(&shards, 0), "all_gather"), "concat");
}

#[test]
fn a_plan_past_the_limit_is_too_large() {
    let g = DeviceGroup::new(vec![CPU0, Device::Cpu(1)]).unwrap();
    // Released builds once returned Ok with 0 bytes here (2^61 × 8 wraps to 0).
    too_large(err(g.plan(CollectiveKind::AllReduce, [1 << 61], DType::F64), "plan"), "plan");
    // Each shard fits; the gathered tensor (2^60 f64) does not.
    too_large(err(g.plan(CollectiveKind::AllGather, [1 << 59], DType::F64), "all_gather plan"), "concat");
    assert!(g.plan(CollectiveKind::AllReduce, [1 << 20], DType::F64).is_ok());
}

#[test]
fn scatter_sizes_summing_past_usize_is_too_large() {
    let g = DeviceGroup::new(vec![CPU0, Device::Cpu(1)]).unwrap();
    let t = tensor(DType::F32, &[1.0, 2.0, 3.0], [3], CPU0);
    too_large(err(g.scatter_sizes(&t, 0, &[usize::MAX, 1]), "scatter_sizes"), "scatter_sizes");
    assert_eq!(values(&t), [1.0, 2.0, 3.0], "the input is untouched");
}

/// Every backend under test: the CPU, and Vulkan where it works.
fn devices() -> Vec<Device> {
    let mut out = vec![CPU0];
    let vk = Device::Vulkan(0);
    match Tensor::from_vec(vec![1u8], [1], vk).and_then(|t| t.to_vec::<u8>()) {
        Ok(_) => out.push(vk),
        Err(e) if vulkan_required() => panic!("REQUIRE_VULKAN=1 but {vk} does not work: {e}"),
        Err(e) => println!("skipped {vk}: {e}"),
    }
    out
}

/// Factors just outside each integer dtype, and the range the error must name.
fn out_of_range() -> Vec<(DType, f64, i64, i64)> {
    let (i32min, i32max) = (i64::from(i32::MIN), i64::from(i32::MAX));
    vec![
        (DType::U8, 256.0, 0, 255),
        (DType::U8, -1.0, 0, 255),
        (DType::I32, 2147483648.0, i32min, i32max),
        (DType::I32, -2147483649.0, i32min, i32max),
        (DType::I64, 9223372036854775808.0, i64::MIN, i64::MAX),
        (DType::I64, -1e19, i64::MIN, i64::MAX),
    ]
}

#[test]
fn an_integer_scale_outside_the_dtype_is_an_error() {
    for dev in devices() {
        for (dtype, f, min, max) in out_of_range() {
            let t = tensor(dtype, &[1.0, 2.0], [2], dev);
            for s in [Scale::Mul(f), Scale::Div(f)] {
                let want = |op| Error::ScaleOutOfRange { op, factor: f, dtype, min, max };
                assert_eq!(err(t.scale(s), "scale"), want("scale"), "{dev} {dtype} {s:?}");
                let r = Tensor::reduce(&[t.clone(), t.clone()], ReduceKind::Sum, Some(s));
                assert_eq!(err(r, "reduce"), want("reduce"), "{dev} {dtype} {s:?}");
            }
            let g = DeviceGroup::new(vec![dev, Device::Cpu(1)]).unwrap();
            let shards = [t.clone(), tensor(dtype, &[1.0, 2.0], [2], Device::Cpu(1))];
            let e = err(g.all_reduce(&shards, ReduceOp::PreMulSum(f)), "all_reduce");
            assert_eq!(e, Error::ScaleOutOfRange { op: "all_reduce", factor: f, dtype, min, max });
            assert!(e.to_string().contains("cast to a wider dtype"), "{e}");
            assert_eq!(values(&t), [1.0, 2.0], "{dev} {dtype}: the input is untouched");
        }
    }
}

/// The elements of an integer tensor, exactly.
fn ints(t: &Tensor) -> Vec<i128> {
    match t.dtype() {
        DType::I64 => t.to_vec::<i64>().unwrap().into_iter().map(i128::from).collect(),
        _ => values(t).into_iter().map(|v| v as i128).collect(),
    }
}

/// `s` applied to `x` exactly, wrapped to `dtype` (integer division truncates toward zero).
fn scale_exact(dtype: DType, s: Scale, x: i128) -> i128 {
    let f = s.factor() as i128;
    let v = match s {
        Scale::Mul(_) => x * f,
        Scale::Div(_) => x / f,
    };
    match dtype {
        DType::U8 => i128::from(v as u8),
        DType::I32 => i128::from(v as i32),
        _ => i128::from(v as i64),
    }
}

#[test]
fn integer_scales_at_the_ends_of_the_range_match_the_host() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let n = 4096;
    let cases = [
        (DType::U8, vec![255.0, 254.0, 1.0]),
        (DType::I32, vec![-2147483648.0, 2147483647.0, -1.0]),
        (DType::I64, vec![-9223372036854775808.0, 9007199254740992.0, -1.0]),
    ];
    for dev in devices() {
        for (dtype, factors) in &cases {
            let x: Vec<i128> = match dtype {
                DType::U8 => (0..n).map(|_| i128::from(r.random::<u8>())).collect(),
                DType::I32 => (0..n).map(|_| i128::from(r.random::<i32>())).collect(),
                _ => (0..n).map(|_| i128::from(r.random::<i64>())).collect(),
            };
            let t = match dtype {
                DType::I64 => Tensor::from_vec(x.iter().map(|&v| v as i64).collect(), [n], dev).unwrap(),
                _ => tensor(*dtype, &x.iter().map(|&v| v as f64).collect::<Vec<_>>(), [n], dev),
            };
            for &f in factors {
                for s in [Scale::Mul(f), Scale::Div(f)] {
                    let got = ints(&t.scale(s).unwrap());
                    let want: Vec<i128> = x.iter().map(|&v| scale_exact(*dtype, s, v)).collect();
                    let bad = (0..n).filter(|&i| got[i] != want[i]).count();
                    assert_eq!(bad, 0, "{dev} {dtype} {s:?}: {bad} of {n} wrong (seed {seed})");
                }
            }
        }
    }
}
