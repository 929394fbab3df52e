//! Happens-before of kept accesses (docs/design.md, "Races"): which threads of the block are
//! ordered after each access that a later access may still race with.
//!
//! A release publishes every kept access its thread knows (its own, and those whose `seen` has
//! it) into the synchronization object it releases into; an acquire from that object adds the
//! acquiring thread to the `seen` of what was published there by a release it synchronizes
//! with. That is the transitive closure of release → acquire for the kept accesses only, so a
//! release reaches exactly the threads that acquire it, directly or through others, and not
//! every later accessor (a use of a whole-block barrier completed by exits, a wait on a barrier
//! that only a TMA completion signals).

use super::walk_index::Key;
use super::*;
use std::collections::BTreeMap;

/// What an update of kept accesses changes of them ([`Exec::update_kept`]).
#[derive(Clone, Copy)]
enum Only {
    /// Their publications (`Access::pubs`) and nothing else.
    Pubs,
    /// Whom they are ordered before (`Access::seen`, `Access::fenced_by`) and nothing else.
    Order,
    /// More than one part.
    Not,
}

impl Exec<'_, '_> {
    /// Apply `change` to every kept access (of thread `u`) that `touches` selects; a thread
    /// state is copied (copy on write) only when one of its accesses is selected.
    /// `some`: in a walk, the threads (ascending) that its index says may have an access that
    /// `touches` selects (`WalkIndex::published_into`); `None`: every thread.
    /// `only`: what `change` changes of an access, if only one of its parts
    /// (`Touched::mark_pubs`, `Touched::mark_order`).
    fn update_kept(
        &mut self,
        some: Option<Vec<u32>>,
        only: Only,
        touches: impl Fn(usize, &Access) -> bool,
        mut change: impl FnMut(usize, &mut Access),
    ) {
        let every = 0..self.state.threads.len() as u32;
        let threads: Box<dyn Iterator<Item = u32>> = match some {
            Some(some) => Box::new(some.into_iter()),
            None => Box::new(every),
        };
        for u in threads {
            let u = u as usize;
            if !self.state.threads[u].acc.iter().any(|a| touches(u, a)) {
                continue;
            }
            let threads = &mut self.state.threads;
            let th = match only {
                Only::Pubs => self.touched.mark_pubs(threads, u),
                Only::Order => self.touched.mark_order(threads, u),
                Only::Not => self.touched.mark(threads, u),
            };
            for a in th.acc.iter_mut() {
                if touches(u, a) {
                    change(u, a);
                }
            }
        }
    }

    /// `t` releases into `obj` at scope `scope`: the kept accesses it knows are published
    /// there. `done`: the release is visible to acquires at once (a flag's `store_release`).
    pub(super) fn publish(&mut self, t: u32, obj: SyncObj, scope: Level, done: bool) {
        let p = Pub {
            obj,
            from: self.m.block_of(t),
            scope,
            done,
        };
        self.update_kept(
            None,
            Only::Pubs,
            |u, a| (u == t as usize || a.ordered_before(t)) && !a.pubs.iter().any(|q| q.covers(&p)),
            |_, a| {
                a.publish(p);
            },
        );
    }

    /// `t` stores a release into flag `obj`: an acquire that reads this value synchronizes with
    /// this release only, not with the earlier stores it overwrote (PTX "Release and Acquire
    /// Patterns": the acquire observes the write it reads), so the earlier publications into
    /// the flag go, and the kept accesses `t` knows are published at `scope`.
    pub(super) fn publish_flag(&mut self, t: u32, obj: SyncObj, scope: Level) {
        let some = self.published_into(obj);
        self.update_kept(
            some,
            Only::Pubs,
            |_, a| a.pubs.iter().any(|q| q.obj == obj),
            |_, a| a.pubs.retain(|q| q.obj != obj),
        );
        self.publish(t, obj, scope, true);
    }

    /// A phase of `obj` (an mbarrier, the cluster barrier) completed: the releases into it
    /// become visible to the acquires that observe it.
    pub(super) fn complete_pubs(&mut self, obj: SyncObj) {
        let some = self.published_into(obj);
        self.update_kept(
            some,
            Only::Pubs,
            |_, a| a.pubs.iter().any(|p| p.obj == obj && !p.done),
            |_, a| a.complete(obj),
        );
    }

