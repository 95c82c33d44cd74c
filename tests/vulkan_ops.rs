//! Every Vulkan kernel × every dtype on `Device::Vulkan(0)`, through the public `Tensor` API:
//! results are checked element by element against the f64 references of `collectives_tests`
//! and bit for bit against the CPU backend (division included: the kernels round it as IEEE
//! does, `division` checks 2^20 pairs per float dtype against the host's `/`).
//!
//! Sizes 1, 7, 70001 and, with the `slow` feature, 65535×256+1 (more workgroups than one
//! dispatch dimension holds); `big` (also `slow`) adds f32 and u8 tensors over 128 MiB (more
//! than one storage-buffer binding of lavapipe holds).
//!
//! Kernels moving fewer than `VULKAN_HOST_KERNEL_BYTES` are run by the host by default (the
//! CPU backend's kernels on the mapped memory), so the small sizes test that path; `.ci/run`
//! runs the kernel tests again with `COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=0`, every kernel on
//! the device, for the shaders at those sizes ([`sizes`]).
//!
//! Without a Vulkan device every test prints `skipped: no Vulkan device (...)` and passes, unless
//! `REQUIRE_VULKAN=1` (set by `.ci/run`), which makes it fail.

#[path = "vulkan_ops/big.rs"]
mod big;
#[path = "vulkan_ops/cast.rs"]
mod cast;
#[path = "vulkan_ops/copy.rs"]
mod copy;
#[path = "vulkan_ops/division.rs"]
mod division;
#[path = "vulkan_ops/elementwise.rs"]
mod elementwise;
#[path = "vulkan_ops/views.rs"]
mod views;

use collectives::{DType, Device, Error, Tensor};
use collectives_tests::{check_all, fresh_seed, tensor, values, vulkan_required};

/// The device under test.
pub const VK: Device = Device::Vulkan(0);

/// The sizes every op runs at: 1, 7, one of several workgroups, and (with the `slow` feature:
/// minutes on lavapipe) one of more workgroups than one dispatch dimension holds (65535).
#[cfg(feature = "slow")]
pub const SIZES: [usize; 4] = [1, 7, 70_001, 65535 * 256 + 1];
/// The sizes every op runs at: 1, 7 and one of several workgroups; the `slow` feature adds one of
/// more workgroups than one dispatch dimension holds (65535).
#[cfg(not(feature = "slow"))]
pub const SIZES: [usize; 3] = [1, 7, 70_001];

/// The largest of [`SIZES`].
pub const BIG: usize = SIZES[SIZES.len() - 1];

/// The sizes the kernel tests run at: [`SIZES`], less the slow one where every kernel runs on the
/// device (`COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=0`: `.ci/run`'s second run of these tests, for
/// the small sizes, whose kernels the host runs by default; the slow size is the device's in both
/// runs).
pub fn sizes() -> &'static [usize] {
    let device_only = std::env::var(collectives::VULKAN_HOST_KERNEL_ENV).is_ok_and(|v| v.trim() == "0");
    if device_only { &SIZES[..3] } else { &SIZES }
}

/// Whether `VK` works. If not: panics under `REQUIRE_VULKAN=1`, else prints the skip.
pub fn have_vulkan() -> bool {
    let probe = Tensor::from_vec(vec![1u8], [1], VK).and_then(|t| t.to_vec::<u8>());
    match probe {
        Ok(v) if v == [1] => true,
        Ok(v) => panic!("{VK} returned {v:?} for [1]"),
        Err(e) if vulkan_required() => panic!("REQUIRE_VULKAN=1 but {VK} does not work: {e}"),
        Err(e) => {
            println!("skipped: no Vulkan device ({e})");
            false
        }
    }
}

/// The dtypes `VK` computes in: all but f64/i64 on devices lacking shaderFloat64/shaderInt64
/// (which must answer with `Error::Unsupported` naming the feature; those are skipped, said so).
pub fn dtypes() -> Vec<DType> {
    let mut out = Vec::new();
    for d in DType::ALL {
        let t = tensor(d, &[1.0, 2.0], [2], VK);
        match t.add(&t).and_then(|s| s.realize()) {
            Ok(()) => out.push(d),
            Err(Error::Unsupported { reason, .. }) if matches!(d, DType::F64 | DType::I64) => {
                assert!(reason.contains("shader"), "{reason}");
                println!("skipped {d} ops: {reason}");
            }
            Err(e) => panic!("{d} on {VK}: {e}"),
        }
    }
    out
}

/// A seed for one test, printed so a failure can be replayed.
pub fn seed(test: &str) -> u64 {
    let s = fresh_seed();
    println!("{test}: seed {s}");
    s
}

/// The same values as a tensor on `VK` and on `Cpu(0)`.
pub fn pair(dtype: DType, vals: &[f64], shape: &[usize]) -> (Tensor, Tensor) {
    (tensor(dtype, vals, shape, VK), tensor(dtype, vals, shape, Device::Cpu(0)))
}

/// Whether results of `n` elements are also compared with the CPU backend's. The exact
/// comparison runs on the small sizes and the edge values; the largest size (which adds pieces
/// and 2D dispatch, not arithmetic) is checked against the f64 reference only, to bound runtime.
pub fn vs_cpu(n: usize) -> bool {
    n <= 100_000
}

/// Checks `vk` element by element against the f64 reference `want` (within `tol(i)`) and, if
/// given, bit for bit against `cpu`, the same graph on the CPU backend (NaN payloads aside; signed
/// zeros count; division included: both round it as IEEE does).
pub fn check_op(vk: &Tensor, cpu: Option<Tensor>, want: &[f64], tol: impl Fn(usize) -> f64, context: &str) {
    let got = values(vk);
    check_all(&got, want, tol, context);
    let Some(cpu) = cpu else { return };
    let theirs = values(&cpu);
    let context = format!("{context} (vs cpu)");
    if vk.dtype() == DType::I64 {
        // f64 does not hold every i64: compare the integers themselves.
        let (g, w) = (vk.to_vec::<i64>().unwrap(), cpu.to_vec::<i64>().unwrap());
        let bad: Vec<usize> = (0..g.len()).filter(|&i| g[i] != w[i]).take(5).collect();
        assert!(
            bad.is_empty(),
            "{context}: first differences at {bad:?}: {:?} vs {:?}",
            bad.iter().map(|&i| g[i]).collect::<Vec<_>>(),
            bad.iter().map(|&i| w[i]).collect::<Vec<_>>()
        );
        return;
    }
    let key = |v: f64| if v.is_nan() { u64::MAX } else { v.to_bits() };
    let bad: Vec<usize> = (0..got.len()).filter(|&i| key(got[i]) != key(theirs[i])).collect();
    if !bad.is_empty() {
        let show: Vec<String> =
            bad.iter().take(5).map(|&i| format!("[{i}] vulkan {:e} cpu {:e}", got[i], theirs[i])).collect();
        panic!("{context}: {} of {} elements differ: {}", bad.len(), got.len(), show.join("; "));
    }
}
