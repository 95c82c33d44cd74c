//! The typed group: device kinds as types, routes fixed at compile time, and collectives whose
//! shards are typed by the member they live on. Made by [`crate::device_group!`].
//!
//! # Why
//!
//! A runtime [`crate::DeviceGroup`] finds out at run time that a shard sits on the wrong device
//! or that a copy cannot be one hop. When the device kinds are types, the compiler knows the
//! route of every hop — `<Cuda as Route<Vulkan>>::Path` is [`Staged`] through the host, and so is
//! a hop between two Vulkan devices; every other pair is [`Direct`] — so an impossible copy
//! ([`Shard::copy_direct`] where the hop is staged), a
//! shard of the wrong kind or a wrong number of shards is a compile error in our words, not a
//! run-time `Err`. Underneath, every typed collective is the runtime group's: one implementation.
//!
//! # The pieces
//!
//! - Kinds: [`Cpu`], [`Cuda`], [`Vulkan`] (zero-sized, behind the sealed [`DeviceKind`]).
//! - Routes: [`Route`] (`type Path`), [`Direct`], [`Staged`], and [`DirectTo`] where the path is
//!   one copy. [`NoStaging`] holds for member lists with no staged hop: not both CUDA and
//!   Vulkan, and at most one Vulkan device.
//! - [`Group<M, L, B>`]: members `M` (a tuple of kinds), leader kind `L` (the first member's by
//!   default), brand `B` ([`Unbranded`] by default). Nameable: `Group<(Cuda, Vulkan, Cpu)>`.
//! - [`Member<K, B>`]: a typed device of the group ([`Group::members`]); [`Shard<K, B>`]: a lazy
//!   tensor on one. A collective takes one shard per member ([`ShardsOf`]): a tuple
//!   `(Shard<Cuda>, Shard<Vulkan>, Shard<Cpu>)`, or an array `[Shard<Cpu>; 3]` when every member
//!   has one kind.
//! - Running: a typed collective's shards are lazy, as any [`crate::Tensor`]: [`Shard::to_vec`]
//!   runs what one needs; [`ShardsOf::tensors`] gives their tensors, for [`crate::realize`] (all
//!   in one run) or [`crate::issue`] (issued, not waited for).
//! - Brands tell groups apart: a group made with `brand = Train` takes only `Shard<K, Train>`,
//!   which come only from its members, so one group's shards passed to another's collective do
//!   not compile. Unbranded groups share [`Unbranded`]; their shards are checked at run time
//!   (shard i must live on member i, as for the runtime group).
//!
//! # Checked at run time
//!
//! The types carry kinds and brands, not devices, so these compile and are refused when the
//! collective is called, with an [`crate::Error`] (never a panic) and the inputs left as they
//! were (`runtime_checks_what_the_types_cannot` in `tests/typed.rs`):
//!
//! - Shards of one kind in the wrong order (`(b, a)` for a group of `(Cpu, Cpu)`): both are
//!   `Shard<Cpu>`; shard i must live on member i ([`crate::Error::ShardDevice`]).
//! - Two groups made with the same brand type share shard types: a brand is a type the user
//!   names, and the macro cannot tell two uses of it apart. Give each group its own brand type;
//!   otherwise the device check above refuses the other group's shards.
//! - A [`Group::broadcast`] or [`Group::scatter`] root of a kind the group does not have
//!   ([`crate::Error::NotMember`]). A bound `M: HasKind<K>` would make it a compile error, but
//!   every generic caller (`fn f<M: Members, L: DeviceKind>(g: &Group<M, L>)`) would have to
//!   repeat it, and a root of a held kind on a device outside the group still needs the run-time
//!   check.
//! - `no_staging` is about the group's own hops (its collectives): a shard's
//!   [`Shard::copy_to`] a device outside the group (a [`Member::new`]) follows the static route,
//!   staged through the host where it is. Use [`Shard::copy_direct`] to require one copy at
//!   compile time.
//!
//! # `device_group!`
//!
//! `device_group!(Cuda, Vulkan, Cpu)` opens the first device of each kind (`Cuda` is
//! `Cuda(0)`), leader first, and returns `Result<Group<(Cuda, Vulkan, Cpu)>>`. Options, in any
//! position: ordinals `Cuda(1)`; `leader = Cuda(1)` (a member); `no_staging` (a group that needs
//! host staging does not compile); `brand = Type`; `crate = path` (where the `collectives` crate is,
//! for a caller that reaches it only through a re-export; a renamed dependency is found without
//! it). A kind given twice names the same device
//! twice: give ordinals (`Cuda(0), Cuda(1)`). An absent device is
//! [`crate::Error::DeviceUnavailable`], never a substitute: where the GPUs are absent, make a group
//! of virtual CPU devices (`device_group!(Cpu(0), Cpu(1), Cpu(2))`) and run the same code,
//! generic over the group's kinds.
//!
//! ```
//! use collectives::typed::{Cpu, Group, Shard};
//! use collectives::{ReduceOp, device_group};
//!
//! struct Model {
//!     group: Group<(Cpu, Cpu, Cpu)>, // the group type is nameable
//! }
//! let model = Model { group: device_group!(Cpu(0), Cpu(1), Cpu(2))? };
//! let (a, b, c) = model.group.members();
//! let shards: (Shard<Cpu>, Shard<Cpu>, Shard<Cpu>) = (
//!     a.tensor(vec![1.0f32, 2.0], [2])?,
//!     b.tensor(vec![3.0f32, 4.0], [2])?,
//!     c.tensor(vec![5.0f32, 6.0], [2])?,
//! );
//! let (_, _, on_c) = model.group.all_reduce(shards, ReduceOp::Sum)?;
//! assert_eq!(on_c.to_vec::<f32>()?, vec![9.0, 12.0]);
//! # Ok::<(), collectives::Error>(())
//! ```
//!
//! Routes are types, and a group for GPUs can be built (not run) without them:
//!
//! ```
//! use collectives::typed::{Cpu, Cuda, Group, Path, Route, Vulkan};
//! use collectives::{Device, Error, device_group};
//! assert_eq!(<<Cuda as Route<Vulkan>>::Path as Path>::COPIES, 2); // staged through the host
//! assert_eq!(<<Cuda as Route<Cpu>>::Path as Path>::COPIES, 1);
//! let devices = [Device::Cuda(0), Device::Vulkan(0), Device::Cpu(0)];
//! let planned: Group<(Cuda, Vulkan, Cpu)> = Group::from_devices(&devices, Device::Cuda(0))?;
//! let (_, vk, _) = planned.members();
//! let on_cuda = planned.members().0.tensor(vec![1.0f32; 4], [4])?;
//! let on_vk = on_cuda.copy_to(vk)?; // two Op::Copy nodes: cuda:0 -> cpu:0 -> vulkan:0
//! assert_eq!(on_vk.tensor().inputs()[0].device(), Device::Cpu(0));
//! // Opening checks the devices are here; on a machine without CUDA:
//! if collectives::available_devices().iter().all(|d| !matches!(d, Device::Cuda(_))) {
//!     assert!(matches!(device_group!(Cuda, Cpu), Err(Error::DeviceUnavailable { .. })));
//! }
//! # Ok::<(), collectives::Error>(())
//! ```

mod collectives;
mod group;
mod kind;
mod members;
mod route;
mod shard;

pub use group::Group;
pub use kind::{
    Cpu, Cuda, CudaAndVulkan, CudaOnly, DeviceKind, GpuSet, HostOnly, Unstaged, Vulkan, VulkanOnly,
    VulkanPair,
};
pub use members::{BucketsOf, Members, NoStaging, ShardOf, ShardsOf};
pub use route::{Direct, DirectTo, Path, Route, Staged};
pub use shard::{DirectTarget, Member, Shard, Unbranded};

/// Seals the typed traits: the kinds, paths, member lists and shard lists are this module's.
mod sealed {
    /// Sealed [`super::DeviceKind`].
    pub trait Kind {}
    /// Sealed [`super::Path`].
    pub trait Path {}
    /// Sealed [`super::GpuSet`].
    pub trait Gpus {}
    /// Sealed [`super::Members`].
    pub trait Members {}
    /// Sealed [`super::ShardOf`].
    pub trait Shard {}
    /// Sealed [`super::ShardsOf`].
    pub trait Shards {}
    /// Sealed [`super::BucketsOf`].
    pub trait Buckets {}
    /// Sealed [`super::DirectTarget`].
    pub trait Target {}
}
