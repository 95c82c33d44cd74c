//! The lazy reshuffles around NCCL's flat buffers: NCCL gathers and scatters along the outermost
//! dimension only, so a collective along an inner `dim` lays its parts out one after another
//! first (reduce_scatter) or joins the gathered blocks along `dim` after (all_gather). Both are
//! graph ops on the rank's device, free when the outer dimensions are all 1.

use crate::error::Result;
use crate::graph::{Shape, Tensor};

/// Whether every dimension before `dim` is 1 (cutting along `dim` gives contiguous pieces).
fn outermost(shape: &Shape, dim: usize) -> bool {
    shape.dims()[..dim].iter().all(|&d| d == 1)
}

/// `t` flat, its `world` equal parts along `dim` one after another (what `ncclReduceScatter`
/// reads: part r goes to rank r).
pub(super) fn parts_in_rank_order(t: &Tensor, dim: usize, world: usize) -> Result<Tensor> {
    if outermost(t.shape(), dim) {
        return t.flatten();
    }
    let part = t.shape().dim(dim) / world;
    let parts = (0..world).map(|r| t.narrow(dim, r * part, part)?.flatten()).collect::<Result<Vec<_>>>()?;
    Tensor::concat(&parts, 0)
}

/// The flat output of `ncclAllGather` — `world` blocks, each of `shape` — joined along `dim`.
pub(super) fn join_blocks(flat: &Tensor, shape: &Shape, dim: usize, world: usize) -> Result<Tensor> {
    let joined = shape.with_dim(dim, shape.dim(dim) * world);
    if outermost(shape, dim) {
        return flat.reshape(joined);
    }
    let n = shape.numel();
    let blocks =
        (0..world).map(|r| flat.narrow(0, r * n, n)?.reshape(shape.clone())).collect::<Result<Vec<_>>>()?;
    Tensor::concat(&blocks, dim)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;

    fn iota(shape: &[usize], base: i32) -> Tensor {
        let n: usize = shape.iter().product();
        Tensor::from_vec((0..n as i32).map(|i| base + i).collect(), shape.to_vec(), Device::Cpu(0)).unwrap()
    }

    #[test]
    fn parts_follow_rank_order_along_an_inner_dim() {
        // [2, 4] cut into 2 parts along dim 1: part 0 is columns 0..2 of both rows.
        let t = iota(&[2, 4], 0);
        let flat = parts_in_rank_order(&t, 1, 2).unwrap();
        assert_eq!(flat.to_vec::<i32>().unwrap(), vec![0, 1, 4, 5, 2, 3, 6, 7]);
        let flat = parts_in_rank_order(&t, 0, 2).unwrap();
        assert_eq!(flat.to_vec::<i32>().unwrap(), (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn gathered_blocks_join_along_an_inner_dim() {
        // Two ranks' [2, 2] blocks (0..4 and 10..14) joined along dim 1.
        let flat = Tensor::concat(&[iota(&[4], 0), iota(&[4], 10)], 0).unwrap();
        let shape = Shape::new([2, 2]);
        let joined = join_blocks(&flat, &shape, 1, 2).unwrap();
        assert_eq!(joined.shape().dims(), &[2, 4]);
        assert_eq!(joined.to_vec::<i32>().unwrap(), vec![0, 1, 10, 11, 2, 3, 12, 13]);
        let joined = join_blocks(&flat, &Shape::new([1, 4]), 1, 2).unwrap();
        assert_eq!(joined.shape().dims(), &[1, 8]);
    }
}
