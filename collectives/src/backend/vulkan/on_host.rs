//! Small kernels of a Vulkan device done by the host: a slice or concat of tensors in host memory
//! as host copies, and an elementwise kernel (a binary op, an n-ary reduce, a scale, a cast) whose
//! inputs and output together are fewer than [`VULKAN_HOST_KERNEL_BYTES`] by the CPU backend's
//! own kernels, both through the buffers' mappings, with no submission.
//!
//! Why: a Vulkan dispatch and its wait cost a GPU some tens of microseconds whatever the size
//! (a 4 KiB `local_reduce` of two shards on an H200's `vulkan:0`: 24–28 µs,
//! `bench/gpu/26-peer-waits`; on lavapipe 85–126 µs), while the host folds 4 KiB in about one
//! (`bench/lavapipe-host-kernels`). Tensors this small live in host memory the host reads fast
//! ([`super::VULKAN_HOST_BELOW_BYTES`]), so the host reads and writes them in place. The result
//! is the shader's bit for bit: the shaders compute what the CPU backend computes, in the same
//! order, but where the module doc of [`super`] says a driver may differ (subnormals flushed, a
//! quotient's last place), and there the host's result is IEEE's.
//!
//! ```
//! use collectives::{Device, Tensor};
//! # if !collectives::available_devices().contains(&Device::Vulkan(0)) { return Ok(()); }
//! let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3], Device::Vulkan(0))?;
//! // Twelve bytes in twice, twelve out: added by the host, in the tensors' mapped memory.
//! assert_eq!(a.add(&a)?.to_vec::<f32>()?, vec![2.0, 4.0, 6.0]);
//! # Ok::<(), collectives::Error>(())
//! ```

use std::sync::Arc;

use super::memory::DevBuf;
use super::{VulkanBackend, copy, elementwise, row_copies};
use crate::backend::{Buffer, Kernel, OutSpec};
use crate::error::Result;

/// Environment variable: an elementwise kernel of a Vulkan device whose inputs and output
/// together are fewer than this many bytes, all in memory the host maps and reads fast, is run
/// by the host. Default [`VULKAN_HOST_KERNEL_BYTES`]; `0` runs every kernel on the device. Read
/// when the device is opened.
pub const VULKAN_HOST_KERNEL_ENV: &str = "COLLECTIVES_VULKAN_HOST_KERNEL_BYTES";

/// Elementwise kernels moving fewer bytes than this (inputs and output) are run by the host
/// (unless [`VULKAN_HOST_KERNEL_ENV`] says otherwise). Measured on an H100 machine's `vulkan:0`
/// and 16 host cores (`bench/gpu/44-staged-calls`, runs b, d and e, two rounds, µs, on the
/// device / by the host): a `local_reduce` of two shards 30.4–30.6 / 10.1–10.2 at 128 KiB
/// (384 KiB moved), of eight 53.4–83.9 / 26.1–28.0 at 128 KiB (1.1 MiB), of twelve 98.3–101.7 /
/// 53.9–56.3 at 192 KiB (2.4 MiB), of sixteen 148.1–153.6 / 68.4–74.3 at 240 KiB (4.0 MiB; the
/// host's thread pool from 2 MiB moved); the all_reduce of `vulkan:0,cpu:0,cpu:1,cpu:2` at
/// 128 KiB, a Vulkan fold of 640 KiB, 88.6–89.7 / 55.2–60.3. The host was ahead at every size
/// measured; this bound is the largest. On an NVIDIA GPU that CUDA may share, tensors from
/// 256 KiB have device memory, which the host does not read: their kernels stay the device's
/// whatever this bound (a fold of two 256 KiB shards 22.7–23.3 either way). On the 2-core
/// development machine two shards of 64 KiB (192 KiB moved) fold in 4.5–7.4 µs
/// (`bench/lavapipe-host-kernels`).
pub const VULKAN_HOST_KERNEL_BYTES: u64 = 4 << 20;

/// The bound below which elementwise kernels are run by the host: [`VULKAN_HOST_KERNEL_ENV`] or
/// [`VULKAN_HOST_KERNEL_BYTES`].
pub(super) fn host_kernel_below() -> u64 {
    let expected = "a byte count (0 runs every kernel on the device)";
    crate::knob::var(VULKAN_HOST_KERNEL_ENV, expected, |_: &u64| true).unwrap_or(VULKAN_HOST_KERNEL_BYTES)
}

