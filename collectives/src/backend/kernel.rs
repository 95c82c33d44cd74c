//! The kernel contract: a graph op lowered to what a kernel needs ([`Kernel`], flat lengths
//! instead of shapes), the output it must produce ([`OutSpec`]), and the one check of its
//! inputs ([`Kernel::check`]) made before any backend runs it.
//!
//! Backends trust the contract: a kernel reads `inputs[k]` up to the length the contract gives
//! it and writes `out.len` elements, so a backend's kernels need no bounds checks of their own;
//! a backend checks only what is its own (a dtype its device cannot compute). Every size is
//! computed with checked arithmetic, and a broken contract is [`Error::Internal`]: the graph
//! builds only kernels that keep it.

use super::Buffer;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::{BinaryOp, ReduceKind, Scale};

/// A graph op lowered to what a kernel needs: flat lengths instead of shapes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kernel {
    /// `out[i] = a[i] op b[i]`.
    Binary(BinaryOp),
    /// `out[i] = scale(fold_k in_k[i])`, folding in the compute type.
    Reduce { kind: ReduceKind, scale: Option<Scale> },
    /// `out[i] = scale(in[i])`.
    Scale(Scale),
    /// `out[i] = in[i] as out dtype`.
    Cast,
    /// `out[o, m, i] = in[o, start + m, i]` with `m < len`; input is `outer × in_mid × inner`.
    Slice { outer: usize, in_mid: usize, start: usize, len: usize, inner: usize },
    /// Inputs `outer × mids[k] × inner` joined along the middle axis.
    Concat { outer: usize, mids: Vec<usize>, inner: usize },
}

/// The output a kernel must produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutSpec {
    pub dtype: DType,
    pub len: usize,
}

/// A copy of a kernel's result (or of a contiguous range of it) that the kernel step delivers
/// to a host device itself ([`super::Backend::compute_fanout`]): a mixed group's fold writes its
/// host members' copies — of the whole result for an all_reduce, of each member's part for a
/// reduce_scatter — in the step that computes it (`exec/stream.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Delivery {
    /// The host device the copy is on.
    pub to: Device,
    /// The elements of the result it holds.
    pub range: std::ops::Range<usize>,
}

impl Delivery {
    /// The whole of a result of `len` elements, to `to`.
    #[cfg(test)]
    pub fn whole(to: Device, len: usize) -> Delivery {
        Delivery { to, range: 0..len }
    }

    /// The whole of a result of `len` elements, to each of `to`.
    #[cfg(test)]
    pub fn wholes(to: &[Device], len: usize) -> Vec<Delivery> {
        to.iter().map(|&d| Delivery::whole(d, len)).collect()
    }

    /// Deliveries of a result of `n` elements for tests: whole to two host devices, then its tail
    /// from a third on, its middle third and an empty range at its end to three more.
    #[cfg(test)]
    pub fn mixed(n: usize) -> Vec<Delivery> {
        let mut to = Delivery::wholes(&[Device::Cpu(1), Device::Cpu(3)], n);
        for (d, range) in [(4, n / 3..n), (5, n / 3..2 * n / 3), (6, n..n)] {
            to.push(Delivery { to: Device::Cpu(d), range });
        }
        to
    }

    /// Whether it holds the whole of a result of `len` elements.
    pub fn is_whole(&self, len: usize) -> bool {
        self.range == (0..len)
    }

    /// The copy's output: `out`'s dtype, the range's length.
    pub fn out(&self, out: OutSpec) -> OutSpec {
        OutSpec { dtype: out.dtype, len: self.range.len() }
    }

    /// [`Error::Internal`] unless each of `deliveries` is a range within a result of `out.len`
    /// elements, to a host device: what every backend's `compute_fanout` may assume.
    pub fn check_all(deliveries: &[Delivery], device: Device, out: OutSpec) -> Result<()> {
        let bad = |d: &&Delivery| !d.to.is_host() || d.range.start > d.range.end || d.range.end > out.len;
        match deliveries.iter().find(bad) {
            Some(d) => Err(Error::internal(
                format!("kernel on {device}"),
                format!("a copy of elements {:?} to {} of a result of {} elements", d.range, d.to, out.len),
            )),
            None => Ok(()),
        }
    }
}

