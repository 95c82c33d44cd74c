//! The data-movement ops — `Slice` (`narrow`/`slice`), `Concat`, `Reshape` — on every dim of
//! non-power-of-two shapes, for every dtype (element sizes 1, 2, 4 and 8 bytes), with empty and
//! full ranges, uneven concat inputs on several devices, and large tensors that take the kernels'
//! parallel paths. Every element is checked against the same movement done on f64 data.

use collectives::{DType, Device, Op, Tensor};
use collectives_tests::{Range, check_all, fresh_seed, random, ref_concat, ref_slice, rng, tensor, values};
use rand::Rng;

const SHAPES: &[&[usize]] = &[&[7], &[3, 5], &[3, 5, 7], &[2, 3, 1, 5], &[4, 0, 3], &[1]];

/// The ranges tried on a dimension of `size`: empty at both ends, full, prefix, suffix, one
/// element, and a random middle.
fn ranges(size: usize, r: &mut impl Rng) -> Vec<std::ops::Range<usize>> {
    let mut v = vec![0..0, size..size, 0..size];
    if size > 1 {
        v.extend([0..size - 1, 1..size, size / 2..size / 2 + 1]);
        let a = r.random_range(0..size);
        let b = r.random_range(a..=size);
        v.push(a..b);
    }
    v
}

#[test]
fn slice_every_dim_and_range() {
    for dtype in DType::ALL {
        for &dims in SHAPES {
            let seed = fresh_seed();
            let mut r = rng(seed);
            let x = random(dtype, dims.iter().product(), Range::General, &mut r);
            let t = tensor(dtype, &x, dims, Device::Cpu(2));
            for dim in 0..dims.len() {
                for range in ranges(dims[dim], &mut r) {
                    let ctx = format!("{dtype} {dims:?} dim {dim} {range:?} seed {seed}");
                    let want = ref_slice(&x, dims, dim, range.start, range.len());
                    let by_slice = t.slice(dim, range.clone()).unwrap();
                    let by_narrow = t.narrow(dim, range.start, range.len()).unwrap();
                    for out in [&by_slice, &by_narrow] {
                        let mut shape = dims.to_vec();
                        shape[dim] = range.len();
                        assert_eq!(
                            (out.shape().dims(), out.dtype(), out.device()),
                            (&shape[..], dtype, Device::Cpu(2)),
                            "{ctx}"
                        );
                        assert_eq!(out.op(), &Op::Slice { dim, start: range.start, len: range.len() });
                        check_all(&values(out), &want, |_| 0.0, &ctx);
                    }
                }
            }
        }
    }
}

#[test]
fn slices_compose_and_follow_copies() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    let dims = [6, 7, 9];
    let x = random(DType::I64, 6 * 7 * 9, Range::General, &mut r);
    let t = tensor(DType::I64, &x, dims, Device::Cpu(0)).copy_to_device(Device::Cpu(5)).unwrap();
    let s = t.narrow(2, 2, 5).unwrap().narrow(0, 1, 4).unwrap().slice(1, 3..7).unwrap();
    let step1 = ref_slice(&x, &dims, 2, 2, 5);
    let step2 = ref_slice(&step1, &[6, 7, 5], 0, 1, 4);
    let want = ref_slice(&step2, &[4, 7, 5], 1, 3, 4);
    assert_eq!((s.shape().dims(), s.device()), (&[4usize, 4, 5][..], Device::Cpu(5)));
    check_all(&values(&s), &want, |_| 0.0, &format!("seed {seed}"));
}

#[test]
fn large_slices_take_the_parallel_paths() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    // One dimension: a single contiguous range, copied in parallel.
    let n = (1 << 20) + 3;
    let x = random(DType::F32, n, Range::General, &mut r);
    let t = tensor(DType::F32, &x, [n], Device::Cpu(0));
    let (a, b) = (r.random_range(1..1000), n - r.random_range(1..1000));
    check_all(&values(&t.slice(0, a..b).unwrap()), &x[a..b], |_| 0.0, &format!("1-d, seed {seed}"));
    // Many rows: row copies split across threads.
    let dims = [1025, 1023];
    let y = random(DType::U8, 1025 * 1023, Range::General, &mut r);
    let u = tensor(DType::U8, &y, dims, Device::Cpu(1));
    for (dim, start, len) in [(1, 300, 600), (0, 17, 1000), (1, 0, 1023)] {
        let want = ref_slice(&y, &dims, dim, start, len);
        check_all(
            &values(&u.narrow(dim, start, len).unwrap()),
            &want,
            |_| 0.0,
            &format!("dim {dim}, seed {seed}"),
        );
    }
    let z = random(DType::F64, 3 * 100_003, Range::General, &mut r);
    let w = tensor(DType::F64, &z, [3, 100_003], Device::Cpu(1));
    let want = ref_slice(&z, &[3, 100_003], 1, 3, 100_000);
    check_all(&values(&w.narrow(1, 3, 100_000).unwrap()), &want, |_| 0.0, &format!("wide rows, seed {seed}"));
}

