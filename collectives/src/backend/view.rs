//! A contiguous slice of a buffer, read in place: what a `narrow` over one contiguous range of a
//! host, CUDA or Vulkan tensor becomes, instead of a copy.
//!
//! Why: a mixed group's reduce_scatter folds every shard on the leader, then hands each member
//! its slice of the result; those slices are ranges of one buffer, and copying them costs a
//! kernel launch each (the 4 KiB reduce_scatter of `cuda:0, cpu:0` spent most of its time in two
//! slice kernels, `bench/gpu/18-locked` run f). Tensors are immutable once realized, so a view can
//! never see its bytes change; it keeps the whole buffer it slices alive, as a PyTorch view does.
//! A CUDA view may start at any element: its kernels take their 16-byte vector path where every
//! pointer allows it and read element by element elsewhere. A Vulkan view is a `VkBuffer` of its
//! own bound to the same memory from the aligned byte at or below the slice's start, which its
//! kernels and copies skip; it too may start at any element.
//!
//! ```
//! use collectives::{Device, Tensor};
//! let t = Tensor::from_vec((0..12).map(|i| i as f32).collect(), [4, 3], Device::Cpu(0))?;
//! // Rows 1..3 are one contiguous range of `t`'s buffer: read in place.
//! assert_eq!(t.narrow(0, 1, 2)?.to_vec::<f32>()?, vec![3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
//! # Ok::<(), collectives::Error>(())
//! ```

use std::sync::Arc;

use super::{Buffer, HostMem, Kernel, Mem};
use crate::device::Device;
use crate::error::{Error, Result};

/// `len` bytes of `of`'s host memory from byte `offset`.
struct HostView {
    of: Arc<Buffer>,
    offset: usize,
    len: usize,
}

impl HostMem for HostView {
    fn as_bytes(&self) -> &[u8] {
        match &self.of.mem {
            // In range: `view` checked it against the buffer, whose memory never changes.
            Mem::Host(h) => &h.as_bytes()[self.offset..self.offset + self.len],
            _ => &[],
        }
    }

    fn as_bytes_mut(&mut self) -> Option<&mut [u8]> {
        None
    }

    fn viewed(&self) -> Option<(&Buffer, usize)> {
        Some((&self.of, self.offset))
    }
}

/// `kernel` on `input` for a result on `device` as a view of `input`, where it is a slice of one
/// contiguous range (`outer == 1`) of a host buffer (for a host device) or of a CUDA or Vulkan
/// buffer on `device` itself (a Vulkan one where its binding fits the memory); `None` for
/// every other kernel and buffer. The view's fence is the input's: it
/// is ready when the input is.
pub(crate) fn view(kernel: &Kernel, input: &Arc<Buffer>, device: Device) -> Result<Option<Buffer>> {
    let Kernel::Slice { outer: 1, in_mid, start, len, inner } = *kernel else { return Ok(None) };
    let host = device.is_host() && matches!(input.mem, Mem::Host(_));
    let cuda = matches!(device, Device::Cuda(_)) && input.device == device;
    let vulkan = matches!(device, Device::Vulkan(_)) && input.device == device;
    if !host && !cuda && !vulkan {
        return Ok(None);
    }
    let size = input.dtype.size();
    let (offset, bytes) = (start * inner * size, len * inner * size);
    if in_mid * inner != input.len || offset + bytes > input.bytes() {
        return Err(Error::internal(
            "slice view",
            format!(
                "{len} of {in_mid} rows from {start} do not lie within a buffer of {} elements",
                input.len
            ),
        ));
    }
    if cuda {
        return Ok(cuda_view(input, offset, len * inner));
    }
    if vulkan {
        return vulkan_view(input, offset, len * inner);
    }
    Ok(Some(host_view(input, device, offset, len * inner)))
}

/// `len` elements of host buffer `of` from byte `offset` on, as a read-only buffer of host device
/// `device` (the caller has checked the range), ready when `of` is.
fn host_view(of: &Arc<Buffer>, device: Device, offset: usize, len: usize) -> Buffer {
    let mem = HostView { of: of.clone(), offset, len: len * of.dtype.size() };
    Buffer { device, dtype: of.dtype, len, mem: Mem::Host(Box::new(mem)), fence: of.fence.clone() }
}

/// The whole of `of` (a host buffer) as a buffer of host device `device`, read in place: how a
/// host group's collective gives every member the one result its leader computed (host devices
/// share one memory, and the result is immutable). `None` where `of` is not host memory or
/// `device` is not a host device.
pub(crate) fn share(of: &Arc<Buffer>, device: Device) -> Option<Buffer> {
    if !device.is_host() || !matches!(of.mem, Mem::Host(_)) {
        return None;
    }
    Some(host_view(of, device, 0, of.len))
}

