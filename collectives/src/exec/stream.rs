//! The schedule pass that streams a CUDA kernel's host traffic: its uploads from host devices and
//! its downloads to them run beside the kernel (in chunks where it is elementwise and large),
//! instead of whole before and after it.
//!
//! A mixed group's star folds a host member's shard on a CUDA device and sends the result back:
//! issued whole, the upload, the fold and the download run one after another, and the bus
//! carries one direction at a time (a 256 MiB shard crosses PCIe 5 in about 5 ms each way).
//! Streamed, chunk i's upload, chunk i-1's fold and chunk i-2's download run at once on the
//! device's three streams, so the kernel takes about as long as its larger transfer. Every buffer
//! a reader sees is still written whole — the result on the device, each host copy — so only the
//! issue order changes. [`STREAM_ENV`] `=0` turns the pass off.
//!
//! Small kernels are streamed too, for another reason: below [`STREAM_SMALL_BYTES`] the calls
//! around a transfer cost more than the transfer, and a streamed kernel is one stream's work —
//! the kernel reads the host inputs from pinned memory in place and the result is downloaded
//! behind it on the same stream, one event for the step (`backend/cuda/mapped.rs`), where the
//! steps unstreamed take three streams ordered by events. That holds for a small concat as much
//! as for a fold: the star all_gather of a CUDA device and host devices is one concat on the
//! leader reading the host shards in place, which writes the host members' results too (a join
//! would upload each host shard, place it, and download the whole).
//!
//! The pass marks as streamed a CUDA kernel step smaller than [`STREAM_SMALL_BYTES`] or of at
//! least [`STREAM_MIN_BYTES`] whose op is elementwise (`out[i]` reads only element i of each
//! input: binary, reduce, scale, cast), or smaller than [`STREAM_SMALL_BYTES`] that is a concat
//! (one pass only), and folds into it
//! - each input that is a copy from a host device read by this kernel alone (the kernel reads the
//!   host buffer; the copy is never issued, and its whole device buffer is never needed), and
//! - each copy of its result to a host device (written by the kernel as a fanout copy), and in one
//!   pass each copy to a host device of a contiguous slice of its result (the range the slice
//!   takes: a mixed group's reduce_scatter sends each host member its part of the fold so).
//!
//! The CUDA backend's `compute_fanout` runs the streamed kernel (`backend/cuda/stream.rs` in
//! chunks, `backend/cuda/mapped.rs` in one pass).
//!
//! ```
//! use collectives::exec::STREAM_MIN_BYTES;
//! use collectives::{Device, Tensor, available_devices};
//! // A host tensor doubled on cuda:0 and brought back: one streamed kernel where cuda:0 exists.
//! if available_devices().contains(&Device::Cuda(0)) {
//!     let n = STREAM_MIN_BYTES / 4;
//!     let host = Tensor::from_vec((0..n).map(|i| i as f32).collect(), [n], Device::Cpu(0))?;
//!     let on_gpu = host.copy_to_device(Device::Cuda(0))?;
//!     let back = on_gpu.add(&on_gpu)?.copy_to_device(Device::Cpu(0))?;
//!     assert_eq!(back.to_vec::<f32>()?[n - 1], 2.0 * (n - 1) as f32);
//! }
//! # Ok::<(), collectives::Error>(())
//! ```

use foldhash::HashMap;

use super::schedule::{Action, Step, fold_copy, sole_copy_to};
use crate::device::DeviceKind;
use crate::graph::{Op, Tensor};

/// Kernels of at least this many bytes (their output's) have their host transfers streamed. On
/// the H200 a 4 MiB all_reduce of `cuda:0, cpu:0` took 430–510 µs streamed against 285–300
/// whole, and one of 16 MiB 840–930 against 1000–1045 (`bench/gpu/17-streamed`, run b): below
/// about 16 MiB each chunk's driver calls and host copy cost more than overlapping saves.
pub const STREAM_MIN_BYTES: usize = 16 << 20;