#[test]
fn concat_every_dim_with_uneven_inputs() {
    for dtype in DType::ALL {
        for &dims in SHAPES {
            for dim in 0..dims.len() {
                for k in 1..=4 {
                    let seed = fresh_seed();
                    let mut r = rng(seed);
                    // Input j has a random length along `dim` (0 allowed) and lives on cpu:j.
                    let parts: Vec<(Vec<f64>, Vec<usize>)> = (0..k)
                        .map(|_| {
                            let mut d = dims.to_vec();
                            d[dim] = r.random_range(0..=dims[dim] + 2);
                            (random(dtype, d.iter().product(), Range::General, &mut r), d)
                        })
                        .collect();
                    let ts: Vec<Tensor> = parts
                        .iter()
                        .enumerate()
                        .map(|(j, (v, d))| tensor(dtype, v, d.as_slice(), Device::Cpu(j as u32)))
                        .collect();
                    let out = Tensor::concat(&ts, dim).unwrap();
                    let mut shape = dims.to_vec();
                    shape[dim] = parts.iter().map(|(_, d)| d[dim]).sum();
                    let ctx = format!("{dtype} {dims:?} dim {dim} k={k} seed {seed}");
                    assert_eq!(
                        (out.shape().dims(), out.dtype(), out.device()),
                        (&shape[..], dtype, Device::Cpu(0)),
                        "{ctx}"
                    );
                    let refs: Vec<(&[f64], &[usize])> =
                        parts.iter().map(|(v, d)| (v.as_slice(), d.as_slice())).collect();
                    check_all(&values(&out), &ref_concat(&refs, dim), |_| 0.0, &ctx);
                }
            }
        }
    }
}

#[test]
fn large_concats_take_the_parallel_paths() {
    let seed = fresh_seed();
    let mut r = rng(seed);
    // Dim 0 of 1-d tensors: each input is one contiguous block.
    let lens = [(1 << 19) + 1, 3, (1 << 19) - 1];
    let xs: Vec<Vec<f64>> = lens.iter().map(|&n| random(DType::BF16, n, Range::General, &mut r)).collect();
    let ts: Vec<Tensor> = xs
        .iter()
        .enumerate()
        .map(|(j, x)| tensor(DType::BF16, x, [x.len()], Device::Cpu(j as u32)))
        .collect();
    let want: Vec<f64> = xs.concat();
    check_all(&values(&Tensor::concat(&ts, 0).unwrap()), &want, |_| 0.0, &format!("1-d, seed {seed}"));
    // Many rows, uneven widths.
    let parts: Vec<(Vec<f64>, Vec<usize>)> = [300, 1, 723]
        .iter()
        .map(|&w| (random(DType::I32, 1021 * w, Range::General, &mut r), vec![1021, w]))
        .collect();
    let ts: Vec<Tensor> =
        parts.iter().map(|(v, d)| tensor(DType::I32, v, d.as_slice(), Device::Cpu(3))).collect();
    let refs: Vec<(&[f64], &[usize])> = parts.iter().map(|(v, d)| (v.as_slice(), d.as_slice())).collect();
    check_all(
        &values(&Tensor::concat(&ts, 1).unwrap()),
        &ref_concat(&refs, 1),
        |_| 0.0,
        &format!("rows, seed {seed}"),
    );
}

#[test]
fn concat_of_slices_rebuilds_the_tensor() {
    for dtype in [DType::F16, DType::U8, DType::I64] {
        let seed = fresh_seed();
        let mut r = rng(seed);
        let dims = [5, 9, 4];
        let x = random(dtype, 180, Range::General, &mut r);
        let t = tensor(dtype, &x, dims, Device::Cpu(0));
        for (dim, &size) in dims.iter().enumerate() {
            let cut = r.random_range(0..=size);
            let a = t.narrow(dim, 0, cut).unwrap().copy_to_device(Device::Cpu(1)).unwrap();
            let b = t.narrow(dim, cut, size - cut).unwrap();
            let back = Tensor::concat(&[a, b], dim).unwrap();
            assert_eq!(back.device(), Device::Cpu(1));
            check_all(&values(&back), &x, |_| 0.0, &format!("{dtype} dim {dim} cut {cut} seed {seed}"));
        }
    }
}

#[test]
fn reshape_keeps_elements_in_order() {
    for dtype in DType::ALL {
        let seed = fresh_seed();
        let mut r = rng(seed);
        let x = random(dtype, 210, Range::General, &mut r);
        let t = tensor(dtype, &x, [2, 3, 5, 7], Device::Cpu(0));
        let computed = t.scale(collectives::Scale::Mul(1.0)).unwrap();
        for shape in [vec![210], vec![7, 30], vec![5, 6, 7], vec![1, 210, 1], vec![3, 2, 35]] {
            for src in [&t, &computed] {
                let out = src.reshape(shape.clone()).unwrap();
                assert_eq!((out.shape().dims(), out.op()), (&shape[..], &Op::Reshape));
                check_all(&values(&out), &x, |_| 0.0, &format!("{dtype} -> {shape:?} seed {seed}"));
            }
        }
        // A reshape then a slice reads the data with the new shape.
        let s = t.reshape([14, 15]).unwrap().narrow(1, 4, 6).unwrap();
        check_all(&values(&s), &ref_slice(&x, &[14, 15], 1, 4, 6), |_| 0.0, &format!("{dtype} seed {seed}"));
        check_all(&values(&t.flatten().unwrap()), &x, |_| 0.0, &format!("{dtype} flatten seed {seed}"));
    }
    // Rank 0 and empty tensors.
    let one = Tensor::from_vec(vec![42i32], [1, 1], Device::Cpu(0)).unwrap();
    let scalar = one.reshape(Vec::<usize>::new()).unwrap();
    assert_eq!((scalar.shape().rank(), scalar.numel()), (0, 1));
    assert_eq!(scalar.to_vec::<i32>().unwrap(), vec![42]);
    let empty = Tensor::from_vec(Vec::<f32>::new(), [3, 0], Device::Cpu(0)).unwrap();
    assert_eq!(empty.reshape([0, 5, 2]).unwrap().to_vec::<f32>().unwrap(), Vec::<f32>::new());
}
