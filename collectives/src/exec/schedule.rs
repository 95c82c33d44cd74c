//! The schedule: the nodes a realize must run, in topological order, each on a device queue.

use foldhash::{HashMap, HashSet};
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
    /// Never issued on its own: a copy written by its producer's kernel (a `fanout` entry), or
    /// the host hop of a staged chain (written by nobody: the chain's second step moves the data).
    pub fused: bool,
    /// The second hop of a fused CUDA ↔ Vulkan chain: its one input is the chain's source (not
    /// the host intermediate), and it moves the data device to device through the host itself.
    pub staged: bool,
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
    if super::staged::fusion_enabled() {
        fuse_staged_chains(&mut steps, super::staged::STAGED_MIN_BYTES);
    }
    Schedule { steps, targets }
}

/// Fuses each CUDA → host → Vulkan (or Vulkan → host → CUDA) pair of copies of at least
/// `min_bytes` whose host intermediate nobody else needs (see [`super::staged`]): the host hop is
/// marked fused, and the second hop reads the chain's source and is marked staged.
fn fuse_staged_chains(steps: &mut [Step], min_bytes: usize) {
    for c in 0..steps.len() {
        if let Some(h) = staged_host_hop(steps, c, min_bytes) {
            let src = steps[h].inputs[0];
            steps[h].fused = true;
            steps[h].consumers = 0;
            steps[c].inputs = vec![src];
            steps[c].staged = true;
        }
    }
}

/// The host hop feeding step `c`, if the two make a chain to fuse.
fn staged_host_hop(steps: &[Step], c: usize, min_bytes: usize) -> Option<usize> {
    let second = &steps[c];
    let to = transfer_target(second)?;
    let h = *second.inputs.first()?;
    let host = &steps[h];
    let via = transfer_target(host)?;
    let src = *host.inputs.first()?;
    let from = steps[src].tensor.device();
    let pair = from.needs_staging(to);
    let alone = !host.keep && host.consumers == 1 && host.fanout.is_empty() && !host.fused && !host.staged;
    let big = second.tensor.numel() * second.tensor.dtype().size() >= min_bytes;
    (pair && via.is_host() && alone && big && !second.fused).then_some(h)
}

/// The destination of a copy or move step still to run.
fn transfer_target(step: &Step) -> Option<Device> {
    match step.tensor.op() {
        Op::Copy { to } | Op::Move { to } if step.ready.is_none() && step.inputs.len() == 1 => Some(*to),
        _ => None,
    }
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
            staged: false,
            tensor: t,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::graph::opt::insert_cross_device_copies;
    use crate::graph::{STAGING_HOST, Shape};

    const CU: Device = Device::Cuda(0);
    const VK: Device = Device::Vulkan(0);
    const BIG: usize = super::super::staged::STAGED_MIN_BYTES / 4;

    fn input(device: Device, numel: usize) -> Tensor {
        Tensor::placeholder(Shape::from(vec![numel]), DType::F32, device)
    }

    fn step<'a>(s: &'a Schedule, t: &Tensor) -> (usize, &'a Step) {
        let i = s.steps.iter().position(|st| st.tensor.same_node(t)).expect("scheduled");
        (i, &s.steps[i])
    }

    /// Asserts that `host -> dst` was fused: the host hop never issued, `dst` reading `src`.
    fn assert_fused(s: &Schedule, src: &Tensor, host: &Tensor, dst: &Tensor) {
        let (si, _) = step(s, src);
        let (_, h) = step(s, host);
        let (_, d) = step(s, dst);
        assert!(h.fused && !h.staged, "host hop fused");
        assert!(d.staged && !d.fused && d.inputs == vec![si], "second hop reads the source");
    }

    fn assert_plain(s: &Schedule, host: &Tensor, dst: &Tensor) {
        let (hi, h) = step(s, host);
        let (_, d) = step(s, dst);
        assert!(!h.fused && !d.staged && d.inputs == vec![hi], "two plain hops");
    }

    #[test]
    fn a_large_chain_fuses_both_ways() {
        for (from, to) in [(CU, VK), (VK, CU), (Device::Cuda(1), Device::Vulkan(2))] {
            let src = input(from, BIG);
            let host = src.copy_to_device(STAGING_HOST).unwrap();
            let dst = host.copy_to_device(to).unwrap();
            let s = build(std::slice::from_ref(&dst));
            assert_fused(&s, &src, &host, &dst);
            assert_eq!(step(&s, &dst).1.queue, to, "issued by the destination's queue");
        }
    }

    #[test]
    fn any_host_device_and_moves_fuse() {
        let src = input(CU, BIG);
        let host = src.clone().move_to_device(Device::Cpu(3)).unwrap();
        let dst = host.clone().move_to_device(VK).unwrap();
        let s = build(std::slice::from_ref(&dst));
        assert_fused(&s, &src, &host, &dst);
    }

    #[test]
    fn small_tensors_keep_two_hops() {
        let src = input(CU, BIG - 1);
        let host = src.copy_to_device(STAGING_HOST).unwrap();
        let dst = host.copy_to_device(VK).unwrap();
        assert_plain(&build(std::slice::from_ref(&dst)), &host, &dst);
    }

    #[test]
    fn a_host_intermediate_someone_needs_is_not_fused() {
        let src = input(CU, BIG);
        let host = src.copy_to_device(STAGING_HOST).unwrap();
        let dst = host.copy_to_device(VK).unwrap();
        // A realize target.
        assert_plain(&build(&[host.clone(), dst.clone()]), &host, &dst);
        // A second consumer: another copy, or a host kernel.
        let other = host.copy_to_device(Device::Vulkan(1)).unwrap();
        assert_plain(&build(&[dst.clone(), other.clone()]), &host, &dst);
        let sum = host.add(&host).unwrap();
        let s = build(&[dst.clone(), sum]);
        assert_plain(&s, &host, &dst);
    }

    #[test]
    fn a_move_that_takes_its_source_is_not_fused() {
        let host = input(CU, BIG).move_to_device(STAGING_HOST).unwrap();
        let dst = host.clone().move_to_device(VK).unwrap();
        let s = build(std::slice::from_ref(&dst));
        let (_, h) = step(&s, &host);
        assert!(h.take_source, "the host hop holds the only handle on its source");
        assert_plain(&s, &host, &dst);
    }

    #[test]
    fn only_cuda_vulkan_pairs_fuse() {
        for (from, to) in
            [(CU, Device::Cuda(1)), (VK, Device::Vulkan(1)), (Device::Cpu(1), VK), (CU, Device::Cpu(2))]
        {
            let src = input(from, BIG);
            let host = src.copy_to_device(STAGING_HOST).unwrap();
            let dst = host.copy_to_device(to).unwrap();
            assert_plain(&build(std::slice::from_ref(&dst)), &host, &dst);
        }
    }

    #[test]
    fn the_pass_inserted_edge_of_a_compute_op_fuses() {
        let a = input(VK, BIG);
        let b = input(CU, BIG);
        let sum = a.add(&b).unwrap();
        let rewritten = insert_cross_device_copies(&[sum]);
        let dst = rewritten[0].inputs()[1].clone();
        let host = dst.inputs()[0].clone();
        let s = build(&rewritten);
        assert_fused(&s, &b, &host, &dst);
        let (_, add) = step(&s, &rewritten[0]);
        assert!(!add.fused && !add.staged);
    }
}
