//! The CPU backend: virtual host devices `Cpu(n)`, every op for every dtype.
//!
//! All virtual devices share the host's memory system and the rayon pool; each has its own
//! buffers, so a copy between two of them is a real copy. Kernels are plain loops over typed
//! slices ([`kernels`]), vectorized by the compiler and split across threads when large.

mod call;
pub(crate) mod kernels;
mod num;
mod staged;
mod stream;

pub(crate) use call::{HostAllToAll, HostReduceScatter, HostScatter, HostStar};
pub(crate) use staged::HostStaged;

use half::{bf16, f16};

use super::join::Part;
use super::{Backend, Buffer, Delivery, Kernel, OutSpec, OwnedHost};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::sized::try_vec;
use num::Num;

/// Runs `$body` with `$T` bound to the Rust type of `$dtype`.
macro_rules! with_type {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            DType::F16 => {
                type $T = f16;
                $body
            }
            DType::BF16 => {
                type $T = bf16;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::U8 => {
                type $T = u8;
                $body
            }
        }
    };
}
pub(crate) use with_type;

/// One virtual host device.
pub(crate) struct CpuBackend {
    device: Device,
}

impl CpuBackend {
    pub fn new(ordinal: u32) -> Self {
        CpuBackend { device: Device::Cpu(ordinal) }
    }

    /// The backend of host device `d` (an error for any other device).
    fn on(d: Device) -> Result<CpuBackend> {
        match d {
            Device::Cpu(n) => Ok(CpuBackend::new(n)),
            other => Err(Error::internal("host copy", format!("{other} is not a host device"))),
        }
    }

    fn alloc(&self, out: OutSpec) -> Result<Buffer> {
        crate::failpoint::hit(self.device, "cpu alloc")?;
        let mem = OwnedHost::uninit(out.len * out.dtype.size());
        Ok(Buffer::host(self.device, out.dtype, out.len, Box::new(mem)))
    }
}

/// `parts` (host buffers, on any host device, buffers of Vulkan devices, or kernels computed in
/// place) end to end in new memory of host device `to`: the host half of a join
/// (`backend/join.rs`).
pub(crate) fn join(to: Device, parts: &[Part], out: OutSpec) -> Result<Buffer> {
    crate::failpoint::hit(to, "cpu copy")?;
    let mut o = CpuBackend::on(to)?.alloc(out)?;
    let mut rest = out_bytes(&mut o)?;
    for p in parts {
        let (range, after) = std::mem::take(&mut rest).split_at_mut(p.bytes());
        super::join::write_host_part(p, to, range)?;
        rest = after;
    }
    Ok(o)
}

/// Runs `kernel` over `inputs` (host buffers, waited for here) on host device `device`, straight
/// into `dst`, which holds `out`'s bytes: a join's computed part.
pub(crate) fn compute_into(
    device: Device,
    kernel: &Kernel,
    inputs: &[&Buffer],
    out: OutSpec,
    dst: &mut [u8],
) -> Result<()> {
    crate::failpoint::hit(device, "cpu kernel launch")?;
    if dst.len() != out.len * out.dtype.size() {
        let msg = format!("{} bytes to write {} x {}", dst.len(), out.len, out.dtype);
        return Err(Error::internal("cpu kernel", msg));
    }
    let ins = host_inputs(inputs)?;
    run_kernel(kernel, &ins, inputs.first().map_or(out.dtype, |b| b.dtype), out.dtype, dst, &mut []);
    Ok(())
}

/// The bytes of each of `inputs` (host buffers), once each one's writer is done.
fn host_inputs<'a>(inputs: &[&'a Buffer]) -> Result<Vec<&'a [u8]>> {
    try_vec(inputs.iter().map(|b| {
        b.wait()?;
        b.host_bytes("cpu kernel")
    }))
}

/// `b` as elements of `T`. An empty `b` may sit at any address (the pinned buffer of an empty
/// download is `&[]`, at address 1), which no cast to a wider type accepts: it is no elements.
fn typed<T: Num>(b: &[u8]) -> &[T] {
    if b.is_empty() {
        return &[];
    }
    bytemuck::cast_slice(b)
}

/// [`typed`], writable.
fn typed_mut<T: Num>(b: &mut [u8]) -> &mut [T] {
    if b.is_empty() {
        return &mut [];
    }
    bytemuck::cast_slice_mut(b)
}

