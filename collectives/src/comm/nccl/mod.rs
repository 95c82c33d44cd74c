//! `NcclComm`: one process per GPU, on as many nodes as the launcher gives, through NCCL.
//!
//! The rank-wise code that runs on [`super::LocalComm`] as threads runs here as processes: each
//! process reads its place from its launcher's environment ([`Launch`]), rank 0 makes an NCCL
//! unique id and hands it out through the TCP [`super::rendezvous`] on `MASTER_ADDR:MASTER_PORT`,
//! and every rank joins an NCCL communicator on `Device::Cuda(LOCAL_RANK)` (joining bounded by the
//! timeout).
//!
//! The process shares the CUDA backend's context and memory pool for that device: NCCL runs on
//! a stream of its own, and its outputs are ordinary backend buffers.
//!
//! Calls are issued to NCCL in program order as they are made (the input's work is issued
//! first, and NCCL's stream waits for it on the device), because NCCL needs every rank to issue
//! the same sequence: a lazy call issued whenever its result happened to be read could reorder
//! the ranks' sequences and deadlock. The result is a lazy [`Tensor`] whose data NCCL may still
//! be writing: CUDA ops reading it wait for it on the device; realizing it or reading it on the
//! host waits on the host. Every host wait polls NCCL with the timeout, and a watchdog thread
//! does too while calls are in flight, so a peer that dies makes this rank's calls and the
//! reads of their results return [`crate::Error::Comm`] (the communicator is aborted with
//! `ncclCommAbort`), not hang; the one gap is spelled out in `watch.rs`: CUDA work already
//! waiting on the device for a result that then fails runs on undefined data once the abort
//! ends NCCL's kernels, and the failure surfaces at the rank's next call or host wait instead.
//! Without libcuda or libnccl, [`NcclComm::from_env`] is [`crate::Error::DeviceUnavailable`],
//! before anything touches CUDA.
//!
//! Calls that differ between processes cannot be checked here as [`super::LocalComm`] checks
//! them (the ranks share no memory): as with NCCL itself, they fail by the timeout.
//!
//! ```no_run
//! // RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 ./app &
//! // RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 ./app
//! use collectives::{Communicator, NcclComm, ReduceOp, Tensor};
//! let comm = NcclComm::from_env()?;
//! let g = Tensor::from_vec(vec![comm.rank() as f32; 1024], [1024], comm.device())?;
//! let sum = comm.all_reduce(&g, ReduceOp::Sum)?;
//! # Ok::<(), collectives::Error>(())
//! ```

mod glue;
mod layout;

use std::fmt;
use std::time::Duration;

use super::Communicator;
use super::check::{Kind, check_call, check_device, check_peer};
use super::env::Launch;
use super::rendezvous;
use crate::backend::cuda::nccl::rank::{self, RankComm};
use crate::backend::nccl::NcclCall;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::{ReduceOp, Shape, Tensor};

/// One rank of a multi-process NCCL job, its tensors on `Device::Cuda(local_rank)`. See the
/// module docs.
pub struct NcclComm {
    launch: Launch,
    timeout: Duration,
    raw: RankComm,
}

impl NcclComm {
    /// How long a rank waits for the others — to rendezvous, to join NCCL, for a call to
    /// complete — unless [`NcclComm::new`] is given another timeout: 5 minutes.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

    /// Joins the job the launcher's environment describes ([`Launch::from_env`]), waiting
    /// [`NcclComm::DEFAULT_TIMEOUT`].
    pub fn from_env() -> Result<NcclComm> {
        NcclComm::new(&Launch::from_env()?, NcclComm::DEFAULT_TIMEOUT)
    }

    /// Joins the job `launch` describes: checks that CUDA and NCCL load, opens the rank's device
    /// through the CUDA backend, exchanges the NCCL id through the rendezvous, and joins the
    /// communicator, each step waiting at most `timeout`. Each call then completes within
    /// `timeout` of being issued, or fails and aborts the communicator.
    pub fn new(launch: &Launch, timeout: Duration) -> Result<NcclComm> {
        let device = Device::Cuda(launch.local_rank as u32);
        if let Some(reason) = rank::unavailable() {
            return Err(Error::DeviceUnavailable { device, reason });
        }
        check_ordinal(device)?;
        let dev = crate::backend::cuda::device::get(device.ordinal())?;
        let id = rendezvous::exchange(launch, timeout, || {
            rank::unique_id()
                .map(|id| id.to_vec())
                .map_err(|why| Error::Comm { op: "nccl init", msg: format!("ncclGetUniqueId failed: {why}") })
        })?;
        let raw = RankComm::init(dev, (launch.rank, launch.world_size), &id, timeout)?;
        Ok(NcclComm { launch: launch.clone(), timeout, raw })
    }

    /// How many CUDA devices this process can run NCCL on: an error naming what is missing when
    /// libcuda or libnccl do not load (nothing is called into either before they are checked).
    pub fn available() -> Result<usize> {
        if let Some(reason) = rank::unavailable() {
            return Err(Error::DeviceUnavailable { device: Device::Cuda(0), reason });
        }
        Ok(crate::backend::cuda::driver::device_count() as usize)
    }

