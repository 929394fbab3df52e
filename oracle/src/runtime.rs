//! The runtime under loom: every object has a *gate*, a `loom::sync::atomic::AtomicUsize`,
//! and every primitive is one read-modify-write of its object's gate followed by one call into
//! [`crate::data`]. Loom switches threads only at its own operations, so the call runs
//! without interruption: each primitive is one atomic step, as each PTX barrier instruction
//! is, and loom's partial-order reduction sees exactly which steps touch the same object.
//!
//! Why a counter per object and plain data rather than the barrier word itself in an atomic,
//! or a `Mutex`: the ghost state the rules need (who observed which phase, init visibility,
//! vector clocks) must change in the same step as the counts; a lock and an unlock would be
//! two scheduling points per step where one suffices (the number of executions loom explores
//! grows with them); and memory ordering is our vector clocks ([`crate::clock`]), not loom's.
//! Buffer accesses and a thread's own bookkeeping (copies, groups, fences) touch no gate: race
//! detection compares vector clocks, which does not depend on the order of the accesses.
//!
//! Waits: a thread whose wait cannot pass registers on the gate and parks
//! (`loom::thread::park`); a step that may let waiters pass unparks them, and they evaluate
//! their wait again (a new step). Loom sees a parked thread as blocked. The runtime detects a
//! deadlock itself: an actor about to park (and a thread leaving) checks whether every live
//! actor is blocked on a wait that cannot pass ([`Data::deadlocked`]), records `deadlock` and
//! halts, so the execution ends and loom goes on with the next one. Were that check ever
//! wrong, loom's own detection (every thread blocked) panics with "deadlock", which the
//! explorer classifies as a deadlock as well.
//!
//! Halting (a finding that ends the path, or a deadlock): the halting actor closes the gate of
//! its step at once, then every other gate, each with an operation on that gate, and unparks
//! everybody. A step that finds its gate closed ends its thread. Closing gate by gate keeps
//! loom's dependencies exact: a step on another object that runs after the halting step but
//! before its gate closes does not depend on the halting step, so it is equivalent to the same
//! step run before it, which the path allows.

use crate::data::{Data, Elections, Event, Findings, Halt, Res, Status, Wait};
use crate::prog::Prog;
use loom::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// The execution was halted (a path-ending finding or a deadlock); unwind the thread.
#[derive(Debug)]
pub struct Stopped;

pub type Step<T> = Result<T, Stopped>;

/// Gate 0: named barriers, the warp, leaving. Gate 1: the agent's queue. Gate 2 + b:
/// barrier instance b.
pub const RENDEZVOUS: usize = 0;
pub const AGENT: usize = 1;
pub fn bar_gate(b: usize) -> usize {
    2 + b
}

pub struct World {
    pub prog: Arc<Prog>,
    gates: Vec<AtomicUsize>,
    data: std::sync::Mutex<Data>,
    /// Each actor's loom thread, for unparking (the agent last).
    handles: std::sync::Mutex<Vec<Option<loom::thread::Thread>>>,
}

impl World {
    pub fn new(prog: Arc<Prog>, found: Findings, elections: Elections) -> World {
        let n = prog.threads as usize;
        let ngates = 2 + prog.nbars as usize;
        let mut data = Data::new(n, prog.nbars as usize, prog.nbufs as usize, ngates, found);
        data.elections = elections;
        if prog.needs_agent {
            data.agent = Status::Running;
        }
        World {
            prog,
            gates: (0..ngates).map(|_| AtomicUsize::new(0)).collect(),
            data: std::sync::Mutex::new(data),
            handles: std::sync::Mutex::new(vec![None; n + 1]),
        }
    }

    /// Called by each actor first: it may be unparked from now on.
    pub fn register(&self, actor: usize) {
        self.handles.lock().unwrap()[actor] = Some(loom::thread::current());
    }