/// Kernels smaller than this many bytes (their output's) are streamed too, in one pass: the
/// kernel reads its host inputs from pinned memory in place and its result is downloaded on the
/// same stream, one event for the whole step instead of an upload, a kernel and a download on
/// three streams (`backend/cuda/mapped.rs`).
pub const STREAM_SMALL_BYTES: usize = 1 << 20;

/// Environment variable switching the pass off (`0`); on by default.
pub const STREAM_ENV: &str = "COLLECTIVES_STREAM";

/// Environment variable setting a streamed kernel's chunk in bytes (1 to 16 MiB), in place of
/// the backend's choice (the CUDA backend cuts a kernel into about eight chunks of 4 to 16 MiB);
/// read once.
pub const STREAM_CHUNK_ENV: &str = "COLLECTIVES_STREAM_CHUNK_BYTES";

/// Whether the pass runs in this process ([`STREAM_ENV`]).
pub(crate) fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| crate::knob::switch(STREAM_ENV, true))
}

/// The kernel sizes (output bytes) that stream: below `small` or from `large` on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sizes {
    /// Kernels smaller than this stream in one pass ([`STREAM_SMALL_BYTES`]).
    pub small: usize,
    /// Kernels of at least this stream in chunks ([`STREAM_MIN_BYTES`]).
    pub large: usize,
}

impl Sizes {
    /// The library's bounds.
    pub const DEFAULT: Sizes = Sizes { small: STREAM_SMALL_BYTES, large: STREAM_MIN_BYTES };

    fn streams(self, bytes: usize) -> bool {
        self.in_one_pass(bytes) || bytes >= self.large
    }

    /// Whether a kernel of `bytes` streams in one pass: what a concat must be to stream, and
    /// what a kernel must be to write ranges of its result to host devices.
    pub fn in_one_pass(self, bytes: usize) -> bool {
        bytes < self.small
    }
}

/// Streams each kernel step of `steps` that the module's rule allows, of the `sizes` that stream.
pub(crate) fn fuse(steps: &mut [Step], sizes: Sizes) {
    let candidates: Vec<usize> = (0..steps.len()).filter(|&k| streamable(&steps[k], sizes)).collect();
    if candidates.is_empty() {
        return;
    }
    let readers = readers(steps);
    for k in candidates {
        let device = steps[k].tensor.device();
        let ups: Vec<usize> = (0..steps[k].inputs.len())
            .filter(|&at| sole_copy_to(steps, steps[k].inputs[at], device, |d| d.is_host()))
            .collect();
        let mut downs: Vec<usize> =
            readers.get(&k).into_iter().flatten().copied().filter(|&c| download_to_host(&steps[c])).collect();
        let parts = match sizes.in_one_pass(steps[k].tensor.nbytes()) {
            true => part_downloads(steps, &readers, k),
            false => vec![],
        };
        if ups.is_empty() && downs.is_empty() && parts.is_empty() {
            continue;
        }
        for &at in &ups {
            fold_copy(steps, k, at);
        }
        for &(s, c) in &parts {
            read_past(steps, k, s, c);
            downs.push(c);
        }
        for &c in &downs {
            steps[c].action = Action::Fused;
        }
        if let Action::Kernel { fanout, streamed } = &mut steps[k].action {
            fanout.extend(downs);
            *streamed = true;
        }
    }
}

/// Whether step `s` may be streamed: a kernel step (not yet fanned out) of a node that
/// [`streams`].
fn streamable(s: &Step, sizes: Sizes) -> bool {
    matches!(&s.action, Action::Kernel { fanout, streamed: false } if fanout.is_empty())
        && streams(&s.tensor, sizes)
}

/// Whether node `t` is one the pass streams: an op on a CUDA device with an output of one of the
/// `sizes` that stream — elementwise, or a concat, which runs in one pass only (below
/// `sizes.small`). A slice does not: a contiguous one is a view, and its copy to a host device
/// is one the host's join places (`bench/gpu/39-one-pass-joins`, runs a and b: streamed, the
/// slices cost the reduce_scatter of `cuda:0,cpu:0` 1–5 µs a call up to 64 KiB, its all_to_all
/// 6–27 from 64 KiB).
pub(super) fn streams(t: &Tensor, sizes: Sizes) -> bool {
    let bytes = t.nbytes();
    let fits = match t.op() {
        Op::Binary(_) | Op::Reduce { .. } | Op::Scale(_) | Op::Cast(_) => sizes.streams(bytes),
        Op::Concat { .. } => sizes.in_one_pass(bytes),
        _ => false,
    };
    t.device().kind() == DeviceKind::Cuda && fits
}

