//! The in-process meeting point of [`super::LocalComm`]: per-call slots where ranks deposit their
//! tensors, and per-pair mailboxes for point-to-point messages.
//!
//! Calls are numbered per rank; call k of every rank meets in slot k. The last rank to arrive
//! runs the collective (a closure building the lazy result of every rank) under the lock and
//! wakes the others, which take their own result. A slot lives until every rank has taken its
//! part, so a fast rank can already wait in slot k + 1 while a slow one still collects slot k.
//!
//! Failure is prompt: a rank whose own arguments are wrong, or whose call differs from the
//! others', fails the slot for everyone at once; a rank dropped ([`Meeting::leave`]) fails every
//! call it has not joined; a rank that panics or a wait that times out breaks the meeting for
//! all. Waits block on one condition variable with a deadline; nothing spins.

use std::collections::{HashMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::check::{Call, rank_list};
use crate::error::{Error, Result};
use crate::graph::Tensor;

/// What a rank brings to a collective: its call and tensor, or why its own arguments failed.
pub(crate) type Arrival = std::result::Result<(Call, Option<Tensor>), String>;

/// Each rank's result of one collective (`None` where it receives nothing).
pub(crate) type Results = Vec<Option<Tensor>>;

/// The ranks' meeting point.
pub(crate) struct Meeting {
    ranks: usize,
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Default)]
struct State {
    /// Why no call can complete any more (a rank panicked, a wait timed out).
    broken: Option<String>,
    /// Ranks that left (their communicator was dropped), with how.
    gone: Vec<Option<String>>,
    /// Each rank's next call number.
    next: Vec<u64>,
    slots: HashMap<u64, Slot>,
    mail: HashMap<(usize, usize), VecDeque<Tensor>>,
}

/// One collective call of every rank.
struct Slot {
    first: Option<(usize, Call)>,
    inputs: Vec<Option<Tensor>>,
    arrived: Vec<bool>,
    outcome: Option<Result<Results>>,
    /// Ranks that have not yet taken their result.
    left: usize,
}

impl Slot {
    fn new(ranks: usize) -> Self {
        Slot {
            first: None,
            inputs: vec![None; ranks],
            arrived: vec![false; ranks],
            outcome: None,
            left: ranks,
        }
    }

    fn missing(&self) -> Vec<usize> {
        (0..self.arrived.len()).filter(|&r| !self.arrived[r]).collect()
    }

    /// Records `rank`'s arrival; a bad argument or a call unlike the first fails the slot.
    fn arrive(&mut self, rank: usize, seq: u64, arrival: Arrival) {
        self.arrived[rank] = true;
        let failure = match arrival {
            Err(why) => Some(format!("call {seq}: rank {rank} {why}")),
            Ok((call, t)) => {
                self.inputs[rank] = t;
                match &self.first {
                    Some((r0, c0)) if *c0 != call => {
                        Some(format!("call {seq}: rank {rank} called {call} but rank {r0} called {c0}"))
                    }
                    Some(_) => None,
                    None => {
                        self.first = Some((rank, call));
                        None
                    }
                }
            }
        };
        if let (Some(msg), None) = (failure, &self.outcome) {
            self.outcome = Some(Err(Error::Comm { op: "collective", msg }));
        }
    }

    /// Runs the collective once every rank is in; a panic inside becomes every rank's error.
    fn complete<F>(&mut self, seq: u64, run: F)
    where
        F: FnOnce(&Call, Vec<Tensor>) -> Result<Results>,
    {
        if self.outcome.is_some() || !self.missing().is_empty() {
            return;
        }
        let Some((_, call)) = self.first.clone() else { return };
        let inputs: Vec<Tensor> = self.inputs.iter_mut().filter_map(Option::take).collect();
        let ran = catch_unwind(AssertUnwindSafe(|| run(&call, inputs)));
        self.outcome = Some(ran.unwrap_or_else(|_| {
            let msg = format!("call {seq}: building {call} panicked");
            Err(Error::Comm { op: "collective", msg })
        }));
    }

    /// `rank`'s share of the outcome (which must be set).
    fn take(&mut self, rank: usize, op: &'static str) -> Result<Option<Tensor>> {
        self.left -= 1;
        match self.outcome.as_mut() {
            Some(Ok(results)) => Ok(results[rank].take()),
            Some(Err(Error::Comm { msg, .. })) => Err(Error::Comm { op, msg: msg.clone() }),
            Some(Err(e)) => Err(e.clone()),
            None => Err(Error::Comm { op, msg: "internal: result taken before it was set".into() }),
        }
    }
}

impl Meeting {
    /// A meeting of `ranks` ranks.
    pub fn new(ranks: usize) -> Self {
        let state = State { gone: vec![None; ranks], next: vec![0; ranks], ..State::default() };
        Meeting { ranks, state: Mutex::new(state), cv: Condvar::new() }
    }

