//! The star collectives of a group of host devices as one multi-device call: all_reduce,
//! all_gather and reduce_scatter; all_to_all, each member's output written in one pass; and
//! broadcast and scatter, each member reading its part of the root's tensor in place.
//!
//! Every member is host memory, so the star's work — one kernel on the leader over every shard
//! (the fold of an all_reduce, the join of an all_gather), its result sent to every member — is
//! one pass of that CPU kernel, whose result every member then reads in place (`view::share`:
//! host devices share one memory, and a realized tensor never changes); a reduce_scatter's fold
//! is cut into each member's part instead, a view where the part is one contiguous range. The
//! general path issues exactly that work too, but only after the graph pass and the schedule
//! have found it. Issued as one call (like an NCCL call), a realize whose shards are
//! already on their devices takes the executor's direct path, and the bookkeeping that made most
//! of a small collective's time is gone (`bench/gpu/13-fixed-cost`).
//!
//! ```
//! use collectives::{Device, DeviceGroup, ReduceOp, Tensor, realize};
//! let g = DeviceGroup::new((0..4).map(Device::Cpu).collect())?;
//! let shards: Vec<Tensor> =
//!     (0..4).map(|i| Tensor::from_vec(vec![i as f32; 3], [3], Device::Cpu(i))).collect::<Result<_, _>>()?;
//! let out = g.all_reduce(&shards, ReduceOp::Sum)?; // one `host all_reduce` call
//! realize(&out)?;
//! assert_eq!(out[3].to_vec::<f32>()?, vec![6.0; 3]);
//! # Ok::<(), collectives::Error>(())
//! ```

use std::sync::Arc;

use rayon::prelude::*;

use super::{CpuBackend, host_inputs, kernels, out_bytes};
use crate::backend::{Backend, Buffer, Kernel, OutSpec, refs, view};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::graph::MultiKernel;
use crate::sized::try_vec;

/// An output of `len` elements of the inputs' dtype (an internal error without inputs: the
/// collectives check their shards first).
fn spec(call: &'static str, inputs: &[&Buffer], len: usize) -> Result<OutSpec> {
    let first = inputs.first().ok_or_else(|| Error::internal(call, "a call with no inputs"))?;
    Ok(OutSpec { dtype: first.dtype, len })
}

/// A star collective over host devices: `devices[root]` runs `kernel` over the inputs (one per
/// device, in device order) into `len` elements, and every device gets the result.
pub(crate) struct HostStar {
    /// What the call is, for plans and messages (`host all_reduce`).
    pub name: &'static str,
    /// The members, in the order of the inputs and of the outputs.
    pub devices: Vec<Device>,
    /// Index of the member that runs the kernel.
    pub root: usize,
    /// The kernel: a reduce or a concat.
    pub kernel: Kernel,
    /// Elements of the result.
    pub len: usize,
}

impl MultiKernel for HostStar {
    fn name(&self) -> String {
        self.name.into()
    }

    fn run(&self, inputs: &[Arc<Buffer>]) -> Result<Vec<Arc<Buffer>>> {
        let inputs = &refs(inputs)[..];
        let root = self.devices[self.root];
        let out = spec(self.name, inputs, self.len)?;
        self.kernel.check(root, inputs, out)?;
        let result = Arc::new(CpuBackend::on(root)?.compute(&self.kernel, inputs, out)?);
        let give = |&d: &Device| match d == root {
            true => Ok(result.clone()),
            false => view::share(&result, d)
                .map(Arc::new)
                .ok_or_else(|| Error::internal(self.name, format!("{d} cannot share {root}'s result"))),
        };
        try_vec(self.devices.iter().map(give))
    }
}

/// A star reduce_scatter over host devices: `devices[root]` folds the inputs with `fold` into
/// `len` elements, and device i gets `parts[i]` of the fold (a slice kernel, `part_len` elements).
pub(crate) struct HostReduceScatter {
    /// The members, in the order of the inputs and of the outputs.
    pub devices: Vec<Device>,
    /// Index of the member that folds.
    pub root: usize,
    /// The fold: a reduce.
    pub fold: Kernel,
    /// Elements of the fold.
    pub len: usize,
    /// Each member's part of the fold: slice kernels.
    pub parts: Vec<Kernel>,
    /// Elements of each part.
    pub part_len: usize,
}

impl MultiKernel for HostReduceScatter {
    fn name(&self) -> String {
        "host reduce_scatter".into()
    }

