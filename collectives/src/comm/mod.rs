//! The SPMD door: [`Communicator`], for code written rank by rank.
//!
//! `Communicator` is the SPMD shape: each rank calls `all_reduce` with its own tensor and the
//! implementation meets the other ranks. That is the right shape for several processes or nodes.
//! A single process driving N devices holds every shard at once; there is no other rank to meet,
//! so the per-rank signature does not fit it — that is what [`crate::DeviceGroup`], the
//! slice-shaped counterpart, is for.
//!
//! [`IdentityComm`] is the communicator of a world of one: with `world_size == 1` there is
//! genuinely nothing to reduce, so it returns its input (scaled where the op scales, as
//! `PreMulSum` does). That is correct for a single rank and is not a working collective.
//!
//! ```
//! use collectives::{Communicator, Device, IdentityComm, ReduceOp, Tensor};
//! let comm = IdentityComm::new(Device::Cpu(0));
//! let g = Tensor::from_vec(vec![1.0f32, 2.0], [2], Device::Cpu(0))?;
//! assert_eq!(comm.world_size(), 1);
//! assert_eq!(comm.all_reduce(&g, ReduceOp::Avg)?.to_vec::<f32>()?, vec![1.0, 2.0]);
//! # Ok::<(), collectives::Error>(())
//! ```

use crate::collective::ReduceOp;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::graph::Tensor;

/// Collectives on one rank's shard; every rank of the world makes the same calls in the same
/// order. Results are lazy tensors on the rank's device.
pub trait Communicator: Send + Sync {
    /// This rank, in `0..world_size()`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn world_size(&self) -> usize;
    /// The device this rank's shards live on.
    fn device(&self) -> Device;
    /// Every rank's `t` folded with `op`; the result on every rank.
    fn all_reduce(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor>;
    /// Every rank's `t` folded with `op` onto `root`: `Some` there, `None` elsewhere.
    fn reduce(&self, t: &Tensor, op: ReduceOp, root: usize) -> Result<Option<Tensor>>;
    /// `root`'s `t` on every rank (other ranks pass a tensor of the same shape and dtype).
    fn broadcast(&self, t: &Tensor, root: usize) -> Result<Tensor>;
    /// Every rank's `t` joined along `dim` in rank order, on every rank.
    fn all_gather(&self, t: &Tensor, dim: usize) -> Result<Tensor>;
    /// Every rank's `t` folded with `op` and cut along `dim` into `world_size()` parts; this
    /// rank's part.
    fn reduce_scatter(&self, t: &Tensor, op: ReduceOp, dim: usize) -> Result<Tensor>;
}

/// The communicator of a world of one rank: each collective returns its input (scaled where the
/// op scales). See the module docs.
#[derive(Clone, Debug)]
pub struct IdentityComm {
    device: Device,
}

impl IdentityComm {
    /// The single rank, its shards on `device`.
    pub fn new(device: Device) -> Self {
        IdentityComm { device }
    }

    fn check(&self, op: &'static str, t: &Tensor) -> Result<()> {
        if t.device() != self.device {
            let (expected, got) = (self.device, t.device());
            return Err(Error::DeviceMismatch { op, index: 0, expected, got });
        }
        Ok(())
    }

    fn check_root(op: &'static str, root: usize) -> Result<()> {
        if root != 0 {
            let msg = format!("root {root} is not a rank of a world of size 1");
            return Err(Error::InvalidArgument { what: op, msg });
        }
        Ok(())
    }
}

impl Communicator for IdentityComm {
    fn rank(&self) -> usize {
        0
    }

    fn world_size(&self) -> usize {
        1
    }

    fn device(&self) -> Device {
        self.device
    }

    fn all_reduce(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor> {
        self.check("all_reduce", t)?;
        op.check("all_reduce", t.dtype())?;
        match op.lower(1) {
            (_, Some(crate::Scale::Mul(s))) if s != 1.0 => t.scale(crate::Scale::Mul(s)),
            _ => Ok(t.clone()),
        }
    }

    fn reduce(&self, t: &Tensor, op: ReduceOp, root: usize) -> Result<Option<Tensor>> {
        Self::check_root("reduce", root)?;
        self.all_reduce(t, op).map(Some)
    }

    fn broadcast(&self, t: &Tensor, root: usize) -> Result<Tensor> {
        Self::check_root("broadcast", root)?;
        self.check("broadcast", t)?;
        Ok(t.clone())
    }

    fn all_gather(&self, t: &Tensor, dim: usize) -> Result<Tensor> {
        self.check("all_gather", t)?;
        crate::collective::check_dim("all_gather", t.shape(), dim)?;
        Ok(t.clone())
    }

    fn reduce_scatter(&self, t: &Tensor, op: ReduceOp, dim: usize) -> Result<Tensor> {
        crate::collective::check_dim("reduce_scatter", t.shape(), dim)?;
        self.all_reduce(t, op)
    }
}
