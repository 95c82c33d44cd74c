//! The random cases of the property tests over groups: groups of 1 to 8 devices — virtual CPU
//! devices (distinct ordinals below 16 in any order, so the leader is not always `Cpu(0)`), with
//! the Vulkan device `Vulkan(0)` in a random place in most groups where one works (CPU-only
//! groups otherwise, said once), and `Cuda(0)` in another place in about two of five where one is
//! present (drawn half the time, and not where the Vulkan device is) — random shapes (rank 1 to
//! 3, dims 0 to 9), dims, dtypes, ops and algorithms. The data seed is part of each case, so a
//! failing case prints everything needed to replay it.

use std::sync::OnceLock;

use collectives::{Algorithm, DType, Device, DeviceGroup, Error, ReduceOp};
use proptest::prelude::*;
use rand::rngs::StdRng;

use crate::collective::{ALGORITHMS, DTYPES, all_ops, with_dim};
use crate::{cuda_required, device_works, rng, vulkan_required};

/// One random case.
#[derive(Clone, Debug)]
pub struct Case {
    /// The group size.
    pub n: usize,
    /// The members, in order.
    pub devices: Vec<Device>,
    /// A shard's shape (rank 1 to 3, dims 0 to 9).
    pub shape: Vec<usize>,
    /// The dim the collective splits or joins along.
    pub dim: usize,
    /// The element type.
    pub dtype: DType,
    /// The index of the op in [`all_ops`].
    pub op: usize,
    /// The algorithm the group is made to use.
    pub algo: Algorithm,
    /// The seed of the data (and of anything else a property draws).
    pub seed: u64,
}

impl Case {
    /// The group, using the case's algorithm.
    pub fn group(&self) -> DeviceGroup {
        let g = DeviceGroup::new(self.devices.clone()).expect("distinct devices");
        g.using(self.algo)
    }

    /// A generator seeded with the case's seed.
    pub fn rng(&self) -> StdRng {
        rng(self.seed)
    }

    /// The op, its `PreMulSum` scalar drawn from the seed.
    pub fn op(&self, r: &mut StdRng) -> ReduceOp {
        all_ops(self.dtype, r)[self.op]
    }

    /// The shape with `dim` a multiple of the group size (at most 3 parts each).
    pub fn even_shape(&self) -> Vec<usize> {
        with_dim(&self.shape, self.dim, self.n * (self.shape[self.dim] % 4))
    }
}

/// The Vulkan device a group may hold.
pub const VK: Device = Device::Vulkan(0);

/// Whether `Vulkan(0)` works, asked once ([`device_works`]: said once when it does not, a panic
/// when `REQUIRE_VULKAN=1`).
pub fn have_vulkan() -> bool {
    static HAVE: OnceLock<bool> = OnceLock::new();
    *HAVE.get_or_init(|| device_works(VK, vulkan_required()))
}

/// The CUDA device a group may hold.
pub const CU: Device = Device::Cuda(0);

/// Whether `Cuda(0)` works, asked once ([`device_works`]: said once when it does not, a panic
/// when `REQUIRE_CUDA=1`).
pub fn have_cuda() -> bool {
    static HAVE: OnceLock<bool> = OnceLock::new();
    *HAVE.get_or_init(|| device_works(CU, cuda_required()))
}

/// `r`'s value; `None` (the case is void) for the one error a valid case may meet: a Vulkan
/// member lacking the shader feature of a 64-bit dtype (lavapipe has them all).
pub fn ok<T>(c: &Case, r: collectives::Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(Error::Unsupported { device: VK, dtype: DType::F64 | DType::I64, reason, .. })
            if c.devices.contains(&VK) =>
        {
            println!("{VK} cannot run {}: {reason}", c.dtype);
            None
        }
        Err(e) => panic!("{c:?}: {e}"),
    }
}

/// Random cases: groups of 1 to 8 devices as the module doc says, shapes, dims, dtypes, ops,
/// algorithms (one-shot and two-shot too) and seeds.
pub fn cases() -> impl Strategy<Value = Case> {
    let ordinals: Vec<u32> = (0..16).collect();
    let (vulkan, cuda) = (have_vulkan(), have_cuda());
    let places = (any::<prop::sample::Index>(), any::<prop::sample::Index>());
    let wanted = (prop::bool::weighted(0.75), prop::bool::weighted(0.5));
    let devices = (1usize..=8, wanted, places).prop_flat_map(move |(n, (with_vk, with_cu), (at, cu_at))| {
        prop::sample::subsequence(ordinals.clone(), n).prop_shuffle().prop_map(move |v| {
            let mut d: Vec<Device> = v.into_iter().map(Device::Cpu).collect();
            if vulkan && with_vk {
                d[at.index(n)] = VK;
            }
            let i = cu_at.index(n);
            if cuda && with_cu && d[i] != VK {
                d[i] = CU;
            }
            d
        })
    });
    let shape = prop::collection::vec(0usize..=9, 1..=3);
    (
        devices,
        shape,
        any::<prop::sample::Index>(),
        prop::sample::select(DTYPES.to_vec()),
        0usize..6,
        prop::sample::select([&ALGORITHMS[..], &[Algorithm::OneShot, Algorithm::TwoShot]].concat()),
        any::<u64>(),
    )
        .prop_map(|(devices, shape, dim, dtype, op, algo, seed)| Case {
            n: devices.len(),
            devices,
            dim: dim.index(shape.len()),
            shape,
            dtype,
            op,
            algo,
            seed,
        })
}
