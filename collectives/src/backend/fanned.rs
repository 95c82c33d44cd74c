//! A small fold or join of one CUDA device beside host and Vulkan devices as one kernel of the
//! CUDA device, its result delivered to every other member in the same step (where
//! [`crate::collective::cuda_fans_out`] says).
//!
//! Why: staged through the host (`backend/cpu/staged.rs`) such a call waits for two round trips
//! to the GPU, the CUDA shard's download and then its output's upload; through the graph it pays
//! for the pass, the schedule and a hop per member. Here the CUDA backend's `compute_fanout`
//! reads the host shards in place and writes one copy of the result to the host in the kernel's
//! own pass (`backend/cuda/mapped.rs`): one round trip, issued directly (`exec/direct.rs`). Each
//! host member's output is a view of that copy (host devices share one memory; a reduce_scatter
//! or all_to_all member's, of its part: an all_to_all's kernel joins the shards' rows, row j of
//! each its part j, so member j's output is the join's range j), so one launch serves every kind:
//! a copy of each member's part would take a second. A Vulkan member's shard, in host memory at
//! these sizes, is copied to the host first and its output copied back: host copies both.
//!
//! ```
//! use collectives::{Device, DeviceGroup, ReduceOp, Tensor, realize};
//! # let have = collectives::available_devices();
//! # if !have.contains(&Device::Cuda(0)) || !have.contains(&Device::Vulkan(0)) { return Ok(()); }
//! let members = [Device::Vulkan(0), Device::Cuda(0)];
//! let g = DeviceGroup::new(members.to_vec())?;
//! let shards: Vec<Tensor> = members
//!     .iter()
//!     .enumerate()
//!     .map(|(i, &d)| Tensor::from_vec(vec![i as f32; 4], [4], d))
//!     .collect::<Result<_, _>>()?;
//! let out = g.all_reduce(&shards, ReduceOp::Sum)?; // one kernel on cuda:0
//! assert!(collectives::Plan::of(&out).kernels[0].op.contains("fanned out from cuda:0"));
//! realize(&out)?;
//! assert_eq!(out[0].to_vec::<f32>()?, vec![1.0; 4]);
//! # Ok::<(), collectives::Error>(())
//! ```

use std::ops::Range;
use std::sync::Arc;

use super::{Buffer, Delivery, Kernel, OutSpec, copy};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::graph::MultiKernel;
use crate::sized::try_vec;

/// `kernel` on device `at` (the group's CUDA device; any backend's `compute_fanout` serves) over
/// one shard per member, each member's output its range of the result: a view of it on `at`,
/// elsewhere a view or a copy of the one copy the kernel's step delivers to `host`.
pub(crate) struct FannedCall {
    /// The collective, for messages and plans.
    pub name: &'static str,
    /// The device that runs the kernel.
    pub at: Device,
    /// The host device standing in for each member that is neither `at` nor a host device.
    pub host: Device,
    /// The fold or join over the shards, in member order.
    pub kernel: Kernel,
    /// The elements of its result.
    pub len: usize,
    /// Each output's device and the elements of the result it holds, in output order.
    pub outs: Vec<(Device, Range<usize>)>,
}

impl FannedCall {
    /// `b` where the kernel reads it in place (on `at` or a host device), else its copy on
    /// `host`.
    fn readable(&self, b: &Arc<Buffer>) -> Result<Arc<Buffer>> {
        match b.device == self.at || b.device.is_host() {
            true => Ok(b.clone()),
            false => Ok(Arc::new(copy(b, self.host)?)),
        }
    }

    /// Elements `range` of `of` (the result, or its copy on `host`) as a view on `device`.
    fn part(&self, of: &Arc<Buffer>, range: &Range<usize>, device: Device) -> Result<Arc<Buffer>> {
        if *range == (0..self.len) && of.device == device {
            return Ok(of.clone());
        }
        let slice =
            Kernel::Slice { outer: 1, in_mid: self.len, start: range.start, len: range.len(), inner: 1 };
        let view = super::view(&slice, of, device)?;
        view.map(Arc::new)
            .ok_or_else(|| Error::internal(self.name(), format!("no view of the result on {device}")))
    }

