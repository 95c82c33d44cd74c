//! Bad input: each is a typed `Error` (compared whole, fields and all), nothing panics, and the
//! inputs are untouched afterwards — the same values, realized or not as before.

use collectives::{DType, Device, Error, ReduceKind, Scale, Shape, Tensor, parse_devices, realize};
use collectives_tests::{Range, check_all, fresh_seed, random, rng, tensor, values};

/// A tensor and what it must still be after a failed call: its values and whether it was
/// realized (a failed call must neither compute nor cache it).
struct Kept {
    t: Tensor,
    vals: Vec<f64>,
    realized: bool,
}

impl Kept {
    /// An input on `device` holding fresh random values of `dtype`.
    fn input(dtype: DType, shape: &[usize], device: Device, seed: u64) -> Kept {
        let vals = random(dtype, shape.iter().product(), Range::General, &mut rng(seed));
        let t = tensor(dtype, &vals, shape, device);
        Kept { realized: t.is_realized(), t, vals }
    }

    /// A computed, unrealized tensor: `self` doubled (exact in every dtype for General data
    /// except u8, which wraps as the reference does).
    fn doubled(&self) -> Kept {
        let dtype = self.t.dtype();
        let vals =
            self.vals.iter().map(|&v| collectives_tests::ref_scale(dtype, Scale::Mul(2.0), v)).collect();
        let t = self.t.scale(Scale::Mul(2.0)).unwrap();
        Kept { realized: false, t, vals }
    }

    fn check(&self, ctx: &str) {
        assert_eq!(self.t.is_realized(), self.realized, "{ctx}: realized state changed");
        check_all(&values(&self.t), &self.vals, |_| 0.0, ctx);
    }
}

#[test]
fn shape_mismatch() {
    let seed = fresh_seed();
    let a = Kept::input(DType::F32, &[2, 3], Device::Cpu(0), seed);
    let b = Kept::input(DType::F32, &[3, 2], Device::Cpu(1), seed ^ 1);
    let c = a.doubled();
    let want = |op| Error::ShapeMismatch { op, expected: Shape::from([2, 3]), got: Shape::from([3, 2]) };
    assert_eq!(a.t.add(&b.t).unwrap_err(), want("binary"));
    assert_eq!(c.t.maximum(&b.t).unwrap_err(), want("binary"));
    let e = Tensor::reduce(&[a.t.clone(), c.t.clone(), b.t.clone()], ReduceKind::Sum, None).unwrap_err();
    assert_eq!(e, want("reduce"));
    assert_eq!(
        e.to_string(),
        "reduce: shape mismatch: expected [2, 3], got [3, 2] (reshape, slice or concat one side to match)"
    );
    for k in [&a, &b, &c] {
        k.check(&format!("seed {seed}"));
    }
}

#[test]
fn dtype_mismatch() {
    let seed = fresh_seed();
    let a = Kept::input(DType::F32, &[4], Device::Cpu(0), seed);
    let b = Kept::input(DType::BF16, &[4], Device::Cpu(0), seed ^ 1);
    let c = Kept::input(DType::I32, &[5], Device::Cpu(2), seed ^ 2);
    let want = |op, got| Error::DTypeMismatch { op, expected: DType::F32, got };
    assert_eq!(a.t.sub(&b.t).unwrap_err(), want("binary", DType::BF16));
    assert_eq!(a.t.mul(&c.t).unwrap_err(), want("binary", DType::I32), "dtype is checked before shape");
    let e = Tensor::reduce(&[a.t.clone(), b.t.clone()], ReduceKind::Max, None).unwrap_err();
    assert_eq!(e, want("reduce", DType::BF16));
    assert!(e.to_string().contains("Tensor::cast"), "the message names the fix: {e}");
    assert_eq!(Tensor::concat(&[a.t.clone(), c.t.clone()], 0).unwrap_err(), want("concat", DType::I32));
    for k in [&a, &b, &c] {
        k.check(&format!("seed {seed}"));
    }
}