impl Kernel {
    /// Elements `start..start + len` along `dim` of an input shaped `input`.
    pub fn slice(input: &crate::graph::Shape, dim: usize, start: usize, len: usize) -> Kernel {
        let (outer, in_mid, inner) = input.split_at_dim(dim);
        Kernel::Slice { outer, in_mid, start, len, inner }
    }

    /// The concat of inputs whose extents along `dim` are `mids`, into `out` (their join).
    pub fn concat(out: &crate::graph::Shape, mids: Vec<usize>, dim: usize) -> Kernel {
        let (outer, _, inner) = out.split_at_dim(dim);
        Kernel::Concat { outer, mids, inner }
    }

    /// A short name for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Kernel::Binary(_) => "binary",
            Kernel::Reduce { .. } => "reduce",
            Kernel::Scale(_) => "scale",
            Kernel::Cast => "cast",
            Kernel::Slice { .. } => "slice",
            Kernel::Concat { .. } => "concat",
        }
    }

    /// Checks the contract of running this kernel on `device` over `inputs` into `out`: inputs
    /// readable from `device`, their count, each one's length exactly what the kernel reads, and
    /// their dtype (the output's, except a cast's).
    pub fn check(&self, device: Device, inputs: &[&Buffer], out: OutSpec) -> Result<()> {
        self.check_reads(device, inputs, None, false, out)
    }

    /// [`Kernel::check`] for a streamed kernel (`exec/stream.rs`): its inputs may also live on
    /// host devices, which its backend reads as it runs — in chunks for an elementwise kernel
    /// ([`Kernel::elementwise`]), in one pass or after uploading them for any other.
    pub fn check_streamed(&self, device: Device, inputs: &[&Buffer], out: OutSpec) -> Result<()> {
        self.check_reads(device, inputs, None, true, out)
    }

    /// Whether output element i reads only element i of each input (binary, reduce, scale, cast),
    /// so the kernel can run over any window of its elements.
    pub fn elementwise(&self) -> bool {
        matches!(self, Kernel::Binary(_) | Kernel::Reduce { .. } | Kernel::Scale(_) | Kernel::Cast)
    }

    /// [`Kernel::check`] for a kernel that reads each input from element `start` on (a window
    /// of a longer input, as each member of a native reduce_scatter folds its part): every input
    /// holds at least `start` plus what the kernel reads (checked arithmetic).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // used by the CUDA calls and tests
    pub fn check_from(&self, device: Device, inputs: &[&Buffer], start: usize, out: OutSpec) -> Result<()> {
        self.check_reads(device, inputs, Some(start), false, out)
    }

    /// The contract, with each input read whole (`None`) or from `start` on, and inputs on host
    /// devices allowed where `from_host`.
    fn check_reads(
        &self,
        device: Device,
        inputs: &[&Buffer],
        start: Option<usize>,
        from_host: bool,
        out: OutSpec,
    ) -> Result<()> {
        let broken = |what: String| Error::internal(format!("{} kernel on {device}", self.name()), what);
        let reads =
            |b: &Buffer| crate::route::readable(device, b.device) || (from_host && b.device.is_host());
        if let Some(b) = inputs.iter().find(|b| !reads(b)) {
            return Err(broken(format!("an input lives on {}, which it cannot read", b.device)));
        }
        let want = self.input_lens(inputs.len(), out.len).map_err(&broken)?;
        if !want.fit(inputs, start) {
            let (lens, want) = (inputs.iter().map(|b| b.len).collect::<Vec<_>>(), want.list());
            let from = start.map_or(String::new(), |s| format!(" from element {s}"));
            return Err(broken(format!("input lengths {lens:?}, expected {want:?}{from} for {self:?}")));
        }
        let dtype_ok = |b: &&&Buffer| matches!(self, Kernel::Cast) || b.dtype == out.dtype;
        if let Some(b) = inputs.iter().find(|b| !dtype_ok(b)) {
            return Err(broken(format!("an input is {}, the output {}", b.dtype, out.dtype)));
        }
        Ok(())
    }

    /// The length of each input the kernel reads to write `out` elements, given `k` inputs (a
    /// reduce takes any number from one).
    fn input_lens(&self, k: usize, out: usize) -> std::result::Result<Lens, String> {
        let prod =
            |xs: &[usize]| xs.iter().try_fold(1usize, |a, &x| a.checked_mul(x)).ok_or("size overflows");
        let same = |len, count| Lens::Same { len, count };
        Ok(match self {
            Kernel::Binary(_) => same(out, 2),
            Kernel::Reduce { .. } if k == 0 => return Err("a reduce of no inputs".into()),
            Kernel::Reduce { .. } => same(out, k),
            Kernel::Scale(_) | Kernel::Cast => same(out, 1),
            Kernel::Slice { outer, in_mid, start, len, inner } => {
                if start.checked_add(*len).is_none_or(|e| e > *in_mid)
                    || prod(&[*outer, *len, *inner])? != out
                {
                    return Err(format!("{self:?} does not make {out} elements"));
                }
                same(prod(&[*outer, *in_mid, *inner])?, 1)
            }
            Kernel::Concat { outer, mids, inner } => {
                let total = mids.iter().try_fold(0usize, |a, &m| a.checked_add(m)).ok_or("size overflows")?;
                if prod(&[*outer, total, *inner])? != out {
                    return Err(format!("{self:?} does not make {out} elements"));
                }
                Lens::Each(
                    mids.iter()
                        .map(|&m| prod(&[*outer, m, *inner]))
                        .collect::<std::result::Result<_, _>>()?,
                )
            }
        })
    }
}

