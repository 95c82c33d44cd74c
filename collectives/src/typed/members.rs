//! Member lists as types: a tuple of kinds `(Cuda, Vulkan, Cpu)` is a [`Members`] list, and the
//! shards of a collective on it are a tuple `(Shard<Cuda>, Shard<Vulkan>, Shard<Cpu>)` — or an
//! array `[Shard<K>; N]` when all N members are `K` — through [`ShardsOf`].
//!
//! Implemented for tuples of 1 to 12 kinds.

use super::kind::{DeviceKind, GpuSet, Unstaged};
use super::sealed;
use super::shard::{Member, Shard, check_kind};
use crate::device::{Device, DeviceKind as RuntimeKind};
use crate::error::{Error, Result};
use crate::graph::Tensor;

/// The member kinds of a typed group, in member order: a tuple of 1 to 12 [`DeviceKind`]s.
pub trait Members: sealed::Members + Sized + Send + Sync + 'static {
    /// The number of members.
    const LEN: usize;
    /// The first member's kind (the default leader kind of a [`super::Group`]).
    type First: DeviceKind;
    /// The GPU vendors among the members.
    type Gpus: GpuSet;
    /// One shard per member, as a tuple: `(Shard<K0, B>, Shard<K1, B>, ...)`.
    type Shards<B: 'static>: ShardsOf<Self, B> + Clone;
    /// One typed device per member, as a tuple: `(Member<K0, B>, Member<K1, B>, ...)`.
    type Handles<B: 'static>: Copy;

    /// The members' runtime kinds, in order.
    fn kinds() -> Vec<RuntimeKind>;

    /// `devices` as typed members. Errors if their number or kinds do not match.
    #[doc(hidden)]
    fn handles<B: 'static>(devices: &[Device]) -> Result<Self::Handles<B>>;
}

/// A group of [`Members`] with no hop staged through the host: not both CUDA and Vulkan.
/// `device_group!(no_staging, ...)` makes only such groups.
pub trait NoStaging: Members {}
impl<M: Members> NoStaging for M where M::Gpus: Unstaged {}

/// One shard per member of a group of `M` (branded `B`), in member order: the argument and
/// result of the typed collectives.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not one shard per member of a group of `{M}`",
    label = "expected one shard per member, in member order",
    note = "shard i must be a `Shard` of member i's kind: `(Shard<A>, Shard<B>)` for a group of `(A, B)`; an array `[Shard<K>; N]` fits a group of N `K` members",
    note = "shards of a group made with `brand = X` are `Shard<K, X>` and fit only groups branded `X`"
)]
pub trait ShardsOf<M: Members, B>: sealed::Shards + Sized {
    /// The shards' tensors, in member order.
    fn tensors(&self) -> Vec<Tensor>;

    /// The shards from tensors in member order. Errors if their number or kinds do not match.
    #[doc(hidden)]
    fn from_tensors(tensors: Vec<Tensor>) -> Result<Self>;
}

/// A shard of a member of kind `K` in a group branded `B`: `Shard<K, B>` and nothing else. The
/// typed collectives check each position of their argument with it, so a wrong kind is reported
/// at the shard that has it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not fit here: this member of the group takes a `Shard<{K}, {B}>`",
    label = "wrong kind, or another group's brand, for this member",
    note = "shard i must be a `Shard<K>` of member i's kind `K`, in member order; a group made with `brand = X` takes only `Shard<K, X>`"
)]
pub trait ShardOf<K: DeviceKind, B>: sealed::Shard + Sized {
    /// The shard's tensor.
    fn as_tensor(&self) -> &Tensor;

    /// `t` as this shard type. Errors if `t` is not on a device of kind `K`.
    #[doc(hidden)]
    fn from_tensor(t: Tensor) -> Result<Self>;
}

impl<K: DeviceKind, B> sealed::Shard for Shard<K, B> {}

impl<K: DeviceKind, B> ShardOf<K, B> for Shard<K, B> {
    fn as_tensor(&self) -> &Tensor {
        self.tensor()
    }

    fn from_tensor(t: Tensor) -> Result<Self> {
        check_kind::<K>("typed group", t.device())?;
        Ok(Shard::unchecked(t))
    }
}

/// One bucket (a `Vec` of shards) per member of a group of `M`, in member order: the argument
/// and result of the coalesced collectives.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not one bucket of shards per member of a group of `{M}`",
    label = "expected one `Vec<Shard<K>>` per member, in member order",
    note = "bucket i must be a `Vec` of `Shard`s of member i's kind: `(Vec<Shard<A>>, Vec<Shard<B>>)` for a group of `(A, B)`"
)]
pub trait BucketsOf<M: Members, B>: sealed::Buckets + Sized {
    /// The buckets' tensors, in member order.
    fn tensors(&self) -> Vec<Vec<Tensor>>;

