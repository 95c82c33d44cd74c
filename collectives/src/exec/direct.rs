//! The direct path of [`super::realize`]: when every target is a part of one multi-device call
//! (`Op::Collective`, an NCCL group call) and the call's inputs are already on their devices,
//! the call is issued at once, without the graph pass, the schedule and the queues; likewise one
//! target that is one kernel (an elementwise op, a slice or a concat) over inputs already where
//! its device reads them in place (its own; a host device's from a host device; a CUDA device's
//! from a CUDA device), and targets that one kernel step writes itself: the kernel, its copies
//! to host devices (a host kernel's, or a CUDA kernel's that the stream pass streams, which also
//! reads host inputs: [`super::stream`]) and a small CUDA kernel's parts and their copies
//! (`fanned`); and one target that is a copy of a tensor realized on its device.
//!
//! That is the graph of every collective on an all-CUDA group, realized as soon as it is built
//! (a call, or for a gather or reduce the leader's one kernel), of a host group's gather and
//! reduce, of a local reduce, of a lone copy, and of a small all_reduce, all_gather and
//! reduce_scatter of one CUDA device and host devices. Its call is short (about 110 µs for 16 MiB
//! per GPU on two H200s; a 4 KiB kernel and its wait about 10 µs), and the general path's
//! bookkeeping before issuing it — a few microseconds — showed in the measured bandwidth
//! (`bench/gpu/5-overhead`) and in a small kernel's time (`bench/gpu/23-star`,
//! `bench/gpu/24-mixed`; a host group's 4 KiB gather 2.8–2.9 µs through it, 1.0 direct,
//! `bench/cpu-host-calls`; a 4 KiB host copy 1.36–1.39 µs through it, 0.36–0.37 direct,
//! `bench/cpu-lone-copy`). The outcome is the general path's: the same buffers
//! cached in the same nodes, the same errors, nothing cached when the call fails.

use std::sync::Arc;

use smallvec::SmallVec;

use super::Finish;
use super::schedule::Action;
use crate::backend::Buffer;
use crate::device::Device;
use crate::error::Result;
use crate::graph::{Op, Tensor};
use crate::route::readable;
use crate::sized::try_vec;

mod fanned;

/// Realizes `pending` (none realized yet) directly if it has that shape, caching as `finish`
/// says; `None` when it does not, having done nothing.
pub(super) fn try_realize(pending: &[Tensor], finish: Finish) -> Option<Result<()>> {
    if let [one] = pending
        && let Some(inputs) = lone_kernel(one)
    {
        return Some(run_kernel(one, &inputs, finish));
    }
    if let [one] = pending
        && let Some(src) = lone_copy(one)
    {
        return Some(run_copy(one, &src, finish));
    }
    if let Some(f) = fanned::fanned_kernel(pending) {
        return Some(fanned::run_fanned(&f, finish));
    }
    let call = shared_call(pending)?;
    let inputs = ready_inputs(&call)?;
    Some(run(&call, &inputs, pending, finish))
}

/// The buffers of `t`'s inputs, if the schedule would run `t` as a kernel step and every input is
/// realized where `t`'s device reads it in place (so the graph pass would add no copy, and the
/// schedule would be this one step): a local reduce, and the gather or reduce of a group of host
/// devices or of CUDA devices, the leader's one kernel over every shard.
fn lone_kernel(t: &Tensor) -> Option<SmallVec<[Arc<Buffer>; 4]>> {
    if !is_kernel(t) {
        return None;
    }
    t.inputs().iter().map(|i| read_by(i, t.device(), false)).collect()
}

/// The buffer of `t`'s source, if `t` is a copy (not a move) of a tensor realized on its device:
/// the schedule would be this one copy step.
fn lone_copy(t: &Tensor) -> Option<Arc<Buffer>> {
    let (Op::Copy { .. }, [src]) = (t.op(), t.inputs()) else { return None };
    src.value_here()
}

/// Copies `src` to `t`'s device as the schedule's copy step does and caches it in `t`.
fn run_copy(t: &Tensor, src: &Buffer, finish: Finish) -> Result<()> {
    let out = Arc::new(crate::backend::copy(src, t.device())?);
    super::cache(std::slice::from_ref(t), [out], finish)
}

/// Whether the schedule would run node `t` as a kernel step.
fn is_kernel(t: &Tensor) -> bool {
    matches!(super::schedule::action_of(t, false), Action::Kernel { .. })
}

/// Issues kernel node `t` over `inputs` as the schedule's kernel step does and caches it.
fn run_kernel(t: &Tensor, inputs: &[Arc<Buffer>], finish: Finish) -> Result<()> {
    let (out, _) = super::step::kernel(t, inputs, &[], false)?;
    super::cache(std::slice::from_ref(t), [out], finish)
}

/// The buffer a kernel on `device` reads for input `i`: `i`'s own, realized on a device whose
/// buffers `device` reads in place ([`readable`]: its own, another host device's for a host
/// kernel, another CUDA device's for a CUDA kernel — where the graph pass adds no copy either) or,
/// for a `streamed` kernel, on a host device; or, for a streamed kernel, the source of `i` when
/// `i` is an unrealized copy to `device` of a tensor realized on a host device.
fn read_by(i: &Tensor, device: Device, streamed: bool) -> Option<Arc<Buffer>> {
    let ready = |t: &Tensor, ok: &dyn Fn(Device) -> bool| t.value_here().filter(|b| ok(b.device));
    if let Some(b) = ready(i, &|d| readable(device, d) || (streamed && d.is_host())) {
        return Some(b);
    }
    match (i.op(), i.inputs()) {
        (Op::Copy { to }, [src]) if streamed && *to == device => ready(src, &|d| d.is_host()),
        _ => None,
    }
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
    try_vec(call.inputs().iter().map(|i| i.value_here().ok_or(()))).ok()
}

