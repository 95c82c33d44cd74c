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

/// Segments one `copysegw` launch copies (`SEGS_WIDE` in `kernels.cu`): a join of eight
/// members' shards into two outputs. A wider launch would pass the 4 KiB of parameters that
/// drivers before CUDA 12.1 take.
pub(crate) const SEGS_WIDE: usize = 128;

/// The segments of one launch (`struct SegsOf<K>` in `kernels.cu`): [`MAXK`] of them for
/// `copyseg`, [`SEGS_WIDE`] for `copysegw`. Segment j's units are units `end[j - 1]..end[j]` of
/// the run the kernel's threads stride over (from 0 for the first).
#[repr(C)]
#[derive(Clone, Copy)]
struct Segs<const K: usize> {
    src: [CUdeviceptr; K],
    dst: [CUdeviceptr; K],
    end: [u64; K],
}

impl<const K: usize> Segs<K> {
    /// `chunk` (at most `K` segments) in units of `unit` bytes, the rest of the arrays zero.
    fn of(chunk: &[Seg], unit: u64) -> Segs<K> {
        let mut p = Segs { src: [0; K], dst: [0; K], end: [0; K] };
        let mut at = 0;
        for (j, &(s, d, n)) in chunk.iter().enumerate() {
            at += n / unit;
            (p.src[j], p.dst[j], p.end[j]) = (s, d, at);
        }
        p
    }
}

/// Issues every copy of `segs` on the launcher's stream: up to [`MAXK`] in one `copyseg` launch,
/// more [`SEGS_WIDE`] a `copysegw` launch; each launch in the widest unit that divides its
/// pointers and lengths. Many small copies cost one launch instead of one driver copy each: on
/// eight virtual devices of one H200 a 4 KiB `cuMemcpyDtoDAsync` took about 5 µs of host time
/// (`bench/gpu/15-two-shot`, run 15b).
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
    let per_launch = if segs.len() <= MAXK { MAXK } else { SEGS_WIDE };
    let chunks = segs.len().div_ceil(per_launch);
    let mut stored = false;
    for (i, chunk) in segs.chunks(per_launch).enumerate() {
        let flag = flag.filter(|_| i + 1 == chunks);
        let unit = widest_unit(chunk.iter().flat_map(|&(s, d, n)| [s, d, n]));
        // SAFETY: as the caller guarantees; each chunk holds at most its form's segments.
        stored = unsafe {
            match chunk.len() <= MAXK {
                true => launch_segments(l, Segs::<MAXK>::of(chunk, unit), chunk.len(), unit, flag)?,
                false => launch_segments(l, Segs::<SEGS_WIDE>::of(chunk, unit), chunk.len(), unit, flag)?,
            }
        };
    }
    Ok(stored)
}

/// One launch copying the `k` segments of `p` (in units of `unit` bytes), storing `flag` when done
/// where it can; none where they hold no units (and no kernel loaded for it).
///
/// # Safety
/// As [`copy_segments`], for `p`'s first `k` segments.
unsafe fn launch_segments<const K: usize>(
    l: &Launcher,
    p: Segs<K>,
    k: usize,
    unit: u64,
    flag: Option<&Flag>,
) -> Result<bool> {
    // The kernel's threads stride over every segment's units as one run.
    let work = p.end[k - 1];
    if work == 0 {
        return Ok(false);
    }
    let name = copyseg(unit, K > MAXK);
    let (f, done) = flagged(l, name, flag, work)?;
    let k = k as i32;
    // SAFETY: as the caller guarantees; `Segs<K>` matches the kernel's parameter (`MAXK` for
    // `copyseg`, `SEGS_WIDE` for `copysegw`); `done` is none or a flag's slot (pinned, mapped at
    // its address, never freed) and the stream's block counter (device memory the device keeps).
    unsafe { l.launch(&f, name, work, &mut args!(p, k, done)) }?;
    Ok(done.stored())
}

