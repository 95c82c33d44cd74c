//! Device kinds as types: the zero-sized markers [`Cpu`], [`Cuda`] and [`Vulkan`] behind the
//! sealed [`DeviceKind`] trait, and the type-level set of GPU vendors a group holds.

use std::fmt::Debug;

use super::route::{Direct, Path, Staged};
use super::sealed;
use crate::device::{Device, DeviceKind as RuntimeKind};

/// A device kind as a type: [`Cpu`], [`Cuda`] or [`Vulkan`]. Sealed: these three are all.
///
/// Each kind knows its runtime [`crate::DeviceKind`], the route to every other kind (through
/// [`super::Route`]) and which GPU vendor it adds to a group (for [`super::NoStaging`]).
pub trait DeviceKind: sealed::Kind + Copy + Default + Debug + Send + Sync + 'static {
    /// The runtime kind this type stands for.
    const KIND: RuntimeKind;
    /// The type's name, as written in `device_group!` (`"Cuda"`).
    const NAME: &'static str;
    /// The GPU vendors a group holding only this kind has.
    type Gpus: GpuSet;
    /// The path of a hop from this kind to `To` (read it through [`super::Route`]).
    type PathTo<To: DeviceKind>: Path;
    /// The path of a hop from a CUDA device to this kind.
    #[doc(hidden)]
    type FromCuda: Path;
    /// The path of a hop from a Vulkan device to this kind.
    #[doc(hidden)]
    type FromVulkan: Path;

    /// The device of this kind with `ordinal`.
    fn device(ordinal: u32) -> Device {
        match Self::KIND {
            RuntimeKind::Cpu => Device::Cpu(ordinal),
            RuntimeKind::Cuda => Device::Cuda(ordinal),
            RuntimeKind::Vulkan => Device::Vulkan(ordinal),
        }
    }
}

/// Host memory: a virtual CPU device ([`Device::Cpu`]). Every hop to or from it is direct.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Cpu;

/// An NVIDIA GPU through CUDA ([`Device::Cuda`]). Hops to CUDA and host devices are direct; to
/// Vulkan they are staged through the host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Cuda;

/// A GPU through Vulkan ([`Device::Vulkan`]). Hops to host devices are direct; to CUDA and to
/// another Vulkan device they are staged through the host (two Vulkan devices cannot read each
/// other's memory).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Vulkan;

impl sealed::Kind for Cpu {}
impl sealed::Kind for Cuda {}
impl sealed::Kind for Vulkan {}

impl DeviceKind for Cpu {
    const KIND: RuntimeKind = RuntimeKind::Cpu;
    const NAME: &'static str = "Cpu";
    type Gpus = HostOnly;
    type PathTo<To: DeviceKind> = Direct;
    type FromCuda = Direct;
    type FromVulkan = Direct;
}

impl DeviceKind for Cuda {
    const KIND: RuntimeKind = RuntimeKind::Cuda;
    const NAME: &'static str = "Cuda";
    type Gpus = CudaOnly;
    type PathTo<To: DeviceKind> = To::FromCuda;
    type FromCuda = Direct;
    type FromVulkan = Staged;
}

impl DeviceKind for Vulkan {
    const KIND: RuntimeKind = RuntimeKind::Vulkan;
    const NAME: &'static str = "Vulkan";
    type Gpus = VulkanOnly;
    type PathTo<To: DeviceKind> = To::FromVulkan;
    type FromCuda = Staged;
    type FromVulkan = Staged;
}

/// The GPUs in a group, as a type: [`HostOnly`], [`CudaOnly`], [`VulkanOnly`] (one Vulkan
/// device), [`VulkanPair`] (two or more) or [`CudaAndVulkan`]. A group's set is the
/// [`GpuSet::Join`] of its members' sets.
pub trait GpuSet: sealed::Gpus + 'static {
    /// This set joined with `Other`.
    type Join<Other: GpuSet>: GpuSet;
    /// This set with CUDA added.
    #[doc(hidden)]
    type WithCuda: GpuSet;
    /// This set with Vulkan added.
    #[doc(hidden)]
    type WithVulkan: GpuSet;
}

/// No GPU: host devices only.
#[derive(Debug)]
pub enum HostOnly {}
/// CUDA GPUs (and maybe host devices).
#[derive(Debug)]
pub enum CudaOnly {}
/// One Vulkan GPU (and maybe host devices).
#[derive(Debug)]
pub enum VulkanOnly {}
/// Two or more Vulkan GPUs (and maybe host devices): a hop between two of them is staged
/// through the host.
#[derive(Debug)]
pub enum VulkanPair {}
/// Both CUDA and Vulkan GPUs: some hop is staged through the host.
#[derive(Debug)]
pub enum CudaAndVulkan {}

impl sealed::Gpus for HostOnly {}
impl sealed::Gpus for CudaOnly {}
impl sealed::Gpus for VulkanOnly {}
impl sealed::Gpus for VulkanPair {}
impl sealed::Gpus for CudaAndVulkan {}

impl GpuSet for HostOnly {
    type Join<Other: GpuSet> = Other;
    type WithCuda = CudaOnly;
    type WithVulkan = VulkanOnly;
}

impl GpuSet for CudaOnly {
    type Join<Other: GpuSet> = Other::WithCuda;
    type WithCuda = CudaOnly;
    type WithVulkan = CudaAndVulkan;
}

impl GpuSet for VulkanOnly {
    type Join<Other: GpuSet> = Other::WithVulkan;
    type WithCuda = CudaAndVulkan;
    type WithVulkan = VulkanPair;
}

impl GpuSet for VulkanPair {
    type Join<Other: GpuSet> = <Other::WithVulkan as GpuSet>::WithVulkan;
    type WithCuda = CudaAndVulkan;
    type WithVulkan = VulkanPair;
}

impl GpuSet for CudaAndVulkan {
    type Join<Other: GpuSet> = CudaAndVulkan;
    type WithCuda = CudaAndVulkan;
    type WithVulkan = CudaAndVulkan;
}

/// A set of GPUs with no staged hop between them: not [`CudaAndVulkan`], not [`VulkanPair`].
#[diagnostic::on_unimplemented(
    message = "this group has a hop staged through the host: it mixes CUDA and Vulkan devices, or holds two Vulkan devices",
    label = "a `no_staging` group holds CUDA devices or one Vulkan device, not both, and not two Vulkan devices",
    note = "drop the `no_staging` requirement, or keep the group to CUDA devices or a single Vulkan device (host `collectives::typed::Cpu` members are fine)"
)]
pub trait Unstaged: GpuSet {}
impl Unstaged for HostOnly {}
impl Unstaged for CudaOnly {}
impl Unstaged for VulkanOnly {}
