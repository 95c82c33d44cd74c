//! `LocalComm`: the ranks of a [`DeviceGroup`] as threads of one process.
//!
//! Model code written rank by rank — each rank holding its own shard and calling
//! `comm.all_reduce(&grad, op)` — runs here as one thread per device, unchanged from the code that
//! runs as one process per GPU under `NcclComm`. Each call checks its own arguments, deposits its
//! tensor at an in-process meeting point, and the last rank to arrive runs the group's
//! slice-shaped collective once (`group.all_reduce(&shards, op)`, with the group's choice of
//! algorithm), handing every rank its lazy result. So the thread-per-rank shape costs one
//! rendezvous per call and nothing per element.
//!
//! Ranks must make the same calls in the same order. A call that differs between ranks (another
//! collective, op, root, dim, dtype or shape) is an [`Error::Comm`] for every rank, never a wrong
//! answer. A rank whose communicator is dropped makes the others' calls it has not joined fail at
//! once; a rank that panics (its communicator is dropped while unwinding) fails every call; a rank
//! that never arrives makes the others fail after the timeout ([`LocalComm::DEFAULT_TIMEOUT`]
//! unless set with [`LocalComm::with_timeout`]), naming it. Move each communicator into its
//! thread so that a panic drops it.
//!
//! ```
//! use collectives::{Communicator, Device, DeviceGroup, LocalComm, ReduceOp, Tensor};
//! let group = DeviceGroup::new(vec![Device::Cpu(0), Device::Cpu(1), Device::Cpu(2)])?;
//! let handles: Vec<_> = LocalComm::new(&group)
//!     .into_iter()
//!     .map(|comm| {
//!         std::thread::spawn(move || -> collectives::Result<Vec<f32>> {
//!             let mine = Tensor::from_vec(vec![comm.rank() as f32 + 1.0; 4], [4], comm.device())?;
//!             comm.all_reduce(&mine, ReduceOp::Sum)?.to_vec::<f32>()
//!         })
//!     })
//!     .collect();
//! for h in handles {
//!     assert_eq!(h.join().unwrap()?, vec![6.0; 4]);
//! }
//! # Ok::<(), collectives::Error>(())
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::Communicator;
use super::check::{Call, Kind, check_call, check_device, check_message, check_peer};
use super::meet::{Meeting, Results};
use crate::collective::{DeviceGroup, ReduceOp};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::{Shape, Tensor};

/// One rank of a [`DeviceGroup`] used from its own thread: rank i's tensors live on
/// `group.devices()[i]`. See the module docs.
pub struct LocalComm {
    rank: usize,
    timeout: Duration,
    shared: Arc<Shared>,
}

struct Shared {
    group: DeviceGroup,
    meeting: Meeting,
}

impl LocalComm {
    /// How long a call waits for the other ranks unless [`LocalComm::with_timeout`] says
    /// otherwise: 60 seconds.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

    /// One communicator per device of `group`, rank i on `group.devices()[i]`, each waiting
    /// [`LocalComm::DEFAULT_TIMEOUT`] for the others.
    pub fn new(group: &DeviceGroup) -> Vec<LocalComm> {
        LocalComm::with_timeout(group, LocalComm::DEFAULT_TIMEOUT)
    }

    /// As [`LocalComm::new`], each call waiting at most `timeout` for the other ranks.
    pub fn with_timeout(group: &DeviceGroup, timeout: Duration) -> Vec<LocalComm> {
        let shared = Arc::new(Shared { group: group.clone(), meeting: Meeting::new(group.size()) });
        (0..group.size()).map(|rank| LocalComm { rank, timeout, shared: shared.clone() }).collect()
    }

    /// The group the ranks run over.
    pub fn group(&self) -> &DeviceGroup {
        &self.shared.group
    }

    /// How long a call waits for the other ranks.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Makes this rank's next collective call `kind` with `t`, returning its result.
    fn meet(&self, kind: Kind, t: Option<&Tensor>) -> Result<Option<Tensor>> {
        let checked = check_call(kind, t, self.device(), self.world_size());
        let arrival = match &checked {
            Ok(call) => Ok((call.clone(), t.cloned())),
            Err(e) => Err(format!("passed a bad argument to {}: {e}", kind.name())),
        };
        let group = &self.shared.group;
        let got =
            self.shared.meeting.collective(self.rank, kind.name(), arrival, self.timeout, |call, shards| {
                run(group, call, &shards)
            });
        checked?; // a rank whose own arguments were wrong gets its own typed error
        got
    }