    /// The version of the libnccl this process loaded, as NCCL encodes it (2.28.7 is 22807).
    pub fn nccl_version(&self) -> Result<u32> {
        cudarc::nccl::result::get_nccl_version()
            .map(|v| v.max(0) as u32)
            .map_err(|e| Error::Comm { op: "ncclGetVersion", msg: crate::backend::cuda::nccl::describe(e.0) })
    }

    /// Where this rank stands in the job.
    pub fn launch(&self) -> &Launch {
        &self.launch
    }

    /// How long a call waits for the other ranks.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Aborts the communicator (`ncclCommAbort`): every later call on this rank is an
    /// [`Error::Comm`] carrying `why`, and peers waiting on this rank fail by their timeout.
    pub fn abort(&self, why: &str) {
        self.raw.abort(why);
    }

    /// Runs `call`, returning the flat output (if this rank gets one).
    fn run(
        &self,
        call: NcclCall,
        input: Option<&Tensor>,
        out: Option<(DType, usize)>,
    ) -> Result<Option<Tensor>> {
        glue::run(&self.raw, call, input, out)
    }

    /// As [`NcclComm::run`] for a call that gives this rank an output of `shape`.
    fn run_to(&self, call: NcclCall, input: &Tensor, shape: Shape) -> Result<Tensor> {
        let out = self.run(call, Some(input), Some((input.dtype(), shape.numel())))?;
        let out = out.ok_or_else(|| Error::Comm { op: call.name(), msg: "internal: no output".into() })?;
        out.reshape(shape)
    }

    fn check(&self, kind: Kind, t: &Tensor) -> Result<()> {
        check_call(kind, Some(t), self.device(), self.world_size()).map(drop)
    }
}

/// Checks that `device`'s ordinal exists on this node (the libraries were checked).
fn check_ordinal(device: Device) -> Result<()> {
    let count = crate::backend::cuda::driver::device_count();
    if device.ordinal() >= count {
        let reason = format!("this node has {count} CUDA device(s); check LOCAL_RANK");
        return Err(Error::DeviceUnavailable { device, reason });
    }
    Ok(())
}

impl Communicator for NcclComm {
    fn rank(&self) -> usize {
        self.launch.rank
    }

    fn world_size(&self) -> usize {
        self.launch.world_size
    }

    fn device(&self) -> Device {
        self.raw.device()
    }

    fn all_reduce(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor> {
        self.check(Kind::AllReduce(op), t)?;
        self.run_to(NcclCall::AllReduce(op), t, t.shape().clone())
    }

    fn reduce(&self, t: &Tensor, op: ReduceOp, root: usize) -> Result<Option<Tensor>> {
        self.check(Kind::Reduce { op, root }, t)?;
        let out = (self.rank() == root).then(|| (t.dtype(), t.numel()));
        let got = self.run(NcclCall::Reduce(op, root), Some(t), out)?;
        got.map(|g| g.reshape(t.shape().clone())).transpose()
    }

    fn broadcast(&self, t: &Tensor, root: usize) -> Result<Tensor> {
        self.check(Kind::Broadcast { root }, t)?;
        self.run_to(NcclCall::Broadcast(root), t, t.shape().clone())
    }

    fn all_gather(&self, t: &Tensor, dim: usize) -> Result<Tensor> {
        self.check(Kind::AllGather { dim }, t)?;
        let world = self.world_size();
        let flat = self.run_to(NcclCall::AllGather, t, Shape::new([t.numel() * world]))?;
        layout::join_blocks(&flat, t.shape(), dim, world)
    }

    fn reduce_scatter(&self, t: &Tensor, op: ReduceOp, dim: usize) -> Result<Tensor> {
        self.check(Kind::ReduceScatter { op, dim }, t)?;
        let world = self.world_size();
        let parts = layout::parts_in_rank_order(t, dim, world)?;
        let shape = t.shape().with_dim(dim, t.shape().dim(dim) / world);
        self.run_to(NcclCall::ReduceScatter(op), &parts, shape)
    }

    fn send(&self, t: &Tensor, to: usize) -> Result<()> {
        check_peer("send", to, self.world_size())?;
        check_device("send", t, self.device())?;
        self.run(NcclCall::Send(to), Some(t), None).map(drop)
    }

    fn recv(&self, from: usize, shape: &Shape, dtype: DType) -> Result<Tensor> {
        check_peer("recv", from, self.world_size())?;
        let got = self.run(NcclCall::Recv(from), None, Some((dtype, shape.numel())))?;
        let got = got.ok_or_else(|| Error::Comm { op: "recv", msg: "internal: no output".into() })?;
        got.reshape(shape.clone())
    }

    fn barrier(&self) -> Result<()> {
        self.raw.barrier()
    }
}

impl fmt::Debug for NcclComm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NcclComm")
            .field("rank", &self.launch.rank)
            .field("world_size", &self.launch.world_size)
            .field("device", &format_args!("{}", self.raw.device()))
            .field("master", &self.launch.master())
            .field("timeout", &self.timeout)
            .finish()
    }
}
