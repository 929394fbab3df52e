//! Who may still conflict with a kept access (its possible *witnesses*), kept up to date along
//! a walk instead of computed again at every step.
//!
//! Pruning the kept accesses (`order.rs`, `Exec::prune_kept_of`) asks, per buffer and block,
//! which live threads can still reach a conflicting access from where they are, and which
//! have a copy of the buffer in flight; for a buffer that other blocks of the cluster (or
//! other kernels) can reach, the same over every such block. Computed from scratch that is a
//! scan of every thread of the block (of the cluster: 1 536 threads in a cluster of 4), at
//! every step of a walk that keeps an access of the thread it moved: most of a walk step at
//! 768 threads and more (issue 24 point 3).
//!
//! Each of those sets is a union of per-thread predicates that read only the thread's own
//! state (its statement, whether it is live, its `cp.async` and bulk groups) and the model,
//! plus the issuers of the in-flight TMA events. So a walk keeps each set it has asked for
//! ([`WalkIndex`]), and after each step weighs again only the threads the step changed
//! (`Touched`, which every change of a thread goes through); the events' part is small and
//! read fresh at every query. The sets are exactly those of the scans (the scans use the
//! same predicates), which `walks_agree_with_full_steps` checks through the pruned states, and
//! `witnesses_agree_with_scans` (below) directly.

use super::*;
use std::collections::BTreeMap;

/// A witness set the pruning asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Key {
    /// The live threads of block `.0` whose code can still reach an access to object `.1`
    /// (`.2`: the instance is the block's own or global) that conflicts with a kept access
    /// (`.3`: the kept access writes, so reads conflict too).
    Reach(u32, u32, bool, bool),
    /// The threads of block `.0` with a `cp.async` write (or, `.2`, a TMA-store read) of
    /// buffer instance `.1` in flight (the TMA events' issuers are added at each query).
    Copies(u32, u32, bool),
    /// Buffer instance `.0` (`.1`: the kept access writes): the threads of every block that
    /// can address it that reach a conflict or have a copy of it in flight.
    Far(u32, bool),
}

/// One kept set: its members as bits (changed one thread at a time), and the same as a
/// [`ThreadSet`], made again from the bits when a member came or went.
#[derive(Clone, Debug, Default)]
struct Entry {
    bits: Vec<u64>,
    set: ThreadSet,
    stale: bool,
}

/// What a walk keeps of its state between steps, exact for the state before each step: the
/// witness sets it has asked for (see the module doc; made on first use), and per
/// synchronization object the threads with a kept access published there.
#[derive(Clone, Debug, Default)]
pub struct WalkIndex {
    entries: BTreeMap<Key, Entry>,
    published: Option<Published>,
}

/// Per synchronization object, the threads that keep an access with a publication into it
/// (`Access::pubs`): the only threads an acquire from it, its phase's completion or a named
/// barrier's hand-over can change (`order.rs`, `Exec::update_kept`). Without it each of those
/// scanned every kept access of every thread (issue 24 point 3).
#[derive(Clone, Debug, Default)]
struct Published {
    by_obj: BTreeMap<SyncObj, Vec<u64>>,
    /// Per thread: the objects it is entered under.
    objs_of: Vec<Vec<SyncObj>>,
}

impl Published {
    fn set(&mut self, obj: SyncObj, t: u32, n: usize, on: bool) {
        let bits = self
            .by_obj
            .entry(obj)
            .or_insert_with(|| vec![0; n.div_ceil(64)]);
        let bit = 1u64 << (t % 64);
        if on {
            bits[(t / 64) as usize] |= bit;
        } else {
            bits[(t / 64) as usize] &= !bit;
        }
    }

    /// Enter thread `t` as it is in `s`.
    fn update(&mut self, s: &State, t: u32) {
        let n = s.threads.len();
        // A thread's accesses are published into few objects: each is entered once.
        let mut now: Vec<SyncObj> = Vec::new();
        for a in &s.threads[t as usize].acc {
            for p in &a.pubs {
                if !now.contains(&p.obj) {
                    now.push(p.obj);
                }
            }
        }
        now.sort_unstable_by_key(|o| o.key());
        if now == self.objs_of[t as usize] {
            return;
        }
        for obj in std::mem::take(&mut self.objs_of[t as usize]) {
            self.set(obj, t, n, false);
        }
        for &obj in &now {
            self.set(obj, t, n, true);
        }
        self.objs_of[t as usize] = now;
    }
}

