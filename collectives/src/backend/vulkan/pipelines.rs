//! The compute pipelines, built once per device on first use and cached: one fold kernel per
//! dtype and op, one cast kernel per dtype pair, and the strided byte copy. The SPIR-V was compiled from
//! `shaders/` by naga in `build.rs`.
//!
//! The fold kernels are one per (dtype, op) rather than one per dtype with the op chosen at run
//! time: a SIMD implementation such as lavapipe would otherwise run every op's code for each
//! element (it was 5x slower).

use std::collections::HashMap;
use std::sync::Arc;

use ash::vk;
use parking_lot::Mutex;

use super::device::Gpu;
use super::features::FOLD_BINDINGS;
use super::raw::{self, check};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::BinaryOp;

mod spirv {
    include!(concat!(env!("OUT_DIR"), "/spirv.rs"));
}

/// Bytes of push constants every pipeline layout reserves (the largest kernel parameters).
pub(super) const PUSH_BYTES: u32 = 80;

/// Which kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Key {
    /// Binary ops, the n-ary reduce and scale of one dtype, folding with one op.
    Fold(DType, BinaryOp),
    /// Conversion from the first dtype to the second (never equal).
    Cast(DType, DType),
    /// Strided byte copy (slice and concat).
    CopyBytes,
}

impl Key {
    fn spirv(self) -> &'static [u8] {
        match self {
            Key::Fold(d, op) => spirv::FOLD[index(d)][op_index(op)],
            Key::Cast(a, b) => spirv::CAST[index(a)][index(b)],
            Key::CopyBytes => spirv::COPY_BYTES,
        }
    }

    /// Storage buffers the kernel binds.
    fn bindings(self) -> u32 {
        match self {
            Key::Fold(..) => FOLD_BINDINGS,
            Key::Cast(..) | Key::CopyBytes => 2,
        }
    }
}

fn index(d: DType) -> usize {
    DType::ALL.iter().position(|&x| x == d).expect("every dtype is in ALL")
}

/// The op's place in the kernel table (the order of `build.rs`'s `OPS`).
fn op_index(op: BinaryOp) -> usize {
    match op {
        BinaryOp::Add => 0,
        BinaryOp::Sub => 1,
        BinaryOp::Mul => 2,
        BinaryOp::Div => 3,
        BinaryOp::Max => 4,
        BinaryOp::Min => 5,
    }
}

/// A compute pipeline with its layouts.
pub(super) struct Pipeline {
    pub pipeline: vk::Pipeline,
    pub layout: vk::PipelineLayout,
    pub set_layout: vk::DescriptorSetLayout,
    /// Storage buffers it binds, at bindings `0..bindings`.
    pub bindings: u32,
}

/// The cache of one device's pipelines.
#[derive(Default)]
pub(super) struct Pipelines {
    cache: Mutex<HashMap<Key, Arc<Pipeline>>>,
}

impl Pipelines {
    /// The pipeline for `key`, built on first use.
    pub fn get(&self, gpu: &Gpu, key: Key) -> Result<Arc<Pipeline>> {
        let mut cache = self.cache.lock();
        if let Some(p) = cache.get(&key) {
            return Ok(p.clone());
        }
        let p = Arc::new(build(gpu, key)?);
        cache.insert(key, p.clone());
        Ok(p)
    }

    /// Pipelines built so far.
    #[cfg(feature = "failpoints")]
    pub fn len(&self) -> usize {
        self.cache.lock().len()
    }

    /// Destroys every pipeline.
    ///
    /// # Safety
    /// `dev` is the device they were built on, and it is idle.
    pub unsafe fn destroy(&mut self, dev: &ash::Device) {
        for (_, p) in self.cache.get_mut().drain() {
            // SAFETY: guaranteed by the caller; each handle is destroyed once.
            unsafe { destroy(dev, p.pipeline, p.layout, p.set_layout) };
        }
    }
}

/// Destroys whichever handles are not null.
///
/// # Safety
/// The handles belong to the idle `dev` and are not used again.
unsafe fn destroy(
    dev: &ash::Device,
    pipeline: vk::Pipeline,
    layout: vk::PipelineLayout,
    set: vk::DescriptorSetLayout,
) {
    // SAFETY: guaranteed by the caller; destroying a null handle is a no-op in Vulkan.
    unsafe {
        dev.destroy_pipeline(pipeline, None);
        dev.destroy_pipeline_layout(layout, None);
        dev.destroy_descriptor_set_layout(set, None);
    }
}

fn build(gpu: &Gpu, key: Key) -> Result<Pipeline> {
    let code = key.spirv();
    if code.is_empty() {
        return Err(Error::driver(gpu.device, format!("{key:?}"), "no kernel for an identity cast"));
    }
    let dev = &gpu.raw;
    let device = gpu.device;
    // SAFETY: every handle made here is on the live `dev` and is destroyed below on failure (the
    // module always, once the pipeline exists or not), or by `Pipelines::destroy`.
    unsafe {
        let module = check(device, "vkCreateShaderModule", raw::create_shader_module(dev, code))?;
        let made = (|| {
            let set_layout =
                check(device, "vkCreateDescriptorSetLayout", raw::create_set_layout(dev, key.bindings()))?;
            let layout = match raw::create_pipeline_layout(dev, set_layout, PUSH_BYTES) {
                Ok(l) => l,
                Err(e) => {
                    destroy(dev, vk::Pipeline::null(), vk::PipelineLayout::null(), set_layout);
                    return Err(raw::vk_error(device, "vkCreatePipelineLayout", e));
                }
            };
            match raw::create_compute_pipeline(dev, module, layout) {
                Ok(pipeline) => Ok(Pipeline { pipeline, layout, set_layout, bindings: key.bindings() }),
                Err(e) => {
                    destroy(dev, vk::Pipeline::null(), layout, set_layout);
                    Err(raw::vk_error(device, "vkCreateComputePipelines", e))
                }
            }
        })();
        dev.destroy_shader_module(module, None);
        made
    }
}
