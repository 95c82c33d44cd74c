//! Running a schedule: one queue per device, so work on disjoint devices overlaps.
//!
//! Each device in the schedule gets a host thread that issues its steps in order, waiting for
//! their inputs to have been issued (possibly on other queues). GPU backends issue work
//! asynchronously and return buffers carrying fences, so a queue's thread runs ahead of its
//! device; whoever reads a buffer waits on its fence (on the device, when the backend can).
//! Buffers are dropped as soon as their last reader has been issued, unless kept.
//!
//! A schedule of one queue, or whose queues are all CUDA devices, is issued from the calling
//! thread in topological order instead: issuing CUDA work never waits for the device (inputs are
//! waited for on the device, by events), so threads would only add their start-up (tens of
//! microseconds a realize) to a collective's fixed cost.

use std::sync::Arc;

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

struct Shared<'a> {
    sched: &'a Schedule,
    state: Mutex<State>,
    cv: Condvar,
}

/// Runs every step; returns the targets' buffers (not yet waited on).
pub(crate) fn run(sched: &Schedule) -> Result<Vec<Arc<Buffer>>> {
    let n = sched.steps.len();
    let state = State {
        values: sched.steps.iter().map(|s| s.ready().cloned()).collect(),
        done: sched.steps.iter().map(|s| s.ready().is_some()).collect(),
        remaining: sched.steps.iter().map(|s| s.consumers).collect(),
        failed: None,
    };
    let shared = Shared { sched, state: Mutex::new(state), cv: Condvar::new() };
    let mut queues: Vec<(Device, Vec<usize>)> = Vec::new();
    for i in (0..n).filter(|&i| sched.steps[i].issued()) {
        let q = sched.steps[i].queue;
        match queues.iter_mut().find(|(d, _)| *d == q) {
            Some((_, v)) => v.push(i),
            None => queues.push((q, vec![i])),
        }
    }
    let all_cuda = queues.iter().all(|(d, _)| d.kind() == crate::device::DeviceKind::Cuda);
    match queues.as_slice() {
        [] => {}
        [(_, only)] => shared.drain(only),
        _ if all_cuda => shared.drain(&(0..n).filter(|&i| sched.steps[i].issued()).collect::<Vec<_>>()),
        _ => std::thread::scope(|s| {
            for (_, list) in &queues {
                let shared = &shared;
                s.spawn(move || shared.drain(list));
            }
        }),
    }
    let mut st = shared.state.into_inner();
    if let Some(e) = st.failed.take() {
        return Err(e);
    }
    Ok(sched.targets.iter().map(|&t| st.values[t].clone().expect("target realized")).collect())
}

impl Shared<'_> {
    /// Issues one queue's steps in order; stops at the first failure anywhere.
    fn drain(&self, list: &[usize]) {
        for &i in list {
            let Some(inputs) = self.wait_inputs(&self.sched.steps[i]) else {
                return;
            };
            let out = super::step::issue(self.sched, i, &inputs);
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
