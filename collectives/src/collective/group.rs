//! `DeviceGroup`'s constructors and accessors.

use super::{Algorithm, CollectiveKind, DeviceGroup, Route, choose};
use crate::device::Device;
use crate::error::{Error, Result};

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
    /// [`Error::BackendNotBuilt`]. Then decides the bridge of every CUDA ↔ Vulkan pair of the
    /// group — through the GPU's memory where both are one GPU, else the host; without
    /// `validate`, at the pair's first move — which the group's listing (`Display`) and its
    /// [`Plan`](super::Plan)s show from then on.
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
        self.devices.iter().try_for_each(|&d| crate::discover::check(d))?;
        for (i, &a) in self.devices.iter().enumerate() {
            for &b in &self.devices[i + 1..] {
                crate::backend::staged::decide_bridge(a, b);
            }
        }
        Ok(())
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

    /// Where the star folds an `all_reduce` or `reduce_scatter`, and joins an `all_gather`, whose
    /// result lands on every member: the first CUDA member, where the group has one and its
    /// leader is not one; else the leader.
    ///
    /// Why: a CUDA fold or join reads a host member's small shard in place and writes the host
    /// members' results in the same pass (`backend/cuda/mapped.rs`), and streams larger ones
    /// beside its kernel, where a host hub first waits for every CUDA shard's download and then
    /// for the result's upload. Led by `cpu:0`, the all_reduce of `cpu:0,cuda:0` took 21.3–22.8
    /// µs at 4 KiB, 219.6–260.2 at 1 MiB and 16.7–17.2 ms at 256 MiB on the host hub against
    /// 14.7–15.6, 66.4–66.7 and 5.7 ms on the CUDA one; of `cpu:0,vulkan:0,cuda:0` 391.7–411.1 µs
    /// against 73.6–78.3 at 1 MiB (one H100, `bench/gpu/49-pair-calls`, run b, two rounds). Of
    /// the rows measured from 4 KiB to 256 MiB (runs b and c) one read behind: the 4 KiB
    /// reduce_scatter of `cpu:0,cuda:0,cuda:1` (virtual devices), 38.9–39.4 → 41.2–58.1 in run
    /// c, mixed in run b. A Vulkan leader leaves it to CUDA too: where both are one GPU, a
    /// Vulkan kernel issued after CUDA work waits for the GPU to switch between the two APIs
    /// (about 600 µs for a 4 KiB all_reduce on an H200, `bench/gpu/16-vulkan-host`), while the
    /// CUDA fold or join of the same shards does not. Across two GPUs either hub moves the same
    /// bytes (every other member's shard in, the result out to every other member).
    pub fn star_hub(&self) -> Device {
        let leader = self.leader();
        match self.devices.iter().find(|d| matches!(d, Device::Cuda(_))) {
            Some(&cuda) if !matches!(leader, Device::Cuda(_)) => cuda,
            _ => leader,
        }
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
    /// setting, or [`choose`]. An all_to_all of two or more CUDA devices (one call, along
    /// contiguous parts) runs the star or the one-shot — any other setting the one-shot; the
    /// collectives with one form (gather, scatter, all_to_all elsewhere) always report
    /// [`Algorithm::Star`].
    pub fn algorithm_for(&self, kind: CollectiveKind, bytes: usize) -> Algorithm {
        let cuda_all_to_all =
            cfg!(feature = "cuda") && kind == CollectiveKind::AllToAll && self.size() >= 2 && self.all_cuda();
        match self.algorithm {
            _ if !kind.takes_algorithm() && !cuda_all_to_all => Algorithm::Star,
            Algorithm::Auto => choose(kind, &self.devices, bytes),
            a if cuda_all_to_all && a != Algorithm::Star => Algorithm::OneShot,
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
