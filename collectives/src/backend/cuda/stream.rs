//! A streamed elementwise kernel: inputs on the host uploaded, the kernel run and its result
//! downloaded to host devices, chunk by chunk, on the device's three streams at once.
//!
//! The schedule streams a kernel whose host traffic would otherwise run whole before and after it
//! (`exec/stream.rs`: a mixed group's star folding a host member's shard). Here chunk i of each
//! host input is uploaded on the copy-in stream while the compute stream folds chunk i-1 and the
//! copy-out stream downloads chunk i-2's result, so the bus carries both directions at once and
//! the kernel takes about as long as its larger transfer. Pageable host inputs go through the
//! device's double-buffered pinned staging (the host fills one slot while the other uploads);
//! pinned and page-locked ones (`register.rs`) are uploaded in place. The result is still written
//! whole, on the device and into each host copy, so what reads them sees what the unchunked steps
//! would have written.
//!
//! [`STREAM_CHUNK_ENV`] sets the chunk size; by default [`chunk_elems`] cuts a kernel into about
//! [`CHUNKS`] chunks of 4 to 16 MiB.

use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;

use super::device::CudaDevice;
use super::driver;
use super::event::{Event, wait_on};
use super::launch::{self, Launcher};
use super::memory::{CudaFence, DevAlloc, alloc_of, await_on, device_buffer, record};
use super::pinned::{self, PinnedBlock, PinnedHost};
use super::register::{self, Direct};
use super::staging::{self, Ring};
use crate::backend::cpu::kernels::copy_bytes_to_staging;
use crate::backend::{Buffer, Kernel, Mem, OutSpec};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::exec::STREAM_CHUNK_ENV;

/// Chunks a streamed kernel is cut into by default, where they are at least [`MIN_CHUNK_BYTES`]:
/// enough that the first upload and the last download, which nothing overlaps, are an eighth of
/// the transfer each.
pub(crate) const CHUNKS: usize = 8;
/// The smallest default chunk. Each chunk costs about ten driver calls and a parallel host copy
/// (tens of microseconds): on the H200 a 16 MiB all_reduce of `cuda:0, vulkan:0, cpu:0` took
/// 1.2–1.5 ms in 2 MiB chunks and 1.1 ms in 4 MiB ones (`bench/gpu/17-streamed`, run b).
pub(crate) const MIN_CHUNK_BYTES: usize = 4 << 20;

/// Elements per chunk of a streamed kernel over `len` elements whose widest element (input or
/// output) is `size` bytes: about [`CHUNKS`] chunks, each between [`MIN_CHUNK_BYTES`] and the
/// staging slot ([`STREAM_CHUNK_ENV`] overrides), a multiple of 16 elements so that every chunk
/// starts 16-byte aligned.
pub(crate) fn chunk_elems(len: usize, size: usize) -> usize {
    static SET: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let set = *SET.get_or_init(|| {
        crate::knob::var(STREAM_CHUNK_ENV, "a byte count from 1 to 16 MiB", |&n: &usize| {
            (1..=staging::CHUNK).contains(&n)
        })
    });
    let bytes =
        set.unwrap_or_else(|| (len.saturating_mul(size) / CHUNKS).clamp(MIN_CHUNK_BYTES, staging::CHUNK));
    (bytes / size / 16 * 16).max(16)
}

