//! Typed devices and tensors: a [`Member`] is a device whose kind is a type, a [`Shard`] a lazy
//! tensor whose kind is a type. Both carry the brand of the group they came from.

use std::fmt;
use std::marker::PhantomData;

use super::kind::DeviceKind;
use super::route::{Direct, DirectTo, Path, Route};
use super::sealed;
use crate::device::Device;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::graph::{Shape, Tensor};

/// The brand of a group made without `brand = ...`: all such groups share it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Unbranded;

/// A device of kind `K`, a member of a group branded `B` (see [`super::Group::members`]).
pub struct Member<K, B = Unbranded> {
    device: Device,
    _types: PhantomData<fn() -> (K, B)>,
}

impl<K: DeviceKind> Member<K> {
    /// `device` as an unbranded member of kind `K`: for copies to devices outside any group.
    ///
    /// Errors with [`Error::InvalidArgument`] if `device` is not of kind `K`.
    pub fn new(device: Device) -> Result<Self> {
        check_kind::<K>("Member::new", device)?;
        Ok(Member::unchecked(device))
    }
}

impl<K: DeviceKind, B> Member<K, B> {
    /// A member whose kind the caller has checked.
    pub(crate) fn unchecked(device: Device) -> Self {
        Member { device, _types: PhantomData }
    }

    /// The device.
    pub fn device(self) -> Device {
        self.device
    }

    /// A shard holding `data` with `shape` on this member (as [`Tensor::from_vec`]).
    pub fn tensor<T: Element>(self, data: Vec<T>, shape: impl Into<Shape>) -> Result<Shard<K, B>> {
        Ok(Shard::unchecked(Tensor::from_vec(data, shape, self.device)?))
    }

    /// `t` as a shard of this member. Errors with [`Error::DeviceMismatch`] if `t` lives on
    /// another device.
    pub fn shard(self, t: Tensor) -> Result<Shard<K, B>> {
        if t.device() != self.device {
            return Err(Error::DeviceMismatch {
                op: "Member::shard",
                index: 0,
                expected: self.device,
                got: t.device(),
            });
        }
        Ok(Shard::unchecked(t))
    }
}

impl<K, B> Clone for Member<K, B> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K, B> Copy for Member<K, B> {}
impl<K, B> PartialEq for Member<K, B> {
    fn eq(&self, other: &Self) -> bool {
        self.device == other.device
    }
}
impl<K, B> Eq for Member<K, B> {}
impl<K, B> fmt::Debug for Member<K, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Member({})", self.device)
    }
}

/// A lazy tensor on a device of kind `K`, belonging to a group branded `B`. Cheap to clone.
///
/// The kind fixes the route of every copy at compile time: [`Shard::copy_to`] follows
/// `<K as Route<K2>>::Path`, and [`Shard::copy_direct`] exists only where that path is direct.
pub struct Shard<K, B = Unbranded> {
    tensor: Tensor,
    _types: PhantomData<fn() -> (K, B)>,
}

impl<K: DeviceKind> Shard<K> {
    /// `t` as an unbranded shard of kind `K`. Errors with [`Error::InvalidArgument`] if `t`
    /// lives on a device of another kind. (A branded shard comes from its group's
    /// [`Member::shard`] or [`Member::tensor`].)
    pub fn new(t: Tensor) -> Result<Self> {
        check_kind::<K>("Shard::new", t.device())?;
        Ok(Shard::unchecked(t))
    }
}

impl<K: DeviceKind, B> Shard<K, B> {
    /// A shard whose kind the caller has checked.
    pub(crate) fn unchecked(tensor: Tensor) -> Self {
        Shard { tensor, _types: PhantomData }
    }

    /// The lazy tensor.
    pub fn tensor(&self) -> &Tensor {
        &self.tensor
    }

    /// The lazy tensor, by value.
    pub fn into_tensor(self) -> Tensor {
        self.tensor
    }

    /// The device the shard lives on.
    pub fn device(&self) -> Device {
        self.tensor.device()
    }

    /// The shard as the member it lives on.
    pub fn member(&self) -> Member<K, B> {
        Member::unchecked(self.device())
    }

    /// Realizes the shard and copies it to the host (as [`Tensor::to_vec`]).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.tensor.to_vec()
    }

    /// A computation on the shard's tensor whose result stays on the shard's device (compute
    /// ops run on their first input's device). Errors with [`Error::DeviceMismatch`] if `f`
    /// returns a tensor on another device.
    pub fn map(&self, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Self> {
        self.member().shard(f(&self.tensor)?)
    }

    /// The shard copied to `to` along the static route `<K as Route<K2>>::Path`: one copy, or two
    /// through the host for CUDA↔Vulkan.
    pub fn copy_to<K2: DeviceKind>(&self, to: Member<K2, B>) -> Result<Shard<K2, B>> {
        let t = <<K as Route<K2>>::Path as Path>::hop(&self.tensor, to.device())?;
        Ok(Shard::unchecked(t))
    }

    /// The shard copied to `to` in one copy. Compiles only where the route is direct
    /// ([`DirectTo`]): a CUDA↔Vulkan or Vulkan↔Vulkan direct copy is a compile error naming
    /// [`Shard::copy_to`].
    pub fn copy_direct<To: DirectTarget<K, B>>(&self, to: To) -> Result<Shard<To::Kind, B>> {
        Ok(Shard::unchecked(Direct::hop(&self.tensor, to.device())?))
    }
}

/// A member a shard of kind `From` reaches in one copy: `Member<K2, B>` where `From:
/// DirectTo<K2>`. The argument of [`Shard::copy_direct`]; taking the member as a whole (not its
/// kind) lets the compiler name the hop that is not direct instead of guessing a kind.
pub trait DirectTarget<From, B>: sealed::Target {
    /// The member's kind.
    type Kind: DeviceKind;
    /// The member's device.
    fn device(&self) -> Device;
}

impl<K: DeviceKind, B> sealed::Target for Member<K, B> {}
impl<From: DirectTo<K2>, K2: DeviceKind, B> DirectTarget<From, B> for Member<K2, B> {
    type Kind = K2;

    fn device(&self) -> Device {
        self.device
    }
}

impl<K, B> Clone for Shard<K, B> {
    fn clone(&self) -> Self {
        Shard { tensor: self.tensor.clone(), _types: PhantomData }
    }
}

impl<K: DeviceKind, B> fmt::Debug for Shard<K, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Shard<{}>({:?})", K::NAME, self.tensor)
    }
}

/// Checks that `device` is of kind `K`.
pub(crate) fn check_kind<K: DeviceKind>(what: &'static str, device: Device) -> Result<()> {
    if device.kind() == K::KIND {
        return Ok(());
    }
    let msg = format!("{device} is not a {} device", K::NAME);
    Err(Error::InvalidArgument { what, msg })
}
