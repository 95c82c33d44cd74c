//! The process's one Vulkan instance: the loader opened at run time, the usable physical devices
//! in enumeration order (`Vulkan(0..)`), and a debug messenger that records validation errors.
//!
//! A missing loader (`libvulkan`), a loader with no driver, or a machine with no usable device
//! is remembered as the reason, reported as [`Error::DeviceUnavailable`] for every ordinal and a
//! device count of 0 — never a panic or a link failure.

use std::ffi::{CStr, c_void};
use std::sync::OnceLock;

use ash::vk;
use parking_lot::Mutex;

use super::features::{Physical, probe};
use crate::device::Device;
use crate::error::{Error, Result};

/// The loaded instance and its usable devices.
pub(super) struct Instance {
    /// Keeps the loader library loaded for the instance's life.
    _entry: ash::Entry,
    pub raw: ash::Instance,
    messenger: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    /// Usable physical devices, hardware before software (lavapipe), each in enumeration order:
    /// index n is `Vulkan(n)`, so `Vulkan(0)` (the typed group's `Vulkan`) is a GPU where there is
    /// one.
    pub devices: Vec<Physical>,
}

static INSTANCE: OnceLock<std::result::Result<Instance, String>> = OnceLock::new();

/// The instance, created on first use; `Err` holds why Vulkan is unavailable.
pub(super) fn get() -> std::result::Result<&'static Instance, &'static str> {
    INSTANCE.get_or_init(create).as_ref().map_err(String::as_str)
}

/// The physical device behind `Vulkan(ordinal)`, or why there is none.
pub(super) fn physical(ordinal: u32) -> Result<(&'static Instance, &'static Physical)> {
    let device = Device::Vulkan(ordinal);
    let inst = get().map_err(|reason| Error::DeviceUnavailable { device, reason: reason.to_string() })?;
    match inst.devices.get(ordinal as usize) {
        Some(p) => Ok((inst, p)),
        None => Err(Error::DeviceUnavailable {
            device,
            reason: format!("this machine has {} usable Vulkan device(s)", inst.devices.len()),
        }),
    }
}

/// How many usable Vulkan devices there are (0 without a loader or driver).
pub(super) fn device_count() -> u32 {
    get().map_or(0, |i| i.devices.len() as u32)
}

fn create() -> std::result::Result<Instance, String> {
    // SAFETY: loading the system's Vulkan loader runs its initialisers; this is the documented way
    // to use ash without linking to it, and the library stays loaded inside the `Entry`.
    let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("no Vulkan loader (libvulkan): {e}"))?;
    // SAFETY: `entry` holds a loaded loader.
    let version = unsafe { entry.try_enumerate_instance_version() }
        .map_err(|e| format!("vkEnumerateInstanceVersion failed: {e}"))?
        .unwrap_or(vk::API_VERSION_1_0);
    if version < vk::API_VERSION_1_2 {
        return Err("the Vulkan loader is older than 1.2".into());
    }
    // SAFETY: as above.
    let available = unsafe { entry.enumerate_instance_extension_properties(None) }
        .map_err(|e| format!("listing instance extensions failed: {e}"))?;
    let has = |name: &CStr| available.iter().any(|e| e.extension_name_as_c_str() == Ok(name));
    let debug = has(ash::ext::debug_utils::NAME);
    let portability = has(ash::khr::portability_enumeration::NAME);
    let mut exts = Vec::new();
    if debug {
        exts.push(ash::ext::debug_utils::NAME.as_ptr());
    }
    let mut flags = vk::InstanceCreateFlags::empty();
    if portability {
        exts.push(ash::khr::portability_enumeration::NAME.as_ptr());
        flags |= vk::InstanceCreateFlags::ENUMERATE_PORTABILITY_KHR;
    }
    let app = vk::ApplicationInfo::default()
        .application_name(c"collectives")
        .engine_name(c"collectives")
        .api_version(vk::API_VERSION_1_2);
    let info =
        vk::InstanceCreateInfo::default().application_info(&app).enabled_extension_names(&exts).flags(flags);
    // SAFETY: `info` and the strings it points to outlive the call.
    let raw = unsafe { entry.create_instance(&info, None) }.map_err(|e| match e {
        vk::Result::ERROR_INCOMPATIBLE_DRIVER => "no Vulkan driver (ICD) is installed".to_string(),
        e => format!("vkCreateInstance failed: {e}"),
    })?;
    let messenger = if debug { create_messenger(&entry, &raw) } else { None };
    let mut inst = Instance { _entry: entry, raw, messenger, devices: Vec::new() };
    // SAFETY: `inst.raw` is live.
    let handles = unsafe { inst.raw.enumerate_physical_devices() }
        .map_err(|e| format!("enumerating devices failed: {e}"))?;
    let mut skipped = Vec::new();
    for pd in handles {
        match probe(&inst.raw, pd) {
            Ok(p) => inst.devices.push(p),
            Err(why) => skipped.push(why),
        }
    }
    // Stable: the driver's order within hardware and within software devices.
    inst.devices.sort_by_key(|p| p.software);
    if inst.devices.is_empty() {
        let why =
            if skipped.is_empty() { "the driver reports no devices".to_string() } else { skipped.join("; ") };
        return Err(format!("no usable Vulkan device: {why}"));
    }
    Ok(inst)
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some((utils, m)) = self.messenger.take() {
            // SAFETY: the messenger was created on this instance and is destroyed once.
            unsafe { utils.destroy_debug_utils_messenger(m, None) };
        }
        // SAFETY: every device made from this instance holds it through the static, so none is
        // left when the instance drops.
        unsafe { self.raw.destroy_instance(None) };
    }
}

// ---- validation messages ----

/// Validation errors reported by the debug messenger and not yet taken.
static VALIDATION_ERRORS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Takes the validation errors recorded so far (empty without a validation layer).
pub(super) fn take_validation_errors() -> Vec<String> {
    std::mem::take(&mut *VALIDATION_ERRORS.lock())
}

/// An error for the recorded validation errors, if there are any.
pub(super) fn validation_result(device: Device) -> Result<()> {
    let errors = take_validation_errors();
    if errors.is_empty() {
        return Ok(());
    }
    Err(Error::driver(device, "Vulkan validation", errors.join("\n")))
}

fn create_messenger(
    entry: &ash::Entry,
    raw: &ash::Instance,
) -> Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)> {
    let utils = ash::ext::debug_utils::Instance::new(entry, raw);
    let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
        .message_severity(
            vk::DebugUtilsMessageSeverityFlagsEXT::ERROR | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING,
        )
        .message_type(
            vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION | vk::DebugUtilsMessageTypeFlagsEXT::GENERAL,
        )
        .pfn_user_callback(Some(on_message));
    // SAFETY: the extension is enabled on `raw`; `on_message` is a valid callback for its life.
    let m = unsafe { utils.create_debug_utils_messenger(&info, None) }.ok()?;
    Some((utils, m))
}

/// Records validation errors (and prints errors and warnings to stderr).
unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    kind: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the loader passes a valid callback-data pointer (or null) for the call's duration.
    let msg = unsafe { data.as_ref() }
        // SAFETY: `p_message` is null or a NUL-terminated string valid for the call.
        .and_then(|d| unsafe { d.message_as_c_str() })
        .map_or_else(|| "(no message)".into(), |s| s.to_string_lossy().into_owned());
    let error = severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR);
    eprintln!("vulkan {}: {msg}", if error { "error" } else { "warning" });
    if error && kind.contains(vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION) {
        VALIDATION_ERRORS.lock().push(msg);
    }
    vk::FALSE
}
