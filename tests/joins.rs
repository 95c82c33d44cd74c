//! Concatenations of parts copied from other devices, which the executor writes as joins (each
//! part copied once into its range of the output): host devices everywhere, a Vulkan device
//! where there is one (lavapipe in CI), CUDA devices and pinned host memory where a GPU is
//! present. Every element against the f64 reference.

mod cuda_common;

use collectives::{DType, Device, Tensor};
use collectives_tests::collective::{Shards, all_ops, kind_and_scale, op_tol, range_for, ref_op};
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
    // a Vulkan device too, where there is one, and from the first CUDA device twice (two
    // downloads of one device into one output, the output's fence the later one's).
    let mut sources: Vec<Device> = cuda.clone();
    sources.extend([Device::Cpu(1), Device::Cpu(2)]);
    let vk = vulkan();
    for to in [cuda[0], Device::Cpu(0)] {
        let mut sources = sources.clone();
        if to.is_host() {
            sources.extend(vk);
            sources.push(cuda[0]);
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

/// A part that the join's own device folds for the join alone (a member's own result beside the
/// parts it gathers) is computed as part of the join: on a host device beside a part from
/// another host device, on a Vulkan device beside an uploaded host part (its kernel recorded
/// into the join's submission), on a CUDA device beside an uploaded host part, and in pinned
/// host memory beside a part downloaded from a CUDA device. Every op and dtype (on Vulkan, those
/// it computes in), odd lengths, every element against the f64 reference (the folded part
/// within its op's rounding); the shards unchanged.
#[test]
fn a_part_folded_on_the_joins_device_is_computed_in_its_range() {
    let mut pairs = vec![(Device::Cpu(0), Device::Cpu(1))];
    pairs.extend(vulkan().map(|vk| (vk, Device::Cpu(1))));
    if let Some(&cu) = cuda_devices().first() {
        pairs.extend([(cu, Device::Cpu(1)), (Device::Cpu(0), cu)]);
    }
    for (to, from) in pairs {
        for dtype in DType::ALL.into_iter().filter(|&d| computes_in(to, d)) {
            let seed = fresh_seed();
            let mut r = rng(seed);
            for op in all_ops(dtype, &mut r) {
                for rows in [1, 7, 65537] {
                    let ctx = format!(
                        "into {to} beside a part from {from}, {dtype} {op:?}, {rows} rows, seed {seed}"
                    );
                    let shards = Shards::even(dtype, &[rows], &[to; 3], range_for(op), &mut r);
                    let (kind, scale) = kind_and_scale(op, 3);
                    let folded = Tensor::reduce(&shards.tensors, kind, scale).unwrap();
                    let copied = random(dtype, rows + 3, Range::General, &mut r);
                    let hop = tensor(dtype, &copied, [rows + 3], from).copy_to_device(to).unwrap();
                    let out = Tensor::concat(&[hop, folded], 0).unwrap();
                    let reduced = ref_op(dtype, op, &shards.slices());
                    let tol = op_tol(dtype, op, &shards.slices(), &reduced);
                    let n = copied.len();
                    let want: Vec<f64> = copied.into_iter().chain(reduced).collect();
                    check_all(&values(&out), &want, |i| if i < n { 0.0 } else { tol[i - n] }, &ctx);
                    shards.assert_untouched(&ctx);
                }
            }
        }
    }
}

/// Whether `device` computes in `dtype`: a Vulkan device may lack 64-bit shader types, and must
/// then say so (`Error::Unsupported`, printed as a skip).
fn computes_in(device: Device, dtype: DType) -> bool {
    let t = tensor(dtype, &[1.0, 2.0], [2], device);
    match t.add(&t).and_then(|s| s.realize()) {
        Ok(()) => true,
        Err(collectives::Error::Unsupported { reason, .. })
            if device.kind() == collectives::DeviceKind::Vulkan
                && matches!(dtype, DType::F64 | DType::I64) =>
        {
            println!("skipped {dtype} on {device}: {reason}");
            false
        }
        Err(e) => panic!("{dtype} on {device}: {e}"),
    }
}

/// A Vulkan join's computed parts wherever they fall: from the output's start, a whole-block
/// part, then a host part, then a part off the binding alignment (a scratch buffer copied in);
/// a part of a partial last block that is not the last part (scratch: its spare lanes would
/// spill into the next part); and a partial last part starting on a 4 KiB boundary (in place,
/// its spare lanes in the padding). Sums of three shards, every dtype Vulkan computes in, every
/// element against the f64 reference.
#[test]
fn a_vulkan_join_computes_parts_in_their_ranges_or_through_scratch() {
    let Some(vk) = vulkan() else { return };
    for dtype in DType::ALL.into_iter().filter(|&d| computes_in(vk, d)) {
        let (lanes, page) = (16 / dtype.size(), 4096 / dtype.size());
        // Each layout: parts end to end, `(true, n)` a sum of n elements computed on the device,
        // `(false, n)` n elements copied from the host.
        let layouts: [&[(bool, usize)]; 3] = [
            &[(true, 4 * lanes), (false, 3), (true, 5)],
            &[(true, 7), (false, page - 7), (true, 9)],
            &[(false, page), (true, 65537), (false, 0)],
        ];
        for layout in layouts {
            let seed = fresh_seed();
            let mut r = rng(seed);
            let ctx = format!("{dtype}, layout {layout:?}, seed {seed}");
            let (mut parts, mut want, mut tol, mut all) = (vec![], vec![], vec![], vec![]);
            for &(computed, n) in layout {
                if computed {
                    let sum = collectives::ReduceOp::Sum;
                    let shards = Shards::even(dtype, &[n], &[vk; 3], Range::General, &mut r);
                    parts.push(Tensor::reduce(&shards.tensors, collectives::ReduceKind::Sum, None).unwrap());
                    let reduced = ref_op(dtype, sum, &shards.slices());
                    tol.extend(op_tol(dtype, sum, &shards.slices(), &reduced));
                    want.extend(reduced);
                    all.push(shards);
                } else {
                    let v = random(dtype, n, Range::General, &mut r);
                    parts.push(tensor(dtype, &v, [n], Device::Cpu(1)).copy_to_device(vk).unwrap());
                    tol.extend(std::iter::repeat_n(0.0, n));
                    want.extend(v);
                }
            }
            let out = Tensor::concat(&parts, 0).unwrap();
            check_all(&values(&out), &want, |i| tol[i], &ctx);
            for s in &all {
                s.assert_untouched(&ctx);
            }
        }
    }
}

/// Timing for the GPU machine (run with `--ignored --nocapture`; needs two CUDA devices, two
/// logical ones of one GPU will do): a concat on `cuda:0` of a 2-input reduce computed there and a
/// part copied from `cuda:1`, realized, the median of 30 per size.
#[test]
#[ignore = "a timing probe for the GPU machine"]
fn join_of_a_computed_part_timing_probe() {
    let cuda = cuda_devices();
    let [to, from, ..] = cuda[..] else {
        println!("skipped: needs two CUDA devices (COLLECTIVES_CUDA_DEVICES=0,0 makes them)");
        return;
    };
    time_join_of_a_computed_part(to, from, &[4 << 10, 4 << 20, 64 << 20, 256 << 20]);
}

/// As [`join_of_a_computed_part_timing_probe`], on `vulkan:0` beside a part copied from `cpu:1`
/// (lavapipe too, where sizes stop at 16 MiB).
#[test]
#[ignore = "a timing probe for the GPU machine"]
fn vulkan_join_of_a_computed_part_timing_probe() {
    let Some(vk) = vulkan() else { return };
    time_join_of_a_computed_part(vk, Device::Cpu(1), &[4 << 10, 1 << 20, 16 << 20]);
}

/// Prints the median of 30 realizes of a concat on `to` of a 2-input reduce computed there and a
/// part copied from `from`, each `bytes` of f32s.
fn time_join_of_a_computed_part(to: Device, from: Device, sizes: &[usize]) {
    for &bytes in sizes {
        let n = bytes / 4;
        let on =
            |d: Device, k: f32| Tensor::from_vec((0..n).map(|i| i as f32 * k).collect(), [n], d).unwrap();
        let (a, b, far) = (on(to, 1.0), on(to, 0.5), on(from, 0.25));
        let mut t: Vec<f64> = (0..33)
            .map(|_| {
                let start = std::time::Instant::now();
                let folded =
                    Tensor::reduce(&[a.clone(), b.clone()], collectives::ReduceKind::Sum, None).unwrap();
                let cat = Tensor::concat(&[far.copy_to_device(to).unwrap(), folded], 0).unwrap();
                cat.realize().unwrap();
                start.elapsed().as_secs_f64() * 1e6
            })
            .skip(3)
            .collect();
        t.sort_by(f64::total_cmp);
        println!(
            "probe: {:9.1} us median  concat on {to} of a reduce there and a copy from {from}, {bytes} B each",
            t[15]
        );
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