#[test]
fn data_length_differs_from_shape() {
    let cases: [(usize, &[usize]); 5] = [(5, &[2, 3]), (7, &[2, 3]), (0, &[1]), (0, &[]), (2, &[])];
    for (len, dims) in cases {
        let data: Vec<f32> = (0..len).map(|i| i as f32).collect();
        let shape = Shape::from(dims);
        let want = Error::DataLength { expected: shape.numel(), got: len, shape: shape.clone() };
        assert_eq!(Tensor::from_vec(data.clone(), dims, Device::Cpu(0)).unwrap_err(), want);
        assert_eq!(
            Tensor::from_slice(&data, dims, Device::Cuda(0)).unwrap_err(),
            want,
            "checked without the device"
        );
    }
    let e = Tensor::from_vec(vec![1u8; 5], [2, 3], Device::Cpu(0)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "from_vec: data has 5 elements but shape [2, 3] holds 6; pass 6 elements or a shape of 5"
    );
}

#[test]
fn slice_out_of_range() {
    let seed = fresh_seed();
    let a = Kept::input(DType::I64, &[3, 5], Device::Cpu(1), seed);
    let c = a.doubled();
    for t in [&a.t, &c.t] {
        let oor = |dim, start, end, size| Error::SliceOutOfRange { dim, start, end, size };
        assert_eq!(t.narrow(1, 3, 3).unwrap_err(), oor(1, 3, 6, 5));
        assert_eq!(t.narrow(0, 4, 0).unwrap_err(), oor(0, 4, 4, 3), "an empty range past the end");
        assert_eq!(t.narrow(1, usize::MAX, 2).unwrap_err(), oor(1, usize::MAX, usize::MAX, 5), "no overflow");
        assert_eq!(t.slice(0, 2..4).unwrap_err(), oor(0, 2, 4, 3));
        assert_eq!(
            t.slice(1, std::ops::Range { start: 4, end: 2 }).unwrap_err(),
            oor(1, 4, 2, 5),
            "a reversed range"
        );
        assert_eq!(t.narrow(2, 0, 1).unwrap_err(), Error::DimOutOfRange { op: "narrow", dim: 2, rank: 2 });
        assert_eq!(t.slice(7, 0..1).unwrap_err(), Error::DimOutOfRange { op: "narrow", dim: 7, rank: 2 });
    }
    let e = a.t.narrow(1, 3, 3).unwrap_err();
    assert_eq!(e.to_string(), "slice: range 3..6 is out of bounds for dim 1 of size 5");
    a.check(&format!("seed {seed}"));
    c.check(&format!("seed {seed}"));
}

#[test]
fn concat_of_mismatched_shapes() {
    let seed = fresh_seed();
    let a = Kept::input(DType::F16, &[2, 3, 4], Device::Cpu(0), seed);
    let b = Kept::input(DType::F16, &[2, 5, 4], Device::Cpu(1), seed ^ 1);
    let r = Kept::input(DType::F16, &[2, 3], Device::Cpu(0), seed ^ 2);
    let mismatch = |dim, index, got: &[usize]| Error::ConcatMismatch {
        dim,
        index,
        expected: Shape::from([2, 3, 4]),
        got: Shape::from(got),
    };
    // Along dim 1 they fit; along 0 and 2 they differ in dim 1.
    assert!(Tensor::concat(&[a.t.clone(), b.t.clone()], 1).is_ok());
    assert_eq!(Tensor::concat(&[a.t.clone(), b.t.clone()], 0).unwrap_err(), mismatch(0, 1, &[2, 5, 4]));
    let three = [a.t.clone(), a.t.clone(), b.t.clone()];
    assert_eq!(Tensor::concat(&three, 2).unwrap_err(), mismatch(2, 2, &[2, 5, 4]), "names the bad input");
    assert_eq!(
        Tensor::concat(&[a.t.clone(), r.t.clone()], 1).unwrap_err(),
        mismatch(1, 1, &[2, 3]),
        "rank differs"
    );
    assert_eq!(
        Tensor::concat(std::slice::from_ref(&a.t), 3).unwrap_err(),
        Error::DimOutOfRange { op: "concat", dim: 3, rank: 3 }
    );
    assert_eq!(Tensor::concat(&[], 0).unwrap_err(), Error::NoInputs { op: "concat" });
    for k in [&a, &b, &r] {
        k.check(&format!("seed {seed}"));
    }
}