impl VulkanBackend {
    /// `kernel` of `inputs` (whose device buffers are `ins`) done by the host into `out`, a new
    /// buffer of `spec`, where it suits the host: a slice or concat as host copies
    /// ([`copy::suits_host`]), an elementwise kernel by the CPU backend's kernels
    /// ([`VulkanBackend::host_computes`]). The inputs are waited for on the host first. `false`
    /// (nothing done) where it does not suit.
    pub(super) fn on_host(
        &self,
        kernel: &Kernel,
        inputs: &[&Buffer],
        ins: &[&Arc<DevBuf>],
        out: &DevBuf,
        spec: OutSpec,
    ) -> Result<bool> {
        if let Some(parts) = row_copies(kernel, ins, spec.dtype) {
            if !copy::suits_host(parts.iter().map(|(b, _)| b.as_ref()), out, self.gpu.host_below) {
                return Ok(false);
            }
            wait_all(inputs)?;
            // SAFETY: `suits_host` holds, the inputs' writers are waited for, `out` is new; the
            // rows are the kernel's, which the kernel contract checked against its inputs and
            // output.
            unsafe { copy::on_host(&parts, out) };
            return Ok(true);
        }
        if !self.host_computes(kernel, inputs, ins, out, spec) {
            return Ok(false);
        }
        // SAFETY: `host_computes` holds: `out` is mapped and holds `spec`'s bytes; it is new and
        // ours alone.
        let dst = unsafe { out.mapped_bytes_mut(spec.len * spec.dtype.size()) };
        // SAFETY: `host_computes` holds.
        unsafe { self.compute_mapped(kernel, inputs, ins, dst, spec) }?;
        Ok(true)
    }

    /// Runs `kernel` of `inputs` (device buffers `ins`) into `dst` on the host, with the CPU
    /// backend's kernels, once the inputs' writers are done.
    ///
    /// # Safety
    /// [`VulkanBackend::host_computes`] holds for `kernel`, `inputs` and `ins`.
    pub(super) unsafe fn compute_mapped(
        &self,
        kernel: &Kernel,
        inputs: &[&Buffer],
        ins: &[&Arc<DevBuf>],
        dst: &mut [u8],
        spec: OutSpec,
    ) -> Result<()> {
        crate::failpoint::hit(self.gpu.device, "vulkan dispatch")?;
        wait_all(inputs)?;
        // SAFETY: as the caller guarantees (`host_computes`): every input is mapped, holds its
        // bytes at its element's alignment, and its writer is done (waited above).
        let bytes: Vec<&[u8]> =
            inputs.iter().zip(ins).map(|(b, m)| unsafe { m.mapped_bytes(b.bytes()) }).collect();
        let in_dtype = inputs.first().map_or(spec.dtype, |b| b.dtype);
        crate::backend::cpu::run_kernel(kernel, &bytes, in_dtype, spec.dtype, dst, &mut []);
        Ok(())
    }

    /// Whether the host runs elementwise `kernel` of `inputs` (device buffers `ins`) into `out`
    /// (or a range of it on `spec`'s elements): inputs and output together fewer than the
    /// device's bound ([`VULKAN_HOST_KERNEL_ENV`]), every buffer in memory the host reads fast
    /// ([`DevBuf::host_reads_fast`]), and each mapping aligned for its elements (the CPU kernels
    /// read them as typed slices).
    pub(super) fn host_computes(
        &self,
        kernel: &Kernel,
        inputs: &[&Buffer],
        ins: &[&Arc<DevBuf>],
        out: &DevBuf,
        spec: OutSpec,
    ) -> bool {
        let traffic = inputs.iter().map(|b| b.bytes()).sum::<usize>() + spec.len * spec.dtype.size();
        let fits = |m: &DevBuf, size: usize| {
            // SAFETY: mapped (checked first); only the address is read.
            m.host_reads_fast() && (unsafe { m.mapped_bytes(0) }.as_ptr() as usize).is_multiple_of(size)
        };
        elementwise(kernel)
            && (traffic as u64) < self.gpu.host_kernel_below
            && fits(out, spec.dtype.size())
            && inputs.iter().zip(ins).all(|(b, m)| fits(m, b.dtype.size()))
    }
}

/// Waits for the writer of each of `inputs`.
fn wait_all(inputs: &[&Buffer]) -> Result<()> {
    inputs.iter().try_for_each(|b| b.wait())
}

