//! Polls of several barriers.
//!
//! A thread that needs two barriers before it can go on may test both and loop until both are
//! ready (TensorRT-LLM's tinygemm2: `w = try_wait(W); a = try_wait(A); while (!w || !a) { w =
//! try_wait(W); a = try_wait(A); }`, or a lowered `let w = test_wait ...; let a = test_wait ...;
//! if w == 0 || a == 0 { wait W; wait A }`). Neither test is a wait loop of its own: the false
//! result of the first leads to a test of the other barrier. The executor runs a thread
//! concretely and cannot pick one outcome of a test (that would be a guess), so a poll is
//! recognised as a whole and written in the language's own form:
//!
//! ```text
//! let ok0 = test_wait W parity P; let ok1 = test_wait A parity Q; if ok0 == 0 || ok1 == 0 { wait W parity P; wait A parity Q }
//! ```
//!
//! which the checker runs with both outcomes of every test. It is recognised when:
//!
//! 1. with every test taken as passed, the thread makes the *first trip* (one or more tests, on
//!    barriers of the set S, at most one phase per barrier) and then reaches the *stop*: the
//!    first instruction that does anything else (an access, an arrive, a barrier, an exit, a
//!    warp collective);
//! 2. following every outcome of every test (and both ways of a branch on a value the executor
//!    does not know), every path makes the first trip's tests in the same order first, then only
//!    tests of S for the same phases and computation, and either reaches the stop with the last
//!    test of each barrier of S passed, or reaches a test in a state that a path was in before
//!    (a loop that polls on, or a path that goes on as another one does; the outcomes that
//!    leave a loop are followed too).
//!
//! So the thread goes past the stop exactly when every barrier of S has been seen complete, and
//! before that it observes nothing but those barriers: when all first tests pass, the protocol's
//! `if` is skipped, as the thread skips its loop; when one fails, the thread goes on polling
//! until all are complete, which the `wait`s say (a wait on a phase the thread has just seen
//! complete, with nothing done in between, returns at once and is legal, docs/semantics.md §2.8
//! "Re-waiting", so re-waiting a barrier whose first test passed changes nothing). A register
//! whose value at the stop differs between the paths (the tests' results, a counter of the
//! polling) is unknown from there on: a branch or an address that depends on it is an error.

use super::{Exec, Flow, Probe, ProbeFail, StepErr, Th, WaitOn};
use crate::events::{Ev, SAddr};
use crate::value::{Val, Why};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// The most tests in a poll's first trip: its paths are followed for every outcome (2^n).
const MAX_TESTS: usize = 8;
/// Instructions followed on all the paths of one poll together.
const BUDGET: u64 = 200_000;

/// A thread's state at a test of the poll ([`super::LoopState`], the tests' last results and
/// how much of the first trip is made): a path that meets it again polls on in a loop.
type Seen = (super::LoopState, Vec<Option<bool>>, usize);

/// The states in which a poll's paths reach its stop: the first one, and where the others
/// differ from it.
struct Ends {
    first: Th,
    regs_differ: Vec<bool>,
    /// Local words (address, size) that differ or that not every path has.
    local_differ: BTreeMap<u64, u32>,
    carry_differs: bool,
    steps: u64,
}

impl Ends {
    fn new(first: Th) -> Self {
        Ends {
            regs_differ: vec![false; first.regs.len()],
            local_differ: BTreeMap::new(),
            carry_differs: false,
            steps: first.steps,
            first,
        }
    }

    fn add(&mut self, t: &Th) {
        for ((d, a), b) in self
            .regs_differ
            .iter_mut()
            .zip(&self.first.regs)
            .zip(&t.regs)
        {
            *d |= a != b;
        }
        let keys: BTreeSet<u64> = self
            .first
            .local
            .keys()
            .chain(t.local.keys())
            .copied()
            .collect();
        for k in keys {
            let (a, b) = (self.first.local.get(&k), t.local.get(&k));
            if a != b {
                let size = a.or(b).map_or(8, |x| x.1);
                self.local_differ.insert(k, size);
            }
        }
        self.carry_differs |= self.first.carry != t.carry;
        self.steps = self.steps.max(t.steps);
    }
}

#[derive(Clone)]
struct Path {
    th: Th,
    /// The first trip's tests this path has made.
    first: usize,
    /// Per barrier of the poll: the result of its last test on this path.
    last: Vec<Option<bool>>,
}

