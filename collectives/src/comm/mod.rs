//! The SPMD door: [`Communicator`], for code written rank by rank.
//!
//! `Communicator` is the SPMD shape: each rank calls `all_reduce` with its own tensor and the
//! implementation meets the other ranks. Model code written against `&dyn Communicator` runs
//! unchanged whichever implementation sits behind it:
//!
//! - [`IdentityComm`]: the world of one. With `world_size == 1` there is genuinely nothing to
//!   reduce, so it returns its input (scaled where the op scales, as `PreMulSum` does).
//! - [`LocalComm`]: one process, one thread per device of a [`crate::DeviceGroup`]; the calls
//!   meet in memory and the last rank to arrive runs the group's slice-shaped collective.
//! - `NcclComm` (feature `cuda`): one process per GPU, on as many nodes as the launcher gives,
//!   bootstrapped from the launcher's environment ([`Launch`]) through a small TCP
//!   [`rendezvous`].
//!
//! A single process driving N devices that holds every shard at once needs no rank to meet: that
//! is what [`crate::DeviceGroup`], the slice-shaped counterpart, is for.
//!
//! ```
//! use collectives::{Communicator, Device, IdentityComm, ReduceOp, Tensor};
//! let comm = IdentityComm::new(Device::Cpu(0));
//! let g = Tensor::from_vec(vec![1.0f32, 2.0], [2], Device::Cpu(0))?;
//! assert_eq!(comm.world_size(), 1);
//! assert_eq!(comm.all_reduce(&g, ReduceOp::Avg)?.to_vec::<f32>()?, vec![1.0, 2.0]);
//! # Ok::<(), collectives::Error>(())
//! ```

mod check;
pub mod env;
pub mod local;
mod meet;
#[cfg(feature = "cuda")]
pub mod nccl;
pub mod rendezvous;

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;

pub use env::{Launch, Launcher};
pub use local::LocalComm;
#[cfg(feature = "cuda")]
pub use nccl::NcclComm;

use crate::collective::ReduceOp;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::{Shape, Tensor};

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
    /// Sends `t` to rank `to`, which takes it with a matching [`Communicator::recv`]. Messages
    /// between two ranks arrive in the order they were sent. Pair sends and receives so that the
    /// program would not deadlock if every send waited for its receive (NCCL's rule), even
    /// where an implementation buffers.
    fn send(&self, t: &Tensor, to: usize) -> Result<()>;
    /// The next tensor rank `from` sent to this rank, which must have `shape` and `dtype`; on
    /// this rank's device.
    fn recv(&self, from: usize, shape: &Shape, dtype: DType) -> Result<Tensor>;
    /// Returns once every rank has called `barrier`.
    fn barrier(&self) -> Result<()>;
}

/// The communicator of a world of one rank: each collective returns its input (scaled where the
/// op scales). See the module docs.
///
/// A tensor sent to rank 0 waits in a queue for the matching `recv` (clones share the queue).
#[derive(Clone, Debug)]
pub struct IdentityComm {
    device: Device,
    mail: Arc<Mutex<VecDeque<Tensor>>>,
}

impl IdentityComm {
    /// The single rank, its shards on `device`.
    pub fn new(device: Device) -> Self {
        IdentityComm { device, mail: Arc::default() }
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

    fn send(&self, t: &Tensor, to: usize) -> Result<()> {
        check::check_peer("send", to, 1)?;
        self.check("send", t)?;
        self.mail.lock().push_back(t.clone());
        Ok(())
    }

    fn recv(&self, from: usize, shape: &Shape, dtype: DType) -> Result<Tensor> {
        check::check_peer("recv", from, 1)?;
        let t = self.mail.lock().pop_front().ok_or_else(|| Error::Comm {
            op: "recv",
            msg: "rank 0 has sent nothing to itself; in a world of one a recv without a send never completes"
                .into(),
        })?;
        check::check_message("recv", 0, &t, shape, dtype)?;
        t.copy_to_device(self.device)
    }

    fn barrier(&self) -> Result<()> {
        Ok(())
    }
}
