//! The direct path's fanned kernel: targets that are what one kernel step writes itself — the
//! kernel's result, its copies to host devices, and, for a CUDA kernel in one pass, its
//! contiguous parts (views of the result) and their copies to host devices — issued as that one
//! step without the graph pass and the schedule.
//!
//! Why: the small collectives of a CUDA device and host devices are such steps. The all_reduce
//! is the leader's fold and its copies; the all_gather the leader's concat and its copies; the
//! reduce_scatter the fold, the leader's part of it and the host members' parts, which the fold's
//! step writes as ranges of its result (`exec/stream.rs`). The general path's bookkeeping costs a
//! few microseconds more than the step's own calls on these (`bench/gpu/24-mixed`): the
//! reduce_scatter of `cuda:0,cpu:0` at 4 KiB took 18.1–20.7 µs issued directly against
//! 20.1–25.0 through the schedule (an H100, `bench/gpu/40-ranged-parts`, runs b and c).

use std::sync::Arc;

use super::{is_kernel, read_by};
use crate::backend::{Buffer, Delivery};
use crate::device::DeviceKind;
use crate::error::{Error, Result};
use crate::exec::{Finish, schedule, step, stream};
use crate::graph::{Op, Tensor};

/// One kernel step that also writes its copies (and, in one pass, its parts) for its targets.
pub(super) struct Fanned {
    /// The kernel's node (a target itself or not).
    kernel: Tensor,
    /// The targets, in the caller's order.
    targets: Vec<Tensor>,
    /// What the step writes for each target.
    outs: Vec<Out>,
    /// What the kernel reads, one per input: on its device, or (streamed) on a host device.
    inputs: Vec<Arc<Buffer>>,
    /// The copies the step writes to host devices, as [`Out::Copy`] numbers them.
    to: Vec<Delivery>,
    /// A CUDA kernel streamed in the schedule's sense (`exec/stream.rs`).
    streamed: bool,
}

/// What a fanned step writes for one target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    /// The kernel's result.
    Result,
    /// A contiguous slice of it, on its device: a view of the result.
    Part,
    /// Copy `n` of the step's deliveries.
    Copy(usize),
}

/// `pending` as one kernel step that writes every target itself (the schedule's `fanout`), if it
/// is one: the targets are the kernel, copies of it to host devices and, where the kernel runs in
/// one pass on a CUDA device, contiguous slices of it on its device and copies of those to host
/// devices; every input of the kernel realized where the step reads it. That step is a host
/// kernel writing copies to other host devices (`schedule::fuse_host_fanout`), or a CUDA kernel
/// the stream pass streams ([`stream::streams`]), which also reads host inputs in place — each
/// one realized on a host device, or an unrealized copy of such a tensor to the kernel's device,
/// which only this kernel reads (the pass folds it).
pub(super) fn fanned_kernel(pending: &[Tensor]) -> Option<Fanned> {
    let kernel = kernel_of(pending.first()?)?;
    let device = kernel.device();
    let streamed = match device.kind() {
        DeviceKind::Cuda => stream::enabled() && stream::streams(&kernel, stream::Sizes::DEFAULT),
        _ => false,
    };
    // A host slice that runs as a view writes no copies (`schedule::fuse_host_fanout`).
    if !(streamed || (device.is_host() && !schedule::runs_as_view(&kernel))) {
        return None;
    }
    let parts = streamed && stream::Sizes::DEFAULT.in_one_pass(kernel.nbytes());
    let mut f = Fanned { kernel, targets: vec![], outs: vec![], inputs: vec![], to: vec![], streamed };
    for t in pending {
        let out = f.out_of(t, parts)?;
        f.targets.push(t.clone());
        f.outs.push(out);
    }
    f.inputs = f.kernel.inputs().iter().map(|i| read_by(i, device, streamed)).collect::<Option<_>>()?;
    let reads_host = f.inputs.iter().any(|b| b.device != device);
    (reads_host || f.outs.iter().any(|&o| o != Out::Result)).then_some(f)
}

/// The kernel node a target of a fanned step stems from: `t` itself, what `t` copies, or what
/// that slices, where it is an unrealized kernel.
fn kernel_of(t: &Tensor) -> Option<Tensor> {
    let of = match (t.op(), t.inputs()) {
        (Op::Copy { .. }, [of]) => of,
        _ => t,
    };
    let base = match (of.op(), of.inputs()) {
        (Op::Slice { .. }, [whole]) if is_kernel(whole) && !whole.is_realized() => whole,
        _ => of,
    };
    is_kernel(base).then(|| base.clone())
}