#[test]
fn cross_vendor_copy_is_rejected_with_the_fix() {
    let seed = fresh_seed();
    let host = Kept::input(DType::F32, &[8], Device::Cpu(0), seed);
    let on_cuda = host.t.copy_to_device(Device::Cuda(0)).unwrap();
    let on_vulkan = host.t.copy_to_device(Device::Vulkan(1)).unwrap();
    let cv = |from, to| Error::CrossVendorCopy { from, to };
    assert_eq!(
        on_cuda.copy_to_device(Device::Vulkan(1)).unwrap_err(),
        cv(Device::Cuda(0), Device::Vulkan(1))
    );
    assert_eq!(
        on_vulkan.copy_to_device(Device::Cuda(2)).unwrap_err(),
        cv(Device::Vulkan(1), Device::Cuda(2))
    );
    assert_eq!(
        on_cuda.clone().move_to_device(Device::Vulkan(0)).unwrap_err(),
        cv(Device::Cuda(0), Device::Vulkan(0))
    );
    let direct = Tensor::from_vec(vec![1i32; 3], [3], Device::Vulkan(0)).unwrap();
    assert_eq!(direct.move_to_device(Device::Cuda(0)).unwrap_err(), cv(Device::Vulkan(0), Device::Cuda(0)));
    let msg = on_cuda.copy_to_device(Device::Vulkan(1)).unwrap_err().to_string();
    assert!(
        msg.contains("copy_to_device(Device::Cpu(0))") && msg.contains("vulkan:1"),
        "the message names the fix: {msg}"
    );
    // The staged route the message names is accepted.
    let staged = on_cuda.copy_to_device(Device::Cpu(0)).unwrap().copy_to_device(Device::Vulkan(1)).unwrap();
    assert_eq!(staged.device(), Device::Vulkan(1));
    assert!(!on_cuda.is_realized() && !on_vulkan.is_realized());
    host.check(&format!("seed {seed}"));
}

#[test]
fn unknown_device_and_dtype_strings() {
    for s in [
        "tpu:0",
        "cuda:",
        "cuda:-1",
        "cuda:x",
        "vulkan:1:2",
        "",
        " ",
        "cpu:0x1",
        "cuda:99999999999",
        "gpu",
        ":0",
    ] {
        assert_eq!(s.parse::<Device>().unwrap_err(), Error::UnknownDevice(s.to_string()), "{s:?}");
    }
    let e = "tpu:0".parse::<Device>().unwrap_err().to_string();
    assert!(e.contains("\"tpu:0\"") && e.contains("cuda:0"), "{e}");
    assert_eq!(parse_devices("cpu:0,npu:1").unwrap_err(), Error::UnknownDevice("npu:1".into()));
    for s in ["f8", "float128", "", "i16", "bf32"] {
        assert_eq!(s.parse::<DType>().unwrap_err(), Error::UnknownDType(s.to_string()), "{s:?}");
    }
}

#[test]
fn to_vec_with_the_wrong_element_type() {
    let seed = fresh_seed();
    let a = Kept::input(DType::BF16, &[3, 3], Device::Cpu(0), seed);
    let c = a.doubled();
    let want = |requested| Error::ElementType { actual: DType::BF16, requested, rust: "half::bf16" };
    assert_eq!(a.t.to_vec::<f32>().unwrap_err(), want(DType::F32));
    assert_eq!(a.t.to_vec::<half::f16>().unwrap_err(), want(DType::F16));
    assert_eq!(c.t.to_vec::<u8>().unwrap_err(), want(DType::U8));
    assert!(!c.t.is_realized(), "checked before anything runs");
    let msg = c.t.to_vec::<i64>().unwrap_err().to_string();
    assert!(msg.contains("to_vec::<half::bf16>()"), "{msg}");
    let i = Tensor::from_vec(vec![1i64], [1], Device::Cpu(0)).unwrap();
    let e = i.to_vec::<i32>().unwrap_err();
    assert_eq!(e, Error::ElementType { actual: DType::I64, requested: DType::I32, rust: "i64" });
    a.check(&format!("seed {seed}"));
    c.check(&format!("seed {seed}"));
}

