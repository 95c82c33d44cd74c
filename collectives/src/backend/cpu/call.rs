//! The star collectives of a group of host devices as one multi-device call: all_reduce,
//! all_gather and reduce_scatter.
//!
//! Every member is host memory, so the star's work — one kernel on the leader over every shard
//! (the fold of an all_reduce, the join of an all_gather), its result sent to every member — is
//! one pass of that CPU kernel, whose result every member then reads in place (`view::share`:
//! host devices share one memory, and a realized tensor never changes); a reduce_scatter's fold
//! is cut into each member's part instead, a view where the part is one contiguous range. The
//! general path issues exactly that work too, but only after the graph pass and the schedule
//! have found it. Issued as one call (like an NCCL call), a realize whose shards are
//! already on their devices takes the executor's direct path, and the bookkeeping that made most
//! of a small collective's time is gone (`bench/gpu/13-fixed-cost`).
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
use crate::backend::{Backend, Buffer, Kernel, OutSpec, view};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::graph::MultiKernel;

/// An output of `len` elements of the inputs' dtype (an internal error without inputs: the
/// collectives check their shards first).
fn spec(call: &'static str, inputs: &[&Buffer], len: usize) -> Result<OutSpec> {
    let first = inputs.first().ok_or_else(|| Error::internal(call, "a call with no inputs"))?;
    Ok(OutSpec { dtype: first.dtype, len })
}

/// A star collective over host devices: `devices[root]` runs `kernel` over the inputs (one per
/// device, in device order) into `len` elements, and every device gets the result.
pub(crate) struct HostStar {
    /// What the call is, for plans and messages (`host all_reduce`).
    pub name: &'static str,
    /// The members, in the order of the inputs and of the outputs.
    pub devices: Vec<Device>,
    /// Index of the member that runs the kernel.
    pub root: usize,
    /// The kernel: a reduce or a concat.
    pub kernel: Kernel,
    /// Elements of the result.
    pub len: usize,
}

impl MultiKernel for HostStar {
    fn name(&self) -> String {
        self.name.into()
    }

    fn run(&self, inputs: &[&Buffer]) -> Result<Vec<Arc<Buffer>>> {
        let root = self.devices[self.root];
        let out = spec(self.name, inputs, self.len)?;
        self.kernel.check(root, inputs, out)?;
        let result = Arc::new(CpuBackend::on(root)?.compute(&self.kernel, inputs, out)?);
        let give = |&d: &Device| match d == root {
            true => Ok(result.clone()),
            false => view::share(&result, d)
                .map(Arc::new)
                .ok_or_else(|| Error::internal(self.name, format!("{d} cannot share {root}'s result"))),
        };
        self.devices.iter().map(give).collect()
    }
}

/// A star reduce_scatter over host devices: `devices[root]` folds the inputs with `fold` into
/// `len` elements, and device i gets `parts[i]` of the fold (a slice kernel, `part_len` elements).
pub(crate) struct HostReduceScatter {
    /// The members, in the order of the inputs and of the outputs.
    pub devices: Vec<Device>,
    /// Index of the member that folds.
    pub root: usize,
    /// The fold: a reduce.
    pub fold: Kernel,
    /// Elements of the fold.
    pub len: usize,
    /// Each member's part of the fold: slice kernels.
    pub parts: Vec<Kernel>,
    /// Elements of each part.
    pub part_len: usize,
}

impl MultiKernel for HostReduceScatter {
    fn name(&self) -> String {
        "host reduce_scatter".into()
    }

    fn run(&self, inputs: &[&Buffer]) -> Result<Vec<Arc<Buffer>>> {
        let root = self.devices[self.root];
        let full = spec("host reduce_scatter", inputs, self.len)?;
        self.fold.check(root, inputs, full)?;
        let folded = Arc::new(CpuBackend::on(root)?.compute(&self.fold, inputs, full)?);
        let part = OutSpec { len: self.part_len, ..full };
        let cut = |(&d, k): (&Device, &Kernel)| -> Result<Arc<Buffer>> {
            k.check(d, &[&folded], part)?;
            match view::view(k, &folded, d)? {
                Some(v) => Ok(Arc::new(v)),
                None => Ok(Arc::new(CpuBackend::on(d)?.compute(k, &[&folded], part)?)),
            }
        };
        self.devices.iter().zip(&self.parts).map(cut).collect()
    }
}