    /// Plain data access. Never held across a loom operation, so it is never contended
    /// (loom runs one thread at a time and switches only at its own operations).
    fn data(&self) -> std::sync::MutexGuard<'_, Data> {
        self.data.lock().unwrap()
    }

    /// The scheduling point of a step on `gate`; the data, unless the gate is closed.
    fn enter(&self, gate: usize) -> Step<std::sync::MutexGuard<'_, Data>> {
        self.gates[gate].fetch_add(1, Relaxed);
        let d = self.data();
        if d.closed[gate] { Err(Stopped) } else { Ok(d) }
    }

    fn unpark(&self, actors: Vec<usize>) {
        let handles = self.handles.lock().unwrap().clone();
        for a in actors {
            if let Some(h) = &handles[a] {
                h.unpark();
            }
        }
    }

    /// End the execution after a halting step on `gate`: close every gate, wake everybody.
    fn halt(&self, gate: usize, mut d: std::sync::MutexGuard<'_, Data>) -> Stopped {
        d.closed[gate] = true;
        drop(d);
        for g in 0..self.gates.len() {
            if g != gate {
                self.gates[g].fetch_add(1, Relaxed);
                self.data().closed[g] = true;
            }
        }
        // Only actors parked on a gate: loom's own blocking (a `join`) must not be woken.
        let parked = self
            .data()
            .waiters
            .iter_mut()
            .flat_map(std::mem::take)
            .collect();
        self.unpark(parked);
        Stopped
    }

    /// Wake the actors parked on `gate`.
    fn wake(&self, gate: usize, d: &mut Data) -> Vec<usize> {
        std::mem::take(&mut d.waiters[gate])
    }

    /// One step on `gate`: `f` returns its result and whether the gate's waiters may now
    /// pass.
    pub fn step<R>(&self, gate: usize, f: impl FnOnce(&mut Data) -> Res<(R, bool)>) -> Step<R> {
        let mut d = self.enter(gate)?;
        match f(&mut d) {
            Ok((v, wake)) => {
                let woken = if wake {
                    self.wake(gate, &mut d)
                } else {
                    Vec::new()
                };
                drop(d);
                self.unpark(woken);
                Ok(v)
            }
            Err(Halt) => Err(self.halt(gate, d)),
        }
    }

    /// Bookkeeping that no other thread reads in order (buffer accesses, own copies and
    /// groups): not a step for loom.
    pub fn local<R>(&self, f: impl FnOnce(&mut Data) -> R) -> Step<R> {
        Ok(f(&mut self.data()))
    }

    /// A blocking step on `gate` of actor `who` (a thread, or the agent as the thread count):
    /// `f` is evaluated now and after every wake-up until it passes (`Ok`); otherwise it says
    /// what the actor waits for (`Err`), for the deadlock check. The `bool` says whether the
    /// gate's other waiters may now pass.
    pub fn block<R>(
        &self,
        who: usize,
        gate: usize,
        mut f: impl FnMut(&mut Data) -> Res<(Result<R, Wait>, bool)>,
    ) -> Step<R> {
        loop {
            let mut d = self.enter(gate)?;
            let (r, wake) = match f(&mut d) {
                Ok(x) => x,
                Err(Halt) => return Err(self.halt(gate, d)),
            };
            let woken = if wake {
                self.wake(gate, &mut d)
            } else {
                Vec::new()
            };
            let status = match r {
                Ok(_) => Status::Running,
                Err(wait) => Status::Blocked(wait),
            };
            if who < d.threads.len() {
                d.threads[who].status = status;
            } else {
                d.agent = status;
            }
            if r.is_err() {
                d.waiters[gate].push(who);
                if d.deadlocked() {
                    let _ = d.record_deadlock();
                    return Err(self.halt(gate, d));
                }
            }
            drop(d);
            self.unpark(woken);
            if let Ok(v) = r {
                return Ok(v);
            }
            loom::thread::park();
            // A rendezvous completes for all its waiters in the completing step, which marks
            // them running: nothing left to decide, so no new step. A barrier wait must look
            // at the barrier again (it may have moved on twice).
            let mut d = self.data();
            if who < d.threads.len()
                && d.threads[who].status == Status::Running
                && let Ok((Ok(v), _)) = f(&mut d)
            {
                return Ok(v);
            }
        }
    }

    /// Thread `t` exits or finishes.
    pub fn leave(&self, t: usize) -> Step<()> {
        let mut d = self.enter(RENDEZVOUS)?;
        let completed = d.leave(t);
        if d.deadlocked() {
            let _ = d.record_deadlock();
            return Err(self.halt(RENDEZVOUS, d));
        }
        let mut woken = if completed {
            self.wake(RENDEZVOUS, &mut d)
        } else {
            Vec::new()
        };
        let last = d.threads.iter().all(|t| t.status == Status::Done);
        drop(d);
        self.unpark(std::mem::take(&mut woken));
        if last && self.prog.needs_agent {
            // The agent may be waiting for the last thread to leave.
            self.step(AGENT, |_| Ok(((), true)))?;
        }
        Ok(())
    }

    /// Hand an asynchronous completion to the agent.
    pub fn post(&self, ev: Event) -> Step<()> {
        self.step(AGENT, |d| {
            d.queue.push_back(ev);
            Ok(((), true))
        })
    }

    /// The asynchronous agent: delivers TMA landings and cp.async arrive-ons one at a time,
    /// in the order they were issued, at whatever point of the other threads loom picks.
    pub fn agent(&self) -> Step<()> {
        let me = self.prog.threads as usize;
        self.register(me);
        loop {
            let ev = self.block(me, AGENT, |d| {
                if let Some(ev) = d.queue.pop_front() {
                    Ok((Ok(Some(ev)), false))
                } else if d.threads.iter().all(|t| t.status == Status::Done) {
                    Ok((Ok(None), false))
                } else {
                    Ok((Err(Wait::Agent), false))
                }
            })?;
            let Some(ev) = ev else {
                self.data().agent = Status::Done;
                return Ok(());
            };
            match ev {
                Event::Land {
                    bar,
                    bytes,
                    release,
                } => self.step(bar_gate(bar), |d| Ok(((), d.land(bar, bytes, &release)?)))?,
                Event::ArriveOn { bar, release } => self.step(bar_gate(bar), |d| {
                    Ok(((), d.arrive_on_async(bar, &release)?))
                })?,
            }
        }
    }
}
