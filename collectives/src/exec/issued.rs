//! Issuing a graph without waiting for it: [`issue`], and the [`Issued`] handle it returns.
//!
//! [`realize`](super::realize) returns once its targets are complete, so every call pays its
//! devices' whole round trip: on a GPU a launch and the wait for it, 8–10 µs however small the
//! work on the H200s and H100s measured (`bench/gpu/28-completion`, `48-host-time`). [`issue`]
//! returns once the work is issued and the targets are cached, so the host builds the next call
//! while the devices compute, as a PyTorch or JAX program does, and a loop of calls costs what
//! issuing them costs. Whoever reads a target waits for it: [`Tensor::to_vec`],
//! [`realize`](super::realize), a later call's kernels (on the device, where the backend can);
//! [`Issued::wait`] waits for every target and returns the work's first error.
//!
//! The handle holds the targets, and through them every input of their graph, until the work is
//! done: dropping it waits (as a scoped thread's handle does), so no buffer an issued kernel reads
//! or writes is freed under it. Errors found while issuing (a bad graph, a device that cannot be
//! opened, memory that cannot be had) are returned by `issue` itself, with nothing cached; errors
//! of the work itself surface where it is waited for. [`issue`] has an example.

use super::{Finish, compute};
use crate::error::Result;
use crate::graph::Tensor;
use crate::log::{LogLevel, log};

/// Computes `targets` (and everything they need) as [`realize`](super::realize) does, but returns
/// once the work is issued: the targets are cached at once, and every read of them waits for its
/// part of the work (on the device, where the backend can). The host builds the next call while
/// the devices compute; a loop of calls costs what issuing them costs, not each call's round trip.
/// The [`Issued`] handle holds the targets, and through them their graph's inputs, until the work
/// is done; dropping it waits.
///
/// Errors as `realize` does where the work cannot be issued, caching nothing; a failure of the
/// issued work itself is returned by [`Issued::wait`] and by every later read of the targets.
///
/// ```
/// use collectives::{issue, Device, DeviceGroup, ReduceOp, Tensor};
/// let group = DeviceGroup::new(vec![Device::Cpu(0), Device::Cpu(1)])?;
/// let shards = [
///     Tensor::from_vec(vec![1.0f32; 4], [4], Device::Cpu(0))?,
///     Tensor::from_vec(vec![2.0f32; 4], [4], Device::Cpu(1))?,
/// ];
/// let sums = group.all_reduce(&shards, ReduceOp::Sum)?;
/// let issued = issue(&sums)?; // returns once the work is issued
/// // ... build the next call here while the devices work ...
/// issued.wait()?; // every target complete, or the work's first error
/// assert_eq!(sums[1].to_vec::<f32>()?, vec![3.0; 4]);
/// # Ok::<(), collectives::Error>(())
/// ```
pub fn issue(targets: &[Tensor]) -> Result<Issued> {
    compute(targets, Finish::Leave)?;
    Ok(Issued { targets: targets.to_vec() })
}

/// Work started by [`issue`]: its targets, cached, perhaps still being computed.
///
/// Dropping it waits for the work (logging, at [`LogLevel::Info`], a failure that
/// [`Issued::wait`] would have returned; every later read of the targets returns it too).
#[must_use = "dropping an Issued waits for its work at once; keep it, and call wait() to see its errors"]
pub struct Issued {
    targets: Vec<Tensor>,
}

impl Issued {
    /// Waits until every target is complete; returns the work's first error.
    pub fn wait(mut self) -> Result<()> {
        wait_all(&std::mem::take(&mut self.targets))
    }

    /// Whether every target is known complete, without waiting: `false` while the work runs, and
    /// where a device cannot tell (then [`Issued::wait`] says).
    pub fn is_complete(&self) -> bool {
        self.targets.iter().filter_map(Tensor::value).all(|b| b.is_complete())
    }

    /// The tensors issued, in the order given to [`issue`].
    pub fn targets(&self) -> &[Tensor] {
        &self.targets
    }
}

impl Drop for Issued {
    fn drop(&mut self) {
        if let Err(e) = wait_all(&self.targets) {
            log!(LogLevel::Info, "issue: the work of an Issued dropped unwaited failed: {e}");
        }
    }
}

impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issued")
            .field("targets", &self.targets)
            .field("complete", &self.is_complete())
            .finish()
    }
}

