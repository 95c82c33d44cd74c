//! The process-wide table of opened backends, one per device, opened on first use.

use std::sync::{Arc, OnceLock};

use foldhash::HashMap;
use parking_lot::Mutex;

use super::Backend;
use crate::device::{Device, DeviceKind};
use crate::error::{Error, Result};

type Table = Mutex<HashMap<Device, std::result::Result<Arc<dyn Backend>, Error>>>;

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(Default::default)
}

/// The backend driving `device`, opening it on first use. A device whose driver is absent keeps
/// answering with the same error (drivers do not appear mid-process); other failures are retried.
pub(crate) fn get(device: Device) -> Result<Arc<dyn Backend>> {
    if let Some(found) = table().lock().get(&device) {
        return found.clone();
    }
    let opened = open(device);
    let keep = match &opened {
        Ok(_) | Err(Error::DeviceUnavailable { .. } | Error::BackendNotBuilt { .. }) => true,
        Err(_) => false,
    };
    let mut t = table().lock();
    if keep {
        // Another thread may have opened it meanwhile: keep the first.
        return t.entry(device).or_insert(opened).clone();
    }
    opened
}

/// Every backend opened so far.
#[cfg(feature = "failpoints")]
pub(crate) fn opened() -> Vec<Arc<dyn Backend>> {
    table().lock().values().filter_map(|b| b.as_ref().ok().cloned()).collect()
}

fn open(device: Device) -> Result<Arc<dyn Backend>> {
    match device {
        Device::Cpu(n) => Ok(Arc::new(super::cpu::CpuBackend::new(n))),
        #[cfg(feature = "cuda")]
        Device::Cuda(n) => super::cuda::open(n),
        #[cfg(not(feature = "cuda"))]
        Device::Cuda(_) => Err(Error::BackendNotBuilt { device, feature: "cuda" }),
        #[cfg(feature = "vulkan")]
        Device::Vulkan(n) => super::vulkan::open(n),
        #[cfg(not(feature = "vulkan"))]
        Device::Vulkan(_) => Err(Error::BackendNotBuilt { device, feature: "vulkan" }),
    }
}

/// How many devices of `kind` this machine has (the virtual CPU count for `Cpu`); 0 when the
/// driver is absent.
pub(crate) fn device_count(kind: DeviceKind) -> u32 {
    match kind {
        DeviceKind::Cpu => crate::device::cpu_device_count(),
        #[cfg(feature = "cuda")]
        DeviceKind::Cuda => super::cuda::device_count(),
        #[cfg(not(feature = "cuda"))]
        DeviceKind::Cuda => 0,
        #[cfg(feature = "vulkan")]
        DeviceKind::Vulkan => super::vulkan::device_count(),
        #[cfg(not(feature = "vulkan"))]
        DeviceKind::Vulkan => 0,
    }
}

/// The driver's name of `device` and whether it is a software device (a Vulkan device on the
/// CPU, as lavapipe), asked without opening it; `None` for a device this machine lacks. Host
/// devices are named `host memory`.
pub(crate) fn device_name(device: Device) -> Option<(String, bool)> {
    match device {
        Device::Cpu(n) if n < crate::device::cpu_device_count() => Some(("host memory".into(), false)),
        Device::Cpu(_) => None,
        #[cfg(feature = "cuda")]
        Device::Cuda(n) if n < super::cuda::device_count() => super::cuda::device_name(n).map(|s| (s, false)),
        #[cfg(feature = "vulkan")]
        Device::Vulkan(n) => super::vulkan::device_name(n),
        #[allow(unreachable_patterns)] // every kind is covered when both backends are built
        _ => None,
    }
}

/// Why this machine lists no device of `kind` (the driver's or loader's words, or the missing
/// cargo feature); `None` when it lists some. Host devices are never missing.
pub(crate) fn unavailable_reason(kind: DeviceKind) -> Option<String> {
    match kind {
        DeviceKind::Cpu => None,
        #[cfg(feature = "cuda")]
        DeviceKind::Cuda => super::cuda::unavailable_reason(),
        #[cfg(not(feature = "cuda"))]
        DeviceKind::Cuda => Some("this build has no CUDA backend (cargo feature \"cuda\")".into()),
        #[cfg(feature = "vulkan")]
        DeviceKind::Vulkan => super::vulkan::unavailable_reason(),
        #[cfg(not(feature = "vulkan"))]
        DeviceKind::Vulkan => Some("this build has no Vulkan backend (cargo feature \"vulkan\")".into()),
    }
}

/// Whether NCCL can be used in this process (libnccl and a CUDA driver load).
pub(crate) fn nccl_available() -> bool {
    #[cfg(feature = "cuda")]
    return super::cuda::nccl::nccl_available();
    #[cfg(not(feature = "cuda"))]
    false
}

/// Whether `devices` are two or more logical CUDA devices of one physical GPU (the mapping of
/// `COLLECTIVES_CUDA_DEVICES`); `false` where any is not a CUDA device or has no GPU.
pub(crate) fn on_one_gpu(devices: &[Device]) -> bool {
    #[cfg(feature = "cuda")]
    return super::cuda::on_one_gpu(devices);
    #[cfg(not(feature = "cuda"))]
    {
        let _ = devices;
        false
    }
}

/// Whether NCCL can run a clique of `devices` (CUDA devices on distinct GPUs, NCCL available).
pub(crate) fn nccl_usable(devices: &[Device]) -> bool {
    #[cfg(feature = "cuda")]
    return super::cuda::nccl::nccl_usable(devices);
    #[cfg(not(feature = "cuda"))]
    {
        let _ = devices;
        false
    }
}