    fn run(&self, inputs: &[Arc<Buffer>]) -> Result<Vec<Arc<Buffer>>> {
        let inputs = &refs(inputs)[..];
        let root = self.devices[self.root];
        let full = spec("host reduce_scatter", inputs, self.len)?;
        self.fold.check(root, inputs, full)?;
        let folded = Arc::new(CpuBackend::on(root)?.compute(&self.fold, inputs, full)?);
        let part = OutSpec { len: self.part_len, ..full };
        let cut = |(&d, k): (&Device, &Kernel)| -> Result<Arc<Buffer>> {
            k.check(d, &[&folded], part)?;
            match view::view(k, &folded, d)? {
                Some(v) => Ok(Arc::new(v)),
                None => Ok(Arc::new(CpuBackend::on(d)?.compute(k, &[&folded], part)?)),
            }
        };
        self.devices.iter().zip(&self.parts).map(cut).collect()
    }
}

/// A scatter (or broadcast) over host devices: device i gets `parts[i]` of the one input (a
/// slice kernel; for a broadcast, the whole), read in place where it is one contiguous range of
/// the input (`view::view`), else copied by device i.
pub(crate) struct HostScatter {
    /// What the call is, for plans and messages (`host scatter`, `host broadcast`).
    pub name: &'static str,
    /// The members, in the order of the outputs.
    pub devices: Vec<Device>,
    /// Each member's part of the input: slice kernels.
    pub parts: Vec<Kernel>,
}

impl MultiKernel for HostScatter {
    fn name(&self) -> String {
        self.name.into()
    }

    fn run(&self, inputs: &[Arc<Buffer>]) -> Result<Vec<Arc<Buffer>>> {
        let [whole] = inputs else {
            return Err(Error::internal(self.name, format!("{} inputs, not one", inputs.len())));
        };
        let cut = |(&d, k): (&Device, &Kernel)| {
            let Kernel::Slice { outer, len, inner, .. } = *k else {
                return Err(Error::internal(self.name, format!("a {} kernel for a part", k.name())));
            };
            let part = OutSpec { dtype: whole.dtype, len: outer * len * inner };
            k.check(d, &[whole], part)?;
            match view::view(k, whole, d)? {
                Some(v) => Ok(Arc::new(v)),
                None => Ok(Arc::new(CpuBackend::on(d)?.compute(k, &[whole], part)?)),
            }
        };
        try_vec(self.devices.iter().zip(&self.parts).map(cut))
    }
}

/// Bytes of all outputs together from which [`HostAllToAll`] writes its members' outputs side by
/// side on the thread pool. Below it one thread writes them one after another: waking the pool
/// costs more than it saves. On the H200 machine's 16 cores (`bench/gpu/34-host-parallel`, run a,
/// µs, one thread / the pool) eight members of 64 KiB (512 KiB in all) took 36–38 / 98–102, of
/// 256 KiB (2 MiB) 185–190 / 91–92, of 1 MiB 697–823 / 182–187; four of 256 KiB (1 MiB) 63–76 /
/// 64–72; run b, with this threshold, 2.0–4.7 × faster than with 16 MiB from 2 MiB on. On the
/// 2-core development machine the two are even from about 2 MiB and the pool ahead from 4 MiB
/// (`bench/cpu-all-to-all/threshold-2026-12-05.txt`). A part of a megabyte or more is copied in
/// parallel pieces either way.
const PAR_MIN_BYTES: usize = 2 << 20;

/// An all_to_all over host devices: device j gets part j of every input, in input order. The
/// inputs (one per device, in device order) are `outer` rows of one part per device (`part`
/// elements each); so is every output. Each member's output is written in one pass over its
/// parts, read in place (host devices share one memory), where the graph would copy every part
/// to its device and then join them.
pub(crate) struct HostAllToAll {
    /// The members, in the order of the inputs and of the outputs.
    pub devices: Vec<Device>,
    /// Rows before the dim the parts are cut along (1 where each part is one contiguous range).
    pub outer: usize,
    /// Elements of one part in one row.
    pub part: usize,
}

impl MultiKernel for HostAllToAll {
    fn name(&self) -> String {
        "host all_to_all".into()
    }