    /// The buckets from tensors in member order. Errors if their number or kinds do not match.
    #[doc(hidden)]
    fn from_tensors(tensors: Vec<Vec<Tensor>>) -> Result<Self>;
}

/// The next tensor of `it` as a shard of member `index`, of kind `K`.
fn next_shard<K: DeviceKind, B, S: ShardOf<K, B>>(
    it: &mut impl Iterator<Item = Tensor>,
    index: usize,
    len: usize,
) -> Result<S> {
    let t = it.next().ok_or(Error::ShardCount {
        op: "typed group",
        got: index,
        size: len,
        need: "give one shard per member",
    })?;
    S::from_tensor(t)
}

/// The next bucket of `it` as shards of member `index`, of kind `K`.
fn next_bucket<K: DeviceKind, B, S: ShardOf<K, B>>(
    it: &mut impl Iterator<Item = Vec<Tensor>>,
    index: usize,
    len: usize,
) -> Result<Vec<S>> {
    let bucket = it.next().ok_or(Error::ShardCount {
        op: "typed group",
        got: index,
        size: len,
        need: "give one bucket per member",
    })?;
    bucket.into_iter().map(S::from_tensor).collect()
}

/// The next device of `it` as member `index`, of kind `K`.
fn next_member<K: DeviceKind, B>(
    it: &mut impl Iterator<Item = Device>,
    index: usize,
    len: usize,
) -> Result<Member<K, B>> {
    let d = it.next().ok_or(Error::ShardCount {
        op: "typed group",
        got: index,
        size: len,
        need: "give one device per member",
    })?;
    check_kind::<K>("typed group", d)?;
    Ok(Member::unchecked(d))
}

/// Errors unless `got` items were given for `len` members.
fn check_len(got: usize, len: usize) -> Result<()> {
    if got == len {
        return Ok(());
    }
    Err(Error::ShardCount { op: "typed group", got, size: len, need: "give one per member" })
}

macro_rules! count {
    () => { 0usize };
    ($h:ident $($t:ident)*) => { 1usize + count!($($t)*) };
}

macro_rules! same {
    ($_x:ident, $t:ty) => {
        $t
    };
}

macro_rules! gpus {
    ($k:ident) => { <$k as DeviceKind>::Gpus };
    ($k:ident $(, $rest:ident)+) => {
        <<$k as DeviceKind>::Gpus as GpuSet>::Join<gpus!($($rest),+)>
    };
}