impl Exec<'_, '_> {
    /// Thread `y` may still make an access to buffer instance `x`'s object (`obj`, with `own`:
    /// the instance is its block's own or global) that conflicts with a kept access (`write`:
    /// the kept access writes).
    fn reaches_obj(&self, y: u32, obj: u32, own: bool, write: bool) -> bool {
        let th = &self.state.threads[y as usize];
        let reach = &self.m.kernels[self.m.threads[y as usize].kernel as usize].reach;
        let pc = th.pc as usize;
        th.mode.live()
            && pc < reach.writes.len()
            && (code::has(&reach.writes[pc], obj, own)
                || (write && code::has(&reach.reads[pc], obj, own)))
    }

    /// Thread `y` has a copy in flight that accesses buffer instance `x` in a way that
    /// conflicts with a kept access (cp.async writes; TMA-store reads if `write`).
    fn copies_buf(&self, y: u32, x: u32, write: bool) -> bool {
        let th = &self.state.threads[y as usize];
        th.cp.iter().any(|c| c.buf == x) || (write && th.bulk.iter().any(|b| b.0 == x))
    }

    /// The blocks whose threads may address buffer instance `x` (a global: every block of
    /// every kernel; a block's shared memory: the blocks of its kernel).
    fn far_blocks(&self, x: u32) -> impl Iterator<Item = u32> + '_ {
        let owner = self.m.buf_block[x as usize];
        (0..self.m.blocks.len() as u32).filter(move |&b| {
            owner == u32::MAX || self.m.blocks[b as usize].0 == self.m.blocks[owner as usize].0
        })
    }

    /// Whether thread `y` is in the thread part of set `key`.
    fn member(&self, key: Key, y: u32) -> bool {
        match key {
            Key::Reach(block, obj, own, write) => {
                self.m.block_of(y) == block && self.reaches_obj(y, obj, own, write)
            }
            Key::Copies(block, x, write) => {
                self.m.block_of(y) == block && self.copies_buf(y, x, write)
            }
            Key::Far(x, write) => {
                let block = self.m.block_of(y);
                let owner = self.m.buf_block[x as usize];
                (owner == u32::MAX
                    || self.m.blocks[block as usize].0 == self.m.blocks[owner as usize].0)
                    && (self.reaches_obj(
                        y,
                        self.m.buf_obj[x as usize],
                        self.same_block(block, x),
                        write,
                    ) || self.copies_buf(y, x, write))
            }
        }
    }

    /// The thread part of set `key`, by a scan of the threads it can contain: [`Self::member`]
    /// of each, with what depends only on the block taken out of the loop (the search scans
    /// at every step).
    fn scan(&self, key: Key) -> ThreadSet {
        let mut out = ThreadSet::default();
        match key {
            Key::Reach(block, obj, own, write) => {
                self.scan_reach(block, obj, own, write, |_| false, &mut out);
            }
            Key::Copies(block, x, write) => {
                for y in self.block_threads(block) {
                    if self.copies_buf(y, x, write) {
                        out.insert(y);
                    }
                }
            }
            Key::Far(x, write) => {
                let obj = self.m.buf_obj[x as usize];
                for block in self.far_blocks(x) {
                    let own = self.same_block(block, x);
                    let copies = |y: u32| self.copies_buf(y, x, write);
                    self.scan_reach(block, obj, own, write, copies, &mut out);
                }
            }
        }
        out
    }

    /// Add to `out` the threads `y` of `block` that [`Self::reaches_obj`] (`obj`, `own`,
    /// `write`) or for which `also(y)` holds. The block's threads run one kernel's code, and
    /// neighbours mostly stand at one statement: the reach is looked up once per run of
    /// threads at the same `pc` (the test is the same as `reaches_obj`'s).
    fn scan_reach(
        &self,
        block: u32,
        obj: u32,
        own: bool,
        write: bool,
        also: impl Fn(u32) -> bool,
        out: &mut ThreadSet,
    ) {
        let reach = &self.m.kernels[self.m.blocks[block as usize].0 as usize].reach;
        let at = |pc: usize| {
            pc < reach.writes.len()
                && (code::has(&reach.writes[pc], obj, own)
                    || (write && code::has(&reach.reads[pc], obj, own)))
        };
        let mut last: Option<(u32, bool)> = None;
        for y in self.block_threads(block) {
            let th = &self.state.threads[y as usize];
            let reaches = th.mode.live()
                && match last {
                    Some((pc, r)) if pc == th.pc => r,
                    _ => {
                        let r = at(th.pc as usize);
                        last = Some((th.pc, r));
                        r
                    }
                };
            if reaches || also(y) {
                out.insert(y);
            }
        }
    }

    /// The issuers, in the blocks that set `key` covers, of the in-flight TMA copies of its
    /// buffer instance (the part of a copies set that is not a thread's own state).
    fn event_part(&self, key: Key, out: &mut ThreadSet) {
        let (x, block) = match key {
            Key::Reach(..) => return,
            Key::Copies(block, x, _) => (x, Some(block)),
            Key::Far(x, _) => (x, None),
        };
        for e in &self.state.events {
            if let Event::Tma { buf, issuer, .. } = *e
                && buf == x
            {
                let b = self.m.block_of(issuer);
                let covered = match block {
                    Some(block) => b == block,
                    None => self.far_blocks(x).any(|f| f == b),
                };
                if covered {
                    out.insert(issuer);
                }
            }
        }
    }

    /// Set `key` for the current state: from the walk's [`WalkIndex`] when the step runs in a
    /// walk (made there on first use), else by a scan.
    pub(super) fn witnesses(&mut self, key: Key) -> ThreadSet {
        let mut out = match self.walk_index.take() {
            None => self.scan(key),
            Some(mut cache) => {
                let entry = cache.entries.entry(key).or_insert_with(|| {
                    let set = self.scan(key);
                    let mut bits = vec![0u64; (self.state.threads.len()).div_ceil(64)];
                    for y in set.iter() {
                        bits[(y / 64) as usize] |= 1 << (y % 64);
                    }
                    Entry {
                        bits,
                        set,
                        stale: false,
                    }
                });
                if entry.stale {
                    let mut set = ThreadSet::default();
                    for (i, &w) in entry.bits.iter().enumerate() {
                        let mut rest = w;
                        while rest != 0 {
                            let b = rest.trailing_zeros();
                            set.insert(i as u32 * 64 + b);
                            rest &= rest - 1;
                        }
                    }
                    entry.set = set;
                    entry.stale = false;
                }
                let out = entry.set.clone();
                self.walk_index = Some(cache);
                out
            }
        };
        self.event_part(key, &mut out);
        out
    }

    /// Start a step of a walk with the walk's index (exact for the state before the step).
    pub fn start_walk_step(&mut self, index: &mut WalkIndex) {
        self.walk_index = Some(std::mem::take(index));
    }

    /// End a step of a walk: the index follows the threads the step changed, the kept
    /// accesses are pruned ([`Exec::prune_kept_after`], unless the step stopped the path), and
    /// the index goes back to the walk, exact for the state after the step.
    pub fn end_walk_step(&mut self, index: &mut WalkIndex, prune: bool) {
        self.refresh_witnesses();
        if prune {
            self.prune_kept_after();
        }
        self.refresh_published();
        *index = self.walk_index.take().unwrap_or_default();
    }

    /// Bring the walk's [`WalkIndex`] up to date with the threads this step changed (every
    /// other thread is as it was when the sets were last exact). Before the step's pruning.
    fn refresh_witnesses(&mut self) {
        let Some(mut cache) = self.walk_index.take() else {
            return;
        };
        // A set's membership reads a thread's statement, mode and copies, never its kept
        // accesses' publications.
        for y in self.touched.beyond_pubs().iter() {
            for (&key, entry) in cache.entries.iter_mut() {
                let now = self.member(key, y);
                let (i, bit) = ((y / 64) as usize, 1u64 << (y % 64));
                if (entry.bits[i] & bit != 0) != now {
                    entry.bits[i] ^= bit;
                    entry.stale = true;
                }
            }
        }
        self.walk_index = Some(cache);
    }
}