    /// `t` acquires from `obj` at scope `scope` (a wait that returned): it happens after every
    /// kept access published there by a completed release that is morally strong with it.
    /// PTX "Morally strong operations": "Two operations are said to be morally strong relative
    /// to each other if they satisfy all of the following conditions: ... each operation is
    /// strong and specifies a scope that includes the thread executing the other operation"
    /// (for an mbarrier, the object is in the waiter's CTA; the arrive chain on it is one
    /// atomic object, so only the arrive's and the wait's scopes are weighed, as the
    /// memory-model oracle does).
    pub(super) fn acquire(&mut self, t: u32, obj: SyncObj, scope: Level) {
        let m = self.m;
        let here = m.block_of(t);
        let strong = |p: &Pub| {
            p.obj == obj && p.done && {
                let d = m.block_distance(p.from, here);
                d <= p.scope && d <= scope
            }
        };
        let some = self.published_into(obj);
        self.update_kept(
            some,
            Only::Order,
            |u, a| u != t as usize && !a.ordered_before(t) && a.pubs.iter().any(strong),
            |_, a| {
                a.seen.insert(t);
            },
        );
    }

    /// `t` runs `fence_proxy_async`: the generic accesses of other threads that `t` already
    /// happens after now have a proxy fence on their causality path to `t`'s later async
    /// accesses (semantics.md §6.3, "Where the fence may stand").
    pub(super) fn fence_observed(&mut self, t: u32) {
        self.update_kept(
            None,
            Only::Order,
            |u, a| {
                u != t as usize
                    && !a.kind.is_async()
                    && a.ordered_before(t)
                    && !a.fenced_by.contains(t)
            },
            |_, a| {
                a.fenced_by.insert(t);
            },
        );
    }

    /// A use of named barrier `slot` completed: the releases of its arrivals go to the threads
    /// that synced in it (`waiting`), and the next use starts with none.
    pub(super) fn hand_over_named(&mut self, slot: u32, waiting: &[u32]) {
        let obj = SyncObj::Named(slot);
        let some = self.published_into(obj);
        self.update_kept(
            some,
            Only::Not,
            |_, a| a.pubs.iter().any(|q| q.obj == obj),
            |u, a| {
                a.pubs.retain(|p| p.obj != obj);
                for &w in waiting {
                    if w as usize != u {
                        a.seen.insert(w);
                    }
                }
            },
        );
    }

    /// A warp collective completed: its lanes synchronize with each other, so each of them
    /// happens after every kept access that one of them knew.
    pub(super) fn join(&mut self, lanes: &[u32]) {
        // As sets: some lane is `u` or knows the access, and some lane other than `u` does not
        // (a word or two of bits per access instead of two passes over the lanes).
        let mut set = ThreadSet::default();
        for &l in lanes {
            set.insert(l);
        }
        self.update_kept(
            None,
            Only::Order,
            |u, a| {
                (set.contains(u as u32) || set.intersects(&a.seen))
                    && set.any_outside(&a.seen, u as u32)
            },
            |u, a| {
                for &l in lanes {
                    if l as usize != u {
                        a.seen.insert(l);
                    }
                }
            },
        );
    }

    /// Forget the kept accesses that can no longer matter: every live thread of the block that
    /// may still make a conflicting access (from its current statement on, or through a copy
    /// in flight) happens after it, it was released far enough for the other blocks that may
    /// touch it, and no proxy fence is owed. Whether an access can be dropped depends on the
    /// state alone and only grows along a path (threads move on, exit, acquire), so dropping it
    /// at the end of every step keeps states canonical and commutes with the reductions.
    pub fn prune_kept(&mut self) {
        let all: Vec<u32> = (0..self.state.threads.len() as u32).collect();
        self.prune_kept_of(&all, |_, _| true);
    }

