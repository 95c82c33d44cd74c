//! The raw layer: thin wrappers of the ash calls the backend makes, each returning this crate's
//! `Result` with the failing call named. Everything here is `unsafe` to call, with the Vulkan
//! valid-usage rules the caller must keep written on each function; the owning types above
//! ([`super::device::Gpu`], [`super::memory::DevBuf`], [`super::pipelines::Pipeline`], ...) keep
//! them and free what they create.

use ash::vk;

use crate::device::Device;
use crate::error::Error;

/// The crate's error for a failed Vulkan call: out-of-memory results become
/// [`Error::OutOfMemory`], everything else [`Error::Driver`].
pub(super) fn vk_error(device: Device, op: &str, r: vk::Result) -> Error {
    match r {
        vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => {
            Error::OutOfMemory { device, bytes: 0, detail: format!("{op}: {r}") }
        }
        _ => Error::driver(device, op, r),
    }
}

/// Maps a `VkResult` to the crate's error, naming `op`.
pub(super) fn check<T>(device: Device, op: &str, r: ash::prelude::VkResult<T>) -> crate::Result<T> {
    r.map_err(|e| vk_error(device, op, e))
}

/// A buffer of `size` bytes usable as a storage buffer and as a copy source and destination.
///
/// # Safety
/// `dev` must be a live device; the buffer must be destroyed with [`destroy_buffer`] on it.
pub(super) unsafe fn create_buffer(dev: &ash::Device, size: u64) -> ash::prelude::VkResult<vk::Buffer> {
    let usage = vk::BufferUsageFlags::STORAGE_BUFFER
        | vk::BufferUsageFlags::TRANSFER_SRC
        | vk::BufferUsageFlags::TRANSFER_DST;
    let info =
        vk::BufferCreateInfo::default().size(size).usage(usage).sharing_mode(vk::SharingMode::EXCLUSIVE);
    // SAFETY: the caller guarantees `dev` is live; `info` is a valid create info.
    unsafe { dev.create_buffer(&info, None) }
}

/// Destroys a buffer.
///
/// # Safety
/// `buffer` was created on `dev` and no pending GPU work uses it.
pub(super) unsafe fn destroy_buffer(dev: &ash::Device, buffer: vk::Buffer) {
    // SAFETY: guaranteed by the caller.
    unsafe { dev.destroy_buffer(buffer, None) }
}

/// A compute shader module from SPIR-V bytes.
///
/// # Safety
/// `dev` must be a live device; the module must be destroyed on it.
pub(super) unsafe fn create_shader_module(
    dev: &ash::Device,
    spirv: &[u8],
) -> ash::prelude::VkResult<vk::ShaderModule> {
    let words = ash::util::read_spv(&mut std::io::Cursor::new(spirv))
        .map_err(|_| vk::Result::ERROR_INVALID_SHADER_NV)?;
    let info = vk::ShaderModuleCreateInfo::default().code(&words);
    // SAFETY: the caller guarantees `dev` is live; the words are SPIR-V written by naga.
    unsafe { dev.create_shader_module(&info, None) }
}

/// A descriptor set layout of `n` storage buffers at bindings `0..n`, for compute.
///
/// # Safety
/// `dev` must be a live device; the layout must be destroyed on it.
pub(super) unsafe fn create_set_layout(
    dev: &ash::Device,
    n: u32,
) -> ash::prelude::VkResult<vk::DescriptorSetLayout> {
    let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..n)
        .map(|b| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect();
    let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
    // SAFETY: the caller guarantees `dev` is live; `info` is valid.
    unsafe { dev.create_descriptor_set_layout(&info, None) }
}

/// A pipeline layout of one set layout and `push_bytes` of push constants.
///
/// # Safety
/// `dev` must be a live device and `set` a layout created on it; destroy the result on it.
pub(super) unsafe fn create_pipeline_layout(
    dev: &ash::Device,
    set: vk::DescriptorSetLayout,
    push_bytes: u32,
) -> ash::prelude::VkResult<vk::PipelineLayout> {
    let sets = [set];
    let push = [vk::PushConstantRange::default()
        .stage_flags(vk::ShaderStageFlags::COMPUTE)
        .offset(0)
        .size(push_bytes)];
    let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&sets).push_constant_ranges(&push);
    // SAFETY: the caller guarantees `dev` is live and `set` belongs to it.
    unsafe { dev.create_pipeline_layout(&info, None) }
}