/// The copies to host devices of the contiguous slices of kernel step `k` (each a slice step of
/// `k` alone on its device, a view of one range of its result), as `(slice, copy)`: a kernel in
/// one pass writes them itself, as ranges of its result. A mixed group's reduce_scatter folds on
/// its CUDA member and sends each host member its part: that part's copy, a download of its own
/// after the fold (about 8.6 µs of calls at 4 KiB on an H100, `bench/gpu/39-one-pass-joins`,
/// run d), becomes one more launch of the fold's step (the reduce_scatter of `cuda:0,cpu:0` at
/// 4 KiB 21.5, 22.3 µs against 27.7, 27.1; `bench/gpu/40-ranged-parts`, run a).
fn part_downloads(steps: &[Step], readers: &HashMap<usize, Vec<usize>>, k: usize) -> Vec<(usize, usize)> {
    let of_k = readers.get(&k).into_iter().flatten().copied();
    let parts = of_k.filter(|&s| contiguous_slice_of(steps, s, k));
    let copies = |s: usize| readers.get(&s).into_iter().flatten().copied().map(move |c| (s, c));
    parts.flat_map(copies).filter(|&(_, c)| download_to_host(&steps[c])).collect()
}

/// Whether step `s` is a slice kernel of step `k` alone, on `k`'s device, of one contiguous range.
fn contiguous_slice_of(steps: &[Step], s: usize, k: usize) -> bool {
    let (slice, kernel) = (&steps[s].tensor, &steps[k].tensor);
    matches!(&steps[s].action, Action::Kernel { fanout, streamed: false } if fanout.is_empty())
        && steps[s].inputs == [k]
        && slice.device() == kernel.device()
        && !slice.same_node(kernel)
        && super::step::range_of(kernel, slice).is_some()
}

/// Copy step `c` of slice step `s` of kernel step `k` reads `k` instead (the kernel writes the
/// slice's range itself); `s`, read by nothing else and no target, is then never issued.
fn read_past(steps: &mut [Step], k: usize, s: usize, c: usize) {
    steps[c].inputs[0] = k;
    steps[k].consumers += 1;
    steps[s].consumers -= 1;
    if steps[s].consumers == 0 && !steps[s].keep {
        steps[s].action = Action::Fused;
        steps[k].consumers -= 1;
    }
}

/// For every step, the steps that read it (each once).
fn readers(steps: &[Step]) -> HashMap<usize, Vec<usize>> {
    let mut r: HashMap<usize, Vec<usize>> = HashMap::default();
    for (c, s) in steps.iter().enumerate() {
        for &i in &s.inputs {
            let list = r.entry(i).or_default();
            if list.last() != Some(&c) {
                list.push(c);
            }
        }
    }
    r
}

