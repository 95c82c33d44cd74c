//! The collectives of a [`DeviceGroup`]: argument checks, the algorithm choice, then the
//! algorithm (star, ring or NCCL) building the lazy result.

use super::check::{Count, Shapes, check_dim, even_part};
use super::{Algorithm, CollectiveKind, DeviceGroup, ReduceOp, call, choose_without_nccl, ring, star};
use crate::error::{Error, Result};
use crate::graph::Tensor;
use crate::log::{LogLevel, log};
use crate::route::Hops;

impl DeviceGroup {
    /// The shards folded with `op` onto the leader (NCCL's `reduce` with the leader as root). Takes
    /// one to `size()` shards, shard i on device i; all of one shape and dtype. A Vulkan leader
    /// sharing its GPU with a CUDA member that holds a shard has that CUDA device fold them and
    /// copy the result over, from 256 KiB shards (see [`DeviceGroup::all_to_all`]); smaller
    /// shards live in host memory, where the host folds them once the CUDA shards are downloaded
    /// (while the fold moves fewer than
    /// [`VULKAN_HOST_KERNEL_BYTES`](crate::VULKAN_HOST_KERNEL_BYTES) in all).
    pub fn reduce(&self, shards: &[Tensor], op: ReduceOp) -> Result<Tensor> {
        self.check_shards("reduce", shards, Count::UpToAll, Shapes::Equal)?;
        op.check("reduce", shards[0].dtype())?;
        let leader = self.leader();
        let mut hops = Hops::default();
        match self.pick(CollectiveKind::Reduce, shards[0].nbytes(), shards.len() == self.size())? {
            Algorithm::Nccl => Ok(super::nccl::reduce(self, shards, op)?),
            Algorithm::Ring => {
                let devs = &self.devices()[..shards.len()];
                let root = self.leader_index().min(shards.len() - 1);
                let r = ring::reduce_to(&mut hops, devs, shards, op, root)?;
                Ok(hops.hop(&r, leader))
            }
            _ => star::reduce_to(&mut hops, shards, op, leader),
        }
    }

    /// The shards folded with `op`, the result on every device (NCCL's all_reduce). One shard per
    /// device, all of one shape and dtype.
    pub fn all_reduce(&self, shards: &[Tensor], op: ReduceOp) -> Result<Vec<Tensor>> {
        self.check_shards("all_reduce", shards, Count::All, Shapes::Equal)?;
        op.check("all_reduce", shards[0].dtype())?;
        let mut hops = Hops::default();
        let algo = self.pick(CollectiveKind::AllReduce, shards[0].nbytes(), true)?;
        if let Some(at) = call::fans_out(self, CollectiveKind::AllReduce, shards, algo) {
            return Ok(call::fanned_all_reduce(self, at, shards, op));
        }
        match algo {
            Algorithm::Nccl => super::nccl::all_reduce(self, shards, op),
            Algorithm::Ring => self.ring_all_reduce(&mut hops, shards, op),
            #[cfg(feature = "cuda")]
            algo @ (Algorithm::Star | Algorithm::OneShot | Algorithm::TwoShot) if call::cuda_native(self) => {
                Ok(call::cuda_all_reduce(self, shards, op, algo))
            }
            Algorithm::OneShot | Algorithm::TwoShot => {
                star::all_reduce_in_place(&mut hops, shards, op, self.devices())
            }
            algo if call::runs_on_host(self, CollectiveKind::AllReduce, shards, algo) => {
                Ok(call::host_all_reduce(self, shards, op))
            }
            _ => {
                let r = star::reduce_to(&mut hops, shards, op, self.star_hub())?;
                star::broadcast(&mut hops, &r, self.devices())
            }
        }
    }

