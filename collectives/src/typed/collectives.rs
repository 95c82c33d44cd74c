//! The typed collectives: each takes one shard per member (a tuple, or an array for a group of
//! one kind), calls the runtime [`crate::DeviceGroup`] collective of the same name, and returns
//! shards typed by where they land. No second implementation: the graphs are the runtime's.

use super::group::Group;
use super::kind::DeviceKind;
use super::members::{BucketsOf, Members, ShardsOf};
use super::shard::Shard;
use crate::collective::{CollectiveKind, Plan, ReduceOp};
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::Shape;

impl<M: Members, L: DeviceKind, B: 'static> Group<M, L, B> {
    /// The shards folded with `op` onto the leader (as [`crate::DeviceGroup::reduce`]).
    pub fn reduce<S: ShardsOf<M, B>>(&self, shards: S, op: ReduceOp) -> Result<Shard<L, B>> {
        let t = self.runtime().reduce(&shards.tensors(), op)?;
        self.leader().shard(t)
    }

    /// The shards folded with `op`, the result on every member (NCCL's all_reduce).
    pub fn all_reduce<S: ShardsOf<M, B>>(&self, shards: S, op: ReduceOp) -> Result<S> {
        S::from_tensors(self.runtime().all_reduce(&shards.tensors(), op)?)
    }

    /// `t` (on a member, the root) copied to every member.
    pub fn broadcast<K: DeviceKind>(&self, t: &Shard<K, B>) -> Result<M::Shards<B>> {
        let out = self.runtime().broadcast(t.tensor())?;
        <M::Shards<B> as ShardsOf<M, B>>::from_tensors(out)
    }

    /// The shards joined along `dim` on the leader (as [`crate::DeviceGroup::gather`]).
    pub fn gather<S: ShardsOf<M, B>>(&self, shards: S, dim: usize) -> Result<Shard<L, B>> {
        let t = self.runtime().gather(&shards.tensors(), dim)?;
        self.leader().shard(t)
    }

    /// The shards joined along `dim`, the result on every member.
    pub fn all_gather<S: ShardsOf<M, B>>(&self, shards: S, dim: usize) -> Result<S> {
        S::from_tensors(self.runtime().all_gather(&shards.tensors(), dim)?)
    }

    /// The shards folded with `op` and cut along `dim` into one equal part per member.
    pub fn reduce_scatter<S: ShardsOf<M, B>>(&self, shards: S, op: ReduceOp, dim: usize) -> Result<S> {
        let out = self.runtime().reduce_scatter(&shards.tensors(), op, dim)?;
        S::from_tensors(out)
    }

    /// `t` (on a member) cut along `dim` into one equal part per member.
    pub fn scatter<K: DeviceKind>(&self, t: &Shard<K, B>, dim: usize) -> Result<M::Shards<B>> {
        let out = self.runtime().scatter(t.tensor(), dim)?;
        <M::Shards<B> as ShardsOf<M, B>>::from_tensors(out)
    }

    /// `t` (on a member) cut along `dim` into parts of `sizes`, one per member.
    pub fn scatter_sizes<K: DeviceKind>(
        &self,
        t: &Shard<K, B>,
        dim: usize,
        sizes: &[usize],
    ) -> Result<M::Shards<B>> {
        let out = self.runtime().scatter_sizes(t.tensor(), dim, sizes)?;
        <M::Shards<B> as ShardsOf<M, B>>::from_tensors(out)
    }

    /// Each shard cut along `dim` into one part per member; member j receives part j of every
    /// shard, joined in member order.
    pub fn all_to_all<S: ShardsOf<M, B>>(&self, shards: S, dim: usize) -> Result<S> {
        S::from_tensors(self.runtime().all_to_all(&shards.tensors(), dim)?)
    }

    /// [`Group::all_reduce`] of many tensors at once (gradient buckets): one bucket per member,
    /// every bucket listing the same shapes and dtypes in the same order.
    pub fn all_reduce_coalesced<S: BucketsOf<M, B>>(&self, buckets: S, op: ReduceOp) -> Result<S> {
        let out = self.runtime().all_reduce_coalesced(&buckets.tensors(), op)?;
        S::from_tensors(out)
    }

    /// What a collective of `kind` on shards of `shape` and `dtype` will do, before it runs (as
    /// [`crate::DeviceGroup::plan`]).
    pub fn plan(&self, kind: CollectiveKind, shape: impl Into<Shape>, dtype: DType) -> Result<Plan> {
        self.runtime().plan(kind, shape, dtype)
    }
}