    /// [`Self::prune_kept`] at the end of a step from a state that was pruned itself: only the
    /// kept accesses that this step could have made droppable are weighed again. An access is
    /// kept while some thread that may still make a conflicting access is not ordered after
    /// it (a *witness*). A thread's witness-ness depends on its own state (live, what its code
    /// can still reach, its copies in flight) and the in-flight events; what an access knows
    /// (`seen`, fences, publications) is its thread's state. So an access of a thread the
    /// step did not change stays kept unless the step took a witness away: a changed thread
    /// that is not in its `seen` and may have stopped being able to conflict (it ended, its
    /// reach changed, or it had a copy in flight), or a fired event (then all are weighed).
    /// The same result as [`Self::prune_kept`] (checked by `walks_agree_with_full_steps`).
    pub fn prune_kept_after(&mut self) {
        if self.touched.event_removed {
            return self.prune_kept();
        }
        let m = self.m;
        let lost: Vec<Before> = self
            .touched
            .before
            .iter()
            .filter(|b| {
                let th = &self.state.threads[b.thread as usize];
                let reach = &m.kernels[m.threads[b.thread as usize].kernel as usize].reach;
                let at = |pc: u32| {
                    let pc = pc as usize;
                    (pc < reach.writes.len()).then(|| (&reach.writes[pc], &reach.reads[pc]))
                };
                (b.mode.live() && !th.mode.live())
                    || b.in_flight
                    || (b.pc != th.pc && at(b.pc) != at(th.pc))
            })
            .copied()
            .collect();
        // A thread whose publications alone changed keeps what it kept (the state before the
        // step was pruned): its accesses are weighed again only for a lost witness.
        let touched = self.touched.beyond_pubs().clone();
        if lost.is_empty() {
            let changed: Vec<u32> = touched.iter().collect();
            self.prune_kept_of(&changed, |_, _| true);
        } else {
            // A changed thread stopped witnessing access `a` only if, before the step, it could
            // reach an access conflicting with `a` (or had a copy in flight) and now cannot.
            let now: Vec<(u32, Mode)> = lost
                .iter()
                .map(|b| {
                    let th = &self.state.threads[b.thread as usize];
                    (th.pc, th.mode)
                })
                .collect();
            // Per buffer instance and whether the kept access writes (`2 * buf + write`): the
            // lost threads that were witnesses of such an access. Whether one was depends on
            // its kernel, block, statement and mode before and after the step (and a copy in
            // flight), which the lost threads of one barrier mostly share: computed once per
            // such place.
            let nbufs = m.buf_obj.len();
            let mut witnesses = vec![ThreadSet::default(); 2 * nbufs];
            // Kernel, block, statement and liveness before, after, a copy in flight.
            type Place = (u32, u32, u32, bool, u32, bool, bool);
            let mut places: BTreeMap<Place, Vec<bool>> = BTreeMap::new();
            for (b, &(pc, mode)) in lost.iter().zip(&now) {
                let y = b.thread;
                let place = (
                    m.threads[y as usize].kernel,
                    m.block_of(y),
                    b.pc,
                    b.mode.live(),
                    pc,
                    mode.live(),
                    b.in_flight,
                );
                let was = places.entry(place).or_insert_with(|| {
                    (0..2 * nbufs)
                        .map(|k| {
                            let (buf, write) = ((k / 2) as u32, k % 2 == 1);
                            b.in_flight
                                || (reaches_conflict(m, y, b.pc, b.mode, buf, write)
                                    && !reaches_conflict(m, y, pc, mode, buf, write))
                        })
                        .collect()
                });
                for (k, _) in was.iter().enumerate().filter(|(_, w)| **w) {
                    witnesses[k].insert(y);
                }
            }
            let all: Vec<u32> = (0..self.state.threads.len() as u32).collect();
            self.prune_kept_of(&all, |u, a| {
                touched.contains(u)
                    || witnesses[2 * a.buf as usize + usize::from(a.kind.is_write())]
                        .any_outside(&a.seen, u)
            });
        }
    }