/// A compute pipeline running `main` of `module` with `layout`.
///
/// # Safety
/// `module` and `layout` were created on the live `dev`; destroy the result on it.
pub(super) unsafe fn create_compute_pipeline(
    dev: &ash::Device,
    module: vk::ShaderModule,
    layout: vk::PipelineLayout,
) -> ash::prelude::VkResult<vk::Pipeline> {
    let stage = vk::PipelineShaderStageCreateInfo::default()
        .stage(vk::ShaderStageFlags::COMPUTE)
        .module(module)
        .name(c"main");
    let info = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)];
    // SAFETY: the caller guarantees the handles belong to the live `dev`.
    let made = unsafe { dev.create_compute_pipelines(vk::PipelineCache::null(), &info, None) };
    made.map(|p| p[0]).map_err(|(_, e)| e)
}

/// A descriptor pool for `sets` sets of up to `per_set` storage buffers each.
///
/// # Safety
/// `dev` must be a live device; the pool must be destroyed on it.
pub(super) unsafe fn create_descriptor_pool(
    dev: &ash::Device,
    sets: u32,
    per_set: u32,
) -> ash::prelude::VkResult<vk::DescriptorPool> {
    let sizes = [vk::DescriptorPoolSize::default()
        .ty(vk::DescriptorType::STORAGE_BUFFER)
        .descriptor_count(sets * per_set)];
    let info = vk::DescriptorPoolCreateInfo::default().max_sets(sets).pool_sizes(&sizes);
    // SAFETY: the caller guarantees `dev` is live.
    unsafe { dev.create_descriptor_pool(&info, None) }
}

/// One descriptor set of `layout` from `pool`, its bindings `0..` set to `buffers`.
///
/// # Safety
/// `pool` and `layout` belong to the live `dev`, the pool has room, and no command buffer still
/// pending uses a set being replaced.
pub(super) unsafe fn write_set(
    dev: &ash::Device,
    pool: vk::DescriptorPool,
    layout: vk::DescriptorSetLayout,
    buffers: &[vk::DescriptorBufferInfo],
) -> ash::prelude::VkResult<vk::DescriptorSet> {
    let layouts = [layout];
    let info = vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts);
    // SAFETY: guaranteed by the caller.
    let set = unsafe { dev.allocate_descriptor_sets(&info) }?[0];
    let writes: Vec<vk::WriteDescriptorSet> = buffers
        .iter()
        .enumerate()
        .map(|(b, info)| {
            vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(b as u32)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(std::slice::from_ref(info))
        })
        .collect();
    // SAFETY: `set` was just allocated from the caller's pool; the buffer infos name live buffers.
    unsafe { dev.update_descriptor_sets(&writes, &[]) };
    Ok(set)
}

/// A memory barrier making all earlier compute and transfer writes available to later compute,
/// transfer and (with `host`) host accesses.
///
/// # Safety
/// `cmd` is a command buffer of `dev` in the recording state.
pub(super) unsafe fn barrier(dev: &ash::Device, cmd: vk::CommandBuffer, host: bool) {
    let work = vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER;
    let writes = vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE;
    let (dst_stage, dst_access) = if host {
        (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ)
    } else {
        let all = vk::AccessFlags::SHADER_READ
            | vk::AccessFlags::SHADER_WRITE
            | vk::AccessFlags::TRANSFER_READ
            | vk::AccessFlags::TRANSFER_WRITE;
        (work, all)
    };
    let mb = [vk::MemoryBarrier::default().src_access_mask(writes).dst_access_mask(dst_access)];
    // SAFETY: guaranteed by the caller.
    unsafe { dev.cmd_pipeline_barrier(cmd, work, dst_stage, vk::DependencyFlags::empty(), &mb, &[], &[]) }
}