    fn run(&self, inputs: &[Arc<Buffer>]) -> Result<Vec<Arc<Buffer>>> {
        const CALL: &str = "host all_to_all";
        let inputs = &refs(inputs)[..];
        let n = self.devices.len();
        let len = self.outer.checked_mul(self.part).and_then(|l| l.checked_mul(n));
        let out = spec(CALL, inputs, len.ok_or_else(|| Error::internal(CALL, "the size overflows"))?)?;
        let fits = |b: &&Buffer| b.len == out.len && b.dtype == out.dtype && b.device.is_host();
        if inputs.len() != n || !inputs.iter().all(fits) {
            let got: Vec<String> =
                inputs.iter().map(|b| format!("{} {} on {}", b.len, b.dtype, b.device)).collect();
            let want = format!("{n} inputs of {} {} on host devices, got {got:?}", out.len, out.dtype);
            return Err(Error::internal(CALL, want));
        }
        let ins = host_inputs(inputs)?;
        let alloc = |&d: &Device| {
            crate::failpoint::hit(d, "cpu kernel launch")?;
            CpuBackend::on(d)?.alloc(out)
        };
        let mut outs = self.devices.iter().map(alloc).collect::<Result<Vec<Buffer>>>()?;
        let mut dsts = outs.iter_mut().map(out_bytes).collect::<Result<Vec<&mut [u8]>>>()?;
        let part = self.part * out.dtype.size();
        let fill = |(j, o): (usize, &mut &mut [u8])| kernels::all_to_all_part(&ins, j, o, self.outer, part);
        match out.len * out.dtype.size() * n < PAR_MIN_BYTES {
            true => dsts.iter_mut().enumerate().for_each(fill),
            false => dsts.par_iter_mut().enumerate().for_each(fill),
        }
        Ok(outs.into_iter().map(Arc::new).collect())
    }
}

#[cfg(test)]
mod tests {
    use rand::Rng;

    use super::*;
    use crate::graph::Shape;

    fn scatter(devices: usize, parts: Vec<Kernel>) -> HostScatter {
        HostScatter { name: "host scatter", devices: (0..devices as u32).map(Device::Cpu).collect(), parts }
    }

    /// Whether `b`'s bytes lie within `of`'s (a view) rather than in memory of its own (a copy).
    fn within(b: &Buffer, of: &Buffer) -> bool {
        let (b, of) =
            (b.host_bytes("test").unwrap().as_ptr_range(), of.host_bytes("test").unwrap().as_ptr_range());
        of.start <= b.start && b.end <= of.end
    }

    /// Parts along dim 0 (one contiguous range each, the last empty) are views of the input; parts
    /// along dim 1 are copies; every element of each against the input; not one input, or a part
    /// that is not a slice, is an internal error.
    #[test]
    fn parts_are_views_where_contiguous_and_copies_elsewhere() {
        let vals: Vec<f32> = (0..24).map(|_| rand::rng().random_range(-10.0..10.0)).collect();
        let input = Arc::new(Buffer::from_vec(Device::Cpu(0), vals.clone()));
        let shape = Shape::from([4, 6]);
        let read = |b: &Buffer| bytemuck::cast_slice::<u8, f32>(b.host_bytes("test").unwrap()).to_vec();

        let rows = [(0, 1), (1, 3), (4, 0)].map(|(start, len)| Kernel::slice(&shape, 0, start, len));
        let out = scatter(3, rows.to_vec()).run(std::slice::from_ref(&input)).unwrap();
        assert!(out.iter().all(|b| within(b, &input)));
        assert_eq!(
            (read(&out[0]), read(&out[1]), read(&out[2])),
            (vals[..6].to_vec(), vals[6..].to_vec(), vec![])
        );
        assert_eq!(out.iter().map(|b| b.device).collect::<Vec<_>>(), [0, 1, 2].map(Device::Cpu));

        let cols = [(0, 2), (2, 4)].map(|(start, len)| Kernel::slice(&shape, 1, start, len));
        let out = scatter(2, cols.to_vec()).run(std::slice::from_ref(&input)).unwrap();
        assert!(out.iter().all(|b| !within(b, &input)));
        let want = |lo: usize, hi: usize| {
            (0..4).flat_map(|r| vals[r * 6 + lo..r * 6 + hi].to_vec()).collect::<Vec<_>>()
        };
        assert_eq!((read(&out[0]), read(&out[1])), (want(0, 2), want(2, 6)));

        let err = scatter(2, cols.to_vec()).run(&[input.clone(), input.clone()]).err().unwrap();
        assert!(err.to_string().contains("2 inputs, not one"), "{err}");
        let err = scatter(1, vec![Kernel::Cast]).run(std::slice::from_ref(&input)).err().unwrap();
        assert!(err.to_string().contains("a cast kernel for a part"), "{err}");
    }
}