/// The bytes of `out`, a buffer this backend allocated (writable host memory).
fn out_bytes(out: &mut Buffer) -> Result<&mut [u8]> {
    match &mut out.mem {
        super::Mem::Host(h) => h.as_bytes_mut(),
        _ => None,
    }
    .ok_or_else(|| Error::internal("cpu kernel", "an output buffer that is not writable host memory"))
}

/// Runs `kernel` on host bytes into `o`, copying the result into every buffer of `fan` as it goes
/// (elementwise kernels chunk by chunk while in cache; layout kernels after). Also the kernels a
/// Vulkan device leaves to the host (`backend/vulkan/on_host.rs`), on its mapped memory.
pub(crate) fn run_kernel(
    kernel: &Kernel,
    ins: &[&[u8]],
    in_dtype: DType,
    dtype: DType,
    o: &mut [u8],
    fan: &mut [&mut [u8]],
) {
    match kernel {
        Kernel::Binary(op) => {
            with_type!(dtype, T => kernels::binary::<T>(*op, typed(ins[0]), typed(ins[1]), typed_mut(o), fan))
        }
        Kernel::Reduce { kind, scale } => with_type!(dtype, T => {
            let xs: Vec<&[T]> = ins.iter().map(|b| typed::<T>(b)).collect();
            kernels::reduce::<T>(*kind, *scale, &xs, typed_mut(o), fan)
        }),
        Kernel::Scale(s) => with_type!(dtype, T => kernels::scale::<T>(*s, typed(ins[0]), typed_mut(o), fan)),
        Kernel::Cast => {
            with_type!(in_dtype, T => with_type!(dtype, U => kernels::cast::<T, U>(typed(ins[0]), typed_mut(o), fan)))
        }
        Kernel::Slice { outer, in_mid, start, len, inner } => {
            kernels::slice(ins[0], o, *outer, *in_mid, *start, *len, inner * dtype.size());
            fan.iter_mut().for_each(|d| kernels::copy_bytes(o, d));
        }
        Kernel::Concat { outer, mids, inner } => {
            kernels::concat(ins, mids, o, *outer, inner * dtype.size());
            fan.iter_mut().for_each(|d| kernels::copy_bytes(o, d));
        }
    }
}

impl Backend for CpuBackend {
    fn device(&self) -> Device {
        self.device
    }

    fn compute(&self, kernel: &Kernel, inputs: &[&Buffer], spec: OutSpec) -> Result<Buffer> {
        Ok(self.compute_fanout(kernel, inputs, spec, &[])?.0)
    }

    /// Every whole copy is written in the kernel's pass, while the result is in cache; a range
    /// of the result is copied from it after.
    fn compute_fanout(
        &self,
        kernel: &Kernel,
        inputs: &[&Buffer],
        spec: OutSpec,
        to: &[Delivery],
    ) -> Result<(Buffer, Vec<Buffer>)> {
        crate::failpoint::hit(self.device, "cpu kernel launch")?;
        let ins = host_inputs(inputs)?;
        let mut copies = Vec::with_capacity(to.len());
        for d in to {
            copies.push(CpuBackend::on(d.to)?.alloc(d.out(spec))?);
        }
        let mut out = self.alloc(spec)?;
        let whole = |i: &usize| to[*i].is_whole(spec.len);
        let (mut fanned, mut ranged): (Vec<(usize, &mut Buffer)>, Vec<_>) =
            copies.iter_mut().enumerate().partition(|(i, _)| whole(i));
        let mut fan: Vec<&mut [u8]> = fanned.iter_mut().map(|(_, b)| out_bytes(b)).collect::<Result<_>>()?;
        let o = out_bytes(&mut out)?;
        run_kernel(kernel, &ins, inputs.first().map_or(spec.dtype, |b| b.dtype), spec.dtype, o, &mut fan);
        let size = spec.dtype.size();
        for (i, b) in &mut ranged {
            let r = &to[*i].range;
            kernels::copy_bytes(&o[r.start * size..r.end * size], out_bytes(b)?);
        }
        Ok((out, copies))
    }

    fn htod(&self, src: &Buffer) -> Result<Buffer> {
        crate::failpoint::hit(self.device, "cpu copy")?;
        src.wait()?;
        let mut out = self.alloc(OutSpec { dtype: src.dtype, len: src.len })?;
        kernels::copy_bytes(src.host_bytes("cpu copy")?, out_bytes(&mut out)?);
        Ok(out)
    }