    fn ring_all_reduce(&self, hops: &mut Hops, shards: &[Tensor], op: ReduceOp) -> Result<Vec<Tensor>> {
        let n = self.size();
        let numel = shards[0].numel();
        // In u128: c * numel passes usize for tensors past usize::MAX / n elements.
        let at = |c: usize| (c as u128 * numel as u128 / n as u128) as usize;
        let bounds: Vec<(usize, usize)> = (0..n).map(|c| (at(c), at(c + 1))).collect();
        let parts = shards
            .iter()
            .map(|s| {
                let flat = s.flatten()?;
                bounds.iter().map(|&(lo, hi)| flat.narrow(0, lo, hi - lo)).collect()
            })
            .collect::<Result<Vec<Vec<Tensor>>>>()?;
        let reduced = ring::reduce_scatter(hops, self.devices(), &parts, op)?;
        let gathered = ring::all_gather(hops, self.devices(), &reduced)?;
        gathered.iter().map(|chunks| Tensor::concat(chunks, 0)?.reshape(shards[0].shape())).collect()
    }

    /// `t` copied from its device (a member, the root) to every device; entry i is on device i (the
    /// root's entry is `t` itself). On a group of host devices the other members read `t` in place:
    /// one call, no copy (they share one memory; a tensor never changes once realized). So too on a
    /// group of host and Vulkan devices below
    /// [`HOST_STAGED_BELOW_BYTES`](super::HOST_STAGED_BELOW_BYTES), the Vulkan members staged
    /// through a host member (`t` copied to it, the result copied to them); CUDA members too where
    /// [`host_stages_cuda`](super::host_stages_cuda) says.
    pub fn broadcast(&self, t: &Tensor) -> Result<Vec<Tensor>> {
        let root = self.check_member("broadcast", t)?;
        let mut hops = Hops::default();
        match self.pick(CollectiveKind::Broadcast, t.nbytes(), true)? {
            Algorithm::Nccl => super::nccl::broadcast(self, t, root),
            Algorithm::Ring => ring::broadcast(&mut hops, t, self.devices(), root),
            #[cfg(feature = "cuda")]
            algo @ (Algorithm::Star | Algorithm::OneShot | Algorithm::TwoShot) if call::cuda_native(self) => {
                Ok(call::cuda_broadcast(self, t, root, algo))
            }
            algo if call::runs_on_host(self, CollectiveKind::Broadcast, std::slice::from_ref(t), algo) => {
                Ok(call::host_broadcast(self, t, root))
            }
            _ => star::broadcast(&mut hops, t, self.devices()),
        }
    }

    /// The shards joined along `dim` on the leader (NCCL's `gather`, as a concatenation). Takes
    /// one to `size()` shards, shard i on device i; they may differ in length along `dim`. A
    /// Vulkan leader sharing its GPU with a CUDA member that holds a shard has that CUDA device
    /// join them and copy the result over, from 256 KiB joined (see [`DeviceGroup::all_to_all`]).
    pub fn gather(&self, shards: &[Tensor], dim: usize) -> Result<Tensor> {
        self.check_shards("gather", shards, Count::UpToAll, Shapes::ExceptDim(dim))?;
        star::gather_to(&mut Hops::default(), shards, dim, self.leader())
    }

    /// The shards joined along `dim`, the result on every device. One shard per device; they may
    /// differ in length along `dim`.
    pub fn all_gather(&self, shards: &[Tensor], dim: usize) -> Result<Vec<Tensor>> {
        self.check_shards("all_gather", shards, Count::All, Shapes::ExceptDim(dim))?;
        let even = shards.iter().all(|s| s.shape() == shards[0].shape());
        let nccl_ok = even && contiguous_along(&shards[0], dim);
        let mut hops = Hops::default();
        let algo = self.pick(CollectiveKind::AllGather, shards[0].nbytes(), nccl_ok)?;
        if let Some(at) = call::fans_out(self, CollectiveKind::AllGather, shards, algo) {
            return call::fanned_all_gather(self, at, shards, dim);
        }
        match algo {
            Algorithm::Nccl => super::nccl::all_gather(self, shards, dim),
            Algorithm::Ring => {
                let have = ring::all_gather(&mut hops, self.devices(), shards)?;
                have.iter().map(|row| join(row, dim)).collect()
            }
            #[cfg(feature = "cuda")]
            algo @ (Algorithm::Star | Algorithm::OneShot | Algorithm::TwoShot) if call::cuda_native(self) => {
                call::cuda_all_gather(self, shards, dim, algo)
            }
            algo if call::runs_on_host(self, CollectiveKind::AllGather, shards, algo) => {
                call::host_all_gather(self, shards, dim)
            }
            Algorithm::OneShot | Algorithm::TwoShot => {
                star::all_gather_in_place(&mut hops, shards, dim, self.devices())
            }
            _ => {
                let cat = star::gather_to(&mut hops, shards, dim, self.star_hub())?;
                star::broadcast(&mut hops, &cat, self.devices())
            }
        }
    }

