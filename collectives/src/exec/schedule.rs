//! The schedule: the nodes a realize must run, in topological order, each on a device queue.

use foldhash::{HashMap, HashSet};
use std::sync::Arc;

use crate::backend::Buffer;
use crate::backend::chain::DEVICE_MIN_BYTES;
use crate::device::Device;
use crate::graph::{Op, Tensor};

/// What a step does when its queue reaches it: one action per step, decided by the schedule.
pub(crate) enum Action {
    /// Nothing: the buffer is there before the run (a realized node, or an input already on its
    /// device).
    Ready(Arc<Buffer>),
    /// Host data uploaded to the node's device, and cached in its node.
    Upload,
    /// The input's buffer, as it is: a reshape, or a move onto the device it is on (which frees
    /// its source's hold when nothing else holds the source, `take`).
    Alias { take: bool },
    /// A copy of the one input to `to`, by the backend's copy router (a fused CUDA ↔ Vulkan
    /// chain's second hop reads the chain's source and takes the whole chain). A move whose
    /// source nothing else holds frees the source's buffer (`take`).
    Copy { to: Device, take: bool },
    /// A multi-device call, one buffer per output.
    Call,
    /// Output `index` of the call that is the step's input.
    Part(usize),
    /// A compute kernel, its result also written to each host device of the `fanout` steps (the
    /// copies the kernel writes itself: a host kernel while the result is in cache, a streamed
    /// kernel chunk by chunk; a kernel streamed in one pass also writes copies of contiguous
    /// slices of its result, each the range its slice takes). A `streamed` kernel (see
    /// [`super::stream`]) may read host buffers that its device's backend uploads in chunks as it
    /// runs.
    Kernel { fanout: Vec<usize>, streamed: bool },
    /// A concatenation written as a join (see [`super::join`]): each part, on this device or
    /// the source of a copy folded in, copied once into its range of the output, or computed
    /// there by its kernel, folded in (the step's inputs are the parts' in order: one for a
    /// copied part, the kernel's for a computed one).
    Join { parts: Vec<JoinPart> },
    /// Never issued on its own: a copy a kernel writes (an entry of its `fanout`), an upload a
    /// streamed kernel reads from the host itself, the host hop of a fused chain, a kernel a join
    /// computes into its range, or a slice whose only readers are copies its kernel writes; the
    /// last four are written by nobody (the kernel, the chain's second hop, or the join moves or
    /// computes the data).
    Fused,
}

/// How a join writes one part of its output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JoinPart {
    /// One input of the step, copied into the part's range.
    Copy,
    /// The part's own kernel, computed into its range from this many inputs of the step.
    Computed(usize),
}

impl JoinPart {
    /// How many of the join step's inputs the part reads.
    pub fn inputs(self) -> usize {
        match self {
            JoinPart::Copy => 1,
            JoinPart::Computed(n) => n,
        }
    }
}

/// One node of the schedule.
pub(crate) struct Step {
    pub tensor: Tensor,
    /// Indices of the input steps.
    pub inputs: Vec<usize>,
    /// The queue (device) that runs it.
    pub queue: Device,
    /// What it does.
    pub action: Action,
    /// Steps that read this one's buffer.
    pub consumers: usize,
    /// Realize targets keep their buffer; so does a `Move` that took its source's.
    pub keep: bool,
}

impl Step {
    /// Whether a queue issues the step (it is neither there already nor written by another).
    pub fn issued(&self) -> bool {
        !matches!(self.action, Action::Ready(_) | Action::Fused)
    }

    /// The buffer present before the run, if any.
    pub fn ready(&self) -> Option<&Arc<Buffer>> {
        match &self.action {
            Action::Ready(b) => Some(b),
            _ => None,
        }
    }
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
    let mut s = unfused(targets);
    if crate::backend::chain::fusion_enabled() {
        use crate::backend::staged::{fuse_min_bytes, on_one_gpu};
        fuse_staged_chains(&mut s.steps, fuse_min_bytes, on_one_gpu);
    }
    if super::stream::enabled() {
        super::stream::fuse(&mut s.steps, super::stream::Sizes::DEFAULT);
    }
    super::join::fuse(&mut s.steps);
    s
}

