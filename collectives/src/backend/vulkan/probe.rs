//! A timing probe for the GPU machine (ignored in ordinary runs): what a small Vulkan call costs
//! and how much of it is the host's wait.
//!
//! Each row times the same work `ITERS` times, one call at a time, and prints the median and the
//! tenth percentile in µs: an empty submission (one barrier) waited for by blocking in
//! `vkWaitSemaphores` and by polling the timeline; the submission alone; the backend's 4 KiB add
//! (tensors in host memory below the device's bound) waited for both ways; and the library's
//! `local_reduce` of two 4 KiB shards on `vulkan:0` with the process's wait
//! (`COLLECTIVES_VULKAN_SPIN_US`).

use super::raw;
use super::submit::{Recorder, TimelineFence};
use super::tests::device_kernels as backend;
use crate::backend::timing::{self, row};
use crate::backend::{Backend, Buffer, Kernel, OutSpec};
use crate::device::Device;
use crate::dtype::DType;
use crate::graph::{BinaryOp, ReduceKind, Tensor};

const ITERS: usize = 2000;
const N: usize = 1024;

/// [`timing::time`] over `ITERS` runs.
fn time(f: impl FnMut()) -> (f64, f64) {
    timing::time(ITERS, f)
}

#[test]
#[ignore = "a timing probe for the GPU machine"]
fn small_call_waits_probe() {
    let Some(vk) = backend() else { return };
    let gpu = &vk.gpu;
    let block = |value: u64| {
        // SAFETY: the timeline belongs to this live device.
        unsafe { raw::wait_timeline(&gpu.raw, gpu.timeline, value) }.unwrap();
    };
    let poll = |value: u64| while gpu.completed().unwrap() < value {};
    let empty = || Recorder::begin(gpu).unwrap().submit().unwrap().value;
    row("empty submission + vkWaitSemaphores", time(|| block(empty())));
    row("empty submission + polling the timeline", time(|| poll(empty())));
    let host = time(|| {
        empty();
    });
    gpu.synchronize().unwrap();
    row("empty submission alone (host time, back to back)", host);

    let up = |v: f32| vk.htod(&Buffer::from_vec(Device::Cpu(0), vec![v; N])).unwrap();
    let (a, b) = (up(1.5), up(2.5));
    a.wait().unwrap();
    b.wait().unwrap();
    let spec = OutSpec { dtype: DType::F32, len: N };
    let add = || {
        let out = vk.compute(&Kernel::Binary(BinaryOp::Add), &[&a, &b], spec).unwrap();
        let fence = out.fence.clone().expect("a submission's fence");
        fence.as_any().downcast_ref::<TimelineFence>().expect("a timeline fence").value
    };
    row("4 KiB add + vkWaitSemaphores", time(|| block(add())));
    row("4 KiB add + polling the timeline", time(|| poll(add())));

    let d = Device::Vulkan(0);
    let shard = |v: f32| Tensor::from_vec(vec![v; N], [N], d).unwrap();
    let shards = [shard(1.5), shard(2.5)];
    crate::realize(&shards).unwrap();
    let spin = std::env::var(super::VULKAN_SPIN_ENV).unwrap_or_else(|_| "unset".into());
    row(
        &format!("Tensor::reduce + realize + drop (local_reduce; {} {spin})", super::VULKAN_SPIN_ENV),
        time(|| {
            let t = Tensor::reduce(&shards, ReduceKind::Sum, None).unwrap();
            crate::realize(std::slice::from_ref(&t)).unwrap();
        }),
    );
}
