//! A host call over a group with members that are not host devices: their shards are copied to
//! the host first, the host call runs over host buffers only, and their outputs are copied back.
//!
//! Why: a small all_to_all of host devices and a Vulkan device went through the graph — a slice,
//! a hop and a join for every part, 16 parts of 4 KiB for four members — and cost 24–26 µs on the
//! development machine where the all_gather of the same members cost 6. Small Vulkan tensors
//! live in memory the host maps (`COLLECTIVES_VULKAN_HOST_BYTES`), so the Vulkan backend's `dtoh`
//! and `htod` of them are host copies; staged so, the whole call is two such copies a Vulkan
//! member and the host call's one pass. A CUDA member's copies are a download and an upload,
//! each waited for: two round trips to the GPU, which pay only where the graph's would cost
//! more (`collective::host_stages_cuda`). The host device is a host member, or `cpu:0` for a
//! group of Vulkan and CUDA devices alone (the graph routes their hops through it anyway).
//!
//! ```
//! use collectives::{Device, DeviceGroup, Tensor, realize};
//! # if !collectives::available_devices().contains(&Device::Vulkan(0)) { return Ok(()); }
//! let members = [Device::Cpu(0), Device::Cpu(1), Device::Vulkan(0)];
//! let g = DeviceGroup::new(members.to_vec())?;
//! let shards: Vec<Tensor> = members
//!     .iter()
//!     .enumerate()
//!     .map(|(i, &d)| Tensor::from_vec((0..6).map(|k| (10 * i + k) as f32).collect(), [6], d))
//!     .collect::<Result<_, _>>()?;
//! let out = g.all_to_all(&shards, 0)?; // one `host all_to_all` call, vulkan:0 staged
//! realize(&out)?;
//! assert_eq!(out[2].to_vec::<f32>()?, vec![4.0, 5.0, 14.0, 15.0, 24.0, 25.0]);
//! # Ok::<(), collectives::Error>(())
//! ```

use std::sync::Arc;

use crate::backend::{Buffer, copy};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::graph::MultiKernel;
use crate::sized::try_vec;

/// `inner`, a host call with `host` standing in for every device that is not a host device: each
/// input on such a device is copied to `host` (`dtoh`) before, and each output for such a device
/// is copied to it (`htod`) after.
pub(crate) struct HostStaged {
    /// The devices of the outputs, in order.
    pub outs: Vec<Device>,
    /// The host device that stands in for the others.
    pub host: Device,
    /// The call over host devices only: its outputs' devices are `outs`, `host` in place of the
    /// others.
    pub inner: Box<dyn MultiKernel>,
}

impl HostStaged {
    /// `inner` over `outs`, with `host` in place of each that is not a host device.
    pub fn new<K: MultiKernel + 'static>(
        outs: &[Device],
        host: Device,
        inner: impl FnOnce(Vec<Device>) -> K,
    ) -> Self {
        let stand_in = outs.iter().map(|&d| if d.is_host() { d } else { host }).collect();
        HostStaged { outs: outs.to_vec(), host, inner: Box::new(inner(stand_in)) }
    }

    /// `b` on the host: itself, or its copy to `host` (the copy router's `dtoh`).
    fn to_host(&self, b: &Arc<Buffer>) -> Result<Arc<Buffer>> {
        match b.device.is_host() {
            true => Ok(b.clone()),
            false => Ok(Arc::new(copy(b, self.host)?)),
        }
    }

    /// `b` (on the host) on `to`: itself, or its copy there (the copy router's `htod`).
    fn to_member(b: Arc<Buffer>, to: Device) -> Result<Arc<Buffer>> {
        match to.is_host() {
            true => Ok(b),
            false => Ok(Arc::new(copy(&b, to)?)),
        }
    }
}

impl MultiKernel for HostStaged {
    fn name(&self) -> String {
        format!("{} (staged through {})", self.inner.name(), self.host)
    }

    fn run(&self, inputs: &[Arc<Buffer>]) -> Result<Vec<Arc<Buffer>>> {
        let staged = try_vec(inputs.iter().map(|b| self.to_host(b)))?;
        let outs = self.inner.run(&staged)?;
        if outs.len() != self.outs.len() {
            let want = format!("{} outputs, got {}", self.outs.len(), outs.len());
            return Err(Error::internal(self.name(), want));
        }
        try_vec(outs.into_iter().zip(&self.outs).map(|(b, &d)| Self::to_member(b, d)))
    }
}