    /// Prune the kept accesses of `threads` (ascending) that `weigh` selects; the others stay.
    fn prune_kept_of(&mut self, threads: &[u32], weigh: impl Fn(u32, &Access) -> bool) {
        if threads
            .iter()
            .all(|&u| self.state.threads[u as usize].acc.is_empty())
        {
            return;
        }
        // Who may still conflict with a kept access, asked for once per prune (a 384-thread
        // kernel keeps well over a thousand accesses), and in a walk kept from step to step
        // (`walk_index.rs`): by the static reach of their code, per (block, buffer object, whether
        // the instance is the block's own, the access writes); by their copies in flight, per
        // buffer instance, only where the reach leaves none out.
        let mut by_key: BTreeMap<Key, ThreadSet> = BTreeMap::new();
        // Whether any copy is in flight: asked for only when the reach alone keeps nothing (a
        // look at every thread of the kernel; the pruning does not change copies, so once is
        // enough).
        let mut in_flight: Option<bool> = None;
        for &u in threads {
            if self.state.threads[u as usize].acc.is_empty() {
                continue;
            }
            let block = self.m.block_of(u);
            let n = self.state.threads[u as usize].acc.len();
            let mut keep = Vec::with_capacity(n);
            for i in 0..n {
                let a = &self.state.threads[u as usize].acc[i];
                if !weigh(u, a) {
                    keep.push(true);
                    continue;
                }
                let (buf, write) = (a.buf, a.kind.is_write());
                let own = self.same_block(block, buf);
                let proxy = a.fence != FENCE_RELEASED
                    && !a.kind.is_async()
                    && self.m.buf_async[buf as usize];
                let reach = Key::Reach(block, self.m.buf_obj[buf as usize], own, write);
                // Accessors in other blocks, kernels and domains: ordered after it only by
                // acquiring a release that reaches them (`acquire`).
                let far =
                    (self.m.buf_level[buf as usize] > LVL_CTA).then_some(Key::Far(buf, write));
                // Each set is asked for when the test before it did not decide, as the scans
                // were made.
                let mut outside = |ex: &mut Self, key: Key| {
                    let set = by_key.entry(key).or_insert_with(|| ex.witnesses(key));
                    set.any_outside(&ex.state.threads[u as usize].acc[i].seen, u)
                };
                let unseen = outside(self, reach) || {
                    let copies = *in_flight.get_or_insert_with(|| self.copies_in_flight());
                    copies && outside(self, Key::Copies(block, buf, write))
                };
                let far = far.is_some_and(|k| outside(self, k));
                keep.push(unseen || far || proxy);
            }
            if keep.iter().all(|&k| k) {
                continue;
            }
            let th = self.touched.mark(&mut self.state.threads, u as usize);
            let mut i = 0;
            th.acc.retain(|_| {
                i += 1;
                keep[i - 1]
            });
        }
    }

    /// Some copy is in flight: a TMA event, or a thread's `cp.async` or bulk group.
    fn copies_in_flight(&self) -> bool {
        !self.state.events.is_empty()
            || self
                .state
                .threads
                .iter()
                .any(|th| !th.cp.is_empty() || !th.bulk.is_empty())
    }

    /// Buffer instance `x` is `block`'s own or global (else a peer block's).
    pub(super) fn same_block(&self, block: u32, x: u32) -> bool {
        let b = self.m.buf_block[x as usize];
        b == u32::MAX || b == block
    }
}

/// Thread `y`, at `pc` in `mode`, may still make an access that conflicts with a kept access
/// of buffer instance `buf` (`write`: the kept access writes), the test
/// `Exec::may_reach_conflict` makes of each thread of a block.
fn reaches_conflict(m: &PhaseModel, y: u32, pc: u32, mode: Mode, buf: u32, write: bool) -> bool {
    let reach = &m.kernels[m.threads[y as usize].kernel as usize].reach;
    let obj = m.buf_obj[buf as usize];
    let b = m.buf_block[buf as usize];
    let same_block = b == u32::MAX || b == m.block_of(y);
    let pc = pc as usize;
    mode.live()
        && pc < reach.writes.len()
        && (code::has(&reach.writes[pc], obj, same_block)
            || (write && code::has(&reach.reads[pc], obj, same_block)))
}
