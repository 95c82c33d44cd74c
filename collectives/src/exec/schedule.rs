//! The schedule: the nodes a realize must run, in topological order, each on a device queue.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::backend::Buffer;
use crate::device::Device;
use crate::graph::{Op, Tensor};

/// One node to run (or a leaf whose buffer is already there).
pub(crate) struct Step {
    pub tensor: Tensor,
    /// Indices of the input steps.
    pub inputs: Vec<usize>,
    /// The queue (device) that runs it.
    pub queue: Device,
    /// A buffer present before the run (a realized node, or an input already on its device).
    pub ready: Option<Arc<Buffer>>,
    /// Steps that read this one's buffer.
    pub consumers: usize,
    /// Realize targets keep their buffer; so does a `Move` that took its source's.
    pub keep: bool,
    /// For a `Move`: the source is held by nothing but the move, so its buffer may be taken.
    pub take_source: bool,
    /// Copies of this host kernel's result to other host devices that the kernel writes itself
    /// (indices of those copy steps).
    pub fanout: Vec<usize>,
    /// A copy written by its producer's kernel (a `fanout` entry): never issued on its own.
    pub fused: bool,
}

/// The queue a node runs on: its own device, except a copy from a GPU to the host, which the GPU
/// issues (so the host never polls a device it does not own), and a part of a collective call,
/// taken on the call's queue.
pub(crate) fn queue_of(t: &Tensor) -> Device {
    match (t.op(), t.inputs().first()) {
        (Op::Copy { to } | Op::Move { to }, Some(src)) if to.is_host() => src.device(),
        // Taking a part is free: do it where the call was issued.
        (Op::Part { .. }, Some(call)) => call.device(),
        _ => t.device(),
    }
}

/// The schedule of one realize: steps in topological order and the indices of the targets.
pub(crate) struct Schedule {
    pub steps: Vec<Step>,
    pub targets: Vec<usize>,
}

/// Builds the schedule for `targets` (already rewritten by the passes). Realized nodes are leaves.
pub(crate) fn build(targets: &[Tensor]) -> Schedule {
    let mut b = Builder::default();
    for t in targets {
        b.visit(t);
    }
    let mut steps = b.steps;
    for s in 0..steps.len() {
        for i in steps[s].inputs.clone() {
            steps[i].consumers += 1;
        }
    }
    let targets: Vec<usize> = targets.iter().map(|t| b.index[&t.id()]).collect();
    for &t in &targets {
        steps[t].keep = true;
    }
    fuse_host_fanout(&mut steps);
    Schedule { steps, targets }
}

/// Marks copies of a host kernel's result to other host devices as written by the kernel itself
/// (see [`Step::fanout`]): one pass over the inputs, each copy written while the result is in
/// cache, instead of a kernel then a memcpy per copy.
fn fuse_host_fanout(steps: &mut [Step]) {
    for c in 0..steps.len() {
        let to = match steps[c].tensor.op() {
            Op::Copy { to } | Op::Move { to } if steps[c].ready.is_none() => *to,
            _ => continue,
        };
        let Some(&s) = steps[c].inputs.first() else { continue };
        let producer = &steps[s];
        let host_kernel = producer.ready.is_none()
            && producer.tensor.device().is_host()
            && to.is_host()
            && to != producer.tensor.device()
            && is_kernel(producer.tensor.op());
        if host_kernel {
            steps[s].fanout.push(c);
            steps[c].fused = true;
        }
    }
}

/// Whether the op is a compute kernel a backend runs (not a transfer, alias or multi-device call).
fn is_kernel(op: &Op) -> bool {
    matches!(
        op,
        Op::Binary(_) | Op::Reduce { .. } | Op::Scale(_) | Op::Cast(_) | Op::Slice { .. } | Op::Concat { .. }
    )
}

#[derive(Default)]
struct Builder {
    steps: Vec<Step>,
    index: HashMap<u64, usize>,
    take: HashSet<u64>,
}

impl Builder {
    /// Post-order walk with an explicit stack (graphs can be deeper than the call stack).
    fn visit(&mut self, root: &Tensor) {
        let mut stack = vec![(root.clone(), false)];
        while let Some((t, expanded)) = stack.pop() {
            if self.index.contains_key(&t.id()) {
                continue;
            }
            let ready = t.value().filter(|b| b.device == t.device());
            if expanded || ready.is_some() || t.inputs().is_empty() {
                self.push(t, ready);
                continue;
            }
            // Decided before the schedule holds handles of its own on the source.
            if matches!(t.op(), Op::Move { .. }) && Arc::strong_count(&t.inputs()[0].0) == 1 {
                self.take.insert(t.id());
            }
            stack.push((t.clone(), true));
            stack.extend(t.inputs().iter().rev().map(|i| (i.clone(), false)));
        }
    }

    fn push(&mut self, t: Tensor, ready: Option<Arc<Buffer>>) {
        let inputs = match ready {
            Some(_) => vec![],
            None => t.inputs().iter().map(|i| self.index[&i.id()]).collect(),
        };
        let take_source = self.take.remove(&t.id());
        self.index.insert(t.id(), self.steps.len());
        self.steps.push(Step {
            queue: queue_of(&t),
            inputs,
            ready,
            consumers: 0,
            keep: take_source,
            take_source,
            fanout: vec![],
            fused: false,
            tensor: t,
        });
    }
}