/// Where a streamed kernel reads one input.
enum Input<'a> {
    /// Device memory (this device's, or a peer's read in place).
    Device(&'a Arc<DevAlloc>),
    /// A host buffer, uploaded chunk by chunk into `scratch` (as long as the input).
    Host { from: Host<'a>, scratch: Arc<DevAlloc> },
}

/// A host input's bytes: pinned or page-locked memory the copy engine reads in place, or
/// pageable memory the host copies into the staging slots first.
enum Host<'a> {
    Direct(Direct<'a>),
    Pageable(&'a [u8]),
}

impl Input<'_> {
    /// The device address the kernel reads.
    fn ptr(&self) -> CUdeviceptr {
        match self {
            Input::Device(a) => a.ptr(),
            Input::Host { scratch, .. } => scratch.ptr(),
        }
    }
}

/// Runs elementwise `kernel` over `inputs` (on `dev`, on peers it reads in place, or on host
/// devices) into a new buffer on `dev`, also writing the result into a new buffer on each host
/// device of `to`, `chunk` elements at a time ([`chunk_elems`]'s choice where `None`); returns
/// the device result and the host copies. The caller has checked the kernel contract
/// (`Kernel::check_streamed`).
pub(crate) fn compute_streamed(
    dev: &CudaDevice,
    kernel: &Kernel,
    inputs: &[&Buffer],
    out: OutSpec,
    to: &[Device],
    chunk: Option<usize>,
) -> Result<(Buffer, Vec<Buffer>)> {
    crate::failpoint::hit(dev.device, "cuda copy")?;
    let widest = inputs.first().map_or(1, |b| b.dtype.size()).max(out.dtype.size());
    let chunk = chunk.unwrap_or_else(|| chunk_elems(out.len, widest)).clamp(1, staging::CHUNK / widest);
    let bytes = out.len * out.dtype.size();
    let sized: Vec<(Device, usize)> = to.iter().map(|&d| (d, bytes)).collect();
    let blocks = host_blocks(dev, &sized, "streamed kernel")?;
    let copied = launch::peer_inputs(dev, inputs)?;
    let inputs: Vec<&Buffer> = inputs.iter().zip(&copied).map(|(&b, c)| c.as_ref().unwrap_or(b)).collect();
    let dst = dev.alloc(bytes, &dev.compute)?;
    let ins = inputs.iter().map(|b| input(dev, b)).collect::<Result<Vec<_>>>()?;
    let plan = Plan { dev, kernel, ins: &ins, in_dtype: inputs.first().map_or(out.dtype, |b| b.dtype), out };
    let (done, landed) = match plan.issue(&dst, &blocks, chunk) {
        Ok(events) => events,
        Err(e) => {
            // Issued chunks may still read or write what is dropped below: let them finish.
            let _ = dev.synchronize();
            return Err(e);
        }
    };
    for i in &ins {
        match i {
            Input::Device(a) => a.note_use(&dev.compute, &done),
            Input::Host { scratch, .. } => scratch.note_use(&dev.compute, &done),
        }
    }
    dst.note_use(&dev.copy_out, &landed);
    let result = device_buffer(out.dtype, out.len, dst, done, &dev.compute);
    let landed = Arc::new(CudaFence::new(landed, &dev.copy_out, dev.device));
    let copies = to.iter().zip(blocks).map(|(&d, block)| host_copy(d, out, block, &landed)).collect();
    Ok((result, copies))
}

/// How the kernel reads `b`: in place on the device (the compute stream waits for it), or
/// uploaded from the host into a scratch buffer (the copy-in stream waits for pinned memory that
/// a download still writes; pageable memory is waited for on the host).
fn input<'a>(dev: &CudaDevice, b: &'a Buffer) -> Result<Input<'a>> {
    let Mem::Host(_) = &b.mem else {
        await_on(&dev.compute, b, dev.device)?;
        return Ok(Input::Device(alloc_of(b, "streamed kernel")?));
    };
    let from = match register::direct(dev, b) {
        Some(host) => {
            await_on(&dev.copy_in, b, dev.device)?;
            Host::Direct(host)
        }
        None => {
            b.wait()?;
            Host::Pageable(b.host_bytes("streamed kernel")?)
        }
    };
    Ok(Input::Host { from, scratch: dev.alloc(b.bytes(), &dev.copy_in)? })
}

/// A pinned block for each `(host device, bytes)` of `to`, which the result of a streamed kernel
/// (`what`, chunked here or in one pass, `mapped.rs`), or a range of it, is copied into; none
/// where that is empty. An internal error where `to` names a device that is not a host device.
pub(super) fn host_blocks(
    dev: &CudaDevice,
    to: &[(Device, usize)],
    what: &str,
) -> Result<Vec<Option<PinnedBlock>>> {
    if let Some((d, _)) = to.iter().find(|(d, _)| !d.is_host()) {
        return Err(Error::internal(
            format!("{what} on {}", dev.device),
            format!("{d} is not a host device"),
        ));
    }
    to.iter()
        .map(|&(_, bytes)| (bytes > 0).then(|| pinned::take(bytes, &dev.ctx, dev.device)).transpose())
        .collect()
}