    /// Rank `rank`'s next collective: arrive with `arrival`, let the last rank run `run` over
    /// every rank's tensor (in rank order), and return this rank's result. Waits at most
    /// `timeout` for the other ranks.
    pub fn collective<F>(
        &self,
        rank: usize,
        op: &'static str,
        arrival: Arrival,
        timeout: Duration,
        run: F,
    ) -> Result<Option<Tensor>>
    where
        F: FnOnce(&Call, Vec<Tensor>) -> Result<Results>,
    {
        let deadline = Instant::now() + timeout;
        let mut st = self.state.lock();
        if let Some(why) = &st.broken {
            return Err(Error::Comm { op, msg: why.clone() });
        }
        let seq = st.next[rank];
        st.next[rank] += 1;
        let ranks = self.ranks;
        let slot = st.slots.entry(seq).or_insert_with(|| Slot::new(ranks));
        slot.arrive(rank, seq, arrival);
        slot.complete(seq, run);
        self.cv.notify_all();
        self.await_outcome(st, (rank, seq, op), deadline, timeout)
    }

    /// Waits until slot `seq` has an outcome, a missing rank is gone, the meeting breaks, or
    /// `deadline` passes (which breaks the meeting, naming the ranks that did not come).
    fn await_outcome(
        &self,
        mut st: MutexGuard<'_, State>,
        (rank, seq, op): (usize, u64, &'static str),
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Option<Tensor>> {
        loop {
            let State { slots, gone, broken, .. } = &mut *st;
            let slot = slots.get_mut(&seq).expect("a slot lives until every rank has taken its result");
            if slot.outcome.is_some() {
                let got = slot.take(rank, op);
                if slot.left == 0 {
                    slots.remove(&seq);
                }
                return got;
            }
            if let Some(why) = broken {
                return Err(Error::Comm { op, msg: why.clone() });
            }
            let missing = slot.missing();
            if let Some(&r) = missing.iter().find(|&&r| gone[r].is_some()) {
                let how = gone[r].as_deref().unwrap_or("left");
                let msg = format!("call {seq}: rank {r} {how} before joining it");
                return Err(Error::Comm { op, msg });
            }
            if Instant::now() >= deadline {
                let msg = format!(
                    "call {seq}: rank {rank} timed out after {timeout:?} waiting for rank(s) {} to call {op}",
                    rank_list(&missing)
                );
                st.broken = Some(msg.clone());
                self.cv.notify_all();
                return Err(Error::Comm { op, msg });
            }
            self.cv.wait_until(&mut st, deadline);
        }
    }

    /// Queues `t` from rank `from` for rank `to`.
    pub fn post(&self, from: usize, to: usize, t: Tensor) -> Result<()> {
        let mut st = self.state.lock();
        if let Some(why) = &st.broken {
            return Err(Error::Comm { op: "send", msg: why.clone() });
        }
        if let Some(how) = &st.gone[to] {
            let msg = format!("rank {from} cannot send to rank {to}: it {how}");
            return Err(Error::Comm { op: "send", msg });
        }
        st.mail.entry((from, to)).or_default().push_back(t);
        self.cv.notify_all();
        Ok(())
    }

    /// The next tensor rank `from` posted to rank `to`, waiting at most `timeout` for it.
    pub fn take(&self, from: usize, to: usize, timeout: Duration) -> Result<Tensor> {
        let deadline = Instant::now() + timeout;
        let mut st = self.state.lock();
        loop {
            if let Some(t) = st.mail.get_mut(&(from, to)).and_then(VecDeque::pop_front) {
                return Ok(t);
            }
            let failed = match (&st.broken, &st.gone[from]) {
                (Some(why), _) => Some(why.clone()),
                (None, Some(how)) => Some(format!("rank {from} {how} without sending to rank {to}")),
                _ if Instant::now() >= deadline => Some(format!(
                    "rank {to} timed out after {timeout:?} waiting for a message from rank {from}"
                )),
                _ => None,
            };
            if let Some(msg) = failed {
                return Err(Error::Comm { op: "recv", msg });
            }
            self.cv.wait_until(&mut st, deadline);
        }
    }

    /// Rank `rank` leaves: `how` says why ("was dropped"). Calls it has not joined fail.
    pub fn leave(&self, rank: usize, how: &str) {
        let mut st = self.state.lock();
        st.gone[rank] = Some(how.to_string());
        self.cv.notify_all();
    }

    /// Breaks the meeting: every call waiting or to come fails with `why`.
    pub fn break_with(&self, why: String) {
        let mut st = self.state.lock();
        st.broken.get_or_insert(why);
        self.cv.notify_all();
    }
}
