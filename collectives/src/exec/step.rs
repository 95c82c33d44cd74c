//! Issuing one step: the Copy arm, the reshape alias, and lowered compute.

use std::sync::Arc;

use super::schedule::Step;
use crate::backend::{self, Buffer, Kernel, OutSpec};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::graph::{Op, Tensor};

/// Issues `step` on its queue, given its inputs' buffers.
pub(crate) fn issue(step: &Step, inputs: &[Arc<Buffer>]) -> Result<Arc<Buffer>> {
    let t = &step.tensor;
    match t.op() {
        Op::Input => upload(t),
        Op::Reshape => Ok(inputs[0].clone()),
        Op::Collective(call) => {
            let refs: Vec<&Buffer> = inputs.iter().map(|b| b.as_ref()).collect();
            let parts = call.0.run(&refs)?;
            Ok(Arc::new(Buffer::parts(t.device(), t.dtype(), parts)))
        }
        Op::Part { index } => part(&inputs[0], *index, t),
        Op::Copy { to } | Op::Move { to } if step.staged => {
            let out = Arc::new(backend::staged::transfer(&inputs[0], *to)?);
            release_source(step, &out);
            Ok(out)
        }
        Op::Move { to } if *to == inputs[0].device => {
            let out = inputs[0].clone();
            release_source(step, &out);
            Ok(out)
        }
        Op::Copy { to } | Op::Move { to } => {
            let out = Arc::new(copy(&inputs[0], *to)?);
            release_source(step, &out);
            Ok(out)
        }
        _ => Ok(issue_fanout(step, inputs, &[])?.0),
    }
}

/// Issues compute step `step`, its result also delivered to each device of `to` (copies the
/// kernel writes itself; see `Step::fanout`).
pub(crate) fn issue_fanout(
    step: &Step,
    inputs: &[Arc<Buffer>],
    to: &[Device],
) -> Result<(Arc<Buffer>, Vec<Arc<Buffer>>)> {
    let t = &step.tensor;
    let kernel = lower(t.op(), t)?;
    let refs: Vec<&Buffer> = inputs.iter().map(|b| b.as_ref()).collect();
    let out = OutSpec { dtype: t.dtype(), len: t.numel() };
    let be = backend::get(t.device())?;
    debug_assert_eq!(be.device(), t.device());
    let (first, copies) = if to.is_empty() {
        (be.compute(&kernel, &refs, out)?, vec![])
    } else {
        be.compute_fanout(&kernel, &refs, out, to)?
    };
    Ok((Arc::new(first), copies.into_iter().map(Arc::new).collect()))
}

/// Output `index` of a collective call's result.
fn part(call: &Buffer, index: usize, t: &Tensor) -> Result<Arc<Buffer>> {
    match &call.mem {
        crate::backend::Mem::Parts(p) => pick(p, index, t),
        _ => Err(Error::driver(t.device(), "part", "not a collective call's result")),
    }
}

/// Output `index` of a collective call's outputs `parts`, which must be on `t`'s device.
pub(super) fn pick(parts: &[Arc<Buffer>], index: usize, t: &Tensor) -> Result<Arc<Buffer>> {
    match parts.get(index) {
        Some(b) if b.device == t.device() => Ok(b.clone()),
        _ => Err(Error::driver(t.device(), "part", format!("collective call has no output {index} here"))),
    }
}

/// An input whose data is still on the host: upload it and cache it on its device.
fn upload(t: &Tensor) -> Result<Arc<Buffer>> {
    let host = t.value().ok_or_else(|| Error::driver(t.device(), "input", "input tensor has no data"))?;
    if host.device == t.device() {
        return Ok(host);
    }
    let buf = Arc::new(copy(&host, t.device())?);
    *t.0.value.lock() = Some(buf.clone());
    Ok(buf)
}

/// A `Move` whose source nothing else holds frees the source's buffer, and caches the moved data
/// in the move's node: the source can no longer recompute it (an input's data is gone).
fn release_source(step: &Step, out: &Arc<Buffer>) {
    if step.take_source {
        step.tensor.inputs()[0].0.value.lock().take();
        *step.tensor.0.value.lock() = Some(out.clone());
    }
}

/// The Copy arm: one hop from `src`'s device to `to`.
pub(crate) fn copy(src: &Buffer, to: Device) -> Result<Buffer> {
    let from = src.device;
    if from.needs_staging(to) {
        return Err(Error::CrossVendorCopy { from, to });
    }
    match (from.is_host(), to.is_host()) {
        (true, _) => backend::get(to)?.htod(src),
        (false, true) => backend::get(from)?.dtoh(src, to),
        (false, false) => backend::get(from)?.dtod(src, to),
    }
}

/// The kernel computing `op` for node `t`.
fn lower(op: &Op, t: &Tensor) -> Result<Kernel> {
    Ok(match op {
        Op::Binary(b) => Kernel::Binary(*b),
        Op::Reduce { kind, scale } => Kernel::Reduce { kind: *kind, scale: *scale },
        Op::Scale(s) => Kernel::Scale(*s),
        Op::Cast(_) => Kernel::Cast,
        Op::Slice { dim, start, len } => {
            let (outer, in_mid, inner) = t.inputs()[0].shape().split_at_dim(*dim);
            Kernel::Slice { outer, in_mid, start: *start, len: *len, inner }
        }
        Op::Concat { dim } => {
            let (outer, _, inner) = t.shape().split_at_dim(*dim);
            let mids = t.inputs().iter().map(|i| i.shape().dim(*dim)).collect();
            Kernel::Concat { outer, mids, inner }
        }
        Op::Input | Op::Copy { .. } | Op::Move { .. } | Op::Reshape | Op::Collective(_) | Op::Part { .. } => {
            return Err(Error::driver(t.device(), op.name(), "not a compute op"));
        }
    })
}
