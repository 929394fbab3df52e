//! Vector clocks over *actors*: the protocol's threads (`0..n`) and, after them, one actor per
//! asynchronous copy (TMA, `tma_store`, `cp_async`), numbered as they are issued.
//!
//! Why our own clocks and not loom's causality tracking (`loom::cell::UnsafeCell`): the
//! barrier semantics the checker implements are not C++ release/acquire on one atomic word.
//! A wait for phase `k` acquires the arrivals of phases up to `k` only (with atomics a load
//! would also acquire arrivals of the next phase that it happens to read), and a TMA
//! completion releases the copy's own bytes but not its issuer's earlier writes (semantics.md
//! §2.11): that is not transitive, so no happens-before of loom's can express it. A copy actor
//! starts from its issuer's clock (the copy is ordered after what the issuer saw) but
//! releases only its own component.

/// A vector clock; missing entries are 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Clock(Vec<u32>);

impl Clock {
    pub fn get(&self, actor: usize) -> u32 {
        self.0.get(actor).copied().unwrap_or(0)
    }

    pub fn set(&mut self, actor: usize, v: u32) {
        if self.0.len() <= actor {
            self.0.resize(actor + 1, 0);
        }
        self.0[actor] = v;
    }

    pub fn tick(&mut self, actor: usize) {
        let v = self.get(actor) + 1;
        self.set(actor, v);
    }

    pub fn join(&mut self, other: &Clock) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a = (*a).max(*b);
        }
    }

    /// The clock that knows only `actor` up to `v` (what a copy's completion releases).
    pub fn only(actor: usize, v: u32) -> Clock {
        let mut c = Clock::default();
        c.set(actor, v);
        c
    }
}
