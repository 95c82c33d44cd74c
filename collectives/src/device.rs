//! Devices: where a tensor lives, and which devices this machine has.
//!
//! A `Device` is a plain value (kind + ordinal), so graphs naming CUDA or Vulkan devices can be
//! built, rewritten and planned on machines that have neither; only realizing touches hardware.
//! `Cpu(n)` are *virtual* host devices, as JAX's host device count: each has its own buffers and a
//! copy between two of them is a real copy, so N-device code runs and is tested anywhere.
//!
//! ```
//! use collectives::{Device, DeviceKind};
//! let d: Device = "cuda:1".parse()?;
//! assert_eq!(d, Device::Cuda(1));
//! assert_eq!(d.kind(), DeviceKind::Cuda);
//! assert!(d.is_gpu() && !d.is_host());
//! assert_eq!(Device::Vulkan(0).to_string(), "vulkan:0");
//! # Ok::<(), collectives::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Environment variable giving how many virtual CPU devices
/// [`available_devices`](crate::available_devices) lists.
pub const CPU_DEVICES_ENV: &str = "COLLECTIVES_CPU_DEVICES";

/// How many virtual CPU devices [`available_devices`](crate::available_devices) lists when
/// [`CPU_DEVICES_ENV`] is unset.
pub const DEFAULT_CPU_DEVICES: u32 = 4;

/// A device a tensor can live on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Device {
    /// Virtual host device `n`: host memory, its own buffers. Any ordinal is valid.
    Cpu(u32),
    /// CUDA device `n`, in the driver's ordinal order.
    Cuda(u32),
    /// Vulkan physical device `n`, in the loader's enumeration order.
    Vulkan(u32),
}

/// The kind of a device, without its ordinal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceKind {
    /// Host memory.
    Cpu,
    /// An NVIDIA GPU through CUDA.
    Cuda,
    /// A GPU through Vulkan.
    Vulkan,
}

impl DeviceKind {
    /// The lower-case name used in device strings (`cpu`, `cuda`, `vulkan`).
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
            DeviceKind::Vulkan => "vulkan",
        }
    }

    /// What to install or set to get devices of this kind (empty for the always-present host):
    /// the fix that [`Error::DeviceUnavailable`] and the discovery report print.
    pub fn install_hint(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "",
            DeviceKind::Cuda => {
                "CUDA devices need the NVIDIA driver: install it (no CUDA toolkit is needed) and make \
                 libcuda.so.1 findable (ldconfig, or LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu or the \
                 driver's folder); COLLECTIVES_CUDA_DEVICES maps logical devices onto GPUs"
            }
            DeviceKind::Vulkan => {
                "Vulkan devices need the loader and a driver: `apt-get install libvulkan1 \
                 mesa-vulkan-drivers` (Mesa; lavapipe is a software device that runs anywhere) or \
                 your GPU vendor's driver; VK_DRIVER_FILES=/usr/share/vulkan/icd.d/<driver>.json \
                 picks a driver"
            }
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Device {
    /// The device's kind.
    pub fn kind(self) -> DeviceKind {
        match self {
            Device::Cpu(_) => DeviceKind::Cpu,
            Device::Cuda(_) => DeviceKind::Cuda,
            Device::Vulkan(_) => DeviceKind::Vulkan,
        }
    }

    /// The device's ordinal within its kind.
    pub fn ordinal(self) -> u32 {
        match self {
            Device::Cpu(n) | Device::Cuda(n) | Device::Vulkan(n) => n,
        }
    }

    /// Whether this is host memory (a virtual CPU device).
    pub fn is_host(self) -> bool {
        matches!(self, Device::Cpu(_))
    }

    /// Whether this is a GPU (CUDA or Vulkan).
    pub fn is_gpu(self) -> bool {
        !self.is_host()
    }

    /// Whether both devices are driven by the same backend (same kind).
    pub fn same_vendor(self, other: Device) -> bool {
        self.kind() == other.kind()
    }

    /// Whether a copy between the two must be staged through the host: both are GPUs of
    /// different vendors (CUDA↔Vulkan). Every other pair is one direct hop.
    pub fn needs_staging(self, other: Device) -> bool {
        self.is_gpu() && other.is_gpu() && !self.same_vendor(other)
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind(), self.ordinal())
    }
}

impl FromStr for Device {
    type Err = Error;

    /// Parses `cpu:N`, `cuda:N` or `vulkan:N` (case-insensitive); a bare kind means ordinal 0.
    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::UnknownDevice(s.to_string());
        let lower = s.trim().to_ascii_lowercase();
        let (kind, ord) = match lower.split_once(':') {
            Some((k, n)) => (k, n.parse::<u32>().map_err(|_| bad())?),
            None => (lower.as_str(), 0),
        };
        match kind {
            "cpu" => Ok(Device::Cpu(ord)),
            "cuda" => Ok(Device::Cuda(ord)),
            "vulkan" => Ok(Device::Vulkan(ord)),
            _ => Err(bad()),
        }
    }
}

/// Parses a comma-separated device list such as `cuda:0,cuda:1,cpu:0`.
pub fn parse_devices(s: &str) -> Result<Vec<Device>> {
    s.split(',').filter(|p| !p.trim().is_empty()).map(str::parse).collect()
}

/// How many virtual CPU devices discovery lists: [`CPU_DEVICES_ENV`] if set to a positive
/// integer, else [`DEFAULT_CPU_DEVICES`] (any other value is warned about once on stderr).
pub fn cpu_device_count() -> u32 {
    crate::knob::var(CPU_DEVICES_ENV, "a positive integer", |&n: &u32| n > 0).unwrap_or(DEFAULT_CPU_DEVICES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display_round_trip() {
        for d in [Device::Cpu(3), Device::Cuda(0), Device::Vulkan(12)] {
            assert_eq!(d.to_string().parse::<Device>().unwrap(), d);
        }
        assert_eq!("CUDA:2".parse::<Device>().unwrap(), Device::Cuda(2));
        assert_eq!("cpu".parse::<Device>().unwrap(), Device::Cpu(0));
    }

    #[test]
    fn unknown_strings_are_errors() {
        for s in ["gpu:0", "cuda:-1", "cuda:x", "", "vulkan:1:2"] {
            assert_eq!(s.parse::<Device>(), Err(Error::UnknownDevice(s.into())), "{s}");
        }
    }

    #[test]
    fn staging_only_across_gpu_vendors() {
        assert!(Device::Cuda(0).needs_staging(Device::Vulkan(0)));
        assert!(Device::Vulkan(1).needs_staging(Device::Cuda(1)));
        assert!(!Device::Cuda(0).needs_staging(Device::Cuda(1)));
        assert!(!Device::Cpu(0).needs_staging(Device::Vulkan(0)));
        assert!(!Device::Cuda(0).needs_staging(Device::Cpu(2)));
    }

    #[test]
    fn device_lists_parse() {
        let v = parse_devices("cpu:0, cuda:1,vulkan:0").unwrap();
        assert_eq!(v, vec![Device::Cpu(0), Device::Cuda(1), Device::Vulkan(0)]);
        assert!(parse_devices("cpu:0,tpu:1").is_err());
    }
}