#[test]
fn non_integer_scale_on_an_integer_dtype() {
    let seed = fresh_seed();
    for dtype in [DType::I32, DType::I64, DType::U8] {
        let a = Kept::input(dtype, &[6], Device::Cpu(0), seed);
        for f in [0.5, -2.25, 1e-9, f64::NAN, f64::INFINITY] {
            let want = |op| Error::NonIntegerScale { op, factor: f, dtype };
            let e = a.t.scale(Scale::Mul(f)).unwrap_err();
            // NaN != NaN: compare the fields that can be compared.
            match (&e, f.is_nan()) {
                (Error::NonIntegerScale { op: "scale", factor, dtype: d }, true) => {
                    assert!(factor.is_nan() && *d == dtype)
                }
                _ => assert_eq!(e, want("scale")),
            }
            if !f.is_nan() {
                assert_eq!(a.t.scale(Scale::Div(f)).unwrap_err(), want("scale"));
                let r = Tensor::reduce(&[a.t.clone(), a.t.clone()], ReduceKind::Sum, Some(Scale::Div(f)));
                assert_eq!(r.unwrap_err(), want("reduce"));
            }
        }
        let zero = a.t.scale(Scale::Div(0.0)).unwrap_err();
        assert!(matches!(zero, Error::InvalidArgument { what: "scale", .. }), "{zero:?}");
        let zero =
            Tensor::reduce(std::slice::from_ref(&a.t), ReduceKind::Sum, Some(Scale::Div(0.0))).unwrap_err();
        assert!(matches!(zero, Error::InvalidArgument { what: "reduce", .. }), "{zero:?}");
        a.check(&format!("{dtype} seed {seed}"));
    }
    let msg = Tensor::from_vec(vec![1i32], [1], Device::Cpu(0))
        .unwrap()
        .scale(Scale::Mul(0.5))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("cast to a float dtype"), "{msg}");
    // Floats take any factor.
    let f = Tensor::from_vec(vec![1.0f32], [1], Device::Cpu(0)).unwrap();
    assert!(f.scale(Scale::Mul(0.5)).is_ok() && f.scale(Scale::Div(0.0)).is_ok());
}

#[test]
fn reshape_and_empty_reduce() {
    let seed = fresh_seed();
    let a = Kept::input(DType::U8, &[4, 6], Device::Cpu(0), seed);
    let e = a.t.reshape([5, 5]).unwrap_err();
    let want = Error::ReshapeMismatch {
        from: Shape::from([4, 6]),
        from_numel: 24,
        to: Shape::from([5, 5]),
        to_numel: 25,
    };
    assert_eq!(e, want);
    assert_eq!(Tensor::reduce(&[], ReduceKind::Sum, None).unwrap_err(), Error::NoInputs { op: "reduce" });
    a.check(&format!("seed {seed}"));
}

/// Realizing on a device this machine does not have is an error (not a panic) that caches
/// nothing, neither for the failing target nor for the others of the same realize, and leaves
/// the inputs as they were; the graph still realizes once the bad target is left out.
#[test]
fn realize_on_an_absent_device_fails_cleanly() {
    let seed = fresh_seed();
    let a = Kept::input(DType::F32, &[5], Device::Cpu(0), seed);
    let b = Kept::input(DType::F32, &[5], Device::Cpu(1), seed ^ 1);
    let local = a.t.add(&b.t).unwrap();
    for absent in [Device::Cuda(999), Device::Vulkan(999)] {
        let remote = a.t.copy_to_device(absent).unwrap().mul(&b.t).unwrap();
        let e = realize(&[local.clone(), remote.clone()]).unwrap_err();
        let named = matches!(&e, Error::DeviceUnavailable { device, .. } | Error::BackendNotBuilt { device, .. } if *device == absent);
        assert!(named, "{absent}: {e:?}");
        assert!(!local.is_realized() && !remote.is_realized(), "{absent}: a failed realize caches nothing");
        assert!(remote.to_vec::<f32>().is_err());
        let uploaded = Tensor::from_vec(vec![1.0f32; 5], [5], absent).unwrap();
        assert!(uploaded.to_vec::<f32>().is_err());
        a.check(&format!("{absent} seed {seed}"));
        b.check(&format!("{absent} seed {seed}"));
    }
    let want: Vec<f64> = a.vals.iter().zip(&b.vals).map(|(x, y)| (x + y) as f32 as f64).collect();
    check_all(&values(&local), &want, |_| 0.0, &format!("seed {seed}"));
}
