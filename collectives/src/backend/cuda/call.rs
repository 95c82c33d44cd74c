//! The native collectives of an all-CUDA group as one multi-device call: every member pulls what
//! it needs straight from its peers' memory, in one step.
//!
//! - all_reduce: every member folds every shard itself (the one-shot), in one fixed order, so
//!   every member's result is bitwise identical;
//! - reduce_scatter: member i folds only its part of every shard (the same window of each input);
//! - all_gather: member i copies every shard into its place in its own output (no concat after);
//! - broadcast: every member but the root copies the root's tensor (a peer copy);
//! - all_to_all: member i copies part i of every shard into its place in its own output;
//! - scatter (one form): the root keeps its part as a view of its tensor, and its launch copies
//!   every other part into the member's output.
//!
//! The star is one call too, issued by one member (the leader, or a broadcast's root) for all:
//! its launch reads every shard in place and writes every member's output in place — the fold
//! (one launch, bitwise the same on every member since it is computed once), the join (then one
//! launch copying it out), the root's tensor (one launch); a reduce_scatter's one launch writes
//! each part of its fold into its member's output; an all_to_all's launches copy every part of
//! every shard into its place (16 parts a launch). One launch where the one-shot takes one per
//! member: that is what a small message costs.
//!
//! CUDA devices read each other in place (two logical devices of one GPU share its memory; two
//! GPUs once peer access is on; without it the input is copied over first), so the graph path
//! already issues this work for the one-shot: one kernel per member over every shard. Issued as one
//! call, like an NCCL call, a realize whose shards are on their devices takes the executor's
//! direct path, without the graph pass, the schedule and the queues (`exec/direct.rs`). Each
//! member's work waits for its inputs on its own stream and notes its use of its peers' memory, so
//! nothing waits on the host and no shard is freed while a peer still reads it
//! ([`super::memory`]).
//!
//! ```no_run
//! use collectives::{Device, DeviceGroup, ReduceOp, Tensor, realize};
//! // Two logical devices of GPU 0 with COLLECTIVES_CUDA_DEVICES=0,0.
//! let g = DeviceGroup::new(vec![Device::Cuda(0), Device::Cuda(1)])?;
//! let shards = (0..2)
//!     .map(|i| Tensor::from_vec(vec![i as f32; 3], [3], Device::Cuda(i)))
//!     .collect::<Result<Vec<_>, _>>()?;
//! let out = g.all_reduce(&shards, ReduceOp::Sum)?; // one `cuda all_reduce` call
//! realize(&out)?;
//! # Ok::<(), collectives::Error>(())
//! ```

use std::sync::Arc;

use super::device::{self, CudaDevice};
use super::event::wait_on;
use super::launch;
use super::memory::{DevAlloc, Event, device_buffer, record};
use crate::backend::{Buffer, Kernel, OutSpec};
use crate::collective::CollectiveKind;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::graph::MultiKernel;
use crate::sized::try_vec;

/// What each member of a [`CudaCall`] does.
#[derive(Clone, Debug)]
pub(crate) enum Pull {
    /// The star of collective `of` as one launch of member `root` (two for an all_gather): its
    /// `kernel` over the inputs (read in place; `len` elements out per member) writes the result
    /// into every member's output, peers' memory written in place — the fold of an all_reduce,
    /// the concat of an all_gather, the copy of a broadcast (whose root keeps its tensor, and is
    /// not part of the call); a reduce_scatter's fold writes part i into member i's output. A
    /// member the root cannot write (two GPUs without peer access) copies the root's output (a
    /// broadcast: its tensor; a reduce_scatter: its part, the fold then kept in a buffer of the
    /// root's and each part copied out by one more launch).
    Star { of: CollectiveKind, kernel: Kernel, len: usize, root: usize },
    /// Every member runs the reduce over every input (`len` elements each).
    AllReduce { fold: Kernel, len: usize },
    /// Member i runs the reduce over its part of every input (see [`two_shot_part`]) into its
    /// output, then copies every other member's part from that member's output.
    TwoShot { fold: Kernel, len: usize },
    /// Member i runs the reduce over elements `[i * part, (i + 1) * part)` of every input.
    ReduceScatter { fold: Kernel, part: usize },
    /// Member i runs the concat over elements `[i * part, (i + 1) * part)` of every input: part i
    /// of each shard placed in its output, in shard order.
    AllToAll { join: Kernel, part: usize },
    /// Every member runs the concat (a placement of each input in its output, by copy).
    AllGather { join: Kernel, len: usize },
    /// Every member but `root` copies the one input (the root's tensor, a peer copy on the
    /// member's copy stream); the root's output is not part of the call.
    Broadcast { root: usize },
    /// The scatter of the one input (member `root`'s tensor): member i gets slice `parts[i]`,
    /// one contiguous range of it — the root's a view of the input, every other part copied by
    /// the root's one launch into the member's memory (a member the root cannot write, or an
    /// empty part: a copy of its view).
    Scatter { root: usize, parts: Vec<Kernel> },
}