/// The `copyseg` kernel of copy unit `unit` (16, 8, 4, 2 or 1 bytes), its wide form
/// (`copysegw`, [`SEGS_WIDE`] segments) where `wide`.
fn copyseg(unit: u64, wide: bool) -> &'static str {
    const NARROW: [&str; 5] = ["copyseg_16", "copyseg_8", "copyseg_4", "copyseg_2", "copyseg_1"];
    const WIDE: [&str; 5] = ["copysegw_16", "copysegw_8", "copysegw_4", "copysegw_2", "copysegw_1"];
    let i = [16, 8, 4, 2].iter().position(|&u| u == unit).unwrap_or(4);
    if wide { WIDE[i] } else { NARROW[i] }
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
        if bytes / unit <= l.dev.function(copyseg(unit, false))?.one_block {
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
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    use super::*;
    use crate::backend::cuda::memory::alloc_of;
    use crate::backend::cuda::tests::{devices, download, upload};

    /// Segments of every count a launch takes and past it land in place and nothing else is
    /// written: 1, 2, 16 (one `copyseg` launch), 17, 64, 128 (one `copysegw`), 129 and 300 (more
    /// launches), of fresh random bytes, their lengths random (empty ones among them, some of 4
    /// KiB), lengths and places multiples of 1 to 16 bytes (the kernel copies in the widest unit
    /// that divides them all), written to the destination in a shuffled order between untouched
    /// bytes; every byte of it compared. On a CUDA device (skipped without).
    #[test]
    fn segments_of_every_count_land_in_place() {
        let Some(dev) = devices().into_iter().next() else {
            return;
        };
        let seed: u64 = rand::rng().random();
        let mut r = StdRng::seed_from_u64(seed);
        for count in [1usize, 2, 16, 17, 64, 128, 129, 300] {
            for unit in [1u64, 2, 4, 8, 16] {
                let lens: Vec<u64> = (0..count)
                    .map(|_| {
                        unit * [0, r.random_range(1..8), r.random_range(1..64), 4096 / unit]
                            [r.random_range(0..4)]
                    })
                    .collect();
                let total = lens.iter().sum::<u64>();
                let src_data: Vec<u8> = (0..total.max(1)).map(|_| r.random()).collect();
                let dst_data: Vec<u8> = (0..total + unit * count as u64).map(|_| r.random()).collect();
                let (src, dst) = (upload(&dev, src_data.clone()), upload(&dev, dst_data.clone()));
                src.wait().unwrap();
                dst.wait().unwrap();
                let (s, d) = (alloc_of(&src, "t").unwrap().ptr(), alloc_of(&dst, "t").unwrap().ptr());
                // Destination slots in a shuffled order, one unit of untouched bytes after each.
                let mut order: Vec<usize> = (0..count).collect();
                order.shuffle(&mut r);
                let (mut at, mut dst_at) = (vec![0u64; count], 0);
                for &j in &order {
                    at[j] = dst_at;
                    dst_at += lens[j] + unit;
                }
                let (mut from, mut want) = (0, dst_data);
                let segs: Vec<Seg> = (0..count)
                    .map(|j| {
                        let n = lens[j] as usize;
                        want[at[j] as usize..][..n].copy_from_slice(&src_data[from as usize..][..n]);
                        from += lens[j];
                        (s + from - lens[j], d + at[j], lens[j])
                    })
                    .collect();
                let l = Launcher::new(&dev, &dev.compute);
                // SAFETY: every segment lies within `src` or `dst` (distinct allocations on this
                // device, alive until the download below), and the destinations do not overlap.
                unsafe { copy_segments(&l, &segs) }.expect("copy");
                dev.compute.synchronize().unwrap();
                let got: Vec<u8> = download(&dev, &dst);
                assert_eq!(got.len(), want.len(), "seed {seed}: the whole destination read back");
                let wrong = got.iter().zip(&want).filter(|(g, w)| g != w).count();
                assert_eq!(wrong, 0, "seed {seed}: {count} segments in units of {unit}: {wrong} bytes wrong");
            }
        }
    }

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