impl Exec<'_> {
    /// `th` is at a `try_wait`/`test_wait` that is not a wait loop of its own: if it starts a
    /// poll (the module comment), record the poll and go on at its stop with the state that
    /// all its paths agree on.
    pub(super) fn poll(&mut self, th: &mut Th) -> Result<Flow, ProbeFail> {
        let start_line = self.instr(th.pc).line;
        let (trip, stop) = self.poll_first_trip(th)?;
        let mut set: Vec<(SAddr, u64)> = Vec::new();
        for &(bar, par) in &trip {
            match set.iter().find(|(b, _)| *b == bar) {
                Some(&(_, p)) if p != par => {
                    return Err(ProbeFail(
                        "tests of one barrier for both parities in one poll".into(),
                    ));
                }
                Some(_) => {}
                None => set.push((bar, par)),
            }
        }
        let ends = self.poll_paths(th, &trip, &set, stop)?;
        if ends.carry_differs {
            return Err(ProbeFail(
                "a carry flag that differs between the poll's outcomes".into(),
            ));
        }
        // What the outcomes do not agree on is unknown from here on.
        let why = self.whys.len() as u32;
        self.whys.push(Why {
            what: format!(
                "a value that depends on the outcomes of the poll of {} barrier(s) at PTX line \
                 {start_line}",
                set.len()
            ),
            line: start_line,
            fix: None,
        });
        let mut regs = ends.first.regs;
        for (v, differs) in regs.iter_mut().zip(&ends.regs_differ) {
            if *differs {
                *v = Val::U(why);
            }
        }
        let mut local = ends.first.local;
        for (k, size) in ends.local_differ {
            local.insert(k, (Val::U(why), size));
        }
        self.event(th, Ev::Poll { tests: trip })
            .map_err(|_| ProbeFail("an event where none may be".into()))?;
        th.regs = regs;
        th.local = local;
        th.steps = ends.steps;
        Ok(Flow::Jump(stop))
    }

    /// The path on which every test passes: the first trip's tests `(barrier, parity bit)` and
    /// the stop (the pc of the first instruction that does anything but test and compute).
    fn poll_first_trip(&mut self, th: &Th) -> Result<(Vec<(SAddr, u64)>, usize), ProbeFail> {
        let mut t = th.clone();
        t.events.clear();
        t.probe = Some(Probe::Poll);
        let mut trip = Vec::new();
        for _ in 0..BUDGET {
            if t.pc >= self.f.instrs.len() {
                return Ok((trip, t.pc));
            }
            let at = t.pc;
            match self.step_guarded(&mut t) {
                Ok(Flow::Next) => t.pc += 1,
                Ok(Flow::Jump(x)) => t.pc = x,
                Ok(Flow::Test {
                    bar,
                    on,
                    cluster_scope,
                }) => {
                    let par = self.poll_parity(&on, cluster_scope, at)?;
                    trip.push((bar, par));
                    if trip.len() > MAX_TESTS {
                        return Err(ProbeFail(format!(
                            "more than {MAX_TESTS} tests before the thread goes on"
                        )));
                    }
                    let d = self.instr(at).operands[0].clone();
                    self.set(&mut t, &d, Val::K(1), 1);
                    t.pc += 1;
                }
                // The poll ends at the first instruction that does something else.
                Ok(Flow::Exit | Flow::Coll | Flow::Block) | Err(StepErr::Probe(_)) => {
                    return Ok((trip, at));
                }
                Ok(Flow::ProbeHit(_)) => unreachable!("a poll's probe"),
                Err(StepErr::Err(e)) => {
                    return Err(ProbeFail(format!(
                        "an instruction it cannot follow at PTX line {} ({})",
                        e.line.unwrap_or(0),
                        e.message
                    )));
                }
            }
        }
        Err(ProbeFail(format!(
            "a path on which every test passes and that does not go on within {BUDGET} \
             instructions"
        )))
    }

    /// A poll's tests are parity tests at CTA scope (the language's `test_wait`).
    fn poll_parity(&self, on: &WaitOn, cluster_scope: bool, pc: usize) -> Result<u64, ProbeFail> {
        let line = self.instr(pc).line;
        match on {
            WaitOn::Parity(p) if !cluster_scope => Ok(p & 1),
            WaitOn::Parity(_) => Err(ProbeFail(format!(
                "a cluster-scope test at PTX line {line} (a poll is followed for tests at CTA \
                 scope)"
            ))),
            WaitOn::Token(_) => Err(ProbeFail(format!(
                "a test of a token at PTX line {line} (a poll is followed for parity tests)"
            ))),
        }
    }

    /// Every path from the poll's first test, for every outcome of every test: the states in
    /// which they reach the stop.
    fn poll_paths(
        &mut self,
        th: &Th,
        trip: &[(SAddr, u64)],
        set: &[(SAddr, u64)],
        stop: usize,
    ) -> Result<Ends, ProbeFail> {
        let mut root = th.clone();
        root.events.clear();
        root.probe = Some(Probe::Poll);
        let mut stack = vec![Path {
            th: root,
            first: 0,
            last: vec![None; set.len()],
        }];
        // States at the poll's tests, of every path: a path that reaches one again ends there
        // (it polls on in a loop, or goes on as another path already does).
        let mut seen: HashSet<Seen> = HashSet::new();
        let mut ends: Option<Ends> = None;
        let mut budget = BUDGET;
        while let Some(mut p) = stack.pop() {
            loop {
                let pc = p.th.pc;
                if pc == stop {
                    if p.first < trip.len() {
                        return Err(ProbeFail(format!(
                            "the instruction where the poll ends (PTX line {}) before the first \
                             trip's tests are made",
                            self.line_at(stop)
                        )));
                    }
                    if let Some(i) = p.last.iter().position(|r| *r != Some(true)) {
                        let at = trip.iter().position(|(b, _)| *b == set[i].0).unwrap_or(0);
                        return Err(ProbeFail(format!(
                            "PTX line {} without having seen the barrier of test {} of the poll \
                             complete (its last test failed)",
                            self.line_at(stop),
                            at + 1
                        )));
                    }
                    match ends.as_mut() {
                        None => ends = Some(Ends::new(p.th)),
                        Some(e) => e.add(&p.th),
                    }
                    break;
                }
                if budget == 0 {
                    return Err(ProbeFail(format!(
                        "a path that does not end within {BUDGET} instructions"
                    )));
                }
                budget -= 1;
                if pc >= self.f.instrs.len() {
                    return Err(ProbeFail("the end of the kernel".into()));
                }
                let ins = self.instr(pc);
                if let Some((r, neg)) = ins.guard
                    && let Val::U(_) = p.th.regs[r as usize]
                {
                    // Both ways.
                    let mut other = p.clone();
                    other.th.regs[r as usize] = Val::K(neg as u64);
                    stack.push(other);
                    p.th.regs[r as usize] = Val::K(!neg as u64);
                }
                match self.step_guarded(&mut p.th) {
                    Ok(Flow::Next) => p.th.pc += 1,
                    Ok(Flow::Jump(x)) => p.th.pc = x,
                    Ok(Flow::Test {
                        bar,
                        on,
                        cluster_scope,
                    }) => {
                        let par = self.poll_parity(&on, cluster_scope, pc)?;
                        let Some(i) = set.iter().position(|&(b, _)| b == bar) else {
                            return Err(ProbeFail(format!(
                                "a test of a barrier that the first trip does not test, at PTX \
                                 line {}",
                                ins.line
                            )));
                        };
                        if set[i].1 != par {
                            return Err(ProbeFail(format!(
                                "a test for the other phase of a barrier of the poll, at PTX \
                                 line {}",
                                ins.line
                            )));
                        }
                        if p.first < trip.len() {
                            if trip[p.first] != (bar, par) {
                                return Err(ProbeFail(format!(
                                    "a first trip whose tests depend on the outcomes (PTX line \
                                     {})",
                                    ins.line
                                )));
                            }
                            p.first += 1;
                        }
                        let here: Seen = (super::loop_state(pc, &p.th), p.last.clone(), p.first);
                        if !seen.insert(here) {
                            break; // polls on: the same state as before
                        }
                        let d = ins.operands[0].clone();
                        let mut failed = p.clone();
                        self.set(&mut failed.th, &d, Val::K(0), 1);
                        failed.last[i] = Some(false);
                        failed.th.pc += 1;
                        stack.push(failed);
                        self.set(&mut p.th, &d, Val::K(1), 1);
                        p.last[i] = Some(true);
                        p.th.pc += 1;
                    }
                    Ok(Flow::Exit) => {
                        return Err(ProbeFail(format!("exit at PTX line {}", ins.line)));
                    }
                    Ok(Flow::Coll | Flow::Block) | Err(StepErr::Probe(_)) => {
                        return Err(ProbeFail(format!(
                            "`{}` at PTX line {} before every barrier of the poll is complete",
                            ins.text, ins.line
                        )));
                    }
                    Ok(Flow::ProbeHit(_)) => unreachable!("a poll's probe"),
                    Err(StepErr::Err(e)) => {
                        return Err(ProbeFail(format!(
                            "an instruction it cannot follow at PTX line {} ({})",
                            e.line.unwrap_or(0),
                            e.message
                        )));
                    }
                }
            }
        }
        ends.ok_or_else(|| ProbeFail("no path that goes on".into()))
    }

    fn line_at(&self, pc: usize) -> u32 {
        self.f.instrs.get(pc).map_or(0, |i| i.line)
    }
}
