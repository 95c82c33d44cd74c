//! Static routes: the path of a hop between two device kinds, fixed at compile time.
//!
//! `<Cuda as Route<Vulkan>>::Path` is [`Staged`] (through the host), and so are Vulkan↔CUDA and
//! Vulkan↔Vulkan (two Vulkan devices cannot read each other's memory); every other pair of kinds
//! is [`Direct`]. [`DirectTo`] holds exactly where the path is direct, so a method that needs one
//! copy (`Shard::copy_direct`) does not compile where the hop is staged. The hops themselves are
//! made by [`crate::route::Hops`], the runtime's one hop builder.

use std::fmt::Debug;
use std::marker::PhantomData;

use super::kind::{Cpu, Cuda, DeviceKind, Vulkan};
use super::sealed;
use crate::collective::Route as RuntimeRoute;
use crate::device::Device;
use crate::error::Result;
use crate::graph::Tensor;
use crate::route::{Hops, STAGING_HOST};

/// The path of a hop: [`Direct`] (one copy) or [`Staged`] (two copies through the host).
pub trait Path: sealed::Path + Copy + Default + Debug + Send + Sync + 'static {
    /// How many copies a hop between two distinct devices makes on this path.
    const COPIES: usize;

    /// The runtime route of a hop from `from` to `to` on this path (`Local` when they are one
    /// device).
    fn route(from: Device, to: Device) -> RuntimeRoute;

    /// `t` copied to `to` along this path.
    #[doc(hidden)]
    fn hop(t: &Tensor, to: Device) -> Result<Tensor>;
}

/// One copy: same vendor (a peer copy) or one end on the host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Direct;

/// Two copies through a host device of kind `Via` ([`Cpu`], the staging host): CUDA↔Vulkan and
/// Vulkan↔Vulkan.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Staged<Via = Cpu>(PhantomData<Via>);

impl<Via> Clone for Staged<Via> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<Via> Copy for Staged<Via> {}
impl<Via> Default for Staged<Via> {
    fn default() -> Self {
        Staged(PhantomData)
    }
}

impl sealed::Path for Direct {}
impl sealed::Path for Staged<Cpu> {}

impl Path for Direct {
    const COPIES: usize = 1;

    fn route(from: Device, to: Device) -> RuntimeRoute {
        if from == to { RuntimeRoute::Local } else { RuntimeRoute::Direct }
    }

    fn hop(t: &Tensor, to: Device) -> Result<Tensor> {
        t.copy_to_device(to)
    }
}

impl Path for Staged<Cpu> {
    const COPIES: usize = 2;

    fn route(from: Device, to: Device) -> RuntimeRoute {
        if from == to { RuntimeRoute::Local } else { RuntimeRoute::Staged { via: STAGING_HOST } }
    }

    fn hop(t: &Tensor, to: Device) -> Result<Tensor> {
        Ok(Hops::default().hop(t, to))
    }
}

/// The route from this kind to `To`, as an associated type: `<Cuda as Route<Vulkan>>::Path` is
/// `Staged<Cpu>`, `<Cuda as Route<Cpu>>::Path` is `Direct`. Holds for every pair of kinds, so
/// code generic over kinds can copy between them; the path is still fixed at compile time.
pub trait Route<To: DeviceKind>: DeviceKind {
    /// The path of a hop from `Self` to `To`.
    type Path: Path;
}

impl<K: DeviceKind, To: DeviceKind> Route<To> for K {
    type Path = K::PathTo<To>;
}

/// Holds where the hop from this kind to `To` is one copy: every pair but CUDA↔Vulkan and
/// Vulkan↔Vulkan.
#[diagnostic::on_unimplemented(
    message = "no direct copy from `{Self}` to `{To}`: these GPUs cannot read each other's memory, so the hop is staged",
    label = "`{Self}` -> `{To}` is staged through the host, not direct",
    note = "use `.copy_to(..)`, which follows the static route `{Self}` -> `collectives::typed::Cpu` -> `{To}`"
)]
pub trait DirectTo<To: DeviceKind>: Route<To, Path = Direct> {}

impl DirectTo<Cpu> for Cpu {}
impl DirectTo<Cuda> for Cpu {}
impl DirectTo<Vulkan> for Cpu {}
impl DirectTo<Cpu> for Cuda {}
impl DirectTo<Cuda> for Cuda {}
impl DirectTo<Cpu> for Vulkan {}

#[cfg(test)]
mod tests {
    use super::*;

    fn copies<A: Route<B>, B: DeviceKind>() -> usize {
        <A::Path as Path>::COPIES
    }

    #[test]
    fn hops_touching_two_gpus_with_a_vulkan_end_are_staged() {
        assert_eq!(copies::<Cuda, Vulkan>(), 2);
        assert_eq!(copies::<Vulkan, Cuda>(), 2);
        assert_eq!(copies::<Cuda, Cuda>(), 1);
        assert_eq!(copies::<Vulkan, Vulkan>(), 2);
        assert_eq!(copies::<Cpu, Cpu>(), 1);
        for n in [copies::<Cpu, Cuda>(), copies::<Cuda, Cpu>()] {
            assert_eq!(n, 1);
        }
        assert_eq!(copies::<Vulkan, Cpu>() + copies::<Cpu, Vulkan>(), 2);
    }

    #[test]
    fn static_routes_agree_with_runtime_routes() {
        fn check<A: Route<B>, B: DeviceKind>() {
            let (from, to) = (A::device(0), B::device(1));
            let want = crate::collective::Route::between(from, to);
            assert_eq!(<A::Path as Path>::route(from, to), want, "{from} -> {to}");
        }
        check::<Cpu, Cpu>();
        check::<Cpu, Cuda>();
        check::<Cpu, Vulkan>();
        check::<Cuda, Cpu>();
        check::<Cuda, Cuda>();
        check::<Cuda, Vulkan>();
        check::<Vulkan, Cpu>();
        check::<Vulkan, Cuda>();
        check::<Vulkan, Vulkan>();
    }

    #[test]
    fn staged_hop_goes_through_the_host() {
        let t = Tensor::from_vec(vec![1.0f32; 4], [4], Device::Cuda(0)).unwrap();
        let out = <<Cuda as Route<Vulkan>>::Path as Path>::hop(&t, Device::Vulkan(0)).unwrap();
        assert_eq!(out.device(), Device::Vulkan(0));
        assert_eq!(out.inputs()[0].device(), STAGING_HOST);
        assert!(<Direct as Path>::hop(&t, Device::Vulkan(0)).is_err());
        let v = Tensor::from_vec(vec![1.0f32; 4], [4], Device::Vulkan(0)).unwrap();
        let out = <<Vulkan as Route<Vulkan>>::Path as Path>::hop(&v, Device::Vulkan(1)).unwrap();
        assert_eq!((out.device(), out.inputs()[0].device()), (Device::Vulkan(1), STAGING_HOST));
        let same = <<Vulkan as Route<Vulkan>>::Path as Path>::hop(&v, Device::Vulkan(0)).unwrap();
        assert!(same.same_node(&v), "a hop to the tensor's own device is no copy");
    }

    #[test]
    fn a_hop_to_the_same_device_is_local_on_every_path() {
        let d = Device::Vulkan(0);
        assert_eq!(<Staged as Path>::route(d, d), RuntimeRoute::Local);
        assert_eq!(<Direct as Path>::route(d, d), RuntimeRoute::Local);
    }
}
