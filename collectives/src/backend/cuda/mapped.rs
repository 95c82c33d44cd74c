//! A small streamed kernel in one pass: the kernel reads its host inputs from pinned memory in
//! place, and its result is downloaded to the host devices on the same stream.
//!
//! Why: at a few kilobytes a transfer costs nothing and the calls around it cost everything. The
//! unstreamed steps are an upload (a staging slot, its copy and an event), the kernel (which waits
//! for that event on the compute stream) and a download (which waits for the kernel on the
//! copy-out stream): three streams and three events for a few microseconds of work. Here a
//! pageable input is copied by the host into a pinned block, which the kernel reads across the
//! bus (pinned memory is mapped into every device's address space under unified addressing; a
//! reduce's pageable inputs of up to 4 KiB in all go in its launch's parameters instead,
//! [`launch::Carried`]), the result goes into each host copy's pinned block across the bus too —
//! a reduce writes them in its own pass, a small concat places its inputs' rows in each in its
//! one launch (up to [`launch::SEGS_WIDE`] placements in all), another kernel's result is copied
//! by one more launch (either starts sooner than the copy engine) — and the one stream orders
//! them: one event completes the whole step. The schedule streams kernels below
//! [`crate::exec::STREAM_SMALL_BYTES`] this way (`exec/stream.rs`). On the H200 a 4 KiB
//! all_reduce of `cuda:0, cpu:0` took 19–26 µs against 24–36 unstreamed, and of `cuda:0,
//! vulkan:0, cpu:0` 25–37 against 49–58 (`bench/gpu/18-locked`, runs b, d, e and f on four
//! machines of the kind).

use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;

use super::device::CudaDevice;
use super::event::issue_flagged;
use super::launch::{self, Carried, Launcher, Seg};
use super::memory::{CudaFence, alloc_of, await_on, fenced_buffer};
use super::pinned::{self, PinnedBlock, PinnedHost};
use super::stream::{host_blocks, host_copy};
use crate::backend::{Buffer, Delivery, Kernel, Mem, OutSpec};
use crate::device::Device;
use crate::error::Result;

