//! Helpers shared by the CUDA integration tests: which CUDA devices to test (or why they skip),
//! exact comparison with the CPU backend, and special values.

#![allow(dead_code)] // each test binary uses its own subset

use collectives::{BinaryOp, DType, Device, DeviceKind, Element, Tensor};
use collectives_tests::{cuda_required, with_type};

/// The CUDA devices to test. None: prints why the test skipped, or panics under `REQUIRE_CUDA=1`.
///
/// `COLLECTIVES_TEST_CUDA_AS_CPU=1` substitutes two virtual CPU devices: a dry run of the tests'
/// own logic (references, tolerances) on a machine without a GPU.
pub fn cuda_devices() -> Vec<Device> {
    if std::env::var("COLLECTIVES_TEST_CUDA_AS_CPU").is_ok_and(|v| v == "1") {
        return vec![Device::Cpu(5), Device::Cpu(6)];
    }
    let devs: Vec<Device> =
        collectives::available_devices().into_iter().filter(|d| d.kind() == DeviceKind::Cuda).collect();
    if devs.is_empty() {
        let probe = Tensor::from_vec(vec![0f32], [1], Device::Cuda(0)).and_then(|t| t.to_vec::<f32>());
        let why = probe.err().map_or_else(|| "none listed".to_string(), |e| e.to_string());
        assert!(!cuda_required(), "REQUIRE_CUDA=1 but no CUDA device: {why}");
        println!("skipped: no CUDA device ({why})");
    }
    devs
}

/// The first two CUDA devices, if there are two.
pub fn two_cuda_devices() -> Option<(Device, Device)> {
    match cuda_devices().as_slice() {
        [a, b, ..] => Some((*a, *b)),
        [_] => {
            println!("skipped: needs two CUDA devices");
            None
        }
        [] => None,
    }
}

/// Whether two elements are the same value: equal with the same sign, or both NaN.
fn same<T: Element>(a: T, b: T) -> bool {
    let (x, y) = (a.to_f64(), b.to_f64());
    (x.is_nan() && y.is_nan()) || (a == b && x.is_sign_negative() == y.is_sign_negative())
}

/// Asserts that `got` (on a CUDA device) equals `cpu` (the same graph on the CPU) exactly.
pub fn same_as_cpu(got: &Tensor, cpu: &Tensor, ctx: &str) {
    assert_eq!(got.dtype(), cpu.dtype(), "{ctx}: dtype");
    with_type!(got.dtype(), T => {
        let (g, c) = (got.to_vec::<T>().expect("realize on CUDA"), cpu.to_vec::<T>().expect("realize on CPU"));
        assert_eq!(g.len(), c.len(), "{ctx}: length");
        let bad: Vec<String> = (0..g.len())
            .filter(|&i| !same(g[i], c[i]))
            .take(5)
            .map(|i| format!("[{i}] cuda {:?} cpu {:?}", g[i], c[i]))
            .collect();
        assert!(bad.is_empty(), "{ctx}: differs from the CPU backend: {}", bad.join("; "));
    })
}

/// Puts special operands at the front of `a` and `b`: NaN, infinities and signed zeros for
/// floats; x / 0 and MIN / -1 for integers.
pub fn specials(dtype: DType, op: BinaryOp, a: &mut [f64], b: &mut [f64]) {
    if dtype.is_float() {
        a[0] = f64::NAN;
        b[1] = f64::NAN;
        a[2] = f64::INFINITY;
        b[3] = f64::NEG_INFINITY;
        (a[4], b[4]) = (-0.0, 0.0);
        (a[6], b[6]) = (0.0, -0.0);
        return;
    }
    b[0] = 0.0;
    if op == BinaryOp::Div || op == BinaryOp::Mul {
        match dtype {
            DType::I32 => (a[1], b[1]) = (i32::MIN as f64, -1.0),
            DType::I64 => (a[1], b[1]) = (i64::MIN as f64, -1.0),
            _ => {}
        }
    }
}
