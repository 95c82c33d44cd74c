//! Running a schedule: one queue per device, so work on disjoint devices overlaps.
//!
//! Each device in the schedule gets a host thread that issues its steps in order, waiting for
//! their inputs to have been issued (possibly on other queues). The threads are the process's
//! pool of blocking workers (the `blocking` crate: a thread for every job at once, idle threads
//! kept for half a second and reused), so a realize starts no thread of its own once the pool has
//! as many as the schedule has queues (unless the process bounds that pool below its default,
//! `BLOCKING_MAX_THREADS`: then each realize starts its own). GPU backends issue work
//! asynchronously and return buffers carrying fences, so a queue's thread runs ahead of its
//! device; whoever reads a buffer waits on its fence (on the device, when the backend can).
//! Buffers are dropped as soon as their last reader has been issued, unless kept.
//!
//! A schedule of one queue, whose queues are all CUDA devices (or CUDA devices and a Vulkan device
//! of the same GPU), or whose every step is smaller than [`ONE_THREAD_BELOW_BYTES`] is issued from
//! the calling thread in topological order instead: issuing such GPU work never waits for the
//! device (inputs are waited for on the device), and on small tensors the host waits that workers
//! would overlap are shorter than handing the queues to them.

use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use super::schedule::{Schedule, Step};
use crate::backend::Buffer;
use crate::device::Device;
use crate::error::Result;

struct State {
    values: Vec<Option<Arc<Buffer>>>,
    done: Vec<bool>,
    remaining: Vec<usize>,
    failed: Option<crate::error::Error>,
}

struct Shared {
    sched: Arc<Schedule>,
    state: Mutex<State>,
    cv: Condvar,
    /// When the log asks for it: each issued step's times (see [`Timeline`]).
    timeline: Option<Timeline>,
}

/// When each step was issued, for the debug log: a realize's time goes to waiting for inputs
/// (other queues), issuing (host work and host waits inside a backend) or the final wait, and a
/// figure that is not what was expected needs to say which.
pub(crate) struct Timeline {
    start: Instant,
    /// (step, inputs ready, issued), in µs since `start`, and the thread that issued it.
    steps: Mutex<Vec<(usize, f64, f64, ThreadId)>>,
}

impl Timeline {
    fn us(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1e6
    }

    /// One line per issued step, in the order they were issued: queue, what, when its inputs
    /// were ready and when its issue returned (µs since the run started).
    pub fn lines(&self, sched: &Schedule) -> Vec<String> {
        let mut steps = self.steps.lock().clone();
        steps.sort_by(|a, b| a.1.total_cmp(&b.1));
        steps
            .iter()
            .map(|&(i, ready, done, _)| format!("{ready:8.1} {done:8.1}  {}", sched.describe(i)))
            .collect()
    }
}

/// Runs every step; returns the targets' buffers (not yet waited on), and, when `timed`, the
/// run's timeline.
pub(crate) fn run(sched: &Arc<Schedule>, timed: bool) -> Result<(Vec<Arc<Buffer>>, Option<Timeline>)> {
    let timeline = timed.then(|| Timeline { start: Instant::now(), steps: Mutex::new(vec![]) });
    let n = sched.steps.len();
    let state = State {
        values: sched.steps.iter().map(|s| s.ready().cloned()).collect(),
        done: sched.steps.iter().map(|s| s.ready().is_some()).collect(),
        remaining: sched.steps.iter().map(|s| s.consumers).collect(),
        failed: None,
    };
    let shared =
        Arc::new(Shared { sched: sched.clone(), state: Mutex::new(state), cv: Condvar::new(), timeline });
    let mut queues: Vec<(Device, Vec<usize>)> = Vec::new();
    for i in (0..n).filter(|&i| sched.steps[i].issued()) {
        let q = sched.steps[i].queue;
        match queues.iter_mut().find(|(d, _)| *d == q) {
            Some((_, v)) => v.push(i),
            None => queues.push((q, vec![i])),
        }
    }
    match queues.as_slice() {
        [] => {}
        [(_, only)] => shared.drain(only),
        _ if one_thread(sched, &queues) => {
            shared.drain(&(0..n).filter(|&i| sched.steps[i].issued()).collect::<Vec<_>>())
        }
        _ if pool_unbounded() => on_workers(&shared, queues.into_iter().map(|(_, list)| list).collect()),
        _ => std::thread::scope(|s| {
            for (_, list) in &queues {
                let shared = &shared;
                s.spawn(move || shared.drain(list));
            }
        }),
    }
    let mut st = shared.state.lock();
    if let Some(e) = st.failed.take() {
        return Err(e);
    }
    let bufs = sched.targets.iter().map(|&t| st.values[t].clone().expect("target realized")).collect();
    drop(st);
    // Each worker drops its handle before its job ends, so this is the last one.
    let timeline = Arc::try_unwrap(shared).ok().and_then(|s| s.timeline);
    Ok((bufs, timeline))
}