/// Runs `kernel` over `inputs` (on `dev`, on peers it reads in place, or on host devices) into
/// a new buffer on `dev`, and copies the result, or a range of it, into a new buffer on the host
/// device of each of `to`, all on `dev`'s compute stream; returns the device result and the host
/// copies. The kernel writes the whole copies in its pass where it can ([`launch::run_to_all`]);
/// one more launch copies the ranges from the result. The caller has checked the kernel contract
/// (`Kernel::check_streamed`), the ranges (`Delivery::check_all`) and that `dev` has unified
/// addressing (`CudaDevice::unified`: every 64-bit platform CUDA supports today).
pub(crate) fn compute_mapped(
    dev: &CudaDevice,
    kernel: &Kernel,
    inputs: &[&Buffer],
    out: OutSpec,
    to: &[Delivery],
) -> Result<(Buffer, Vec<Buffer>)> {
    crate::failpoint::hit(dev.device, "cuda copy")?;
    let size = out.dtype.size();
    let sized: Vec<(Device, usize)> = to.iter().map(|d| (d.to, d.range.len() * size)).collect();
    let blocks = host_blocks(dev, &sized, "one-pass kernel")?;
    let copied = launch::peer_inputs(dev, inputs)?;
    let inputs: Vec<&Buffer> = inputs.iter().zip(&copied).map(|(&b, c)| c.as_ref().unwrap_or(b)).collect();
    let mut staged = Vec::new();
    // A reduce carries its small pageable inputs in its launch's parameters where it can.
    let carries = matches!(kernel, Kernel::Reduce { .. }) && carrying_on();
    let mut carried = carries.then(|| Carried::on(dev)).flatten();
    let ptrs =
        inputs.iter().map(|b| read_at(dev, b, &mut staged, carried.as_mut())).collect::<Result<Vec<_>>>()?;
    let stream = &dev.compute;
    let dst = dev.alloc(out.len * size, stream)?;
    let in_dtype = inputs.first().map_or(out.dtype, |b| b.dtype);
    let (outs, ranges) = destinations(dst.ptr(), to, &blocks, out);
    let l = Launcher::new(dev, stream).carrying(carried.as_ref());
    let issued = issue_flagged(dev, stream, |flag| {
        let last = flag.filter(|_| ranges.is_empty());
        let stored = launch::run_to_all(&l, kernel, &ptrs, in_dtype, &outs, out, last)?;
        // SAFETY: `dst` holds the result once the launch above has run (same stream); each range
        // lies within it (checked by the caller) and its block holds that many bytes.
        Ok(stored
            | unsafe { launch::copy_segments_flagged(&l, &ranges, flag.filter(|_| !ranges.is_empty())) }?)
    });
    let done = match issued {
        Ok(e) => e,
        Err(e) => {
            // What was issued may still read the staged blocks and write `dst`: let it finish.
            let _ = dev.synchronize();
            return Err(e);
        }
    };
    for b in staged {
        b.note_use(&done);
        pinned::give_back(b);
    }
    for b in &inputs {
        match &b.mem {
            Mem::Host(_) => {
                if let Some(p) = pinned::host_of(b).and_then(PinnedHost::block) {
                    p.note_use(&done);
                }
            }
            _ => alloc_of(b, "one-pass kernel")?.note_use(stream, &done),
        }
    }
    dst.note_use(stream, &done);
    // One fence for the result and its copies: the wait for one covers the others.
    let fence = Arc::new(CudaFence::new(done, stream, dev.device));
    let copies = to.iter().zip(blocks).map(|(d, block)| host_copy(d.to, d.out(out), block, &fence)).collect();
    Ok((fenced_buffer(out.dtype, out.len, dst, fence), copies))
}

/// Whether a reduce carries its small inputs ([`Carried`]): always, but in the test binary,
/// where a timing probe turns it off and on (`probe::mixed_all_reduce_layers_probe`).
#[cfg(not(test))]
fn carrying_on() -> bool {
    true
}

#[cfg(test)]
pub(super) static CARRYING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

#[cfg(test)]
fn carrying_on() -> bool {
    CARRYING.load(std::sync::atomic::Ordering::Relaxed)
}

/// Where a one-pass kernel writes its result of `out` at `dst` and the copies `to` into their
/// `blocks` (none for an empty one): `dst` and each whole copy's block, which the kernel writes
/// (a reduce all in its pass), and each range as a copy from `dst` into its block after it.
fn destinations(
    dst: CUdeviceptr,
    to: &[Delivery],
    blocks: &[Option<PinnedBlock>],
    out: OutSpec,
) -> (Vec<CUdeviceptr>, Vec<Seg>) {
    let size = out.dtype.size();
    let mut outs = vec![dst];
    let mut ranges: Vec<Seg> = Vec::new();
    for (d, block) in to.iter().zip(blocks) {
        let Some(block) = block else { continue };
        let at = block.ptr() as CUdeviceptr;
        match d.is_whole(out.len) {
            true => outs.push(at),
            false => ranges.push((dst + (d.range.start * size) as u64, at, (d.range.len() * size) as u64)),
        }
    }
    (outs, ranges)
}

