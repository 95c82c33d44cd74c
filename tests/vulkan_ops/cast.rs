//! Casts between every pair of dtypes on Vulkan: random data against the f64 reference, and edge
//! values (saturation, NaN, infinities, rounding ties, integers past 2^24 and 2^53) bit for bit
//! against the CPU backend.

use collectives::{DType, Device, Tensor};
use collectives_tests::{Range, random, ref_cast, rng, round_to, values};

use super::{SIZES, VK, check_op, dtypes, have_vulkan, pair, seed, vs_cpu};

#[test]
fn cast_every_pair_random() {
    if !have_vulkan() {
        return;
    }
    let seed = seed("cast");
    let all = dtypes();
    for &from in &all {
        for &n in &SIZES {
            let mut r = rng(seed ^ n as u64 ^ (from as u64) << 40);
            let mut x = random(from, n, Range::General, &mut r);
            if from.is_float() {
                // Spread floats over [-300, 300] so integer targets truncate and saturate.
                x.iter_mut().for_each(|v| *v = round_to(from, *v * 300.0));
                if n >= 7 {
                    for (v, e) in x.iter_mut().zip([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e10, -0.0]) {
                        *v = round_to(from, e);
                    }
                }
            }
            let (vx, cx) = pair(from, &x, &[n]);
            for &to in &all {
                let ctx = format!("cast {from} -> {to} n={n}");
                let got = vx.cast(to).unwrap();
                let want: Vec<f64> = x.iter().map(|&v| ref_cast(from, to, v)).collect();
                check_op(&got, vs_cpu(n).then(|| cx.cast(to).unwrap()), &want, |_| 0.0, &ctx);
            }
        }
    }
}

/// f32 values at the edges of every conversion.
fn f32_edges() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        0.999,
        -0.999,
        1.5,
        2.5,
        -2.5,
        254.5,
        255.0,
        255.9,
        256.0,
        300.0,
        -1.0,
        -300.0,
        2147483520.0,
        2147483648.0,
        -2147483648.0,
        -2147483904.0,
        9.223372e18,
        -9.223372e18,
        1e20,
        -1e20,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        65504.0,
        65519.99,
        65520.0,
        -65520.0,
        1e-30,
        5.9604645e-8,
        2.9802322e-8,
        3.0e-5,
        6.1e-5,
        1.0000001,
    ];
    // bf16 rounding: ties to even, above-tie, and ties whose low 3 bits `half` drops through f64.
    for b in [0x3f80_8000u32, 0x3f81_8000, 0x3f80_8001, 0x3f80_8004, 0x3f80_7fff, 0x3f80_fff8, 0xbf81_8004] {
        v.push(f32::from_bits(b));
    }
    v
}

/// f64 values at the edges of every conversion, including the double roundings of the CPU path.
fn f64_edges() -> Vec<f64> {
    let p = |e: i32| 2f64.powi(e);
    let mut v: Vec<f64> = f32_edges().into_iter().map(f64::from).collect();
    v.extend([
        1.0 + p(-24),
        1.0 + p(-24) + p(-50),
        1.0 - p(-25),
        1.0 + p(-8) + p(-40),
        1.0 + p(-8) + p(-30),
        1.0 + p(-11) + p(-40),
        1.0 + p(-11) + p(-20),
        1e300,
        -1e300,
        2147483647.5,
        -2147483648.5,
        -2147483649.0,
        p(63),
        -p(63),
        p(63) - 1024.0,
        9.3e18,
        255.5,
        -0.3,
        4.9e-324,
        123456.789,
        -0.1,
    ]);
    v
}

fn i32_edges() -> Vec<i32> {
    let mut v =
        vec![0, 1, -1, 2, 127, 128, 255, 256, -256, 300, 65504, 65519, 65520, -65520, i32::MAX, i32::MIN];
    v.extend([(1 << 24) + 1, (1 << 24) + 3, -((1 << 24) + 1), (1 << 25) + 3, 123_456_789, -987_654_321]);
    // bf16 through f64: 24 significant bits of which `half` keeps 21, turning these into ties.
    v.extend([(1 << 23) + (1 << 15) + 1, (1 << 23) + (3 << 15) + 1, -((1 << 23) + (1 << 15) + 1)]);
    v
}

fn i64_edges() -> Vec<i64> {
    let mut v: Vec<i64> = i32_edges().into_iter().map(i64::from).collect();
    v.extend([
        i64::MAX,
        i64::MIN,
        i64::MAX - 1,
        i64::MIN + 1,
        1 << 53,
        (1 << 53) + 1,
        (1 << 53) + 3,
        -((1 << 53) + 1),
    ]);
    v.extend([
        (1 << 62) + (1 << 38) + 1,
        (1 << 62) + (1 << 38),
        (1 << 40) + (1 << 16) + 1,
        (1 << 40) + (1 << 32) + (1 << 19),
    ]);
    v.extend([
        i64::from(i32::MAX) + 1,
        i64::from(i32::MIN) - 1,
        (1 << 32) + 255,
        -(1 << 32) - 1,
        4_294_967_296 * 3 + 7,
    ]);
    v
}

/// Whether `half::f16::from_f64` rounds through f32 here (it does with F16C; without, it rounds
/// once, truncating the low 32 bits first).
fn rounds_f64_to_f16_through_f32() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    return std::arch::is_x86_feature_detected!("f16c");
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    return false;
}

/// `vals` as a tensor on `device`.
fn typed<T: collectives::Element>(vals: &[T], device: Device) -> Tensor {
    Tensor::from_vec(vals.to_vec(), [vals.len()], device).unwrap()
}

#[test]
fn cast_edge_values_match_cpu_bit_for_bit() {
    if !have_vulkan() {
        return;
    }
    let all = dtypes();
    let f16c = rounds_f64_to_f16_through_f32();
    for &from in &all {
        let src = |d: Device| match from {
            DType::F32 => typed(&f32_edges(), d),
            DType::F64 => typed(&f64_edges(), d),
            DType::F16 => typed(&f32_edges().into_iter().map(half::f16::from_f32).collect::<Vec<_>>(), d),
            DType::BF16 => typed(&f32_edges().into_iter().map(half::bf16::from_f32).collect::<Vec<_>>(), d),
            DType::I32 => typed(&i32_edges(), d),
            DType::I64 => typed(&i64_edges(), d),
            _ => typed(&(0..=255u8).collect::<Vec<_>>(), d),
        };
        let (vx, cx) = (src(VK), src(Device::Cpu(0)));
        for &to in &all {
            if from == DType::F64 && to == DType::F16 && !f16c {
                // half's f64 -> f16 rounds through f32 with F16C and directly without; the kernel
                // matches the F16C path (every x86-64 machine this runs on has it).
                println!("skipped f64 -> f16 edges: the CPU reference here does not round through f32");
                continue;
            }
            let (got, cpu) = (vx.cast(to).unwrap(), cx.cast(to).unwrap());
            // The CPU result is the reference here (the f64 carrier cannot hold every i64 edge).
            let want = values(&cpu);
            check_op(&got, Some(cpu), &want, |_| 0.0, &format!("cast edges {from} -> {to}"));
        }
    }
}
