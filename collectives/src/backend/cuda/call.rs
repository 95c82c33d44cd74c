//! The native collectives of an all-CUDA group as one multi-device call: every member pulls what
//! it needs straight from its peers' memory, in one step.
//!
//! - all_reduce: every member folds every shard itself (the one-shot), in one fixed order, so
//!   every member's result is bitwise identical;
//! - reduce_scatter: member i folds only its part of every shard (the same window of each input);
//! - all_gather: member i copies every shard into its place in its own output (no concat after);
//! - broadcast: every member but the root copies the root's tensor (a peer copy).
//!
//! CUDA devices read each other in place (two logical devices of one GPU share its memory; two
//! GPUs once peer access is on; without it the input is copied over first), so the graph path
//! already issues this work for the one-shot: one kernel per member over every shard. Issued as one
//! call, like an NCCL call, a realize whose shards are on their devices takes the executor's
//! direct path, without the graph pass, the schedule and the queues (`exec/direct.rs`). Each
//! member's work waits for its inputs on its own stream and notes its use of its peers' memory, so
//! nothing waits on the host and no shard is freed while a peer still reads it
//! ([`super::memory`]).
//!
//! ```no_run
//! use collectives::{Device, DeviceGroup, ReduceOp, Tensor, realize};
//! // Two logical devices of GPU 0 with COLLECTIVES_CUDA_DEVICES=0,0.
//! let g = DeviceGroup::new(vec![Device::Cuda(0), Device::Cuda(1)])?;
//! let shards = (0..2)
//!     .map(|i| Tensor::from_vec(vec![i as f32; 3], [3], Device::Cuda(i)))
//!     .collect::<Result<Vec<_>, _>>()?;
//! let out = g.all_reduce(&shards, ReduceOp::Sum)?; // one `cuda all_reduce` call
//! realize(&out)?;
//! # Ok::<(), collectives::Error>(())
//! ```

use std::sync::Arc;

use super::device::{self, CudaDevice};
use super::launch;
use crate::backend::{Buffer, Kernel, OutSpec};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::graph::MultiKernel;

/// What each member of a [`CudaCall`] does.
#[derive(Clone, Debug)]
pub(crate) enum Pull {
    /// Every member runs the reduce over every input (`len` elements each).
    AllReduce { fold: Kernel, len: usize },
    /// Member i runs the reduce over elements `[i * part, (i + 1) * part)` of every input.
    ReduceScatter { fold: Kernel, part: usize },
    /// Every member runs the concat (a placement of each input in its output, by copy).
    AllGather { join: Kernel, len: usize },
    /// Every member but `root` copies the one input (the root's tensor, a peer copy on the
    /// member's copy stream); the root's output is not part of the call.
    Broadcast { root: usize },
}

/// A native collective of CUDA devices, one output per member (in device order; a broadcast
/// leaves out the root).
pub(crate) struct CudaCall {
    /// The members, in the order of the inputs.
    pub devices: Vec<Device>,
    /// What each member does.
    pub pull: Pull,
}

impl MultiKernel for CudaCall {
    fn name(&self) -> String {
        let what = match self.pull {
            Pull::AllReduce { .. } => "all_reduce",
            Pull::ReduceScatter { .. } => "reduce_scatter",
            Pull::AllGather { .. } => "all_gather",
            Pull::Broadcast { .. } => "broadcast",
        };
        format!("cuda {what}")
    }

    fn run(&self, inputs: &[&Buffer]) -> Result<Vec<Arc<Buffer>>> {
        let dtype =
            inputs.first().ok_or_else(|| Error::internal(self.name(), "a call with no inputs"))?.dtype;
        let mut outs = Vec::with_capacity(self.devices.len());
        for (i, &d) in self.devices.iter().enumerate() {
            let dev = member(d)?;
            let out = match &self.pull {
                Pull::AllReduce { fold: k, len } | Pull::AllGather { join: k, len } => {
                    kernel(&dev, k, inputs, OutSpec { dtype, len: *len })?
                }
                Pull::ReduceScatter { fold, part } => window(&dev, fold, inputs, i, *part)?,
                Pull::Broadcast { root } if i == *root => continue,
                Pull::Broadcast { root } => super::copy::dtod(&*member(self.devices[*root])?, inputs[0], d)?,
            };
            outs.push(Arc::new(out));
        }
        Ok(outs)
    }
}

/// The CUDA device behind member `d`.
fn member(d: Device) -> Result<Arc<CudaDevice>> {
    match d {
        Device::Cuda(n) => device::get(n),
        other => Err(Error::internal("cuda call", format!("{other} is not a CUDA device"))),
    }
}

/// `k` on `dev` over `inputs`, the kernel contract checked first.
fn kernel(dev: &CudaDevice, k: &Kernel, inputs: &[&Buffer], out: OutSpec) -> Result<Buffer> {
    k.check(dev.device, inputs, out)?;
    launch::compute(dev, k, inputs, out)
}

/// Member `i`'s part (`part` elements from `i * part`) of `fold` over `inputs`, read where they
/// lie, the kernel contract checked for that window first.
fn window(dev: &CudaDevice, fold: &Kernel, inputs: &[&Buffer], i: usize, part: usize) -> Result<Buffer> {
    let out = OutSpec { dtype: inputs[0].dtype, len: part };
    let start = i.checked_mul(part).ok_or_else(|| {
        Error::internal(format!("reduce_scatter on {}", dev.device), format!("part {i} of {part} overflows"))
    })?;
    fold.check_from(dev.device, inputs, start, out)?;
    launch::compute_from(dev, fold, inputs, start, out)
}