/// Drains each of `lists` (one queue's steps each) on a worker of the blocking pool, all at once,
/// and returns when all are done. A worker that panics stops the others (as a failure does) and
/// its panic is resumed here, once every job has ended.
fn on_workers(shared: &Arc<Shared>, lists: Vec<Vec<usize>>) {
    let jobs = lists.into_iter().map(|list| {
        let shared = shared.clone();
        move || shared.drain(&list)
    });
    let stopper = shared.clone();
    join_on_pool(jobs.collect(), move || {
        stopper
            .state
            .lock()
            .failed
            .get_or_insert(crate::Error::internal("realize", "a queue's worker panicked"));
        stopper.cv.notify_all();
    });
}

/// Runs each of `jobs` on a worker of the blocking pool, all at once, and returns when all have
/// ended. Where one panics, `stop` is called (so that the others stop waiting for it) and the
/// first panic is resumed here once every job has ended. Each job drops what it captured before
/// it ends.
fn join_on_pool<J>(jobs: Vec<J>, stop: impl Fn() + Send + Sync + 'static)
where
    J: FnOnce() + Send + 'static,
{
    let stop = Arc::new(stop);
    let tasks: Vec<_> = jobs
        .into_iter()
        .map(|job| {
            let stop = stop.clone();
            blocking::unblock(move || {
                let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                if out.is_err() {
                    stop();
                }
                out
            })
        })
        .collect();
    drop(stop);
    let outs: Vec<_> = tasks.into_iter().map(futures_lite::future::block_on).collect();
    if let Some(Err(panic)) = outs.into_iter().find(|o| o.is_err()) {
        std::panic::resume_unwind(panic);
    }
}

/// The blocking crate's bound on its pool's threads (read once by the crate, as here).
const POOL_LIMIT_ENV: &str = "BLOCKING_MAX_THREADS";

/// The blocking crate's bound on its pool's threads when [`POOL_LIMIT_ENV`] does not set one.
const POOL_DEFAULT_LIMIT: usize = 500;

/// Whether the blocking pool keeps its default bound ([`POOL_DEFAULT_LIMIT`]): queues wait for one another,
/// so a pool bounded below the queues of the realizes running at once would leave a queue
/// waiting for a thread that never comes. Where the process lowered it ([`POOL_LIMIT_ENV`], for
/// its own async runtime's sake), realizes start their own threads as they did before the pool.
fn pool_unbounded() -> bool {
    static UNBOUNDED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *UNBOUNDED.get_or_init(|| limit_is_default(std::env::var(POOL_LIMIT_ENV).ok().as_deref()))
}

/// Whether [`POOL_LIMIT_ENV`] set to `value` leaves the pool its default bound: unset, not a
/// number (the crate then keeps its default), or the default and more.
fn limit_is_default(value: Option<&str>) -> bool {
    value.and_then(|v| v.trim().parse::<usize>().ok()).is_none_or(|n| n >= POOL_DEFAULT_LIMIT)
}

/// Schedules whose every step moves less than this many bytes are issued from the calling
/// thread, in topological order. Handing the queues to workers costs a wake-up each and a
/// hand-off at every step one queue waits for on another (and before the workers were pooled, a
/// thread start: `pthread_create` alone took 14 % of a 4 KiB `cuda:0, vulkan:0` all_reduce's
/// host samples on the H200, `bench/gpu/16-vulkan-host`), while what the workers buy — one
/// queue's host work or host wait overlapping another's — is worth less than that on tensors
/// this small.
pub const ONE_THREAD_BELOW_BYTES: usize = 1 << 20;

/// Whether `sched` (of `queues`) is issued from the calling thread: where issuing its steps never
/// waits on the host ([`issued_without_host_waits`]), or where every step is smaller than
/// [`ONE_THREAD_BELOW_BYTES`]. In topological order a step's inputs are issued before it, so a
/// host wait inside a step waits only for work already issued.
fn one_thread(sched: &Schedule, queues: &[(Device, Vec<usize>)]) -> bool {
    issued_without_host_waits(queues)
        || sched.steps.iter().all(|s| s.tensor.nbytes() < ONE_THREAD_BELOW_BYTES)
}

/// Whether the steps of `queues` are issued without waiting on the host: where the queues are all
/// CUDA devices (inputs are waited for on the device, by events), or CUDA devices beside one
/// Vulkan device that is the same GPU as each of them (the device bridge: a move between them is a
/// CUDA copy, and each API waits for the other's work on the GPU, `backend/cuda/timeline.rs`).
/// Host devices, two Vulkan devices (their moves stage through the host) and the host bridge
/// wait on the host, and take a worker per queue. (A Vulkan slice or concat of small tensors in
/// host memory waits on the host too, for inputs already issued: short, and no reason for threads.)
fn issued_without_host_waits(queues: &[(Device, Vec<usize>)]) -> bool {
    use crate::device::DeviceKind;
    let of = |k: DeviceKind| queues.iter().map(|q| q.0).filter(move |d| d.kind() == k);
    if of(DeviceKind::Cpu).next().is_some() {
        return false;
    }
    let vulkan: Vec<Device> = of(DeviceKind::Vulkan).collect();
    match vulkan.as_slice() {
        [] => true,
        [vk] => of(DeviceKind::Cuda).all(|cu| crate::backend::staged::on_one_gpu(cu, *vk)),
        _ => false,
    }
}

impl Shared {
    /// Issues one queue's steps in order; stops at the first failure anywhere.
    fn drain(&self, list: &[usize]) {
        for &i in list {
            let Some(inputs) = self.wait_inputs(&self.sched.steps[i]) else {
                return;
            };
            let ready = self.timeline.as_ref().map(Timeline::us);
            let out = super::step::issue(&self.sched, i, &inputs);
            if let (Some(t), Some(ready)) = (&self.timeline, ready) {
                t.steps.lock().push((i, ready, t.us(), std::thread::current().id()));
            }
            drop(inputs);
            let mut st = self.state.lock();
            match out {
                Ok((own, fused)) => {
                    self.finish(&mut st, i, own);
                    for (s, b) in fused {
                        self.finish(&mut st, s, b);
                    }
                }
                Err(e) => {
                    st.failed.get_or_insert(e);
                }
            }
            self.cv.notify_all();
            if st.failed.is_some() {
                return;
            }
        }
    }

    /// The inputs' buffers once all are issued, or `None` if the run failed meanwhile.
    fn wait_inputs(&self, step: &Step) -> Option<Vec<Arc<Buffer>>> {
        let mut st = self.state.lock();
        loop {
            if st.failed.is_some() {
                return None;
            }
            if step.inputs.iter().all(|&i| st.done[i]) {
                return Some(step.inputs.iter().map(|&i| st.values[i].clone().expect("issued")).collect());
            }
            self.cv.wait(&mut st);
        }
    }

    fn finish(&self, st: &mut State, i: usize, buf: Arc<Buffer>) {
        st.values[i] = Some(buf);
        st.done[i] = true;
        for &j in &self.sched.steps[i].inputs {
            st.remaining[j] -= 1;
            if st.remaining[j] == 0 && !self.sched.steps[j].keep {
                st.values[j] = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::graph::opt::insert_cross_device_copies;
    use crate::graph::{ReduceKind, Shape, Tensor};

    /// The schedule of `numel` f32 elements on `cuda:0` added to as many on `other`, and its
    /// queues as `run` groups them.
    fn sum_with(other: Device, numel: usize) -> (Schedule, Vec<(Device, Vec<usize>)>) {
        let t = |d| Tensor::placeholder(Shape::from(vec![numel]), DType::F32, d);
        let (a, b) = (t(Device::Cuda(0)), t(other));
        let sum = Tensor::reduce_on(Device::Cuda(0), &[a, b], ReduceKind::Sum, None).unwrap();
        let back = crate::route::Hops::default().hop(&sum, other);
        let sched = super::super::schedule::build(&insert_cross_device_copies(&[back]));
        let mut queues: Vec<(Device, Vec<usize>)> = vec![];
        for (i, s) in sched.steps.iter().enumerate().filter(|(_, s)| s.issued()) {
            match queues.iter_mut().find(|(d, _)| *d == s.queue) {
                Some((_, v)) => v.push(i),
                None => queues.push((s.queue, vec![i])),
            }
        }
        (sched, queues)
    }

    #[test]
    fn small_or_all_gpu_schedules_take_one_thread() {
        let small = ONE_THREAD_BELOW_BYTES / 4 - 1;
        let big = ONE_THREAD_BELOW_BYTES / 4;
        for other in [Device::Cpu(0), Device::Vulkan(0)] {
            let (sched, queues) = sum_with(other, small);
            assert!(queues.len() >= 2, "{other}: several queues");
            assert!(one_thread(&sched, &queues), "{other}: small steps");
            let (sched, queues) = sum_with(other, big);
            // `cuda:0` and `vulkan:0` are one GPU on the GPU machine, and never on lavapipe's.
            let bridged = crate::backend::staged::on_one_gpu(Device::Cuda(0), other);
            assert_eq!(one_thread(&sched, &queues), bridged, "{other}: a step of the bound");
        }
        let (sched, queues) = sum_with(Device::Cuda(1), ONE_THREAD_BELOW_BYTES);
        assert!(queues.len() >= 2 && one_thread(&sched, &queues), "all CUDA: one thread at any size");
    }

    #[test]
    fn host_devices_and_unbridged_vulkan_devices_take_threads() {
        let q = |ds: &[Device]| ds.iter().map(|&d| (d, vec![])).collect::<Vec<_>>();
        let (cu, vk, cpu) = (Device::Cuda(0), Device::Vulkan(0), Device::Cpu(0));
        assert!(issued_without_host_waits(&q(&[cu, Device::Cuda(1)])));
        assert!(!issued_without_host_waits(&q(&[cu, cpu])), "a host device");
        assert!(!issued_without_host_waits(&q(&[vk, Device::Vulkan(1)])), "two Vulkan devices");
        assert!(!issued_without_host_waits(&q(&[cu, vk, cpu])), "a host device beside the bridge");
        // `cuda:21` exists nowhere: never one GPU with `vulkan:0` (another test of this process
        // expects `cuda:13`'s bridge undecided).
        assert!(!issued_without_host_waits(&q(&[Device::Cuda(21), vk])), "no device bridge");
        let bridged = crate::backend::staged::on_one_gpu(cu, vk);
        assert_eq!(issued_without_host_waits(&q(&[cu, vk])), bridged);
    }

    #[test]
    fn the_timeline_names_each_step_in_issue_order() {
        let (sched, _) = sum_with(Device::Cpu(0), 8);
        let t = Timeline { start: Instant::now(), steps: Mutex::new(vec![]) };
        let issued: Vec<usize> = (0..sched.steps.len()).filter(|&i| sched.steps[i].issued()).collect();
        for (k, &i) in issued.iter().enumerate().rev() {
            t.steps.lock().push((i, k as f64 * 2.0, k as f64 * 2.0 + 1.0, std::thread::current().id()));
        }
        let lines = t.lines(&sched);
        assert_eq!(lines.len(), issued.len());
        for (line, &i) in lines.iter().zip(&issued) {
            assert!(line.ends_with(&sched.describe(i)), "{line}");
        }
        assert!(lines[0].trim_start().starts_with("0.0"), "{}", lines[0]);
        // Streamed (in one pass, the host shard read in place) unless `COLLECTIVES_STREAM=0`.
        let kernel = |l: &String| l.contains("[cuda:0] reduce kernel") && l.ends_with(", 32 B on cuda:0");
        assert!(lines.iter().any(kernel), "{lines:?}");
    }

    /// A schedule of two host queues whose steps are 1 MiB, so each queue is drained by a worker.
    fn two_queue_sum(values: &[f32]) -> Arc<Schedule> {
        let a = Tensor::from_vec(values.to_vec(), [values.len()], Device::Cpu(0)).unwrap();
        let b = Tensor::from_vec(values.iter().map(|v| v * 0.5).collect(), [values.len()], Device::Cpu(1))
            .unwrap();
        let sum = a.add(&b.copy_to_device(Device::Cpu(0)).unwrap()).unwrap();
        let back = sum.copy_to_device(Device::Cpu(1)).unwrap().add(&b).unwrap();
        Arc::new(super::super::schedule::build(&insert_cross_device_copies(&[back])))
    }

    #[test]
    fn a_panicking_worker_stops_the_others_and_its_panic_reaches_the_caller() {
        type Job = Box<dyn FnOnce() + Send>;
        let flag = Arc::new((Mutex::new(false), Condvar::new()));
        let (f, g) = (flag.clone(), flag.clone());
        // Waits (at most 10 s) for `stop`, as a queue waits for an input another queue issues.
        let waiter: Job = Box::new(move || {
            let mut stopped = f.0.lock();
            let deadline = Instant::now() + std::time::Duration::from_secs(10);
            while !*stopped && !f.1.wait_until(&mut stopped, deadline).timed_out() {}
            assert!(*stopped, "the waiting job was never stopped");
        });
        let panics: Job = Box::new(|| panic!("a step panicked"));
        let stop = move || {
            *g.0.lock() = true;
            g.1.notify_all();
        };
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            join_on_pool(vec![waiter, panics], stop)
        }));
        let panic = caught.expect_err("the panic reaches the caller");
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"a step panicked"));
        assert!(*flag.0.lock(), "stopped");
    }

    #[test]
    fn a_lowered_pool_bound_is_seen() {
        assert!(limit_is_default(None) && limit_is_default(Some("500")) && limit_is_default(Some("many")));
        assert!(!limit_is_default(Some("4")) && !limit_is_default(Some(" 1 ")));
    }

    #[test]
    fn workers_are_reused_across_runs_not_started_per_run() {
        if !pool_unbounded() {
            println!("skipped: {POOL_LIMIT_ENV} bounds the pool, so each run starts its threads");
            return;
        }
        use rand::Rng;
        let mut rng = rand::rng();
        let values: Vec<f32> = (0..ONE_THREAD_BELOW_BYTES / 4).map(|_| rng.random_range(-1.0..1.0)).collect();
        let mut threads = std::collections::HashSet::new();
        let runs = 40;
        for _ in 0..runs {
            let sched = two_queue_sum(&values);
            let (bufs, timeline) = run(&sched, true).unwrap();
            let steps = timeline.unwrap().steps.into_inner();
            let ran_on: std::collections::HashSet<ThreadId> = steps.iter().map(|s| s.3).collect();
            assert!(!ran_on.contains(&std::thread::current().id()), "the queues ran on workers");
            threads.extend(ran_on);
            bufs[0].wait().unwrap();
            let got: &[f32] = bytemuck::cast_slice(bufs[0].host_bytes("read").unwrap());
            assert_eq!(got.len(), values.len());
            for (k, (&g, &v)) in got.iter().zip(&values).enumerate() {
                let want = v as f64 * 2.0;
                assert!((g as f64 - want).abs() <= 1e-6 * want.abs().max(1.0), "element {k}: {g} != {want}");
            }
        }
        // A thread per queue and run would be at least two new threads a run.
        assert!(threads.len() < runs, "{} threads over {runs} runs", threads.len());
    }
}
