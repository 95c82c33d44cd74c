//! Coalesced collectives: many tensors per device moved as one flat buffer per dtype (gradient
//! buckets), so a model with hundreds of small gradients pays for one collective, not hundreds.

use super::check::Count;
use super::{DeviceGroup, ReduceOp};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::Tensor;

impl DeviceGroup {
    /// [`DeviceGroup::all_reduce`] of many tensors at once: `buckets[i]` holds device i's tensors,
    /// every bucket listing the same shapes and dtypes in the same order. Tensors of one dtype
    /// travel as one flat buffer. Returns the reduced tensors in the same layout.
    pub fn all_reduce_coalesced(&self, buckets: &[Vec<Tensor>], op: ReduceOp) -> Result<Vec<Vec<Tensor>>> {
        self.check_buckets("all_reduce_coalesced", buckets, Count::All)?;
        let mut out: Vec<Vec<Option<Tensor>>> = buckets.iter().map(|b| vec![None; b.len()]).collect();
        for (dtype, idx) in by_dtype(&buckets[0]) {
            op.check("all_reduce_coalesced", dtype)?;
            let flats = buckets.iter().map(|b| flatten(b, &idx)).collect::<Result<Vec<_>>>()?;
            for (dev, reduced) in self.all_reduce(&flats, op)?.iter().enumerate() {
                for (j, t) in unflatten(reduced, &buckets[0], &idx)? {
                    out[dev][j] = Some(t);
                }
            }
        }
        Ok(out.into_iter().map(|row| row.into_iter().map(|t| t.expect("every position")).collect()).collect())
    }

    /// [`DeviceGroup::reduce`] of many tensors at once onto the leader: `buckets[i]` holds device
    /// i's tensors (one to `size()` buckets). Returns the reduced tensors in bucket order.
    pub fn reduce_coalesced(&self, buckets: &[Vec<Tensor>], op: ReduceOp) -> Result<Vec<Tensor>> {
        self.check_buckets("reduce_coalesced", buckets, Count::UpToAll)?;
        let mut out: Vec<Option<Tensor>> = vec![None; buckets[0].len()];
        for (dtype, idx) in by_dtype(&buckets[0]) {
            op.check("reduce_coalesced", dtype)?;
            let flats = buckets.iter().map(|b| flatten(b, &idx)).collect::<Result<Vec<_>>>()?;
            for (j, t) in unflatten(&self.reduce(&flats, op)?, &buckets[0], &idx)? {
                out[j] = Some(t);
            }
        }
        Ok(out.into_iter().map(|t| t.expect("every position")).collect())
    }

    /// [`DeviceGroup::broadcast`] of many tensors at once: `tensors` all live on one member.
    /// Returns, per device, the tensors in the same order; the source device's entries are
    /// `tensors` themselves (as `broadcast` and `torch.cuda.comm.broadcast_coalesced` return).
    pub fn broadcast_coalesced(&self, tensors: &[Tensor]) -> Result<Vec<Vec<Tensor>>> {
        let first = tensors.first().ok_or(Error::NoInputs { op: "broadcast_coalesced" })?;
        let root = self.check_member("broadcast_coalesced", first)?;
        if let Some(t) = tensors.iter().find(|t| t.device() != first.device()) {
            let index = tensors.iter().position(|u| u.same_node(t)).unwrap_or(0);
            let (expected, got) = (first.device(), t.device());
            return Err(Error::DeviceMismatch { op: "broadcast_coalesced", index, expected, got });
        }
        let mut out: Vec<Vec<Option<Tensor>>> = vec![vec![None; tensors.len()]; self.size()];
        for (_, idx) in by_dtype(tensors) {
            let flat = flatten(tensors, &idx)?;
            for (dev, copy) in self.broadcast(&flat)?.iter().enumerate() {
                for (j, t) in unflatten(copy, tensors, &idx)? {
                    out[dev][j] = Some(t);
                }
            }
        }
        out[root] = tensors.iter().cloned().map(Some).collect();
        Ok(out.into_iter().map(|row| row.into_iter().map(|t| t.expect("every position")).collect()).collect())
    }

    /// Bucket count and residency, and the same shapes and dtypes at each position of each bucket.
    fn check_buckets(&self, op: &'static str, buckets: &[Vec<Tensor>], count: Count) -> Result<()> {
        let firsts: Vec<Tensor> = buckets.iter().filter_map(|b| b.first().cloned()).collect();
        if firsts.len() != buckets.len() || buckets.is_empty() {
            return Err(Error::NoInputs { op });
        }
        self.check_shards(op, &firsts, count, super::check::Shapes::Equal)?;
        for (i, b) in buckets.iter().enumerate() {
            if b.len() != buckets[0].len() {
                let msg = format!("bucket {i} has {} tensors but bucket 0 has {}", b.len(), buckets[0].len());
                return Err(Error::InvalidArgument { what: op, msg });
            }
            for (j, t) in b.iter().enumerate() {
                let like = &buckets[0][j];
                crate::graph::check_like(op, like, t)?;
                if t.device() != self.devices()[i] {
                    let (expected, got) = (self.devices()[i], t.device());
                    return Err(Error::ShardDevice { op, index: i, expected, got });
                }
            }
        }
        Ok(())
    }
}

/// Positions of `tensors` grouped by dtype, in first-seen order.
fn by_dtype(tensors: &[Tensor]) -> Vec<(DType, Vec<usize>)> {
    let mut groups: Vec<(DType, Vec<usize>)> = Vec::new();
    for (j, t) in tensors.iter().enumerate() {
        match groups.iter_mut().find(|(d, _)| *d == t.dtype()) {
            Some((_, v)) => v.push(j),
            None => groups.push((t.dtype(), vec![j])),
        }
    }
    groups
}

/// The tensors at `idx`, flattened and joined into one 1-D tensor.
fn flatten(tensors: &[Tensor], idx: &[usize]) -> Result<Tensor> {
    let flats = idx.iter().map(|&j| tensors[j].flatten()).collect::<Result<Vec<_>>>()?;
    match flats.as_slice() {
        [one] => Ok(one.clone()),
        _ => Tensor::concat(&flats, 0),
    }
}

/// `flat` cut back into the shapes of `like` at `idx`.
fn unflatten(flat: &Tensor, like: &[Tensor], idx: &[usize]) -> Result<Vec<(usize, Tensor)>> {
    let mut at = 0;
    idx.iter()
        .map(|&j| {
            let n = like[j].numel();
            let piece = if n == flat.numel() { flat.clone() } else { flat.narrow(0, at, n)? };
            at += n;
            Ok((j, piece.reshape(like[j].shape())?))
        })
        .collect()
}