#[cfg(test)]
mod tests {
    use half::{bf16, f16};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::super::VulkanBackend;
    use super::super::tests::{backend, device_kernels, host_kernels_below};
    use crate::backend::cpu::{CpuBackend, with_type};
    use crate::backend::{Backend, Buffer, Kernel, OutSpec};
    use crate::device::Device;
    use crate::dtype::{DType, Element};
    use crate::graph::{BinaryOp, ReduceKind, Scale};

    /// `vals` (exact in `dtype`) as a buffer of `vk`, or of the host where `vk` is `None`.
    fn buffer(vk: Option<&VulkanBackend>, dtype: DType, vals: &[f64]) -> Buffer {
        let host = with_type!(dtype, T => {
            Buffer::from_vec(Device::Cpu(0), vals.iter().map(|&v| T::from_f64(v)).collect::<Vec<T>>())
        });
        match vk {
            Some(vk) => vk.htod(&host).unwrap(),
            None => host,
        }
    }

    /// The values of `b` (of either backend), as f64, once written.
    fn values(vk: &VulkanBackend, b: &Buffer) -> Vec<f64> {
        let host = if b.device.is_host() { None } else { Some(vk.dtoh(b, Device::Cpu(0)).unwrap()) };
        let h = host.as_ref().unwrap_or(b);
        h.wait().unwrap();
        let bytes = h.host_bytes("test").unwrap();
        with_type!(b.dtype, T => bytemuck::cast_slice::<u8, T>(bytes).iter().map(|v| v.to_f64()).collect())
    }

    /// Random values exact in `dtype`, none zero (they divide), small enough that integer sums
    /// and products of three stay exact.
    fn random(dtype: DType, n: usize, r: &mut StdRng) -> Vec<f64> {
        let one = |r: &mut StdRng| match dtype {
            DType::U8 => r.random_range(1..=6) as f64,
            _ if !dtype.is_float() => r.random_range(1..=40) as f64 * if r.random() { 1.0 } else { -1.0 },
            _ => r.random_range(0.25..8.0) * if r.random() { 1.0 } else { -1.0 },
        };
        (0..n).map(|_| with_type!(dtype, T => T::from_f64(one(r)).to_f64())).collect()
    }

    /// What `kernel` computes of `ins`, in f64, rounded to `out` (the cast's target): the
    /// reference the host's and the device's results are checked against.
    fn reference(kernel: &Kernel, ins: &[Vec<f64>], out: DType) -> Vec<f64> {
        let int = !out.is_float();
        let bin = |op: BinaryOp, a: f64, b: f64| match op {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div if int => (a / b).trunc(),
            BinaryOp::Div => a / b,
            BinaryOp::Max => a.max(b),
            BinaryOp::Min => a.min(b),
        };
        let scale = |s: Option<Scale>, v: f64| match s {
            Some(Scale::Mul(f)) => v * f,
            Some(Scale::Div(f)) if int => (v / f).trunc(),
            Some(Scale::Div(f)) => v / f,
            None => v,
        };
        let at = |i: usize| -> f64 {
            match kernel {
                Kernel::Binary(op) => bin(*op, ins[0][i], ins[1][i]),
                Kernel::Reduce { kind, scale: s } => {
                    scale(*s, ins[1..].iter().fold(ins[0][i], |a, x| bin(kind.binary(), a, x[i])))
                }
                Kernel::Scale(s) => scale(Some(*s), ins[0][i]),
                _ => ins[0][i],
            }
        };
        // u8 differences wrap (the only results of these inputs out of their dtype's range).
        let wrap = |v: f64| if out == DType::U8 { v.rem_euclid(256.0) } else { v };
        // `Element::from_f64` (once to nearest-even), not `half`'s inherent `bf16::from_f64`.
        (0..ins[0].len())
            .map(|i| with_type!(out, T => <T as Element>::from_f64(wrap(at(i))).to_f64()))
            .collect()
    }

    /// The kernels checked, with their input count and output dtype for inputs of `dtype`.
    fn kernels(dtype: DType) -> Vec<(Kernel, usize, DType)> {
        let mut ks: Vec<(Kernel, usize, DType)> =
            [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Max, BinaryOp::Min]
                .into_iter()
                .map(|op| (Kernel::Binary(op), 2, dtype))
                .collect();
        for kind in [ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min] {
            ks.push((Kernel::Reduce { kind, scale: None }, 3, dtype));
        }
        ks.push((Kernel::Reduce { kind: ReduceKind::Sum, scale: Some(Scale::Div(3.0)) }, 3, dtype));
        ks.push((Kernel::Scale(Scale::Mul(3.0)), 1, dtype));
        let other = if dtype == DType::F32 { DType::BF16 } else { DType::F32 };
        ks.push((Kernel::Cast, 1, other));
        ks
    }

