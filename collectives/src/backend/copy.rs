//! The copy router: the one place that turns "this buffer, on that device" into a backend copy.
//!
//! The route of the pair ([`Route::between`]) decides the shape — one copy, or two through the
//! host — and the ends decide the call, named by direction from the host's view: `htod` onto a
//! device (also host to host), `dtoh` off one, `dtod` within a device or to a peer of the same
//! vendor. A CUDA ↔ Vulkan pair goes through the staged chain ([`super::staged::transfer`],
//! pipelined through a ring of host memory where one can be made). The executor, the default
//! fan-out and host reads all copy through [`copy`], so none of them looks at device kinds.

use super::{Buffer, get, staged};
use crate::device::Device;
use crate::error::Result;
use crate::route::Route;

/// `src` copied to `to` along the pair's route.
pub(crate) fn copy(src: &Buffer, to: Device) -> Result<Buffer> {
    match Route::between(src.device, to) {
        Route::Staged { .. } if src.device.needs_staging(to) => staged::transfer(src, to),
        Route::Staged { via } => direct(&direct(src, via)?, to),
        Route::Local | Route::Direct => direct(src, to),
    }
}

/// `src` copied to `to` in one backend call: the pair is one hop (or one device).
pub(crate) fn direct(src: &Buffer, to: Device) -> Result<Buffer> {
    let from = src.device;
    match (from.is_host(), to.is_host()) {
        (true, _) => get(to)?.htod(src),
        (false, true) => get(from)?.dtoh(src, to),
        (false, false) => get(from)?.dtod(src, to),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_copies_are_real_copies_on_the_destination() {
        let data: Vec<i64> = (0..37).map(|_| rand::random::<i64>()).collect();
        let src = Buffer::from_vec(Device::Cpu(0), data.clone());
        for to in [Device::Cpu(0), Device::Cpu(5)] {
            let out = copy(&src, to).unwrap();
            assert_eq!(out.device, to);
            assert_eq!(out.host_bytes("test").unwrap(), bytemuck::cast_slice::<i64, u8>(&data));
            assert_ne!(out.host_bytes("test").unwrap().as_ptr(), src.host_bytes("test").unwrap().as_ptr());
        }
    }
}
