//! One random schedule of the portfolio (`crate::hunt`), stepped in place: a walk keeps one
//! state and the actions it took, never a copy of the state per step, and after each step it
//! examines again only what the step could have changed. At 288 threads a step used to cost
//! about 150 us, most of it spent on the threads and accesses the step did not touch: the copy
//! and drop of the whole state, the pruning of every kept access, every thread's enabledness
//! and every pair of accesses (issue 24).
//!
//! What a step changed is known exactly: every change of a thread goes through
//! `exec::Touched::mark`, and the shared part (barriers, cluster phases, released globals, the
//! events) is compared with its copy from before the step, which is small. Then:
//! - a thread's enabledness (and its parity-wait check) is a function of its own state and the
//!   one shared object [`exec::needs`] names: it is evaluated again when either changed;
//! - a pair of accesses gives the same race findings as at the previous state unless one side
//!   changed (`race::check_changed`): a finding is reported at the first state of the walk
//!   that has it, which is the one the hunt keeps (the shortest path), and not again;
//! - the kept accesses are pruned where the step could have made them droppable
//!   (`Exec::prune_kept_after`).
//!
//! `walks_agree_with_full_steps` (checker/tests/walks.rs) runs walks both ways and compares
//! every state, action list and first finding.

use super::exec::{self, Needs};
use super::state::{Bar, Event, State};
use super::{MFinding, PhaseModel, race, stuck};
use crate::explore::Step;

/// A walk's state and what its last steps changed.
pub struct Walk<'m, 'p> {
    m: &'m PhaseModel<'p>,
    state: State,
    /// Per thread: enabled in `state` (valid when `enabled_fresh`).
    enabled: Vec<bool>,
    /// Per thread: what its enabledness reads of the shared state.
    needs: Vec<Needs>,
    enabled_fresh: bool,
    /// Since the last [`Walk::check`]: per thread, its own state changed.
    changed: Vec<bool>,
    /// Since the last check: per thread, the shared object it needs changed.
    woken: Vec<bool>,
    /// Examine everything at the next check (the first state; a global was released).
    all: bool,
    /// The events at the last check (those not among them are new).
    checked_events: Vec<Event>,
    accesses: race::WalkAccesses,
    /// Who may still conflict with each kept access, and where kept accesses are published,
    /// kept up to date step by step (`exec::WalkIndex`).
    index: exec::WalkIndex,
    /// Copies of the shared state before a step, reused.
    bars_before: Vec<Bar>,
}

impl<'m, 'p> Walk<'m, 'p> {
    pub fn new(m: &'m PhaseModel<'p>, state: State) -> Self {
        let n = m.nthreads() as usize;
        Walk {
            m,
            state,
            enabled: vec![false; n],
            needs: vec![Needs::Nothing; n],
            enabled_fresh: false,
            changed: vec![true; n],
            woken: vec![false; n],
            all: true,
            checked_events: Vec::new(),
            accesses: race::WalkAccesses::default(),
            index: exec::WalkIndex::default(),
            bars_before: Vec::new(),
        }
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    pub fn model(&self) -> &'m PhaseModel<'p> {
        self.m
    }

    fn refresh(&mut self) {
        if self.enabled_fresh {
            return;
        }
        let (m, s) = (self.m, &self.state);
        for t in 0..m.nthreads() {
            let i = t as usize;
            if self.changed[i] {
                self.needs[i] = exec::needs(m, s, t);
            }
            if self.changed[i] || self.woken[i] {
                self.enabled[i] = exec::enabled(m, s, t);
            }
        }
        self.enabled_fresh = true;
    }

    /// The enabled actions, as `exec::actions` gives them without symmetry.
    pub fn actions(&mut self, out: &mut Vec<u32>) {
        self.refresh();
        let n = self.m.nthreads();
        out.extend((0..n).filter(|&t| self.enabled[t as usize]));
        out.extend((0..self.state.events.len() as u32).map(|i| n + i));
    }

    /// Findings of the current state that the walk's previous checked state did not have
    /// (`actions`: the enabled actions; none left with a live thread is a deadlock).
    pub fn check(&mut self, actions: &[u32], found: &mut Vec<MFinding>) {
        self.refresh();
        let (m, s) = (self.m, &self.state);
        // An event is new unless the last checked state had as many copies of it.
        let count = |v: &[Event], e: &Event| v.iter().filter(|x| *x == e).count();
        let events: Vec<bool> = s
            .events
            .iter()
            .map(|e| count(&s.events, e) > count(&self.checked_events, e))
            .collect();
        if self.all {
            race::check_changed(m, s, &mut self.accesses, None, found);
        } else {
            let changed = race::Changed {
                threads: &self.changed,
                events: &events,
            };
            race::check_changed(m, s, &mut self.accesses, Some(&changed), found);
        }
        let (all, changed, woken) = (self.all, &self.changed, &self.woken);
        exec::check_waits_of(
            m,
            s,
            |t| all || changed[t as usize] || woken[t as usize],
            found,
        );
        if actions.is_empty() && s.threads.iter().any(|t| t.mode.live()) {
            stuck::deadlock(m, s, found);
        }
        self.all = false;
        self.changed.iter_mut().for_each(|c| *c = false);
        self.woken.iter_mut().for_each(|c| *c = false);
        self.checked_events.clone_from(&s.events);
    }

    /// Take `action`; findings of the step go to `found`. `false`: the path ends here.
    pub fn step(&mut self, action: u32, found: &mut Vec<MFinding>) -> bool {
        self.bars_before.clone_from(&self.state.bars);
        let cluster_before = self.state.cluster_phase.clone();
        let released_before = self.state.released.clone();
        let (step, touched) = self
            .m
            .step_walk(&mut self.state, action, found, &mut self.index);
        self.enabled_fresh = false;
        for t in touched.threads().iter() {
            self.changed[t as usize] = true;
        }
        let s = &self.state;
        if s.released != released_before {
            self.all = true;
        }
        let bar_changed = |b: u32| s.bars[b as usize] != self.bars_before[b as usize];
        if s.bars != self.bars_before
            || s.cluster_phase != cluster_before
            || s.released != released_before
        {
            for (t, need) in self.needs.iter().enumerate() {
                let woken = match *need {
                    Needs::Nothing => false,
                    Needs::Bar(b) => bar_changed(b),
                    Needs::Cluster(k) => s.cluster_phase[k as usize] != cluster_before[k as usize],
                    Needs::Released(x) => s.released[x as usize] != released_before[x as usize],
                };
                self.woken[t] |= woken;
            }
        }
        if self.all {
            self.changed.iter_mut().for_each(|c| *c = true);
        }
        matches!(step, Step::Next(()))
    }
}
