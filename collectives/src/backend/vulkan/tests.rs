//! The Vulkan backend's own tests, on the machine's first Vulkan device (lavapipe on CI):
//! allocation and its failures, the buffer cache, small tensors in host memory, a kernel waiting
//! for another API's signal, and validation errors surfacing as driver errors.

use super::*;

/// `Vulkan(0)`, or `None` (printing the skip) without one; `REQUIRE_VULKAN=1` makes it a failure.
pub(super) fn backend() -> Option<VulkanBackend> {
    match Gpu::open(0) {
        Ok(gpu) => Some(VulkanBackend { gpu }),
        Err(e) if std::env::var("REQUIRE_VULKAN").is_ok_and(|v| v == "1") => {
            panic!("REQUIRE_VULKAN=1: {e}")
        }
        Err(e) => {
            println!("skipped: no Vulkan device ({e})");
            None
        }
    }
}

/// [`backend`] running every kernel on the device, whatever its size (no kernel is left to the
/// host, `on_host.rs`): for the tests of the shaders and of submissions.
pub(super) fn device_kernels() -> Option<VulkanBackend> {
    host_kernels_below(0)
}

/// [`backend`] whose host runs the elementwise kernels moving fewer than `bytes`
/// (`on_host.rs`), whatever `VULKAN_HOST_KERNEL_BYTES` is.
pub(super) fn host_kernels_below(bytes: u64) -> Option<VulkanBackend> {
    let mut vk = backend()?;
    Arc::get_mut(&mut vk.gpu).expect("a device just opened").host_kernel_below = bytes;
    Some(vk)
}

#[test]
fn allocation_failure_is_out_of_memory() {
    let Some(vk) = backend() else { return };
    let err = DevBuf::new(&vk.gpu, 1 << 50, Usage::Device).err().expect("a petabyte cannot be allocated");
    assert!(matches!(err, Error::OutOfMemory { device: Device::Vulkan(0), .. }), "{err}");
    let err = vk.alloc(DType::F64, 1 << 47).err().expect("too big");
    assert!(err.to_string().contains("out of memory"), "{err}");
}

#[test]
fn freed_buffers_are_reused_by_use_and_size() {
    let Some(vk) = backend() else { return };
    let big = 4 << 20;
    let a = DevBuf::new(&vk.gpu, big, Usage::Device).unwrap();
    let handle = a.buffer;
    drop(a);
    assert_eq!(vk.gpu.cache.lock().bytes(), big, "parked");
    let other_use = DevBuf::new(&vk.gpu, big, Usage::Upload).unwrap();
    let other_size = DevBuf::new(&vk.gpu, big + 16, Usage::Device).unwrap();
    assert!(other_use.buffer != handle && other_size.buffer != handle);
    let again = DevBuf::new(&vk.gpu, big, Usage::Device).unwrap();
    assert_eq!(again.buffer, handle, "the parked buffer comes back");
    assert_eq!(vk.gpu.cache.lock().bytes(), 0);
    drop(DevBuf::new(&vk.gpu, 4096, Usage::Device).unwrap());
    assert_eq!(vk.gpu.cache.lock().bytes(), 0, "small buffers are not parked");
}

#[test]
fn a_full_cache_frees_the_buffers_parked_longest() {
    let Some(vk) = backend() else { return };
    const M: u64 = 1 << 20;
    *vk.gpu.cache.lock() = cache::BufCache::with_limit(10 * M);
    let bufs: Vec<_> = [4 * M, 4 * M, 2 * M].map(|b| DevBuf::new(&vk.gpu, b, Usage::Device).unwrap()).into();
    let handles: Vec<_> = bufs.iter().map(|b| b.buffer).collect();
    drop(bufs);
    assert_eq!(vk.gpu.cache.lock().bytes(), 10 * M, "all parked");
    drop(DevBuf::new(&vk.gpu, 6 * M, Usage::Device).unwrap());
    assert_eq!(vk.gpu.cache.lock().bytes(), 8 * M, "the two 4 MiB buffers made room for 6 MiB");
    assert_eq!(DevBuf::new(&vk.gpu, 2 * M, Usage::Device).unwrap().buffer, handles[2], "the newest stays");
    drop(DevBuf::new(&vk.gpu, 11 * M, Usage::Device).unwrap());
    assert_eq!(vk.gpu.cache.lock().bytes(), 8 * M, "larger than the whole cache: freed, nothing evicted");
}

#[test]
fn a_failed_allocation_empties_the_cache_first() {
    let Some(vk) = backend() else { return };
    drop(DevBuf::new(&vk.gpu, 8 << 20, Usage::Readback).unwrap());
    assert_eq!(vk.gpu.cache.lock().bytes(), 8 << 20);
    let too_big = vk.gpu.limits.max_alloc.min(1 << 46) & !15;
    match DevBuf::new(&vk.gpu, too_big, Usage::Device) {
        Err(err) => {
            assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
            assert_eq!(vk.gpu.cache.lock().bytes(), 0, "emptied before the second try");
        }
        Ok(_) => assert_eq!(vk.gpu.cache.lock().bytes(), 8 << 20, "kept when the first try succeeds"),
    }
}

