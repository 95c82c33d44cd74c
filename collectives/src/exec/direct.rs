//! The direct path of [`super::realize`]: when every target is a part of one multi-device call
//! (`Op::Collective`, an NCCL group call) and the call's inputs are already on their devices,
//! the call is issued at once, without the graph pass, the schedule and the queues; likewise one
//! target that is one kernel (an elementwise op, a slice or a concat) over inputs already where
//! its device reads them in place (its own; a host device's from a host device; a CUDA device's
//! from a CUDA device), and a kernel whose other targets are its copies to host devices, which
//! its one step writes itself (a host kernel's, or a CUDA kernel's that the stream pass streams,
//! which also reads host inputs: [`super::stream`]).
//!
//! That is the graph of every collective on an all-CUDA group, realized as soon as it is built
//! (a call, or for a gather or reduce the leader's one kernel), of a host group's gather and
//! reduce, of a local reduce, and of a small all_reduce of one CUDA device and host devices. Its
//! call is short (about 110 µs for 16 MiB per GPU on two H200s; a 4 KiB kernel and its wait
//! about 10 µs), and the general path's bookkeeping before issuing it — a few microseconds —
//! showed in the measured bandwidth (`bench/gpu/5-overhead`) and in a small kernel's time
//! (`bench/gpu/23-star`, `bench/gpu/24-mixed`; a host group's 4 KiB gather 2.8–2.9 µs through
//! it, 1.0 direct, `bench/cpu-host-calls`). The outcome is the general path's: the same buffers
//! cached in the same nodes, the same errors, nothing cached when the call fails.

use std::sync::Arc;

use super::schedule::Action;
use crate::backend::{Buffer, Delivery};
use crate::device::{Device, DeviceKind};
use crate::error::{Error, Result};
use crate::graph::{Op, Tensor};
use crate::route::readable;
use crate::sized::try_vec;

/// Realizes `pending` (none realized yet) directly if it has that shape; `None` when it does not,
/// having done nothing.
pub(super) fn try_realize(pending: &[Tensor]) -> Option<Result<()>> {
    if let [one] = pending
        && let Some(inputs) = lone_kernel(one)
    {
        return Some(run_kernel(one, &inputs));
    }
    if let Some(f) = fanned_kernel(pending) {
        return Some(run_fanned(&f));
    }
    let call = shared_call(pending)?;
    let inputs = ready_inputs(&call)?;
    Some(run(&call, &inputs, pending))
}

/// The buffers of `t`'s inputs, if the schedule would run `t` as a kernel step and every input is
/// realized where `t`'s device reads it in place (so the graph pass would add no copy, and the
/// schedule would be this one step): a local reduce, and the gather or reduce of a group of host
/// devices or of CUDA devices, the leader's one kernel over every shard.
fn lone_kernel(t: &Tensor) -> Option<Vec<Arc<Buffer>>> {
    if !is_kernel(t) {
        return None;
    }
    t.inputs().iter().map(|i| read_by(i, t.device(), false)).collect()
}

/// Whether the schedule would run node `t` as a kernel step.
fn is_kernel(t: &Tensor) -> bool {
    matches!(super::schedule::action_of(t, false), Action::Kernel { .. })
}

/// Issues kernel node `t` over `inputs` as the schedule's kernel step does, waits and caches it.
fn run_kernel(t: &Tensor, inputs: &[Arc<Buffer>]) -> Result<()> {
    let (out, _) = super::step::kernel(t, inputs, &[], false)?;
    super::cache_when_done(std::slice::from_ref(t), vec![out])
}

/// One kernel step that also writes its copies to host devices, with what it reads.
struct Fanned {
    /// The kernel's node, then its copies' nodes in the order of `to`.
    targets: Vec<Tensor>,
    /// What the kernel reads, one per input: on its device, or (streamed) on a host device.
    inputs: Vec<Arc<Buffer>>,
    /// The host devices of the copies.
    to: Vec<Device>,
    /// A CUDA kernel streamed in the schedule's sense (`exec/stream.rs`).
    streamed: bool,
}