/// Waits for every one of `targets`' buffers, also after one fails (a handle holds them until
/// all are done); the first error.
pub(super) fn wait_all(targets: &[Tensor]) -> Result<()> {
    let mut first = Ok(());
    for b in targets.iter().filter_map(Tensor::value) {
        let waited = b.wait();
        if first.is_ok() {
            first = waited;
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use std::any::Any;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use smallvec::smallvec;

    use super::*;
    use crate::backend::{Buffer, Fence};
    use crate::device::Device;
    use crate::dtype::DType;
    use crate::error::Error;
    use crate::graph::{CollectiveCall, MultiKernel, Op, Shape};

    const DEVS: [Device; 2] = [Device::Cpu(0), Device::Cpu(1)];

    /// Work a test finishes by hand: complete once `open`, failed if `fails`; counts its waits.
    #[derive(Default)]
    struct Gate {
        open: AtomicBool,
        fails: bool,
        waits: AtomicUsize,
    }

    impl Fence for Gate {
        fn wait(&self) -> Result<()> {
            self.waits.fetch_add(1, Ordering::SeqCst);
            self.open.store(true, Ordering::SeqCst);
            match self.fails {
                true => Err(Error::driver(DEVS[0], "gated work", "failed on purpose")),
                false => Ok(()),
            }
        }
        fn is_complete(&self) -> bool {
            self.open.load(Ordering::SeqCst) && !self.fails
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    /// A call writing `value` to one output per device, each behind `gate`; or failing to issue.
    struct Gated {
        gate: Arc<Gate>,
        value: f32,
        refuses: bool,
    }

    impl MultiKernel for Gated {
        fn name(&self) -> String {
            "gated".into()
        }

        fn run(&self, _: &[Arc<Buffer>]) -> Result<Vec<Arc<Buffer>>> {
            if self.refuses {
                return Err(Error::driver(DEVS[0], "gated", "refused to issue"));
            }
            let out = |d| {
                let mut b = Buffer::from_vec(d, vec![self.value; 3]);
                b.fence = Some(self.gate.clone() as Arc<dyn Fence>);
                Arc::new(b)
            };
            Ok(DEVS.iter().map(|&d| out(d)).collect())
        }
    }

    /// The parts of a `Gated` call over two fresh inputs, and its gate.
    fn gated(fails: bool, refuses: bool) -> (Vec<Tensor>, Arc<Gate>, f32) {
        let gate = Arc::new(Gate { fails, ..Gate::default() });
        let value = rand::random::<f32>();
        let inputs: Vec<Tensor> =
            DEVS.iter().map(|&d| Tensor::from_vec(vec![rand::random::<f32>(); 3], [3], d).unwrap()).collect();
        let kernel: Arc<dyn MultiKernel> = Arc::new(Gated { gate: gate.clone(), value, refuses });
        let (f32_, shape) = (DType::F32, |n: usize| Shape::new(vec![n]));
        let call = Tensor::new_node(
            Op::Collective(CollectiveCall(kernel)),
            inputs.into(),
            DEVS[0],
            f32_,
            shape(0),
            None,
        );
        let part = |index: usize| {
            Tensor::new_node(Op::Part { index }, smallvec![call.clone()], DEVS[index], f32_, shape(3), None)
        };
        ((0..2).map(part).collect(), gate, value)
    }

    #[test]
    fn issued_targets_are_cached_at_once_and_their_readers_wait() {
        let (parts, gate, value) = gated(false, false);
        let issued = issue(&parts).unwrap();
        assert!(parts.iter().all(Tensor::is_realized), "cached while the work runs");
        assert_eq!(gate.waits.load(Ordering::SeqCst), 0, "issue does not wait");
        assert!(!issued.is_complete());
        assert_eq!(parts[1].to_vec::<f32>().unwrap(), vec![value; 3]);
        assert!(gate.waits.load(Ordering::SeqCst) >= 1, "a read waits");
        assert!(issued.is_complete());
        assert!(issued.targets().iter().zip(&parts).all(|(a, b)| a.same_node(b)));
        issued.wait().unwrap();
    }

    #[test]
    fn realize_waits_for_a_target_issued_earlier() {
        let (parts, gate, _) = gated(false, false);
        let issued = issue(&parts).unwrap();
        crate::realize(&parts[..1]).unwrap();
        assert_eq!(gate.waits.load(Ordering::SeqCst), 1);
        std::mem::forget(issued); // leaks the targets, waiting for nothing
    }

    #[test]
    fn dropping_an_issued_waits_for_its_work() {
        let (parts, gate, _) = gated(false, false);
        drop(issue(&parts).unwrap());
        assert_eq!(gate.waits.load(Ordering::SeqCst), 2, "one wait per target");
        // Waited already: `wait` on the handle returns at once with no second wait.
        let again = issue(&parts).unwrap();
        again.wait().unwrap();
        assert_eq!(gate.waits.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn a_failure_of_issued_work_surfaces_wherever_it_is_waited_for() {
        let (parts, gate, _) = gated(true, false);
        let issued = issue(&parts).unwrap();
        assert!(!issued.is_complete());
        let is_ours = |e: Error| e.to_string().contains("failed on purpose");
        assert!(is_ours(issued.wait().unwrap_err()));
        assert_eq!(gate.waits.load(Ordering::SeqCst), 2, "every target waited for, past the failure");
        assert!(is_ours(parts[0].to_vec::<f32>().unwrap_err()));
        assert!(is_ours(crate::realize(&parts).unwrap_err()));
        drop(issue(&parts).unwrap()); // logs, does not panic
        assert!(gate.waits.load(Ordering::SeqCst) >= 4);
    }

    #[test]
    fn realize_caches_nothing_when_the_work_fails() {
        let (parts, _, _) = gated(true, false);
        assert!(crate::realize(&parts).unwrap_err().to_string().contains("failed on purpose"));
        assert!(!parts.iter().any(Tensor::is_realized));
    }

    #[test]
    fn work_that_cannot_be_issued_is_an_error_of_issue_with_nothing_cached() {
        let (parts, gate, _) = gated(false, true);
        assert!(issue(&parts).unwrap_err().to_string().contains("refused to issue"));
        assert!(!parts.iter().any(Tensor::is_realized));
        assert_eq!(gate.waits.load(Ordering::SeqCst), 0);
    }
}