/// Elements `start..start + len` of host buffer `of` (one-dimensional) as a view on `Cpu(0)`:
/// the slices GPU backends' upload tests read.
#[cfg(test)]
pub(crate) fn host_slice(of: &Arc<Buffer>, start: usize, len: usize) -> Arc<Buffer> {
    let k = Kernel::Slice { outer: 1, in_mid: of.len, start, len, inner: 1 };
    Arc::new(view(&k, of, Device::Cpu(0)).expect("in range").expect("a host view"))
}

/// A CUDA view (`cuda::view`); none without the CUDA backend.
fn cuda_view(input: &Buffer, offset: usize, len: usize) -> Option<Buffer> {
    #[cfg(feature = "cuda")]
    return super::cuda::view(input, offset, len);
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (input, offset, len);
        None
    }
}

/// A Vulkan view (`vulkan::view`); none without the Vulkan backend.
fn vulkan_view(input: &Buffer, offset: usize, len: usize) -> Result<Option<Buffer>> {
    #[cfg(feature = "vulkan")]
    return super::vulkan::view(input, offset, len);
    #[cfg(not(feature = "vulkan"))]
    {
        let _ = (input, offset, len);
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(n: usize) -> Arc<Buffer> {
        Arc::new(Buffer::from_vec(Device::Cpu(0), (0..n).map(|i| i as i32).collect::<Vec<i32>>()))
    }

    fn values(b: &Buffer) -> Vec<i32> {
        bytemuck::pod_collect_to_vec(b.host_bytes("test").unwrap())
    }

    #[test]
    fn a_contiguous_slice_reads_its_range_in_place() {
        let parent = host(24);
        let k = Kernel::Slice { outer: 1, in_mid: 6, start: 2, len: 3, inner: 4 };
        let v = view(&k, &parent, Device::Cpu(3)).unwrap().expect("a view");
        assert_eq!((v.device, v.len), (Device::Cpu(3), 12));
        assert_eq!(values(&v), (8..20).collect::<Vec<i32>>());
        let at = |b: &Buffer| b.host_bytes("test").unwrap().as_ptr() as usize;
        assert_eq!(at(&v), at(&parent) + 8 * 4, "no copy");
        // A view of a view, after the first buffer's other holders are gone.
        let v = Arc::new(v);
        drop(parent);
        let k = Kernel::Slice { outer: 1, in_mid: 3, start: 1, len: 1, inner: 4 };
        assert_eq!(values(&view(&k, &v, Device::Cpu(0)).unwrap().unwrap()), (12..16).collect::<Vec<i32>>());
    }

    #[test]
    fn strided_slices_and_other_kernels_are_not_views() {
        let parent = host(24);
        let strided = Kernel::Slice { outer: 2, in_mid: 3, start: 1, len: 1, inner: 4 };
        assert!(view(&strided, &parent, Device::Cpu(0)).unwrap().is_none());
        assert!(view(&Kernel::Cast, &parent, Device::Cpu(0)).unwrap().is_none());
        let k = Kernel::Slice { outer: 1, in_mid: 6, start: 0, len: 1, inner: 4 };
        assert!(view(&k, &parent, Device::Vulkan(0)).unwrap().is_none(), "not on Vulkan");
        assert!(view(&k, &parent, Device::Cuda(0)).unwrap().is_none(), "a host buffer is no CUDA view");
        let mut v = view(&k, &parent, Device::Cpu(0)).unwrap().unwrap();
        let Mem::Host(h) = &mut v.mem else { unreachable!() };
        assert!(h.as_bytes_mut().is_none(), "read-only");
    }

    #[test]
    fn a_shared_buffer_is_the_whole_buffer_on_another_host_device() {
        let parent = host(24);
        let s = share(&parent, Device::Cpu(5)).expect("shared");
        assert_eq!((s.device, s.len, s.dtype), (Device::Cpu(5), 24, parent.dtype));
        assert_eq!(s.host_bytes("t").unwrap().as_ptr(), parent.host_bytes("t").unwrap().as_ptr());
        assert_eq!(values(&s), (0..24).collect::<Vec<i32>>());
        assert!(share(&parent, Device::Cuda(0)).is_none(), "host devices only");
    }

    #[test]
    fn a_range_outside_the_buffer_is_an_error() {
        let k = Kernel::Slice { outer: 1, in_mid: 6, start: 5, len: 2, inner: 4 };
        assert!(matches!(view(&k, &host(24), Device::Cpu(0)), Err(Error::Internal { .. })));
        let k = Kernel::Slice { outer: 1, in_mid: 7, start: 0, len: 1, inner: 4 };
        assert!(matches!(view(&k, &host(24), Device::Cpu(0)), Err(Error::Internal { .. })));
    }
}
