//! Recording and submitting work on a device's queue, and knowing when it is done.
//!
//! Every operation records one command buffer ([`Recorder`]) and submits it, signalling the next
//! value of the device's timeline semaphore. Dependencies between operations on one device need
//! no waits: each command buffer starts with a barrier on all earlier compute and transfer writes,
//! which covers everything submitted before it on the queue. The buffers a submission reads or
//! writes are kept alive (`Arc`s) until its value is reached; [`QueueState::retire`] then recycles
//! its command buffer and descriptor pools. A buffer returned to the executor carries a
//! [`TimelineFence`], which host readers wait on.

use std::any::Any;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use ash::vk;
use parking_lot::MutexGuard;

use super::device::Gpu;
use super::instance;
use super::memory::DevBuf;
use super::pipelines::Pipeline;
use super::raw::{self, check};
use crate::backend::Fence;
use crate::device::Device;
use crate::error::Result;

/// Descriptor sets per pool, and storage buffers per set.
const SETS_PER_POOL: u32 = 64;
const BUFFERS_PER_SET: u32 = super::features::FOLD_BINDINGS;

/// A submitted command buffer and what it must keep alive.
struct InFlight {
    value: u64,
    cmd: vk::CommandBuffer,
    pools: Vec<vk::DescriptorPool>,
    _keep: Vec<Arc<DevBuf>>,
}

/// The queue's bookkeeping: recycled command buffers and descriptor pools, work in flight.
pub(super) struct QueueState {
    device: Device,
    pool: vk::CommandPool,
    free_cmds: Vec<vk::CommandBuffer>,
    free_pools: Vec<vk::DescriptorPool>,
    in_flight: VecDeque<InFlight>,
    last: u64,
    /// Command buffers and descriptor pools made so far (for `failpoint::resources`).
    #[cfg(feature = "failpoints")]
    made: (u64, u64),
}

impl QueueState {
    /// A command pool on `family`.
    pub fn new(device: Device, dev: &ash::Device, family: u32) -> Result<Self> {
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: `dev` is live; the pool is destroyed in `destroy`.
        let pool = check(device, "vkCreateCommandPool", unsafe { dev.create_command_pool(&info, None) })?;
        Ok(QueueState {
            device,
            pool,
            free_cmds: vec![],
            free_pools: vec![],
            in_flight: VecDeque::new(),
            last: 0,
            #[cfg(feature = "failpoints")]
            made: (0, 0),
        })
    }

    /// The timeline value of the last submission.
    pub fn last_submitted(&self) -> u64 {
        self.last
    }

    /// Recycles everything whose submission has completed (dropping the buffers it kept).
    pub fn retire(&mut self, gpu: &Gpu) -> Result<()> {
        let done = gpu.completed()?;
        while self.in_flight.front().is_some_and(|f| f.value <= done) {
            let f = self.in_flight.pop_front().expect("checked");
            // SAFETY: the submission completed, so its command buffer and pools are unused.
            unsafe {
                check(
                    self.device,
                    "vkResetCommandBuffer",
                    gpu.raw.reset_command_buffer(f.cmd, vk::CommandBufferResetFlags::empty()),
                )?;
                for p in &f.pools {
                    check(
                        self.device,
                        "vkResetDescriptorPool",
                        gpu.raw.reset_descriptor_pool(*p, vk::DescriptorPoolResetFlags::empty()),
                    )?;
                }
            }
            self.free_cmds.push(f.cmd);
            self.free_pools.extend(f.pools);
        }
        Ok(())
    }

    /// Destroys the pools (freeing their command buffers and sets).
    ///
    /// # Safety
    /// `dev` is the device they belong to, and it is idle.
    pub unsafe fn destroy(&mut self, dev: &ash::Device) {
        self.in_flight.clear();
        // SAFETY: guaranteed by the caller.
        unsafe {
            for p in self.free_pools.drain(..) {
                dev.destroy_descriptor_pool(p, None);
            }
            dev.destroy_command_pool(self.pool, None);
        }
    }