/// Whether `c` is a plain copy to a host device (of its one input, the kernel's result).
fn download_to_host(c: &Step) -> bool {
    matches!(c.action, Action::Copy { to, take: false } if to.is_host()) && c.inputs.len() == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;
    use crate::dtype::DType;
    use crate::graph::{ReduceKind, Shape, Tensor};

    const CU: Device = Device::Cuda(0);
    const HOST: Device = Device::Cpu(0);
    const BIG: usize = STREAM_MIN_BYTES / 4;

    fn input(device: Device, numel: usize) -> Tensor {
        Tensor::placeholder(Shape::from(vec![numel]), DType::F32, device)
    }

    fn sum(on: Device, shards: &[Tensor]) -> Tensor {
        Tensor::reduce_on(on, shards, ReduceKind::Sum, None).unwrap()
    }

    fn index(s: &[Step], t: &Tensor) -> usize {
        s.iter().position(|st| st.tensor.same_node(t)).expect("scheduled")
    }

    /// The schedule of `targets` with the pass applied to kernels from `large` bytes (and none
    /// in one pass).
    fn streamed(targets: &[Tensor], large: usize) -> Vec<Step> {
        let mut s = super::super::schedule::unfused(targets);
        fuse(&mut s.steps, Sizes { small: 0, large });
        s.steps
    }

    /// The mixed star's shape: a host shard uploaded and folded on CUDA with a device shard, the
    /// result downloaded to the host (a target) and kept on the device (a target).
    fn star() -> (Tensor, Tensor, Tensor, Tensor) {
        star_of(BIG)
    }

    /// [`star`] of `numel` f32 elements per shard.
    fn star_of(numel: usize) -> (Tensor, Tensor, Tensor, Tensor) {
        let (dev, host) = (input(CU, numel), input(HOST, numel));
        let up = host.copy_to_device(CU).unwrap();
        let folded = sum(CU, &[dev, up.clone()]);
        let down = folded.copy_to_device(HOST).unwrap();
        (host, up, folded, down)
    }

    #[test]
    fn a_cuda_fold_of_a_host_shard_streams_its_upload_and_download() {
        let (host, up, folded, down) = star();
        let s = streamed(&[folded.clone(), down.clone()], STREAM_MIN_BYTES);
        let (h, u, k, d) = (index(&s, &host), index(&s, &up), index(&s, &folded), index(&s, &down));
        assert!(matches!(s[u].action, Action::Fused), "the upload is folded into the kernel");
        assert_eq!(s[u].consumers, 0);
        assert_eq!(s[k].inputs[1], h, "the kernel reads the host shard");
        assert!(matches!(s[d].action, Action::Fused), "the download is the kernel's fanout");
        assert!(matches!(&s[k].action, Action::Kernel { fanout, streamed: true } if fanout == &vec![d]));
        assert_eq!(s[h].consumers, 1, "the host shard is read by the kernel instead");
    }

    /// With the library's bounds: a small star streams (in one pass), one between the bounds
    /// does not, one at the upper bound does (in chunks).
    #[test]
    fn kernels_below_the_small_bound_or_from_the_large_one_stream() {
        for (numel, streams) in [
            (1024, true),
            (STREAM_SMALL_BYTES / 4 - 1, true),
            (STREAM_SMALL_BYTES / 4, false),
            (STREAM_MIN_BYTES / 4 - 1, false),
            (STREAM_MIN_BYTES / 4, true),
        ] {
            let (_, up, folded, down) = star_of(numel);
            let mut s = super::super::schedule::unfused(&[folded.clone(), down]);
            fuse(&mut s.steps, Sizes::DEFAULT);
            let k = &s.steps[index(&s.steps, &folded)];
            assert_eq!(
                matches!(k.action, Action::Kernel { streamed: true, .. }),
                streams,
                "{numel} elements"
            );
            assert_eq!(
                matches!(s.steps[index(&s.steps, &up)].action, Action::Fused),
                streams,
                "{numel} elements"
            );
        }
    }

    /// A small concat (the mixed star's all_gather: the host shard uploaded, joined on CUDA, the
    /// whole sent back) streams in one pass; from the small bound on it does not. A slice does
    /// not stream at any size (a view, its copy to the host left to the host's join).
    #[test]
    fn a_small_concat_streams_in_one_pass_and_a_slice_never() {
        let small = Sizes::DEFAULT.small / 4;
        for (numel, streams) in [(1, true), (1024, true), (small / 2 - 1, true), (small / 2, false)] {
            let (host, dev) = (input(HOST, numel), input(CU, numel));
            let up = host.copy_to_device(CU).unwrap();
            let joined = Tensor::concat_on(CU, &[up.clone(), dev], 0).unwrap();
            let down = joined.copy_to_device(Device::Cpu(1)).unwrap();
            let mut s = super::super::schedule::unfused(&[joined.clone(), down.clone()]);
            fuse(&mut s.steps, Sizes::DEFAULT);
            let (k, d) = (index(&s.steps, &joined), index(&s.steps, &down));
            let fanned =
                matches!(&s.steps[k].action, Action::Kernel { fanout, streamed: true } if fanout == &vec![d]);
            assert_eq!(fanned, streams, "concat of {numel} + {numel}: {}", s.describe(k));
            assert_eq!(matches!(s.steps[index(&s.steps, &up)].action, Action::Fused), streams);
            assert_eq!(s.steps[k].inputs[0] == index(&s.steps, &host), streams, "reads the host shard");
        }
        for numel in [7, small - 1, small] {
            let up = input(HOST, numel).copy_to_device(CU).unwrap();
            let part = up.narrow(0, 1, 3.min(numel - 1)).unwrap();
            let down = part.copy_to_device(HOST).unwrap();
            let mut s = super::super::schedule::unfused(std::slice::from_ref(&down));
            fuse(&mut s.steps, Sizes::DEFAULT);
            let k = index(&s.steps, &part);
            let fanned =
                matches!(&s.steps[k].action, Action::Kernel { fanout, streamed: true } if fanout.len() == 1);
            assert!(!fanned, "a slice of {numel}: {}", s.describe(k));
        }
    }

    /// The mixed star's reduce_scatter: a fold on CUDA, its first half kept there (a target), its
    /// second half copied to the host. Below the small bound the copy is the fold's fanout,
    /// reading the fold, and the slice it read, nothing else's, is never issued; a slice that is
    /// also a target is still issued; from the bound on, and for a slice of two ranges (along
    /// an inner dim), the copy stays a step of its own.
    #[test]
    fn a_small_folds_parts_are_copied_to_the_host_by_the_fold() {
        let small = Sizes::DEFAULT.small / 4;
        for (numel, fanned) in [(2, true), (1024, true), (small - 2, true), (small, false)] {
            let (_, _, folded, _) = star_of(numel);
            let (mine, theirs) =
                (folded.narrow(0, 0, numel / 2).unwrap(), folded.narrow(0, numel / 2, numel / 2).unwrap());
            let down = theirs.copy_to_device(HOST).unwrap();
            let also = mine.copy_to_device(Device::Cpu(1)).unwrap();
            let mut s = super::super::schedule::unfused(&[mine.clone(), down.clone(), also.clone()]);
            fuse(&mut s.steps, Sizes::DEFAULT);
            let st = &s.steps;
            let (k, m, t, d, a) = (
                index(st, &folded),
                index(st, &mine),
                index(st, &theirs),
                index(st, &down),
                index(st, &also),
            );
            let mut fanout = match &st[k].action {
                Action::Kernel { fanout, .. } => fanout.clone(),
                _ => panic!("the fold is a kernel"),
            };
            fanout.sort_unstable();
            let mut copies = vec![d, a];
            copies.sort_unstable();
            assert_eq!(fanout == copies, fanned, "{numel} elements: {}", s.describe(k));
            assert_eq!(matches!(st[t].action, Action::Fused), fanned, "the copied slice, {numel}");
            assert!(matches!(st[m].action, Action::Kernel { .. }), "the kept slice is issued, {numel}");
            if fanned {
                assert_eq!((st[d].inputs[0], st[a].inputs[0]), (k, k), "the copies read the fold");
                assert_eq!((st[t].consumers, st[m].consumers, st[k].consumers), (0, 0, 3), "{numel}");
            }
        }
        let square = |d: Device| Tensor::placeholder(Shape::from(vec![8, 8]), DType::F32, d);
        let folded = sum(CU, &[square(CU), square(HOST).copy_to_device(CU).unwrap()]);
        let rows = folded.narrow(0, 2, 3).unwrap().copy_to_device(HOST).unwrap();
        let columns = folded.narrow(1, 0, 4).unwrap().copy_to_device(HOST).unwrap();
        let mut s = super::super::schedule::unfused(&[rows.clone(), columns.clone()]);
        fuse(&mut s.steps, Sizes::DEFAULT);
        assert!(matches!(s.steps[index(&s.steps, &rows)].action, Action::Fused), "three whole rows");
        assert!(matches!(s.steps[index(&s.steps, &columns)].action, Action::Copy { .. }), "two ranges a row");
    }

    #[test]
    fn small_or_non_elementwise_or_host_kernels_are_left_alone() {
        let (_, up, folded, down) = star();
        let s = streamed(&[folded.clone(), down.clone()], STREAM_MIN_BYTES + 1);
        assert!(matches!(s[index(&s, &up)].action, Action::Copy { .. }), "below the bound");
        assert!(matches!(s[index(&s, &folded)].action, Action::Kernel { streamed: false, .. }));
        let joined =
            Tensor::concat_on(CU, &[input(CU, BIG), input(HOST, BIG).copy_to_device(CU).unwrap()], 0)
                .unwrap();
        let s = streamed(std::slice::from_ref(&joined), 0);
        assert!(matches!(s[index(&s, &joined)].action, Action::Kernel { streamed: false, .. }));
        let on_host = sum(Device::Cpu(1), &[input(HOST, BIG), input(Device::Cpu(1), BIG)]);
        let s = streamed(std::slice::from_ref(&on_host), 0);
        assert!(matches!(s[index(&s, &on_host)].action, Action::Kernel { streamed: false, .. }));
    }

    #[test]
    fn an_upload_someone_else_needs_stays_a_step() {
        let (host, dev) = (input(HOST, BIG), input(CU, BIG));
        let up = host.copy_to_device(CU).unwrap();
        let folded = sum(CU, &[dev, up.clone()]);
        let s = streamed(&[folded.clone(), up.clone()], 0);
        assert!(matches!(s[index(&s, &up)].action, Action::Copy { .. }), "a realize target");
        assert_eq!(s[index(&s, &folded)].inputs[1], index(&s, &up));
        assert!(
            matches!(s[index(&s, &folded)].action, Action::Kernel { streamed: false, .. }),
            "nothing left to stream"
        );
        let twice = up.add(&up).unwrap();
        let s = streamed(&[folded, twice], 0);
        assert!(matches!(s[index(&s, &up)].action, Action::Copy { .. }), "two readers");
    }

    /// A Vulkan shard's hop whose host intermediate the chain fusion skipped reads the Vulkan
    /// device: it is not an upload from the host, though its node's input is the host hop.
    #[test]
    fn a_fused_chain_from_vulkan_is_not_an_upload() {
        let (vk, host) = (input(Device::Vulkan(0), BIG), input(HOST, BIG));
        let via = vk.copy_to_device(crate::route::STAGING_HOST).unwrap();
        let (hop, up) = (via.copy_to_device(CU).unwrap(), host.copy_to_device(CU).unwrap());
        let folded = sum(CU, &[input(CU, BIG), hop.clone(), up.clone()]);
        let mut s = super::super::schedule::unfused(std::slice::from_ref(&folded));
        super::super::schedule::fuse_staged_chains(&mut s.steps, |_, _| 0, |_, _| true);
        fuse(&mut s.steps, Sizes { small: 0, large: 0 });
        let (k, h) = (index(&s.steps, &folded), index(&s.steps, &hop));
        assert!(matches!(s.steps[h].action, Action::Copy { .. }), "the bridge copy stays a step");
        assert_eq!(s.steps[k].inputs[1], h);
        assert!(matches!(s.steps[index(&s.steps, &up)].action, Action::Fused), "the host shard streams");
        assert_eq!(s.steps[k].inputs[2], index(&s.steps, &host));
    }

    #[test]
    fn a_download_alone_streams_and_a_move_upload_does_not() {
        let dev = input(CU, BIG);
        let scaled = dev.add(&dev).unwrap();
        let down = scaled.copy_to_device(Device::Cpu(2)).unwrap();
        let s = streamed(std::slice::from_ref(&down), 0);
        let (k, d) = (index(&s, &scaled), index(&s, &down));
        assert!(matches!(&s[k].action, Action::Kernel { fanout, streamed: true } if fanout == &vec![d]));
        let moved = input(HOST, BIG).move_to_device(CU).unwrap();
        let folded = sum(CU, &[input(CU, BIG), moved.clone()]);
        let s = streamed(std::slice::from_ref(&folded), 0);
        assert!(!matches!(s[index(&s, &moved)].action, Action::Fused), "a move is not folded in");
    }
}