/// Submits `cmd` to `queue`, signalling `value` on the timeline semaphore `timeline`, its
/// commands waiting first for each timeline semaphore of `waits` to reach its value.
///
/// # Safety
/// All handles belong to the live `dev`; the caller holds the queue's lock; `cmd` is executable;
/// `value` is greater than every value signalled on `timeline` before; every wait's value is
/// signalled, or will be, by work already issued (or the queue never gets past it).
pub(super) unsafe fn submit(
    dev: &ash::Device,
    queue: vk::Queue,
    cmd: vk::CommandBuffer,
    (timeline, value): (vk::Semaphore, u64),
    waits: &[(vk::Semaphore, u64)],
) -> ash::prelude::VkResult<()> {
    let cmds = [cmd];
    let sems = [timeline];
    let values = [value];
    let wait_sems: Vec<vk::Semaphore> = waits.iter().map(|w| w.0).collect();
    let wait_values: Vec<u64> = waits.iter().map(|w| w.1).collect();
    let stages = vec![vk::PipelineStageFlags::ALL_COMMANDS; waits.len()];
    let mut timeline_info = vk::TimelineSemaphoreSubmitInfo::default()
        .signal_semaphore_values(&values)
        .wait_semaphore_values(&wait_values);
    let info = [vk::SubmitInfo::default()
        .command_buffers(&cmds)
        .signal_semaphores(&sems)
        .wait_semaphores(&wait_sems)
        .wait_dst_stage_mask(&stages)
        .push_next(&mut timeline_info)];
    // SAFETY: guaranteed by the caller.
    unsafe { dev.queue_submit(queue, &info, vk::Fence::null()) }
}

/// Blocks until `timeline` reaches `value`.
///
/// # Safety
/// `timeline` is a timeline semaphore of the live `dev`.
pub(super) unsafe fn wait_timeline(
    dev: &ash::Device,
    timeline: vk::Semaphore,
    value: u64,
) -> ash::prelude::VkResult<()> {
    let sems = [timeline];
    let values = [value];
    let info = vk::SemaphoreWaitInfo::default().semaphores(&sems).values(&values);
    // SAFETY: guaranteed by the caller.
    unsafe { dev.wait_semaphores(&info, u64::MAX) }
}

/// A timeline semaphore starting at 0, exportable as an opaque file descriptor if `export`.
///
/// # Safety
/// `dev` is a live device with the timelineSemaphore feature enabled (and, if `export`,
/// `VK_KHR_external_semaphore_fd`); destroy the result on it.
pub(super) unsafe fn create_timeline(
    dev: &ash::Device,
    export: bool,
) -> ash::prelude::VkResult<vk::Semaphore> {
    let mut kind =
        vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE).initial_value(0);
    let mut exported = vk::ExportSemaphoreCreateInfo::default()
        .handle_types(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
    let mut info = vk::SemaphoreCreateInfo::default().push_next(&mut kind);
    if export {
        info = info.push_next(&mut exported);
    }
    // SAFETY: guaranteed by the caller.
    unsafe { dev.create_semaphore(&info, None) }
}

/// A buffer of `size` bytes that can be bound to imported host memory, usable as a copy source
/// and destination.
///
/// # Safety
/// `dev` must be a live device with `VK_EXT_external_memory_host` enabled; the buffer must be
/// destroyed with [`destroy_buffer`] on it.
pub(super) unsafe fn create_host_import_buffer(
    dev: &ash::Device,
    size: u64,
) -> ash::prelude::VkResult<vk::Buffer> {
    let usage = vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST;
    // SAFETY: as the caller guarantees.
    unsafe {
        create_external_buffer(dev, size, usage, vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT)
    }
}

/// Imports the `size` bytes of host memory at `ptr` as device memory of a type in `type_bits`
/// that the driver also accepts for that pointer.
///
/// # Safety
/// `dev` is live with `VK_EXT_external_memory_host` enabled and `ext` loaded from it; `ptr` and
/// `size` are multiples of `minImportedHostPointerAlignment`; the host memory stays allocated
/// until the returned memory is freed (with `vkFreeMemory` on `dev`).
pub(super) unsafe fn import_host_memory(
    dev: &ash::Device,
    ext: &ash::ext::external_memory_host::Device,
    ptr: *mut std::ffi::c_void,
    size: u64,
    type_bits: u32,
) -> ash::prelude::VkResult<vk::DeviceMemory> {
    let handle_type = vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
    let mut props = vk::MemoryHostPointerPropertiesEXT::default();
    // SAFETY: guaranteed by the caller; `props` is written during the call.
    unsafe { (ext.fp().get_memory_host_pointer_properties_ext)(dev.handle(), handle_type, ptr, &mut props) }
        .result()?;
    let usable = props.memory_type_bits & type_bits;
    if usable == 0 {
        return Err(vk::Result::ERROR_INVALID_EXTERNAL_HANDLE);
    }
    let mut import = vk::ImportMemoryHostPointerInfoEXT::default().handle_type(handle_type).host_pointer(ptr);
    let info = vk::MemoryAllocateInfo::default()
        .allocation_size(size)
        .memory_type_index(usable.trailing_zeros())
        .push_next(&mut import);
    // SAFETY: guaranteed by the caller; the memory type is one the driver accepts for `ptr`.
    unsafe { dev.allocate_memory(&info, None) }
}