/// [`build`] without fusing CUDA ↔ Vulkan chains or streaming kernels.
pub(super) fn unfused(targets: &[Tensor]) -> Schedule {
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

impl Schedule {
    /// Step `i` in a few words: its queue, what it does and on which device.
    pub fn describe(&self, i: usize) -> String {
        let s = &self.steps[i];
        let what = match &s.action {
            Action::Ready(_) => "ready".to_string(),
            Action::Upload => "upload".to_string(),
            Action::Alias { .. } => "alias".to_string(),
            Action::Copy { to, .. } => match s.inputs.first() {
                Some(&from) => format!("copy {} -> {to}", self.steps[from].tensor.device()),
                None => format!("copy -> {to}"),
            },
            Action::Call => "call".to_string(),
            Action::Part(n) => format!("part {n}"),
            Action::Kernel { fanout, streamed } => {
                let how = if *streamed { " streamed" } else { "" };
                let copies = match fanout.len() {
                    0 => String::new(),
                    n => format!(" (+{n} copies)"),
                };
                format!("{} kernel{how}{copies}", s.tensor.op().name())
            }
            Action::Join { parts } => {
                let placed =
                    self.copied_parts(s).filter(|&i| self.steps[i].tensor.device() != s.tensor.device());
                let computed = parts.iter().filter(|p| matches!(p, JoinPart::Computed(_))).count();
                format!(
                    "join of {} parts ({} placed from other devices, {computed} computed in place)",
                    parts.len(),
                    placed.count()
                )
            }
            Action::Fused => "fused".to_string(),
        };
        let bytes = s.tensor.nbytes();
        format!("[{}] {what}, {bytes} B on {}", s.queue, s.tensor.device())
    }

    /// One line saying what the schedule runs: steps by action, and the bytes each pair of
    /// devices copies (the log's `debug` level).
    pub fn summary(&self) -> String {
        let mut counts = [0usize; 6];
        let mut copies: Vec<((Device, Device), usize)> = vec![];
        for s in &self.steps {
            let slot = match s.action {
                Action::Ready(_) | Action::Alias { .. } | Action::Part(_) => continue,
                Action::Kernel { .. } => 0,
                Action::Upload => 1,
                Action::Copy { .. } => 2,
                Action::Call => 3,
                Action::Fused => 4,
                Action::Join { .. } => 5,
            };
            counts[slot] += 1;
            for (pair, bytes) in self.moved(s) {
                match copies.iter_mut().find(|(p, _)| *p == pair) {
                    Some((_, b)) => *b += bytes,
                    None => copies.push((pair, bytes)),
                }
            }
        }
        let [kernels, uploads, copied, calls, fused, joins] = counts;
        let pairs: Vec<String> = copies.iter().map(|((f, t), b)| format!("{f}->{t} {b} B")).collect();
        format!(
            "{} steps: {kernels} kernels, {joins} joins, {uploads} uploads, {copied} copies, {calls} calls, {fused} fused; copies [{}]",
            self.steps.len(),
            pairs.join(", ")
        )
    }

    /// The bytes step `s` moves between devices, by pair: a copy's, and the parts a join places
    /// from other devices.
    fn moved(&self, s: &Step) -> Vec<((Device, Device), usize)> {
        let from = |i: usize| &self.steps[i].tensor;
        match &s.action {
            Action::Copy { to, .. } => {
                s.inputs.first().map(|&i| ((from(i).device(), *to), s.tensor.nbytes())).into_iter().collect()
            }
            Action::Join { .. } => self
                .copied_parts(s)
                .map(from)
                .filter(|t| t.device() != s.tensor.device())
                .map(|t| ((t.device(), s.tensor.device()), t.nbytes()))
                .collect(),
            _ => vec![],
        }
    }

    /// The inputs a join step `s` copies (one per copied part; none of a computed part's).
    fn copied_parts<'a>(&'a self, s: &'a Step) -> impl Iterator<Item = usize> + 'a {
        let parts = match &s.action {
            Action::Join { parts } => parts.as_slice(),
            _ => &[],
        };
        let starts = parts.iter().scan(0, |at, p| {
            let start = *at;
            *at += p.inputs();
            Some((start, *p))
        });
        starts.filter(|(_, p)| *p == JoinPart::Copy).map(|(at, _)| s.inputs[at])
    }
}

/// Fuses each CUDA → host → Vulkan (or Vulkan → host → CUDA) pair of copies of at least
/// `min_bytes(from, to)` whose host intermediate nobody else needs (see [`super::staged`]): the host hop is
/// fused away, and the second hop reads the chain's source (its copy crosses the whole chain).
/// Where the pair is one GPU (`one_gpu`: the device bridge), a smaller chain fuses too when its
/// source is a view of a Vulkan tensor of [`DEVICE_MIN_BYTES`] or more
/// ([`views_vulkan_device_memory`]): the bridge reads the part in place, where its host hop
/// would be a Vulkan copy, a submission that waits for the GPU to switch APIs after CUDA work.
///
/// Where the pair is one GPU (`one_gpu`: the device bridge) and the host intermediate is needed
/// too (a realize target, another reader), the second hop still reads the chain's source, beside
/// the host hop, which stays for its own readers: the device bridge crosses no bus, so the tensor
/// need not wait for the host copy (a mixed group's result reaches its Vulkan member at the
/// GPU's speed while its host member's copy crosses PCIe).
pub(super) fn fuse_staged_chains(
    steps: &mut [Step],
    min_bytes: impl Fn(Device, Device) -> usize,
    one_gpu: impl Fn(Device, Device) -> bool,
) {
    for c in 0..steps.len() {
        let Some((h, alone)) = staged_host_hop(steps, c, &min_bytes, &one_gpu) else { continue };
        let src = steps[h].inputs[0];
        if alone {
            steps[h].action = Action::Fused;
            steps[h].consumers = 0;
        } else {
            steps[h].consumers -= 1;
            steps[src].consumers += 1;
        }
        steps[c].inputs = vec![src];
    }
}

/// The host hop feeding step `c`, if the two make a chain to fuse (`true`: nobody else needs the
/// host hop) or to run beside each other (`false`).
fn staged_host_hop(
    steps: &[Step],
    c: usize,
    min_bytes: &dyn Fn(Device, Device) -> usize,
    one_gpu: &dyn Fn(Device, Device) -> bool,
) -> Option<(usize, bool)> {
    let second = &steps[c];
    let to = transfer_target(second)?;
    let h = *second.inputs.first()?;
    let host = &steps[h];
    let via = transfer_target(host)?;
    let src = *host.inputs.first()?;
    let from = steps[src].tensor.device();
    if !(from.needs_staging(to) && via.is_host()) {
        return None;
    }
    let in_place = || views_vulkan_device_memory(&steps[src].tensor) && one_gpu(from, to);
    if second.tensor.nbytes() < min_bytes(from, to) && !in_place() {
        return None;
    }
    let alone = !host.keep && host.consumers == 1;
    // Beside: neither hop is a move that frees what it reads.
    let plain = |s: &Step| matches!(s.action, Action::Copy { take: false, .. });
    let beside = !alone && plain(host) && plain(second) && one_gpu(from, to);
    (alone || beside).then_some((h, alone))
}

/// Whether step `u` is a plain copy to `to` (not a move that frees its source) of one step on a
/// device `from` accepts, that only its one reader needs (a realize target or a second reader
/// keeps it a step of its own): a copy that reader may fold in ([`fold_copy`]). The step's
/// input, not its node's, says where the data comes from: a fused CUDA ↔ Vulkan chain's second
/// hop reads the chain's source.
pub(super) fn sole_copy_to(steps: &[Step], u: usize, to: Device, from: impl Fn(Device) -> bool) -> bool {
    let u = &steps[u];
    matches!(u.action, Action::Copy { to: t, take: false } if t == to)
        && matches!(u.inputs[..], [src] if from(steps[src].tensor.device()))
        && u.consumers == 1
        && !u.keep
}

/// Folds copy step `steps[k].inputs[at]` (see [`sole_copy_to`]) into its reader `k`: the copy is
/// not issued, and `k` reads the copy's source instead.
pub(super) fn fold_copy(steps: &mut [Step], k: usize, at: usize) {
    let u = steps[k].inputs[at];
    steps[k].inputs[at] = steps[u].inputs[0];
    steps[u].action = Action::Fused;
    steps[u].consumers = 0;
}

/// The destination of a copy step still to run.
fn transfer_target(step: &Step) -> Option<Device> {
    match step.action {
        Action::Copy { to, .. } if step.inputs.len() == 1 => Some(to),
        _ => None,
    }
}

/// Marks copies of a host kernel's result to other host devices as written by the kernel itself
/// (see [`Step::fanout`]): one pass over the inputs, each copy written while the result is in
/// cache, instead of a kernel then a memcpy per copy. Not a contiguous slice's: that runs as a
/// view of its input, no pass at all, so its copy is one memcpy as it stands — or none, where a
/// join places it (`exec/join.rs`; a mixed group's all_to_all joins each host member's part of
/// every other host member's shard so), where fanned out it was a pass into a buffer of its own,
/// a memcpy into the copy, and the join's.
fn fuse_host_fanout(steps: &mut [Step]) {
    for c in 0..steps.len() {
        let to = match steps[c].action {
            Action::Copy { to, .. } => to,
            _ => continue,
        };
        let Some(&s) = steps[c].inputs.first() else { continue };
        let from = steps[s].tensor.device();
        if let Action::Kernel { fanout, .. } = &mut steps[s].action
            && from.is_host()
            && to.is_host()
            && to != from
            && !runs_as_view(&steps[s].tensor)
        {
            fanout.push(c);
            steps[c].action = Action::Fused;
        }
    }
}

/// Whether kernel node `t` runs as a view of its input: a slice of one contiguous range
/// (`backend/view.rs`; on a Vulkan device where the range can be bound so, which is all but
/// imported memory and a binding past the memory's end, `backend/vulkan/view.rs`).
pub(super) fn runs_as_view(t: &Tensor) -> bool {
    matches!(t.inputs(), [of] if super::step::range_of(of, t).is_some())
}

/// Whether Vulkan node `t` runs as a view ([`runs_as_view`], through reshapes) of a tensor of at
/// least [`DEVICE_MIN_BYTES`]: its data lies in that tensor's buffer, which on an NVIDIA GPU that
/// CUDA shares is memory of its own that the device bridge reads in place
/// (`backend/staged/direct.rs`, `to_cuda`).
pub(crate) fn views_vulkan_device_memory(t: &Tensor) -> bool {
    let whole = cut_from(t, true);
    matches!(t.device(), Device::Vulkan(_)) && !whole.same_node(t) && whole.nbytes() >= DEVICE_MIN_BYTES
}

/// The tensor `t` is cut from: `t` itself, or what its reshapes and slices take, through every
/// one of them — or, `views_only`, through those that run as views ([`runs_as_view`]) alone.
pub(crate) fn cut_from(t: &Tensor, views_only: bool) -> &Tensor {
    let mut whole = t;
    while let (op @ (Op::Slice { .. } | Op::Reshape), [of]) = (whole.op(), whole.inputs()) {
        if views_only && matches!(op, Op::Slice { .. }) && !runs_as_view(whole) {
            break;
        }
        whole = of;
    }
    whole
}

/// The action of node `t`, to run (`take`: a move whose source nothing else holds).
pub(super) fn action_of(t: &Tensor, take: bool) -> Action {
    match t.op() {
        Op::Input => Action::Upload,
        Op::Reshape => Action::Alias { take: false },
        Op::Move { to } if t.inputs()[0].device() == *to => Action::Alias { take },
        Op::Copy { to } | Op::Move { to } => Action::Copy { to: *to, take },
        Op::Collective(_) => Action::Call,
        Op::Part { index } => Action::Part(*index),
        Op::Binary(_)
        | Op::Reduce { .. }
        | Op::Scale(_)
        | Op::Cast(_)
        | Op::Slice { .. }
        | Op::Concat { .. } => Action::Kernel { fanout: vec![], streamed: false },
    }
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
            let ready = t.value_here();
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
        let take = self.take.remove(&t.id());
        let action = match ready {
            Some(b) => Action::Ready(b),
            None => action_of(&t, take),
        };
        self.index.insert(t.id(), self.steps.len());
        self.steps.push(Step { queue: queue_of(&t), inputs, action, consumers: 0, keep: take, tensor: t });
    }
}

#[cfg(test)]
mod tests;
