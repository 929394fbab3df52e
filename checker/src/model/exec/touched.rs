//! Which threads a step changed, and what they were before it: every change of a thread's
//! state in the transition function goes through [`Touched::mark`], so a step's effect is
//! known without comparing states. The random schedules use it to re-examine only what a step
//! could have changed (enabledness, races, waits: `crate::model::walk`), and the end of a walk
//! step to prune only the kept accesses that the step could have made droppable
//! (`Exec::prune_kept_after`).

use super::super::state::{Mode, Shared, Thread, ThreadSet};

/// A changed thread as it was before the step (what the pruning of kept accesses reads of it).
#[derive(Clone, Copy, Debug)]
pub struct Before {
    pub thread: u32,
    pub pc: u32,
    pub mode: Mode,
    /// It had a `cp.async` write or a TMA-store read in flight.
    pub in_flight: bool,
}

/// The threads a step changed (copy on write went through [`Touched::mark`]).
#[derive(Clone, Debug, Default)]
pub struct Touched {
    set: ThreadSet,
    /// The changed threads with a change beyond the publications of their kept accesses
    /// ([`Touched::mark_pubs`]): the only ones whose kept accesses the pruning must weigh
    /// again for their own sake (a publication does not make an access droppable).
    beyond_pubs: ThreadSet,
    /// The changed threads with a change beyond whom their kept accesses are ordered before
    /// ([`Touched::mark_order`]): the only ones whose publications may have changed.
    beyond_order: ThreadSet,
    /// Each changed thread once, in the order of its first change, as it was before it.
    pub before: Vec<Before>,
    /// An in-flight event fired (and left the state).
    pub event_removed: bool,
}

impl Touched {
    /// Thread `t` of `threads`, to be changed (copied first if another state shares it).
    pub fn mark<'a>(&mut self, threads: &'a mut [Shared<Thread>], t: usize) -> &'a mut Thread {
        self.beyond_pubs.insert(t as u32);
        self.mark_pubs(threads, t)
    }

    /// [`Touched::mark`] for a change of the publications (`Access::pubs`) of thread `t`'s
    /// kept accesses only: the caller changes nothing else of the thread.
    pub fn mark_pubs<'a>(&mut self, threads: &'a mut [Shared<Thread>], t: usize) -> &'a mut Thread {
        self.beyond_order.insert(t as u32);
        self.changed(threads, t)
    }

    /// [`Touched::mark`] for a change of whom thread `t`'s kept accesses are ordered before
    /// (`Access::seen`, `Access::fenced_by`) only: the caller changes nothing else of the
    /// thread.
    pub fn mark_order<'a>(
        &mut self,
        threads: &'a mut [Shared<Thread>],
        t: usize,
    ) -> &'a mut Thread {
        self.beyond_pubs.insert(t as u32);
        self.changed(threads, t)
    }

    /// Enter thread `t` as changed and give it to be changed.
    fn changed<'a>(&mut self, threads: &'a mut [Shared<Thread>], t: usize) -> &'a mut Thread {
        if self.set.insert(t as u32) {
            let th = &threads[t];
            self.before.push(Before {
                thread: t as u32,
                pc: th.pc,
                mode: th.mode,
                in_flight: !th.cp.is_empty() || !th.bulk.is_empty(),
            });
        }
        Shared::make_mut(&mut threads[t])
    }

    pub fn contains(&self, t: u32) -> bool {
        self.set.contains(t)
    }

    pub fn threads(&self) -> &ThreadSet {
        &self.set
    }

    /// The changed threads less those whose publications alone changed.
    pub fn beyond_pubs(&self) -> &ThreadSet {
        &self.beyond_pubs
    }

    /// The changed threads less those whose accesses' `seen` and `fenced_by` alone changed.
    pub fn beyond_order(&self) -> &ThreadSet {
        &self.beyond_order
    }
}
