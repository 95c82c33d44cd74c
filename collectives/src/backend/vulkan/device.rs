//! One opened Vulkan device: the logical device, its one compute queue with a timeline semaphore
//! counting submissions, the memory allocator, and the cached pipelines. Everything it creates is
//! destroyed in `Drop`, after the device is idle.

use std::mem::ManuallyDrop;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use ash::vk;
use gpu_allocator::vulkan::{Allocator, AllocatorCreateDesc};
use parking_lot::Mutex;

use super::bridge::HostImport;
use super::cache::BufCache;
use super::features::{Features, Limits};
use super::instance;
use super::memory::{VULKAN_HOST_BELOW_BYTES, VULKAN_HOST_ENV};
use super::pipelines::Pipelines;
use super::raw::{self, check};
use super::submit::QueueState;
use crate::device::Device;
use crate::error::{Error, Result};

/// An opened Vulkan device. Shared (`Arc`) by its backend, its buffers and its fences.
pub(super) struct Gpu {
    pub device: Device,
    pub raw: ash::Device,
    pub queue: vk::Queue,
    pub features: Features,
    pub limits: Limits,
    /// Counts completed submissions: submission n signals value n.
    pub timeline: vk::Semaphore,
    /// Command buffers, descriptor pools and work in flight; held while recording and submitting.
    pub state: Mutex<QueueState>,
    pub allocator: Mutex<ManuallyDrop<Allocator>>,
    /// Freed buffers kept for reuse (see [`super::cache`]); locked before `allocator` when both are.
    pub cache: Mutex<BufCache>,
    pub pipelines: Pipelines,
    /// Host-memory import (`VK_EXT_external_memory_host`), when the device has it.
    pub host_import: Option<HostImport>,
    /// Memory export as a file descriptor (`VK_KHR_external_memory_fd`), when the device has it.
    pub export_fd: Option<ash::khr::external_memory_fd::Device>,
    /// The timeline's export as a file descriptor (`VK_KHR_external_semaphore_fd`), when the
    /// timeline was made exportable (see [`super::features::Physical::export_timeline`]).
    pub timeline_fd: Option<ash::khr::external_semaphore_fd::Device>,
    /// Timeline semaphores another API signals and this device's submissions wait on (see
    /// [`super::export::inbound_timeline`]), destroyed with the device.
    pub inbound: Mutex<Vec<vk::Semaphore>>,
    /// The device's UUID, as another API of the same GPU reports it.
    pub uuid: [u8; 16],
    /// The device's memory types (picks the memory of exported allocations).
    pub memory: vk::PhysicalDeviceMemoryProperties,
    /// Whether the device is a software rasterizer (lavapipe): no GPU to share memory with.
    pub software: bool,
    /// Whether the device is an NVIDIA GPU, which a CUDA device may also drive.
    pub nvidia: bool,
    /// Tensor buffers smaller than this many bytes live in host memory (see
    /// [`super::memory::VULKAN_HOST_BELOW_BYTES`]).
    pub host_below: u64,
    /// Elementwise kernels moving fewer bytes than this are run by the host (see
    /// [`super::on_host::VULKAN_HOST_KERNEL_BYTES`]).
    pub host_kernel_below: u64,
}

/// Environment variable: how long, in microseconds, a host wait for a Vulkan submission polls the
/// device's timeline before it blocks in `vkWaitSemaphores`; `0` blocks at once. Default
/// [`VULKAN_SPIN_US`]. A blocked wait wakes some tens of microseconds after the GPU signals
/// (the driver's interrupt and the scheduler's wake-up), which a small call pays in full; the
/// poll takes a core while it runs, as CUDA's default wait does, but yields it between reads, so
/// a software device's own threads (lavapipe) still run. Read once per process.
pub const VULKAN_SPIN_ENV: &str = "COLLECTIVES_VULKAN_SPIN_US";

/// How long a host wait polls a Vulkan timeline before blocking, by default (µs; see
/// [`VULKAN_SPIN_ENV`]).
pub const VULKAN_SPIN_US: u64 = 200;