/// A native collective of CUDA devices, one output per member (in device order; a broadcast
/// leaves out the root).
pub(crate) struct CudaCall {
    /// The members, in the order of the inputs.
    pub devices: Vec<Device>,
    /// What each member does.
    pub pull: Pull,
}

impl MultiKernel for CudaCall {
    fn name(&self) -> String {
        let what = match self.pull {
            Pull::Star { of, .. } => return format!("cuda star {}", of.name()),
            Pull::AllReduce { .. } => "all_reduce",
            Pull::TwoShot { .. } => "two-shot all_reduce",
            Pull::ReduceScatter { .. } => "reduce_scatter",
            Pull::AllGather { .. } => "all_gather",
            Pull::Broadcast { .. } => "broadcast",
            Pull::AllToAll { .. } => "all_to_all",
            Pull::Scatter { .. } => "scatter",
        };
        format!("cuda {what}")
    }

    fn run(&self, inputs: &[Arc<Buffer>]) -> Result<Vec<Arc<Buffer>>> {
        if let (Pull::Scatter { root, parts }, [input]) = (&self.pull, inputs) {
            return self.scatter(input, parts, *root);
        }
        let inputs = &crate::backend::refs(inputs)[..];
        let dtype =
            inputs.first().ok_or_else(|| Error::internal(self.name(), "a call with no inputs"))?.dtype;
        match &self.pull {
            Pull::TwoShot { fold, len } => return self.two_shot(fold, inputs, OutSpec { dtype, len: *len }),
            Pull::Star { of: CollectiveKind::ReduceScatter, kernel, len, root } => {
                return self.star_scatter(kernel, inputs, OutSpec { dtype, len: *len }, *root);
            }
            Pull::Star { of: CollectiveKind::AllToAll, kernel, len, root } => {
                return self.star_all_to_all(kernel, inputs, *len, *root);
            }
            Pull::Star { of, kernel, len, root } => {
                let skip = (*of == CollectiveKind::Broadcast).then_some(*root);
                return self.star(kernel, inputs, OutSpec { dtype, len: *len }, *root, skip);
            }
            _ => {}
        }
        let mut outs = Vec::with_capacity(self.devices.len());
        for (i, &d) in self.devices.iter().enumerate() {
            let dev = member(d)?;
            let out = match &self.pull {
                Pull::AllReduce { fold: k, len } | Pull::AllGather { join: k, len } => {
                    kernel(&dev, k, inputs, OutSpec { dtype, len: *len })?
                }
                Pull::ReduceScatter { fold, part } => window(&dev, fold, inputs, (i, *part), *part)?,
                Pull::AllToAll { join, part } => {
                    window(&dev, join, inputs, (i, *part), *part * inputs.len())?
                }
                Pull::TwoShot { .. } | Pull::Star { .. } => unreachable!("issued above"),
                Pull::Scatter { .. } => {
                    return Err(Error::internal(self.name(), format!("{} inputs, not one", inputs.len())));
                }
                Pull::Broadcast { root } if i == *root => continue,
                Pull::Broadcast { root } => super::copy::dtod(&*member(self.devices[*root])?, inputs[0], d)?,
            };
            outs.push(Arc::new(out));
        }
        Ok(outs)
    }
}