/// Issues `call` and caches the targets' parts.
fn run(call: &Tensor, inputs: &[Arc<Buffer>], targets: &[Tensor], finish: Finish) -> Result<()> {
    let Op::Collective(c) = call.op() else { unreachable!("shared_call checked the op") };
    let parts = c.0.run(inputs)?;
    let bufs = try_vec(targets.iter().map(|t| match t.op() {
        Op::Part { index } => super::step::pick(&parts, *index, t),
        _ => unreachable!("shared_call checked the ops"),
    }))?;
    drop(parts);
    super::cache(targets, bufs, finish)
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

    pub(super) const DEVS: [Device; 2] = [Device::Cpu(0), Device::Cpu(1)];

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

    pub(super) fn inputs(a: f32, b: f32) -> Vec<Tensor> {
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
        assert!(try_realize(&parts, Finish::Wait).expect("direct").is_ok());
        assert_eq!(k.runs.load(Ordering::SeqCst), 1);
        for (p, d) in parts.iter().zip(DEVS) {
            assert!(p.is_realized());
            assert_eq!(p.value().unwrap().device, d);
            assert_eq!(p.to_vec::<f32>().unwrap(), vec![a + b; 3]);
        }
        // One part alone also goes directly.
        let one = &call(&k, inputs(a, b))[1..];
        assert!(try_realize(one, Finish::Wait).expect("direct").is_ok());
        assert_eq!(one[0].to_vec::<f32>().unwrap(), vec![a + b; 3]);
    }

    #[test]
    fn a_failed_call_is_its_error_and_caches_nothing() {
        let parts = call(&sum(true), inputs(1.0, 2.0));
        let err = try_realize(&parts, Finish::Wait).expect("direct").unwrap_err();
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
            assert!(
                try_realize(std::slice::from_ref(&t), Finish::Wait).expect("direct").is_ok(),
                "{}",
                t.op()
            );
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
    fn a_kernel_or_copy_needing_other_steps_takes_the_general_path() {
        let ins = inputs(1.5, 2.5);
        let twice = ins[0].add(&ins[0]).unwrap();
        let after = twice.add(&ins[0]).unwrap();
        let copy = after.copy_to_device(DEVS[1]).unwrap();
        let moved = ins[1].clone().move_to_device(DEVS[0]).unwrap();
        for t in [&after, &copy, &moved] {
            assert!(try_realize(std::slice::from_ref(t), Finish::Wait).is_none(), "{}", t.op());
        }
        crate::realize(&[after.clone(), copy.clone(), moved.clone()]).unwrap();
        assert_eq!(after.to_vec::<f32>().unwrap(), vec![4.5; 3]);
        assert_eq!(copy.to_vec::<f32>().unwrap(), vec![4.5; 3]);
        assert_eq!(moved.to_vec::<f32>().unwrap(), vec![2.5; 3]);
    }

    /// A copy of a tensor realized on its device is issued directly: to another device and to
    /// its own (a new buffer either way), every element of fresh random data.
    #[test]
    fn a_lone_copy_of_a_ready_tensor_is_issued_directly() {
        let data = draw(29);
        let src = Tensor::from_vec(data.clone(), [29], DEVS[0]).unwrap();
        for to in DEVS {
            let copy = src.copy_to_device(to).unwrap();
            assert!(try_realize(std::slice::from_ref(&copy), Finish::Wait).expect("direct").is_ok());
            let buf = copy.value().unwrap();
            assert_eq!(buf.device, to);
            assert_ne!(
                buf.host_bytes("test").unwrap().as_ptr(),
                src.value().unwrap().host_bytes("test").unwrap().as_ptr()
            );
            assert_eq!(copy.to_vec::<f32>().unwrap(), data, "to {to}");
        }
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
            assert!(
                try_realize(std::slice::from_ref(&t), Finish::Wait).expect("direct").is_ok(),
                "{}",
                t.op()
            );
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

    pub(super) fn draw(n: usize) -> Vec<f32> {
        use rand::Rng;
        let mut r = rand::rng();
        (0..n).map(|_| r.random_range(-100.0f32..100.0)).collect()
    }

    pub(super) fn f64s(v: &[f32]) -> Vec<f64> {
        v.iter().map(|&x| f64::from(x)).collect()
    }

    #[test]
    fn other_shapes_take_the_general_path() {
        let k = sum(false);
        // An input still to compute.
        let ins = inputs(1.0, 2.0);
        let doubled = ins[0].add(&ins[0]).unwrap();
        let parts = call(&k, vec![doubled, ins[1].clone()]);
        assert!(try_realize(&parts, Finish::Wait).is_none());
        // Targets that are not all parts of one call.
        let other = call(&k, inputs(3.0, 4.0));
        assert!(try_realize(&[parts[0].clone(), other[1].clone()], Finish::Wait).is_none());
        assert!(try_realize(&[other[0].clone(), ins[0].clone()], Finish::Wait).is_none());
        assert_eq!(k.runs.load(Ordering::SeqCst), 0, "nothing ran");
        // realize takes the general path for them, with the same result.
        crate::realize(&parts).unwrap();
        assert_eq!(k.runs.load(Ordering::SeqCst), 1);
        assert_eq!(parts[1].to_vec::<f32>().unwrap(), vec![4.0; 3]);
    }
}