    fn command_buffer(&mut self, dev: &ash::Device) -> Result<vk::CommandBuffer> {
        if let Some(c) = self.free_cmds.pop() {
            return Ok(c);
        }
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(self.pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool is this device's and the caller holds the state lock.
        let cmds =
            check(self.device, "vkAllocateCommandBuffers", unsafe { dev.allocate_command_buffers(&info) })?;
        let cmd = cmds[0];
        #[cfg(feature = "failpoints")]
        {
            self.made.0 += 1;
        }
        Ok(cmd)
    }

    fn descriptor_pool(&mut self, dev: &ash::Device) -> Result<vk::DescriptorPool> {
        if let Some(p) = self.free_pools.pop() {
            return Ok(p);
        }
        // SAFETY: `dev` is live; the pool is destroyed in `destroy`.
        let pool = check(self.device, "vkCreateDescriptorPool", unsafe {
            raw::create_descriptor_pool(dev, SETS_PER_POOL, BUFFERS_PER_SET)
        })?;
        #[cfg(feature = "failpoints")]
        {
            self.made.1 += 1;
        }
        Ok(pool)
    }

    /// The queue's figures (see `crate::failpoint::resources`): submissions in flight, and the
    /// command buffers and descriptor pools made but neither free nor in flight (lost).
    #[cfg(feature = "failpoints")]
    pub fn resources(&self) -> [(&'static str, u64); 3] {
        let cmds = (self.free_cmds.len() + self.in_flight.len()) as u64;
        let pools =
            (self.free_pools.len() + self.in_flight.iter().map(|f| f.pools.len()).sum::<usize>()) as u64;
        [
            ("in flight", self.in_flight.len() as u64),
            ("command buffers lost", self.made.0 - cmds),
            ("descriptor pools lost", self.made.1 - pools),
        ]
    }
}

/// One range of a buffer bound to a kernel's binding.
#[derive(Clone, Copy)]
pub(super) struct Binding<'a> {
    pub buf: &'a Arc<DevBuf>,
    pub offset: u64,
    pub range: u64,
}

/// A command buffer being recorded, holding the queue's lock until it is submitted.
pub(super) struct Recorder<'g> {
    gpu: &'g Arc<Gpu>,
    state: MutexGuard<'g, QueueState>,
    cmd: vk::CommandBuffer,
    pools: Vec<vk::DescriptorPool>,
    sets_left: u32,
    keep: Vec<Arc<DevBuf>>,
    /// Points of other timelines (a CUDA copy's signal) the submission waits for first.
    waits: Vec<(vk::Semaphore, u64)>,
}

impl<'g> Recorder<'g> {
    /// Starts a command buffer, ordered after all work submitted before it.
    pub fn begin(gpu: &'g Arc<Gpu>) -> Result<Self> {
        let mut state = gpu.state.lock();
        state.retire(gpu)?;
        let cmd = state.command_buffer(&gpu.raw)?;
        let info = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: `cmd` is a reset command buffer of this device, recorded under the state lock.
        unsafe {
            if let Err(e) = gpu.raw.begin_command_buffer(cmd, &info) {
                state.free_cmds.push(cmd);
                return Err(raw::vk_error(gpu.device, "vkBeginCommandBuffer", e));
            }
            raw::barrier(&gpu.raw, cmd, false);
        }
        Ok(Recorder { gpu, state, cmd, pools: vec![], sets_left: 0, keep: vec![], waits: vec![] })
    }