impl CudaCall {
    /// The star: member `root`'s launch of `kernel` writes every member's output it reaches
    /// (all but `skip`, a broadcast's root); the others copy the root's output, or for a
    /// broadcast its input. Outputs in member order, `skip` left out.
    fn star(
        &self,
        kernel: &Kernel,
        inputs: &[&Buffer],
        out: OutSpec,
        root: usize,
        skip: Option<usize>,
    ) -> Result<Vec<Arc<Buffer>>> {
        let (devs, hub) = self.with_root(root)?;
        let hub = &*hub;
        kernel.check(hub.device, inputs, out)?;
        let mut members: Vec<&Arc<CudaDevice>> = Vec::with_capacity(devs.len()); // not grown
        members.extend(devs.iter().enumerate().filter(|&(i, _)| Some(i) != skip).map(|(_, d)| d));
        let dsts = written_by(hub, &members, out.len * out.dtype.size())?;
        let written: Vec<(&DevAlloc, usize)> = dsts.iter().flatten().map(|d| (&**d, 0)).collect();
        let event = launch::compute_to_all(hub, kernel, inputs, 0, &written, out)?;
        let bufs: Vec<Option<Arc<Buffer>>> = dsts
            .into_iter()
            .map(|d| d.map(|d| Arc::new(device_buffer(out.dtype, out.len, d, event.clone(), &hub.compute))))
            .collect();
        let source = match skip {
            Some(_) => inputs[0],
            None => bufs[root].as_deref().ok_or_else(|| Error::internal(self.name(), "the root's output"))?,
        };
        try_vec(members.iter().zip(&bufs).map(|(dev, b)| match b {
            Some(b) => Ok(b.clone()),
            None => super::copy::dtod(hub, source, dev.device).map(Arc::new),
        }))
    }

    /// The star reduce_scatter: member `root`'s one launch folds every input whole and writes
    /// part i (`out.len` elements) of the fold straight into member i's output
    /// ([`launch::reduce_parts`]). Where the root cannot write every member, or the members are
    /// more than one launch writes, it folds into a buffer of its own and copies each part out
    /// ([`place_ranges`]); a member it cannot reach copies its part.
    fn star_scatter(
        &self,
        fold: &Kernel,
        inputs: &[&Buffer],
        out: OutSpec,
        root: usize,
    ) -> Result<Vec<Arc<Buffer>>> {
        let (devs, hub) = self.with_root(root)?;
        let hub = &*hub;
        let whole = OutSpec { len: out.len * devs.len(), ..out };
        fold.check(hub.device, inputs, whole)?;
        let dsts = written_by(hub, &devs.iter().collect::<Vec<_>>(), out.len * out.dtype.size())?;
        if dsts.len() <= launch::MAXK && dsts.iter().all(Option::is_some) {
            let written: Vec<&DevAlloc> = dsts.iter().flatten().map(|d| &**d).collect();
            let event = launch::reduce_parts(hub, fold, inputs, &written, out)?;
            let buf = |d| Arc::new(device_buffer(out.dtype, out.len, d, event.clone(), &hub.compute));
            return Ok(dsts.into_iter().flatten().map(buf).collect());
        }
        let folded = hub.alloc(whole.len * out.dtype.size(), &hub.compute)?;
        let done = launch::compute_to_all(hub, fold, inputs, 0, &[(&folded, 0)], whole)?;
        let folded = Arc::new(device_buffer(out.dtype, whole.len, folded, done, &hub.compute));
        let ranges: Vec<(usize, usize)> = (0..devs.len()).map(|i| (i * out.len, out.len)).collect();
        let event = place_ranges(hub, &folded, &dsts, &ranges)?;
        try_vec(
            devs.iter()
                .zip(dsts)
                .zip(ranges)
                .map(|((dev, d), range)| part_for(hub, &folded, (dev, d), event.as_ref(), range, false)),
        )
    }

