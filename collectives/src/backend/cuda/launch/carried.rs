//! Small host inputs carried in a reduce launch's parameters (`reducei_…` in `kernels.cu`).
//!
//! Why: a kernel that reads a host input from pinned memory waits out a bus round trip for it,
//! and the host first copies a pageable input into a pinned block. The driver copies a launch's
//! parameters itself and they reach the GPU with the launch. On an H100
//! (`bench/gpu/52-inline`, run a, the probe `inline_host_input_probe`: a one-block add of a
//! device input and a host input into device and pinned host outputs, its flag spun on, the
//! result read out), 3840 and 4096 bytes of host input took 13.7–13.9 µs read across the bus and
//! 10.6–11.0 carried (an empty launch of the kernel and its flag 8.5) — on a lease slow at small
//! copies; on one at the usual speed (`bench/gpu/53-layers`, run a) carrying a 4 KiB host shard
//! took 0.3–0.8 µs off the whole 4 KiB all_reduce of `cuda:0, cpu:0`. At 64 bytes the 4 KiB block
//! read even with the bus (9.7–9.8 against 9.7), and a block of 64 bytes took 8.9–9.1: the driver
//! copies a kernel's whole parameters. So where the inputs fit in the block's first
//! [`CARRIED_SMALL_BYTES`], the launch takes the kernel whose block is that long
//! (`reducei256_…`): that all_reduce at 64 bytes 11.9–13.5 µs against 13.6–15.1 with the 4 KiB
//! block (run 53a, three rounds each). Each input takes a 16-byte-aligned range of the block, and
//! its offset stands for its pointer: the kernel reads any input whose pointer is below
//! [`CARRIED_BYTES`] there (no allocation starts in the first page).

use std::ffi::c_void;

use cudarc::driver::sys::CUdeviceptr;

use super::super::device::CudaDevice;
use super::super::driver;

/// Bytes one launch carries (`CARRIED_BYTES` in `kernels.cu`): a 4 KiB input of any dtype, or
/// several smaller ones.
pub(crate) const CARRIED_BYTES: usize = 4096;

/// The block's length in the kernels for small inputs (`CARRIED_SMALL_BYTES` in `kernels.cu`):
/// those the first this many bytes of the block hold.
pub(crate) const CARRIED_SMALL_BYTES: usize = 256;

/// The block of a launch's parameters that carries its small host inputs.
#[repr(C, align(16))]
pub(crate) struct Carried {
    bytes: [u8; CARRIED_BYTES],
    used: usize,
}

impl Carried {
    /// An empty block for a launch on `dev`, where its kernels can take one: compute capability
    /// 7.0 or later (`__grid_constant__`) and CUDA 12.1 or later (parameters past 4 KiB).
    pub fn on(dev: &CudaDevice) -> Option<Carried> {
        (dev.arch >= (7, 0) && driver::large_parameters()).then(Carried::new)
    }

    /// An empty block, whatever the device (a launch takes it only where [`Carried::on`] says).
    pub fn new() -> Carried {
        Carried { bytes: [0; CARRIED_BYTES], used: 0 }
    }

    /// Copies `data` into the block and returns the pointer the kernel reads it at (its offset),
    /// or `None` where it does not fit in what is left.
    pub fn put(&mut self, data: &[u8]) -> Option<CUdeviceptr> {
        let at = self.used;
        let end = at.checked_add(data.len()).filter(|&e| e <= CARRIED_BYTES)?;
        self.bytes[at..end].copy_from_slice(data);
        self.used = end.next_multiple_of(16);
        Some(at as CUdeviceptr)
    }

    /// Whether the block carries any input.
    pub fn is_used(&self) -> bool {
        self.used > 0
    }

    /// Whether what the block carries lies in its first [`CARRIED_SMALL_BYTES`], so the launch
    /// may pass only those.
    pub fn is_small(&self) -> bool {
        self.used <= CARRIED_SMALL_BYTES
    }

    /// The block as a launch's last parameter (`cuLaunchKernel` copies it at the launch).
    pub fn param(&self) -> *mut c_void {
        self.bytes.as_ptr() as *mut c_void
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs take aligned ranges in turn until the block is full; the bytes land where the
    /// offsets say; an input that does not fit is refused and leaves the block as it was.
    #[test]
    fn inputs_take_aligned_ranges_until_the_block_is_full() {
        let mut c = Carried::new();
        assert!(!c.is_used());
        assert_eq!(c.put(&[1, 2, 3]), Some(0));
        assert!(c.is_used() && c.is_small());
        assert_eq!(c.put(&[4; 16]), Some(16));
        assert_eq!(c.put(&[]), Some(32));
        assert_eq!(c.put(&[3; CARRIED_SMALL_BYTES - 32]), Some(32));
        assert!(c.is_small());
        c.used = 32;
        assert_eq!(c.put(&[3; CARRIED_SMALL_BYTES - 31]), Some(32));
        assert!(!c.is_small());
        c.used = 32;
        assert_eq!(c.put(&[5; CARRIED_BYTES - 48]), Some(32));
        assert_eq!(c.put(&[6; 17]), None);
        assert_eq!(c.put(&[7; 16]), Some(CARRIED_BYTES as u64 - 16));
        assert_eq!(c.put(&[8]), None);
        assert_eq!(&c.bytes[..3], &[1, 2, 3]);
        assert_eq!(&c.bytes[3..16], &[0; 13]);
        assert_eq!(&c.bytes[16..32], &[4; 16]);
        assert!(c.bytes[32..CARRIED_BYTES - 16].iter().all(|&b| b == 5));
        assert_eq!(&c.bytes[CARRIED_BYTES - 16..], &[7; 16]);
        assert_eq!(c.param() as usize % 16, 0);
        let mut whole = Carried::new();
        assert_eq!(whole.put(&[9; CARRIED_BYTES + 1]), None);
        assert!(!whole.is_used());
        assert_eq!(whole.put(&[9; CARRIED_BYTES]), Some(0));
    }
}