impl Exec<'_, '_> {
    /// In a walk, the threads whose kept accesses may have a publication into `obj`, ascending:
    /// those the index has under it and those this step changed so far (the index is exact
    /// for every other thread). `None` outside a walk: every thread may.
    pub(super) fn published_into(&mut self, obj: SyncObj) -> Option<Vec<u32>> {
        let index = self.walk_index.as_mut()?;
        let n = self.state.threads.len();
        let published = index.published.get_or_insert_with(|| {
            // Made from the state as it is now: exact for the threads this step has not
            // changed (as they were before it), and the changed ones are added below.
            let mut p = Published {
                by_obj: BTreeMap::new(),
                objs_of: vec![Vec::new(); n],
            };
            for t in 0..n as u32 {
                p.update(&self.state, t);
            }
            p
        });
        let mut bits = published
            .by_obj
            .get(&obj)
            .cloned()
            .unwrap_or_else(|| vec![0; n.div_ceil(64)]);
        for t in self.touched.threads().iter() {
            bits[(t / 64) as usize] |= 1 << (t % 64);
        }
        let mut out = Vec::new();
        for (i, &w) in bits.iter().enumerate() {
            let mut rest = w;
            while rest != 0 {
                out.push(i as u32 * 64 + rest.trailing_zeros());
                rest &= rest - 1;
            }
        }
        Some(out)
    }

