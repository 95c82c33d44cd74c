//! The direct path of [`super::realize`]: when every target is a part of one multi-device call
//! (`Op::Collective`, an NCCL group call) and the call's inputs are already on their devices,
//! the call is issued at once, without the graph pass, the schedule and the queues; likewise one
//! target that is one kernel (an elementwise op, a slice or a concat) over inputs already on its
//! device.
//!
//! That is the graph of every collective on an all-CUDA group, realized as soon as it is built,
//! and of a local reduce. Its call is short (about 110 µs for 16 MiB per GPU on two H200s; a
//! 4 KiB kernel and its wait about 10 µs), and the general path's bookkeeping before issuing it
//! — a few microseconds — showed in the measured bandwidth (`bench/gpu/5-overhead`) and in a
//! small kernel's time (`bench/gpu/23-star`). The outcome is the general path's: the same
//! buffers cached in the same nodes, the same errors, nothing cached when the call fails.

use std::sync::Arc;

use super::schedule::Action;
use crate::backend::Buffer;
use crate::error::Result;
use crate::graph::{Op, Tensor};

/// Realizes `pending` (none realized yet) directly if it has that shape; `None` when it does not,
/// having done nothing.
pub(super) fn try_realize(pending: &[Tensor]) -> Option<Result<()>> {
    if let [one] = pending
        && let Some(inputs) = lone_kernel(one)
    {
        return Some(run_kernel(one, &inputs));
    }
    let call = shared_call(pending)?;
    let inputs = ready_inputs(&call)?;
    Some(run(&call, &inputs, pending))
}

/// The buffers of `t`'s inputs, if the schedule would run `t` as a kernel step and every input is
/// realized on `t`'s device (so the graph pass would add no copy, and the schedule would be this
/// one step).
fn lone_kernel(t: &Tensor) -> Option<Vec<Arc<Buffer>>> {
    if !matches!(super::schedule::action_of(t, false), Action::Kernel { .. }) {
        return None;
    }
    t.inputs()
        .iter()
        .map(|i| i.value().filter(|b| b.device == t.device() && i.device() == t.device()))
        .collect()
}

/// Issues kernel node `t` over `inputs` as the schedule's kernel step does, waits and caches it.
fn run_kernel(t: &Tensor, inputs: &[Arc<Buffer>]) -> Result<()> {
    let (out, _) = super::step::kernel(t, inputs, &[], false)?;
    super::cache_when_done(std::slice::from_ref(t), vec![out])
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
    call.inputs().iter().map(|i| i.value().filter(|b| b.device == i.device())).collect()
}

/// Issues `call`, waits for the targets' parts and caches them.
fn run(call: &Tensor, inputs: &[Arc<Buffer>], targets: &[Tensor]) -> Result<()> {
    let Op::Collective(c) = call.op() else { unreachable!("shared_call checked the op") };
    let refs: Vec<&Buffer> = inputs.iter().map(|b| b.as_ref()).collect();
    let parts = c.0.run(&refs)?;
    let bufs = targets
        .iter()
        .map(|t| match t.op() {
            Op::Part { index } => super::step::pick(&parts, *index, t),
            _ => unreachable!("shared_call checked the ops"),
        })
        .collect::<Result<Vec<_>>>()?;
    drop(parts);
    super::cache_when_done(targets, bufs)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::device::Device;
    use crate::dtype::DType;
    use crate::error::Error;
    use crate::graph::{CollectiveCall, MultiKernel, Shape};

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

        fn run(&self, inputs: &[&Buffer]) -> Result<Vec<Arc<Buffer>>> {
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
            inputs,
            DEVS[0],
            DType::F32,
            Shape::new(vec![0]),
            None,
        );
        (0..2)
            .map(|index| {
                Tensor::new_node(
                    Op::Part { index },
                    vec![node.clone()],
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

    /// A kernel with an input on another device, or one still to compute, and a target that is
    /// no kernel take the general path, which gives the same values.
    #[test]
    fn a_kernel_needing_copies_or_other_steps_takes_the_general_path() {
        let ins = inputs(1.5, 2.5);
        let across = ins[0].add(&ins[1]).unwrap();
        let after = ins[0].add(&ins[0]).unwrap().add(&ins[0]).unwrap();
        let copy = ins[0].copy_to_device(DEVS[1]).unwrap();
        for t in [&across, &after, &copy] {
            assert!(try_realize(std::slice::from_ref(t)).is_none(), "{}", t.op());
        }
        crate::realize(&[across.clone(), after.clone(), copy.clone()]).unwrap();
        assert_eq!(across.to_vec::<f32>().unwrap(), vec![4.0; 3]);
        assert_eq!(after.to_vec::<f32>().unwrap(), vec![4.5; 3]);
        assert_eq!(copy.to_vec::<f32>().unwrap(), vec![1.5; 3]);
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