    fn dtoh(&self, src: &Buffer, to: Device) -> Result<Buffer> {
        Err(Error::internal(format!("copy {} -> {to}", src.device), "the CPU backend has no device memory"))
    }

    fn dtod(&self, src: &Buffer, to: Device) -> Result<Buffer> {
        self.dtoh(src, to)
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::graph::ReduceKind;

    fn f32s(b: &Buffer) -> Vec<f32> {
        typed::<f32>(b.host_bytes("test").expect("host bytes")).to_vec()
    }

    /// A sum of three random shards at odd sizes delivered whole and in ranges (a tail, the
    /// middle, an empty one) by the CPU backend's own fanout and by the default
    /// `compute_then_copy` (what a Vulkan device does): every element of every copy against the
    /// f64 reference; a range past the result is refused before anything runs. The largest size
    /// runs on the thread pool, each whole copy written chunk by chunk.
    #[test]
    fn a_fold_delivers_whole_copies_and_ranges() {
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        let be = CpuBackend::on(Device::Cpu(0)).unwrap();
        for n in [1usize, 7, 4099, kernels::PAR_MIN_BYTES / 4 + 3] {
            let shards: Vec<Vec<f32>> =
                (0..3).map(|_| (0..n).map(|_| r.random_range(-100.0f32..100.0)).collect()).collect();
            let bufs: Vec<Buffer> =
                shards.iter().map(|v| Buffer::from_vec(Device::Cpu(0), v.clone())).collect();
            let refs: Vec<&Buffer> = bufs.iter().collect();
            let want: Vec<f64> =
                (0..n).map(|i| shards.iter().map(|v| f64::from(v[i])).sum::<f64>()).collect();
            let to = Delivery::mixed(n);
            let kernel = Kernel::Reduce { kind: ReduceKind::Sum, scale: None };
            let spec = OutSpec { dtype: DType::F32, len: n };
            for (how, got) in [
                ("fanout", be.compute_fanout(&kernel, &refs, spec, &to)),
                ("compute then copy", super::super::compute_then_copy(&be, &kernel, &refs, spec, &to)),
            ] {
                let (out, copies) = got.expect("computed");
                let close = |got: &[f32], want: &[f64]| {
                    got.len() == want.len()
                        && got
                            .iter()
                            .zip(want)
                            .all(|(&g, &w)| (f64::from(g) - w).abs() <= 1e-4 * (1.0 + w.abs()))
                };
                assert!(close(&f32s(&out), &want), "{how}: the result, {n} elements, seed {seed}");
                for (c, d) in copies.iter().zip(&to) {
                    assert_eq!(c.device, d.to);
                    assert!(close(&f32s(c), &want[d.range.clone()]), "{how}: {d:?}, seed {seed}");
                }
            }
        }
        let past = [Delivery { to: Device::Cpu(1), range: 2..5 }];
        let spec = OutSpec { dtype: DType::F32, len: 4 };
        assert!(matches!(Delivery::check_all(&past, Device::Cpu(0), spec), Err(Error::Internal { .. })));
        let gpu = [Delivery::whole(Device::Cuda(0), 4)];
        assert!(Delivery::check_all(&gpu, Device::Cpu(0), spec).is_err(), "not a host device");
        assert!(Delivery::check_all(&Delivery::wholes(&[Device::Cpu(1)], 4), Device::Cpu(0), spec).is_ok());
    }

    /// Found on the GPU machine (`collective_props` with a CUDA member, empty shards): an empty
    /// host buffer at an address no f32 may have reached a host fold, whose cast panicked.
    #[test]
    fn empty_bytes_at_any_address_are_no_elements() {
        let mut words = [0u32; 2];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
        assert!(
            typed::<f32>(&bytes[1..1]).is_empty() && typed::<f64>(&bytes[3..3]).is_empty(),
            "odd addresses"
        );
        assert!(typed_mut::<i32>(&mut bytes[1..1]).is_empty());
        assert!(typed::<f32>(&[]).is_empty(), "the empty literal");
        let words = [1.5f32, -2.0];
        assert_eq!(typed::<f32>(bytemuck::cast_slice(&words)), words, "other bytes cast as before");
    }
}
