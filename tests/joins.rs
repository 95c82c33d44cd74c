//! Concatenations of parts copied from other devices, which the executor writes as joins (each
//! part copied once into its range of the output): host devices everywhere, a Vulkan device
//! where there is one (lavapipe in CI), CUDA devices and pinned host memory where a GPU is
//! present. Every element against the f64 reference.

mod cuda_common;

use collectives::{DType, Device, Tensor};
use collectives_tests::*;
use cuda_common::cuda_devices;
use proptest::prelude::*;

/// A random part of `rows` rows of `inner` elements of `dtype` on `device`, with its values.
fn part(
    dtype: DType,
    rows: usize,
    inner: usize,
    device: Device,
    r: &mut rand::rngs::StdRng,
) -> (Tensor, Vec<f64>) {
    let v = random(dtype, rows * inner, Range::General, r);
    (tensor(dtype, &v, [1, rows, inner], device), v)
}

/// Each part copied to `to` unless it is there, joined along dim 1 (contiguous ranges); not
/// realized.
fn joined(parts: &[(Tensor, Vec<f64>)], to: Device) -> Tensor {
    let hopped: Vec<Tensor> = parts
        .iter()
        .map(|(t, _)| if t.device() == to { t.clone() } else { t.copy_to_device(to).unwrap() })
        .collect();
    Tensor::concat_on(to, &hopped, 1).unwrap()
}

/// The parts' values, end to end.
fn want(parts: &[(Tensor, Vec<f64>)]) -> Vec<f64> {
    parts.iter().flat_map(|(_, v)| v.iter().copied()).collect()
}

/// [`joined`], checked against the reference on every element.
fn check_join(parts: &[(Tensor, Vec<f64>)], to: Device, ctx: &str) {
    let out = joined(parts, to);
    assert_eq!(out.device(), to, "{ctx}");
    check_all(&values(&out), &want(parts), |_| 0.0, ctx);
}

#[test]
fn joins_of_copies_between_host_devices_every_dtype() {
    for dtype in DType::ALL {
        for k in 1..=4u32 {
            let seed = fresh_seed();
            let mut r = rng(seed);
            // Part j on cpu:j (cpu:0 is the destination's own part), 0 to 9 rows of 3.
            let parts: Vec<_> = (0..k)
                .map(|j| part(dtype, (seed as usize + j as usize) % 10, 3, Device::Cpu(j), &mut r))
                .collect();
            check_join(&parts, Device::Cpu(0), &format!("{dtype} k={k} seed {seed}"));
            check_join(&parts, Device::Cpu(7), &format!("{dtype} k={k} into cpu:7, seed {seed}"));
        }
    }
}

#[test]
fn a_large_host_join_crosses_the_parallel_copy() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let parts: Vec<_> =
        (0..3).map(|j| part(DType::F32, (3 << 20) + j, 1, Device::Cpu(j as u32 + 1), &mut r)).collect();
    check_join(&parts, Device::Cpu(0), &format!("3 x 12 MiB, seed {seed}"));
}

/// `vulkan:0`, if it works; else prints the skip (a failure under `REQUIRE_VULKAN=1`).
fn vulkan() -> Option<Device> {
    let vk = Device::Vulkan(0);
    match Tensor::from_vec(vec![1u8], [1], vk).and_then(|t| t.to_vec::<u8>()) {
        Ok(v) => {
            assert_eq!(v, [1], "{vk} round trip");
            Some(vk)
        }
        Err(e) => {
            assert!(!vulkan_required(), "REQUIRE_VULKAN=1 but {vk} does not work: {e}");
            println!("skipped: no Vulkan device ({e})");
            None
        }
    }
}

#[test]
fn joins_on_a_vulkan_device_and_from_one_into_host_memory() {
    let Some(vk) = vulkan() else { return };
    let sources = [vk, Device::Cpu(1), Device::Cpu(2)];
    for to in [vk, Device::Cpu(0)] {
        for dtype in DType::ALL {
            // Small tensors live in host memory on a Vulkan device, large ones (from 1 MiB) in
            // device memory: both kinds of part and of output.
            for rows in [1, 7, 65537, (1 << 20) / dtype.size() + 5] {
                let seed = fresh_seed();
                let mut r = rng(seed);
                let mut parts: Vec<_> = sources.iter().map(|&d| part(dtype, rows, 1, d, &mut r)).collect();
                parts.push(part(dtype, 0, 1, Device::Cpu(1), &mut r));
                parts.insert(1, part(dtype, rows + 3, 1, to, &mut r));
                check_join(&parts, to, &format!("into {to}, {dtype}, {rows} rows, seed {seed}"));
            }
        }
    }
}

