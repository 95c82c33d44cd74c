//! Discovery: which devices this machine has, what they are, and what is missing.
//!
//! Kept apart from [`crate::device`] because it asks the backends (their drivers load here),
//! while a [`Device`] is a plain value that graphs and plans use on machines without any driver.
//!
//! ```
//! use collectives::{Device, available_devices};
//! let found = available_devices();
//! assert!(found.contains(&Device::Cpu(0)), "the host is always there");
//! // Every device with its name, and each missing kind with the fix:
//! println!("{}", collectives::discover::report());
//! ```

use std::fmt;

use crate::device::{Device, DeviceKind, cpu_device_count};

/// Every device present: the virtual CPU devices, then each CUDA and Vulkan device whose driver
/// loads. A missing driver lists none of its kind rather than failing;
/// [`report`] says why.
pub fn available_devices() -> Vec<Device> {
    let mut out: Vec<Device> = (0..cpu_device_count()).map(Device::Cpu).collect();
    out.extend((0..crate::backend::device_count(DeviceKind::Cuda)).map(Device::Cuda));
    out.extend((0..crate::backend::device_count(DeviceKind::Vulkan)).map(Device::Vulkan));
    out
}

/// Every device present, best leader first: hardware GPUs (CUDA, then Vulkan), then the virtual
/// CPU devices, then software Vulkan devices (lavapipe computes on the CPU, behind a copy, so it
/// leads a reduce worse than the host does). [`DeviceGroup::new`](crate::DeviceGroup::new)
/// makes the first device of its list the leader; build the list from this one to get the best.
pub fn preferred_devices() -> Vec<Device> {
    let mut all = available_devices();
    all.sort_by_key(|&d| match (d.kind(), is_software(d)) {
        (_, true) => 3,
        (DeviceKind::Cuda, _) => 0,
        (DeviceKind::Vulkan, _) => 1,
        (DeviceKind::Cpu, _) => 2,
    });
    all
}

/// The driver's name of `device` (`"NVIDIA H200"`, `"llvmpipe (LLVM 15.0.6, 256 bits)"`;
/// `"host memory"` for a CPU device), or `None` when this machine lacks it. Opens no device.
///
/// ```
/// use collectives::{Device, device_name};
/// assert_eq!(device_name(Device::Cpu(0)).as_deref(), Some("host memory"));
/// ```
pub fn device_name(device: Device) -> Option<String> {
    crate::backend::device_name(device).map(|(name, _)| name)
}

/// Whether `device` is a software device: a Vulkan device that is the CPU
/// (`VK_PHYSICAL_DEVICE_TYPE_CPU`, as Mesa's lavapipe). `false` for devices this machine lacks.
pub fn is_software(device: Device) -> bool {
    crate::backend::device_name(device).is_some_and(|(_, soft)| soft)
}

/// Whether `device` can run now: its backend is built, its driver loads and the device exists
/// (opening it, once per process). Errors as [`DeviceGroup::validate`](crate::DeviceGroup::validate).
pub fn check(device: Device) -> crate::Result<()> {
    crate::backend::get(device).map(|_| ())
}

/// One device discovery found.
#[derive(Clone, Debug, PartialEq)]
pub struct FoundDevice {
    /// The device.
    pub device: Device,
    /// The driver's name of it.
    pub name: String,
    /// Whether it is a software device (see [`is_software`]).
    pub software: bool,
}

/// A device kind discovery found none of, with why and how to get it.
#[derive(Clone, Debug, PartialEq)]
pub struct Missing {
    /// The kind.
    pub kind: DeviceKind,
    /// Why there is none: the driver's or loader's words.
    pub reason: String,
    /// What to install or set to get one.
    pub fix: &'static str,
}

/// What [`report`] found: each device with its name and type, and each missing kind with the
/// fix. Its `Display` is the table the quickstart prints.
#[derive(Clone, Debug, PartialEq)]
pub struct DiscoveryReport {
    /// Every device present, in [`available_devices`] order.
    pub devices: Vec<FoundDevice>,
    /// Every kind with no device, and why.
    pub missing: Vec<Missing>,
}

/// Asks every backend what this machine has (loading the drivers, opening no device).
pub fn report() -> DiscoveryReport {
    let devices = available_devices()
        .into_iter()
        .map(|device| {
            let (name, software) = crate::backend::device_name(device).unwrap_or_else(|| ("?".into(), false));
            FoundDevice { device, name, software }
        })
        .collect();
    let missing = [DeviceKind::Cuda, DeviceKind::Vulkan]
        .into_iter()
        .filter_map(|kind| {
            let reason = crate::backend::unavailable_reason(kind)?;
            Some(Missing { kind, reason, fix: kind.install_hint() })
        })
        .collect();
    DiscoveryReport { devices, missing }
}

impl fmt::Display for DiscoveryReport {
    /// One line per device (`vulkan:0  llvmpipe (...)  [software]`), then one per missing kind
    /// with its reason and fix.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "devices found: {}", self.devices.len())?;
        for d in &self.devices {
            let kind = if d.software { " [software: not preferred as leader]" } else { "" };
            writeln!(f, "  {:<9} {}{kind}", d.device.to_string(), d.name)?;
        }
        for m in &self.missing {
            writeln!(f, "  no {} device: {}", m.kind, m.reason)?;
            writeln!(f, "    fix: {}", m.fix)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_lists_every_available_device_and_the_host_first() {
        let r = report();
        let listed: Vec<Device> = r.devices.iter().map(|d| d.device).collect();
        assert_eq!(listed, available_devices());
        assert_eq!(r.devices[0].name, "host memory");
        let text = r.to_string();
        assert!(text.contains("cpu:0") && text.contains("host memory"), "{text}");
        for m in &r.missing {
            assert!(text.contains(&m.reason) && text.contains(m.fix), "{text}");
            assert!(!listed.iter().any(|d| d.kind() == m.kind), "{:?} listed and missing", m.kind);
        }
    }

    #[test]
    fn software_devices_come_after_the_host() {
        let order = preferred_devices();
        let mut sorted = order.clone();
        sorted.sort();
        let mut all = available_devices();
        all.sort();
        assert_eq!(sorted, all, "the same devices");
        let first_cpu = order.iter().position(|d| d.is_host()).expect("the host is always there");
        for (i, &d) in order.iter().enumerate() {
            assert_eq!(is_software(d), i > first_cpu && d.is_gpu(), "{order:?}");
        }
    }

    #[test]
    fn absent_devices_have_no_name() {
        assert_eq!(device_name(Device::Cpu(cpu_device_count())), None);
        assert_eq!(device_name(Device::Vulkan(1 << 20)), None);
        assert_eq!(device_name(Device::Cuda(1 << 20)), None);
        assert!(!is_software(Device::Vulkan(1 << 20)));
    }
}