/// A storage and transfer buffer of `size` bytes whose memory may be exported as an opaque file
/// descriptor.
///
/// # Safety
/// `dev` is live with `VK_KHR_external_memory_fd` enabled.
pub(super) unsafe fn create_export_buffer(
    dev: &ash::Device,
    size: u64,
) -> ash::prelude::VkResult<vk::Buffer> {
    let usage = vk::BufferUsageFlags::STORAGE_BUFFER
        | vk::BufferUsageFlags::TRANSFER_SRC
        | vk::BufferUsageFlags::TRANSFER_DST;
    // SAFETY: as the caller guarantees.
    unsafe { create_external_buffer(dev, size, usage, vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD) }
}

/// A buffer of `size` bytes for `usage` whose memory is of the external handle type `handle`.
///
/// # Safety
/// `dev` is live with the extension of `handle` enabled.
unsafe fn create_external_buffer(
    dev: &ash::Device,
    size: u64,
    usage: vk::BufferUsageFlags,
    handle: vk::ExternalMemoryHandleTypeFlags,
) -> ash::prelude::VkResult<vk::Buffer> {
    let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle);
    let info = vk::BufferCreateInfo::default()
        .size(size)
        .usage(usage)
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .push_next(&mut external);
    // SAFETY: the caller guarantees `dev` is live with the extension; `info` is valid.
    unsafe { dev.create_buffer(&info, None) }
}

/// `size` bytes of device memory of type `type_index`, exportable as an opaque file descriptor.
///
/// # Safety
/// `dev` is live with `VK_KHR_external_memory_fd` enabled; the memory is freed on `dev`.
pub(super) unsafe fn allocate_exportable(
    dev: &ash::Device,
    size: u64,
    type_index: u32,
) -> ash::prelude::VkResult<vk::DeviceMemory> {
    let mut export =
        vk::ExportMemoryAllocateInfo::default().handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let info = vk::MemoryAllocateInfo::default()
        .allocation_size(size)
        .memory_type_index(type_index)
        .push_next(&mut export);
    // SAFETY: guaranteed by the caller.
    unsafe { dev.allocate_memory(&info, None) }
}

/// A new file descriptor naming the payload of `semaphore` (created exportable as an opaque
/// descriptor), owned by the caller.
///
/// # Safety
/// `semaphore` was created on the device `ext` was loaded from, with the opaque-fd export type.
pub(super) unsafe fn semaphore_fd(
    ext: &ash::khr::external_semaphore_fd::Device,
    semaphore: vk::Semaphore,
) -> ash::prelude::VkResult<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let info = vk::SemaphoreGetFdInfoKHR::default()
        .semaphore(semaphore)
        .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
    // SAFETY: guaranteed by the caller.
    let fd = unsafe { ext.get_semaphore_fd(&info) }?;
    // SAFETY: the driver made a new descriptor for this call; nobody else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// A new file descriptor naming `memory` (allocated exportable), owned by the caller.
///
/// # Safety
/// `memory` was allocated on the device `ext` was loaded from, with the opaque-fd export type.
pub(super) unsafe fn memory_fd(
    ext: &ash::khr::external_memory_fd::Device,
    memory: vk::DeviceMemory,
) -> ash::prelude::VkResult<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let info = vk::MemoryGetFdInfoKHR::default()
        .memory(memory)
        .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    // SAFETY: guaranteed by the caller.
    let fd = unsafe { ext.get_memory_fd(&info) }?;
    // SAFETY: the driver made a new descriptor for this call; nobody else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}