#[test]
fn small_tensors_go_to_and_from_the_host_without_a_submission() {
    let Some(vk) = backend() else { return };
    if vk.gpu.host_below <= 4096 {
        println!("skipped: {VULKAN_HOST_ENV} keeps 4 KiB tensors in device memory");
        return;
    }
    let values: Vec<f32> = (0..1024).map(|i| i as f32 * 0.37 - 11.0).collect();
    let host = Buffer::from_vec(Device::Cpu(0), values.clone());
    let before = vk.gpu.state.lock().last_submitted();
    let on_device = vk.htod(&host).unwrap();
    let back = vk.dtoh(&on_device, Device::Cpu(1)).unwrap();
    back.wait().unwrap();
    assert_eq!(vk.gpu.state.lock().last_submitted(), before, "a submission was made");
    assert_eq!(back.host_bytes("test").unwrap(), bytemuck::cast_slice::<f32, u8>(&values));
    // A kernel reads and writes such tensors in place, and the host reads its result.
    let spec = OutSpec { dtype: DType::F32, len: values.len() };
    let sum = vk.compute(&Kernel::Binary(BinaryOp::Add), &[&on_device, &on_device], spec).unwrap();
    let twice: Vec<f32> = values.iter().map(|v| v + v).collect();
    let back = vk.dtoh(&sum, Device::Cpu(0)).unwrap();
    back.wait().unwrap();
    assert_eq!(back.host_bytes("test").unwrap(), bytemuck::cast_slice::<f32, u8>(&twice));
}

/// A small strided slice and a concat of tensors in host memory are done by the host: no
/// submission, every byte right, an input still being written by a kernel waited for first.
#[test]
fn small_slices_and_concats_in_host_memory_submit_nothing() {
    let Some(vk) = device_kernels() else { return };
    if vk.gpu.host_below <= 4096 {
        println!("skipped: {VULKAN_HOST_ENV} keeps 4 KiB tensors in device memory");
        return;
    }
    use rand::Rng;
    let mut rng = rand::rng();
    let (rows, cols) = (24usize, 37usize);
    let a: Vec<f32> = (0..rows * cols).map(|_| rng.random_range(-1e3..1e3)).collect();
    let b: Vec<f32> = (0..rows * 5).map(|_| rng.random_range(-1e3..1e3)).collect();
    let up = |v: &[f32]| vk.htod(&Buffer::from_vec(Device::Cpu(0), v.to_vec())).unwrap();
    let (ta, tb) = (up(&a), up(&b));
    // `a + a` by a kernel: the concat below must wait for it.
    let spec = OutSpec { dtype: DType::F32, len: a.len() };
    let twice = vk.compute(&Kernel::Binary(BinaryOp::Add), &[&ta, &ta], spec).unwrap();
    let before = vk.gpu.state.lock().last_submitted();
    let slice = Kernel::Slice { outer: rows, in_mid: cols, start: 3, len: 30, inner: 1 };
    let s = vk.compute(&slice, &[&twice], OutSpec { dtype: DType::F32, len: rows * 30 }).unwrap();
    let concat = Kernel::Concat { outer: rows, mids: vec![30, 5], inner: 1 };
    let c = vk.compute(&concat, &[&s, &tb], OutSpec { dtype: DType::F32, len: rows * 35 }).unwrap();
    assert_eq!(vk.gpu.state.lock().last_submitted(), before, "a submission was made");
    let back = vk.dtoh(&c, Device::Cpu(0)).unwrap();
    back.wait().unwrap();
    let got: &[f32] = bytemuck::cast_slice(back.host_bytes("test").unwrap());
    for r in 0..rows {
        for k in 0..35 {
            let want = if k < 30 { a[r * cols + 3 + k] as f64 * 2.0 } else { b[r * 5 + k - 30] as f64 };
            assert_eq!(got[r * 35 + k] as f64, want, "row {r}, column {k}");
        }
    }
}

#[test]
fn tensors_below_the_bound_are_allocated_in_host_memory() {
    use gpu_allocator::MemoryLocation::{CpuToGpu, GpuOnly, GpuToCpu};
    let below = VULKAN_HOST_BELOW_BYTES;
    assert_eq!(memory::location(Usage::Device, 16, below), GpuToCpu);
    assert_eq!(memory::location(Usage::Device, below - 16, below), GpuToCpu);
    assert_eq!(memory::location(Usage::Device, below, below), GpuOnly);
    assert_eq!(memory::location(Usage::Device, 16, 0), GpuOnly, "0 keeps every tensor on the device");
    assert_eq!(memory::location(Usage::Upload, 16, below), CpuToGpu);
    assert_eq!(memory::location(Usage::Readback, 1 << 30, 0), GpuToCpu);
}

