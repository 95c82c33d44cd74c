//! Issuing one step: a plain `match` over the action the schedule decided for it.
//!
//! The executor knows queues, not device kinds: copies go through the backend's copy router
//! (`backend::copy`), kernels through the kernel contract (`backend::kernel`) to the backend of
//! the step's device.

use std::sync::Arc;

use smallvec::SmallVec;

use super::schedule::{Action, JoinPart, Schedule};
use crate::backend::join::Part;
use crate::backend::{self, Buffer, Delivery, Kernel, OutSpec};
use crate::error::{Error, Result};
use crate::graph::{Op, Tensor};

/// What issuing one step wrote: the step's own buffer, and the steps fused into it with theirs
/// (the copies a host kernel writes; none for every other action, and no allocation then).
pub(crate) type Written = (Arc<Buffer>, Vec<(usize, Arc<Buffer>)>);

/// Issues step `i` of `sched` on its queue, given its inputs' buffers; returns what it wrote.
pub(crate) fn issue(sched: &Schedule, i: usize, inputs: &[Arc<Buffer>]) -> Result<Written> {
    let step = &sched.steps[i];
    let t = &step.tensor;
    let one = |b: Arc<Buffer>| Ok((b, Vec::new()));
    match &step.action {
        Action::Upload => one(upload(t)?),
        Action::Alias { take } => one(release_source(t, *take, inputs[0].clone())),
        Action::Copy { to, take } => one(release_source(t, *take, Arc::new(backend::copy(&inputs[0], *to)?))),
        Action::Call => one(call(t, inputs)?),
        Action::Join { parts } => one(join(t, parts, inputs)?),
        Action::Part(index) => one(part(&inputs[0], *index, t)?),
        Action::Kernel { fanout, streamed } => {
            let to =
                fanout.iter().map(|&c| delivery(t, &sched.steps[c].tensor)).collect::<Result<Vec<_>>>()?;
            let (first, copies) = kernel(t, inputs, &to, *streamed)?;
            Ok((first, fanout.iter().copied().zip(copies).collect()))
        }
        Action::Ready(_) | Action::Fused => {
            Err(Error::internal("issue", "a step no queue issues was issued"))
        }
    }
}

/// What kernel node `k` writes for copy node `c` of its step's fanout: its whole result, where
/// `c` copies `k`, or the range of it that a contiguous slice between them takes (the stream pass
/// fans out a small CUDA fold's copies of parts, `exec/stream.rs`).
fn delivery(k: &Tensor, c: &Tensor) -> Result<Delivery> {
    let range = match c.inputs() {
        [of] => range_of(k, of),
        _ => None,
    };
    let range =
        range.ok_or_else(|| Error::internal("fanout", "a copy of neither a kernel nor one range of it"))?;
    Ok(Delivery { to: c.device(), range })
}

/// The elements of node `k`'s result that node `part` is: all of them where `part` is `k`, the
/// range a slice of `k` takes where it is one range (`outer == 1`); `None` for anything else.
pub(super) fn range_of(k: &Tensor, part: &Tensor) -> Option<std::ops::Range<usize>> {
    if part.same_node(k) {
        return Some(0..k.numel());
    }
    match (part.op(), part.inputs()) {
        (Op::Slice { .. }, [whole]) if whole.same_node(k) => match lower(part.op(), part).ok()? {
            Kernel::Slice { outer: 1, start, len, inner, .. } => Some(start * inner..(start + len) * inner),
            _ => None,
        },
        _ => None,
    }
}

/// A multi-device call's outputs, held by the call's node.
fn call(t: &Tensor, inputs: &[Arc<Buffer>]) -> Result<Arc<Buffer>> {
    let Op::Collective(c) = t.op() else {
        return Err(Error::internal("collective", "a call step whose node is not a collective call"));
    };
    Ok(Arc::new(Buffer::parts(t.device(), t.dtype(), c.0.run(inputs)?)))
}

/// Compute node `t` on its device's backend, its result also delivered to each device of `to`
/// (copies the kernel writes itself; see `Action::Kernel`); a `streamed` kernel may read host
/// buffers, which its backend uploads as it runs. A contiguous slice of a host buffer is a view
/// of it instead (`backend/view.rs`). The kernel contract is checked here, before any backend
/// runs it.
pub(super) fn kernel(
    t: &Tensor,
    inputs: &[Arc<Buffer>],
    to: &[Delivery],
    streamed: bool,
) -> Result<(Arc<Buffer>, Vec<Arc<Buffer>>)> {
    let kernel = lower(t.op(), t)?;
    let refs: SmallVec<[&Buffer; 8]> = inputs.iter().map(|b| b.as_ref()).collect();
    let out = OutSpec { dtype: t.dtype(), len: t.numel() };
    match streamed {
        true => kernel.check_streamed(t.device(), &refs, out)?,
        false => kernel.check(t.device(), &refs, out)?,
    }
    Delivery::check_all(to, t.device(), out)?;
    if let ([input], true) = (inputs, to.is_empty() && !streamed)
        && let Some(v) = backend::view(&kernel, input, t.device())?
    {
        return Ok((Arc::new(v), vec![]));
    }
    let be = backend::get(t.device())?;
    debug_assert_eq!(be.device(), t.device());
    let (first, copies) = if to.is_empty() && !streamed {
        (be.compute(&kernel, &refs, out)?, vec![])
    } else {
        be.compute_fanout(&kernel, &refs, out, to)?
    };
    Ok((Arc::new(first), copies.into_iter().map(Arc::new).collect()))
}

