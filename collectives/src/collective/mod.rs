//! `DeviceGroup`: the slice-shaped collectives of one process driving several devices.
//!
//! A process that drives N devices holds every shard at once, so its collectives take *all*
//! shards and return lazy tensors: each collective is a subgraph of hops (`Op::Copy`, two of them
//! through the host between CUDA and Vulkan) and n-ary reduces, run when a result is realized.
//! Shard i lives on device i; the group's first device is its leader unless
//! [`DeviceGroup::with_leader`] says otherwise. The algorithm — star through the leader, the
//! chunked ring, or NCCL for all-CUDA groups — is chosen by [`choose`] from the group and the
//! message size, and can be overridden per group ([`DeviceGroup::with_algorithm`]) or per call
//! (`group.using(Algorithm::Ring).all_reduce(..)`).
//!
//! ```
//! use collectives::{Device, DeviceGroup, ReduceOp, Tensor};
//! let group = DeviceGroup::new(vec![Device::Cpu(0), Device::Cpu(1), Device::Cpu(2)])?;
//! let shards: Vec<Tensor> = group
//!     .devices()
//!     .iter()
//!     .enumerate()
//!     .map(|(i, &d)| Tensor::from_vec(vec![i as f32; 4], [4], d))
//!     .collect::<Result<_, _>>()?;
//! let summed = group.all_reduce(&shards, ReduceOp::Sum)?; // lazy: nothing has run yet
//! println!("{}", collectives::Plan::of(&summed));           // what will run
//! for (t, &d) in summed.iter().zip(group.devices()) {
//!     assert_eq!(t.device(), d);
//!     assert_eq!(t.to_vec::<f32>()?, vec![3.0; 4]);
//! }
//! # Ok::<(), collectives::Error>(())
//! ```

// `group` first: rustdoc lists `DeviceGroup`'s methods in this order, so `new` and the other
// constructors come before the collectives (`api.rs`).
mod group;

mod algo;
mod api;
mod call;
mod check;
mod coalesced;
mod nccl;
mod plan;
mod ring;
mod star;

use std::fmt;

pub use crate::graph::ReduceOp;
pub use crate::route::Route;
pub use algo::{
    ALL_GATHER_IN_PLACE_MIN_BYTES, Algorithm, CUDA_STAR_MAX_BYTES, CollectiveKind,
    FANNED_ALL_TO_ALL_MAX_MEMBERS, HOST_STAGED_BELOW_BYTES, HOST_STAGED_CUDA_PAIR_BELOW_BYTES,
    ONE_GPU_STAR_MAX_BYTES, RING_MIN_BYTES, TWO_SHOT_MIN_BYTES, choose, choose_native, choose_without_nccl,
    cuda_fans_out, host_stages_cuda, nccl_available, on_one_gpu,
};
pub(crate) use check::check_dim;
pub use plan::{Plan, PlannedBridge, PlannedHop, PlannedKernel};

use crate::device::Device;

/// A set of devices taking part in single-process collectives. Cheap to clone.
///
/// Start with [`DeviceGroup::new`]; [`DeviceGroup::validate`] checks that every member is
/// present (a missing driver is otherwise reported when a result first runs). Shard i of a
/// collective lives on `devices()[i]`; the first device is the leader.
///
/// ```
/// use collectives::{Device, DeviceGroup, ReduceOp, Tensor};
/// // Any mix of devices: vec![Device::Cuda(0), Device::Vulkan(0), Device::Cpu(0)] on a machine
/// // with both GPUs; virtual CPU devices run anywhere.
/// let group = DeviceGroup::new(vec![Device::Cpu(0), Device::Cpu(1)])?;
/// group.validate()?; // names a missing driver, and how to install it, now
/// let shards = vec![
///     Tensor::from_vec(vec![1.0f32, 2.0], [2], Device::Cpu(0))?,
///     Tensor::from_vec(vec![10.0f32, 20.0], [2], Device::Cpu(1))?,
/// ];
/// let avg = group.all_reduce(&shards, ReduceOp::Avg)?; // lazy
/// assert_eq!(avg[1].to_vec::<f32>()?, vec![5.5, 11.0]); // runs it
/// # Ok::<(), collectives::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceGroup {
    devices: Vec<Device>,
    leader: usize,
    algorithm: Algorithm,
}

/// The bridge of a CUDA ↔ Vulkan pair for the group's listing: the one decided (by a move
/// between them or by [`DeviceGroup::validate`]), or when it will be; nothing for other pairs.
fn bridge_note(from: Device, to: Device) -> String {
    if !from.needs_staging(to) {
        return String::new();
    }
    match crate::backend::staged::decided_bridge(from, to) {
        Some(b) => format!(", bridge: {b}"),
        None => format!(", bridge: {}", plan::UNDECIDED_BRIDGE),
    }
}

impl fmt::Display for DeviceGroup {
    /// The members, the leader, the algorithm setting and the route of every member pair; for a
    /// CUDA ↔ Vulkan pair also its bridge (through the GPU's own memory, or the host).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "DeviceGroup of {} [{}]", self.size(), self.member_list())?;
        writeln!(f, "  leader: {}   algorithm: {}", self.leader(), self.algorithm)?;
        for &from in &self.devices {
            for &to in self.devices.iter().filter(|&&t| t != from) {
                writeln!(f, "  {from} -> {to}: {}{}", self.route(from, to), bridge_note(from, to))?;
            }
        }
        Ok(())
    }
}