    /// The shards folded with `op` and cut along `dim` into `size()` equal parts, part i on
    /// device i. `dim` must split evenly ([`Error::Uneven`] otherwise).
    pub fn reduce_scatter(&self, shards: &[Tensor], op: ReduceOp, dim: usize) -> Result<Vec<Tensor>> {
        self.check_shards("reduce_scatter", shards, Count::All, Shapes::Equal)?;
        op.check("reduce_scatter", shards[0].dtype())?;
        let hint = "pad the dimension to a multiple of the group size";
        let part = even_part("reduce_scatter", shards[0].shape(), dim, self.size(), hint)?;
        let n = self.size();
        let mut hops = Hops::default();
        let contiguous = contiguous_along(&shards[0], dim);
        let algo = self.pick(CollectiveKind::ReduceScatter, shards[0].nbytes(), contiguous)?;
        if let Some(at) = call::fans_out(self, CollectiveKind::ReduceScatter, shards, algo)
            && contiguous
        {
            return Ok(call::fanned_reduce_scatter(self, at, shards, op, (dim, part)));
        }
        match algo {
            Algorithm::Nccl => super::nccl::reduce_scatter(self, shards, op, dim),
            Algorithm::Ring => {
                ring::reduce_scatter(&mut hops, self.devices(), &split(shards, dim, part, n)?, op)
            }
            #[cfg(feature = "cuda")]
            algo @ (Algorithm::Star | Algorithm::OneShot | Algorithm::TwoShot)
                if call::cuda_native(self) && contiguous =>
            {
                Ok(call::cuda_reduce_scatter(self, shards, (op, dim, part), algo))
            }
            algo if call::runs_on_host(self, CollectiveKind::ReduceScatter, shards, algo) => {
                Ok(call::host_reduce_scatter(self, shards, op, dim, part))
            }
            Algorithm::OneShot | Algorithm::TwoShot => {
                star::reduce_scatter_in_place(&mut hops, &split(shards, dim, part, n)?, op, self.devices())
            }
            _ => {
                let r = star::reduce_to(&mut hops, shards, op, self.star_hub())?;
                star::scatter(&mut hops, &r, dim, &vec![part; n], self.devices())
            }
        }
    }

    /// `t` (on a member device) cut along `dim` into `size()` equal parts, part i sent to device i.
    /// `dim` must split evenly ([`Error::Uneven`]; see [`DeviceGroup::scatter_sizes`]). On a group
    /// of host devices, one call: each member reads its part of `t` in place where the part is one
    /// contiguous range (every dim before `dim` is 1), else copies it; so too on a group of host
    /// and Vulkan devices below [`HOST_STAGED_BELOW_BYTES`](super::HOST_STAGED_BELOW_BYTES), the
    /// Vulkan members staged through a host member, CUDA members too where
    /// [`host_stages_cuda`](super::host_stages_cuda) says (see [`DeviceGroup::broadcast`]). On a
    /// group of CUDA devices, where the parts are contiguous, one call of the root: its part a
    /// view of `t`, its launch copying every other part into the member's memory.
    pub fn scatter(&self, t: &Tensor, dim: usize) -> Result<Vec<Tensor>> {
        let root = self.check_member("scatter", t)?;
        let hint = "use scatter_sizes to give each device its own length";
        let part = even_part("scatter", t.shape(), dim, self.size(), hint)?;
        self.scatter_parts(t, root, dim, &vec![part; self.size()])
    }

