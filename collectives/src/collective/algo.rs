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

    /// Whether the algorithm setting applies (the others have one form; all_to_all takes it on a
    /// group of CUDA devices, [`DeviceGroup::algorithm_for`](crate::DeviceGroup::algorithm_for)).
    pub fn takes_algorithm(self) -> bool {
        self.has_nccl_form()
    }
}

/// The algorithm a collective runs. `reduce`, `all_reduce`, `broadcast`, `all_gather` and
/// `reduce_scatter` take it; `gather`, `scatter`, `scatter_sizes` and `all_to_all` have one form
/// (each part sent straight to where it goes) and ignore it — except `all_to_all` on a group of
/// CUDA devices, one call that takes `Star` or `OneShot` (any other setting runs the one-shot;
/// [`DeviceGroup::algorithm_for`](crate::DeviceGroup::algorithm_for)). On a group of CUDA
/// devices the scatter into contiguous parts is one call of the root, and the gather and reduce
/// are the leader's one kernel reading every shard in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Let [`choose`] decide from the group and the message size.
    Auto,
    /// Through the leader: every shard hops to the leader, which folds them in one n-ary pass and
    /// sends the result out. The simplest shape; the right one for mixed vendors and small messages.
    /// An `all_reduce` or `reduce_scatter` of a group mixing CUDA and Vulkan folds (an
    /// `all_gather` joins) on its first CUDA device where the leader is a Vulkan device
    /// ([`DeviceGroup::star_hub`](crate::DeviceGroup::star_hub)). On a group of CUDA devices
    /// (peers, or virtual devices of one GPU) `all_reduce`, `all_gather`, `broadcast`,
    /// `reduce_scatter` and `all_to_all` (along contiguous parts) are one multi-device call each:
    /// the leader's (the root's) launch reads every shard in place and writes the result straight
    /// into every member's output — the fold, the join (every member's placements in the one
    /// launch up to 128 in all, else one more launch copies it out), the root's tensor, the
    /// fold's parts (each written in the fold's own pass up to 16 members, else folded whole and
    /// copied out by one more launch), every part of every shard (128 a launch) — and a member
    /// whose memory it cannot write copies the leader's output (joins its own parts).
    Star,
    /// Chunked ring: reduce_scatter then all_gather, each chunk hopping device to device, so every
    /// link carries 2(n-1)/n of the message instead of the leader's links carrying all of it.
    Ring,
    /// NCCL group calls (all-CUDA groups with libnccl present).
    Nccl,
    /// One step: every member pulls what it needs from its peers' memory in place. `all_reduce`:
    /// every member folds every shard itself, in one fixed order, so every member's result is
    /// bitwise identical and nothing hops — except a Vulkan member sharing its GPU with a CUDA
    /// member, which takes a copy of that member's fold (on one GPU a Vulkan kernel after CUDA
    /// work waits for the GPU to switch APIs). On a group of CUDA devices (peers, or virtual
    /// devices of one GPU) it is one multi-device call, and `reduce_scatter` (each member folds
    /// its part of every shard, along an outermost `dim`), `all_gather` (each member places every
    /// shard in its output), `broadcast` (each member copies the root's tensor) and `all_to_all`
    /// (each member copies its part of every shard) take it too. Members that cannot read each
    /// other's memory get copies first. On other groups with a GPU, `all_gather` and
    /// `reduce_scatter` take it too: each member joins every shard itself, each copied straight
    /// into its place where the pair allows, and each member folds its part of every shard
    /// itself, each other member's part brought to it once, where the star brings every shard to
    /// the hub and then sends every other part back (a group of host devices runs one call for
    /// either, whatever the algorithm). The other collectives run the star for it.
    OneShot,
    /// `all_reduce` in two steps of one multi-device call, on a group of CUDA devices: member i
    /// folds part i of every shard into its own output (a reduce_scatter in place), then, once
    /// every part is folded (streams wait on the device, not the host), copies every other
    /// member's part from that member's output. Each member reads about two shards' worth instead
    /// of the one-shot's n, so it is the all_reduce for large messages ([`TWO_SHOT_MIN_BYTES`]);
    /// every element is still folded once, so every member's result is bitwise identical. Every
    /// other collective and group runs as for [`Algorithm::OneShot`].
    TwoShot,
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Algorithm::Auto => "auto",
            Algorithm::Star => "star",
            Algorithm::Ring => "ring",
            Algorithm::Nccl => "nccl",
            Algorithm::OneShot => "oneshot",
            Algorithm::TwoShot => "twoshot",
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
            "twoshot" | "two-shot" => Algorithm::TwoShot,
            _ => {
                return Err(crate::Error::InvalidArgument {
                    what: "algorithm",
                    msg: format!("{s:?} is not one of auto, star, ring, nccl, oneshot, twoshot"),
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
/// - otherwise [`choose_without_nccl`].
///
/// Where NCCL can run, it is kept until the native kernels are measured faster against it on
/// two GPUs.
pub fn choose(kind: CollectiveKind, devices: &[Device], bytes: usize) -> Algorithm {
    let n = devices.len();
    let nccl_form = kind.has_nccl_form() && !(kind == CollectiveKind::Broadcast && n == 2);
    if n >= 2 && all_cuda(devices) && nccl_form && crate::backend::nccl_usable(devices) {
        Algorithm::Nccl
    } else {
        choose_without_nccl(kind, devices, bytes)
    }
}

/// Bytes per shard from which [`choose_without_nccl`] takes the two-shot all_reduce on CUDA
/// devices: below it the one-shot's single step costs less than its n-fold reads. Measured on
/// 2, 4 and 8 virtual devices of one H200 (`bench/gpu/15-two-shot`): 16 MiB is the smallest size
/// where the two-shot was faster on all three (at 4 MiB only on two).
pub const TWO_SHOT_MIN_BYTES: usize = 16 << 20;

/// Bytes per shard below which [`choose_without_nccl`] takes the star all_reduce on CUDA devices
/// of more than one GPU (and on three or more, the star reduce_scatter and broadcast; on logical
/// devices of one GPU, [`on_one_gpu`], the star all_reduce at every size and the others below
/// [`ONE_GPU_STAR_MAX_BYTES`]):
/// the leader's one kernel folds every shard and writes every member's output, one launch where
/// the one-shot launches one per member (a launch takes about 4 µs of host time on the H200).
/// On 2, 4 and 8 virtual devices of one H200 (`bench/gpu/23-star`, run b) the star was faster at
/// every size measured, 4 KiB to 16 MiB per shard: at 4 KiB 12.3–13.0 µs against the one-shot's
/// 18.6–22.3 on two devices, 17.3–19.5 against 61.5–84.5 on eight. Those devices share one GPU's
/// memory, where the one-shot reads every shard n times; across GPUs the leader's links carry
/// n − 1 shards each way, as every member's do in the one-shot, so from 1 MiB, where launches
/// no longer dominate, the one-shot stays until two-GPU runs compare them.
pub const CUDA_STAR_MAX_BYTES: usize = 1 << 20;

/// Bytes below which [`choose_without_nccl`] takes the star reduce_scatter, broadcast,
/// all_gather and all_to_all on two or more logical CUDA devices of one GPU ([`on_one_gpu`]): per
/// shard, and for an all_gather of the gathered result (the all_reduce and the reduce take the
/// star there at every size). On 4 and 8 virtual devices of one H200 (`bench/gpu/31-block-flags`, run c) the
/// star was 1.5–3.4 × faster up to 4 MiB (4 MiB per shard for reduce_scatter and broadcast,
/// gathered for all_gather); at 16 MiB the two were within 10 % either way, and at 256 MiB the
/// one-shot was ahead (the reduce_scatter's 1.2–1.4 ×, the broadcast's and all_gather's
/// 1.02–1.08 ×): it splits the work into a launch per member, where the star's one kernel on the
/// leader copies or folds it all. The all_to_all alike on 3, 4 and 8 devices
/// (`bench/gpu/32-one-gpu-reduce`, run c): the star 1.0–2.4 × faster up to 4 MiB per shard (4 KiB
/// on eight: 38.6–39.3 µs against 69.0); at 16 MiB the two within 3 % on three and four, the
/// one-shot 1.2 × faster on eight (81.7–85.9 µs against 100.7); at 256 MiB the one-shot 1.03–1.07 ×;
/// on two (`bench/gpu/33-no-lease-changes`, run a) the star 1.3–1.4 × faster up to 4 MiB. The
/// star reduce_scatter, one launch since `bench/gpu/51-split-fold` (its fold writing each
/// member's part), still trails the one-shot from the bound (run b, H100, µs: on 2, 4 and 8
/// devices 41.2–42.1, 54.0–54.9 and 84.7 against 30.2–41.9, 45.2–46.5 and 71.3–79.6 at 16 MiB
/// per shard; 1.07–1.11 × the one-shot's time at 128 MiB).
pub const ONE_GPU_STAR_MAX_BYTES: usize = 16 << 20;

/// Bytes per shard from which [`choose_without_nccl`] takes the one-shot all_gather on a group
/// of one CUDA device and one host device: each member joins the other's shard, one crossing
/// each way at once, where through the leader the host's shard crosses to the GPU and then the
/// joined result crosses back. Measured on the H200 (`bench/gpu/22-joins`, run c): 2.0–2.1 ×
/// faster with 8 MiB shards, 1.8–1.9 × with 128 MiB shards; 0.9 × with 512 KiB shards. With more
/// members, or a Vulkan one, the star stayed ahead up to 8 MiB shards.
pub const ALL_GATHER_IN_PLACE_MIN_BYTES: usize = 8 << 20;

/// Bytes per shard (the largest, for an all_gather of uneven shards; the root's tensor, for a
/// broadcast or scatter) below which the star collectives and the all_to_all of a group of host
/// and Vulkan devices, at least one of them a host device, run as one host call, as a group of
/// host devices' do: each Vulkan member's shard is copied to a host member, the call runs
/// there, and each Vulkan member's output is copied back (small Vulkan tensors live in memory
/// the host maps, so those are host copies). Only where the star is chosen; the algorithm
/// reported stays [`Algorithm::Star`]. Through the graph, an all_to_all of such a group is a
/// slice, a hop and a join for every part. A group with a CUDA member too is staged so where
/// [`host_stages_cuda`] says, and so is a group of Vulkan and CUDA devices alone, through
/// `cpu:0`.
///
/// On the development machine with lavapipe (`bench/lavapipe-staged-calls`, three rounds, µs):
/// the all_to_all of `cpu:0,cpu:1,cpu:2,vulkan:0` 2.9–4.5 at 4 KiB against 25.6–25.9 through the
/// graph, 17.0–21.6 at 64 KiB against 37.4–40.8, 24.5–38.8 at 96 KiB against 44.2–46.4; of
/// `vulkan:0` and seven host devices 5.5–5.6 at 4 KiB against 85.4–94.2; every collective of
/// four members 1.2–8.9 × faster below the bound. Two members lose on a few rows from 64 KiB:
/// the scatter from `vulkan:0` (5.0–6.8 against 3.8–4.9; the host call copies the whole tensor
/// to the host where the graph copies the host member's part) and the all_to_all at 96 KiB
/// (16.2–17.8 against 13.7–14.2). With the bound raised, a trial build read even at 128 KiB on
/// four members and the graph ahead on two (21.8–22.2 against 16.6–17.8): the graph copies half
/// of each shard where the host call copies all of it twice.
pub const HOST_STAGED_BELOW_BYTES: usize = 128 << 10;

/// Bytes per shard below which the all_to_all of a CUDA device and a host device, the two
/// alone, along strided parts (a dim before it longer than 1: [`cuda_fans_out`] takes the rest)
/// is one host call, the CUDA member staged through the host member; and below which every
/// collective with a host call of a CUDA device and a Vulkan device alone is one (but those
/// [`cuda_fans_out`] takes, and the scatter from the CUDA device), both staged through `cpu:0`
/// (see [`host_stages_cuda`], where the second pair's figures are: staged, it read even or ahead
/// at 16 KiB and partly behind at 32). Through the graph the first pair's all_to_all is a slice,
/// a hop and a join for each of four parts. On one H100 (`bench/gpu/46-cuda-staged`, run b, three rounds, µs, graph
/// against staged): led by `cuda:0`, 4 KiB 24.5–24.8 against 16.1–16.3, 16 KiB 24.8–25.2
/// against 19.0–19.2, 24 KiB 25.3–25.8 against 21.4–21.8, 32 KiB 25.9–26.5 against 24.0–24.4,
/// 48 KiB 27.3–28.0 against 28.0–28.5; led by `cpu:0`, 16 KiB 20.7–20.9 against 18.7–19.1,
/// 24 KiB even (21.1–21.8 against 21.0–21.3), 32 KiB 22.0–22.4 against 24.1–24.4.
pub const HOST_STAGED_CUDA_PAIR_BELOW_BYTES: usize = 24 << 10;

/// Whether a small collective of `kind` (below [`HOST_STAGED_BELOW_BYTES`] a shard, `bytes`;
/// the star chosen; not one [`cuda_fans_out`] takes first) of `devices`, one of them a CUDA
/// device and one a host or Vulkan device, with `hub` the star's hub
/// ([`DeviceGroup::star_hub`](crate::DeviceGroup::star_hub)) or, for a broadcast or scatter, the
/// root, is one host call with each CUDA member staged through a host
/// device, as a Vulkan member is: its shard downloaded, the host call run, its output uploaded.
/// The host device is a host member, or `cpu:0` where there is none. Those two copies are each
/// waited for, so a staged call takes two round trips to the GPU where the graph's CUDA fold or
/// join of a pair takes one; the graph pays instead for each part it slices, hops and joins, and
/// for every Vulkan hop and host fold. CUDA members read each other in place on the graph, so
/// staging two of them only pays where the graph's parts cost most.
///
/// With a host member: of three or more members with one CUDA device, every collective but the
/// all_reduce beside host devices only (folded on the CUDA member, the star's hub whoever leads:
/// [`DeviceGroup::star_hub`](crate::DeviceGroup::star_hub)); with more CUDA devices, the
/// all_to_all; of two members, the all_to_all below [`HOST_STAGED_CUDA_PAIR_BELOW_BYTES`]
/// (along strided parts only: along contiguous ones [`cuda_fans_out`] takes it first).
/// Measured on one H200 (run a, three rounds, µs, graph → staged) and one H100 (run b, two
/// rounds), `bench/gpu/46-cuda-staged`:
/// - the all_to_all at 4 KiB: of `cuda:0,cpu:0,cpu:1,cpu:2` 57.1–82.7 → 17.8–21.4 (H100
///   52.7–53.0 → 17.1), of `cuda:0,vulkan:0,cpu:0` 46.7–57.6 → 17.1–21.0 (44.2–56.0 →
///   16.5–16.7), of `cuda:0,cuda:1,cpu:0` (two virtual devices of the H100) 52.9–53.6 →
///   22.2–22.4, 64 KiB 58.8–59.3 → 45.1–45.3;
/// - the all_reduce of `cpu:0,cpu:1,cpu:2,cuda:0` (then folded on the host leader) at 4 KiB
///   27.7–28.3 → 18.1–21.6 (21.3–22.4 → 17.0), at 64 KiB 55.1–58.9 → 39.1–43.1 (44.0–44.7 →
///   33.0–33.1); on the H100 every staged collective of the three-member and four-member
///   groups with one CUDA device above 1.05–3.1 × faster at 4 and 64 KiB (the mean of two
///   rounds' medians).
///
/// Kept on the graph: the all_reduce of `cuda:0,cpu:0,cpu:1,cpu:2` (4 KiB 18.2–20.9 against
/// 20.1–21.7 staged, 64 KiB 35.6–41.1 against 40.4–44.3), and of `cpu:0,cpu:1,cpu:2,cuda:0`
/// since its hub is the CUDA member (`bench/gpu/49-pair-calls`, run b, H100: 4 KiB 18.6–19.3
/// against 18.1–20.0 staged, 64 KiB 36.6–37.9 against 37.7–41.2), every other collective of a
/// pair (`cuda:0,cpu:0` all_reduce 15.1–15.6 against 17.1–20.5, all_gather at 64 KiB 17.7–19.0
/// against 32.3–33.5), and all but the all_to_all of `cuda:0,cuda:1,cpu:0` (its all_gather at
/// 64 KiB 24.3–25.3 against 36.6–36.8 staged, its reduce_scatter 32.6–32.9 against 40.2–41.4).
/// One row of the rule lost on the H200: the all_gather of `cuda:0,cpu:0,cpu:1,cpu:2` at
/// 96 KiB, 28.8–32.2 against 33.4–39.5 staged (at 4 and 64 KiB it gains: 20.8–22.0 →
/// 17.4–21.2, 35.7–38.5 → 27.9–33.7; on the H100 at 64 KiB 32.7–32.8 → 27.0–27.1).
///
/// With no host member (a CUDA device and a Vulkan device, whose small tensors reach each other
/// through the host), staged through `cpu:0`: of two members, every collective below
/// [`HOST_STAGED_CUDA_PAIR_BELOW_BYTES`] but the scatter from the CUDA member; with two CUDA
/// devices, the all_to_all and the broadcast; with one, as with a host member. Measured on one
/// H100 (`bench/gpu/47-vulkan-pair`, run a, three rounds, µs, graph → staged), at 4 KiB:
/// - `cuda:0,vulkan:0`: all_to_all 30.1–37.2 → 19.8–20.6, reduce_scatter 25.2–28.6 →
///   19.8–20.7, all_reduce 20.3–32.9 → 18.2–21.1, broadcast 12.4–14.3 → 10.9–11.4;
/// - `vulkan:0,cuda:0`: all_to_all 36.9–39.2 → 21.2–23.0, reduce_scatter 29.5–30.4 →
///   21.2–23.3, scatter 15.4–16.3 → 12.0–13.1, broadcast 13.3–14.0 → 10.7–11.9;
/// - `cuda:0,cuda:1,vulkan:0` (virtual devices): all_to_all 69.0–92.4 → 25.3–31.1 (64 KiB
///   77.1–100.3 → 50.6–59.0), broadcast 19.4–24.5 → 15.5–17.0 (64 KiB 24.8–30.1 → 19.2–20.3).
///
/// At 16 KiB the pair's staged collectives read even or ahead; at 32 KiB its Vulkan-led
/// all_reduce lost (30.2–31.9 against 32.2–33.8 staged), and from 64 KiB its all_reduce and
/// all_gather (`cuda:0,vulkan:0` all_gather 29.2–31.0 against 32.6–34.8). The scatter from
/// `cuda:0` lost at 4 KiB (12.5–15.5 against 15.6–16.4): staged, its own part comes back up.
/// The all_reduce, all_gather and reduce_scatter of `cuda:0,cuda:1,vulkan:0` read even at 4 KiB
/// and lost at 64 KiB (all_gather 34.9–41.0 against 45.3–49.5). The rule built, against the
/// graph (run b, another H100, two rounds): at 4 KiB every collective it stages 1.04–2.6 ×
/// faster; at 16 KiB all but the Vulkan-led all_gather (18.4–18.6 against 19.5–19.8) and
/// all_reduce (21.5–21.6 against 21.7–22.1).
pub fn host_stages_cuda(kind: CollectiveKind, devices: &[Device], hub: Device, bytes: usize) -> bool {
    let cuda = devices.iter().filter(|d| matches!(d, Device::Cuda(_))).count();
    let vulkan = devices.iter().any(|d| matches!(d, Device::Vulkan(_)));
    let host = devices.iter().any(|d| d.is_host());
    let cuda_hub = matches!(hub, Device::Cuda(_));
    let cuda_fold = kind == CollectiveKind::AllReduce && cuda_hub && !vulkan;
    let all_to_all = kind == CollectiveKind::AllToAll;
    let pair = bytes < HOST_STAGED_CUDA_PAIR_BELOW_BYTES;
    match (devices.len(), cuda) {
        (2, _) if host => all_to_all && pair,
        (2, _) => pair && !(kind == CollectiveKind::Scatter && cuda_hub),
        (_, 1) => !cuda_fold,
        _ => all_to_all || (!host && kind == CollectiveKind::Broadcast),
    }
}

/// Members of the largest group whose small all_to_all [`cuda_fans_out`] takes. The join of n
/// members' shards is n rows of n placements, written to the CUDA device and to one host copy:
/// 2n² contiguous copies, which the CUDA backend's segment copy kernel places in one launch up to
/// eight members (128). From five members the fanned call lost to the staged one all the same:
/// its kernel reads every host shard across the bus and writes the whole join back across it,
/// where the staged call moves the host members' parts in host memory. On one H100
/// (`bench/gpu/56-wide-segments`, run a, three rounds, µs, staged → fanned in one launch):
/// `cuda:0,cpu:0..6` 21.8–26.1 → 25.1–28.7 at 4 KiB, 29.4–34.4 → 34.4–39.1 at 16 KiB,
/// 60.2–63.7 → 73.5–80.5 at 64 KiB; `cpu:0..6,cuda:0` likewise behind; `cuda:0,cpu:0..3` even at
/// 4 KiB (18.9–25.5 against 18.9–20.7), behind in two rounds of three from 16 KiB. Before the
/// kernel's wide form, a launch per shard, it lost by more (`bench/gpu/50-all-to-all`, run a:
/// `cuda:0,cpu:0..3` 23.9–26.8 → 35.6–41.1 at 4 KiB).
pub const FANNED_ALL_TO_ALL_MAX_MEMBERS: usize = 4;

/// Whether the small star collective `kind` of `devices` (every shard below
/// [`HOST_STAGED_BELOW_BYTES`], the largest `bytes`) is one kernel of the group's one CUDA device,
/// its result delivered to every other member in the kernel's pass (`backend/fanned.rs`): the
/// all_reduce, all_gather and reduce_scatter of one CUDA device and host or Vulkan devices,
/// either a pair with a Vulkan member or three or more with none; of a CUDA device and a host
/// device alone, the reduce_scatter; the all_to_all of a pair, or of up to
/// [`FANNED_ALL_TO_ALL_MAX_MEMBERS`] with no Vulkan member (its kernel joins the shards' rows,
/// row j of each its part j, so member j's output is the join's range j). The kernel reads the
/// host shards in place (a Vulkan shard, in host memory at these sizes, copied to the host
/// first) and writes one copy of its result to the host, of which each host member's output is a
/// view and each Vulkan member's a copy: one round trip to the GPU, issued directly, where a call
/// staged through the host ([`host_stages_cuda`]) takes two and the graph pays for its pass, its
/// schedule and a launch per part. Taken before [`host_stages_cuda`] is asked.
///
/// Measured on one H100 (`bench/gpu/49-pair-calls`, run e, three rounds, µs, before → fanned):
/// - `vulkan:0,cuda:0` (staged below 24 KiB, the graph above): all_reduce 22.6–23.4 → 16.8–19.1
///   at 4 KiB, 38.2–41.9 → 32.1–36.7 at 64 KiB; all_gather 26.1–31.1 → 17.8–19.7 at 16 KiB;
///   reduce_scatter 44.1–48.4 → 30.8–32.6 at 64 KiB;
/// - `cuda:0,vulkan:0`: even at 4 and 16 KiB (all_reduce 18.4–24.7 → 18.3–19.2 at 4 KiB), ahead
///   from 64 KiB (reduce_scatter 38.8–44.2 → 31.4–33.7, all_gather 30.2–35.5 → 26.9–28.5);
/// - `cuda:0,cpu:0,cpu:1,cpu:2` (staged, its all_reduce the graph): all_gather 38.8–43.8 →
///   26.7–29.4 at 96 KiB, reduce_scatter 22.2–23.7 → 18.5–20.3 at 4 KiB, all_reduce 20.6–22.1 →
///   18.8–20.8;
/// - `cpu:0,cuda:0` and `cuda:0,cpu:0` (the graph): the reduce_scatter 19.4–20.4 → 16.0–18.5 at
///   4 KiB, 27.5–28.6 → 23.0–25.4 at 64 KiB. Their all_reduce and all_gather, which the graph
///   already issues as one kernel with its host copy, stay there: fanned they read even or up
///   to about 2 µs behind at 4–16 KiB (run f, against the graph: the all_reduce of
///   `cuda:0,cpu:0` 14.6–15.9 → 15.2–17.7 at 4 KiB, its all_gather 14.5–15.3 → 15.4–17.9).
/// - the all_to_all of the pairs (staged below 24 KiB, the graph above; H100,
///   `bench/gpu/50-all-to-all` run a): `cuda:0,cpu:0` 17.9–20.7 → 16.1–17.9 at 4 KiB,
///   37.3–39.5 → 23.4–26.1 at 64 KiB; `cpu:0,cuda:0` 20.5–21.3 → 16.6–18.1, 33.1–34.3 →
///   23.4–27.7; `vulkan:0,cuda:0` 22.0–23.0 → 19.1–21.0, 43.4–46.7 → 32.8–35.7;
///   `cuda:0,vulkan:0` even at 4 KiB (20.4–21.7 → 20.2–21.2), ahead from 16 KiB (42.8–47.5 →
///   33.3–36.3 at 64 KiB);
/// - the all_to_all of three and four members with no Vulkan one (staged; run e, after the
///   segment copy kernel learned to copy its segments side by side): `cuda:0,cpu:0,cpu:1`
///   21.8–22.2 → 19.1–21.3 at 4 KiB, 43.4–46.8 → 36.3–37.2 at 64 KiB;
///   `cpu:0,cpu:1,cpu:2,cuda:0` 22.5–22.6 → 21.3–22.8, 48.9–50.4 → 43.6–44.8;
///   `cuda:0,cpu:0,cpu:1,cpu:2` even at 4 and 16 KiB (21.0–22.4 → 21.2–22.4), ahead at 64 KiB
///   (45.6–47.9 → 43.7–45.8). At 4 KiB it is even at best: run f (against 5335161, another
///   lease) read `cuda:0,cpu:0,cpu:1` behind there (17.3–17.7 → 18.8–19.6), ahead at 64 KiB
///   (36.8–40.4 → 33.7–35.0). Of five it lost (run a, `cuda:0,cpu:0..3` 23.9–26.8 → 35.6–41.1
///   at 4 KiB): see [`FANNED_ALL_TO_ALL_MAX_MEMBERS`].
///
/// Left staged: three or more members with a Vulkan one, where the fanned call read even or
/// behind at 4–16 KiB (`cuda:0,vulkan:0,cpu:0` all_gather 20.9–27.0 → 24.4–24.8 at 16 KiB,
/// reduce_scatter 20.5–27.1 → 24.4–27.7) and ahead only on some rows from 64 KiB.
pub fn cuda_fans_out(kind: CollectiveKind, devices: &[Device], bytes: usize) -> bool {
    use CollectiveKind::{AllGather, AllReduce, AllToAll, ReduceScatter};
    let cuda = devices.iter().filter(|d| matches!(d, Device::Cuda(_))).count();
    let vulkan = devices.iter().filter(|d| matches!(d, Device::Vulkan(_))).count();
    let hosts = devices.iter().filter(|d| d.is_host()).count();
    let members = cuda == 1 && cuda + vulkan + hosts == devices.len();
    let shape = match (devices.len(), kind) {
        (2, ReduceScatter | AllToAll) => true,
        (2, AllReduce | AllGather) => vulkan == 1,
        (3.., AllReduce | AllGather | ReduceScatter) | (3..=FANNED_ALL_TO_ALL_MAX_MEMBERS, AllToAll) => {
            vulkan == 0
        }
        _ => false,
    };
    members && shape && bytes < HOST_STAGED_BELOW_BYTES
}

/// What [`choose`] takes where NCCL does not run (virtual devices of one GPU, no libnccl, a call
/// NCCL has no form for). On two or more logical CUDA devices of one GPU ([`on_one_gpu`]), the
/// star all_reduce at every size: the leader's one pass moves the least of that one memory — on 2,
/// 4 and 8 virtual devices of one H200 (`bench/gpu/31-block-flags`, run c) 1.2–1.4 × faster than
/// the best of the one-shot and two-shot at 256 MiB per shard, 1.05–3.9 × from 1 to 16 MiB. The
/// star reduce at every size too: the root's one kernel reads every shard in place, where the ring
/// (which [`choose_native`] takes from [`RING_MIN_BYTES`] on three or more GPUs) moves each shard
/// through dependent steps in that same memory — on 3, 4 and 8 virtual devices of one H200
/// (`bench/gpu/32-one-gpu-reduce`, run a) 1.5–5.5 × faster from 4 KiB to 256 MiB per shard (on
/// eight, 571–581 µs against the ring's 1440 at 256 MiB). The star broadcast and all_gather
/// below [`ONE_GPU_STAR_MAX_BYTES`] (the all_gather's gathered), the one-shot from it, on two
/// devices too: there the one-shot's launch per member lost to the leader's one launch (two
/// virtual devices of one H100, `bench/gpu/50-all-to-all`, µs: run e, one binary, one-shot
/// against star, all_gather 20.0–26.9 against 13.6–14.2 at 4 KiB, 22.7–22.8 against 17.3–18.6
/// at 4 MiB, broadcast 13.6–14.5 against 11.4–12.5 at 4 KiB; run f, against 5335161 under
/// `Auto`, all_gather 15.9–19.8 → 11.0–13.7, broadcast 11.2–12.8 → 9.9–11.4). The star
/// reduce_scatter below that bound on two or more: its one launch folds every shard and writes
/// each member's part into its output. On two it took the one-shot while the star's fold and
/// the copy of its parts were two launches, one after the other; as one launch it led at every
/// size up to 1 MiB per shard (two virtual devices of one H100, `bench/gpu/51-split-fold`, run b,
/// three rounds: 11.7–12.9 µs against the one-shot's 14.5–14.8 at 4 KiB, 13.5–13.7 against
/// 15.8–16.4 at 1 MiB), and the one-shot stays ahead from the bound (30.2–41.9 µs against
/// 41.2–42.1 at 16 MiB, 151.7–151.8 against 167.9–168.1 at 128 MiB; on four and eight
/// alike). The star all_to_all below [`ONE_GPU_STAR_MAX_BYTES`] on
/// two or more (its launches copy 16 parts each, where the one-shot launches once per member:
/// on two virtual devices of one H200 12.6–14.7 µs against 17.7–19.8 from 4 KiB to 4 MiB per
/// shard, even at 16 MiB, 1 % slower at 256 MiB; `bench/gpu/33-no-lease-changes`, run a), the
/// one-shot from it.
///
/// On two or more CUDA devices of more than one GPU, one multi-device call where one is measured
/// faster:
///
/// - all_reduce: [`Algorithm::Star`] below [`CUDA_STAR_MAX_BYTES`] per shard (one launch, on the
///   leader), [`Algorithm::TwoShot`] from [`TWO_SHOT_MIN_BYTES`] (each member reads about two
///   shards' worth), else [`Algorithm::OneShot`] (every member reads every shard, in one step);
/// - reduce_scatter and broadcast: [`Algorithm::Star`] on three or more devices below
///   [`CUDA_STAR_MAX_BYTES`] (the root's one or two launches instead of one per member), else
///   [`Algorithm::OneShot`] (each member reads only its share, as in a ring, without the ring's
///   dependent steps). On 4 and 8 virtual devices of one H200 the star took 12.8–28.7 µs up to
///   1 MiB against the one-shot's 22.9–84.3 (`bench/gpu/23-star`, run d); on two devices the
///   one-shot's single member launch or peer copy was as fast or faster there (broadcast
///   11.3–13.6 against 12.3–14.0, reduce_scatter 16.6–22.0 against 18.6–22.2), which run 50e
///   no longer found on one GPU (above); across two GPUs it stands unmeasured since;
/// - all_gather: [`Algorithm::OneShot`] on two devices or from [`RING_MIN_BYTES`] per shard, else
///   [`Algorithm::Star`] (one call: the leader's concat and one launch copying it out; 16.7–28.7
///   µs up to 1 MiB on 4 and 8 virtual devices against the one-shot's 29.4–62.6, run d);
/// - all_to_all (one call along contiguous parts): [`Algorithm::OneShot`] (each member copies
///   its part of every shard over its own links).
///
/// On a CUDA device and a host device, all_gather: [`Algorithm::OneShot`] from
/// [`ALL_GATHER_IN_PLACE_MIN_BYTES`] per shard (each member joins the other's shard).
///
/// Everything else, and other groups: [`choose_native`].
pub fn choose_without_nccl(kind: CollectiveKind, devices: &[Device], bytes: usize) -> Algorithm {
    let n = devices.len();
    if kind == CollectiveKind::AllGather && cuda_and_host(devices) && bytes >= ALL_GATHER_IN_PLACE_MIN_BYTES {
        return Algorithm::OneShot;
    }
    if n < 2 || !all_cuda(devices) {
        return choose_native(devices, bytes);
    }
    cuda_choice(kind, n, bytes, on_one_gpu(devices)).unwrap_or_else(|| choose_native(devices, bytes))
}

/// [`choose_without_nccl`] on `n` (two or more) CUDA devices, all logical devices of one GPU or
/// not (`one_gpu`); `None` for what [`choose_native`] decides.
fn cuda_choice(kind: CollectiveKind, n: usize, bytes: usize, one_gpu: bool) -> Option<Algorithm> {
    use CollectiveKind::{AllGather, AllReduce, AllToAll, Broadcast, Reduce, ReduceScatter};
    // Devices sharing one GPU's memory and multiprocessors: the all_reduce's one pass on the
    // leader moves the least memory at every size, the others' one launch wins up to
    // ONE_GPU_STAR_MAX_BYTES moved; across GPUs the star only while launches dominate. The
    // reduce's star (the root's kernel reading every shard in place) has no other native form.
    let moved = if kind == AllGather { bytes.saturating_mul(n) } else { bytes };
    let star = match one_gpu {
        true => kind == AllReduce || moved < ONE_GPU_STAR_MAX_BYTES,
        false => bytes < CUDA_STAR_MAX_BYTES,
    };
    Some(match kind {
        AllReduce if star => Algorithm::Star,
        Reduce if one_gpu => Algorithm::Star,
        AllReduce if bytes >= TWO_SHOT_MIN_BYTES => Algorithm::TwoShot,
        ReduceScatter | Broadcast if (n > 2 || one_gpu) && star => Algorithm::Star,
        AllReduce | ReduceScatter | Broadcast => Algorithm::OneShot,
        AllGather if one_gpu && star => Algorithm::Star,
        AllGather if n == 2 || one_gpu || bytes >= RING_MIN_BYTES => Algorithm::OneShot,
        AllToAll if one_gpu && star => Algorithm::Star,
        AllToAll => Algorithm::OneShot,
        _ => return None,
    })
}

/// Whether `devices` are two or more logical CUDA devices of one physical GPU (mapped so by
/// `COLLECTIVES_CUDA_DEVICES`): they share one memory and one set of multiprocessors, so
/// [`choose_without_nccl`] takes the star at sizes where, across GPUs, it would spread the work.
/// `false` where any member is not a CUDA device or has no GPU (no driver, or not mapped).
pub fn on_one_gpu(devices: &[Device]) -> bool {
    crate::backend::on_one_gpu(devices)
}

/// Whether `devices` are one CUDA device and one host device, in either order.
fn cuda_and_host(devices: &[Device]) -> bool {
    matches!(devices, [a, b] if (a.is_host() && matches!(b, Device::Cuda(_))) || (b.is_host() && matches!(a, Device::Cuda(_))))
}

/// Whether every one of `devices` (at least one) is a CUDA device.
fn all_cuda(devices: &[Device]) -> bool {
    !devices.is_empty() && devices.iter().all(|d| matches!(d, Device::Cuda(_)))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// On logical devices of one GPU: the star all_reduce and reduce at every size; the star
    /// broadcast, all_gather and all_to_all below ONE_GPU_STAR_MAX_BYTES (the all_gather's
    /// gathered), the one-shot from it, on two devices too; the reduce_scatter so on three or
    /// more, on two the one-shot. Across GPUs the thresholds hold.
    #[test]
    fn one_gpu_takes_the_star_where_it_moves_least() {
        use CollectiveKind::{AllGather, AllReduce, Broadcast, ReduceScatter};
        let top = ONE_GPU_STAR_MAX_BYTES;
        let sizes = [0, 1, CUDA_STAR_MAX_BYTES, top - 1, top, 1 << 30];
        for bytes in sizes {
            for n in [2, 3, 8] {
                assert_eq!(cuda_choice(AllReduce, n, bytes, true), Some(Algorithm::Star), "{n} {bytes}");
                for kind in [ReduceScatter, Broadcast, AllGather] {
                    let moved = if kind == AllGather { bytes * n } else { bytes };
                    let want = if moved < top { Algorithm::Star } else { Algorithm::OneShot };
                    assert_eq!(cuda_choice(kind, n, bytes, true), Some(want), "{kind:?} {n} {bytes}");
                }
            }
        }
        assert_eq!(cuda_choice(AllGather, 8, top / 8 - 1, true), Some(Algorithm::Star), "gathered below");
        assert_eq!(cuda_choice(AllGather, 8, top / 8, true), Some(Algorithm::OneShot), "gathered at");
        let across = |kind, n, bytes| cuda_choice(kind, n, bytes, false);
        assert_eq!(across(AllReduce, 8, CUDA_STAR_MAX_BYTES - 1), Some(Algorithm::Star));
        assert_eq!(across(AllReduce, 8, CUDA_STAR_MAX_BYTES), Some(Algorithm::OneShot));
        assert_eq!(across(AllReduce, 8, TWO_SHOT_MIN_BYTES), Some(Algorithm::TwoShot));
        assert_eq!(across(ReduceScatter, 3, CUDA_STAR_MAX_BYTES - 1), Some(Algorithm::Star));
        assert_eq!(across(ReduceScatter, 3, CUDA_STAR_MAX_BYTES), Some(Algorithm::OneShot));
        assert_eq!(across(ReduceScatter, 2, 1), Some(Algorithm::OneShot));
        assert_eq!(across(AllGather, 3, RING_MIN_BYTES - 1), None, "the star, by choose_native");
        assert_eq!(across(AllGather, 3, RING_MIN_BYTES), Some(Algorithm::OneShot));
        assert_eq!(across(AllGather, 2, 1), Some(Algorithm::OneShot));
        for bytes in sizes {
            for n in [2, 3, 8] {
                let want = if bytes < top { Algorithm::Star } else { Algorithm::OneShot };
                assert_eq!(cuda_choice(CollectiveKind::AllToAll, n, bytes, true), Some(want), "{n} {bytes}");
                let across = cuda_choice(CollectiveKind::AllToAll, n, bytes, false);
                assert_eq!(across, Some(Algorithm::OneShot), "{n} {bytes}");
            }
            assert_eq!(cuda_choice(CollectiveKind::Reduce, 3, bytes, true), Some(Algorithm::Star), "{bytes}");
            assert_eq!(cuda_choice(CollectiveKind::Reduce, 3, bytes, false), None, "choose_native's");
        }
    }
}
