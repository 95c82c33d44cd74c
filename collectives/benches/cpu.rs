//! CPU backend benchmarks, through the public API: the n-ary reduce kernel (`Tensor::reduce` then
//! realize, on pre-realized inputs), a CPU→CPU copy (`copy_to_device(Cpu(1))`, also at 4 KiB,
//! where its fixed cost shows), against plain `memcpy` (`copy_from_slice`) of the same bytes into
//! a pre-allocated, pre-touched buffer, and a contiguous `narrow` (a view since views), and a
//! concat of a reduce beside a copied part (a join computing the reduce into its range).
//!
//! Run with `cargo bench -p collectives --bench cpu`; results and their reading are in
//! `bench/cpu.md`. Every throughput is memory traffic — bytes read plus bytes written per
//! iteration: `2 × size` for a copy, `(k + 1) × size` for a k-input reduce — so the figures of
//! all benchmarks compare directly with memcpy's.
//!
//! Two extra memcpy variants locate the cost of our copy: `memcpy_fresh` copies into a buffer
//! allocated (zeroed, so its pages fault in on first write) each iteration, as a realize does;
//! `memcpy_parallel` splits a pre-touched copy across the rayon pool, as the CPU backend does.

use std::hint::black_box;
use std::time::Duration;

use collectives::{Device, Element, ReduceKind, Tensor};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use half::bf16;
use rayon::prelude::*;

const MIB: usize = 1 << 20;
const SIZES: [usize; 3] = [MIB, 16 * MIB, 64 * MIB];
/// The copy's small size, where a call's fixed cost shows.
const SMALL: usize = 4096;

fn label(bytes: usize) -> String {
    match bytes {
        b if b < MIB => format!("{}KiB", b / 1024),
        b => format!("{}MiB", b / MIB),
    }
}

fn configure(g: &mut BenchmarkGroup<'_, WallTime>) {
    g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
}

/// A realized tensor of `bytes` bytes on `device`, element `i` being `f(i)`.
fn input<T: Element>(bytes: usize, device: Device, f: impl Fn(usize) -> T) -> Tensor {
    let n = bytes / size_of::<T>();
    let t = Tensor::from_vec((0..n).map(f).collect(), [n], device).unwrap();
    assert!(t.is_realized());
    t
}

fn reduce(c: &mut Criterion) {
    let mut g = c.benchmark_group("reduce_sum");
    configure(&mut g);
    for bytes in SIZES {
        for k in [2, 4, 8] {
            for dtype in ["f32", "bf16"] {
                let inputs: Vec<Tensor> = (0..k)
                    .map(|j| match dtype {
                        "f32" => input(bytes, Device::Cpu(0), |i| ((i + j) % 1000) as f32 * 0.25),
                        _ => input(bytes, Device::Cpu(0), |i| bf16::from_f32(((i + j) % 100) as f32 * 0.25)),
                    })
                    .collect();
                g.throughput(Throughput::Bytes(((k + 1) * bytes) as u64));
                let id = BenchmarkId::new(format!("{dtype}/k{k}"), label(bytes));
                g.bench_with_input(id, &inputs, |b, inputs| {
                    b.iter(|| {
                        let t = Tensor::reduce(inputs, ReduceKind::Sum, None).unwrap();
                        t.realize().unwrap();
                        black_box(t)
                    })
                });
            }
        }
    }
    g.finish();
}

fn copy(c: &mut Criterion) {
    let mut g = c.benchmark_group("copy");
    configure(&mut g);
    for bytes in [SMALL].into_iter().chain(SIZES) {
        g.throughput(Throughput::Bytes(2 * bytes as u64));
        let x = input(bytes, Device::Cpu(0), |i| i as u8);
        g.bench_with_input(BenchmarkId::new("copy_to_device", label(bytes)), &x, |b, x| {
            b.iter(|| {
                let t = x.copy_to_device(Device::Cpu(1)).unwrap();
                t.realize().unwrap();
                black_box(t)
            })
        });
        let src: Vec<u8> = (0..bytes).map(|i| i as u8).collect();
        let mut dst = vec![1u8; bytes]; // written once, so every page is mapped
        g.bench_function(BenchmarkId::new("memcpy", label(bytes)), |b| {
            b.iter(|| {
                dst.copy_from_slice(black_box(&src));
                black_box(&mut dst);
            })
        });
        g.bench_function(BenchmarkId::new("memcpy_fresh", label(bytes)), |b| {
            b.iter(|| {
                let mut fresh = vec![0u8; bytes];
                fresh.copy_from_slice(black_box(&src));
                black_box(fresh)
            })
        });
        g.bench_function(BenchmarkId::new("memcpy_parallel", label(bytes)), |b| {
            b.iter(|| {
                dst.par_chunks_mut(MIB / 2)
                    .zip(src.par_chunks(MIB / 2))
                    .for_each(|(d, s)| d.copy_from_slice(s));
                black_box(&mut dst);
            })
        });
    }
    g.finish();
}

/// `narrow` of a realized host tensor of `size` bytes (`[rows, 1024]` f32) to its first half of
/// rows, realized: one contiguous range of the source, so a view (no bytes moved); throughput is
/// counted as the copy it was before views, `2 × size / 2`.
fn narrow(c: &mut Criterion) {
    let mut g = c.benchmark_group("narrow");
    configure(&mut g);
    for bytes in SIZES {
        let rows = bytes / 4 / 1024;
        let x = input(bytes, Device::Cpu(0), |i| i as f32).reshape([rows, 1024]).unwrap();
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_with_input(BenchmarkId::new("rows_half", label(bytes)), &x, |b, x| {
            b.iter(|| {
                let t = x.narrow(0, 0, rows / 2).unwrap();
                t.realize().unwrap();
                black_box(t)
            })
        });
    }
    g.finish();
}

/// A concat on `cpu:1` of a 2-input reduce computed there and a part copied from `cpu:0`, both of
/// `size` bytes, realized: a join, which places the copied part and computes the reduce straight
/// into its range (before, the reduce wrote a buffer of its own, which the join then copied).
/// Throughput counts the reduce's traffic and the copy's, `3 × size + 2 × size`.
fn join(c: &mut Criterion) {
    let mut g = c.benchmark_group("join");
    configure(&mut g);
    for bytes in SIZES {
        let (a, b) =
            (input(bytes, Device::Cpu(1), |i| i as f32), input(bytes, Device::Cpu(1), |i| i as f32 * 0.5));
        let far = input(bytes, Device::Cpu(0), |i| i as f32 * 0.25);
        g.throughput(Throughput::Bytes(5 * bytes as u64));
        g.bench_function(BenchmarkId::new("reduce_beside_copy", label(bytes)), |bench| {
            bench.iter(|| {
                let folded = Tensor::reduce(&[a.clone(), b.clone()], ReduceKind::Sum, None).unwrap();
                let t = Tensor::concat(&[far.copy_to_device(Device::Cpu(1)).unwrap(), folded], 0).unwrap();
                t.realize().unwrap();
                black_box(t)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, reduce, copy, narrow, join);
criterion_main!(benches);