    /// `t` (on a member device) cut along `dim` into parts of `sizes` (one per device, summing to
    /// the dimension's length), part i sent to device i.
    pub fn scatter_sizes(&self, t: &Tensor, dim: usize, sizes: &[usize]) -> Result<Vec<Tensor>> {
        let root = self.check_member("scatter_sizes", t)?;
        check_dim("scatter_sizes", t.shape(), dim)?;
        if sizes.len() != self.size() {
            let (got, size) = (sizes.len(), self.size());
            return Err(Error::ShardCount {
                op: "scatter_sizes",
                got,
                size,
                need: "give one size per device",
            });
        }
        let sum = sizes.iter().try_fold(0usize, |acc, &s| acc.checked_add(s));
        let sum = sum.ok_or_else(|| Error::TooLarge {
            what: "scatter_sizes",
            size: format!("the sum of the sizes {sizes:?}"),
        })?;
        let len = t.shape().dim(dim);
        if sum != len {
            return Err(Error::SplitSizes { op: "scatter_sizes", sizes: sizes.to_vec(), sum, dim, len });
        }
        self.scatter_parts(t, root, dim, sizes)
    }

    /// The scatter of checked arguments (`t` on member `root`): one call on a group of host
    /// devices, and on a group of CUDA devices where the parts are contiguous; else the star's
    /// views and hops.
    #[cfg_attr(not(feature = "cuda"), allow(unused_variables))]
    fn scatter_parts(&self, t: &Tensor, root: usize, dim: usize, sizes: &[usize]) -> Result<Vec<Tensor>> {
        if call::runs_on_host(self, CollectiveKind::Scatter, std::slice::from_ref(t), Algorithm::Star) {
            return Ok(call::host_scatter(self, t, dim, sizes));
        }
        #[cfg(feature = "cuda")]
        if call::cuda_native(self) && contiguous_along(t, dim) {
            return Ok(call::cuda_scatter(self, t, root, (dim, sizes)));
        }
        star::scatter(&mut Hops::default(), t, dim, sizes, self.devices())
    }

    /// Each shard cut along `dim` into `size()` equal parts; device j receives part j of every
    /// shard, joined along `dim` in shard order. `dim` must split evenly. On a group of CUDA
    /// devices, where the parts are contiguous (every dim before `dim` is 1), one multi-device
    /// call: the star (the leader's launches copy every part into its place) or the one-shot (each
    /// member copies its part of every shard, read in place, into its output). On a group of host
    /// devices, one call too: each member's output written in one pass over its parts; so too on a
    /// group of host and Vulkan devices below
    /// [`HOST_STAGED_BELOW_BYTES`](super::HOST_STAGED_BELOW_BYTES) a shard, the Vulkan members
    /// staged through a host member, CUDA members too where
    /// [`host_stages_cuda`](super::host_stages_cuda) says (of a CUDA device and a host or Vulkan
    /// device alone, below
    /// [`HOST_STAGED_CUDA_PAIR_BELOW_BYTES`](super::HOST_STAGED_CUDA_PAIR_BELOW_BYTES)). Where a
    /// Vulkan member shares its GPU with a CUDA member, that CUDA device joins the Vulkan
    /// member's parts (from 256 KiB joined, the device bridge reading a Vulkan shard's parts in
    /// place; but where they are strided, cut along a later dim out of a shard in device memory
    /// by a Vulkan kernel) and copies the result over: on one GPU a Vulkan submission after CUDA
    /// work waits for the GPU to switch APIs (about 320 µs; a Vulkan leader's `gather` from
    /// 256 KiB joined and `reduce` from 256 KiB shards are computed so too).
    pub fn all_to_all(&self, shards: &[Tensor], dim: usize) -> Result<Vec<Tensor>> {
        self.check_shards("all_to_all", shards, Count::All, Shapes::Equal)?;
        let hint = "pad the dimension to a multiple of the group size";
        let (n, part) = (self.size(), even_part("all_to_all", shards[0].shape(), dim, self.size(), hint)?);
        #[cfg(feature = "cuda")]
        if call::cuda_native(self) && contiguous_along(&shards[0], dim) {
            let algo = self.pick(CollectiveKind::AllToAll, shards[0].nbytes(), false)?;
            return Ok(call::cuda_all_to_all(self, shards, (dim, part), algo));
        }
        if let Some(at) = call::fans_out(self, CollectiveKind::AllToAll, shards, Algorithm::Star)
            && contiguous_along(&shards[0], dim)
        {
            return Ok(call::fanned_all_to_all(self, at, shards, (dim, part)));
        }
        if call::runs_on_host(self, CollectiveKind::AllToAll, shards, Algorithm::Star) {
            return Ok(call::host_all_to_all(self, shards, dim, part));
        }
        let parts = split(shards, dim, part, n)?;
        let mut hops = Hops::default();
        (0..n)
            .map(|j| {
                let to = self.devices()[j];
                let column: Vec<Tensor> = parts.iter().map(|p| p[j].clone()).collect();
                let at = star::site(to, &column, star::Work::join_of(&column));
                if at != to {
                    return star::join_on(&mut hops, &column, dim, at, to);
                }
                let got: Vec<Tensor> = column.iter().map(|p| hops.hop(p, to)).collect();
                join(&got, dim)
            })
            .collect()
    }