/// `pending` as one kernel step that writes its copies itself (the schedule's `fanout`), if it
/// is one: a kernel target, the other targets copies of it to host devices, every input
/// realized where the step reads it. That step is a host kernel writing copies to other host
/// devices (`schedule::fuse_host_fanout`), or a CUDA kernel the stream pass streams
/// ([`super::stream::streams`]), which also reads host inputs in place — each one realized on a
/// host device, or an unrealized copy of such a tensor to the kernel's device, which only this
/// kernel reads (the pass folds it). The graph of a small all_reduce of one CUDA device and host
/// devices: the leader's fold, its copies to the host members; of their small all_gather: the
/// leader's concat, its copies.
fn fanned_kernel(pending: &[Tensor]) -> Option<Fanned> {
    let k = pending.iter().find(|t| is_kernel(t))?;
    let device = k.device();
    let streamed = match device.kind() {
        DeviceKind::Cuda => {
            super::stream::enabled() && super::stream::streams(k, super::stream::Sizes::DEFAULT)
        }
        _ => false,
    };
    if !(streamed || device.is_host()) {
        return None;
    }
    let mut targets = vec![k.clone()];
    let mut to = Vec::new();
    for t in pending.iter().filter(|t| !t.same_node(k)) {
        let d = host_copy_of(t, k).filter(|d| !to.contains(d))?;
        to.push(d);
        targets.push(t.clone());
    }
    let inputs: Vec<Arc<Buffer>> =
        k.inputs().iter().map(|i| read_by(i, device, streamed)).collect::<Option<_>>()?;
    let reads_host = inputs.iter().any(|b| b.device != device);
    (reads_host || !to.is_empty()).then_some(Fanned { targets, inputs, to, streamed })
}

/// The host device `t` copies kernel `k`'s result to, if `t` is such a copy (not a move) to a
/// host device other than `k`'s.
fn host_copy_of(t: &Tensor, k: &Tensor) -> Option<Device> {
    let Op::Copy { to } = *t.op() else { return None };
    let of_k = matches!(t.inputs(), [i] if i.same_node(k));
    (of_k && to.is_host() && to != k.device()).then_some(to)
}

/// The buffer a kernel on `device` reads for input `i`: `i`'s own, realized on a device whose
/// buffers `device` reads in place ([`readable`]: its own, another host device's for a host
/// kernel, another CUDA device's for a CUDA kernel — where the graph pass adds no copy either) or,
/// for a `streamed` kernel, on a host device; or, for a streamed kernel, the source of `i` when
/// `i` is an unrealized copy to `device` of a tensor realized on a host device.
fn read_by(i: &Tensor, device: Device, streamed: bool) -> Option<Arc<Buffer>> {
    let ready = |t: &Tensor, ok: &dyn Fn(Device) -> bool| {
        t.value().filter(|b| b.device == t.device() && ok(b.device))
    };
    if let Some(b) = ready(i, &|d| readable(device, d) || (streamed && d.is_host())) {
        return Some(b);
    }
    match (i.op(), i.inputs()) {
        (Op::Copy { to }, [src]) if streamed && *to == device => ready(src, &|d| d.is_host()),
        _ => None,
    }
}

/// Issues `f`'s kernel and its copies as the schedule's kernel step does, waits and caches them.
fn run_fanned(f: &Fanned) -> Result<()> {
    let to = Delivery::wholes(&f.to, f.targets[0].numel());
    let (out, copies) = super::step::kernel(&f.targets[0], &f.inputs, &to, f.streamed)?;
    if copies.len() != f.to.len() {
        return Err(Error::internal(
            "direct kernel",
            format!("{} host copies written for {} asked", copies.len(), f.to.len()),
        ));
    }
    super::cache_when_done(&f.targets, std::iter::once(out).chain(copies).collect())
}

/// The one `Op::Collective` node every target is a part of.
fn shared_call(pending: &[Tensor]) -> Option<Tensor> {
    let call = pending.first()?.inputs().first()?.clone();
    let part_of_call = |t: &Tensor| {
        matches!(t.op(), Op::Part { .. }) && t.inputs().first().is_some_and(|c| c.same_node(&call))
    };
    (matches!(call.op(), Op::Collective(_)) && pending.iter().all(part_of_call)).then_some(call)
}

/// The buffers of `call`'s inputs, if every one is already on its device.
fn ready_inputs(call: &Tensor) -> Option<Vec<Arc<Buffer>>> {
    try_vec(call.inputs().iter().map(|i| i.value().filter(|b| b.device == i.device()).ok_or(()))).ok()
}

