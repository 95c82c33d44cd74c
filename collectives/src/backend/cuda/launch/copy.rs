//! Copies on one device by kernel: contiguous segments many to a launch (`copyseg`) and strided
//! rows (`copy2d`), each in the widest unit its pointers and lengths allow; a large contiguous
//! copy goes to the driver (the copy engine).

use cudarc::driver::sys::CUdeviceptr;

use super::names::{Named, name_of};
use super::{Launcher, MAXK, driver, flagged};
use crate::backend::cuda::flag::Flag;
use crate::error::Result;

/// The widest copy unit (16, 8, 4, 2 or 1 bytes) that divides every one of `values` (pointers,
/// lengths, pitches).
fn widest_unit(values: impl IntoIterator<Item = u64> + Clone) -> u64 {
    [16u64, 8, 4, 2].into_iter().find(|u| values.clone().into_iter().all(|v| v % u == 0)).unwrap_or(1)
}

/// A contiguous copy: (source, destination, bytes).
pub(crate) type Seg = (CUdeviceptr, CUdeviceptr, u64);

/// The segments of one `copyseg` launch (`struct Segs` in `kernels.cu`), lengths in units.
#[repr(C)]
#[derive(Clone, Copy)]
struct Segs {
    src: [CUdeviceptr; MAXK],
    dst: [CUdeviceptr; MAXK],
    len: [u64; MAXK],
}

/// Issues every copy of `segs` on the launcher's stream, [`MAXK`] per kernel launch, each launch
/// in the widest unit that divides its pointers and lengths. Many small copies cost one launch
/// instead of one driver copy each: on eight virtual devices of one H200 a 4 KiB
/// `cuMemcpyDtoDAsync` took about 5 µs of host time (`bench/gpu/15-two-shot`, run 15b).
///
/// # Safety
/// Every source is readable and every destination writable for its length on this device (in
/// place, or a peer's memory with access on) until the launch has run; no two overlap.
pub(crate) unsafe fn copy_segments(l: &Launcher, segs: &[Seg]) -> Result<()> {
    // SAFETY: as the caller guarantees.
    unsafe { copy_segments_flagged(l, segs, None) }.map(drop)
}

/// [`copy_segments`] whose last launch stores `flag` when done where it can
/// ([`Launcher::done`]); returns whether it does.
///
/// # Safety
/// As [`copy_segments`].
pub(crate) unsafe fn copy_segments_flagged(l: &Launcher, segs: &[Seg], flag: Option<&Flag>) -> Result<bool> {
    let chunks = segs.chunks(MAXK).count();
    let mut stored = false;
    for (i, chunk) in segs.chunks(MAXK).enumerate() {
        let unit = widest_unit(chunk.iter().flat_map(|&(s, d, n)| [s, d, n]));
        let mut p = Segs { src: [0; MAXK], dst: [0; MAXK], len: [0; MAXK] };
        for (j, &(s, d, n)) in chunk.iter().enumerate() {
            (p.src[j], p.dst[j], p.len[j]) = (s, d, n / unit);
        }
        let k = chunk.len() as i32;
        // The kernel's threads stride over every segment's units as one run.
        let work = p.len.iter().sum::<u64>();
        if work == 0 {
            // Nothing to copy: no launch, and no kernel to load for it.
            continue;
        }
        let name = copyseg(unit);
        let (f, done) = flagged(l, name, flag.filter(|_| i + 1 == chunks), work)?;
        stored = done.stored();
        // SAFETY: as the caller guarantees; `Segs` matches the kernel's parameter; `done` is none
        // or a flag's slot (pinned, mapped at its address, never freed) and the stream's block
        // counter (device memory the device keeps).
        unsafe { l.launch(&f, name, work, &mut args!(p, k, done))? };
    }
    Ok(stored)
}

/// The `copyseg` kernel of copy unit `unit` (16, 8, 4, 2 or 1 bytes).
fn copyseg(unit: u64) -> &'static str {
    match unit {
        16 => "copyseg_16",
        8 => "copyseg_8",
        4 => "copyseg_4",
        2 => "copyseg_2",
        _ => "copyseg_1",
    }
}

/// Copies `rows` rows of `width` bytes from `src` (row pitch `sp`) to `dst` (row pitch `dp`),
/// in the widest unit that divides every pointer, width and pitch; where a kernel copies, it
/// stores `flag` where it can ([`Launcher::done`]; returns whether). Contiguous rows are one
/// `copyseg` launch where that is one block (a launch costs the host less than a driver copy),
/// else one driver copy, which stores none.
pub(super) unsafe fn copy2d(
    l: &Launcher,
    (src, sp): (u64, u64),
    (dst, dp): (u64, u64),
    (rows, width): (u64, u64),
    flag: Option<&Flag>,
) -> Result<bool> {
    if rows == 0 || width == 0 {
        return Ok(false);
    }
    if rows == 1 || (sp == width && dp == width) {
        let (bytes, unit) = (rows * width, widest_unit([src, dst, rows * width]));
        if bytes / unit <= l.dev.function(copyseg(unit))?.one_block {
            // SAFETY: as `run` guarantees; the rows are contiguous here.
            return unsafe { copy_segments_flagged(l, &[(src, dst, bytes)], flag) };
        }
        l.dev.bind()?;
        // SAFETY: as `run` guarantees, the rows are contiguous here.
        return unsafe { driver::dtod_async(dst, src, bytes as usize, l.stream.cu_stream()) }
            .map(|()| false)
            .map_err(driver::err(l.dev.device, "copy within device"));
    }
    let unit = widest_unit([src, dst, width, sp, dp]);
    let (s, d, rows) = (src, dst, rows);
    let (w, sp, dp) = (width / unit, sp / unit, dp / unit);
    let name = name_of(Named::Copy2d(unit));
    let (f, done) = flagged(l, &name, flag, rows * w)?;
    // SAFETY: as `run` guarantees; `done` as in `binary`.
    unsafe { l.launch(&f, &name, rows * w, &mut args!(s, d, rows, w, sp, dp, done)) }.map(|()| done.stored())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_unit_divides_every_value() {
        assert_eq!(widest_unit([0u64, 32, 4096]), 16);
        assert_eq!(widest_unit([16u64, 24, 4096]), 8);
        assert_eq!(widest_unit([16u64, 4, 12]), 4);
        assert_eq!(widest_unit([16u64, 6]), 2);
        assert_eq!(widest_unit([16u64, 7]), 1);
        assert_eq!(widest_unit(std::iter::empty::<u64>()), 16, "nothing to divide: any unit");
    }
}