    /// The scatter of `input` (on member `root`): member j gets slice `parts[j]` of it, one
    /// contiguous range. The root's launches copy each part into memory of a member it writes in
    /// place ([`place_ranges`]); the root's own part is a view of `input`, and a member the root
    /// cannot write, or whose part is empty, gets a copy of its part's view.
    fn scatter(&self, input: &Arc<Buffer>, parts: &[Kernel], root: usize) -> Result<Vec<Arc<Buffer>>> {
        let (devs, hub) = self.with_root(root)?;
        let hub = &*hub;
        if parts.len() != devs.len() || input.device != hub.device {
            let why =
                format!("{} parts for {} members, the input on {}", parts.len(), devs.len(), input.device);
            return Err(Error::internal(self.name(), why));
        }
        let ranges = try_vec(parts.iter().map(|p| range_of(p, input).ok_or(p)))
            .map_err(|p| Error::internal(self.name(), format!("{p:?} is no contiguous part of the input")))?;
        let dsts = try_vec(devs.iter().zip(&ranges).enumerate().map(|(j, (dev, &(_, len)))| {
            match j != root && len > 0 && launch::reaches(hub, dev.device)? {
                true => output_for(hub, dev, len * input.dtype.size()).map(Some),
                false => Ok(None),
            }
        }))?;
        let event = place_ranges(hub, input, &dsts, &ranges)?;
        try_vec(
            devs.iter().zip(dsts).zip(ranges).enumerate().map(|(j, ((dev, d), range))| {
                part_for(hub, input, (dev, d), event.as_ref(), range, j == root)
            }),
        )
    }

    /// The star all_to_all: member `root`'s launches copy part j (`part` elements from `j * part`)
    /// of every input into its place in member j's output, [`launch::SEGS_WIDE`] parts a launch; a
    /// member whose memory the root cannot write joins its parts itself (`join` from `j * part`).
    fn star_all_to_all(
        &self,
        join: &Kernel,
        inputs: &[&Buffer],
        part: usize,
        root: usize,
    ) -> Result<Vec<Arc<Buffer>>> {
        let (devs, hub) = self.with_root(root)?;
        let hub = &*hub;
        let out = OutSpec { dtype: inputs[0].dtype, len: part * inputs.len() };
        // Reading the last part checks that every input holds all of them.
        join.check_from(hub.device, inputs, part * inputs.len().saturating_sub(1), out)?;
        let size = out.dtype.size();
        let dsts = written_by(hub, &devs.iter().collect::<Vec<_>>(), out.len * size)?;
        let reached: Vec<(usize, &DevAlloc)> =
            dsts.iter().enumerate().filter_map(|(j, d)| d.as_deref().map(|d| (j, d))).collect();
        let event = place_parts(hub, inputs, &reached, part * size)?;
        try_vec(devs.iter().zip(dsts).enumerate().map(|(j, (dev, d))| match d {
            Some(d) => Ok(Arc::new(device_buffer(out.dtype, out.len, d, event.clone(), &hub.compute))),
            None => window(dev, join, inputs, (j, part), out.len).map(Arc::new),
        }))
    }

    /// Every member's device, and member `root`'s.
    fn with_root(&self, root: usize) -> Result<(Vec<Arc<CudaDevice>>, Arc<CudaDevice>)> {
        let devs = try_vec(self.devices.iter().map(|&d| member(d)))?;
        let hub = devs
            .get(root)
            .cloned()
            .ok_or_else(|| Error::internal(self.name(), format!("no member {root}")))?;
        Ok((devs, hub))
    }

    /// The two-shot all_reduce: every member folds its part into its output, then (each member's
    /// stream waiting for every fold, on the device) gathers the others' parts.
    fn two_shot(&self, fold: &Kernel, inputs: &[&Buffer], out: OutSpec) -> Result<Vec<Arc<Buffer>>> {
        let n = self.devices.len();
        let devs = try_vec(self.devices.iter().map(|&d| member(d)))?;
        let bounds = |i: usize| two_shot_part(out.len, out.dtype.size(), n, i);
        let mut folded = Vec::with_capacity(n);
        for (i, dev) in devs.iter().enumerate() {
            let dst = dev.alloc(out.len * out.dtype.size(), &dev.compute)?;
            let (start, end) = bounds(i);
            let part = OutSpec { len: end - start, ..out };
            fold.check_from(dev.device, inputs, start, part)?;
            let event = launch::compute_into(dev, fold, inputs, start, (&dst, start), part)?;
            folded.push((dst, event));
        }
        let mut outs = Vec::with_capacity(n);
        for (i, dev) in devs.iter().enumerate() {
            let event = gather_parts(&devs, i, &folded, &bounds, out.dtype.size()).inspect_err(|_| {
                let _ = dev.compute.synchronize();
            })?;
            outs.push(Arc::new(device_buffer(out.dtype, out.len, folded[i].0.clone(), event, &dev.compute)));
        }
        Ok(outs)
    }
}

