//! What a physical device can do: the optional shader features the kernels need for 64-bit
//! dtypes, and the limits the kernels are cut to (binding size, workgroup count, offsets).

use ash::vk;

use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// The optional device features the backend uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Features {
    /// `shaderFloat64`: f64 arithmetic and casts.
    pub float64: bool,
    /// `shaderInt64`: i64 arithmetic and casts, and f64 arithmetic (its correctly rounded
    /// division works on the significands as 64-bit integers).
    pub int64: bool,
}

impl Features {
    /// Checks that a kernel `op` touching `dtypes` can run; names the missing feature if not.
    /// Only arithmetic and casts need features: copies, slices and concats move bytes.
    pub fn require(self, device: Device, op: &str, dtypes: &[DType]) -> Result<()> {
        for &dtype in dtypes {
            let missing = match dtype {
                DType::F64 if !self.float64 => "shaderFloat64",
                DType::I64 | DType::F64 if !self.int64 => "shaderInt64",
                _ => continue,
            };
            return Err(Error::Unsupported {
                op: op.to_string(),
                device,
                dtype,
                reason: format!(
                    "the device lacks the Vulkan feature {missing}; run this op on a CPU device or another GPU"
                ),
            });
        }
        Ok(())
    }
}

/// The limits the kernels are planned against.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    /// `maxStorageBufferRange`: the most bytes one binding may cover.
    pub max_binding: u64,
    /// `minStorageBufferOffsetAlignment`.
    pub offset_align: u64,
    /// `maxComputeWorkGroupCount[0]` and `[1]`.
    pub max_groups: [u32; 2],
    /// `maxMemoryAllocationSize`: the largest buffer the backend will try to allocate.
    pub max_alloc: u64,
}

/// The storage buffers the fold kernel binds (8 inputs, accumulator, output).
pub(super) const FOLD_BINDINGS: u32 = 10;

/// Everything the backend needs to know of one usable physical device.
#[derive(Clone, Debug)]
pub(super) struct Physical {
    pub handle: vk::PhysicalDevice,
    /// The driver's name of the device (`deviceName`), as discovery reports it.
    pub name: String,
    /// Whether the device is a software rasterizer on the CPU (`PHYSICAL_DEVICE_TYPE_CPU`, as
    /// Mesa's lavapipe), which discovery does not prefer as a leader.
    pub software: bool,
    /// A queue family with compute (and so transfer) support.
    pub family: u32,
    pub features: Features,
    pub limits: Limits,
    /// `minImportedHostPointerAlignment` when the device has `VK_EXT_external_memory_host`
    /// (host memory imported as device memory: the staged CUDA ↔ Vulkan chain's ring).
    pub host_import: Option<u64>,
    /// The device's UUID (`VkPhysicalDeviceIDProperties::deviceUUID`): the same GPU seen by
    /// another API (CUDA) reports the same one.
    pub uuid: [u8; 16],
    /// Whether the device exports memory as a POSIX file descriptor (`VK_KHR_external_memory_fd`),
    /// which another API of the same GPU imports (the CUDA ↔ Vulkan device bridge).
    pub export_fd: bool,
    /// Whether the device is an NVIDIA GPU (`vendorID` 0x10DE), the only kind CUDA also drives.
    pub nvidia: bool,
    /// Whether the device's timeline semaphore is made exportable as a POSIX file descriptor
    /// (`VK_KHR_external_semaphore_fd`), for CUDA to wait on its values: an NVIDIA GPU (CUDA
    /// imports its own driver's semaphores) that reports timeline semaphores exportable so.
    pub export_timeline: bool,
}

/// Probes `pd`: `Err` with the reason when the backend cannot use it (Vulkan below 1.2, no
/// timeline semaphores, no compute queue, too few storage-buffer bindings).
pub(super) fn probe(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
) -> std::result::Result<Physical, String> {
    let mut maint3 = vk::PhysicalDeviceMaintenance3Properties::default();
    let mut id = vk::PhysicalDeviceIDProperties::default();
    let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut maint3).push_next(&mut id);
    // SAFETY: `pd` was enumerated from the live `instance`; the chain is well formed.
    unsafe { instance.get_physical_device_properties2(pd, &mut props) };
    let p = props.properties;
    let name = p.device_name_as_c_str().map_or_else(|_| "?".into(), |s| s.to_string_lossy().into_owned());
    if p.api_version < vk::API_VERSION_1_2 {
        return Err(format!(
            "{name} supports Vulkan {}.{} only; 1.2 is needed",
            vk::api_version_major(p.api_version),
            vk::api_version_minor(p.api_version)
        ));
    }
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut feats = vk::PhysicalDeviceFeatures2::default().push_next(&mut v12);
    // SAFETY: as above.
    unsafe { instance.get_physical_device_features2(pd, &mut feats) };
    let core = feats.features;
    if v12.timeline_semaphore == vk::FALSE {
        return Err(format!("{name} lacks timeline semaphores"));
    }
    // SAFETY: as above.
    let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
    let family = families
        .iter()
        .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE) && f.queue_count > 0)
        .ok_or_else(|| format!("{name} has no compute queue"))?;
    let l = p.limits;
    if l.max_per_stage_descriptor_storage_buffers < FOLD_BINDINGS {
        return Err(format!(
            "{name} allows {} storage buffers per stage; {FOLD_BINDINGS} are needed",
            l.max_per_stage_descriptor_storage_buffers
        ));
    }
    let features =
        Features { float64: core.shader_float64 == vk::TRUE, int64: core.shader_int64 == vk::TRUE };
    let limits = Limits {
        max_binding: u64::from(l.max_storage_buffer_range),
        offset_align: l.min_storage_buffer_offset_alignment.max(4),
        max_groups: [l.max_compute_work_group_count[0], l.max_compute_work_group_count[1]],
        max_alloc: maint3.max_memory_allocation_size,
    };
    let host_import = host_import_alignment(instance, pd);
    let software = p.device_type == vk::PhysicalDeviceType::CPU;
    let export_fd = has_extension(instance, pd, ash::khr::external_memory_fd::NAME);
    let uuid = id.device_uuid;
    let family = family as u32;
    let nvidia = p.vendor_id == NVIDIA;
    let export_timeline = nvidia && timeline_exportable(instance, pd);
    Ok(Physical {
        handle: pd,
        name,
        software,
        family,
        features,
        limits,
        host_import,
        uuid,
        export_fd,
        nvidia,
        export_timeline,
    })
}

