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
    /// Each changed thread once, in the order of its first change, as it was before it.
    pub before: Vec<Before>,
    /// An in-flight event fired (and left the state).
    pub event_removed: bool,
}

impl Touched {
    /// Thread `t` of `threads`, to be changed (copied first if another state shares it).
    pub fn mark<'a>(&mut self, threads: &'a mut [Shared<Thread>], t: usize) -> &'a mut Thread {
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
}