/// Elements `[start, end)` of `len` that member `i` of `n` folds in a two-shot all_reduce: parts
/// of `len / n` rounded up to whole 256-byte blocks (so every part starts 16-byte aligned, for
/// the kernels' vector paths), the last ones shorter or empty.
pub(crate) fn two_shot_part(len: usize, size: usize, n: usize, i: usize) -> (usize, usize) {
    let block = (256 / size.max(1)).max(1);
    let part = len.div_ceil(n.max(1)).div_ceil(block) * block;
    let start = i.saturating_mul(part).min(len);
    (start, start.saturating_add(part).min(len))
}

/// Member `i`'s gather of a two-shot all_reduce: its compute stream waits for every member's fold,
/// then copies each other member's part from that member's output into its own. Returns the event
/// that completes member `i`'s output. On an error, copies already issued may still be running:
/// the caller waits for the stream before the outputs are dropped.
fn gather_parts(
    devs: &[Arc<CudaDevice>],
    i: usize,
    folded: &[(Arc<DevAlloc>, Arc<Event>)],
    bounds: &dyn Fn(usize) -> (usize, usize),
    size: usize,
) -> Result<Arc<Event>> {
    let dev = &devs[i];
    let stream = &dev.compute;
    dev.bind()?;
    let others = || folded.iter().enumerate().filter(move |&(j, _)| j != i);
    for (_, (_, e)) in others() {
        wait_on(stream, e, dev.device)?;
    }
    let mine = &folded[i].0;
    let mut segs = Vec::with_capacity(folded.len());
    for (j, (theirs, _)) in others() {
        let (start, end) = bounds(j);
        let at = (start * size) as u64;
        segs.push((theirs.ptr() + at, mine.ptr() + at, ((end - start) * size) as u64));
    }
    // A kernel reads peers in place where it can (one GPU, or peers with access on), else the
    // driver copies each part.
    let mut in_place = true;
    for other in devs {
        in_place &= device::enable_peer(dev, other)?;
    }
    // Each segment is member j's part, inside both outputs (each a whole output) and disjoint
    // from the others; `mine` is the output this stream completes, and each `theirs` notes this
    // stream's use below, so both stay alive until the copies have run.
    if in_place {
        let l = launch::Launcher::new(dev, stream);
        // SAFETY: as above, and this device's kernels read every peer in place.
        unsafe { launch::copy_segments(&l, &segs) }?;
    } else {
        for (&(src, dst, bytes), (j, _)) in segs.iter().zip(others()) {
            // SAFETY: as above.
            unsafe { super::copy::peer_bytes((dev, dst), (&devs[j], src), bytes as usize, stream) }?;
        }
    }
    let event = record(stream, dev.device)?;
    for (_, (theirs, _)) in others() {
        theirs.note_use(stream, &event);
    }
    Ok(event)
}

/// `hub`'s launches copying, for each `(j, output)` of `dsts`, part j of every input (`bytes` from
/// `j * bytes`) to `i * bytes` of the output for input i — each output on the hub or a device it
/// writes in place ([`launch::reaches`]). Returns the event that completes them all.
fn place_parts(
    hub: &CudaDevice,
    inputs: &[&Buffer],
    dsts: &[(usize, &DevAlloc)],
    bytes: usize,
) -> Result<Arc<Event>> {
    let b = bytes as u64;
    let written: Vec<&DevAlloc> = dsts.iter().map(|&(_, d)| d).collect();
    launch::issue_over(hub, inputs, &written, |l, ins, flag| {
        let segs: Vec<launch::Seg> = (dsts.iter())
            .flat_map(|&(j, d)| {
                ins.iter().enumerate().map(move |(i, &p)| (p + j as u64 * b, d.ptr() + i as u64 * b, b))
            })
            .collect();
        // SAFETY: every input holds its parts (checked by the caller) and is read in place on
        // this device or was copied here; each output holds one part per input, in memory this
        // stream writes; the outputs are distinct allocations, and all note the use.
        unsafe { launch::copy_segments_flagged(l, &segs, flag) }
    })
}