/// Concat node `t` as a join: each part copied once into its range of the output (one of
/// `inputs`, on `t`'s device or a device the join places from), or computed there by its own
/// kernel (from its inputs, the next ones of `inputs`; see `JoinPart`).
fn join(t: &Tensor, parts: &[JoinPart], inputs: &[Arc<Buffer>]) -> Result<Arc<Buffer>> {
    let mismatch =
        || Error::internal("join", format!("the parts of a join on {} do not match its node", t.device()));
    let wanted: usize = parts.iter().map(|p| p.inputs()).sum();
    if parts.len() != t.inputs().len() || wanted != inputs.len() {
        return Err(mismatch());
    }
    let mut rest = inputs;
    let mut out = Vec::with_capacity(parts.len());
    for (part, node) in parts.iter().zip(t.inputs()) {
        let (ins, after) = rest.split_at(part.inputs());
        rest = after;
        let spec = OutSpec { dtype: node.dtype(), len: node.numel() };
        out.push(match part {
            JoinPart::Copy if ins[0].len == spec.len && ins[0].dtype == t.dtype() => Part::Copy(&ins[0]),
            JoinPart::Copy => return Err(mismatch()),
            JoinPart::Computed(_) => {
                let kernel = lower(node.op(), node)?;
                let refs: Vec<&Buffer> = ins.iter().map(|b| b.as_ref()).collect();
                kernel.check(t.device(), &refs, spec)?;
                Part::Computed { kernel, inputs: refs, out: spec }
            }
        });
    }
    Ok(Arc::new(backend::join::join(t.device(), &out, OutSpec { dtype: t.dtype(), len: t.numel() })?))
}

/// Output `index` of a collective call's result.
fn part(call: &Buffer, index: usize, t: &Tensor) -> Result<Arc<Buffer>> {
    match &call.mem {
        crate::backend::Mem::Parts(p) => pick(p, index, t),
        _ => Err(Error::internal(
            "part",
            format!("the input of a part on {} is not a collective call's result", t.device()),
        )),
    }
}

/// Output `index` of a collective call's outputs `parts`, which must be on `t`'s device.
pub(super) fn pick(parts: &[Arc<Buffer>], index: usize, t: &Tensor) -> Result<Arc<Buffer>> {
    match parts.get(index) {
        Some(b) if b.device == t.device() => Ok(b.clone()),
        _ => Err(Error::internal(
            "part",
            format!("the collective call has no output {index} on {}", t.device()),
        )),
    }
}

/// An input whose data is still on the host: upload it and cache it on its device.
fn upload(t: &Tensor) -> Result<Arc<Buffer>> {
    let host = t
        .value()
        .ok_or_else(|| Error::internal("input", format!("an input tensor on {} has no data", t.device())))?;
    if host.device == t.device() {
        return Ok(host);
    }
    let buf = Arc::new(backend::copy(&host, t.device())?);
    *t.0.value.lock() = Some(buf.clone());
    Ok(buf)
}

/// A `Move` whose source nothing else holds (`take`) frees the source's buffer, and caches the
/// moved data in the move's node: the source can no longer recompute it (an input's data is
/// gone). Returns `out`.
fn release_source(t: &Tensor, take: bool, out: Arc<Buffer>) -> Arc<Buffer> {
    if take {
        t.inputs()[0].0.value.lock().take();
        *t.0.value.lock() = Some(out.clone());
    }
    out
}

/// The kernel computing `op` for node `t`.
pub(super) fn lower(op: &Op, t: &Tensor) -> Result<Kernel> {
    Ok(match op {
        Op::Binary(b) => Kernel::Binary(*b),
        Op::Reduce { kind, scale } => Kernel::Reduce { kind: *kind, scale: *scale },
        Op::Scale(s) => Kernel::Scale(*s),
        Op::Cast(_) => Kernel::Cast,
        Op::Slice { dim, start, len } => Kernel::slice(t.inputs()[0].shape(), *dim, *start, *len),
        Op::Concat { dim } => {
            Kernel::concat(t.shape(), t.inputs().iter().map(|i| i.shape().dim(*dim)).collect(), *dim)
        }
        Op::Input | Op::Copy { .. } | Op::Move { .. } | Op::Reshape | Op::Collective(_) | Op::Part { .. } => {
            return Err(Error::internal(op.name(), "lowered as a compute op, which it is not"));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;
    use crate::dtype::DType;
    use crate::graph::Shape;

    /// A copy of the kernel is its whole result; a copy of a slice of it along the outermost dim
    /// the slice's range; a copy of a slice of two ranges a row, or of another tensor, is
    /// refused.
    #[test]
    fn a_fanout_copy_delivers_the_whole_or_its_slices_range() {
        let k = Tensor::placeholder(Shape::from(vec![6, 4]), DType::F32, Device::Cuda(0));
        let to = Device::Cpu(1);
        let copy = |t: &Tensor| t.copy_to_device(to).unwrap();
        assert_eq!(delivery(&k, &copy(&k)).unwrap(), Delivery::whole(to, 24));
        let rows = k.narrow(0, 2, 3).unwrap();
        assert_eq!(delivery(&k, &copy(&rows)).unwrap(), Delivery { to, range: 8..20 });
        assert!(delivery(&k, &copy(&k.narrow(1, 1, 2).unwrap())).is_err(), "two ranges a row");
        let other = Tensor::placeholder(Shape::from(vec![24]), DType::F32, Device::Cuda(0));
        assert!(delivery(&k, &copy(&other)).is_err(), "another tensor");
        assert!(delivery(&k, &copy(&other.narrow(0, 0, 4).unwrap())).is_err(), "a slice of another");
    }
}