impl Fanned {
    /// What the step writes for target `t` (parts only where `parts`), noting a copy in `to`;
    /// `None` where `t` is none of them, or a copy the step already writes for another target.
    fn out_of(&mut self, t: &Tensor, parts: bool) -> Option<Out> {
        let k = &self.kernel;
        if t.same_node(k) {
            return Some(Out::Result);
        }
        let part = |x: &Tensor| parts && x.device() == k.device() && step::range_of(k, x).is_some();
        if part(t) {
            return Some(Out::Part);
        }
        let (Op::Copy { to }, [of]) = (t.op(), t.inputs()) else { return None };
        if !to.is_host() || *to == k.device() || !(of.same_node(k) || part(of)) {
            return None;
        }
        let d = Delivery { to: *to, range: step::range_of(k, of)? };
        if self.to.contains(&d) {
            return None;
        }
        self.to.push(d);
        Some(Out::Copy(self.to.len() - 1))
    }
}

/// Issues `f`'s kernel with its copies as the schedule's kernel step does, each part as the
/// schedule's slice step does (a view of the result), and caches every target.
pub(super) fn run_fanned(f: &Fanned, finish: Finish) -> Result<()> {
    let (out, copies) = step::kernel(&f.kernel, &f.inputs, &f.to, f.streamed)?;
    if copies.len() != f.to.len() {
        return Err(Error::internal(
            "direct kernel",
            format!("{} host copies written for {} asked", copies.len(), f.to.len()),
        ));
    }
    let value = |(t, o): (&Tensor, &Out)| match *o {
        Out::Result => Ok(out.clone()),
        Out::Part => Ok(step::kernel(t, std::slice::from_ref(&out), &[], false)?.0),
        Out::Copy(n) => Ok(copies[n].clone()),
    };
    let bufs = f.targets.iter().zip(&f.outs).map(value).collect::<Result<Vec<_>>>()?;
    crate::exec::cache(&f.targets, bufs, finish)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{DEVS, draw, f64s, inputs};
    use super::*;
    use crate::device::Device;
    use crate::dtype::DType;
    use crate::exec::direct::try_realize;
    use crate::graph::ReduceKind;

    /// A host kernel and its copies to other host devices, as targets in any order, are one
    /// direct step: each target on its device, every element against an f64 reference.
    #[test]
    fn a_host_kernel_and_its_host_copies_are_one_direct_step() {
        let (a, b) = (draw(37), draw(37));
        let ta = Tensor::from_vec(a.clone(), [37], DEVS[0]).unwrap();
        let tb = Tensor::from_vec(b.clone(), [37], DEVS[0]).unwrap();
        let want: Vec<f64> = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).collect();
        let k = ta.mul(&tb).unwrap();
        let (c1, c2) = (k.copy_to_device(DEVS[1]).unwrap(), k.copy_to_device(Device::Cpu(2)).unwrap());
        let f = fanned_kernel(&[c2.clone(), k.clone(), c1.clone()]).expect("one step");
        assert_eq!((f.to, f.streamed), (Delivery::wholes(&[Device::Cpu(2), DEVS[1]], 37), false));
        assert!(try_realize(&[c2.clone(), k.clone(), c1.clone()], Finish::Wait).expect("direct").is_ok());
        for (t, d) in [(&k, DEVS[0]), (&c1, DEVS[1]), (&c2, Device::Cpu(2))] {
            assert_eq!(t.value().expect("realized").device, d);
            assert_eq!(f64s(&t.to_vec::<f32>().unwrap()), want, "on {d}");
        }
        assert_eq!((ta.to_vec::<f32>().unwrap(), tb.to_vec::<f32>().unwrap()), (a, b), "inputs unchanged");
    }

    /// The graph of a small all_reduce of a CUDA device and a host device (the leader's fold of
    /// its shard and the host shard's hop, and the fold's copy back) is one streamed step reading
    /// the host shard in place; at a size the stream pass does not stream it is not. Matched
    /// only, so it runs without a GPU.
    #[test]
    fn a_small_cuda_fold_of_host_shards_is_one_streamed_step() {
        let cu = Device::Cuda(0);
        for (n, streams) in [(1024, true), (1 << 20, false)] {
            let (mine, host) = (realized(cu, n), realized(DEVS[0], n));
            let fold = Tensor::reduce_on(
                cu,
                &[mine.clone(), host.copy_to_device(cu).unwrap()],
                ReduceKind::Sum,
                None,
            )
            .unwrap();
            let back = fold.copy_to_device(DEVS[0]).unwrap();
            let f = fanned_kernel(&[fold.clone(), back.clone()]);
            assert_eq!(f.is_some(), streams && stream::enabled(), "{n} elements");
            let Some(f) = f else { continue };
            assert!(f.streamed && f.to == Delivery::wholes(&[DEVS[0]], n));
            assert!(Arc::ptr_eq(&f.inputs[0], &mine.value().unwrap()));
            assert!(Arc::ptr_eq(&f.inputs[1], &host.value().unwrap()), "the host shard, read in place");
            // The fold alone reads the host shard too; its copy to another CUDA device is no
            // fanout.
            assert!(fanned_kernel(std::slice::from_ref(&fold)).is_some());
            let peer = fold.copy_to_device(Device::Cuda(1)).unwrap();
            assert!(fanned_kernel(&[fold.clone(), peer]).is_none());
        }
    }

    /// `cuda:0` where it is present and the stream pass is on; else `None`, said (a panic instead
    /// under `REQUIRE_CUDA=1`).
    fn streaming_cuda() -> Option<Device> {
        let cu = Device::Cuda(0);
        if crate::available_devices().contains(&cu) && stream::enabled() {
            return Some(cu);
        }
        let required = std::env::var("REQUIRE_CUDA").is_ok_and(|v| v == "1");
        assert!(!required, "REQUIRE_CUDA=1 but cuda:0 is absent (or COLLECTIVES_STREAM=0)");
        println!("skipped: no CUDA device, or the stream pass is off");
        None
    }

    /// On a GPU: the fold of a CUDA shard and a host shard with its copies to two host devices,
    /// issued directly as one streamed step, for every reduce kind, f32 and i32, at 1, 7 and
    /// 65 537 elements; every output element against an f64 reference. (Skipped without a CUDA
    /// device, failing instead under `REQUIRE_CUDA=1`.)
    #[test]
    fn a_small_cuda_fold_of_host_shards_is_issued_directly() {
        use rand::Rng;
        let Some(cu) = streaming_cuda() else { return };
        let mut r = rand::rng();
        let kinds = [ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min];
        let fold64 = |k: ReduceKind, x: f64, y: f64| match k {
            ReduceKind::Sum => x + y,
            ReduceKind::Prod => x * y,
            ReduceKind::Max => x.max(y),
            ReduceKind::Min => x.min(y),
        };
        for n in [1usize, 7, 65_537] {
            for kind in kinds {
                let (x, y) = (draw(n), draw(n));
                let (xi, yi): (Vec<i32>, Vec<i32>) = (
                    (0..n).map(|_| r.random_range(-99..99)).collect(),
                    (0..n).map(|_| r.random_range(-99..99)).collect(),
                );
                let cases = [
                    (
                        Tensor::from_vec(x.clone(), [n], cu).unwrap(),
                        Tensor::from_vec(y.clone(), [n], DEVS[0]).unwrap(),
                        (0..n)
                            .map(|i| f64::from(fold64(kind, x[i].into(), y[i].into()) as f32))
                            .collect::<Vec<_>>(),
                    ),
                    (
                        Tensor::from_vec(xi.clone(), [n], cu).unwrap(),
                        Tensor::from_vec(yi.clone(), [n], DEVS[0]).unwrap(),
                        (0..n).map(|i| fold64(kind, xi[i].into(), yi[i].into())).collect(),
                    ),
                ];
                for (mine, host, want) in cases {
                    crate::realize(&[mine.clone(), host.clone()]).unwrap();
                    let fold =
                        Tensor::reduce_on(cu, &[mine, host.copy_to_device(cu).unwrap()], kind, None).unwrap();
                    let copies =
                        [fold.copy_to_device(DEVS[0]).unwrap(), fold.copy_to_device(DEVS[1]).unwrap()];
                    let targets = [copies[1].clone(), fold.clone(), copies[0].clone()];
                    assert!(try_realize(&targets, Finish::Wait).expect("direct").is_ok(), "{kind:?}, {n}");
                    for t in targets {
                        let got: Vec<f64> = match t.dtype() {
                            DType::I32 => t.to_vec::<i32>().unwrap().into_iter().map(f64::from).collect(),
                            _ => f64s(&t.to_vec::<f32>().unwrap()),
                        };
                        assert_eq!(got, want, "{kind:?} of {:?}, {n} elements, on {}", t.dtype(), t.device());
                    }
                }
            }
        }
    }

    /// On a GPU: the star all_gather of a CUDA shard and a host shard — their concat on CUDA
    /// and its copies to two host devices — issued directly as one streamed step, at 1, 7 and
    /// 65 537 elements a shard, either order of parts; every output element against the inputs.
    /// (Skipped without a CUDA device, failing instead under `REQUIRE_CUDA=1`.)
    #[test]
    fn a_small_cuda_concat_of_host_shards_is_issued_directly() {
        let Some(cu) = streaming_cuda() else { return };
        for n in [1usize, 7, 65_537] {
            let (x, y) = (draw(n), draw(n + 1));
            let mine = Tensor::from_vec(x.clone(), [n], cu).unwrap();
            let host = Tensor::from_vec(y.clone(), [n + 1], DEVS[0]).unwrap();
            crate::realize(&[mine.clone(), host.clone()]).unwrap();
            for host_first in [true, false] {
                let up = host.copy_to_device(cu).unwrap();
                let (parts, want) = match host_first {
                    true => ([up, mine.clone()], [y.clone(), x.clone()].concat()),
                    false => ([mine.clone(), up], [x.clone(), y.clone()].concat()),
                };
                let joined = Tensor::concat_on(cu, &parts, 0).unwrap();
                let copies =
                    [joined.copy_to_device(DEVS[0]).unwrap(), joined.copy_to_device(DEVS[1]).unwrap()];
                let targets = [joined.clone(), copies[0].clone(), copies[1].clone()];
                assert!(fanned_kernel(&targets).is_some_and(|f| f.streamed), "{n}: one streamed step");
                assert!(try_realize(&targets, Finish::Wait).expect("direct").is_ok(), "{n}");
                for t in targets {
                    assert_eq!(t.to_vec::<f32>().unwrap(), want, "{n} elements, on {}", t.device());
                }
            }
        }
    }

    /// Targets the schedule would not make one fanned-out kernel step of are left to it.
    #[test]
    fn what_is_not_one_fanned_step_is_left_to_the_general_path() {
        let ins = inputs(1.5, 2.5);
        let on0 = Tensor::from_vec(vec![0.5f32; 3], [3], DEVS[0]).unwrap();
        let k = ins[0].add(&on0).unwrap();
        let copy = k.copy_to_device(DEVS[1]).unwrap();
        let cases: Vec<(&str, Vec<Tensor>)> = vec![
            ("a kernel alone", vec![k.clone()]),
            ("a move, not a copy", vec![k.clone(), k.clone().move_to_device(DEVS[1]).unwrap()]),
            ("a copy to the kernel's device", vec![k.clone(), k.copy_to_device(DEVS[0]).unwrap()]),
            ("two copies to one device", vec![k.clone(), copy.clone(), k.copy_to_device(DEVS[1]).unwrap()]),
            ("a copy of something else", vec![k.clone(), on0.copy_to_device(DEVS[1]).unwrap()]),
            ("a copy to a GPU", vec![k.clone(), k.copy_to_device(Device::Vulkan(0)).unwrap()]),
            ("an input still to compute", {
                let later = k.add(&k).unwrap();
                vec![later.clone(), later.copy_to_device(DEVS[1]).unwrap()]
            }),
            ("no kernel", vec![ins[0].copy_to_device(DEVS[1]).unwrap()]),
            ("a part of a host kernel", vec![k.clone(), k.narrow(0, 1, 2).unwrap()]),
            (
                "a part's copy from a host kernel",
                vec![k.narrow(0, 1, 2).unwrap().copy_to_device(DEVS[1]).unwrap()],
            ),
            ("a host view's copy", vec![ins[0].narrow(0, 1, 2).unwrap().copy_to_device(DEVS[1]).unwrap()]),
        ];
        for (what, targets) in cases {
            assert!(fanned_kernel(&targets).is_none(), "{what}");
        }
        // The matched shape for contrast, the copy alone too (the kernel not a target), also over
        // an input on another host device (read in place), and the result of a case left to the
        // general path is the same.
        assert!(fanned_kernel(&[k.clone(), copy.clone()]).is_some());
        assert!(fanned_kernel(std::slice::from_ref(&copy)).is_some_and(|f| f.outs == [Out::Copy(0)]));
        let across = ins[0].add(&ins[1]).unwrap();
        let elsewhere = across.copy_to_device(Device::Cpu(2)).unwrap();
        assert!(fanned_kernel(&[across.clone(), elsewhere.clone()]).is_some(), "an input on cpu:1");
        crate::realize(&[across.clone(), elsewhere.clone()]).unwrap();
        assert_eq!(elsewhere.to_vec::<f32>().unwrap(), vec![4.0; 3]);
        let later = k.add(&k).unwrap();
        let later_copy = later.copy_to_device(DEVS[1]).unwrap();
        crate::realize(&[later.clone(), later_copy.clone()]).unwrap();
        assert_eq!(later_copy.to_vec::<f32>().unwrap(), vec![4.0; 3]);
    }

    /// The star reduce_scatter of a CUDA shard and a host shard: the fold on CUDA, its first
    /// half kept there, its second half copied to a host device, the first also copied to
    /// another. Below the one-pass bound that is one streamed step writing two ranges; from it
    /// on, or cut along an inner dim (two ranges a row), it is left to the general path. Matched
    /// only, so it runs without a GPU.
    #[test]
    fn a_small_cuda_folds_parts_and_their_copies_are_one_streamed_step() {
        let cu = Device::Cuda(0);
        for (n, streams) in [(1024, true), (stream::Sizes::DEFAULT.small / 4, false)] {
            let (mine, host) = (realized(cu, n), realized(DEVS[0], n));
            let fold =
                Tensor::reduce_on(cu, &[mine, host.copy_to_device(cu).unwrap()], ReduceKind::Sum, None)
                    .unwrap();
            let (first, second) = (fold.narrow(0, 0, n / 2).unwrap(), fold.narrow(0, n / 2, n / 2).unwrap());
            let targets = [
                first.clone(),
                second.copy_to_device(DEVS[0]).unwrap(),
                first.copy_to_device(DEVS[1]).unwrap(),
            ];
            let f = fanned_kernel(&targets);
            assert_eq!(f.is_some(), streams && stream::enabled(), "{n} elements");
            let Some(f) = f else { continue };
            assert!(f.streamed && f.kernel.same_node(&fold));
            assert_eq!(f.outs, [Out::Part, Out::Copy(0), Out::Copy(1)]);
            let want = [Delivery { to: DEVS[0], range: n / 2..n }, Delivery { to: DEVS[1], range: 0..n / 2 }];
            assert_eq!(f.to, want);
            let rows = fold.reshape([32, n / 32]).unwrap().narrow(1, 0, 4).unwrap();
            assert!(fanned_kernel(&[first.clone(), rows.copy_to_device(DEVS[0]).unwrap()]).is_none(), "{n}");
        }
    }

    /// A tensor of `n` random f32s on `d`, realized there as a device's shard would be (matched
    /// only: nothing reads it).
    fn realized(d: Device, n: usize) -> Tensor {
        let t = Tensor::from_vec(draw(n), [n], d).unwrap();
        *t.0.value.lock() = Some(Arc::new(Buffer::from_vec(d, draw(n))));
        t
    }

    /// On a GPU: the star reduce_scatter of a CUDA shard and a host shard issued directly as one
    /// streamed step — the fold, the CUDA member's part a view of it, the host members' parts
    /// written as ranges — for sum and max at 2, 7 and 65 537 elements; every output element
    /// against an f64 reference. (Skipped without a CUDA device, failing instead under
    /// `REQUIRE_CUDA=1`.)
    #[test]
    fn a_small_cuda_folds_parts_are_issued_directly() {
        let Some(cu) = streaming_cuda() else { return };
        for n in [2usize, 7, 65_537] {
            for kind in [ReduceKind::Sum, ReduceKind::Max] {
                let (x, y) = (draw(n), draw(n));
                let mine = Tensor::from_vec(x.clone(), [n], cu).unwrap();
                let host = Tensor::from_vec(y.clone(), [n], DEVS[0]).unwrap();
                crate::realize(&[mine.clone(), host.clone()]).unwrap();
                let fold =
                    Tensor::reduce_on(cu, &[mine, host.copy_to_device(cu).unwrap()], kind, None).unwrap();
                let want: Vec<f64> = (0..n)
                    .map(|i| match kind {
                        ReduceKind::Sum => f64::from(x[i] + y[i]),
                        _ => f64::from(x[i].max(y[i])),
                    })
                    .collect();
                let cut = n / 3;
                let (first, rest) = (fold.narrow(0, 0, cut).unwrap(), fold.narrow(0, cut, n - cut).unwrap());
                let targets = [
                    first.clone(),
                    rest.copy_to_device(DEVS[0]).unwrap(),
                    first.copy_to_device(DEVS[1]).unwrap(),
                    fold.copy_to_device(Device::Cpu(2)).unwrap(),
                ];
                assert!(fanned_kernel(&targets).is_some_and(|f| f.streamed), "{n}: one streamed step");
                assert!(try_realize(&targets, Finish::Wait).expect("direct").is_ok(), "{kind:?}, {n}");
                let ranges = [0..cut, cut..n, 0..cut, 0..n];
                for (t, r) in targets.iter().zip(ranges) {
                    let got = f64s(&t.to_vec::<f32>().unwrap());
                    assert_eq!(got, want[r.clone()], "{kind:?}, {n} elements, {r:?} on {}", t.device());
                }
            }
        }
    }
}
