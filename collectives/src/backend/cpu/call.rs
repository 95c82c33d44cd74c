//! The star all_reduce of a group of host devices as one multi-device call.
//!
//! Every member is host memory, so the star's work — fold every shard on the leader, send the
//! result to every member — is one pass of the CPU reduce kernel whose finished chunks are copied
//! into each member's output while still in cache (the kernel's fan-out). The general path issues
//! exactly that work too, but only after the graph pass and the schedule have found it; issued as
//! one call (like an NCCL call), a realize whose shards are already on their devices takes the
//! executor's direct path instead, and the bookkeeping that made most of a small all_reduce's
//! time is gone (`bench/cpu-call`).
//!
//! ```
//! use collectives::{Device, DeviceGroup, ReduceOp, Tensor, realize};
//! let g = DeviceGroup::new((0..4).map(Device::Cpu).collect())?;
//! let shards: Vec<Tensor> =
//!     (0..4).map(|i| Tensor::from_vec(vec![i as f32; 3], [3], Device::Cpu(i))).collect::<Result<_, _>>()?;
//! let out = g.all_reduce(&shards, ReduceOp::Sum)?; // one `host all_reduce` call
//! realize(&out)?;
//! assert_eq!(out[3].to_vec::<f32>()?, vec![6.0; 3]);
//! # Ok::<(), collectives::Error>(())
//! ```

use std::sync::Arc;

use super::CpuBackend;
use crate::backend::{Backend, Buffer, Kernel, OutSpec};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::graph::{MultiKernel, ReduceKind, Scale};

/// A star all_reduce over host devices: `devices[root]` folds the inputs (one per device, in
/// device order) and every device gets the result.
pub(crate) struct HostAllReduce {
    /// The members, in the order of the inputs and of the outputs.
    pub devices: Vec<Device>,
    /// Index of the member that folds.
    pub root: usize,
    /// The fold.
    pub kind: ReduceKind,
    /// A scale applied after the fold (`Avg`, `PreMulSum`).
    pub scale: Option<Scale>,
}

impl MultiKernel for HostAllReduce {
    fn name(&self) -> String {
        "host all_reduce".into()
    }

    fn run(&self, inputs: &[&Buffer]) -> Result<Vec<Arc<Buffer>>> {
        let root = self.devices[self.root];
        let first =
            inputs.first().ok_or_else(|| Error::internal("host all_reduce", "a call with no inputs"))?;
        let out = OutSpec { dtype: first.dtype, len: first.len };
        let kernel = Kernel::Reduce { kind: self.kind, scale: self.scale };
        kernel.check(root, inputs, out)?;
        let others: Vec<Device> = self.devices.iter().copied().filter(|&d| d != root).collect();
        let (folded, copies) = CpuBackend::on(root)?.compute_fanout(&kernel, inputs, out, &others)?;
        let mut copies = copies.into_iter();
        let mut folded = Some(folded);
        let mut outs = Vec::with_capacity(self.devices.len());
        for (i, _) in self.devices.iter().enumerate() {
            let next = if i == self.root { folded.take() } else { copies.next() };
            let b =
                next.ok_or_else(|| Error::internal("host all_reduce", "the kernel wrote too few copies"))?;
            outs.push(Arc::new(b));
        }
        Ok(outs)
    }
}