/// The address the kernel reads `b` at: its device memory (the compute stream waits for its
/// writer), a pinned block's host address (likewise), its offset in `carried` where pageable
/// memory fits there (the launch's parameters, [`Carried`]), or else a pinned block the host
/// fills now from pageable memory (kept in `staged` until the kernel has run).
fn read_at(
    dev: &CudaDevice,
    b: &Buffer,
    staged: &mut Vec<PinnedBlock>,
    carried: Option<&mut Carried>,
) -> Result<CUdeviceptr> {
    let Mem::Host(_) = &b.mem else {
        await_on(&dev.compute, b, dev.device)?;
        return Ok(alloc_of(b, "one-pass kernel")?.ptr());
    };
    if let Some(p) = pinned::host_of(b) {
        await_on(&dev.compute, b, dev.device)?;
        return Ok(p.block().map_or(0, |block| block.ptr() as CUdeviceptr));
    }
    b.wait()?;
    let bytes = b.host_bytes("one-pass kernel")?;
    if bytes.is_empty() {
        return Ok(0);
    }
    if let Some(at) = carried.and_then(|c| c.put(bytes)) {
        return Ok(at);
    }
    let mut block = pinned::take(bytes.len(), &dev.ctx, dev.device)?;
    block.bytes_mut(bytes.len()).copy_from_slice(bytes);
    let at = block.ptr() as CUdeviceptr;
    staged.push(block);
    Ok(at)
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::super::copy;
    use super::super::tests::{as_dtype, devices, host_buffer, host_f64s, random_vals, to_buffer, to_f64s};
    use super::*;
    use crate::dtype::DType;
    use crate::error::Error;
    use crate::graph::BinaryOp;

    fn host_f32(b: &Buffer) -> Vec<f32> {
        b.wait().expect("wait");
        bytemuck::pod_collect_to_vec(b.host_bytes("test").expect("host bytes"))
    }

    /// A binary op of a pageable and a pinned host input at odd sizes (1, 7, 65 537 elements) with
    /// two whole host copies and three of ranges (the tail, the middle, an empty one), every
    /// element against the f64 reference; the inputs unchanged; an empty kernel; a target that is
    /// not a host device. (`stream.rs`'s fold test runs every reduce op and dtype through this
    /// path too.)
    #[test]
    fn one_pass_binary_kernels_at_odd_sizes_and_edge_cases() {
        let Some(dev) = devices().into_iter().next() else { return };
        assert!(dev.unified, "unified addressing");
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        for n in [1usize, 7, 65_537] {
            let a: Vec<f32> = (0..n).map(|_| r.random_range(-100.0f32..100.0)).collect();
            let b: Vec<f32> = (0..n).map(|_| r.random_range(-100.0f32..100.0)).collect();
            let pageable = Buffer::from_vec(Device::Cpu(1), a.clone());
            let pinned = copy::dtoh(
                &dev,
                &copy::htod(&dev, &Buffer::from_vec(Device::Cpu(0), b.clone())).unwrap(),
                Device::Cpu(2),
            )
            .unwrap();
            let out = OutSpec { dtype: DType::F32, len: n };
            let to = Delivery::mixed(n);
            let (res, copies) =
                compute_mapped(&dev, &Kernel::Binary(BinaryOp::Mul), &[&pageable, &pinned], out, &to)
                    .expect("one pass");
            let want: Vec<f64> =
                (0..n).map(|i| as_dtype(DType::F32, f64::from(a[i]) * f64::from(b[i]))).collect();
            assert_eq!(to_f64s(&dev, &res), want, "device result, {n} elements, seed {seed}");
            for (c, d) in copies.iter().zip(&to) {
                assert_eq!((c.device, c.len), (d.to, d.range.len()));
                let got: Vec<f64> = host_f32(c).into_iter().map(f64::from).collect();
                assert_eq!(got, want[d.range.clone()], "copy {d:?}, {n} elements, seed {seed}");
            }
            assert_eq!((host_f32(&pageable), host_f32(&pinned)), (a, b), "inputs unchanged");
        }
        let empty = Buffer::from_vec::<f32>(Device::Cpu(0), vec![]);
        let zero = OutSpec { dtype: DType::F32, len: 0 };
        let to = Delivery::wholes(&[Device::Cpu(0)], 0);
        let (res, copies) = compute_mapped(&dev, &Kernel::Cast, &[&empty], zero, &to).unwrap();
        assert_eq!((res.len, host_f32(&copies[0]).len()), (0, 0), "nothing to do");
        let one = Buffer::from_vec(Device::Cpu(0), vec![1.0f32]);
        let err = compute_mapped(
            &dev,
            &Kernel::Cast,
            &[&one],
            OutSpec { dtype: DType::F32, len: 1 },
            &Delivery::wholes(&[Device::Vulkan(0)], 1),
        );
        assert!(matches!(err, Err(Error::Internal { .. })), "{:?}", err.err());
    }

    /// A reduce of a device input, two pageable host inputs and a pinned one, into the device and
    /// the host copies of a mixed reduce_scatter (wholes and ranges): every dtype and op, at sizes
    /// where both pageable inputs are carried in the launch's parameters (1 and 7 elements and
    /// 128 bytes each, in the small block; 128 bytes and one element, and 2 KiB, each in the whole
    /// one), where the first fills them and the second is read from pinned memory (4 KiB), and
    /// where neither fits (4 KiB and one element); every element against the f64 reference, the
    /// inputs unchanged. And the max of a device input and 17 carried ones (two chained launches).
    #[test]
    fn a_reduce_carries_small_pageable_inputs_in_its_launch() {
        use super::super::tests::{OPS, close, expected};
        use crate::graph::ReduceOp;
        let Some(dev) = devices().into_iter().next() else { return };
        println!("carried in the launch's parameters on this device: {}", Carried::on(&dev).is_some());
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        let block = launch::CARRIED_BYTES;
        for dtype in DType::ALL {
            let (each, small) = (block / dtype.size(), launch::CARRIED_SMALL_BYTES / 2 / dtype.size());
            for n in [1, 7, small, small + 1, each / 2, each, each + 1] {
                for op in OPS {
                    let ins: Vec<Vec<f64>> =
                        (0..4).map(|_| random_vals(dtype, n, op == ReduceOp::Prod, &mut r)).collect();
                    let bufs = [
                        to_buffer(&dev, dtype, &ins[0]),
                        host_buffer(Device::Cpu(1), dtype, &ins[1]),
                        host_buffer(Device::Cpu(2), dtype, &ins[2]),
                        copy::dtoh(&dev, &to_buffer(&dev, dtype, &ins[3]), Device::Cpu(3)).unwrap(),
                    ];
                    let refs: Vec<&Buffer> = bufs.iter().collect();
                    let (kind, scale) = op.lower(4);
                    let to = Delivery::mixed(n);
                    let ctx = format!("{dtype} {op:?}, {n} elements, seed {seed}");
                    let (res, copies) = compute_mapped(
                        &dev,
                        &Kernel::Reduce { kind, scale },
                        &refs,
                        OutSpec { dtype, len: n },
                        &to,
                    )
                    .expect("one-pass reduce");
                    let (want, mag) = expected(op, dtype, &ins);
                    let agree = |got: &[f64], at: std::ops::Range<usize>, what: &str| {
                        assert_eq!(got.len(), at.len(), "{what}, {ctx}");
                        for (i, (g, k)) in got.iter().zip(at).enumerate() {
                            let ok = close(dtype, *g, want[k], mag[k] * 2.0, 4);
                            assert!(ok, "{what} element {i}: {g} against {}, {ctx}", want[k]);
                        }
                    };
                    agree(&to_f64s(&dev, &res), 0..n, "device result");
                    for (c, d) in copies.iter().zip(&to) {
                        assert_eq!(c.device, d.to, "{ctx}");
                        agree(&host_f64s(c), d.range.clone(), &format!("copy {d:?}"));
                    }
                    assert_eq!(copies.len(), to.len(), "{ctx}");
                    let pageable = (host_f64s(&bufs[1]), host_f64s(&bufs[2]));
                    assert_eq!(
                        pageable,
                        (ins[1].clone(), ins[2].clone()),
                        "pageable inputs unchanged, {ctx}"
                    );
                    assert_eq!(host_f64s(&bufs[3]), ins[3], "pinned input unchanged, {ctx}");
                }
            }
            // Past MAXK inputs the reduce chains two launches, each carrying the block: a device
            // input and 17 pageable ones of 7 elements, all carried.
            let ins: Vec<Vec<f64>> = (0..18).map(|_| random_vals(dtype, 7, false, &mut r)).collect();
            let mut bufs = vec![to_buffer(&dev, dtype, &ins[0])];
            bufs.extend(ins[1..].iter().map(|x| host_buffer(Device::Cpu(1), dtype, x)));
            let refs: Vec<&Buffer> = bufs.iter().collect();
            let kernel = Kernel::Reduce { kind: crate::graph::ReduceKind::Max, scale: None };
            let to = Delivery::wholes(&[Device::Cpu(0)], 7);
            let (res, copies) =
                compute_mapped(&dev, &kernel, &refs, OutSpec { dtype, len: 7 }, &to).expect("chained");
            let (want, _) = expected(ReduceOp::Max, dtype, &ins);
            let ctx = format!("{dtype} max of 18 inputs, seed {seed}");
            assert_eq!((to_f64s(&dev, &res), host_f64s(&copies[0])), (want.clone(), want), "{ctx}");
        }
    }

    /// Concats and slices in one pass (`exec/stream.rs` streams small concats; the backend takes
    /// any kernel): parts on the device, in pageable and in pinned host memory, at odd sizes and
    /// in dtypes of 1, 2 and 4 bytes, written to the device and to two host devices or to 24;
    /// concats of three parts in one row, of two parts in two and of three in two (in 8 or 64 in
    /// two cases), slices of one row and of two. The concat's placements (rows times parts times
    /// destinations) go in one launch where they are at most `SEGS_WIDE` (to 25 destinations: 75
    /// and 100), else the concat is computed once and copied (8 rows of three to 25: 600), its
    /// placements in one launch where they are at most `SEGS_WIDE` (24), else by a launch per
    /// part (64 rows of three: 192). Every element of every result against the f64 reference,
    /// the inputs unchanged.
    #[test]
    fn one_pass_concats_and_slices_of_host_and_device_inputs() {
        let Some(dev) = devices().into_iter().next() else { return };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        let two = [Device::Cpu(0), Device::Cpu(3)];
        let many: Vec<Device> = (0..24).map(Device::Cpu).collect();
        for (dtype, n, to, rows) in [
            (DType::F32, 1, &two[..], 2),
            (DType::U8, 7, &two[..], 2),
            (DType::F16, 65_537, &two[..], 2),
            (DType::I32, 7, &many[..], 8),
            (DType::F32, 5, &two[..], 64),
        ] {
            // Three parts of rows × n, n + 1 and 3 elements: each splits into two rows, or `rows`.
            let vals: Vec<Vec<f64>> =
                [n, n + 1, 3].iter().map(|&m| random_vals(dtype, rows * m, false, &mut r)).collect();
            let pageable = host_buffer(Device::Cpu(1), dtype, &vals[0]);
            let on_dev = to_buffer(&dev, dtype, &vals[1]);
            let pinned = copy::dtoh(&dev, &to_buffer(&dev, dtype, &vals[2]), Device::Cpu(2)).unwrap();
            let ctx = format!("{dtype}, {n} elements, {} copies, seed {seed}", to.len());
            for (outer, k) in [(1, 3), (2, 2), (rows, 3)] {
                let (kernel, want) = concat_of(&vals[..k], outer);
                let to = Delivery::wholes(to, want.len());
                let parts = [&pageable, &on_dev, &pinned];
                let got = compute_mapped(&dev, &kernel, &parts[..k], want_spec(dtype, &want), &to);
                let what = format!("concat of {k} parts in {outer} rows, {ctx}");
                check_everywhere(&dev, got.expect("one-pass concat"), &want, &to, &what);
            }
            for outer in [1, 2] {
                let (kernel, want) = slice_of(&vals[0], outer);
                let to = Delivery::wholes(to, want.len());
                let got = compute_mapped(&dev, &kernel, &[&pageable], want_spec(dtype, &want), &to);
                let what = format!("slice of {outer} rows, {ctx}");
                check_everywhere(&dev, got.expect("one-pass slice"), &want, &to, &what);
            }
            assert_eq!(host_f64s(&pageable), vals[0], "pageable input unchanged, {ctx}");
            assert_eq!(host_f64s(&pinned), vals[2], "pinned input unchanged, {ctx}");
            assert_eq!(to_f64s(&dev, &on_dev), vals[1], "device input unchanged, {ctx}");
        }
    }

    /// A concat of a host and a device part from the one-pass bound on, through the backend,
    /// which uploads the host part first; the result, two whole host copies and three of ranges
    /// (computed as slices, then copied) against the parts.
    #[test]
    fn a_concat_from_the_one_pass_bound_on_uploads_its_host_parts() {
        let Some(dev) = devices().into_iter().next() else { return };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        let be = super::super::open(dev.device.ordinal()).expect("backend");
        let n = crate::exec::STREAM_SMALL_BYTES / 4;
        let vals: Vec<Vec<f64>> = (0..2).map(|_| random_vals(DType::F32, n, false, &mut r)).collect();
        let host = host_buffer(Device::Cpu(1), DType::F32, &vals[0]);
        let on_dev = to_buffer(&dev, DType::F32, &vals[1]);
        let (kernel, want) = concat_of(&vals, 1);
        let to = Delivery::mixed(want.len());
        let got = be.compute_fanout(&kernel, &[&host, &on_dev], want_spec(DType::F32, &want), &to);
        check_everywhere(&dev, got.expect("uploaded, then computed"), &want, &to, &format!("seed {seed}"));
    }

    /// The concat of `parts` in `outer` rows (each part's rows in turn, row by row), and its
    /// reference.
    fn concat_of(parts: &[Vec<f64>], outer: usize) -> (Kernel, Vec<f64>) {
        let mids = parts.iter().map(|v| v.len() / outer).collect();
        let row = |o: usize| {
            parts.iter().flat_map(move |v| v[o * v.len() / outer..(o + 1) * v.len() / outer].to_vec())
        };
        (Kernel::Concat { outer, mids, inner: 1 }, (0..outer).flat_map(row).collect())
    }

    /// A slice of each of `outer` rows of `x` (all but its first element where a row has more
    /// than one), and its reference.
    fn slice_of(x: &[f64], outer: usize) -> (Kernel, Vec<f64>) {
        let mid = x.len() / outer;
        let start = usize::from(mid > 1);
        let len = mid - start;
        let want = (0..outer).flat_map(|o| x[o * mid + start..o * mid + start + len].to_vec()).collect();
        (Kernel::Slice { outer, in_mid: mid, start, len, inner: 1 }, want)
    }

    /// The output spec of `want` in `dtype`.
    fn want_spec(dtype: DType, want: &[f64]) -> OutSpec {
        OutSpec { dtype, len: want.len() }
    }

    /// Checks the device result and every host copy of `got` against `want`.
    fn check_everywhere(
        dev: &CudaDevice,
        got: (Buffer, Vec<Buffer>),
        want: &[f64],
        to: &[Delivery],
        ctx: &str,
    ) {
        assert_eq!(to_f64s(dev, &got.0), want, "on the device, {ctx}");
        assert_eq!(got.1.len(), to.len(), "{ctx}");
        for (c, d) in got.1.iter().zip(to) {
            assert_eq!((c.device, host_f64s(c)), (d.to, want[d.range.clone()].to_vec()), "{d:?}, {ctx}");
        }
    }
}