/// NVIDIA's PCI vendor id.
const NVIDIA: u32 = 0x10de;

/// Whether `pd` offers the device extension `name`.
fn has_extension(instance: &ash::Instance, pd: vk::PhysicalDevice, name: &std::ffi::CStr) -> bool {
    // SAFETY: `pd` was enumerated from the live `instance`.
    let exts = unsafe { instance.enumerate_device_extension_properties(pd) }.unwrap_or_default();
    exts.iter().any(|e| e.extension_name_as_c_str() == Ok(name))
}

/// Whether `pd` has `VK_KHR_external_semaphore_fd` and exports timeline semaphores as opaque
/// file descriptors.
fn timeline_exportable(instance: &ash::Instance, pd: vk::PhysicalDevice) -> bool {
    if !has_extension(instance, pd, ash::khr::external_semaphore_fd::NAME) {
        return false;
    }
    let mut kind = vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE);
    let info = vk::PhysicalDeviceExternalSemaphoreInfo::default()
        .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD)
        .push_next(&mut kind);
    let mut props = vk::ExternalSemaphoreProperties::default();
    // SAFETY: `pd` was enumerated from the live `instance` (Vulkan 1.2, checked); the chain is
    // well formed.
    unsafe { instance.get_physical_device_external_semaphore_properties(pd, &info, &mut props) };
    props.external_semaphore_features.contains(vk::ExternalSemaphoreFeatureFlags::EXPORTABLE)
}

/// `minImportedHostPointerAlignment` if `pd` has `VK_EXT_external_memory_host`.
fn host_import_alignment(instance: &ash::Instance, pd: vk::PhysicalDevice) -> Option<u64> {
    if !has_extension(instance, pd, ash::ext::external_memory_host::NAME) {
        return None;
    }
    let mut host = vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
    let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut host);
    // SAFETY: as above; the extension is supported, so its properties may be chained.
    unsafe { instance.get_physical_device_properties2(pd, &mut props) };
    Some(host.min_imported_host_pointer_alignment.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_float64_is_a_typed_error_naming_the_feature() {
        let f = Features { float64: false, int64: true };
        let err = f.require(Device::Vulkan(0), "binary", &[DType::F64]).unwrap_err();
        match &err {
            Error::Unsupported { dtype, reason, .. } => {
                assert_eq!(*dtype, DType::F64);
                assert!(reason.contains("shaderFloat64"), "{reason}");
            }
            other => panic!("expected Unsupported, got {other:?}"),
        }
        assert!(err.to_string().contains("shaderFloat64"));
        assert!(f.require(Device::Vulkan(0), "cast", &[DType::I64, DType::F32]).is_ok());
    }

    #[test]
    fn missing_int64_names_shader_int64_and_other_dtypes_need_nothing() {
        let f = Features { float64: true, int64: false };
        let err = f.require(Device::Vulkan(1), "cast", &[DType::F32, DType::I64]).unwrap_err();
        assert!(
            matches!(&err, Error::Unsupported { dtype: DType::I64, reason, .. } if reason.contains("shaderInt64"))
        );
        // f64's division works on 64-bit integer significands.
        let err = f.require(Device::Vulkan(1), "binary", &[DType::F64]).unwrap_err();
        assert!(
            matches!(&err, Error::Unsupported { dtype: DType::F64, reason, .. } if reason.contains("shaderInt64"))
        );
        let none = Features { float64: false, int64: false };
        let small = [DType::F32, DType::F16, DType::BF16, DType::I32, DType::U8];
        assert!(none.require(Device::Vulkan(0), "reduce", &small).is_ok());
    }
}
