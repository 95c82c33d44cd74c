//! Plans: what a collective will do — algorithm, hops with their routes and bytes, kernels, and
//! the bridge of each CUDA ↔ Vulkan move — read off the graph it builds, before anything runs.

use std::collections::HashSet;
use std::fmt;

use super::{Algorithm, CollectiveKind, DeviceGroup, ReduceOp};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::{Op, Shape, Tensor, opt};

/// One copy the plan makes.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedHop {
    /// Source device.
    pub from: Device,
    /// Destination device.
    pub to: Device,
    /// Bytes copied.
    pub bytes: usize,
}

/// One kernel (or multi-device call) the plan runs.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedKernel {
    /// Where it runs.
    pub device: Device,
    /// What it computes.
    pub op: String,
    /// How many inputs it reads.
    pub inputs: usize,
    /// Bytes it writes.
    pub bytes: usize,
}

/// What a listing or a plan says of a CUDA ↔ Vulkan bridge not decided yet.
pub(crate) const UNDECIDED_BRIDGE: &str = "decided at the first move between them, or by validate()";

/// One CUDA ↔ Vulkan move the plan makes: its two copies through the host are among the plan's
/// hops. Where both devices are one GPU, the move has at least
/// [`DEVICE_MIN_BYTES`](crate::exec::DEVICE_MIN_BYTES) (or is a contiguous part of a Vulkan
/// tensor that size) and nothing else reads its host copy, the two run as one copy through the
/// GPU's memory instead (see [`crate::exec::StagedTransport`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedBridge {
    /// The CUDA or Vulkan device the data leaves.
    pub from: Device,
    /// The device of the other vendor it reaches.
    pub to: Device,
    /// Bytes moved.
    pub bytes: usize,
    /// The pair's bridge — `device (...)`, `peer (...)` or `host (why)` — once this process has decided it
    /// (at the pair's first move, or by [`DeviceGroup::validate`]); `None` before. Planning
    /// decides nothing: it touches no device.
    pub bridge: Option<String>,
}

/// What running some lazy tensors will do: every copy and every kernel (each list in the order the
/// executor issues them).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Plan {
    /// The algorithm, when the plan is of one collective.
    pub algorithm: Option<Algorithm>,
    /// The copies.
    pub hops: Vec<PlannedHop>,
    /// The kernels.
    pub kernels: Vec<PlannedKernel>,
    /// The CUDA ↔ Vulkan moves, each also two of `hops`, with their bridges.
    pub bridges: Vec<PlannedBridge>,
}

impl Plan {
    /// The plan of realizing `outputs`: their graph after the copy pass, without running it.
    /// Already realized nodes are not planned (they will not run).
    pub fn of(outputs: &[Tensor]) -> Plan {
        let mut plan = Plan::default();
        let mut seen = HashSet::new();
        for t in opt::insert_cross_device_copies(outputs) {
            plan.walk(&t, &mut seen);
        }
        plan
    }

    fn walk(&mut self, root: &Tensor, seen: &mut HashSet<u64>) {
        let mut stack = vec![(root.clone(), false)];
        while let Some((t, expanded)) = stack.pop() {
            if t.is_realized() || t.inputs().is_empty() || (!expanded && !seen.insert(t.id())) {
                continue;
            }
            if !expanded {
                stack.push((t.clone(), true));
                stack.extend(t.inputs().iter().rev().map(|i| (i.clone(), false)));
                continue;
            }
            self.record(&t);
        }
    }

    fn record(&mut self, t: &Tensor) {
        match t.op() {
            Op::Copy { to } | Op::Move { to } => {
                let from = t.inputs()[0].device();
                if from != *to {
                    self.hops.push(PlannedHop { from, to: *to, bytes: t.nbytes() });
                }
                self.record_bridge(t, *to);
            }
            Op::Reshape | Op::Part { .. } => {}
            op => self.kernels.push(PlannedKernel {
                device: t.device(),
                op: op.to_string(),
                inputs: t.inputs().len(),
                bytes: t.nbytes(),
            }),
        }
    }

    /// Records the CUDA ↔ Vulkan move that copy `t` (to `to`) ends: a copy from a host copy, not
    /// run yet, of a tensor on a device of the other vendor.
    fn record_bridge(&mut self, t: &Tensor, to: Device) {
        let host = &t.inputs()[0];
        let pending = host.op().is_transfer() && host.device().is_host() && !host.is_realized();
        let Some(src) = host.inputs().first().filter(|_| pending) else {
            return;
        };
        let from = src.device();
        if from.needs_staging(to) {
            let bridge = crate::backend::staged::decided_bridge(from, to).map(|b| b.to_string());
            self.bridges.push(PlannedBridge { from, to, bytes: t.nbytes(), bridge });
        }
    }

    /// Total bytes copied between devices.
    pub fn bytes_moved(&self) -> usize {
        self.hops.iter().map(|h| h.bytes).sum()
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(a) = self.algorithm {
            write!(f, "algorithm {a}: ")?;
        }
        writeln!(
            f,
            "{} hops ({} bytes), {} kernels",
            self.hops.len(),
            self.bytes_moved(),
            self.kernels.len()
        )?;
        for h in &self.hops {
            writeln!(f, "  copy   {} -> {}  {} bytes", h.from, h.to, h.bytes)?;
        }
        for k in &self.kernels {
            writeln!(f, "  kernel {} on {} ({} inputs, {} bytes out)", k.op, k.device, k.inputs, k.bytes)?;
        }
        for b in &self.bridges {
            let how = b.bridge.as_deref().unwrap_or(UNDECIDED_BRIDGE);
            writeln!(f, "  bridge {} -> {}  {} bytes: {how}", b.from, b.to, b.bytes)?;
        }
        Ok(())
    }
}

impl DeviceGroup {
    /// The plan of one collective on shards of `shape` and `dtype` (dim 0, `ReduceOp::Sum`, from
    /// the leader where there is a root), built on placeholder shards: nothing runs and no device
    /// is touched, so groups naming absent devices can be planned.
    pub fn plan(&self, kind: CollectiveKind, shape: impl Into<Shape>, dtype: DType) -> Result<Plan> {
        let shape = shape.into();
        let bytes = shape.bytes("plan", dtype)?;
        let shards: Vec<Tensor> =
            self.devices().iter().map(|&d| Tensor::placeholder(shape.clone(), dtype, d)).collect();
        let root = &shards[self.leader_index()];
        let outputs = match kind {
            CollectiveKind::Reduce => vec![self.reduce(&shards, ReduceOp::Sum)?],
            CollectiveKind::AllReduce => self.all_reduce(&shards, ReduceOp::Sum)?,
            CollectiveKind::Broadcast => self.broadcast(root)?,
            CollectiveKind::Gather => vec![self.gather(&shards, 0)?],
            CollectiveKind::AllGather => self.all_gather(&shards, 0)?,
            CollectiveKind::ReduceScatter => self.reduce_scatter(&shards, ReduceOp::Sum, 0)?,
            CollectiveKind::Scatter => self.scatter(root, 0)?,
            CollectiveKind::AllToAll => self.all_to_all(&shards, 0)?,
        };
        let mut plan = Plan::of(&outputs);
        plan.algorithm = Some(self.algorithm_for(kind, bytes));
        Ok(plan)
    }
}