    /// How far a result of `kernel` in `dtype` may be from the f64 reference, relative to the
    /// result (to the inputs' magnitudes for a sum, which may cancel): two units in the last place
    /// where a float kernel rounds more than once (a fold of three, then a scale), nothing
    /// elsewhere (integers, and one rounding as the reference rounds).
    fn ulps(kernel: &Kernel, dtype: DType) -> f64 {
        let eps = match dtype {
            DType::F64 => f64::EPSILON,
            DType::F32 => f32::EPSILON as f64,
            DType::F16 => f16::EPSILON.to_f64(),
            DType::BF16 => bf16::EPSILON.to_f64(),
            _ => return 0.0,
        };
        if matches!(kernel, Kernel::Reduce { .. }) { 2.0 * eps } else { 0.0 }
    }

    /// Every elementwise kernel of every dtype on small tensors (1, 7 and 1001 elements): the
    /// host runs it, with no submission, and its result is bit for bit the device's shader's
    /// (which made a submission) and the CPU backend's, every element against the f64 reference
    /// ([`ulps`]).
    #[test]
    fn small_elementwise_kernels_are_the_hosts_bit_for_bit_the_shaders() {
        let (Some(host), Some(device)) = (backend(), device_kernels()) else { return };
        let mut r = StdRng::seed_from_u64(rand::rng().random());
        for dtype in DType::ALL {
            if host.gpu.features.require(host.gpu.device, "test", &[dtype]).is_err() {
                println!("{dtype}: not on {}", host.gpu.device);
                continue;
            }
            for n in [1, 7, 1001] {
                for (kernel, arity, out) in kernels(dtype) {
                    let ins: Vec<Vec<f64>> = (0..arity).map(|_| random(dtype, n, &mut r)).collect();
                    let spec = OutSpec { dtype: out, len: n };
                    let run = |vk: Option<&VulkanBackend>| {
                        let bufs: Vec<Buffer> = ins.iter().map(|v| buffer(vk, dtype, v)).collect();
                        let refs: Vec<&Buffer> = bufs.iter().collect();
                        let before = vk.map(|vk| vk.gpu.state.lock().last_submitted());
                        let got = match vk {
                            Some(vk) => vk.compute(&kernel, &refs, spec),
                            None => CpuBackend::new(0).compute(&kernel, &refs, spec),
                        };
                        let submitted = vk.map(|vk| vk.gpu.state.lock().last_submitted()) != before;
                        (values(vk.unwrap_or(&host), &got.unwrap()), submitted)
                    };
                    let what = format!("{kernel:?} of {n} {dtype}");
                    let ((mine, by_host), (shader, by_device)) = (run(Some(&host)), run(Some(&device)));
                    assert!(!by_host && by_device, "{what}: submitted {by_host} / {by_device}");
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&mine), bits(&shader), "{what}: host against the shader");
                    assert_eq!(bits(&mine), bits(&run(None).0), "{what}: host against the CPU backend");
                    let want = reference(&kernel, &ins, out);
                    let size = |i: usize| match kernel {
                        Kernel::Reduce { kind: ReduceKind::Sum, .. } => ins.iter().map(|x| x[i].abs()).sum(),
                        _ => want[i].abs(),
                    };
                    let bad =
                        (0..n).filter(|&i| (mine[i] - want[i]).abs() > size(i) * ulps(&kernel, out)).count();
                    assert_eq!(bad, 0, "{what}: {:?} against {:?}", &mine[..n.min(4)], &want[..n.min(4)]);
                }
            }
        }
    }

    /// The bound the tests of it set: small enough that every tensor of theirs is in host memory
    /// (under 256 KiB, on an NVIDIA GPU that CUDA may share too; the default bound is past it).
    const TEST_BOUND: u64 = 192 << 10;

    /// The bound counts the inputs and the output: a sum of two views whose bytes fall one
    /// element short of it is the host's, one element more is a submission. The views are of a
    /// kernel's output still being written (a submission, too large for the host), which the host
    /// waits for.
    #[test]
    fn the_bound_counts_every_byte_and_the_host_waits_for_the_inputs() {
        let Some(vk) = host_kernels_below(TEST_BOUND) else { return };
        let mut r = StdRng::seed_from_u64(rand::rng().random());
        // Three buffers of `len` f32 each: fewer than the bound's bytes, or not.
        let fits = (vk.gpu.host_kernel_below as usize - 1) / 12;
        // The first sum moves past the bound (a submission); its result is in host memory.
        let n = fits + 5;
        let x = random(DType::F32, n, &mut r);
        let up = buffer(Some(&vk), DType::F32, &x);
        let add = Kernel::Binary(BinaryOp::Add);
        let last = || vk.gpu.state.lock().last_submitted();
        let before = last();
        let twice = vk.compute(&add, &[&up, &up], OutSpec { dtype: DType::F32, len: n }).unwrap();
        assert_eq!(last(), before + 1, "{n} elements: a submission");
        for (len, on_host) in [(fits, true), (fits + 1, false)] {
            let v = super::super::view(&twice, 4 * 3, len).unwrap().expect("a view");
            let before = last();
            let sum = vk.compute(&add, &[&v, &v], OutSpec { dtype: DType::F32, len }).unwrap();
            assert_eq!(last() == before, on_host, "{len} elements");
            let got = values(&vk, &sum);
            let bad = (0..len).filter(|&i| got[i] != 4.0 * x[3 + i]).count();
            assert_eq!(bad, 0, "{len} elements: {:?}", &got[..4]);
        }
    }

    /// A small join whose parts are a copy from the host, a sum of three computed into its range
    /// off the kernels' 16-byte blocks, and a copy of the device's own buffer: the host does all
    /// of it, with no submission, bit for bit what the device's submission makes, every element
    /// against the f64 reference. Where the computed part is too large for the host, the join
    /// is submitted.
    #[test]
    fn a_small_join_with_a_computed_part_is_the_hosts() {
        use crate::backend::join::Part;
        let (Some(host), Some(device)) = (host_kernels_below(TEST_BOUND), device_kernels()) else { return };
        let mut r = StdRng::seed_from_u64(rand::rng().random());
        let sum = Kernel::Reduce { kind: ReduceKind::Sum, scale: None };
        let fits = (host.gpu.host_kernel_below as usize - 1) / 16;
        for (n, by_host) in [(1, true), (7, true), (fits, true), (fits + 1, false)] {
            let (head, tail) = (random(DType::F32, 3, &mut r), random(DType::F32, 5, &mut r));
            let shards: Vec<Vec<f64>> = (0..3).map(|_| random(DType::F32, n, &mut r)).collect();
            let mut want = head.clone();
            want.extend(reference(&sum, &shards, DType::F32));
            want.extend(&tail);
            let run = |vk: &VulkanBackend| {
                let first = buffer(None, DType::F32, &head);
                let ins: Vec<Buffer> = shards.iter().map(|v| buffer(Some(vk), DType::F32, v)).collect();
                let last = buffer(Some(vk), DType::F32, &tail);
                let spec = OutSpec { dtype: DType::F32, len: n };
                let computed =
                    Part::Computed { kernel: sum.clone(), inputs: ins.iter().collect(), out: spec };
                let parts = [Part::Copy(&first), computed, Part::Copy(&last)];
                let before = vk.gpu.state.lock().last_submitted();
                let out = vk.join(&parts, OutSpec { dtype: DType::F32, len: n + 8 }).unwrap();
                let submitted = vk.gpu.state.lock().last_submitted() != before;
                (values(vk, &out), submitted)
            };
            let ((mine, on_device), (shader, _)) = (run(&host), run(&device));
            assert_eq!(on_device, !by_host, "{n} summed: submitted {on_device}");
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&mine), bits(&shader), "{n} summed: host against the device");
            let size = |i: usize| {
                if (3..3 + n).contains(&i) { shards.iter().map(|x| x[i - 3].abs()).sum() } else { 0.0 }
            };
            let bad =
                (0..n + 8).filter(|&i| (mine[i] - want[i]).abs() > size(i) * ulps(&sum, DType::F32)).count();
            assert_eq!(bad, 0, "{n} summed: {:?} against {:?}", &mine[..6.min(n + 8)], &want[..6.min(n + 8)]);
        }
    }
}