#[test]
fn joins_on_cuda_devices_and_into_pinned_host_memory() {
    let cuda = cuda_devices();
    if cuda.is_empty() {
        return;
    }
    // From every CUDA device, two host devices, and the destination itself; into the host from
    // a Vulkan device too, where there is one.
    let mut sources: Vec<Device> = cuda.clone();
    sources.extend([Device::Cpu(1), Device::Cpu(2)]);
    let vk = vulkan();
    for to in [cuda[0], Device::Cpu(0)] {
        let mut sources = sources.clone();
        if to.is_host() {
            sources.extend(vk);
        }
        for dtype in DType::ALL {
            for rows in [1, 7, 65537] {
                let seed = fresh_seed();
                let mut r = rng(seed);
                let mut parts: Vec<_> = sources.iter().map(|&d| part(dtype, rows, 1, d, &mut r)).collect();
                parts.insert(1, part(dtype, rows + 3, 1, to, &mut r));
                let ctx = format!("into {to}, {dtype}, {rows} rows, seed {seed}");
                check_join(&parts, to, &ctx);
                // A host join read by a CUDA copy in the same realize: the upload waits for the
                // join's downloads (one fence per CUDA device) on the device.
                if to.is_host() {
                    let back = joined(&parts, to).copy_to_device(cuda[0]).unwrap();
                    check_all(&values(&back), &want(&parts), |_| 0.0, &format!("{ctx}, back to {}", cuda[0]));
                }
            }
        }
        // Parts past the 16 MiB staging chunk, and an empty one.
        let seed = fresh_seed();
        let mut r = rng(seed);
        let mut parts: Vec<_> =
            sources.iter().map(|&d| part(DType::F32, (5 << 20) + 3, 1, d, &mut r)).collect();
        parts.push(part(DType::F32, 0, 1, sources[0], &mut r));
        check_join(&parts, to, &format!("into {to}, 20 MiB parts, seed {seed}"));
    }
}

/// A CUDA device and a host device: from `ALL_GATHER_IN_PLACE_MIN_BYTES` the all_gather is the
/// one-shot (each member joins the other's shard), in either order of members; every element of
/// both results against the shards.
#[test]
fn a_cuda_and_host_all_gather_joins_each_others_shard() {
    let Some(&cuda) = cuda_devices().first() else { return };
    let rows = collectives::collective::ALL_GATHER_IN_PLACE_MIN_BYTES / 4 + 3;
    for devices in [[cuda, Device::Cpu(0)], [Device::Cpu(0), cuda]] {
        let g = collectives::DeviceGroup::new(devices.to_vec()).unwrap();
        let plan = g.plan(collectives::CollectiveKind::AllGather, [rows], DType::F32).unwrap();
        assert_eq!(plan.algorithm, Some(collectives::Algorithm::OneShot), "{plan}");
        let seed = fresh_seed();
        let mut r = rng(seed);
        let shards: Vec<_> = devices.iter().map(|&d| part(DType::F32, rows, 1, d, &mut r)).collect();
        let ts: Vec<Tensor> = shards.iter().map(|(t, _)| t.reshape([rows]).unwrap()).collect();
        let outs = g.all_gather(&ts, 0).unwrap();
        let want: Vec<f64> = shards.iter().flat_map(|(_, v)| v.iter().copied()).collect();
        for (out, d) in outs.iter().zip(devices) {
            assert_eq!(out.device(), d);
            check_all(&values(out), &want, |_| 0.0, &format!("{devices:?} on {d}, seed {seed}"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any number of parts of any length (0 included) from any host device, some already on the
    /// destination: the join is the concatenation.
    #[test]
    fn host_joins_are_concatenations(
        shape in prop::collection::vec((0u32..4, 0usize..40), 1..6),
        inner in 1usize..5,
        dtype in prop::sample::select(DType::ALL.to_vec()),
    ) {
        let seed = fresh_seed();
        let mut r = rng(seed);
        let parts: Vec<_> = shape.iter().map(|&(d, rows)| part(dtype, rows, inner, Device::Cpu(d), &mut r)).collect();
        check_join(&parts, Device::Cpu(3), &format!("{shape:?} x {inner} {dtype}, seed {seed}"));
    }
}
