//! Sizes at the edge of what fits: every size, count and byte computation reachable from the
//! public API is checked, so a shape, reshape, concat, gather, plan or split whose size passes
//! `usize` (or `isize::MAX` bytes) is `Error::TooLarge`, never a panic or a wrapped size.

use collectives::{CollectiveKind, DType, Device, DeviceGroup, Error, Tensor};
use collectives_tests::{tensor, values};

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
