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

mod algo;
mod api;
mod check;
mod coalesced;
mod nccl;
mod plan;
mod ring;
mod star;

use std::fmt;

pub use crate::graph::ReduceOp;
pub use crate::route::Route;
pub use algo::{Algorithm, CollectiveKind, RING_MIN_BYTES, choose, choose_native, nccl_available};
pub(crate) use check::check_dim;
pub use plan::{Plan, PlannedHop, PlannedKernel};

use crate::device::Device;
use crate::error::{Error, Result};

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

impl DeviceGroup {
    /// A group of `devices`; the first is the leader. Building a group touches no device, so a
    /// group of devices this machine lacks builds (and plans); call [`DeviceGroup::validate`] to
    /// find out now. [`crate::discover::preferred_devices`] lists this machine's devices, best
    /// leader first.
    ///
    /// Errors: [`Error::EmptyGroup`], [`Error::DuplicateDevice`].
    pub fn new(devices: Vec<Device>) -> Result<Self> {
        if devices.is_empty() {
            return Err(Error::EmptyGroup);
        }
        for (second, d) in devices.iter().enumerate() {
            if let Some(first) = devices[..second].iter().position(|e| e == d) {
                return Err(Error::DuplicateDevice { device: *d, first, second });
            }
        }
        Ok(DeviceGroup { devices, leader: 0, algorithm: Algorithm::Auto })
    }

    /// Checks that every member can run now: its backend is built, its driver loads and the
    /// device exists (each is opened, once per process). Errors with the first member that
    /// cannot, as [`Error::DeviceUnavailable`] (whose message says what to install) or
    /// [`Error::BackendNotBuilt`].
    ///
    /// ```
    /// use collectives::{Device, DeviceGroup, Error};
    /// let group = DeviceGroup::new(vec![Device::Cpu(0), Device::Cuda(1 << 20)])?;
    /// let err = group.validate().unwrap_err();
    /// assert!(matches!(err, Error::DeviceUnavailable { device: Device::Cuda(_), .. }
    ///     | Error::BackendNotBuilt { .. }), "{err}");
    /// # Ok::<(), Error>(())
    /// ```
    pub fn validate(&self) -> Result<()> {
        self.devices.iter().try_for_each(|&d| crate::discover::check(d))
    }

    /// The same group with `leader` as its leader. Errors with [`Error::LeaderNotMember`].
    pub fn with_leader(mut self, leader: Device) -> Result<Self> {
        self.leader = self
            .index_of(leader)
            .ok_or_else(|| Error::LeaderNotMember { leader, members: self.member_list() })?;
        Ok(self)
    }

    /// The same group, running `algorithm` for every collective (`Auto` restores the choice).
    pub fn with_algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = algorithm;
        self
    }

    /// A copy of the group running `algorithm`, for one call:
    /// `group.using(Algorithm::Ring).all_reduce(&shards, op)`.
    pub fn using(&self, algorithm: Algorithm) -> Self {
        self.clone().with_algorithm(algorithm)
    }

    /// Number of devices.
    pub fn size(&self) -> usize {
        self.devices.len()
    }

    /// The leader, where `reduce` and `gather` put their result.
    pub fn leader(&self) -> Device {
        self.devices[self.leader]
    }

    /// The leader's position in [`DeviceGroup::devices`].
    pub fn leader_index(&self) -> usize {
        self.leader
    }

    /// The members; shard i of a collective lives on `devices()[i]`.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// The algorithm setting (`Auto` unless overridden).
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The position of `device` in the group.
    pub fn index_of(&self, device: Device) -> Option<usize> {
        self.devices.iter().position(|&d| d == device)
    }

    /// The route of a hop from `from` to `to`.
    pub fn route(&self, from: Device, to: Device) -> Route {
        Route::between(from, to)
    }

    /// The algorithm collective `kind` runs on this group for `bytes` per shard: the group's
    /// setting, or [`choose`]; collectives with one form (gather, scatter, all_to_all) always
    /// report [`Algorithm::Star`].
    pub fn algorithm_for(&self, kind: CollectiveKind, bytes: usize) -> Algorithm {
        match self.algorithm {
            _ if !kind.takes_algorithm() => Algorithm::Star,
            Algorithm::Auto => choose(kind, &self.devices, bytes),
            a => a,
        }
    }

    /// Whether every member is a CUDA device.
    pub fn all_cuda(&self) -> bool {
        self.devices.iter().all(|d| matches!(d, Device::Cuda(_)))
    }

    pub(crate) fn member_list(&self) -> String {
        self.devices.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    }
}

impl fmt::Display for DeviceGroup {
    /// The members, the leader, the algorithm setting and the route of every member pair.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "DeviceGroup of {} [{}]", self.size(), self.member_list())?;
        writeln!(f, "  leader: {}   algorithm: {}", self.leader(), self.algorithm)?;
        for &from in &self.devices {
            for &to in self.devices.iter().filter(|&&t| t != from) {
                writeln!(f, "  {from} -> {to}: {}", self.route(from, to))?;
            }
        }
        Ok(())
    }
}