    /// Output `range` for member `d` off `at`: a view of the host copy, on `d` where it is a host
    /// device, else copied there from `host`.
    fn deliver(&self, copy_on_host: &Arc<Buffer>, range: &Range<usize>, d: Device) -> Result<Arc<Buffer>> {
        match d.is_host() {
            true => self.part(copy_on_host, range, d),
            false => Ok(Arc::new(copy(self.part(copy_on_host, range, self.host)?.as_ref(), d)?)),
        }
    }
}

impl MultiKernel for FannedCall {
    fn name(&self) -> String {
        format!("{} fanned out from {}", self.name, self.at)
    }

    /// The kernel writes the result on `at` and, in the same pass, one whole copy on `host`
    /// (one launch: a range copy would take a second); each other member's output is a view
    /// of that copy (host devices share one memory), or copied from it.
    fn run(&self, inputs: &[Arc<Buffer>]) -> Result<Vec<Arc<Buffer>>> {
        let staged = try_vec(inputs.iter().map(|b| self.readable(b)))?;
        let refs: Vec<&Buffer> = staged.iter().map(|b| b.as_ref()).collect();
        let Some(first) = refs.first() else {
            return Err(Error::internal(self.name(), "no shards"));
        };
        let out = OutSpec { dtype: first.dtype, len: self.len };
        self.kernel.check_streamed(self.at, &refs, out)?;
        let elsewhere = self.outs.iter().any(|(d, _)| *d != self.at);
        let to: Vec<Delivery> =
            elsewhere.then_some(Delivery { to: self.host, range: 0..self.len }).into_iter().collect();
        Delivery::check_all(&to, self.at, out)?;
        let (result, copies) = super::get(self.at)?.compute_fanout(&self.kernel, &refs, out, &to)?;
        let result = Arc::new(result);
        let on_host = copies.into_iter().next().map(Arc::new);
        try_vec(self.outs.iter().map(|(d, range)| match (*d == self.at, &on_host) {
            (true, _) => self.part(&result, range, self.at),
            (false, Some(h)) => self.deliver(h, range, *d),
            (false, None) => {
                Err(Error::internal(self.name(), "the host copy missing from the kernel's step"))
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rand::Rng;

    use super::*;
    use crate::graph::ReduceKind;

    /// `hosts` host devices, and `vulkan:0` where `vulkan` and one works (lavapipe in CI).
    fn members(hosts: u32, vulkan: bool) -> Vec<Device> {
        let mut d: Vec<Device> = (0..hosts).map(Device::Cpu).collect();
        if vulkan && crate::available_devices().contains(&Device::Vulkan(0)) {
            d.push(Device::Vulkan(0));
        }
        d
    }

    /// Fresh random shards of `len` f32 each, one per member, and their values in f64.
    fn shards(devices: &[Device], len: usize) -> (Vec<Arc<Buffer>>, Vec<Vec<f64>>) {
        let mut r = rand::rng();
        let vals: Vec<Vec<f32>> =
            devices.iter().map(|_| (0..len).map(|_| r.random_range(-8.0..8.0)).collect()).collect();
        let on = |(v, &d): (&Vec<f32>, &Device)| -> Arc<Buffer> {
            let host = Arc::new(Buffer::from_vec(Device::Cpu(0), v.clone()));
            if d.is_host() { host } else { Arc::new(copy(&host, d).unwrap()) }
        };
        let bufs = vals.iter().zip(devices).map(on).collect();
        (bufs, vals.iter().map(|v| v.iter().map(|&x| x as f64).collect()).collect())
    }

    /// Output `b`'s elements, read back to the host.
    fn read(b: &Arc<Buffer>) -> Vec<f32> {
        let host = if b.device.is_host() { b.clone() } else { Arc::new(copy(b, Device::Cpu(0)).unwrap()) };
        bytemuck::cast_slice::<u8, f32>(host.host_bytes("test").unwrap()).to_vec()
    }

    /// The call on `cpu:0` (any backend's `compute_fanout` serves) with `cpu:1` standing in for
    /// the Vulkan member.
    fn call(name: &'static str, kernel: Kernel, len: usize, outs: Vec<(Device, Range<usize>)>) -> FannedCall {
        FannedCall { name, at: Device::Cpu(0), host: Device::Cpu(1), kernel, len, outs }
    }

    /// A fold whose every output is the whole result (an all_reduce) or its part (a
    /// reduce_scatter), a join (an all_gather) and a join of the shards' rows whose every output
    /// is its part (an all_to_all), over shards of `n * each` elements: each output on its member,
    /// every element against the f64 reference, the inputs untouched.
    fn every_form(devices: &[Device], each: usize) {
        let n = devices.len();
        let len = n * each;
        let (ins, vals) = shards(devices, len);
        let sum: Vec<f64> = (0..len).map(|i| vals.iter().map(|v| v[i]).sum()).collect();
        let fold = Kernel::Reduce { kind: ReduceKind::Sum, scale: None };
        let check = |got: &[Arc<Buffer>], want: &dyn Fn(usize) -> Vec<f64>, what: &str| {
            assert_eq!(got.iter().map(|b| b.device).collect::<Vec<_>>(), devices, "{what}");
            for (i, b) in got.iter().enumerate() {
                let (got, want) = (read(b), want(i));
                assert_eq!(got.len(), want.len(), "{what} {i}");
                for (k, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    assert!((g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()), "{what} {i}[{k}]: {g} vs {w}");
                }
            }
        };

        let whole = devices.iter().map(|&d| (d, 0..len)).collect();
        let got = call("all_reduce", fold.clone(), len, whole).run(&ins).unwrap();
        check(&got, &|_| sum.clone(), "all_reduce");

        let parts = devices.iter().enumerate().map(|(i, &d)| (d, i * each..(i + 1) * each)).collect();
        let got = call("reduce_scatter", fold, len, parts).run(&ins).unwrap();
        check(&got, &|i| sum[i * each..(i + 1) * each].to_vec(), "reduce_scatter");

        let join = Kernel::Concat { outer: 1, mids: vec![len; n], inner: 1 };
        let joined: Vec<f64> = vals.concat();
        let whole = devices.iter().map(|&d| (d, 0..n * len)).collect();
        let got = call("all_gather", join, n * len, whole).run(&ins).unwrap();
        check(&got, &|_| joined.clone(), "all_gather");

        let rows = Kernel::Concat { outer: n, mids: vec![each; n], inner: 1 };
        let column = |j: usize| vals.iter().flat_map(|v| v[j * each..(j + 1) * each].to_vec()).collect();
        let parts = devices.iter().enumerate().map(|(j, &d)| (d, j * len..(j + 1) * len)).collect();
        let got = call("all_to_all", rows, n * len, parts).run(&ins).unwrap();
        check(&got, &column, "all_to_all");

        for (b, v) in ins.iter().zip(&vals) {
            assert!(read(b).iter().zip(v).all(|(&g, &w)| g as f64 == w), "an input changed");
        }
    }

    #[test]
    fn every_member_gets_its_range_of_the_one_result() {
        every_form(&members(3, true), 1031);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Any number of host members, with or without a Vulkan one, any part length (empty
        /// ones too): every form, every element.
        #[test]
        fn every_form_holds_for_any_members_and_length(hosts in 2u32..=5, vulkan in any::<bool>(), each in 0usize..300) {
            every_form(&members(hosts, vulkan), each);
        }
    }

    /// A part that does not lie within the result, or a kernel over shards it cannot take, is an
    /// error, not a panic.
    #[test]
    fn a_call_that_does_not_fit_its_shards_is_an_error() {
        let devices = [Device::Cpu(0), Device::Cpu(2)];
        let (ins, _) = shards(&devices, 8);
        let fold = Kernel::Reduce { kind: ReduceKind::Sum, scale: None };
        let beyond = vec![(Device::Cpu(0), 0..8), (Device::Cpu(2), 4..12)];
        assert!(call("reduce_scatter", fold.clone(), 8, beyond).run(&ins).is_err());
        let long = vec![(Device::Cpu(0), 0..16), (Device::Cpu(2), 0..16)];
        assert!(call("all_reduce", fold, 16, long).run(&ins).is_err());
        assert!(call("all_reduce", Kernel::Cast, 8, vec![]).run(&[]).is_err());
    }
}