/// `hub`'s launches ([`launch::SEGS_WIDE`] outputs each) copying, for each output of `dsts`
/// (`None`: not written), the range of `input` at the same index of `ranges` (`(start, len)` in
/// elements) into it. Returns the event that completes them, or `None` where no output is written.
fn place_ranges(
    hub: &CudaDevice,
    input: &Buffer,
    dsts: &[Option<Arc<DevAlloc>>],
    ranges: &[(usize, usize)],
) -> Result<Option<Arc<Event>>> {
    let written: Vec<&DevAlloc> = dsts.iter().flatten().map(|d| &**d).collect();
    if written.is_empty() {
        return Ok(None);
    }
    let size = input.dtype.size() as u64;
    let event = launch::issue_over(hub, &[input], &written, |l, ins, flag| {
        let segs: Vec<launch::Seg> = (dsts.iter().zip(ranges))
            .filter_map(|(d, &(at, len))| {
                d.as_ref().map(|d| (ins[0] + at as u64 * size, d.ptr(), len as u64 * size))
            })
            .collect();
        // SAFETY: each range lies within `input` (`range_of` checked it), read in place on this
        // device; each output was allocated for its range's bytes, in memory this stream writes
        // (`launch::reaches`); the outputs are distinct allocations, and all note the use.
        unsafe { launch::copy_segments_flagged(l, &segs, flag) }
    })?;
    Ok(Some(event))
}

/// A member's part of a scatter from `src` (on `hub`): its output `d` where `hub`'s launch, which
/// `event` completes, wrote it; else elements `at..at + len` of `src`, as a view where the member
/// keeps its part in place (`own`: a scatter's root), else copied to the member.
fn part_for(
    hub: &CudaDevice,
    src: &Arc<Buffer>,
    (dev, d): (&Arc<CudaDevice>, Option<Arc<DevAlloc>>),
    event: Option<&Arc<Event>>,
    (at, len): (usize, usize),
    own: bool,
) -> Result<Arc<Buffer>> {
    if let (Some(d), Some(e)) = (d, event) {
        return Ok(Arc::new(device_buffer(src.dtype, len, d, e.clone(), &hub.compute)));
    }
    let slice = Kernel::Slice { outer: 1, in_mid: src.len, start: at, len, inner: 1 };
    let view = crate::backend::view(&slice, src, hub.device)?
        .ok_or_else(|| Error::internal("cuda part", format!("no view of a buffer on {}", hub.device)))?;
    match own {
        true => Ok(Arc::new(view)),
        false => super::copy::dtod(hub, &view, dev.device).map(Arc::new),
    }
}

/// Slice kernel `part`'s range of `input` as `(start, len)` in elements, if it is one contiguous
/// range (`outer == 1`) lying within `input`.
fn range_of(part: &Kernel, input: &Buffer) -> Option<(usize, usize)> {
    let Kernel::Slice { outer: 1, in_mid, start, len, inner } = *part else { return None };
    let (at, n) = (start.checked_mul(inner)?, len.checked_mul(inner)?);
    (in_mid.checked_mul(inner)? == input.len && at.checked_add(n)? <= input.len).then_some((at, n))
}

/// For each of `members`, memory for its output (`bytes`) that `hub`'s compute stream may write,
/// or `None` where the hub cannot write the member's memory in place ([`launch::reaches`]).
fn written_by(
    hub: &CudaDevice,
    members: &[&Arc<CudaDevice>],
    bytes: usize,
) -> Result<Vec<Option<Arc<DevAlloc>>>> {
    let reached = |dev: &CudaDevice| match launch::reaches(hub, dev.device)? {
        true => output_for(hub, dev, bytes).map(Some),
        false => Ok(None),
    };
    try_vec(members.iter().map(|dev| reached(dev)))
}

/// Memory for member `dev`'s output (`bytes`) that `hub`'s compute stream may write: allocated on
/// that stream where both are one GPU (one memory pool), else on the member's own stream, the
/// hub's stream waiting on the device for the allocation.
fn output_for(hub: &CudaDevice, dev: &CudaDevice, bytes: usize) -> Result<Arc<DevAlloc>> {
    if dev.physical == hub.physical {
        return dev.alloc(bytes, &hub.compute);
    }
    let dst = dev.alloc(bytes, &dev.compute)?;
    let ready = record(&dev.compute, dev.device)?;
    hub.bind()?;
    wait_on(&hub.compute, &ready, hub.device)?;
    Ok(dst)
}