/// Issues `call`, waits for the targets' parts and caches them.
fn run(call: &Tensor, inputs: &[Arc<Buffer>], targets: &[Tensor]) -> Result<()> {
    let Op::Collective(c) = call.op() else { unreachable!("shared_call checked the op") };
    let parts = c.0.run(inputs)?;
    let bufs = try_vec(targets.iter().map(|t| match t.op() {
        Op::Part { index } => super::step::pick(&parts, *index, t),
        _ => unreachable!("shared_call checked the ops"),
    }))?;
    drop(parts);
    super::cache_when_done(targets, bufs)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use smallvec::smallvec;

    use super::*;
    use crate::device::Device;
    use crate::dtype::DType;
    use crate::error::Error;
    use crate::graph::{CollectiveCall, MultiKernel, ReduceKind, Shape};

    const DEVS: [Device; 2] = [Device::Cpu(0), Device::Cpu(1)];

    /// A call that sums its inputs' first elements into one output per device, or fails.
    struct Sum {
        runs: AtomicUsize,
        fail: bool,
    }

    impl MultiKernel for Sum {
        fn name(&self) -> String {
            "sum".into()
        }

        fn run(&self, inputs: &[Arc<Buffer>]) -> Result<Vec<Arc<Buffer>>> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            if self.fail {
                return Err(Error::driver(DEVS[0], "sum", "failed on purpose"));
            }
            let first = |b: &Buffer| bytemuck::cast_slice::<u8, f32>(b.host_bytes("sum").unwrap())[0];
            let s: f32 = inputs.iter().map(|b| first(b)).sum();
            Ok(DEVS.iter().map(|&d| Arc::new(Buffer::from_vec(d, vec![s; 3]))).collect())
        }
    }

    fn call(kernel: &Arc<Sum>, inputs: Vec<Tensor>) -> Vec<Tensor> {
        let mk: Arc<dyn MultiKernel> = kernel.clone();
        let node = Tensor::new_node(
            Op::Collective(CollectiveCall(mk)),
            inputs.into(),
            DEVS[0],
            DType::F32,
            Shape::new(vec![0]),
            None,
        );
        (0..2)
            .map(|index| {
                Tensor::new_node(
                    Op::Part { index },
                    smallvec![node.clone()],
                    DEVS[index],
                    DType::F32,
                    Shape::new(vec![3]),
                    None,
                )
            })
            .collect()
    }

    fn sum(fail: bool) -> Arc<Sum> {
        Arc::new(Sum { runs: AtomicUsize::new(0), fail })
    }

    fn inputs(a: f32, b: f32) -> Vec<Tensor> {
        vec![
            Tensor::from_vec(vec![a; 3], [3], DEVS[0]).unwrap(),
            Tensor::from_vec(vec![b; 3], [3], DEVS[1]).unwrap(),
        ]
    }

    #[test]
    fn the_parts_of_a_ready_call_are_realized_by_one_call() {
        let (a, b) = (rand::random::<f32>(), rand::random::<f32>());
        let k = sum(false);
        let parts = call(&k, inputs(a, b));
        assert!(try_realize(&parts).expect("direct").is_ok());
        assert_eq!(k.runs.load(Ordering::SeqCst), 1);
        for (p, d) in parts.iter().zip(DEVS) {
            assert!(p.is_realized());
            assert_eq!(p.value().unwrap().device, d);
            assert_eq!(p.to_vec::<f32>().unwrap(), vec![a + b; 3]);
        }
        // One part alone also goes directly.
        let one = &call(&k, inputs(a, b))[1..];
        assert!(try_realize(one).expect("direct").is_ok());
        assert_eq!(one[0].to_vec::<f32>().unwrap(), vec![a + b; 3]);
    }

    #[test]
    fn a_failed_call_is_its_error_and_caches_nothing() {
        let parts = call(&sum(true), inputs(1.0, 2.0));
        let err = try_realize(&parts).expect("direct").unwrap_err();
        assert!(err.to_string().contains("failed on purpose"), "{err}");
        assert!(parts.iter().all(|p| !p.is_realized()));
    }

    /// One kernel over inputs realized on its device is issued directly, with the values the
    /// general path gives: a reduce, a binary op, a slice (a view), a concat, a cast; fresh random
    /// data, every element against an f64 reference.
    #[test]
    fn a_lone_kernel_over_ready_inputs_is_issued_directly() {
        use rand::Rng;
        let mut r = rand::rng();
        let mut draw = || (0..37).map(|_| r.random_range(-100.0f32..100.0)).collect::<Vec<f32>>();
        let (a, b) = (draw(), draw());
        let ta = Tensor::from_vec(a.clone(), [37], DEVS[0]).unwrap();
        let tb = Tensor::from_vec(b.clone(), [37], DEVS[0]).unwrap();
        let f = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
        let (fa, fb) = (f(&a), f(&b));
        let sum: Vec<f64> = fa.iter().zip(&fb).map(|(x, y)| f64::from((x + y) as f32)).collect();
        let prod: Vec<f64> = fa.iter().zip(&fb).map(|(x, y)| f64::from((x * y) as f32)).collect();
        let cases = [
            (Tensor::reduce(&[ta.clone(), tb.clone()], crate::graph::ReduceKind::Sum, None).unwrap(), sum),
            (ta.mul(&tb).unwrap(), prod),
            (ta.narrow(0, 3, 20).unwrap(), fa[3..23].to_vec()),
            (Tensor::concat(&[ta.clone(), tb.clone()], 0).unwrap(), [fa.clone(), fb.clone()].concat()),
            (ta.cast(DType::F64).unwrap(), fa.clone()),
        ];
        for (t, want) in cases {
            assert!(try_realize(std::slice::from_ref(&t)).expect("direct").is_ok(), "{}", t.op());
            assert!(t.is_realized());
            let got: Vec<f64> = match t.dtype() {
                DType::F64 => t.to_vec::<f64>().unwrap(),
                _ => f(&t.to_vec::<f32>().unwrap()),
            };
            assert_eq!(got, want, "{}", t.op());
        }
    }

    /// A kernel with an input still to compute, and a target that is no kernel, take the general
    /// path, which gives the same values.
    #[test]
    fn a_kernel_needing_other_steps_takes_the_general_path() {
        let ins = inputs(1.5, 2.5);
        let after = ins[0].add(&ins[0]).unwrap().add(&ins[0]).unwrap();
        let copy = ins[0].copy_to_device(DEVS[1]).unwrap();
        for t in [&after, &copy] {
            assert!(try_realize(std::slice::from_ref(t)).is_none(), "{}", t.op());
        }
        crate::realize(&[after.clone(), copy.clone()]).unwrap();
        assert_eq!(after.to_vec::<f32>().unwrap(), vec![4.5; 3]);
        assert_eq!(copy.to_vec::<f32>().unwrap(), vec![1.5; 3]);
    }

    /// A host kernel over shards realized on other host devices (read in place: the graph pass
    /// adds no copy) is issued directly — a group's gather and reduce — with the general path's
    /// values: fresh random data, every element against an f64 reference, the shards unchanged.
    #[test]
    fn a_host_kernel_over_other_host_devices_is_issued_directly() {
        let devs: Vec<Device> = (0..5).map(Device::Cpu).collect();
        let data: Vec<Vec<f32>> = devs.iter().map(|_| draw(41)).collect();
        let shards: Vec<Tensor> =
            devs.iter().zip(&data).map(|(&d, v)| Tensor::from_vec(v.clone(), [41], d).unwrap()).collect();
        let mut sum = vec![0f32; 41];
        for v in &data {
            sum.iter_mut().zip(v).for_each(|(s, x)| *s += x);
        }
        let g = crate::DeviceGroup::new(devs.clone()).unwrap();
        let cases = [
            (g.reduce(&shards, crate::ReduceOp::Sum).unwrap(), f64s(&sum)),
            (g.gather(&shards, 0).unwrap(), f64s(&data.concat())),
            (
                shards[1].mul(&shards[3]).unwrap(),
                data[1].iter().zip(&data[3]).map(|(a, b)| f64::from(a * b)).collect(),
            ),
        ];
        for (t, want) in cases {
            assert!(lone_kernel(&t).is_some(), "{}: one kernel over ready inputs", t.op());
            assert!(try_realize(std::slice::from_ref(&t)).expect("direct").is_ok(), "{}", t.op());
            assert_eq!(t.value().expect("realized").device, t.device());
            assert_eq!(f64s(&t.to_vec::<f32>().unwrap()), want, "{}", t.op());
        }
        for (s, v) in shards.iter().zip(&data) {
            assert_eq!(&s.to_vec::<f32>().unwrap(), v, "shards unchanged");
        }
    }

    /// Which inputs a lone kernel reads where they lie, by the devices of the kernel and of its
    /// input (realized there by hand, matched only, so it runs without a GPU): a CUDA kernel reads
    /// another CUDA device's shard, neither a host nor a Vulkan one; a host kernel reads no GPU's;
    /// a Vulkan kernel reads only its own device's.
    #[test]
    fn a_lone_kernel_reads_in_place_only_what_its_device_reads_in_place() {
        let (cu0, cu1, vk0, vk1) = (Device::Cuda(0), Device::Cuda(1), Device::Vulkan(0), Device::Vulkan(1));
        let cases = [
            (cu0, cu1, true),
            (cu0, DEVS[0], false),
            (cu0, vk0, false),
            (DEVS[0], DEVS[1], true),
            (DEVS[0], cu0, false),
            (DEVS[0], vk0, false),
            (vk0, vk0, true),
            (vk0, vk1, false),
            (vk0, DEVS[0], false),
        ];
        for (on, from, direct) in cases {
            let shard = |d: Device| {
                let t = Tensor::from_vec(draw(5), [5], d).unwrap();
                *t.0.value.lock() = Some(Arc::new(Buffer::from_vec(d, draw(5))));
                t
            };
            let (mine, theirs) = (shard(on), shard(from));
            let k = Tensor::reduce_on(on, &[mine, theirs], ReduceKind::Sum, None).unwrap();
            assert_eq!(lone_kernel(&k).is_some(), direct, "a kernel on {on} reading {from}");
        }
    }

    fn draw(n: usize) -> Vec<f32> {
        use rand::Rng;
        let mut r = rand::rng();
        (0..n).map(|_| r.random_range(-100.0f32..100.0)).collect()
    }

    fn f64s(v: &[f32]) -> Vec<f64> {
        v.iter().map(|&x| f64::from(x)).collect()
    }

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
        assert_eq!((f.to.as_slice(), f.streamed), ([Device::Cpu(2), DEVS[1]].as_slice(), false));
        assert!(try_realize(&[c2.clone(), k.clone(), c1.clone()]).expect("direct").is_ok());
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
        let shard = |d: Device, n: usize| {
            let t = Tensor::from_vec(draw(n), [n], d).unwrap();
            let buf = Arc::new(Buffer::from_vec(d, draw(n)));
            *t.0.value.lock() = Some(buf); // realized on `d`, as a device's shard would be
            t
        };
        for (n, streams) in [(1024, true), (1 << 20, false)] {
            let (mine, host) = (shard(cu, n), shard(DEVS[0], n));
            let fold = Tensor::reduce_on(
                cu,
                &[mine.clone(), host.copy_to_device(cu).unwrap()],
                ReduceKind::Sum,
                None,
            )
            .unwrap();
            let back = fold.copy_to_device(DEVS[0]).unwrap();
            let f = fanned_kernel(&[fold.clone(), back.clone()]);
            assert_eq!(f.is_some(), streams && super::super::stream::enabled(), "{n} elements");
            let Some(f) = f else { continue };
            assert!(f.streamed && f.to == [DEVS[0]]);
            assert!(Arc::ptr_eq(&f.inputs[0], &mine.value().unwrap()));
            assert!(Arc::ptr_eq(&f.inputs[1], &host.value().unwrap()), "the host shard, read in place");
            // The fold alone reads the host shard too; its copy to another CUDA device is no fanout.
            assert!(fanned_kernel(std::slice::from_ref(&fold)).is_some());
            let peer = fold.copy_to_device(Device::Cuda(1)).unwrap();
            assert!(fanned_kernel(&[fold.clone(), peer]).is_none());
        }
    }

    /// `cuda:0` where it is present and the stream pass is on; else `None`, said (a panic instead
    /// under `REQUIRE_CUDA=1`).
    fn streaming_cuda() -> Option<Device> {
        let cu = Device::Cuda(0);
        if crate::available_devices().contains(&cu) && super::super::stream::enabled() {
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
                    assert!(try_realize(&targets).expect("direct").is_ok(), "{kind:?}, {n}");
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
                assert!(try_realize(&targets).expect("direct").is_ok(), "{n}");
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
            ("no kernel", vec![copy.clone()]),
        ];
        for (what, targets) in cases {
            assert!(fanned_kernel(&targets).is_none(), "{what}");
        }
        // The matched shape for contrast, also over an input on another host device (read in
        // place), and the result of a case left to the general path is the same.
        assert!(fanned_kernel(&[k.clone(), copy.clone()]).is_some());
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

    #[test]
    fn other_shapes_take_the_general_path() {
        let k = sum(false);
        // An input still to compute.
        let ins = inputs(1.0, 2.0);
        let doubled = ins[0].add(&ins[0]).unwrap();
        let parts = call(&k, vec![doubled, ins[1].clone()]);
        assert!(try_realize(&parts).is_none());
        // Targets that are not all parts of one call.
        let other = call(&k, inputs(3.0, 4.0));
        assert!(try_realize(&[parts[0].clone(), other[1].clone()]).is_none());
        assert!(try_realize(&[other[0].clone(), ins[0].clone()]).is_none());
        assert_eq!(k.runs.load(Ordering::SeqCst), 0, "nothing ran");
        // realize takes the general path for them, with the same result.
        crate::realize(&parts).unwrap();
        assert_eq!(k.runs.load(Ordering::SeqCst), 1);
        assert_eq!(parts[1].to_vec::<f32>().unwrap(), vec![4.0; 3]);
    }
}
