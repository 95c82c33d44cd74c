//! Vulkan slice views: a contiguous range of a tensor's buffer as a `VkBuffer` of its own, bound
//! to the same memory, so a `narrow` reads its source in place instead of costing a submission.
//!
//! Why a buffer of its own rather than an offset carried beside the buffer: every kernel, copy,
//! readback and bridge of this backend binds whole buffers, so a view they cannot tell from a
//! buffer needs little change in any of them. A buffer's memory must be bound on its alignment
//! (the driver's `VkMemoryRequirements::alignment`, and the kernels' 16-byte blocks), so a slice
//! starting elsewhere is bound from the aligned byte below its start, and its `skew` says how far
//! in its data starts: copies and the mapping skip those bytes, the cast and the strided copy
//! start at the element, and the fold reads each 16-byte block of such an input from the two
//! words it straddles (`shaders/fold.wgsl`). The view holds its parent, so the memory outlives
//! it; tensors are immutable once realized, so its bytes never change under it.
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
/// own bound to the same memory ([`DevBuf::view`]), from any element, ready when `input` is.
/// `None` where the range cannot be bound so (its binding would run past the memory, or the
/// memory is imported); the caller then copies. The caller checked the range against the buffer.
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
    use super::super::tests::{backend, device_kernels};
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

    /// Views at every skew (0, 4, 8 and 12 bytes past 16-byte blocks) and at 4 KiB steps, of a
    /// tensor in device memory and of one in host memory, read by a copy to the host, an add of two
    /// views, a 3-input reduce, a cast and a view of a view, every element against the f64
    /// reference; then read again after the parent is dropped. By the device's kernels, then with
    /// the small ones left to the host (`on_host.rs`).
    #[test]
    fn slices_anywhere_are_views_every_kernel_reads_right() {
        let (Some(device), Some(host)) = (device_kernels(), backend()) else { return };
        views_read_right(&device);
        views_read_right(&host);
    }

    fn views_read_right(vk: &VulkanBackend) {
        for n in [1 << 12, 1 << 19] {
            let values = random(n);
            let parent = Arc::new(vk.htod(&Buffer::from_vec(Device::Cpu(0), values.clone())).unwrap());
            let len = n / 4 - 5; // not a whole number of 16-byte blocks
            let at = |start: usize| {
                let v = view(&parent, start * 4, len).unwrap().expect("a view");
                assert!(is_view(&v) && v.len == len);
                v
            };
            for (x, y, z) in [(0, 1024, n / 2), (1, 1026, n / 2 + 3), (3, 2, n / 2 + 1), (1025, 0, 7)] {
                let (a, b, c) = (at(x), at(y), at(z));
                for (v, start) in [(&a, x), (&b, y), (&c, z)] {
                    assert_eq!(read(vk, v), values[start..start + len], "view at {start}");
                }
                let spec = OutSpec { dtype: DType::F32, len };
                let sum = vk.compute(&Kernel::Binary(BinaryOp::Add), &[&a, &b], spec).unwrap();
                let reduce = Kernel::Reduce { kind: crate::graph::ReduceKind::Sum, scale: None };
                let folded = vk.compute(&reduce, &[&a, &b, &c], spec).unwrap();
                let (sum, folded) = (read(vk, &sum), read(vk, &folded));
                for i in 0..len {
                    let (p, q, r) = (values[x + i] as f64, values[y + i] as f64, values[z + i] as f64);
                    assert!((sum[i] as f64 - (p + q)).abs() <= 1e-5 * (p + q).abs().max(1.0), "add {i}");
                    let want = p + q + r;
                    assert!(
                        (folded[i] as f64 - want).abs() <= 1e-4 * want.abs().max(1.0),
                        "reduce {i} of {x} {y} {z}: {} {want} {p} {q} {r}",
                        folded[i]
                    );
                }
                let half = vk.compute(&Kernel::Cast, &[&b], OutSpec { dtype: DType::F16, len }).unwrap();
                let back = vk.compute(&Kernel::Cast, &[&half], spec).unwrap();
                for (i, got) in read(vk, &back).into_iter().enumerate() {
                    assert_eq!(got, half::f16::from_f32(values[y + i]).to_f32(), "cast {i}");
                }
                let inner = view(&b, 4100, 100).unwrap().expect("a view of a view");
                let from = y + 1025;
                assert_eq!(
                    read(vk, &inner),
                    values[from..from + 100],
                    "a view of a view starts in the parent"
                );
            }
            let c = at(n / 2 + 1);
            drop(parent);
            assert_eq!(read(vk, &c), values[n / 2 + 1..n / 2 + 1 + len], "the view keeps the memory");
        }
    }

    /// A view starting anywhere is bound from the aligned byte at or below its start, and covers
    /// no byte past its parent, up to the end of the memory; a range whose binding would run past
    /// the memory is no view.
    #[test]
    fn views_start_anywhere_within_the_memory() {
        let Some(vk) = backend() else { return };
        let parent = DevBuf::new(&vk.gpu, 1 << 20, Usage::Device).unwrap();
        for (offset, bytes) in [(0, 64), (4, 64), (24, 64), (1, 3), (4097, 15), ((1 << 20) - 20, 20)] {
            let v = DevBuf::view(&parent, offset, bytes).unwrap().unwrap_or_else(|| panic!("{offset}"));
            assert!(v.skew <= offset && (offset - v.skew).is_multiple_of(16), "{offset}: skew {}", v.skew);
            assert!(v.size >= bytes && v.bound_size().is_multiple_of(16), "{offset}: {} bytes", v.size);
            // What the mapping and copies may read from the view's start stays within the parent.
            assert!(offset + v.size <= parent.size, "{offset}: {} bytes run past the parent", v.size);
            if offset.is_multiple_of(16) {
                assert_eq!(v.skew, 0, "{offset}: on a block");
            }
        }
        assert!(DevBuf::view(&parent, 1 << 21, 64).unwrap().is_none(), "past the end");
    }

    /// Through the graph: a `narrow` of a Vulkan tensor is a view wherever it starts, and reads
    /// right.
    #[test]
    fn narrow_of_a_vulkan_tensor_reads_in_place_at_any_element() {
        if backend().is_none() {
            return;
        }
        let values = random(4096);
        let t = crate::Tensor::from_vec(values.clone(), [4096], Device::Vulkan(0)).unwrap();
        t.realize().unwrap();
        // 4 KiB in: on every device's alignment; 12 bytes in and the last element: off the
        // kernels' 16-byte blocks.
        for (start, len) in [(1024, 1000), (3, 1000), (4095, 1)] {
            let part = t.narrow(0, start, len).unwrap();
            part.realize().unwrap();
            assert!(is_view(&part.value().unwrap()), "from {start}");
            assert_eq!(part.to_vec::<f32>().unwrap(), values[start..start + len]);
        }
    }
}
