// The crate page is the README (`collectives/README.md` links to the workspace's), so every Rust
// snippet in it is a doctest.
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

// `device_group!` expands to `::collectives::...` paths; this makes them resolve inside the crate too.
extern crate self as collectives;

mod backend;
pub mod collective;
pub mod comm;
pub mod device;
pub mod discover;
pub mod dtype;
mod error;
pub mod exec;
#[cfg(feature = "failpoints")]
pub mod failpoint;
#[cfg(not(feature = "failpoints"))]
mod failpoint;
pub mod graph;
mod knob;
pub mod log;
pub mod route;
mod sized;
pub mod typed;

#[cfg(feature = "cuda")]
pub use backend::{CUDA_DEVICES_ENV, CUDA_POOL_ENV};
pub use backend::{HOST_POOL_ENV, HOST_REGISTER_ENV};
#[cfg(feature = "vulkan")]
pub use backend::{
    VULKAN_HOST_BELOW_BYTES, VULKAN_HOST_ENV, VULKAN_HOST_KERNEL_BYTES, VULKAN_HOST_KERNEL_ENV,
    VULKAN_POOL_ENV, VULKAN_SPIN_ENV, VULKAN_SPIN_US,
};
pub use collective::{Algorithm, CollectiveKind, DeviceGroup, Plan, ReduceOp, Route};
/// See [`typed`] for the typed group this makes.
///
/// The expansion names this crate by the name the caller's Cargo.toml gives it (found with
/// `proc-macro-crate`), so a renamed dependency, `coll = { package = "collectives", ... }`, works
/// as is. Where that is not enough (a crate that reaches `collectives` only through another's
/// re-export), the `crate = path` option names it: `device_group!(Cpu(0), crate = my_deps::coll)`.
///
/// ```
/// use collectives::{ReduceOp, device_group};
/// let group = device_group!(Cpu(0), Cpu(1), leader = Cpu(1))?;
/// let (a, b) = group.members();
/// let shards = (a.tensor(vec![1i32, 2], [2])?, b.tensor(vec![3i32, 4], [2])?);
/// let sum = group.reduce(shards, ReduceOp::Sum)?; // on the leader, cpu:1
/// assert_eq!((sum.device(), sum.to_vec::<i32>()?), (b.device(), vec![4, 6]));
/// # Ok::<(), collectives::Error>(())
/// ```
pub use collectives_macros::device_group;
#[cfg(feature = "cuda")]
pub use comm::NcclComm;
pub use comm::{Communicator, IdentityComm, LocalComm};
pub use device::{Device, DeviceKind, parse_devices};
pub use discover::{available_devices, device_name};
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use exec::{Issued, issue, realize, synchronize};
pub use graph::{BinaryOp, Op, ReduceKind, Scale, Shape, Tensor};
pub use typed::{Group, Shard};
