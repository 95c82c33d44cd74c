//! Vulkan slice views: a contiguous range of a tensor's buffer as a `VkBuffer` of its own, bound
//! to the same memory, so a `narrow` reads its source in place instead of costing a submission.
//!
//! Why a buffer of its own rather than an offset carried beside the buffer: every kernel, copy,
//! readback and bridge of this backend binds whole buffers, so a view they cannot tell from a
//! buffer needs no change in any of them. The price is the alignment a buffer's memory must have
//! (the driver's `VkMemoryRequirements::alignment`, and the kernels' 16-byte blocks): a slice
//! starting elsewhere is still a copy. The view holds its parent, so the memory outlives it;
//! tensors are immutable once realized, so its bytes never change under it.
//!
//! ```
//! use collectives::{Device, Tensor};
//! # if !collectives::available_devices().contains(&Device::Vulkan(0)) { return Ok(()); }
//! let t = Tensor::from_vec((0..4096).map(|i| i as f32).collect(), [64, 64], Device::Vulkan(0))?;
//! // Rows 16..32 start 4 KiB into the buffer: read in place.
//! let rows = t.narrow(0, 16, 16)?;
//! assert_eq!(rows.to_vec::<f32>()?[0], 1024.0);
//! # Ok::<(), collectives::Error>(())
//! ```

use super::memory::{DevBuf, VkMem};
use crate::backend::{Buffer, Mem};
use crate::error::Result;

/// `len` elements of Vulkan buffer `input` from byte `offset` on, read in place: a buffer of its
/// own bound to the same memory ([`DevBuf::view`]), ready when `input` is. `None` where the range
/// cannot be bound so (it starts off the memory's alignment, at least 16 bytes); the caller then
/// copies. The caller checked the range against the buffer.
pub(crate) fn view(input: &Buffer, offset: usize, len: usize) -> Result<Option<Buffer>> {
    let m = input.device_mem::<VkMem>("slice view")?;
    let bytes = (len * input.dtype.size()) as u64;
    let Some(buf) = DevBuf::view(&m.0, offset as u64, bytes)? else { return Ok(None) };
    let mem = Mem::Device(Box::new(VkMem(buf)));
    Ok(Some(Buffer { device: input.device, dtype: input.dtype, len, mem, fence: input.fence.clone() }))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rand::Rng;

    use super::super::VulkanBackend;
    use super::super::memory::Usage;
    use super::super::tests::backend;
    use super::*;
    use crate::backend::{Backend, Kernel, OutSpec};
    use crate::device::Device;
    use crate::dtype::DType;
    use crate::graph::BinaryOp;

    fn random(n: usize) -> Vec<f32> {
        let mut rng = rand::rng();
        (0..n).map(|_| rng.random_range(-100.0..100.0)).collect()
    }

    fn read(vk: &VulkanBackend, b: &Buffer) -> Vec<f32> {
        let host = vk.dtoh(b, Device::Cpu(0)).unwrap();
        host.wait().unwrap();
        bytemuck::cast_slice(host.host_bytes("test").unwrap()).to_vec()
    }

    fn is_view(b: &Buffer) -> bool {
        b.device_mem::<VkMem>("test").unwrap().0.parent.is_some()
    }

    /// Views at 4 KiB steps (on every device's alignment) of a tensor in device memory and of one
    /// in host memory, read by a copy to the host, an add of two views, a 3-input reduce, a cast
    /// and a view of a view, every element against the f64 reference; then read again after the
    /// parent is dropped.
    #[test]
    fn aligned_slices_are_views_every_kernel_reads_right() {
        let Some(vk) = backend() else { return };
        for n in [1 << 12, 1 << 19] {
            let values = random(n);
            let parent = Arc::new(vk.htod(&Buffer::from_vec(Device::Cpu(0), values.clone())).unwrap());
            let at = |start: usize, len: usize| {
                let v = view(&parent, start * 4, len).unwrap().expect("a 4 KiB-aligned view");
                assert!(is_view(&v) && v.len == len);
                v
            };
            let len = n / 4 - 5; // not a whole number of 16-byte blocks
            let (a, b, c) = (at(0, len), at(1024, len), at(n / 2, len));
            for (v, start) in [(&a, 0), (&b, 1024), (&c, n / 2)] {
                assert_eq!(read(&vk, v), values[start..start + len], "view at {start}");
            }
            let spec = OutSpec { dtype: DType::F32, len };
            let sum = vk.compute(&Kernel::Binary(BinaryOp::Add), &[&a, &b], spec).unwrap();
            let folded = vk
                .compute(
                    &Kernel::Reduce { kind: crate::graph::ReduceKind::Sum, scale: None },
                    &[&a, &b, &c],
                    spec,
                )
                .unwrap();
            let (sum, folded) = (read(&vk, &sum), read(&vk, &folded));
            for i in 0..len {
                let (x, y, z) = (values[i] as f64, values[1024 + i] as f64, values[n / 2 + i] as f64);
                assert!((sum[i] as f64 - (x + y)).abs() <= 1e-5 * (x + y).abs().max(1.0), "add {i}");
                assert!(
                    (folded[i] as f64 - (x + y + z)).abs() <= 1e-4 * (x + y + z).abs().max(1.0),
                    "reduce {i}"
                );
            }
            let half = vk.compute(&Kernel::Cast, &[&b], OutSpec { dtype: DType::F16, len }).unwrap();
            let back = vk.compute(&Kernel::Cast, &[&half], spec).unwrap();
            for (i, got) in read(&vk, &back).into_iter().enumerate() {
                let want = half::f16::from_f32(values[1024 + i]).to_f32();
                assert_eq!(got, want, "cast {i}");
            }
            let inner = view(&b, 4096, 100).unwrap().expect("a view of a view");
            assert_eq!(read(&vk, &inner), values[2048..2148], "a view of a view starts in the parent");
            drop(parent);
            assert_eq!(read(&vk, &c), values[n / 2..n / 2 + len], "the view keeps the memory");
        }
    }

    /// A start off 16 bytes, or a range whose binding would run past the memory, is no view.
    #[test]
    fn unaligned_or_overrunning_ranges_are_not_views() {
        let Some(vk) = backend() else { return };
        let parent = DevBuf::new(&vk.gpu, 1 << 20, Usage::Device).unwrap();
        assert!(DevBuf::view(&parent, 4, 64).unwrap().is_none(), "4 bytes in");
        assert!(DevBuf::view(&parent, 24, 64).unwrap().is_none(), "24 bytes in");
        assert!(DevBuf::view(&parent, 0, 64).unwrap().is_some(), "the start");
        assert!(DevBuf::view(&parent, 1 << 21, 64).unwrap().is_none(), "past the end");
    }

    /// Through the graph: a `narrow` of a Vulkan tensor at an aligned element is a view, at an
    /// unaligned one a copy, and both read right.
    #[test]
    fn narrow_of_a_vulkan_tensor_reads_in_place_where_aligned() {
        if backend().is_none() {
            return;
        }
        let values = random(4096);
        let t = crate::Tensor::from_vec(values.clone(), [4096], Device::Vulkan(0)).unwrap();
        t.realize().unwrap();
        // 4 KiB in: on every device's alignment; 12 bytes in: off the kernels' 16-byte blocks.
        for (start, len, viewed) in [(1024, 1000, true), (3, 1000, false)] {
            let part = t.narrow(0, start, len).unwrap();
            part.realize().unwrap();
            assert_eq!(is_view(&part.value().unwrap()), viewed, "from {start}");
            assert_eq!(part.to_vec::<f32>().unwrap(), values[start..start + len]);
        }
    }
}
