//! Which algorithm a collective runs, chosen by one expression of group composition and size.

use std::fmt;

use crate::device::Device;

/// The collectives, as the algorithm choice and plans name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollectiveKind {
    /// [`crate::DeviceGroup::reduce`].
    Reduce,
    /// [`crate::DeviceGroup::all_reduce`].
    AllReduce,
    /// [`crate::DeviceGroup::broadcast`].
    Broadcast,
    /// [`crate::DeviceGroup::gather`].
    Gather,
    /// [`crate::DeviceGroup::all_gather`].
    AllGather,
    /// [`crate::DeviceGroup::reduce_scatter`].
    ReduceScatter,
    /// [`crate::DeviceGroup::scatter`] and [`crate::DeviceGroup::scatter_sizes`].
    Scatter,
    /// [`crate::DeviceGroup::all_to_all`].
    AllToAll,
}

impl CollectiveKind {
    /// The method's name (`all_reduce`, ...).
    pub fn name(self) -> &'static str {
        match self {
            CollectiveKind::Reduce => "reduce",
            CollectiveKind::AllReduce => "all_reduce",
            CollectiveKind::Broadcast => "broadcast",
            CollectiveKind::Gather => "gather",
            CollectiveKind::AllGather => "all_gather",
            CollectiveKind::ReduceScatter => "reduce_scatter",
            CollectiveKind::Scatter => "scatter",
            CollectiveKind::AllToAll => "all_to_all",
        }
    }

    /// Whether NCCL has this collective (reduce, all_reduce, broadcast, all_gather,
    /// reduce_scatter).
    pub fn has_nccl_form(self) -> bool {
        matches!(
            self,
            CollectiveKind::Reduce
                | CollectiveKind::AllReduce
                | CollectiveKind::Broadcast
                | CollectiveKind::AllGather
                | CollectiveKind::ReduceScatter
        )
    }

    /// Whether the algorithm setting applies (the others have one form).
    pub fn takes_algorithm(self) -> bool {
        self.has_nccl_form()
    }
}

/// The algorithm a collective runs. `reduce`, `all_reduce`, `broadcast`, `all_gather` and
/// `reduce_scatter` take it; `gather`, `scatter`, `scatter_sizes` and `all_to_all` have one form
/// (each part sent straight to where it goes) and ignore it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Let [`choose`] decide from the group and the message size.
    Auto,
    /// Through the leader: every shard hops to the leader, which folds them in one n-ary pass and
    /// sends the result out. The simplest shape; the right one for mixed vendors and small messages.
    Star,
    /// Chunked ring: reduce_scatter then all_gather, each chunk hopping device to device, so every
    /// link carries 2(n-1)/n of the message instead of the leader's links carrying all of it.
    Ring,
    /// NCCL group calls (all-CUDA groups with libnccl present).
    Nccl,
    /// `all_reduce` in one step: every member reads every shard in place and folds them itself,
    /// in one fixed order, so every member's result is bitwise identical and nothing hops. For
    /// members that read each other's memory (CUDA peers, virtual CUDA devices of one GPU);
    /// other members get copies first. The other collectives run the star for it.
    OneShot,
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Algorithm::Auto => "auto",
            Algorithm::Star => "star",
            Algorithm::Ring => "ring",
            Algorithm::Nccl => "nccl",
            Algorithm::OneShot => "oneshot",
        })
    }
}

impl std::str::FromStr for Algorithm {
    type Err = crate::Error;

    fn from_str(s: &str) -> crate::Result<Self> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Algorithm::Auto,
            "star" => Algorithm::Star,
            "ring" => Algorithm::Ring,
            "nccl" => Algorithm::Nccl,
            "oneshot" | "one-shot" => Algorithm::OneShot,
            _ => {
                return Err(crate::Error::InvalidArgument {
                    what: "algorithm",
                    msg: format!("{s:?} is not one of auto, star, ring, nccl, oneshot"),
                });
            }
        })
    }
}

/// Bytes per shard from which [`choose`] takes the ring on a group of three or more GPUs of one
/// vendor. Below it the ring's 2(n-1) dependent steps cost more than the leader's extra traffic.
pub const RING_MIN_BYTES: usize = 1 << 20;

/// The algorithm [`Algorithm::Auto`] runs for collective `kind` on a message of `bytes` per shard
/// over `devices`:
///
/// - NCCL when every member is a CUDA device on a GPU of its own, there are two or more, libnccl
///   loads and the collective has an NCCL form — except a broadcast between two GPUs, which one
///   peer copy on the copy engine does faster than NCCL's kernel (measured on 2×H200: `bench/`);
/// - an `all_reduce` over two or more CUDA devices that NCCL cannot take (virtual devices of one
///   GPU, no libnccl): [`Algorithm::OneShot`] for two devices, or below [`RING_MIN_BYTES`] per
///   shard (one kernel per member reading its peers, against the ring's 2(n-1) dependent steps);
/// - otherwise [`choose_native`].
///
/// Where NCCL can run, it is kept until the native kernels are measured faster against it on
/// two GPUs.
pub fn choose(kind: CollectiveKind, devices: &[Device], bytes: usize) -> Algorithm {
    let all_cuda = !devices.is_empty() && devices.iter().all(|d| matches!(d, Device::Cuda(_)));
    let n = devices.len();
    let nccl_form = kind.has_nccl_form() && !(kind == CollectiveKind::Broadcast && n == 2);
    if n >= 2 && all_cuda && nccl_form && crate::backend::nccl_usable(devices) {
        Algorithm::Nccl
    } else if n >= 2 && all_cuda && kind == CollectiveKind::AllReduce && (n == 2 || bytes < RING_MIN_BYTES) {
        Algorithm::OneShot
    } else {
        choose_native(devices, bytes)
    }
}

/// [`choose`] without NCCL (calls that have no NCCL form, or no libnccl):
///
/// - the ring when three or more GPUs all of one vendor carry at least [`RING_MIN_BYTES`];
/// - the star otherwise: mixed vendors (every staged hop goes through the host anyway), groups
///   with host members (virtual CPU devices share one memory, where extra hops only add traffic),
///   two devices and small messages.
pub fn choose_native(devices: &[Device], bytes: usize) -> Algorithm {
    let one_gpu_vendor = devices.iter().all(|d| d.is_gpu() && d.same_vendor(devices[0]));
    if devices.len() >= 3 && one_gpu_vendor && bytes >= RING_MIN_BYTES {
        Algorithm::Ring
    } else {
        Algorithm::Star
    }
}

/// Whether libnccl (and a CUDA driver) can be loaded in this process.
pub fn nccl_available() -> bool {
    crate::backend::nccl_available()
}
