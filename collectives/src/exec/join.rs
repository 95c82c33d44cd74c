//! Concat as placement: a concatenation whose parts arrive by copies becomes a join, which
//! copies each part once, straight into its range of the output (`backend/join.rs`).
//!
//! The pass runs on a built schedule. A concat step qualifies when each part is one contiguous
//! range of the output (every dimension before the joined one is 1) and at least one of its
//! inputs is a copy step it can fold in: a plain copy to the concat's device ([`Action::Copy`],
//! not a move that frees its source), from a device whose buffers the join can place there
//! ([`placeable`]: not across CUDA and Vulkan, nor between two Vulkan devices), read by nothing
//! else and not a realize target. The copy is then not issued ([`Action::Fused`]); the join
//! reads the copy's source instead, and copies its other inputs (already on its device, or read
//! in place from a peer) into their ranges too — except a part its device's elementwise kernel
//! computes for the concat alone (read by nothing else and not a realize target;
//! [`computable`]: on every kind of device): that kernel is folded in as well and computed
//! straight into its range, so the part is written once instead of twice (a Vulkan kernel whose
//! range is off its binding alignment computes into a scratch buffer copied in by the same
//! submission, still saving the kernel a submission of its own). A part with other readers keeps its
//! buffer (a ring's folded part is also sent on: read from the join's output instead, it would
//! wait for the join, which waits for the ring). A concat of parts that are all on its device
//! stays a kernel: one launch over the output, no better as copies.

use super::schedule::{Action, JoinPart, Step, fold_copy, sole_copy_to};
use crate::backend::join::{computable, placeable};
use crate::device::Device;
use crate::graph::Op;

/// Turns each qualifying concat step of `steps` into an [`Action::Join`] (see the module doc).
pub(crate) fn fuse(steps: &mut [Step]) {
    for c in 0..steps.len() {
        if !joinable(&steps[c]) {
            continue;
        }
        let to = steps[c].tensor.device();
        let folded: Vec<usize> = (0..steps[c].inputs.len())
            .filter(|&at| sole_copy_to(steps, steps[c].inputs[at], to, |from| placeable(from, to)))
            .collect();
        if folded.is_empty() {
            continue;
        }
        for at in folded {
            fold_copy(steps, c, at);
        }
        let parts = fold_kernels(steps, c, to);
        steps[c].action = Action::Join { parts };
    }
}

/// Folds each input of join step `c` that a kernel of `to` computes for it alone
/// ([`sole_kernel_on`]) into it: the kernel is not issued, and its inputs take its place in the
/// join's. Returns how the join writes each part.
fn fold_kernels(steps: &mut [Step], c: usize, to: Device) -> Vec<JoinPart> {
    let mut parts = Vec::with_capacity(steps[c].inputs.len());
    let mut inputs = Vec::with_capacity(steps[c].inputs.len());
    let nodes = steps[c].tensor.inputs().to_vec();
    for (k, node) in steps[c].inputs.clone().into_iter().zip(&nodes) {
        // The part's own node: not the source of a copy folded in (a copy to the device it is
        // on already), whose kernel the join would have to find elsewhere.
        if steps[k].tensor.same_node(node) && sole_kernel_on(steps, k, to) {
            parts.push(JoinPart::Computed(steps[k].inputs.len()));
            inputs.extend_from_slice(&steps[k].inputs);
            steps[k].action = Action::Fused;
            steps[k].consumers = 0;
        } else {
            parts.push(JoinPart::Copy);
            inputs.push(k);
        }
    }
    steps[c].inputs = inputs;
    parts
}

/// Whether step `k` is an elementwise kernel on `to` (which computes in place), read only by its
/// one reader and not a realize target: a part a join on `to` may compute into its range.
fn sole_kernel_on(steps: &[Step], k: usize, to: Device) -> bool {
    let s = &steps[k];
    let elementwise = matches!(s.tensor.op(), Op::Binary(_) | Op::Reduce { .. } | Op::Scale(_) | Op::Cast(_));
    matches!(&s.action, Action::Kernel { fanout, streamed: false } if fanout.is_empty())
        && elementwise
        && s.tensor.device() == to
        && s.consumers == 1
        && !s.keep
        && computable(to)
}

/// Whether step `s` is a concat kernel (not fanned out, not streamed) whose parts are
/// contiguous ranges of its output, on a device a join can write.
fn joinable(s: &Step) -> bool {
    let Op::Concat { dim } = *s.tensor.op() else { return false };
    let contiguous = s.tensor.shape().dims()[..dim].iter().all(|&d| d == 1);
    let device = s.tensor.device();
    matches!(&s.action, Action::Kernel { fanout, streamed: false } if fanout.is_empty())
        && contiguous
        && placeable(device, device)
}