#[test]
fn a_host_buffer_is_not_a_device_buffer() {
    // Lengths and counts are the kernel contract's (`backend::kernel`), checked before any
    // backend runs a kernel; what a backend checks itself is that the memory is its own.
    let Some(vk) = backend() else { return };
    let host = Buffer::from_vec(Device::Cpu(0), vec![1.0f32, 2.0, 3.0]);
    let a = vk.htod(&host).unwrap();
    let spec = OutSpec { dtype: DType::F32, len: 3 };
    let Err(err) = vk.compute(&Kernel::Cast, &[&host], spec) else { panic!("a host buffer was taken") };
    assert!(matches!(err, Error::Internal { .. }), "{err}");
    let ok = vk.compute(&Kernel::Binary(BinaryOp::Add), &[&a, &a], spec).unwrap();
    let back = vk.dtoh(&ok, Device::Cpu(0)).unwrap();
    back.wait().unwrap();
    assert_eq!(back.host_bytes("test").unwrap(), bytemuck::cast_slice::<f32, u8>(&[2.0, 4.0, 6.0]));
}

/// A submission reading a buffer another API writes waits for that writer's signal of an
/// inbound timeline on the device: a kernel issued before the values are written and the
/// timeline is signalled (here from the host, standing in for CUDA's stream) reads the
/// written values, and the host never waits for the writer.
#[test]
fn a_kernel_waits_on_the_device_for_a_foreign_writers_signal() {
    use rand::{Rng, SeedableRng};
    use std::sync::atomic::{AtomicBool, Ordering};
    struct Writer(Arc<AtomicBool>);
    impl Fence for Writer {
        fn wait(&self) -> Result<()> {
            Err(Error::internal("test", "the foreign writer was waited for on the host"))
        }
        fn is_complete(&self) -> bool {
            !self.0.load(Ordering::Acquire)
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }
    let Some(vk) = device_kernels() else { return };
    let n = 4099;
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let x: Vec<f32> = (0..n).map(|_| rng.random_range(-1e3..1e3)).collect();
    let y: Vec<f32> = (0..n).map(|_| rng.random_range(-1e3..1e3)).collect();
    let target = vk.alloc(DType::F32, n).unwrap();
    if !target.is_mapped() {
        println!("skipped: {} tensor memory is not host-visible", vk.gpu.device);
        return;
    }
    let inbound = export::Inbound::unexported(&vk.gpu).unwrap();
    let pending = Arc::new(AtomicBool::new(true));
    let signalled = export::Signalled { copy: Arc::new(Writer(pending.clone())), to: inbound, value: 1 };
    let written = Buffer {
        mem: Mem::Device(Box::new(VkMem(target.clone()))),
        fence: Some(Arc::new(signalled)),
        ..vk.output(target.clone(), DType::F32, n, None)
    };
    let vy = vk.htod(&Buffer::from_vec(Device::Cpu(0), y.clone())).unwrap();
    let spec = OutSpec { dtype: DType::F32, len: n };
    let sum = vk.compute(&Kernel::Binary(BinaryOp::Add), &[&written, &vy], spec).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(!sum.fence.as_ref().expect("submitted").is_complete(), "the kernel waits for the signal");
    // SAFETY: mapped, `n` f32 long; the only submission using it waits for the signal below.
    copy_bytes(bytemuck::cast_slice(&x), unsafe { target.mapped_bytes_mut(n * 4) });
    inbound.signal(&vk.gpu, 1).unwrap();
    pending.store(false, Ordering::Release);
    let back = vk.dtoh(&sum, Device::Cpu(0)).unwrap();
    back.wait().unwrap();
    let got: &[f32] = bytemuck::cast_slice(back.host_bytes("test").unwrap());
    let wrong = (0..n).filter(|&i| got[i] != (f64::from(x[i]) + f64::from(y[i])) as f32).count();
    assert!(got.len() == n && wrong == 0, "{wrong} of {n} wrong");
}

/// Run by hand under the validation layer (it makes an invalid call on purpose, and the
/// errors it records are process-wide, so it must not share a run with other tests):
/// `VK_LOADER_LAYERS_ENABLE='*validation*' cargo test -p collectives --lib -- --ignored validation`
#[test]
#[ignore = "needs the validation layer, alone"]
fn validation_errors_surface_as_driver_errors() {
    let layer = std::env::var("VK_LOADER_LAYERS_ENABLE").is_ok_and(|v| v.contains("validation"));
    if !layer {
        println!("skipped: run with VK_LOADER_LAYERS_ENABLE='*validation*'");
        return;
    }
    let Some(vk) = backend() else { return };
    let buf = DevBuf::new(&vk.gpu, 16, Usage::Device).unwrap();
    let mut rec = Recorder::begin(&vk.gpu).unwrap();
    // VUID-VkBufferCopy-size-01988: a zero-sized region (harmless to run, invalid to ask).
    rec.copy(&buf, &buf, &[vk::BufferCopy { src_offset: 0, dst_offset: 0, size: 0 }]);
    let err = rec.submit().err().expect("the layer reports the zero-sized copy");
    assert!(matches!(&err, Error::Driver { op, .. } if op == "Vulkan validation"), "{err}");
    assert!(err.to_string().contains("01988"), "{err}");
}