    /// The device the work runs on.
    pub fn gpu(&self) -> &'g Arc<Gpu> {
        self.gpu
    }

    /// Keeps `buf` alive until the submission completes.
    pub fn keep(&mut self, buf: &Arc<DevBuf>) {
        self.keep.push(buf.clone());
    }

    /// Makes the submission wait, on the device, for each timeline point of `waits` (semaphores
    /// of this device, see [`super::foreign_waits`]).
    pub fn wait_for(&mut self, waits: &[(vk::Semaphore, u64)]) {
        self.waits.extend_from_slice(waits);
    }

    /// Orders everything recorded so far before what is recorded next.
    pub fn barrier(&mut self) {
        // SAFETY: `cmd` is recording.
        unsafe { raw::barrier(&self.gpu.raw, self.cmd, false) };
    }

    /// Copies byte ranges `regions` of `src` into `dst`, their offsets counted from each buffer's
    /// data (past its [`DevBuf::skew`]).
    pub fn copy(&mut self, src: &Arc<DevBuf>, dst: &Arc<DevBuf>, regions: &[vk::BufferCopy]) {
        if regions.is_empty() {
            return;
        }
        self.keep(src);
        self.keep(dst);
        let regions = skewed(regions, src, dst);
        // SAFETY: both buffers are live (kept) and the regions lie within them (callers' plans).
        unsafe { self.gpu.raw.cmd_copy_buffer(self.cmd, src.buffer, dst.buffer, &regions) };
    }

    /// Records a copy of `regions` from `src` into `dst` as [`Recorder::copy`] does, but without
    /// keeping `src` alive: for memory that must be freed before what backs it is (a host
    /// buffer's import, `register.rs`), whose owner waits for this submission by other means.
    ///
    /// # Safety
    /// `src` stays alive until this submission has run (or is never submitted).
    pub unsafe fn copy_borrowed(&mut self, src: &DevBuf, dst: &Arc<DevBuf>, regions: &[vk::BufferCopy]) {
        if regions.is_empty() {
            return;
        }
        self.keep(dst);
        let regions = skewed(regions, src, dst);
        // SAFETY: `src` is live until the submission has run (the caller), `dst` is kept, and the
        // regions lie within both (the caller's plan).
        unsafe { self.gpu.raw.cmd_copy_buffer(self.cmd, src.buffer, dst.buffer, &regions) };
    }

    /// Runs `pipeline` over `invocations` (a 2D grid where one dimension is too small), with
    /// `bindings` at bindings `0..` and `push` as its push constants.
    pub fn dispatch(
        &mut self,
        pipeline: &Pipeline,
        bindings: &[Binding<'_>],
        push: &[u8],
        invocations: u64,
    ) -> Result<()> {
        crate::failpoint::hit(self.gpu.device, "vulkan dispatch")?;
        if invocations == 0 {
            return Ok(());
        }
        let (gx, gy) = grid(self.gpu, invocations)?;
        let infos: Vec<vk::DescriptorBufferInfo> = bindings
            .iter()
            .map(|b| vk::DescriptorBufferInfo::default().buffer(b.buf.buffer).offset(b.offset).range(b.range))
            .collect();
        debug_assert_eq!(infos.len() as u32, pipeline.bindings);
        let set = self.descriptor_set(pipeline, &infos)?;
        for b in bindings {
            self.keep(b.buf);
        }
        let dev = &self.gpu.raw;
        // SAFETY: the pipeline, layout and set are this device's; the set's buffers are kept.
        unsafe {
            dev.cmd_bind_pipeline(self.cmd, vk::PipelineBindPoint::COMPUTE, pipeline.pipeline);
            dev.cmd_bind_descriptor_sets(
                self.cmd,
                vk::PipelineBindPoint::COMPUTE,
                pipeline.layout,
                0,
                &[set],
                &[],
            );
            dev.cmd_push_constants(self.cmd, pipeline.layout, vk::ShaderStageFlags::COMPUTE, 0, push);
            dev.cmd_dispatch(self.cmd, gx, gy, 1);
        }
        Ok(())
    }

    fn descriptor_set(
        &mut self,
        pipeline: &Pipeline,
        infos: &[vk::DescriptorBufferInfo],
    ) -> Result<vk::DescriptorSet> {
        if self.sets_left == 0 {
            let p = self.state.descriptor_pool(&self.gpu.raw)?;
            self.pools.push(p);
            self.sets_left = SETS_PER_POOL;
        }
        self.sets_left -= 1;
        let pool = *self.pools.last().expect("a pool");
        // SAFETY: the pool is this recorder's, with room; the layout is the pipeline's.
        let set = unsafe { raw::write_set(&self.gpu.raw, pool, pipeline.set_layout, infos) };
        check(self.gpu.device, "vkAllocateDescriptorSets", set)
    }

    /// Ends and submits the command buffer; returns the fence of its completion.
    pub fn submit(mut self) -> Result<Arc<TimelineFence>> {
        crate::failpoint::hit(self.gpu.device, "vulkan submit")?;
        let dev = &self.gpu.raw;
        let value = self.state.last + 1;
        let (timeline, queue) = ((self.gpu.timeline, value), self.gpu.queue);
        // SAFETY: `cmd` is recording on this device; the queue is used under the state lock;
        // `value` is above every value signalled so far; the waits' values were issued to be
        // signalled (see `wait_for`).
        let submitted = unsafe {
            raw::barrier(dev, self.cmd, true);
            dev.end_command_buffer(self.cmd)
                .and_then(|()| raw::submit(dev, queue, self.cmd, timeline, &self.waits))
        };
        let cmd = std::mem::replace(&mut self.cmd, vk::CommandBuffer::null());
        if let Err(e) = submitted {
            // SAFETY: the command buffer was not submitted.
            unsafe { dev.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty()).ok() };
            self.state.free_cmds.push(cmd);
            return Err(raw::vk_error(self.gpu.device, "vkQueueSubmit", e));
        }
        self.state.last = value;
        let pools = std::mem::take(&mut self.pools);
        let keep = std::mem::take(&mut self.keep);
        self.state.in_flight.push_back(InFlight { value, cmd, pools, _keep: keep });
        instance::validation_result(self.gpu.device)?;
        Ok(Arc::new(TimelineFence { gpu: self.gpu.clone(), value }))
    }
}

