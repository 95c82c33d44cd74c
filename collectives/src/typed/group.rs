//! [`Group`]: a [`DeviceGroup`] whose member kinds, leader kind and brand are types.

use std::fmt;
use std::marker::PhantomData;

use super::kind::DeviceKind;
use super::members::{Members, NoStaging, ShardsOf};
use super::shard::{Member, Unbranded};
use crate::collective::{Algorithm, DeviceGroup};
use crate::device::Device;
use crate::discover::available_devices;
use crate::error::{Error, Result};
use crate::graph::Tensor;

/// A device group whose member kinds `M` (a tuple such as `(Cuda, Vulkan, Cpu)`), leader kind
/// `L` (the first member's by default) and brand `B` are types. Made by `device_group!`;
/// nameable, so a model's struct can hold one: `Group<(Cuda, Vulkan, Cpu)>`. Cheap to clone.
///
/// Its collectives (see the methods) take and return one [`super::Shard`] per member, and run
/// the runtime [`DeviceGroup`] underneath: the same algorithms, the same graphs.
pub struct Group<M: Members, L: DeviceKind = <M as Members>::First, B: 'static = Unbranded> {
    inner: DeviceGroup,
    members: M::Handles<B>,
    _types: Types<M, L, B>,
}

/// The group's type parameters, held without owning values of them (so `Send` and `Sync`
/// whatever they are).
type Types<M, L, B> = PhantomData<fn() -> (M, L, B)>;

impl<M: Members, L: DeviceKind, B: 'static> Group<M, L, B> {
    /// The group of `devices` (one per member, each of its member's kind) led by `leader`,
    /// after checking that every device is present: [`Error::DeviceUnavailable`] names the
    /// first absent one. Never substitutes another device. Virtual CPU devices are always
    /// present.
    pub fn open(devices: &[Device], leader: Device) -> Result<Self> {
        let group = Self::from_devices(devices, leader)?;
        if let Some(&absent) = devices.iter().find(|&&d| !present(d)) {
            return Err(unavailable(absent));
        }
        Ok(group)
    }

    /// As [`Group::open`], for member lists with no hop staged through the host
    /// (`device_group!(no_staging, ...)`).
    pub fn open_no_staging(devices: &[Device], leader: Device) -> Result<Self>
    where
        M: NoStaging,
    {
        Self::open(devices, leader)
    }

    /// The group of `devices` led by `leader`, without checking the devices are present: for
    /// building graphs and plans on machines that lack them (realizing then fails there).
    ///
    /// Errors: the [`DeviceGroup::new`] errors; [`Error::ShardCount`] or
    /// [`Error::InvalidArgument`] if the devices do not match `M` in number or kinds, or the
    /// leader is not of kind `L`; [`Error::LeaderNotMember`].
    pub fn from_devices(devices: &[Device], leader: Device) -> Result<Self> {
        let members = M::handles::<B>(devices)?;
        super::shard::check_kind::<L>("typed group leader", leader)?;
        let inner = DeviceGroup::new(devices.to_vec())?.with_leader(leader)?;
        Ok(Group { inner, members, _types: PhantomData })
    }

    /// What a `device_group!` invocation that did not compile expands to (never runs).
    #[doc(hidden)]
    pub fn __invalid_invocation() -> Result<Self> {
        Err(Error::InvalidArgument { what: "device_group!", msg: "this invocation did not compile".into() })
    }

    /// The runtime group underneath: for plans, `Display`, and the untyped collectives.
    pub fn runtime(&self) -> &DeviceGroup {
        &self.inner
    }

    /// The number of members, `M::LEN`.
    pub fn size(&self) -> usize {
        self.inner.size()
    }

    /// The member devices, in order.
    pub fn devices(&self) -> &[Device] {
        self.inner.devices()
    }

    /// One typed device per member, as a tuple: `let (gpu, vk, cpu) = group.members();`.
    pub fn members(&self) -> M::Handles<B> {
        self.members
    }

    /// The leader, where `reduce` and `gather` put their result.
    pub fn leader(&self) -> Member<L, B> {
        Member::unchecked(self.inner.leader())
    }

    /// The same group running `algorithm` for every collective.
    pub fn with_algorithm(self, algorithm: Algorithm) -> Self {
        Group { inner: self.inner.with_algorithm(algorithm), ..self }
    }

    /// A copy of the group running `algorithm`, for one call.
    pub fn using(&self, algorithm: Algorithm) -> Self {
        self.clone().with_algorithm(algorithm)
    }

    /// One shard per member from `f(index, device)`, in member order: the way code generic over
    /// the member kinds makes shards. Errors with [`Error::ShardDevice`] if `f` returns a
    /// tensor on another device than member `index`.
    pub fn make_shards(&self, mut f: impl FnMut(usize, Device) -> Result<Tensor>) -> Result<M::Shards<B>> {
        let tensors = self
            .devices()
            .iter()
            .enumerate()
            .map(|(index, &expected)| {
                let t = f(index, expected)?;
                match t.device() {
                    got if got == expected => Ok(t),
                    got => Err(Error::ShardDevice { op: "make_shards", index, expected, got }),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        <M::Shards<B> as ShardsOf<M, B>>::from_tensors(tensors)
    }
}

/// Whether `device` is on this machine: virtual CPU devices always are.
fn present(device: Device) -> bool {
    device.is_host() || available_devices().contains(&device)
}

fn unavailable(device: Device) -> Error {
    let count = available_devices().iter().filter(|d| d.kind() == device.kind()).count();
    Error::DeviceUnavailable {
        device,
        reason: format!(
            "this machine has {count} {} device(s); a typed group never substitutes another device \
             (for a run without GPUs, make a group of virtual devices: device_group!(Cpu(0), Cpu(1)))",
            device.kind()
        ),
    }
}

impl<M: Members, L: DeviceKind, B: 'static> Clone for Group<M, L, B> {
    fn clone(&self) -> Self {
        Group { inner: self.inner.clone(), members: self.members, _types: PhantomData }
    }
}

impl<M: Members, L: DeviceKind, B: 'static> fmt::Debug for Group<M, L, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Group")
            .field("devices", &self.devices())
            .field("leader", &self.inner.leader())
            .field("brand", &std::any::type_name::<B>())
            .finish()
    }
}

impl<M: Members, L: DeviceKind, B: 'static> fmt::Display for Group<M, L, B> {
    /// As the runtime group's: members, leader, algorithm and the route of every pair.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}
