//! Slice and concat on Vulkan (offsets that are not word-aligned for u8, f16 and bf16), copies
//! CPU → Vulkan → CPU and within Vulkan, and empty tensors through every op.

use collectives::{DType, Device, ReduceKind, Scale, Tensor, available_devices};
use collectives_tests::{Range, check_all, random, ref_concat, ref_slice, rng, tensor, values};

use super::{BIG, SIZES, VK, have_vulkan, seed};

/// A slice: (dim, start, len).
type Cut = (usize, usize, usize);

/// Shapes and the slices taken of each.
fn slices() -> Vec<(Vec<usize>, Vec<Cut>)> {
    let big = BIG;
    vec![
        (vec![1], vec![(0, 0, 1)]),
        (vec![7], vec![(0, 0, 7), (0, 1, 5), (0, 3, 3)]),
        (vec![SIZES[2]], vec![(0, 5, 60_000)]),
        (vec![big], vec![(0, 3, big - 5), (0, big / 2 + 1, big / 4)]),
        (vec![7, 5], vec![(0, 2, 4), (1, 1, 3), (1, 4, 1)]),
        (vec![3, 5, 7], vec![(1, 2, 2), (2, 3, 3)]),
        (vec![4097, 4095], vec![(1, 1, 4093), (0, 5, 1000)]),
    ]
}

/// Concats: the input shapes and the dim.
fn concats() -> Vec<(Vec<Vec<usize>>, usize)> {
    let big = BIG;
    vec![
        (vec![vec![1], vec![1]], 0),
        (vec![vec![7], vec![3], vec![7]], 0),
        (vec![vec![big], vec![7]], 0),
        (vec![vec![7, 5], vec![7, 2], vec![7, 1]], 1),
        (vec![vec![7, 5], vec![2, 5]], 0),
        (vec![vec![3, 5, 7], vec![3, 2, 7]], 1),
        (vec![vec![3, 5, 7], vec![3, 5, 1], vec![3, 5, 2]], 2),
        (vec![vec![4097, 4095], vec![4097, 3]], 1),
    ]
}

#[test]
fn slice_every_dtype() {
    if !have_vulkan() {
        return;
    }
    let seed = seed("slice");
    for dtype in DType::ALL {
        for (shape, cuts) in slices() {
            let n: usize = shape.iter().product();
            let mut r = rng(seed ^ n as u64 ^ (dtype as u64) << 40);
            let x = random(dtype, n, Range::General, &mut r);
            let t = tensor(dtype, &x, shape.as_slice(), VK);
            for (dim, start, len) in cuts {
                let ctx = format!("slice {dtype} {shape:?} dim {dim} {start}+{len}");
                let want = ref_slice(&x, &shape, dim, start, len);
                check_all(&values(&t.narrow(dim, start, len).unwrap()), &want, |_| 0.0, &ctx);
            }
        }
    }
}

#[test]
fn concat_every_dtype() {
    if !have_vulkan() {
        return;
    }
    let seed = seed("concat");
    for dtype in DType::ALL {
        for (shapes, dim) in concats() {
            let mut r = rng(seed ^ shapes.len() as u64 ^ (dtype as u64) << 40);
            let vals: Vec<Vec<f64>> =
                shapes.iter().map(|s| random(dtype, s.iter().product(), Range::General, &mut r)).collect();
            let ts: Vec<Tensor> =
                vals.iter().zip(&shapes).map(|(v, s)| tensor(dtype, v, s.as_slice(), VK)).collect();
            let parts: Vec<(&[f64], &[usize])> =
                vals.iter().zip(&shapes).map(|(v, s)| (v.as_slice(), s.as_slice())).collect();
            let ctx = format!("concat {dtype} {shapes:?} dim {dim}");
            let got = values(&Tensor::concat(&ts, dim).unwrap());
            check_all(&got, &ref_concat(&parts, dim), |_| 0.0, &ctx);
        }
    }
}

#[test]
fn copies_cpu_vulkan_cpu_and_within_vulkan() {
    if !have_vulkan() {
        return;
    }
    let seed = seed("copies");
    let second = available_devices().contains(&Device::Vulkan(1));
    if !second {
        println!("note: one Vulkan device, so Vulkan(0) -> Vulkan(1) is not run");
    }
    for dtype in DType::ALL {
        for &n in &SIZES {
            let x = random(dtype, n, Range::General, &mut rng(seed ^ n as u64 ^ (dtype as u64) << 40));
            let ctx = format!("copies {dtype} n={n}");
            let on_cpu = tensor(dtype, &x, [n], Device::Cpu(1));
            let on_vk = on_cpu.copy_to_device(VK).unwrap();
            let again = on_vk.copy_to_device(VK).unwrap();
            let back = again.copy_to_device(Device::Cpu(2)).unwrap();
            assert_eq!(back.device(), Device::Cpu(2));
            check_all(&values(&back), &x, |_| 0.0, &format!("{ctx}: cpu -> vulkan -> vulkan -> cpu"));
            check_all(&values(&on_vk), &x, |_| 0.0, &format!("{ctx}: vulkan to_vec"));
            if second {
                let other = on_vk.copy_to_device(Device::Vulkan(1)).unwrap();
                check_all(&values(&other), &x, |_| 0.0, &format!("{ctx}: vulkan 0 -> 1"));
            }
        }
    }
}

#[test]
fn empty_tensors_through_every_op() {
    if !have_vulkan() {
        return;
    }
    for dtype in super::dtypes() {
        for shape in [vec![0], vec![3, 0], vec![0, 4]] {
            let e = tensor(dtype, &[], shape.as_slice(), VK);
            let ctx = format!("empty {dtype} {shape:?}");
            let mut outs = vec![
                e.add(&e).unwrap(),
                Tensor::reduce(&[e.clone(), e.clone(), e.clone()], ReduceKind::Sum, Some(Scale::Div(3.0)))
                    .unwrap(),
                e.scale(Scale::Mul(2.0)).unwrap(),
                e.narrow(0, 0, shape[0]).unwrap(),
                Tensor::concat(&[e.clone(), e.clone()], 0).unwrap(),
                e.copy_to_device(VK).unwrap(),
                e.copy_to_device(Device::Cpu(1)).unwrap(),
            ];
            outs.extend(super::dtypes().into_iter().map(|to| e.cast(to).unwrap()));
            for t in &outs {
                assert!(values(t).is_empty(), "{ctx}: {t:?}");
            }
        }
        // An empty input beside a full one.
        let full = tensor(dtype, &[1.0, 2.0, 3.0, 4.0], [1, 4], VK);
        let e = tensor(dtype, &[], [0, 4], VK);
        let cat = Tensor::concat(&[e.clone(), full.clone(), e], 0).unwrap();
        check_all(&values(&cat), &[1.0, 2.0, 3.0, 4.0], |_| 0.0, &format!("concat with empties {dtype}"));
    }
}