impl Drop for Recorder<'_> {
    /// A recorder dropped unsubmitted (an error while planning) gives back its command buffer and
    /// descriptor pools; nothing it recorded ever runs.
    fn drop(&mut self) {
        if self.cmd == vk::CommandBuffer::null() {
            return;
        }
        let dev = &self.gpu.raw;
        // SAFETY: the command buffer and pools were never submitted.
        unsafe {
            let _ = dev.end_command_buffer(self.cmd);
            let _ = dev.reset_command_buffer(self.cmd, vk::CommandBufferResetFlags::empty());
            for p in &self.pools {
                let _ = dev.reset_descriptor_pool(*p, vk::DescriptorPoolResetFlags::empty());
            }
        }
        self.state.free_cmds.push(self.cmd);
        let pools = std::mem::take(&mut self.pools);
        self.state.free_pools.extend(pools);
    }
}

/// `regions`, counted from the data of `src` and `dst`, counted from their buffers' starts (the
/// same regions where neither is skewed, as almost none is).
fn skewed<'r>(regions: &'r [vk::BufferCopy], src: &DevBuf, dst: &DevBuf) -> Cow<'r, [vk::BufferCopy]> {
    if src.skew == 0 && dst.skew == 0 {
        return Cow::Borrowed(regions);
    }
    let at = |r: &vk::BufferCopy| vk::BufferCopy {
        src_offset: r.src_offset + src.skew,
        dst_offset: r.dst_offset + dst.skew,
        size: r.size,
    };
    Cow::Owned(regions.iter().map(at).collect())
}

/// Workgroups of 256 for `invocations`, as (x, y) within the device's limits.
fn grid(gpu: &Gpu, invocations: u64) -> Result<(u32, u32)> {
    const WG: u64 = 256;
    let groups = invocations.div_ceil(WG);
    let max_x = u64::from(gpu.limits.max_groups[0]).min(65535);
    let gx = groups.min(max_x);
    let gy = groups.div_ceil(gx);
    if gy > u64::from(gpu.limits.max_groups[1]) {
        return Err(crate::Error::driver(
            gpu.device,
            "dispatch",
            format!("{invocations} invocations exceed the workgroup grid"),
        ));
    }
    Ok((gx as u32, gy as u32))
}

/// Completion of one submission: the device's timeline reaching `value`.
pub(super) struct TimelineFence {
    pub gpu: Arc<Gpu>,
    pub value: u64,
}

impl Fence for TimelineFence {
    fn wait(&self) -> Result<()> {
        self.gpu.wait(self.value)
    }

    fn is_complete(&self) -> bool {
        self.gpu.completed().is_ok_and(|done| done >= self.value)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