    /// Bring the publication index up to date with the threads this step changed (its pruning
    /// included). At the end of the step.
    fn refresh_published(&mut self) {
        let Some(published) = self.walk_index.as_mut().and_then(|i| i.published.as_mut()) else {
            return;
        };
        // Whom an access is ordered before is not where it is published.
        for t in self.touched.beyond_order().iter() {
            published.update(&self.state, t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Along random walks of a cluster protocol with multicast copies and kept accesses, every
    /// witness set the walk keeps equals the scan of the same state, and its publication index
    /// equals one made from that state.
    #[test]
    fn witnesses_agree_with_scans() {
        let text = "protocol w
param STAGES = 2
block 8
cluster 2
mbarrier full[STAGES]
mbarrier empty[STAGES]
buffer half[STAGES * 2]
if tid == 0 {
  for s in 0..STAGES {
    init full[s], 1
    init empty[s], 4
  }
  fence_mbarrier_init
}
cluster_arrive
cluster_wait
role producer when tid == 0 {
  for k in 0..4 {
    wait empty[k % STAGES] parity (k / STAGES + 1) % 2
    arrive_expect_tx full[k % STAGES], 2 * 64
    tma half[(k % STAGES) * 2 + cta] -> full[k % STAGES], 64 multicast 3
  }
}
role consumer when tid >= 4 && tid < 6 {
  for k in 0..4 {
    wait full[k % STAGES] parity (k / STAGES) % 2
    mma half[(k % STAGES) * 2]
    mma half[(k % STAGES) * 2 + 1]
    arrive empty[k % STAGES] @ 0
    arrive empty[k % STAGES] @ 1
  }
}
";
        let f = protocols::SourceFile::new("w.phase", text);
        let p = protocols::load(&f, &[]).expect("loads");
        let mut m = PhaseModel::new(&p, 64, false);
        m.por = false;
        let (init, _, bound, stop) = m.initial();
        assert!(bound.is_none() && !stop);
        let (mut compared, mut published_compared) = (0, 0);
        for w in 0..8u64 {
            let mut rng = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(w + 1);
            let mut s = init.clone();
            let mut cache = WalkIndex::default();
            for _ in 0..300 {
                let actions: Vec<u32> = (0..m.nthreads())
                    .filter(|&t| enabled(&m, &s, t))
                    .chain((0..s.events.len() as u32).map(|i| m.nthreads() + i))
                    .collect();
                if actions.is_empty() {
                    break;
                }
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let a = actions[(rng % actions.len() as u64) as usize];
                let mut found = Vec::new();
                let (step, _) = m.step_walk(&mut s, a, &mut found, &mut cache);
                if !matches!(step, crate::explore::Step::Next(())) {
                    break;
                }
                // The publication index against one made from the state it is now for.
                if let Some(published) = &cache.published {
                    let mut fresh = Published {
                        by_obj: BTreeMap::new(),
                        objs_of: vec![Vec::new(); s.threads.len()],
                    };
                    for t in 0..s.threads.len() as u32 {
                        fresh.update(&s, t);
                    }
                    let nonempty = |p: &Published| {
                        p.by_obj
                            .iter()
                            .filter(|(_, b)| b.iter().any(|&w| w != 0))
                            .map(|(o, b)| (*o, b.clone()))
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(nonempty(published), nonempty(&fresh), "walk {w}");
                    published_compared += 1;
                }
                // Every kept set against a scan of the state it is now for.
                let keys: Vec<Key> = cache.entries.keys().copied().collect();
                let mut ex = Exec::new(&m, s.clone());
                ex.walk_index = Some(cache.clone());
                for key in keys {
                    let kept = ex.witnesses(key);
                    let mut scanned = ex.scan(key);
                    ex.event_part(key, &mut scanned);
                    assert_eq!(kept, scanned, "walk {w}: {key:?}");
                    compared += 1;
                }
            }
        }
        assert!(compared > 200, "{compared} sets compared");
        assert!(
            published_compared > 100,
            "{published_compared} indexes compared"
        );
    }
}