    /// The algorithm for one call: the group's setting or [`super::choose`]. `nccl_ok` says whether the
    /// call has an NCCL form; without one, `Auto` runs the native choice and a forced `Nccl` is an
    /// error.
    fn pick(&self, kind: CollectiveKind, bytes: usize, nccl_ok: bool) -> Result<Algorithm> {
        let algo = self.pick_algorithm(kind, bytes, nccl_ok)?;
        if crate::log::enabled(LogLevel::Info) {
            let why = if self.algorithm() == Algorithm::Auto { "chosen" } else { "the group's setting" };
            let (op, members) = (kind.name(), self.member_list());
            let level = match crate::log::first_time(format!("{op} [{members}] {algo}")) {
                true => LogLevel::Info,
                false => LogLevel::Debug,
            };
            log!(level, "{op} on [{members}], {bytes} B per shard: {algo} ({why})");
        }
        Ok(algo)
    }

    /// [`Self::pick`] without the log line.
    fn pick_algorithm(&self, kind: CollectiveKind, bytes: usize, nccl_ok: bool) -> Result<Algorithm> {
        let op = kind.name();
        let chosen = self.algorithm_for(kind, bytes);
        if chosen != Algorithm::Nccl {
            return Ok(chosen);
        }
        if !self.all_cuda() {
            let msg =
                format!("NCCL needs a group of CUDA devices only; this one is [{}]", self.member_list());
            return Err(Error::InvalidArgument { what: op, msg });
        }
        if nccl_ok {
            return Ok(Algorithm::Nccl);
        }
        if self.algorithm() == Algorithm::Nccl {
            let msg = "this call has no NCCL form (uneven shards, or a dim that is not outermost); use Auto, Star or Ring".into();
            return Err(Error::InvalidArgument { what: op, msg });
        }
        Ok(choose_without_nccl(kind, self.devices(), bytes))
    }
}

/// Whether cutting `t` along `dim` gives contiguous pieces (all outer dims are 1).
fn contiguous_along(t: &Tensor, dim: usize) -> bool {
    t.shape().dims()[..dim.min(t.shape().rank())].iter().all(|&d| d == 1)
}

/// Each of `shards` cut along `dim` into `n` parts of `part`: entry i holds shard i's parts.
fn split(shards: &[Tensor], dim: usize, part: usize, n: usize) -> Result<Vec<Vec<Tensor>>> {
    let cut = |t: &Tensor| -> Result<Vec<Tensor>> {
        match n {
            1 => Ok(vec![t.clone()]),
            _ => (0..n).map(|c| t.narrow(dim, c * part, part)).collect(),
        }
    };
    shards.iter().map(cut).collect()
}

/// `parts` joined along `dim` (one part is returned as is).
fn join(parts: &[Tensor], dim: usize) -> Result<Tensor> {
    match parts {
        [one] => Ok(one.clone()),
        _ => Tensor::concat(parts, dim),
    }
}