/// The CUDA device behind member `d`.
fn member(d: Device) -> Result<Arc<CudaDevice>> {
    device::of(d, "cuda call")
}

/// `k` on `dev` over `inputs`, the kernel contract checked first.
fn kernel(dev: &CudaDevice, k: &Kernel, inputs: &[&Buffer], out: OutSpec) -> Result<Buffer> {
    k.check(dev.device, inputs, out)?;
    launch::compute(dev, k, inputs, out)
}

/// `k` on `dev` over part `i` of every input (`part` elements from `i * part`, read where they
/// lie) into `len` elements, the kernel contract checked for that window first: member i's fold of
/// a reduce_scatter, its join of an all_to_all.
fn window(
    dev: &CudaDevice,
    k: &Kernel,
    inputs: &[&Buffer],
    (i, part): (usize, usize),
    len: usize,
) -> Result<Buffer> {
    let out = OutSpec { dtype: inputs[0].dtype, len };
    let start = i.checked_mul(part).ok_or_else(|| {
        Error::internal(format!("{} on {}", k.name(), dev.device), format!("part {i} of {part} overflows"))
    })?;
    k.check_from(dev.device, inputs, start, out)?;
    launch::compute_from(dev, k, inputs, start, out)
}

#[cfg(test)]
mod tests {
    use super::{range_of, two_shot_part};
    use crate::backend::{Buffer, Kernel};
    use crate::device::Device;
    use crate::graph::Shape;

    /// A scatter's parts as element ranges of the root's tensor: every contiguous part along dim
    /// 0 or along a later dim whose outer extent is 1, uneven and empty ones included; a part
    /// along a dim with rows before it, or one that does not lie within the tensor (another
    /// length, past its end, overflowing), is none.
    #[test]
    fn a_scatter_part_is_its_range_only_where_contiguous_and_inside() {
        let t = Buffer::from_vec(Device::Cpu(0), vec![0f32; 6 * 4]);
        let rows = Shape::from([6, 4]);
        let mut at = 0;
        for len in [2usize, 0, 3, 1] {
            assert_eq!(
                range_of(&Kernel::slice(&rows, 0, at, len), &t),
                Some((at * 4, len * 4)),
                "rows {at}+{len}"
            );
            at += len;
        }
        let cols = Shape::from([1, 6, 4]);
        assert_eq!(range_of(&Kernel::slice(&cols, 1, 5, 1), &t), Some((20, 4)), "outer extent 1");
        assert_eq!(range_of(&Kernel::slice(&rows, 1, 1, 2), &t), None, "columns: not one range");
        assert_eq!(
            range_of(&Kernel::slice(&Shape::from([5, 4]), 0, 0, 5), &t),
            None,
            "another tensor's length"
        );
        let past = Kernel::Slice { outer: 1, in_mid: 6, start: 5, len: 2, inner: 4 };
        assert_eq!(range_of(&past, &t), None, "past the end");
        let huge = Kernel::Slice { outer: 1, in_mid: 6, start: usize::MAX / 2, len: 1, inner: 4 };
        assert_eq!(range_of(&huge, &t), None, "an overflowing start");
        assert_eq!(range_of(&Kernel::Cast, &t), None, "not a slice");
    }

    /// The parts cover `[0, len)` in member order, without gaps or overlaps, and each starts on
    /// a 256-byte boundary (so every pointer a fold gets keeps the vector paths' alignment).
    #[test]
    fn two_shot_parts_tile_the_tensor_on_aligned_bounds() {
        for size in [1usize, 2, 4, 8] {
            for n in [2usize, 3, 4, 7, 8] {
                for len in [0usize, 1, 7, 63, 64, 65, 255, 256, 257, 1000, 65537, (1 << 20) + 3] {
                    let mut at = 0;
                    for i in 0..n {
                        let (start, end) = two_shot_part(len, size, n, i);
                        assert_eq!(start, at, "len {len} size {size} n {n} member {i}");
                        assert!(end >= start && (start == len || (start * size) % 256 == 0));
                        at = end;
                    }
                    assert_eq!(at, len, "len {len} size {size} n {n}: the parts cover it");
                }
            }
        }
    }
}