/// How long host waits on this process's hardware Vulkan devices poll ([`VULKAN_SPIN_ENV`]).
fn spin_budget() -> Duration {
    static SPIN: OnceLock<Duration> = OnceLock::new();
    *SPIN.get_or_init(|| {
        let us = crate::knob::var(VULKAN_SPIN_ENV, "microseconds (0 blocks at once)", |_: &u64| true);
        Duration::from_micros(us.unwrap_or(VULKAN_SPIN_US))
    })
}

/// The bound below which tensor buffers live in host memory: [`VULKAN_HOST_ENV`] or
/// [`VULKAN_HOST_BELOW_BYTES`].
pub(super) fn host_below() -> u64 {
    crate::knob::var(VULKAN_HOST_ENV, "a byte count (0 keeps every tensor in device memory)", |_: &u64| true)
        .unwrap_or(VULKAN_HOST_BELOW_BYTES)
}

impl Gpu {
    /// Opens `Vulkan(ordinal)`: a logical device with one compute queue, the 64-bit shader
    /// features the physical device has, timeline semaphores, and host-memory import and memory
    /// export where the device has them.
    pub fn open(ordinal: u32) -> Result<Arc<Gpu>> {
        let device = Device::Vulkan(ordinal);
        let (inst, phys) = instance::physical(ordinal)?;
        let raw = create_device(device, &inst.raw, phys)?;
        // Owns `raw` from here: dropping the guard destroys it on the error paths below.
        let guard = DeviceGuard(Some(raw));
        let dev = guard.get();
        // SAFETY: the family and index were requested at device creation.
        let queue = unsafe { dev.get_device_queue(phys.family, 0) };
        let host_import = phys.host_import.map(|align| HostImport::new(&inst.raw, dev, align));
        let export_fd = phys.export_fd.then(|| ash::khr::external_memory_fd::Device::new(&inst.raw, dev));
        let timeline_fd =
            phys.export_timeline.then(|| ash::khr::external_semaphore_fd::Device::new(&inst.raw, dev));
        // SAFETY: the physical device came from the live instance.
        let memory = unsafe { inst.raw.get_physical_device_memory_properties(phys.handle) };
        let allocator = Allocator::new(&AllocatorCreateDesc {
            instance: inst.raw.clone(),
            device: dev.clone(),
            physical_device: phys.handle,
            debug_settings: Default::default(),
            buffer_device_address: false,
            allocation_sizes: Default::default(),
        })
        .map_err(|e| Error::driver(device, "creating the memory allocator", e))?;
        // SAFETY: `dev` is live with timelineSemaphore enabled, and the semaphore extension
        // where the timeline is exported.
        let timeline =
            check(device, "vkCreateSemaphore", unsafe { raw::create_timeline(dev, phys.export_timeline) })?;
        let state = match QueueState::new(device, dev, phys.family) {
            Ok(s) => s,
            Err(e) => {
                // SAFETY: the semaphore is unused and the device is about to be destroyed.
                unsafe { dev.destroy_semaphore(timeline, None) };
                return Err(e);
            }
        };
        Ok(Arc::new(Gpu {
            device,
            raw: guard.take(),
            queue,
            features: phys.features,
            limits: phys.limits,
            timeline,
            state: Mutex::new(state),
            allocator: Mutex::new(ManuallyDrop::new(allocator)),
            cache: Mutex::new(BufCache::default()),
            pipelines: Pipelines::default(),
            host_import,
            export_fd,
            timeline_fd,
            inbound: Mutex::new(vec![]),
            uuid: phys.uuid,
            memory,
            software: phys.software,
            nvidia: phys.nvidia,
            host_below: host_below(),
            host_kernel_below: super::on_host::host_kernel_below(),
        }))
    }

    /// Whether large tensor buffers get exportable memory of their own, which CUDA maps to copy
    /// straight into and out of them: an NVIDIA GPU that exports memory (a CUDA device of the
    /// same GPU may exist; other vendors' GPUs and lavapipe keep gpu-allocator's blocks).
    pub fn shares_memory(&self) -> bool {
        self.export_fd.is_some() && !self.software && self.nvidia
    }