#[cfg(test)]
mod tests {
    use super::super::schedule::{Schedule, unfused};
    use super::*;
    use crate::device::Device;
    use crate::dtype::DType;
    use crate::graph::{Shape, Tensor};

    const H0: Device = Device::Cpu(0);
    const H1: Device = Device::Cpu(1);
    const CU: Device = Device::Cuda(0);
    const VK: Device = Device::Vulkan(0);

    fn input(device: Device, dims: &[usize]) -> Tensor {
        Tensor::placeholder(Shape::from(dims.to_vec()), DType::F32, device)
    }

    fn joined(targets: &[Tensor]) -> Schedule {
        let mut s = unfused(targets);
        fuse(&mut s.steps);
        s
    }

    fn index(s: &Schedule, t: &Tensor) -> usize {
        s.steps.iter().position(|st| st.tensor.same_node(t)).expect("scheduled")
    }

    #[test]
    fn copies_into_a_host_or_cuda_concat_are_folded_into_a_join() {
        assert_eq!(placeable(CU, H0), cfg!(feature = "cuda"));
        assert_eq!(placeable(H0, VK), cfg!(feature = "vulkan"));
        let pairs = [(H0, H1), (CU, H1), (H0, CU), (Device::Cuda(1), CU), (VK, H1), (H0, VK)];
        for (from, to) in pairs.into_iter().filter(|&(f, t)| placeable(f, t)) {
            let (a, b) = (input(from, &[4, 3]), input(to, &[2, 3]));
            let hop = a.copy_to_device(to).unwrap();
            let cat = Tensor::concat(&[hop.clone(), b.clone()], 0).unwrap();
            let s = joined(std::slice::from_ref(&cat));
            let (c, h) = (index(&s, &cat), index(&s, &hop));
            assert!(matches!(s.steps[c].action, Action::Join { .. }), "{from} -> {to}: a join");
            assert!(matches!(s.steps[h].action, Action::Fused), "{from} -> {to}: the copy is folded in");
            assert_eq!(s.steps[c].inputs, vec![index(&s, &a), index(&s, &b)], "the join reads the source");
            assert_eq!(s.steps[h].consumers, 0);
        }
    }

    #[test]
    fn a_kernel_computed_for_the_join_alone_is_folded_in_on_every_kind_of_device() {
        let to_of = [H1, CU, VK];
        for to in to_of.into_iter().filter(|&to| placeable(H0, to)) {
            let shards = [input(to, &[4, 3]), input(to, &[4, 3]), input(to, &[4, 3])];
            let folded = Tensor::reduce(&shards, crate::graph::ReduceKind::Sum, None).unwrap();
            let hop = input(H0, &[2, 3]).copy_to_device(to).unwrap();
            let cat = Tensor::concat(&[hop.clone(), folded.clone()], 0).unwrap();
            let s = joined(std::slice::from_ref(&cat));
            let (c, k) = (index(&s, &cat), index(&s, &folded));
            let Action::Join { parts } = &s.steps[c].action else { panic!("{to}: a join: {}", s.summary()) };
            let ins: Vec<usize> = shards.iter().map(|t| index(&s, t)).collect();
            assert!(computable(to), "{to}: a device a join places into computes its parts too");
            assert_eq!(parts, &[JoinPart::Copy, JoinPart::Computed(3)], "{to}");
            assert!(matches!(s.steps[k].action, Action::Fused), "{to}: the kernel is folded in");
            assert_eq!(s.steps[k].consumers, 0);
            let want: Vec<usize> = std::iter::once(index(&s, &input_of(&hop))).chain(ins.clone()).collect();
            assert_eq!(s.steps[c].inputs, want, "{to}: the join reads the kernel's inputs");
            assert!(ins.iter().all(|&i| s.steps[i].consumers == 1), "{to}: read by the join alone");
            assert!(
                s.describe(c).contains("1 placed from other devices, 1 computed in place"),
                "{}",
                s.describe(c)
            );
        }
        // A kernel that is a realize target, or that another step reads, keeps its own result.
        let shards = [input(H1, &[4]), input(H1, &[4])];
        let folded = Tensor::reduce(&shards, crate::graph::ReduceKind::Max, None).unwrap();
        let cat = Tensor::concat(&[input(H0, &[4]).copy_to_device(H1).unwrap(), folded.clone()], 0).unwrap();
        let other = folded.add(&folded).unwrap();
        for targets in [vec![cat.clone(), folded.clone()], vec![cat.clone(), other]] {
            let s = joined(&targets);
            let Action::Join { parts } = &s.steps[index(&s, &cat)].action else { panic!("{}", s.summary()) };
            assert_eq!(parts, &[JoinPart::Copy, JoinPart::Copy]);
            assert!(matches!(s.steps[index(&s, &folded)].action, Action::Kernel { .. }));
        }
        // A copy of a kernel's result to the device it is on: the join places the copy's source
        // (the kernel's result), and the kernel, which is not the part's own node, keeps its step.
        let shards = [input(H1, &[4]), input(H1, &[4])];
        let folded = Tensor::reduce(&shards, crate::graph::ReduceKind::Sum, None).unwrap();
        let cat = Tensor::concat(&[folded.copy_to_device(H1).unwrap(), input(H1, &[4])], 0).unwrap();
        let s = joined(std::slice::from_ref(&cat));
        let Action::Join { parts } = &s.steps[index(&s, &cat)].action else { panic!("{}", s.summary()) };
        assert_eq!(parts, &[JoinPart::Copy, JoinPart::Copy]);
        assert!(matches!(s.steps[index(&s, &folded)].action, Action::Kernel { .. }));
    }

