//! Graph passes run before execution.
//!
//! [`insert_cross_device_copies`] makes every compute op's inputs readable by it
//! ([`crate::route::readable`]): local, or — for an op on a host device — on another host device,
//! which shares the host's memory and is read in place. A consumer that is itself
//! `Op::Copy`/`Op::Move` is skipped (inserting a copy on a copy's input would regress forever, and
//! a user-authored copy is taken as written). Every other edge follows its route
//! ([`crate::route::Hops`]): one copy, or two through [`crate::route::STAGING_HOST`] between GPUs
//! of different vendors.
//!
//! ```
//! use collectives::graph::opt::insert_cross_device_copies;
//! use collectives::{Device, Op, Tensor};
//! let a = Tensor::from_vec(vec![1.0f32; 4], [4], Device::Cuda(0))?;
//! let b = Tensor::from_vec(vec![2.0f32; 4], [4], Device::Vulkan(0))?;
//! let sum = a.add(&b)?;                                  // runs on cuda:0
//! let out = insert_cross_device_copies(&[sum]).remove(0);
//! let hop2 = &out.inputs()[1];                           // vulkan:0 -> cpu:0 -> cuda:0
//! assert!(matches!(hop2.op(), Op::Copy { to: Device::Cuda(0) }));
//! assert!(matches!(hop2.inputs()[0].op(), Op::Copy { to: Device::Cpu(0) }));
//! # Ok::<(), collectives::Error>(())
//! ```

use foldhash::HashMap;

use super::Tensor;
use super::tensor::Inputs;
use crate::route::Hops;
pub use crate::route::readable;

/// Returns `targets` rewritten so that every compute op's inputs live on its device. Nodes whose
/// subgraph needs no copy are returned as they are (same node, same cached buffer); realized
/// nodes are leaves and are not descended into.
pub fn insert_cross_device_copies(targets: &[Tensor]) -> Vec<Tensor> {
    let mut pass = Pass::default();
    targets.iter().map(|t| pass.rewrite(t)).collect()
}

#[derive(Default)]
struct Pass {
    done: HashMap<u64, Tensor>,
    hops: Hops,
}

impl Pass {
    /// Post-order rewrite with an explicit stack (graphs can be deeper than the call stack).
    fn rewrite(&mut self, root: &Tensor) -> Tensor {
        let mut stack = vec![(root.clone(), false)];
        while let Some((t, expanded)) = stack.pop() {
            if self.done.contains_key(&t.id()) {
                continue;
            }
            if t.value().is_some() || t.inputs().is_empty() {
                self.done.insert(t.id(), t);
            } else if expanded {
                let new = self.rebuild(&t);
                self.done.insert(t.id(), new);
            } else {
                stack.push((t.clone(), true));
                for i in t.inputs().iter().rev() {
                    stack.push((i.clone(), false));
                }
            }
        }
        self.done[&root.id()].clone()
    }

    fn rebuild(&mut self, t: &Tensor) -> Tensor {
        let local = !t.op().spans_devices();
        let inputs: Inputs = t
            .inputs()
            .iter()
            .map(|i| {
                let i = self.done[&i.id()].clone();
                if local { self.hops.reach(&i, t.device()) } else { i }
            })
            .collect();
        if inputs.iter().zip(t.inputs()).all(|(a, b)| a.same_node(b)) {
            return t.clone();
        }
        let n = &t.0;
        Tensor::new_node(n.op.clone(), inputs, n.device, n.dtype, n.shape.clone(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;
    use crate::graph::{Op, STAGING_HOST};

    fn t(d: Device) -> Tensor {
        Tensor::from_vec(vec![1.0f32, 2.0], [2], d).unwrap()
    }

    #[test]
    fn local_graph_is_returned_unchanged() {
        let s = t(Device::Cpu(0)).add(&t(Device::Cpu(0))).unwrap();
        let out = insert_cross_device_copies(std::slice::from_ref(&s));
        assert!(out[0].same_node(&s));
    }

    #[test]
    fn a_direct_edge_gets_one_copy() {
        let s = t(Device::Cuda(0)).add(&t(Device::Cpu(1))).unwrap();
        let out = insert_cross_device_copies(&[s]).remove(0);
        let hop = &out.inputs()[1];
        assert_eq!(hop.op(), &Op::Copy { to: Device::Cuda(0) });
        assert_eq!(hop.inputs()[0].device(), Device::Cpu(1));
        assert!(out.inputs()[0].inputs().is_empty(), "local input untouched");
    }

    #[test]
    fn cuda_peers_read_each_other_in_place() {
        let s = t(Device::Cuda(0)).add(&t(Device::Cuda(1))).unwrap();
        let out = insert_cross_device_copies(std::slice::from_ref(&s));
        assert!(out[0].same_node(&s));
    }

    #[test]
    fn cross_vendor_edge_is_split_through_host() {
        let s = t(Device::Vulkan(0)).mul(&t(Device::Cuda(2))).unwrap();
        let out = insert_cross_device_copies(&[s]).remove(0);
        let second = &out.inputs()[1];
        assert_eq!(second.op(), &Op::Copy { to: Device::Vulkan(0) });
        let first = &second.inputs()[0];
        assert_eq!(first.op(), &Op::Copy { to: STAGING_HOST });
        assert_eq!(first.inputs()[0].device(), Device::Cuda(2));
    }

    #[test]
    fn copy_consumers_are_skipped() {
        // A user copy whose input is elsewhere is left as written: no copy on a copy.
        let c = t(Device::Cuda(1)).copy_to_device(Device::Cpu(3)).unwrap();
        let out = insert_cross_device_copies(std::slice::from_ref(&c));
        assert!(out[0].same_node(&c));
    }

    #[test]
    fn host_devices_read_each_other_in_place() {
        let s = t(Device::Cpu(0)).add(&t(Device::Cpu(3))).unwrap();
        let out = insert_cross_device_copies(std::slice::from_ref(&s));
        assert!(out[0].same_node(&s));
    }

    #[test]
    fn a_source_used_twice_is_copied_once() {
        let x = t(Device::Vulkan(1));
        let y = t(Device::Cuda(0));
        let s = Tensor::reduce(&[y, x.clone(), x], crate::ReduceKind::Sum, None).unwrap();
        let out = insert_cross_device_copies(&[s]).remove(0);
        assert!(out.inputs()[1].same_node(&out.inputs()[2]));
    }
}