    /// Blocks until submission `value` has completed, polling the timeline first for up to
    /// [`VULKAN_SPIN_ENV`]'s budget; reports device loss and validation errors.
    pub fn wait(&self, value: u64) -> Result<()> {
        if !self.poll_until(value)? {
            // SAFETY: the timeline belongs to this live device.
            check(self.device, "vkWaitSemaphores", unsafe {
                raw::wait_timeline(&self.raw, self.timeline, value)
            })?;
        }
        if let Some(mut st) = self.state.try_lock() {
            st.retire(self)?;
        }
        instance::validation_result(self.device)
    }

    /// Polls the timeline, yielding between reads, until it reaches `value` (`true`) or the poll
    /// budget runs out (`false`; at once with a budget of 0).
    fn poll_until(&self, value: u64) -> Result<bool> {
        let budget = spin_budget();
        let start = Instant::now();
        while !budget.is_zero() {
            if self.completed()? >= value {
                return Ok(true);
            }
            if start.elapsed() >= budget {
                break;
            }
            // Other threads get the core between reads: with a tight poll the 1 MiB all_reduce
            // of `cuda:0,vulkan:0` read 39.0–43.4 µs, yielding 35.0–40.2, not polling 29.7–39.2
            // (`bench/gpu/26-peer-waits`, run d); the calls the poll is for gained alike.
            std::thread::yield_now();
        }
        Ok(false)
    }

    /// The value of the last completed submission.
    pub fn completed(&self) -> Result<u64> {
        // SAFETY: the timeline belongs to this live device.
        check(self.device, "vkGetSemaphoreCounterValue", unsafe {
            self.raw.get_semaphore_counter_value(self.timeline)
        })
    }

    /// Blocks until everything submitted so far has completed, and frees what it held.
    pub fn synchronize(&self) -> Result<()> {
        let last = self.state.lock().last_submitted();
        self.wait(last)?;
        self.state.lock().retire(self)
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: the device is live; waiting for idle makes every handle below unused. Buffers
        // hold the `Gpu` alive, so none is left; pipelines and pools were created on this device.
        unsafe {
            let _ = self.raw.device_wait_idle();
            self.state.get_mut().destroy(&self.raw);
            self.pipelines.destroy(&self.raw);
            self.cache.get_mut().clear(&self.raw, self.allocator.get_mut());
            self.raw.destroy_semaphore(self.timeline, None);
            for s in self.inbound.get_mut().drain(..) {
                self.raw.destroy_semaphore(s, None);
            }
            ManuallyDrop::drop(self.allocator.get_mut());
            self.raw.destroy_device(None);
        }
    }
}

/// Destroys a logical device on drop unless taken.
struct DeviceGuard(Option<ash::Device>);

impl DeviceGuard {
    fn get(&self) -> &ash::Device {
        self.0.as_ref().expect("present until taken")
    }

    fn take(mut self) -> ash::Device {
        self.0.take().expect("present until taken")
    }
}

impl Drop for DeviceGuard {
    fn drop(&mut self) {
        if let Some(d) = self.0.take() {
            // SAFETY: nothing created on the device survives the failed open.
            unsafe { d.destroy_device(None) };
        }
    }
}

fn create_device(
    device: Device,
    inst: &ash::Instance,
    phys: &super::features::Physical,
) -> Result<ash::Device> {
    let priorities = [1.0f32];
    let queues =
        [vk::DeviceQueueCreateInfo::default().queue_family_index(phys.family).queue_priorities(&priorities)];
    let core = vk::PhysicalDeviceFeatures::default()
        .shader_float64(phys.features.float64)
        .shader_int64(phys.features.int64);
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
    let mut exts: Vec<*const std::ffi::c_char> = vec![];
    if phys.host_import.is_some() {
        exts.push(ash::ext::external_memory_host::NAME.as_ptr());
    }
    if phys.export_fd {
        exts.push(ash::khr::external_memory_fd::NAME.as_ptr());
    }
    if phys.export_timeline {
        exts.push(ash::khr::external_semaphore_fd::NAME.as_ptr());
    }
    let info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&exts)
        .enabled_features(&core)
        .push_next(&mut v12);
    // SAFETY: the physical device came from `inst`, and only features it reports are enabled.
    check(device, "vkCreateDevice", unsafe { inst.create_device(phys.handle, &info, None) })
}