    /// The one input of copy node `t`.
    fn input_of(t: &Tensor) -> Tensor {
        t.inputs()[0].clone()
    }

    #[test]
    fn a_realized_join_is_the_concatenation() {
        let (x, y): (Vec<f64>, Vec<f64>) =
            ((0..15).map(|_| rand::random()).collect(), (0..6).map(|_| rand::random()).collect());
        let a = Tensor::from_vec(x.clone(), [1, 5, 3], H0).unwrap();
        let b = Tensor::from_vec(y.clone(), [1, 2, 3], H1).unwrap();
        let cat = Tensor::concat_on(H1, &[b, a.copy_to_device(H1).unwrap()], 1).unwrap();
        let s = super::super::schedule::build(std::slice::from_ref(&cat));
        assert!(matches!(s.steps[index(&s, &cat)].action, Action::Join { .. }), "{}", s.summary());
        assert!(
            s.summary().contains("1 joins") && s.summary().contains("cpu:0->cpu:1 120 B"),
            "{}",
            s.summary()
        );
        assert_eq!(cat.to_vec::<f64>().unwrap(), [y, x].concat());
    }

    #[test]
    fn bridged_parts_strided_parts_and_shared_copies_stay_as_they_are() {
        let concat_of = |from: Device, to: Device, dims: &[usize], dim: usize| {
            let hop = input(from, dims).copy_to_device(to).unwrap();
            (hop.clone(), Tensor::concat(&[hop, input(to, dims)], dim).unwrap())
        };
        // A CUDA <-> Vulkan chain fused into one hop (the bridge): its second hop reads the
        // chain's source, which no join places.
        for (from, to) in [(CU, VK), (VK, CU)] {
            let hop = input(from, &[4, 3]).copy_to_device(H0).unwrap().copy_to_device(to).unwrap();
            let cat = Tensor::concat(&[hop.clone(), input(to, &[4, 3])], 0).unwrap();
            let mut s = unfused(std::slice::from_ref(&cat));
            super::super::schedule::fuse_staged_chains(&mut s.steps, |_, _| 0, |_, _| true);
            fuse(&mut s.steps);
            assert!(matches!(s.steps[index(&s, &cat)].action, Action::Kernel { .. }), "{from} -> {to}");
            assert!(matches!(s.steps[index(&s, &hop)].action, Action::Copy { .. }), "{from} -> {to}");
        }
        // Parts that are not contiguous ranges (a concat along dim 1 of 2 x 3 tensors).
        let (hop, cat) = concat_of(H0, H1, &[2, 3], 1);
        let s = joined(std::slice::from_ref(&cat));
        assert!(matches!(s.steps[index(&s, &cat)].action, Action::Kernel { .. }));
        assert!(matches!(s.steps[index(&s, &hop)].action, Action::Copy { .. }));
        // A copy someone else reads, or that is a realize target, is kept; so is a move that
        // frees its source.
        let (hop, cat) = concat_of(H0, H1, &[4], 0);
        let other = hop.add(&hop).unwrap();
        for targets in [vec![cat.clone(), other], vec![cat.clone(), hop.clone()]] {
            let s = joined(&targets);
            assert!(matches!(s.steps[index(&s, &cat)].action, Action::Kernel { .. }));
        }
        let moved = input(H0, &[4]).move_to_device(H1).unwrap();
        let cat = Tensor::concat(&[moved.clone(), input(H1, &[4])], 0).unwrap();
        let s = joined(std::slice::from_ref(&cat));
        assert!(matches!(s.steps[index(&s, &moved)].action, Action::Copy { take: true, .. }));
    }
}