    /// As [`LocalComm::meet`], for a call that gives every rank a tensor.
    fn meet_some(&self, kind: Kind, t: &Tensor) -> Result<Tensor> {
        self.meet(kind, Some(t))?.ok_or_else(|| Error::Comm {
            op: kind.name(),
            msg: format!("internal: rank {} got no result", self.rank),
        })
    }
}

/// Runs `call` over every rank's shard, in rank order, as one group collective.
fn run(group: &DeviceGroup, call: &Call, shards: &[Tensor]) -> Result<Results> {
    let all = |v: Vec<Tensor>| v.into_iter().map(Some).collect();
    Ok(match call.kind {
        Kind::AllReduce(op) => all(group.all_reduce(shards, op)?),
        Kind::Reduce { op, root } => {
            let at_root = group.clone().with_leader(group.devices()[root])?.reduce(shards, op)?;
            (0..group.size()).map(|r| (r == root).then(|| at_root.clone())).collect()
        }
        Kind::Broadcast { root } => all(group.broadcast(&shards[root])?),
        Kind::AllGather { dim } => all(group.all_gather(shards, dim)?),
        Kind::ReduceScatter { op, dim } => all(group.reduce_scatter(shards, op, dim)?),
        Kind::Barrier => vec![None; group.size()],
    })
}

impl Communicator for LocalComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world_size(&self) -> usize {
        self.shared.group.size()
    }

    fn device(&self) -> Device {
        self.shared.group.devices()[self.rank]
    }

    fn all_reduce(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor> {
        self.meet_some(Kind::AllReduce(op), t)
    }

    fn reduce(&self, t: &Tensor, op: ReduceOp, root: usize) -> Result<Option<Tensor>> {
        self.meet(Kind::Reduce { op, root }, Some(t))
    }

    fn broadcast(&self, t: &Tensor, root: usize) -> Result<Tensor> {
        self.meet_some(Kind::Broadcast { root }, t)
    }

    fn all_gather(&self, t: &Tensor, dim: usize) -> Result<Tensor> {
        self.meet_some(Kind::AllGather { dim }, t)
    }

    fn reduce_scatter(&self, t: &Tensor, op: ReduceOp, dim: usize) -> Result<Tensor> {
        self.meet_some(Kind::ReduceScatter { op, dim }, t)
    }

    /// Queues `t` for rank `to` and returns without waiting for the receive (the message is
    /// lazy: it is computed when the receiver realizes it).
    fn send(&self, t: &Tensor, to: usize) -> Result<()> {
        check_peer("send", to, self.world_size())?;
        check_device("send", t, self.device())?;
        self.shared.meeting.post(self.rank, to, t.clone())
    }

    fn recv(&self, from: usize, shape: &Shape, dtype: DType) -> Result<Tensor> {
        check_peer("recv", from, self.world_size())?;
        let t = self.shared.meeting.take(from, self.rank, self.timeout)?;
        check_message("recv", from, &t, shape, dtype)?;
        let here = self.device();
        Ok(crate::route::Hops::default().hop(&t, here))
    }

    fn barrier(&self) -> Result<()> {
        self.meet(Kind::Barrier, None).map(drop)
    }
}

impl Drop for LocalComm {
    /// Leaving tells the other ranks: a panicking rank breaks every call, a dropped one fails the
    /// calls it has not joined.
    fn drop(&mut self) {
        let meeting = &self.shared.meeting;
        if std::thread::panicking() {
            meeting.break_with(format!("rank {} ({}) panicked", self.rank, self.device()));
        } else {
            meeting.leave(self.rank, "was dropped");
        }
    }
}

impl fmt::Debug for LocalComm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalComm")
            .field("rank", &self.rank)
            .field("world_size", &self.world_size())
            .field("device", &format_args!("{}", self.device()))
            .field("timeout", &self.timeout)
            .finish()
    }
}
