//! Discovery: which devices this machine has.
//!
//! Kept apart from [`crate::device`] because it asks the backends (their drivers load here),
//! while a [`Device`] is a plain value that graphs and plans use on machines without any driver.
//!
//! ```
//! use collectives::{Device, available_devices};
//! let found = available_devices();
//! assert!(found.contains(&Device::Cpu(0)), "the host is always there");
//! ```

use crate::device::{Device, DeviceKind, cpu_device_count};

/// Every device present: the virtual CPU devices, then each CUDA and Vulkan device whose driver
/// loads. A missing driver lists none of its kind rather than failing.
pub fn available_devices() -> Vec<Device> {
    let mut out: Vec<Device> = (0..cpu_device_count()).map(Device::Cpu).collect();
    out.extend((0..crate::backend::device_count(DeviceKind::Cuda)).map(Device::Cuda));
    out.extend((0..crate::backend::device_count(DeviceKind::Vulkan)).map(Device::Vulkan));
    out
}