macro_rules! members {
    ($k0:ident $s0:ident $i0:tt $(, $k:ident $s:ident $i:tt)*) => {
        impl<$k0: DeviceKind $(, $k: DeviceKind)*> sealed::Members for ($k0, $($k,)*) {}

        impl<$k0: DeviceKind $(, $k: DeviceKind)*> Members for ($k0, $($k,)*) {
            const LEN: usize = count!($k0 $($k)*);
            type First = $k0;
            type Gpus = gpus!($k0 $(, $k)*);
            type Shards<B: 'static> = (Shard<$k0, B>, $(Shard<$k, B>,)*);
            type Handles<B: 'static> = (Member<$k0, B>, $(Member<$k, B>,)*);

            fn kinds() -> Vec<RuntimeKind> {
                vec![$k0::KIND $(, $k::KIND)*]
            }

            fn handles<B: 'static>(devices: &[Device]) -> Result<Self::Handles<B>> {
                check_len(devices.len(), Self::LEN)?;
                let it = &mut devices.iter().copied();
                Ok((next_member(it, $i0, Self::LEN)?, $(next_member(it, $i, Self::LEN)?,)*))
            }
        }

        impl<$s0 $(, $s)*> sealed::Shards for ($s0, $($s,)*) {}

        impl<B, $k0: DeviceKind, $s0: ShardOf<$k0, B> $(, $k: DeviceKind, $s: ShardOf<$k, B>)*>
            ShardsOf<($k0, $($k,)*), B> for ($s0, $($s,)*)
        {
            fn tensors(&self) -> Vec<Tensor> {
                vec![self.$i0.as_tensor().clone() $(, self.$i.as_tensor().clone())*]
            }

            fn from_tensors(tensors: Vec<Tensor>) -> Result<Self> {
                const LEN: usize = count!($k0 $($k)*);
                check_len(tensors.len(), LEN)?;
                let it = &mut tensors.into_iter();
                Ok((
                    next_shard::<$k0, B, $s0>(it, $i0, LEN)?,
                    $(next_shard::<$k, B, $s>(it, $i, LEN)?,)*
                ))
            }
        }

        impl<B, K: DeviceKind, S: ShardOf<K, B>>
            ShardsOf<(same!($k0, K), $(same!($k, K),)*), B> for [S; count!($k0 $($k)*)]
        {
            fn tensors(&self) -> Vec<Tensor> {
                self.iter().map(|s| s.as_tensor().clone()).collect()
            }

            fn from_tensors(tensors: Vec<Tensor>) -> Result<Self> {
                const LEN: usize = count!($k0 $($k)*);
                check_len(tensors.len(), LEN)?;
                let it = &mut tensors.into_iter();
                Ok([next_shard::<K, B, S>(it, $i0, LEN)?, $(next_shard::<K, B, S>(it, $i, LEN)?,)*])
            }
        }

        impl<$s0 $(, $s)*> sealed::Buckets for (Vec<$s0>, $(Vec<$s>,)*) {}

        impl<B, $k0: DeviceKind, $s0: ShardOf<$k0, B> $(, $k: DeviceKind, $s: ShardOf<$k, B>)*>
            BucketsOf<($k0, $($k,)*), B> for (Vec<$s0>, $(Vec<$s>,)*)
        {
            fn tensors(&self) -> Vec<Vec<Tensor>> {
                vec![bucket(&self.$i0) $(, bucket(&self.$i))*]
            }

            fn from_tensors(tensors: Vec<Vec<Tensor>>) -> Result<Self> {
                const LEN: usize = count!($k0 $($k)*);
                check_len(tensors.len(), LEN)?;
                let it = &mut tensors.into_iter();
                Ok((
                    next_bucket::<$k0, B, $s0>(it, $i0, LEN)?,
                    $(next_bucket::<$k, B, $s>(it, $i, LEN)?,)*
                ))
            }
        }

        impl<B, K: DeviceKind, S: ShardOf<K, B>>
            BucketsOf<(same!($k0, K), $(same!($k, K),)*), B> for [Vec<S>; count!($k0 $($k)*)]
        {
            fn tensors(&self) -> Vec<Vec<Tensor>> {
                self.iter().map(|b| bucket(b)).collect()
            }

            fn from_tensors(tensors: Vec<Vec<Tensor>>) -> Result<Self> {
                const LEN: usize = count!($k0 $($k)*);
                check_len(tensors.len(), LEN)?;
                let it = &mut tensors.into_iter();
                Ok([next_bucket::<K, B, S>(it, $i0, LEN)?, $(next_bucket::<K, B, S>(it, $i, LEN)?,)*])
            }
        }
    };
}

impl<S, const N: usize> sealed::Shards for [S; N] {}
impl<S, const N: usize> sealed::Buckets for [Vec<S>; N] {}

/// A bucket's tensors.
fn bucket<K: DeviceKind, B, S: ShardOf<K, B>>(shards: &[S]) -> Vec<Tensor> {
    shards.iter().map(|s| s.as_tensor().clone()).collect()
}

members!(K0 S0 0);
members!(K0 S0 0, K1 S1 1);
members!(K0 S0 0, K1 S1 1, K2 S2 2);
members!(K0 S0 0, K1 S1 1, K2 S2 2, K3 S3 3);
members!(K0 S0 0, K1 S1 1, K2 S2 2, K3 S3 3, K4 S4 4);
members!(K0 S0 0, K1 S1 1, K2 S2 2, K3 S3 3, K4 S4 4, K5 S5 5);
members!(K0 S0 0, K1 S1 1, K2 S2 2, K3 S3 3, K4 S4 4, K5 S5 5, K6 S6 6);
members!(K0 S0 0, K1 S1 1, K2 S2 2, K3 S3 3, K4 S4 4, K5 S5 5, K6 S6 6, K7 S7 7);
members!(K0 S0 0, K1 S1 1, K2 S2 2, K3 S3 3, K4 S4 4, K5 S5 5, K6 S6 6, K7 S7 7, K8 S8 8);
members!(K0 S0 0, K1 S1 1, K2 S2 2, K3 S3 3, K4 S4 4, K5 S5 5, K6 S6 6, K7 S7 7, K8 S8 8, K9 S9 9);
members!(K0 S0 0, K1 S1 1, K2 S2 2, K3 S3 3, K4 S4 4, K5 S5 5, K6 S6 6, K7 S7 7, K8 S8 8, K9 S9 9, K10 S10 10);
members!(K0 S0 0, K1 S1 1, K2 S2 2, K3 S3 3, K4 S4 4, K5 S5 5, K6 S6 6, K7 S7 7, K8 S8 8, K9 S9 9, K10 S10 10, K11 S11 11);