/// The input lengths a kernel reads: `count` inputs of `len` elements each, or one length per
/// input (a concat). Checked without allocating, as every kernel step checks it.
enum Lens {
    Same { len: usize, count: usize },
    Each(Vec<usize>),
}

impl Lens {
    /// Whether `inputs` have exactly these lengths, or (read from `start`) hold at least `start`
    /// plus these lengths.
    fn fit(&self, inputs: &[&Buffer], start: Option<usize>) -> bool {
        let holds = |b: &Buffer, want: usize| match start {
            None => b.len == want,
            Some(s) => s.checked_add(want).is_some_and(|end| end <= b.len),
        };
        match self {
            Lens::Same { len, count } => inputs.len() == *count && inputs.iter().all(|b| holds(b, *len)),
            Lens::Each(lens) => {
                inputs.len() == lens.len() && inputs.iter().zip(lens).all(|(b, &l)| holds(b, l))
            }
        }
    }

    /// The lengths, one per input (for messages).
    fn list(&self) -> Vec<usize> {
        match self {
            Lens::Same { len, count } => vec![*len; *count],
            Lens::Each(lens) => lens.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEV: Device = Device::Cpu(0);

    fn buf(len: usize) -> Buffer {
        Buffer::from_vec(DEV, (0..len).map(|_| rand::random::<f32>()).collect())
    }

    fn out(len: usize) -> OutSpec {
        OutSpec { dtype: DType::F32, len }
    }

    fn broken(k: &Kernel, inputs: &[&Buffer], o: OutSpec) -> bool {
        matches!(k.check(DEV, inputs, o), Err(Error::Internal { .. }))
    }

    #[test]
    fn a_window_must_lie_inside_every_input() {
        let reduce = Kernel::Reduce { kind: crate::graph::ReduceKind::Sum, scale: None };
        let (a, b) = (buf(12), buf(12));
        let from = |start| reduce.check_from(DEV, &[&a, &b], start, out(4));
        assert!(from(0).is_ok() && from(8).is_ok(), "the first and the last part");
        assert!(matches!(from(9), Err(Error::Internal { .. })), "past the end");
        assert!(matches!(from(usize::MAX), Err(Error::Internal { .. })), "an overflowing start");
        let short = buf(10);
        assert!(reduce.check_from(DEV, &[&a, &short], 8, out(4)).is_err(), "one input too short");
        assert!(reduce.check(DEV, &[&a, &b], out(4)).is_err(), "a whole read stays exact");
    }

    #[test]
    fn lengths_counts_and_dtypes_are_checked() {
        let (a, b) = (buf(3), buf(4));
        let add = Kernel::Binary(BinaryOp::Add);
        assert!(add.check(DEV, &[&a, &a], out(3)).is_ok());
        assert!(broken(&add, &[&a], out(3)), "one input of two");
        assert!(broken(&add, &[&a, &b], out(3)), "a short input");
        assert!(broken(&add, &[&a, &a], out(4)), "an output longer than the inputs");
        let sum = Kernel::Reduce { kind: ReduceKind::Sum, scale: None };
        assert!(sum.check(DEV, &[&a, &a, &a], out(3)).is_ok());
        assert!(broken(&sum, &[], out(3)), "a reduce of nothing");
        let ints = Buffer::from_vec(DEV, vec![1i32, 2, 3]);
        assert!(broken(&add, &[&a, &ints], out(3)), "a dtype other than the output's");
        assert!(Kernel::Cast.check(DEV, &[&ints], out(3)).is_ok(), "a cast changes the dtype");
    }

    #[test]
    fn slices_and_concats_are_checked_with_checked_arithmetic() {
        let a = buf(6);
        let slice = |start, len| Kernel::Slice { outer: 2, in_mid: 3, start, len, inner: 1 };
        assert!(slice(1, 2).check(DEV, &[&a], out(4)).is_ok());
        assert!(broken(&slice(2, 2), &[&a], out(4)), "past the end");
        assert!(broken(&slice(usize::MAX, 2), &[&a], out(4)), "an overflowing range");
        let huge = Kernel::Slice { outer: usize::MAX, in_mid: 3, start: 0, len: 1, inner: 2 };
        assert!(broken(&huge, &[&a], out(4)), "an overflowing size");
        let (b, c) = (buf(2), buf(4));
        let cat = |mids: Vec<usize>| Kernel::Concat { outer: 2, mids, inner: 1 };
        assert!(cat(vec![1, 2]).check(DEV, &[&b, &c], out(6)).is_ok());
        assert!(broken(&cat(vec![1, 2]), &[&c, &b], out(6)), "inputs in the wrong order");
        assert!(broken(&cat(vec![usize::MAX, 2]), &[&b, &c], out(6)), "an overflowing sum");
    }

    #[test]
    fn an_input_the_device_cannot_read_is_refused() {
        let a = buf(2);
        let scale = Kernel::Scale(Scale::Mul(2.0));
        assert!(scale.check(Device::Cpu(3), &[&a], out(2)).is_ok(), "host devices share memory");
        let err = scale.check(Device::Cuda(0), &[&a], out(2)).unwrap_err();
        assert!(matches!(err, Error::Internal { .. }) && err.to_string().contains("cannot read"), "{err}");
    }

    #[test]
    fn a_streamed_kernel_of_any_kind_reads_the_host() {
        let (a, b) = (buf(5), buf(5));
        let add = Kernel::Binary(BinaryOp::Add);
        assert!(add.check_streamed(Device::Cuda(0), &[&a, &b], out(5)).is_ok(), "host inputs");
        assert!(add.check_streamed(Device::Cuda(0), &[&a, &b], out(4)).is_err(), "lengths still checked");
        let vk = Buffer { device: Device::Vulkan(0), ..buf(5) };
        assert!(add.check_streamed(Device::Cuda(0), &[&a, &vk], out(5)).is_err(), "another vendor's memory");
        let slice = Kernel::Slice { outer: 1, in_mid: 5, start: 1, len: 2, inner: 1 };
        assert!(slice.check_streamed(Device::Cuda(0), &[&a], out(2)).is_ok(), "a slice of a host input");
        assert!(slice.check_streamed(Device::Cuda(0), &[&a], out(3)).is_err(), "its length checked");
        let concat = Kernel::Concat { outer: 1, mids: vec![5, 5], inner: 1 };
        assert!(concat.check_streamed(Device::Cuda(0), &[&a, &vk], out(10)).is_err(), "Vulkan memory");
        assert!(Kernel::Cast.elementwise() && !concat.elementwise() && !slice.elementwise());
    }
}