/// A host device `d`'s copy of the result, in `block`, complete when `landed` is (the copies of
/// one result share it, so one wait covers them all).
pub(super) fn host_copy(
    d: Device,
    out: OutSpec,
    block: Option<PinnedBlock>,
    landed: &Arc<CudaFence>,
) -> Buffer {
    if let Some(b) = &block {
        b.note_use(&landed.event);
    }
    let bytes = out.len * out.dtype.size();
    Buffer {
        device: d,
        dtype: out.dtype,
        len: out.len,
        mem: Mem::Host(Box::new(PinnedHost::new(block, bytes))),
        fence: Some(landed.clone()),
    }
}

/// One streamed kernel's issue: what it reads and writes.
struct Plan<'a> {
    dev: &'a CudaDevice,
    kernel: &'a Kernel,
    ins: &'a [Input<'a>],
    in_dtype: crate::dtype::DType,
    out: OutSpec,
}

impl Plan<'_> {
    /// Issues every chunk into `dst` and the host `blocks`; returns the events completing the
    /// kernel (compute stream) and the downloads (copy-out stream).
    fn issue(
        &self,
        dst: &DevAlloc,
        blocks: &[Option<PinnedBlock>],
        chunk: usize,
    ) -> Result<(Arc<Event>, Arc<Event>)> {
        let dev = self.dev;
        let uploads = self.ins.iter().any(|i| matches!(i, Input::Host { .. }));
        let mut ring = uploads.then(|| dev.stage_in.lock());
        let mut slot = 0;
        let mut uploaded = None;
        for start in (0..self.out.len).step_by(chunk.max(1)) {
            let n = chunk.min(self.out.len - start);
            if uploads {
                let e = self.upload(start, n, ring.as_deref_mut(), &mut slot)?;
                wait_on(&dev.compute, &e, dev.device)?;
                uploaded = Some(e);
            }
            self.run(dst, start, n)?;
            if blocks.iter().any(Option::is_some) {
                let e = record(&dev.compute, dev.device)?;
                wait_on(&dev.copy_out, &e, dev.device)?;
                self.download(dst, blocks, start, n)?;
            }
        }
        if let Some(e) = &uploaded {
            for i in self.ins {
                if let Input::Host { from: Host::Direct(host), .. } = i {
                    host.note_use(e);
                }
            }
        }
        Ok((record(&dev.compute, dev.device)?, record(&dev.copy_out, dev.device)?))
    }

    /// Uploads elements `start..start + n` of every host input into its scratch buffer on the
    /// copy-in stream (pageable ones through `ring`'s slots, counted by `slot`); returns the
    /// event completing them.
    fn upload(
        &self,
        start: usize,
        n: usize,
        mut ring: Option<&mut Ring>,
        slot: &mut usize,
    ) -> Result<Arc<Event>> {
        let (dev, size) = (self.dev, self.in_dtype.size());
        let (off, len) = (start * size, n * size);
        for i in self.ins {
            let Input::Host { from, scratch } = i else { continue };
            let to = scratch.ptr() + off as u64;
            match (from, ring.as_deref_mut()) {
                (Host::Direct(host), _) => {
                    dev.bind()?;
                    // SAFETY: the memory holds the input's bytes (`off + len` of them) and stays
                    // alive until the upload's event (noted by `issue`); `scratch` holds as many.
                    unsafe { driver::htod_async(to, host.ptr().add(off), len, dev.copy_in.cu_stream()) }
                        .map_err(driver::err(dev.device, "copy host to device"))?;
                }
                (Host::Pageable(host), Some(ring)) => {
                    // `scratch` holds `off + len` bytes; `len` is at most a slot (the chunk is
                    // clamped to one).
                    staging::stage_chunk(dev, ring, *slot, to, len, &dev.copy_in, |c| {
                        copy_bytes_to_staging(&host[off..off + len], c);
                        Ok(())
                    })?;
                    *slot += 1;
                }
                (Host::Pageable(_), None) => {
                    return Err(Error::internal("streamed kernel", "no staging ring"));
                }
            }
        }
        record(&dev.copy_in, dev.device)
    }

    /// The kernel over elements `start..start + n`, on the compute stream.
    fn run(&self, dst: &DevAlloc, start: usize, n: usize) -> Result<()> {
        let skip = (start * self.in_dtype.size()) as u64;
        let ptrs: Vec<CUdeviceptr> = self.ins.iter().map(|i| i.ptr() + skip).collect();
        let o = dst.ptr() + (start * self.out.dtype.size()) as u64;
        let l = Launcher::new(self.dev, &self.dev.compute);
        launch::run(&l, self.kernel, &ptrs, self.in_dtype, o, OutSpec { dtype: self.out.dtype, len: n }, None)
            .map(drop)
    }

    /// Downloads elements `start..start + n` of `dst` into every host block, on the copy-out
    /// stream.
    fn download(&self, dst: &DevAlloc, blocks: &[Option<PinnedBlock>], start: usize, n: usize) -> Result<()> {
        let dev = self.dev;
        let size = self.out.dtype.size();
        let (off, len) = (start * size, n * size);
        dev.bind()?;
        for b in blocks.iter().flatten() {
            // SAFETY: the block holds the result's bytes and `dst` as many; both outlive the copy
            // (`compute_streamed` notes its event on each).
            unsafe {
                driver::dtoh_async(b.ptr().add(off), dst.ptr() + off as u64, len, dev.copy_out.cu_stream())
            }
            .map_err(driver::err(dev.device, "copy device to host"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use half::bf16;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::super::tests::{
        OPS, as_dtype, close, devices, host_buffer, host_f64s, random_vals, reference, to_buffer, to_f64s,
    };
    use super::super::{copy, device::CudaDevice};
    use super::*;
    use crate::backend::Delivery;
    use crate::dtype::{DType, Element};
    use crate::graph::{BinaryOp, ReduceOp};

    /// `vals` as a buffer of `dtype` where `at` says: on `dev` (`0`), in pageable host memory
    /// (`1`) or in pinned host memory, as a download leaves it (`2`).
    fn placed(dev: &CudaDevice, dtype: DType, vals: &[f64], at: usize) -> Buffer {
        match at {
            0 => to_buffer(dev, dtype, vals),
            1 => host_buffer(Device::Cpu(1), dtype, vals),
            _ => copy::dtoh(dev, &to_buffer(dev, dtype, vals), Device::Cpu(2)).expect("dtoh"),
        }
    }

    /// Every element of `got` against `want` (within `close` of `mag`, the sum of the magnitudes).
    fn check(dtype: DType, got: &[f64], want: &[f64], mag: &[f64], k: usize, what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        let wrong: Vec<String> = (0..got.len())
            .filter(|&i| !close(dtype, got[i], want[i], mag[i], k))
            .map(|i| format!("[{i}] got {:e} want {:e}", got[i], want[i]))
            .collect();
        assert!(
            wrong.is_empty(),
            "{what}: {} wrong of {}: {}",
            wrong.len(),
            got.len(),
            wrong[..wrong.len().min(8)].join(", ")
        );
    }

    /// A fold of a device shard, a pageable host shard and a pinned host shard, chunked finely
    /// (aligned and not) and whole, into the device and two host copies, and in one pass
    /// (`mapped.rs`) into the device, two host copies and three of ranges (a mixed
    /// reduce_scatter's parts): every op and dtype against the f64 reference, every element; the
    /// host inputs unchanged.
    #[test]
    fn a_streamed_fold_matches_the_reference_in_every_chunking() {
        let Some(dev) = devices().into_iter().next() else { return };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        let n = 65_537;
        for dtype in DType::ALL {
            for (o, op) in OPS.into_iter().enumerate() {
                let ins: Vec<Vec<f64>> =
                    (0..3).map(|_| random_vals(dtype, n, op == ReduceOp::Prod, &mut r)).collect();
                let bufs: Vec<Buffer> =
                    ins.iter().enumerate().map(|(at, x)| placed(&dev, dtype, x, at)).collect();
                let refs: Vec<&Buffer> = bufs.iter().collect();
                let want: Vec<f64> = (0..n).map(|i| reference(op, dtype, &ins, i)).collect();
                let mag: Vec<f64> =
                    (0..n).map(|i| ins.iter().map(|x| x[i].abs()).sum::<f64>() * 2.0).collect();
                let (kind, scale) = op.lower(3);
                let kernel = Kernel::Reduce { kind, scale };
                let out = OutSpec { dtype, len: n };
                let chunk = [1000, 4096, n][o % 3];
                let to = [Device::Cpu(0), Device::Cpu(3)];
                let chunked =
                    compute_streamed(&dev, &kernel, &refs, out, &to, Some(chunk)).expect("streamed");
                let parts = Delivery::mixed(n);
                let one_pass = super::super::mapped::compute_mapped(&dev, &kernel, &refs, out, &parts)
                    .expect("one pass");
                for ((res, copies), to, how) in [
                    (chunked, Delivery::wholes(&to, n), format!("chunk {chunk}")),
                    (one_pass, parts, "one pass".into()),
                ] {
                    let ctx = format!("{dtype} {op:?} {how} seed {seed}");
                    check(dtype, &to_f64s(&dev, &res), &want, &mag, 3, &format!("device result, {ctx}"));
                    assert_eq!(copies.len(), to.len(), "{ctx}");
                    for (c, d) in copies.iter().zip(&to) {
                        let r = d.range.clone();
                        assert_eq!(c.device, d.to);
                        check(
                            dtype,
                            &host_f64s(c),
                            &want[r.clone()],
                            &mag[r],
                            3,
                            &format!("copy {d:?}, {ctx}"),
                        );
                    }
                }
                let ctx = format!("{dtype} {op:?} seed {seed}");
                assert_eq!(host_f64s(&bufs[1]), ins[1], "pageable input unchanged, {ctx}");
                assert_eq!(host_f64s(&bufs[2]), ins[2], "pinned input unchanged, {ctx}");
            }
        }
    }

    /// A binary op of two host inputs with no host copy, and a cast of a host input with one:
    /// every element against the reference; an empty kernel and a non-host target.
    #[test]
    fn streamed_binary_and_cast_kernels_and_edge_cases() {
        let Some(dev) = devices().into_iter().next() else { return };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        let n = 40_003;
        let (a, b) = (random_vals(DType::F32, n, false, &mut r), random_vals(DType::F32, n, false, &mut r));
        let (ha, hb) = (placed(&dev, DType::F32, &a, 1), placed(&dev, DType::F32, &b, 2));
        let out = OutSpec { dtype: DType::F32, len: n };
        let (res, none) =
            compute_streamed(&dev, &Kernel::Binary(BinaryOp::Sub), &[&ha, &hb], out, &[], Some(777)).unwrap();
        assert!(none.is_empty());
        let want: Vec<f64> = (0..n).map(|i| as_dtype(DType::F32, a[i] - b[i])).collect();
        assert_eq!(to_f64s(&dev, &res), want, "sub, seed {seed}");
        let cast = OutSpec { dtype: DType::BF16, len: n };
        let (res, copies) =
            compute_streamed(&dev, &Kernel::Cast, &[&ha], cast, &[Device::Cpu(0)], Some(1024)).unwrap();
        // The library's rounding (round to odd through f32, then to nearest-even), not `half`'s.
        let want: Vec<f64> = a.iter().map(|&v| <bf16 as Element>::from_f64(v).to_f64()).collect();
        assert_eq!(to_f64s(&dev, &res), want, "cast on the device, seed {seed}");
        assert_eq!(host_f64s(&copies[0]), want, "cast on the host, seed {seed}");
        let empty = Buffer::from_vec::<f32>(Device::Cpu(0), vec![]);
        let zero = OutSpec { dtype: DType::F32, len: 0 };
        let (res, copies) = compute_streamed(
            &dev,
            &Kernel::Scale(crate::graph::Scale::Mul(2.0)),
            &[&empty],
            zero,
            &[Device::Cpu(0)],
            None,
        )
        .unwrap();
        assert_eq!((res.len, host_f64s(&copies[0]).len()), (0, 0), "nothing to stream");
        let err = compute_streamed(&dev, &Kernel::Cast, &[&ha], out, &[Device::Vulkan(0)], Some(16)).err();
        assert!(matches!(err, Some(Error::Internal { .. })), "{err:?}");
    }

    #[test]
    fn chunks_are_aligned_and_bounded() {
        for (len, size) in [
            (1usize, 4usize),
            (1000, 2),
            (1 << 20, 4),
            (1 << 22, 4),
            (5 << 20, 8),
            (1 << 28, 8),
            (3 << 26, 2),
        ] {
            let c = chunk_elems(len, size);
            assert!(c.is_multiple_of(16) && c >= 16, "{len} x {size}: {c}");
            assert!(c * size <= staging::CHUNK, "{len} x {size}: {c} elements exceed the staging slot");
            if len * size >= CHUNKS * MIN_CHUNK_BYTES && len * size <= CHUNKS * staging::CHUNK {
                assert!(
                    (len * size / (c * size)).abs_diff(CHUNKS) <= 1,
                    "{len} x {size}: about {CHUNKS} chunks, {c}"
                );
            }
        }
    }
}
