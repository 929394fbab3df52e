//! Future footprints for the partial-order reduction (docs/design.md, "Partial-order
//! reduction"): while one candidate thread `t` stands still, which barrier phases can never
//! complete, which threads are therefore blocked for good, and what every other actor can
//! still do.
//!
//! The answer is a greatest fixed point. Start by assuming that no valid barrier with pending
//! arrivals can complete its current phase (`stuck`). Under that assumption a thread blocked at
//! a wait on a stuck phase never moves again (it is *frozen*), and every other thread's future
//! is one path through its code (its locals are concrete; only `elect`, and branches on a
//! `test_wait` result or token of a barrier that may still move, fork), which is run ahead here
//! without changing the state: it stops at the first wait on a stuck phase that does not
//! already pass. Summing the arrivals those runs (and in-flight cp.async arrive-ons) can still
//! make on a barrier gives an upper bound; a barrier whose bound reaches its pending count
//! while its transaction count can still reach zero (a thread may change it, or the TMA copies
//! in flight carry at least the outstanding bytes: they only lower it), or that someone may
//! re-initialize, is not stuck after all. Repeat until nothing changes. The candidate can also
//! be an in-flight event: then every thread runs and that event is left out.
//!
//! Why the result can be trusted: take any execution from the state in which `t` takes no
//! step, and its first step that leaves the computed footprints (a frozen thread moves, a
//! stuck phase completes, or a thread does something its run did not list). Up to that step
//! every thread stayed within its run, so the arrivals on a stuck barrier were at most the
//! bound, below its pending count: the phase did not complete, no frozen thread's wait could
//! pass, and each thread's path (decided by its locals and by waits whose outcome is fixed
//! while their barrier's phase is) is the one the run followed. So no such step exists. When a
//! run cannot be followed (a pipeline operation, `arrive_and_wait`, a multicast, a value that
//! depends on a barrier that may move, too many forks or steps) the thread gets its static
//! reach instead: everything its code can still touch, with unbounded arrivals.
//!
//! Polls (docs/design.md, "Reductions", step 4): a branch on `test_wait` results is decided
//! without a fork when every 0/1 value of the unknown results gives the same answer
//! ([`decide`]), and forked paths that meet again with the same future are merged into one
//! whose records bound both ([`Path::join`]), so a poll per loop trip does not double the paths.

use super::pipeline::{PipeRef, peek_pipe};
use super::*;
use crate::model::code::has;
use protocols::ir::{Expr, ExprKind};
use std::sync::Arc;

/// Barrier flags: arrive-on (pending), transaction bytes, wait or test, init or inval.
pub const B_ARRIVE: u8 = 1;
pub const B_TX: u8 = 2;
pub const B_WAIT: u8 = 4;
pub const B_INIT: u8 = 8;
/// An arrive-on not preceded, on its path, by a wait of the same thread that passed on the
/// same barrier: it may read the "previous phase observed" flag that another wait sets.
pub const B_ARRIVE_FIRST: u8 = 16;
/// A wait that passes and is not followed, on its path, by an arrive of the same thread on
/// the same barrier (so it is not ordered before a completion that needs that arrive).
pub const B_WAIT_LATE: u8 = 32;
/// A change of the transaction count that is not a TMA copy's bounded lowering
/// ([`Frozen::tx_lower`]): a raise (`arrive_expect_tx`, `expect_tx`), a `complete_tx`, or a run
/// given up for its static reach. Always with [`B_TX`].
pub const B_TX_UP: u8 = 64;
/// Buffer flags.
pub const X_READ: u8 = 1;
pub const X_WRITE: u8 = 2;
/// A part write (`write part`): conflicts with every access but another thread's part write.
pub const X_PART: u8 = 4;
/// A write of a value (`write X value N`, the value in [`Frozen::buf_value`]): conflicts with
/// every access but another thread's write of the same value, with which it commutes.
pub const X_VALUE: u8 = 8;
/// A read or a write of a byte range (`read X bytes ...`): listed with its key in
/// [`Frozen::ranged`], so that an access of other bytes may commute with it. Every other
/// check sees these flags as a read and a write of the whole instance.
pub const X_RANGED_READ: u8 = 16;
pub const X_RANGED_WRITE: u8 = 32;
/// Any write.
pub const X_WRITES: u8 = X_WRITE | X_PART | X_VALUE | X_RANGED_WRITE;

/// Forks (paths) and instructions one thread's run may take before it falls back to its
/// static reach.
const MAX_PATHS: usize = 8;
const MAX_STEPS: u32 = 1 << 14;

/// What the other actors can do while `t` stands still.
pub struct Frozen {
    /// Per barrier instance: its current phase cannot complete without `t`.
    pub stuck: Vec<bool>,
    /// Per barrier instance: what the other actors may still do to it (`B_*`).
    pub bar: Vec<u8>,
    /// Per barrier instance: an upper bound on their arrivals (saturating).
    pub arrivals: Vec<u32>,
    /// Per barrier instance: an upper bound on the bytes the TMA copies they may still issue,
    /// and those in flight, may complete on it (saturating; the count's other changes are
    /// [`B_TX_UP`]).
    pub tx_lower: Vec<i64>,
    /// Per buffer instance: what the other actors may still do to it (`X_*`).
    pub buf: Vec<u8>,
    /// Per buffer instance with `X_VALUE`: the value the others' writes of it store (writes of
    /// different values make it `X_WRITE`).
    pub buf_value: Vec<Option<i64>>,
    /// The ranged accesses the other actors may still make (`X_RANGED_*`): (thread, buffer
    /// instance, statement, key, write).
    pub ranged: Vec<(u32, u32, u32, i64, bool)>,
    /// The entries of `ranged` as (buffer instance, statement, key, write, range group,
    /// kernel): one per group is enough.
    ranged_listed: std::collections::HashSet<(u32, u32, i64, bool, u32, u32)>,
    /// Some other actor may still address a peer block.
    pub remote: bool,
    /// Per block: some other actor may still address it from another block (a remote arrive,
    /// a peer access, a multicast landing there), whose outcome depends on whether the block
    /// still runs (`remote-cta-exited`).
    pub remote_into: Vec<bool>,
    /// Per block: some live thread of it other than the one standing still cannot finish
    /// while that one stands still (it is blocked for good, or no path of its run reaches an
    /// `exit` or the end), so the block runs through every future the footprints cover, and
    /// a remote operation into it never meets an exited block there.
    pub pinned: Vec<bool>,
    /// Per named-barrier slot (`block * 16 + id`): its current use cannot complete without `t`.
    pub named_stuck: Vec<bool>,
    /// Per slot: an upper bound on the other threads' arrivals (saturating).
    pub named_arrivals: Vec<u32>,
    /// Per slot: the arrivals it has now ([`Threads::new`]).
    pub named_present: Vec<u32>,
    /// Per slot: the thread count their arrivals name, if they all name one (`None`: nobody
    /// arrives; `Some(-1)`: different counts, or unknown).
    pub named_count: Vec<Option<i64>>,
    /// Per slot: some other thread may arrive on it without waiting (`bar_arrive`), so it may
    /// arrive twice in one use.
    pub named_nonblocking: Vec<bool>,
}

/// A bound on transaction bytes that says "any number" (far beyond the count's range).
const TX_UNBOUNDED: i64 = 1 << 40;

/// Count `bytes` (`None`: not known) that a TMA copy may complete on barrier `b`.
fn lower_tx(run: &mut Run, b: u32, bytes: Option<i64>) {
    match bytes {
        Some(n) if (0..=super::MAX_COUNT).contains(&n) => {
            match run.tx_lower.iter_mut().find(|e| e.0 == b) {
                Some(e) => e.1 = e.1.saturating_add(n).min(TX_UNBOUNDED),
                None => run.tx_lower.push((b, n)),
            }
        }
        _ => flag(&mut run.bars, b, B_TX_UP),
    }
}

/// Named-barrier slots per block.
const NAMED: u32 = 16;

/// Runs already made, across the states of one search: a run depends only on the thread's
/// own state and index, which barrier phases are assumed stuck, and the phase and validity of
/// every barrier, so successive states (which change one or two threads) reuse almost all of
/// them. Keyed by (thread index, thread fingerprint, fingerprint of the barrier context).
/// Shared (`Arc`): a hit clones a pointer, not the run.
pub struct RunCache(crate::memo::Memo<(u32, u64, u64), std::sync::Arc<Run>>);

impl Default for RunCache {
    fn default() -> Self {
        RunCache(crate::memo::Memo::new(RUN_CACHE_LIMIT))
    }
}

/// Entries kept before the cache is emptied (a run is a few dozen bytes).
const RUN_CACHE_LIMIT: usize = 1 << 20;

/// One thread's run: what it may still do.
#[derive(Clone, Default)]
pub struct Run {
    arrivals: Vec<(u32, u32)>,
    bars: Vec<(u32, u8)>,
    bufs: Vec<(u32, u8)>,
    /// The value of the run's writes with a value, per buffer (`X_VALUE`); writes of different
    /// values to one buffer are `X_WRITE` instead.
    values: Vec<(u32, i64)>,
    /// Ranged accesses: (buffer instance, statement, key, write).
    ranged: Vec<(u32, u32, i64, bool)>,
    remote: bool,
    /// The peer blocks the run may address (a subset of the blocks when `remote`).
    remote_into: Vec<u32>,
    /// Some path of the run reaches an `exit` or the end of the code.
    may_finish: bool,
    /// The bytes its TMA copies may complete, per barrier (summed over every path: a bound).
    tx_lower: Vec<(u32, i64)>,
    /// Arrivals on named-barrier slots (largest over paths) and the counts they name.
    named: Vec<(u32, u32)>,
    named_counts: Vec<(u32, i64)>,
    /// Slots the run arrives on without waiting (`bar_arrive`).
    named_nonblocking: Vec<u32>,
    /// Block pipeline instances the run may `quit`: (instance, first stage barrier, stages).
    quits: Vec<(u32, u32, u32)>,
    /// The run could not be followed: use the static reach.
    unknown: bool,
    /// Warp rendezvous (`syncwarp`, `elect`) passed before an `exit` or the end, fewest and
    /// most over the paths that leave; `None`: no path leaves.
    leave_rv: Option<(u32, u32)>,
    /// The most warp rendezvous any path passes.
    max_rv: u32,
}

fn bump(v: &mut Vec<(u32, u32)>, k: u32, n: u32) {
    match v.iter_mut().find(|e| e.0 == k) {
        Some(e) => e.1 = e.1.saturating_add(n),
        None => v.push((k, n)),
    }
}

fn flag(v: &mut Vec<(u32, u8)>, k: u32, f: u8) {
    match v.iter_mut().find(|e| e.0 == k) {
        Some(e) => e.1 |= f,
        None => v.push((k, f)),
    }
}

/// What is known of each thread of a state before any candidate is chosen: shared by every
/// candidate of one state.
pub struct Threads {
    /// Per thread: the barrier instance of the wait it is blocked at (`Ready`, at a parity or
    /// token wait of its own block that does not pass now).
    blocked_on: Vec<Option<u32>>,
    /// Per thread: same class and same state as the thread before it (so its run is the same).
    twin_of_prev: Vec<bool>,
    /// Per named-barrier slot: the arrivals it has now (`bar_arrive`s, and threads waiting at
    /// its `bar_sync`).
    named_present: Vec<u32>,
    /// Per thread: the live lane of its warp that an `elect` chose (`Thread::leads`), if any.
    leader: Vec<Option<u32>>,
}

impl Threads {
    pub fn new(m: &PhaseModel, s: &State) -> Self {
        let n = m.nthreads() as usize;
        let mut blocked_on = vec![None; n];
        let mut twin_of_prev = vec![false; n];
        for u in 0..n {
            if u > 0
                && m.threads[u - 1].class == m.threads[u].class
                && s.threads[u - 1] == s.threads[u]
            {
                twin_of_prev[u] = true;
                blocked_on[u] = blocked_on[u - 1];
                continue;
            }
            blocked_on[u] = blocked_at(m, s, u as u32);
        }
        let mut named_present: Vec<u32> = s.named.iter().map(|x| u32::from(x.arrived)).collect();
        for (u, th) in s.threads.iter().enumerate() {
            if let Mode::Sync(SyncKind::Named { id }) = th.mode {
                named_present[(m.block_of(u as u32) * NAMED + u32::from(id)) as usize] += 1;
            }
        }
        let warp = |u: u32| (m.block_of(u), m.threads[u as usize].tid / 32);
        let leaders: Vec<u32> = (0..n as u32)
            .filter(|&u| s.threads[u as usize].leads && s.threads[u as usize].mode.live())
            .collect();
        let leader = (0..n as u32)
            .map(|u| leaders.iter().copied().find(|&l| warp(l) == warp(u)))
            .collect();
        Threads {
            blocked_on,
            twin_of_prev,
            named_present,
            leader,
        }
    }
}

/// The footprints of every actor but `t` in `s` (see the module doc).
///
/// `t` is the candidate thread (`u32::MAX` when the candidate is the in-flight event
/// `skip_event`, which then is left out instead).
pub fn frozen(
    m: &PhaseModel,
    s: &State,
    known: &Threads,
    t: u32,
    skip_event: Option<usize>,
) -> Frozen {
    let nb = s.bars.len();
    // Bytes the in-flight TMA copies (the candidate's aside) can still complete per barrier.
    let mut event_tx = vec![0i64; nb];
    for (i, e) in s.events.iter().enumerate() {
        if let Event::Tma { bar, bytes, .. } = *e
            && Some(i) != skip_event
        {
            event_tx[bar as usize] += i64::from(bytes);
        }
    }
    let mut f = Frozen {
        stuck: s
            .bars
            .iter()
            .map(|b| b.valid && (b.pending > 0 || b.tx != 0))
            .collect(),
        bar: vec![0; nb],
        arrivals: vec![0; nb],
        tx_lower: vec![0; nb],
        buf: vec![0; m.buf_names.len()],
        buf_value: vec![None; m.buf_names.len()],
        ranged: Vec::new(),
        ranged_listed: std::collections::HashSet::new(),
        remote: false,
        remote_into: vec![false; m.nblocks as usize],
        pinned: vec![false; m.nblocks as usize],
        // Every named-barrier use, current or next, is assumed stuck at first, like phases.
        named_stuck: vec![true; s.named.len()],
        named_arrivals: vec![0; s.named.len()],
        named_present: known.named_present.clone(),
        named_count: vec![None; s.named.len()],
        named_nonblocking: vec![false; s.named.len()],
    };
    // The block of the thread that stands still: its whole-block barriers cannot complete.
    let still = if t == u32::MAX {
        Still {
            block: u32::MAX,
            arrived: 0,
            warp: u32::MAX,
        }
    } else {
        Still {
            block: m.block_of(t),
            arrived: s.threads[t as usize].named_arrived
                | m.kernels[m.threads[t as usize].kernel as usize].whole_block_arrives,
            warp: m.threads[t as usize].tid / 32,
        }
    };
    // The cache is shared by the search's worker threads: it is locked only to look a run up
    // and to store one, never while a run is simulated. (A run is a pure function of its key,
    // so which thread stores it first does not matter; `crate::memo`, tested under loom.)
    let cache = &m.run_cache.0;
    // Per thread: its warp's leader is not known to stay through the runs (see [`Elect`]).
    let mut unsettled = vec![false; m.nthreads() as usize];
    let has_elect: Vec<bool> = m
        .kernels
        .iter()
        .map(|k| {
            k.code
                .instrs
                .iter()
                .any(|i| matches!(i, Instr::Elect { .. }))
        })
        .collect();
    let warp_of = |u: u32| (m.block_of(u), m.threads[u as usize].tid / 32);
    loop {
        let stuck: Vec<bool> = f.stuck.clone();
        let named_stuck = f.named_stuck.clone();
        let context = {
            let ctx: Vec<(bool, bool, u32)> = s
                .bars
                .iter()
                .zip(stuck.iter())
                .map(|(b, &st)| (st, b.valid, b.phase))
                .collect();
            crate::explore::fingerprint(&(ctx, &f.named_stuck, still))
        };
        f.bar.iter_mut().for_each(|x| *x = 0);
        f.arrivals.iter_mut().for_each(|x| *x = 0);
        f.tx_lower.clone_from(&event_tx);
        f.buf.iter_mut().for_each(|x| *x = 0);
        f.buf_value.iter_mut().for_each(|x| *x = None);
        f.remote = false;
        f.remote_into.iter_mut().for_each(|x| *x = false);
        f.pinned.iter_mut().for_each(|x| *x = false);
        f.named_arrivals.iter_mut().for_each(|x| *x = 0);
        f.named_count.iter_mut().for_each(|x| *x = None);
        f.named_nonblocking.iter_mut().for_each(|x| *x = false);
        // Per block pipeline instance the others may quit: how many of them may.
        let mut quits: Vec<(u32, u32, u32, u32)> = Vec::new();
        // The run of the thread just before, for its twins (with its run as the leader its
        // warp may still choose, and its `elect` mode).
        #[allow(clippy::type_complexity)]
        let mut prev: Option<(u32, Arc<Run>, Option<Arc<Run>>, (Elect, bool))> = None;
        // Lanes of warps with no leader yet: (lane, run not chosen, run as the one chosen).
        let mut choosers: Vec<(u32, Arc<Run>, Arc<Run>)> = Vec::new();
        // Threads whose run took `elect`s as their warp's leader decides (or as the one chosen
        // and as one not chosen), with those runs.
        let mut decided: Vec<LaneRuns> = Vec::new();
        for u in 0..m.nthreads() {
            if u == t || !s.threads[u as usize].mode.live() {
                continue;
            }
            // Blocked for good: at a wait on a stuck phase that does not pass now.
            if known.blocked_on[u as usize].is_some_and(|b| f.stuck[b as usize]) {
                f.pinned[m.block_of(u) as usize] = true;
                continue;
            }
            // Arrived at a warp rendezvous (`syncwarp`, `elect`) of the warp of the thread
            // standing still: it never fires (below, `Still::holds_warp`).
            if matches!(
                s.threads[u as usize].mode,
                Mode::Sync(SyncKind::Warp | SyncKind::Elect)
            ) && still.holds_warp(m, u)
            {
                f.pinned[m.block_of(u) as usize] = true;
                continue;
            }
            // Arrived at a named barrier whose use is stuck, or at a whole-block barrier of the
            // block of the thread standing still (which has not arrived).
            if let Mode::Sync(SyncKind::Named { id }) = s.threads[u as usize].mode {
                let slot = m.block_of(u) * NAMED + u32::from(id);
                let whole_block = s.named[slot as usize].count == 0;
                if f.named_stuck[slot as usize]
                    || (whole_block && still.holds(m.block_of(u), u32::from(id)))
                {
                    f.pinned[m.block_of(u) as usize] = true;
                    continue;
                }
            }
            // With `elect` in its kernel: as the warp's leader decides, or, without one yet,
            // as a lane that is not chosen plus a run as the one chosen ([`Elect`]).
            let (elect, chooses) = match known.leader[u as usize] {
                _ if unsettled[u as usize] || !has_elect[m.threads[u as usize].kernel as usize] => {
                    (Elect::Fork, false)
                }
                Some(l) if l == u => (Elect::Lead, false),
                Some(_) => (Elect::Skip, false),
                None => (Elect::Skip, true),
            };
            let sim = |mode: Elect| {
                let ctx = if mode == Elect::Fork {
                    context
                } else {
                    crate::explore::fingerprint(&(context, mode))
                };
                let key = (u, s.threads[u as usize].cached_hash(), ctx);
                cache.get_or_compute(key, || {
                    std::sync::Arc::new(simulate(m, s, u, (&stuck, &named_stuck, still), mode))
                })
            };
            let (run, lead) = match prev.take() {
                // A twin (same class and state) is in the same warp, or in a kernel without
                // `elect`: the same `elect` mode.
                Some((p, r, l, e))
                    if p + 1 == u && known.twin_of_prev[u as usize] && e == (elect, chooses) =>
                {
                    (r, l)
                }
                _ => (sim(elect), chooses.then(|| sim(Elect::Lead))),
            };
            if elect != Elect::Fork {
                decided.push((u, run.clone(), lead.clone()));
            }
            add(m, s, u, &run, &mut f);
            if !run.unknown && !run.may_finish {
                f.pinned[m.block_of(u) as usize] = true;
            }
            for &(inst, bars, stages) in &run.quits {
                match quits.iter_mut().find(|q| q.0 == inst) {
                    Some(q) => q.3 += 1,
                    None => quits.push((inst, bars, stages, 1)),
                }
            }
            if let Some(l) = &lead {
                choosers.push((u, run.clone(), l.clone()));
            }
            prev = Some((u, run, lead, (elect, chooses)));
        }
        for (i, e) in s.events.iter().enumerate() {
            if Some(i) == skip_event {
                continue;
            }
            match *e {
                // Its bytes are in `event_tx`; `f.bar`'s B_TX stays the threads' own.
                Event::Tma {
                    buf, bar, issuer, ..
                } => {
                    f.buf[buf as usize] |= X_WRITE;
                    let block = m.bar_block[bar as usize];
                    if block != m.block_of(issuer) {
                        f.remote_into[block as usize] = true;
                    }
                }
                Event::CpArrive { bar, .. } => {
                    f.bar[bar as usize] |= B_ARRIVE | B_ARRIVE_FIRST;
                    f.arrivals[bar as usize] = f.arrivals[bar as usize].saturating_add(1);
                }
            }
        }
        // The last `quit` of a block pipeline invalidates its stage barriers (which lets every
        // wait on them go): possible only if the others may quit as often as the pipeline has
        // users left.
        for &(inst, bars, stages, n) in &quits {
            if n >= s.pipe_refs[inst as usize] {
                for b in bars..bars + 2 * stages {
                    f.bar[b as usize] |= B_INIT;
                }
            }
        }
        // A warp some of whose lanes may leave, or whose runs could not be followed: its
        // leader may change, so its lanes' runs fork at `elect` (computed again).
        let leaving = unsettled_warps(&decided, warp_of);
        if !leaving.is_empty() {
            for u in 0..m.nthreads() {
                if leaving.contains(&warp_of(u)) {
                    unsettled[u as usize] = true;
                }
            }
            continue;
        }
        add_choices(m, s, &choosers, warp_of, &mut f);
        let mut changed = false;
        for (b, bs) in s.bars.iter().enumerate() {
            // The transaction count can reach zero: a thread may still raise it (or change it
            // in a way not bounded), it is zero, or the copies in flight and those the others
            // may still issue carry enough bytes (they only lower it).
            let tx_ok = f.bar[b] & B_TX_UP != 0
                || bs.tx == 0
                || (bs.tx > 0 && f.tx_lower[b] >= i64::from(bs.tx));
            if f.stuck[b]
                && ((i64::from(f.arrivals[b]) >= i64::from(bs.pending) && tx_ok)
                    || f.bar[b] & B_INIT != 0)
            {
                f.stuck[b] = false;
                changed = true;
            }
        }
        for slot in 0..s.named.len() {
            // The count of the use in progress, else the one the arrivals name; different or
            // whole-block counts: not stuck.
            let need = match (s.named[slot].count, f.named_count[slot]) {
                (c, _) if c > 0 => u32::from(c),
                (_, None) => u32::MAX,
                (_, Some(c)) if c > 0 => c as u32,
                _ => 0,
            };
            if f.named_stuck[slot]
                && f.named_present[slot].saturating_add(f.named_arrivals[slot]) >= need
            {
                f.named_stuck[slot] = false;
                changed = true;
            }
        }
        if !changed {
            return f;
        }
    }
}

/// A lane with its run as its warp's leader decides (or as a lane not chosen), and its run as
/// the one chosen where the warp has no leader yet.
type LaneRuns = (u32, Arc<Run>, Option<Arc<Run>>);

/// The warps of `decided` (lanes with their runs as the leader decides, and as the one chosen)
/// whose leader may change within the runs: a run could not be followed, or a lane may leave
/// (exit or finish) while an `elect` of the warp may still fire. A lane that leaves after
/// passing as many warp rendezvous as any path of the warp passes leaves after the last firing
/// the runs cover: every path that leaves passes exactly `R` rendezvous and none passes more
/// (every live lane takes part in every firing, so the lanes pass them in step).
fn unsettled_warps(decided: &[LaneRuns], warp_of: impl Fn(u32) -> (u32, u32)) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < decided.len() {
        let warp = warp_of(decided[i].0);
        let mut runs: Vec<&Run> = Vec::new();
        while i < decided.len() && warp_of(decided[i].0) == warp {
            runs.push(&decided[i].1);
            if let Some(l) = &decided[i].2 {
                runs.push(l);
            }
            i += 1;
        }
        let leaves: Vec<(u32, u32)> = runs.iter().filter_map(|r| r.leave_rv).collect();
        let last = leaves.first().map(|r| r.0);
        let settled = runs.iter().all(|r| !r.unknown)
            && last.is_none_or(|n| {
                leaves.iter().all(|&r| r == (n, n)) && runs.iter().all(|r| r.max_rv <= n)
            });
        if !settled {
            out.push(warp);
        }
    }
    out
}

/// The footprint of the warps with no leader yet, beyond their lanes' runs as lanes that are
/// not chosen (already added): the paths of each lane as the one chosen ([`Elect`]). One lane
/// leads every `elect` of the warp while none leaves, so the warp's arrivals are at most the
/// sum of its lanes' runs not chosen plus, for one lane, what its run as the one chosen adds:
/// the largest such excess over the lanes (likewise the transaction bytes and named-barrier
/// arrivals). What the paths as the one chosen may touch is added for every lane.
fn add_choices(
    m: &PhaseModel,
    s: &State,
    choosers: &[(u32, Arc<Run>, Arc<Run>)],
    warp_of: impl Fn(u32) -> (u32, u32),
    f: &mut Frozen,
) {
    let mut i = 0;
    while i < choosers.len() {
        let warp = warp_of(choosers[i].0);
        let mut arrivals: Vec<(u32, u32)> = Vec::new();
        let mut tx: Vec<(u32, i64)> = Vec::new();
        let mut named: Vec<(u32, u32)> = Vec::new();
        while i < choosers.len() && warp_of(choosers[i].0) == warp {
            let (u, skip, lead) = &choosers[i];
            let find = |v: &[(u32, u32)], k: u32| v.iter().find(|e| e.0 == k).map_or(0, |e| e.1);
            let most =
                |v: &mut Vec<(u32, u32)>, k: u32, n: u32| match v.iter_mut().find(|e| e.0 == k) {
                    Some(e) => e.1 = e.1.max(n),
                    None => v.push((k, n)),
                };
            for &(b, n) in &lead.arrivals {
                most(&mut arrivals, b, n.saturating_sub(find(&skip.arrivals, b)));
            }
            for &(slot, n) in &lead.named {
                most(&mut named, slot, n.saturating_sub(find(&skip.named, slot)));
            }
            for &(b, n) in &lead.tx_lower {
                let before = skip.tx_lower.iter().find(|e| e.0 == b).map_or(0, |e| e.1);
                let extra = (n - before).max(0);
                match tx.iter_mut().find(|e| e.0 == b) {
                    Some(e) => e.1 = e.1.max(extra),
                    None => tx.push((b, extra)),
                }
            }
            let flags_only = Run {
                arrivals: Vec::new(),
                tx_lower: Vec::new(),
                named: Vec::new(),
                ..(**lead).clone()
            };
            add(m, s, *u, &flags_only, f);
            i += 1;
        }
        for (b, n) in arrivals {
            f.arrivals[b as usize] = f.arrivals[b as usize].saturating_add(n);
        }
        for (b, n) in tx {
            f.tx_lower[b as usize] = f.tx_lower[b as usize].saturating_add(n).min(TX_UNBOUNDED);
        }
        for (slot, n) in named {
            f.named_arrivals[slot as usize] = f.named_arrivals[slot as usize].saturating_add(n);
        }
    }
}

/// The barrier of the wait `u` is blocked at, if any: `Ready` at a parity or token wait on a
/// barrier of its own block that does not pass now. While that barrier's phase is stuck, `u`
/// never moves.
fn blocked_at(m: &PhaseModel, s: &State, u: u32) -> Option<u32> {
    let th = &s.threads[u as usize];
    if th.mode != Mode::Ready {
        return None;
    }
    // The second half of `arrive_and_wait`: waiting for the phase it arrived in.
    if let Some((b, phase)) = th.aw {
        let bs = &s.bars[b as usize];
        return (bs.valid && bs.phase == phase).then_some(b);
    }
    let Instr::Op { op, .. } = &m.code_of(u).instrs[th.pc as usize] else {
        return None;
    };
    let b = match op {
        Op::WaitParity { bar, .. } | Op::WaitToken { bar, .. } => peek_bar(m, s, u, bar)?,
        Op::ProducerAcquire { .. } | Op::ConsumerWait { .. } | Op::ConsumerWaitPrior { .. } => {
            pipe_wait(m, s, u, op)?.0
        }
        _ => return None,
    };
    (s.bars[b as usize].valid && !enabled(m, s, u)).then_some(b)
}

/// Fold one run into the footprints.
fn add(m: &PhaseModel, s: &State, u: u32, run: &Run, f: &mut Frozen) {
    if run.unknown {
        let k = &m.kernels[m.threads[u as usize].kernel as usize];
        let pc = s.threads[u as usize].pc as usize;
        let r = &k.reach;
        let own = m.block_of(u);
        for b in 0..f.bar.len() {
            let obj = m.bar_obj[b];
            let same = m.bar_block[b] == own;
            if has(&r.signals[pc], obj, same) {
                f.bar[b] |= B_ARRIVE | B_TX | B_TX_UP | B_INIT;
                f.arrivals[b] = u32::MAX;
                f.tx_lower[b] = TX_UNBOUNDED;
            }
            if has(&r.waits[pc], obj, same) {
                f.bar[b] |= B_WAIT | B_WAIT_LATE;
            }
        }
        for x in 0..f.buf.len() {
            let obj = m.buf_obj[x];
            let block = m.buf_block[x];
            let same = block == u32::MAX || block == own;
            // A release-store also sets the global's release flag: count it as a write.
            if has(&r.writes[pc], obj, same) || has(&r.signals[pc], obj, same) {
                f.buf[x] |= X_WRITE;
            }
            if has(&r.reads[pc], obj, same) {
                f.buf[x] |= X_READ;
            }
        }
        if r.remote[pc] {
            f.remote = true;
            for (c, x) in f.remote_into.iter_mut().enumerate() {
                *x |= c as u32 != own;
            }
        }
        for id in 0..NAMED {
            let slot = (own * NAMED + id) as usize;
            f.named_arrivals[slot] = u32::MAX;
            f.named_count[slot] = Some(-1);
            f.named_nonblocking[slot] = true;
        }
        return;
    }
    for &slot in &run.named_nonblocking {
        f.named_nonblocking[slot as usize] = true;
    }
    for &(slot, n) in &run.named {
        f.named_arrivals[slot as usize] = f.named_arrivals[slot as usize].saturating_add(n);
    }
    for &(slot, c) in &run.named_counts {
        let cur = &mut f.named_count[slot as usize];
        *cur = match *cur {
            None => Some(c),
            Some(x) if x == c => Some(x),
            _ => Some(-1),
        };
    }
    for &(b, n) in &run.arrivals {
        f.arrivals[b as usize] = f.arrivals[b as usize].saturating_add(n);
    }
    for &(b, n) in &run.tx_lower {
        f.tx_lower[b as usize] = f.tx_lower[b as usize].saturating_add(n).min(TX_UNBOUNDED);
    }
    for &(b, x) in &run.bars {
        f.bar[b as usize] |= x;
    }
    for &(b, x) in &run.bufs {
        f.buf[b as usize] |= x;
    }
    // For another thread the overlap depends on its range group, not on which thread of it
    // (`bytes.rs`): one entry per group does.
    // A set of the entries listed (a scan of the list per access was quadratic in the
    // threads: 83 % of the time of the real CUTLASS cluster kernel, whose epilogue stores
    // are ranged per thread).
    let group = m.ranges.group_of[u as usize];
    let kernel = m.threads[u as usize].kernel;
    for &(b, pc, key, write) in &run.ranged {
        if f.ranged_listed.insert((b, pc, key, write, group, kernel)) {
            f.ranged.push((u, b, pc, key, write));
        }
    }
    for &(b, v) in &run.values {
        let cur = &mut f.buf_value[b as usize];
        match *cur {
            None => *cur = Some(v),
            Some(w) if w == v => {}
            Some(_) => f.buf[b as usize] |= X_WRITE,
        }
    }
    f.remote |= run.remote;
    for &c in &run.remote_into {
        f.remote_into[c as usize] = true;
    }
}

/// One path of a run in progress.
#[derive(Clone)]
struct Path {
    pc: u32,
    locals: Vec<i64>,
    /// Locals whose value depends on a barrier that may still move (bit per slot).
    tainted: u64,
    /// Of those, the ones known to hold 0 or 1 (`test_wait` results).
    tbool: u64,
    arrivals: Vec<(u32, u32)>,
    /// Barriers a wait of this path passed on.
    observed: Vec<u32>,
    /// Barriers a wait of this path passed on since its last arrive on them.
    waits_since_arrive: Vec<u32>,
    /// Arrivals on named-barrier slots.
    named: Vec<(u32, u32)>,
    /// The thread's state of each pipeline instance it has used (as in [`Thread::pipes`]).
    pipes: Vec<(u32, PipeThread)>,
    /// Backward jumps taken (loop trips): with `pc`, how far the path has come.
    back: u32,
    /// Warp rendezvous (`syncwarp`, `elect`) passed, fewest and most of the paths merged.
    rv: (u32, u32),
}

impl Path {
    /// The other side of a fork: the same path, continuing at `pc`.
    fn fork(&self, pc: u32) -> Path {
        Path {
            pc,
            back: self.back + u32::from(pc <= self.pc),
            ..self.clone()
        }
    }

    /// Whether `o` continues exactly as this path does: same pc, taint, pipeline state and
    /// value of every untainted local (a tainted value is never read: every use of it forks or
    /// ends the run).
    fn same_future(&self, o: &Path) -> bool {
        self.pc == o.pc
            && self.tainted == o.tainted
            && self.tbool & self.tainted == o.tbool & o.tainted
            && self.pipes == o.pipes
            && self.locals.len() == o.locals.len()
            && self
                .locals
                .iter()
                .zip(&o.locals)
                .enumerate()
                .all(|(i, (a, b))| a == b || (i < 64 && self.tainted & (1 << i) != 0))
    }

    /// Merge `o`, which has the same future ([`Path::same_future`]), into this path: the most
    /// arrivals of either, the phases both observed, the waits either made since its arrive.
    /// Everything the merged path lists from here on is then at least what either would.
    fn join(&mut self, o: Path) {
        merge_max(&mut self.arrivals, o.arrivals);
        merge_max(&mut self.named, o.named);
        self.observed.retain(|b| o.observed.contains(b));
        for b in o.waits_since_arrive {
            if !self.waits_since_arrive.contains(&b) {
                self.waits_since_arrive.push(b);
            }
        }
        self.back = self.back.min(o.back);
        self.rv = (self.rv.0.min(o.rv.0), self.rv.1.max(o.rv.1));
    }

    fn pipe(&mut self, id: u32) -> &mut PipeThread {
        let pos = match self.pipes.binary_search_by_key(&id, |p| p.0) {
            Ok(p) => p,
            Err(p) => {
                let fresh = PipeThread {
                    consumed_parity: 1,
                    ..PipeThread::default()
                };
                self.pipes.insert(p, (id, fresh));
                p
            }
        };
        &mut self.pipes[pos].1
    }
}

enum Next {
    Go,
    /// The path ends (blocked for good, exit, end).
    End,
    /// The run cannot be followed.
    Unknown,
}

fn mentions(e: &Expr, tainted: u64) -> bool {
    if tainted == 0 {
        return false;
    }
    match &e.kind {
        ExprKind::Local(l) => l.0 >= 64 || tainted & (1 << l.0) != 0,
        ExprKind::Unary(_, a) => mentions(a, tainted),
        ExprKind::Binary(_, a, b) | ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
            mentions(a, tainted) || mentions(b, tainted)
        }
        _ => false,
    }
}

/// A condition that mentions tainted locals, on a path.
enum Decided {
    /// Every value the tainted locals may hold gives this one.
    Value(i64),
    /// It may go either way (or the tainted locals are not all `test_wait` results).
    Either,
    /// Some value the tainted locals may hold makes it fail to evaluate (an error step).
    Error,
}

/// Decide `cond` on path `p` when every tainted local it mentions is a `test_wait` result
/// (0 or 1) and there are at most 6 of them: evaluate it for every combination. A poll such
/// as `if w_ok == 0 || a_ok == 0` with `w_ok` known to be 0 then takes its branch without a
/// fork. (Its condition is only ever 0 or non-zero on the real path too, which is one of the
/// combinations.)
fn decide(m: &PhaseModel, u: u32, cond: &Expr, p: &Path) -> Decided {
    fn slots(e: &Expr, tainted: u64, out: &mut u64) {
        match &e.kind {
            ExprKind::Local(l) if l.0 < 64 && tainted & (1 << l.0) != 0 => *out |= 1 << l.0,
            ExprKind::Unary(_, a) => slots(a, tainted, out),
            ExprKind::Binary(_, a, b) | ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
                slots(a, tainted, out);
                slots(b, tainted, out);
            }
            _ => {}
        }
    }
    let mut used = 0u64;
    slots(cond, p.tainted, &mut used);
    if used & !p.tbool != 0 || used.count_ones() > 6 {
        return Decided::Either;
    }
    let bits: Vec<u32> = (0..64).filter(|i| used & (1 << i) != 0).collect();
    let mut locals = p.locals.clone();
    let mut seen: Option<bool> = None;
    let mut value = 0;
    for combo in 0u32..(1 << bits.len()) {
        for (j, &slot) in bits.iter().enumerate() {
            locals[slot as usize] = i64::from(combo >> j & 1);
        }
        match m.eval(cond, u, &locals) {
            Ok(v) => match seen {
                None => {
                    seen = Some(v != 0);
                    value = v;
                }
                Some(t) if t != (v != 0) => return Decided::Either,
                Some(_) => {}
            },
            Err(_) => return Decided::Error,
        }
    }
    Decided::Value(value)
}

/// Run `u` ahead from its state (see the module doc).
/// What a run assumes: the stuck barrier phases, the stuck named-barrier uses, and the block
/// whose whole-block barriers cannot complete (that of the thread standing still, if any).
type Assumption<'a> = (&'a [bool], &'a [bool], Still);

/// The block of the thread standing still (`u32::MAX`: none) and the named barriers of that
/// block whose whole-block use it does not hold up: those it has arrived on (`bar_arrive`,
/// `Thread::named_arrived`) and those some `bar_arrive` of the kernel may arrive on
/// (`KernelInfo::whole_block_arrives`: such an arrival still counts after its thread exits, so
/// the use may complete without a live thread). A whole-block use (`syncthreads`, `bar_sync id`
/// without a count) of any other id needs every live thread of the block, that one too: it
/// cannot complete while that thread stands still.
#[derive(Clone, Copy, Hash)]
pub struct Still {
    pub block: u32,
    pub arrived: u16,
    /// The warp (`tid / 32` in `block`) of the thread standing still.
    pub warp: u32,
}

impl Still {
    /// A whole-block use of named barrier `id` in `block` cannot complete.
    fn holds(self, block: u32, id: u32) -> bool {
        block == self.block && self.arrived & (1 << id) == 0
    }

    /// A warp rendezvous (`syncwarp`, `elect`) of thread `u`'s warp cannot fire: it is the
    /// warp of the thread standing still. The rendezvous fires once every live lane of the
    /// warp has arrived (`Exec::try_warp`), and the candidate is live and `Ready` (only such a
    /// thread is enabled), so while it takes no step it never arrives. This is what lets a
    /// lane's read be taken alone in a stage that lane 0 releases for the warp after a
    /// `syncwarp` (`if lane == 0 { arrive empty[s] }`): lane 0 cannot arrive before the
    /// candidate reaches the `syncwarp`.
    fn holds_warp(self, m: &PhaseModel, u: u32) -> bool {
        m.block_of(u) == self.block && m.threads[u as usize].tid / 32 == self.warp
    }
}

/// How a run takes the `elect`s on its path. A warp whose leader was chosen
/// (`Thread::leads`) keeps it while no lane of the warp leaves (exec `forget_leader`), and
/// every one of its `elect`s fires with it (exec `try_warp`): the leader takes each body,
/// the other lanes skip it. [`frozen`] uses that only when no live lane of the warp may leave
/// in its run (`may_finish`) and every run of the warp could be followed; then no lane leaves
/// before the first step outside the footprints (the first leave would be such a step), so up
/// to that step every `elect` of the warp fires with that leader and each lane's run is the
/// path it takes. Otherwise, or without a leader, both outcomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Elect {
    Fork,
    Lead,
    Skip,
}

fn simulate(m: &PhaseModel, s: &State, u: u32, assumed: Assumption, elect: Elect) -> Run {
    let (stuck, _, _) = assumed;
    let th = &s.threads[u as usize];
    let code = m.code_of(u);
    let mut run = Run::default();
    let mut start = vec![];
    let path = |pc: u32| Path {
        pc,
        locals: th.locals.to_vec(),
        tainted: 0,
        tbool: 0,
        arrivals: Vec::new(),
        observed: Vec::new(),
        waits_since_arrive: Vec::new(),
        named: Vec::new(),
        pipes: th.pipes.clone(),
        back: 0,
        rv: (0, 0),
    };
    match th.mode {
        Mode::Ready => match th.aw {
            // The second half of `arrive_and_wait` (its arrival is made): it blocks for good on
            // a stuck phase that has not completed, else it passes.
            Some((b, phase)) => {
                let bs = &s.bars[b as usize];
                if bs.valid && bs.phase == phase && stuck[b as usize] {
                    return run;
                }
                flag(&mut run.bars, b, B_WAIT);
                let mut p = path(th.pc + 1);
                p.observed.push(b);
                p.waits_since_arrive.push(b);
                start.push(p);
            }
            None => start.push(path(th.pc)),
        },
        // Arrived at a warp rendezvous of the warp of the thread standing still: frozen.
        Mode::Sync(SyncKind::Warp | SyncKind::Elect) if assumed.2.holds_warp(m, u) => {
            return run;
        }
        Mode::Sync(_) => match code.instrs[th.pc as usize] {
            // Arrived at an `elect`: either lane of the outcome, or as the leader decides.
            Instr::Elect { skip, .. } => {
                let passed = |pc| Path {
                    rv: (1, 1),
                    ..path(pc)
                };
                if elect != Elect::Skip {
                    start.push(passed(th.pc + 1));
                }
                if elect != Elect::Lead {
                    start.push(passed(skip));
                }
            }
            // Arrived at a rendezvous: assume it completes (an upper bound).
            _ => start.push(Path {
                rv: if th.mode == Mode::Sync(SyncKind::Warp) {
                    (1, 1)
                } else {
                    (0, 0)
                },
                ..path(th.pc + 1)
            }),
        },
        Mode::Exited | Mode::Finished => return run,
    }
    // The paths still running. The least advanced one moves next ((back-edges taken, pc) grows
    // with every step), after every other path at the same point with the same future (same
    // pc, untainted locals, taint and pipeline state) is merged into it: what the merged path
    // records (arrivals, observed phases, waits since an arrive) is an upper bound of both, so
    // the branches of a fork on a polled barrier join again where they meet instead of
    // doubling at every fork.
    let mut live = start;
    let mut steps = 0u32;
    while !live.is_empty() {
        let i = (0..live.len())
            .min_by_key(|&i| (live[i].back, live[i].pc))
            .unwrap_or(0);
        let mut p = live.swap_remove(i);
        let mut j = 0;
        while j < live.len() {
            if p.same_future(&live[j]) {
                let q = live.swap_remove(j);
                p.join(q);
            } else {
                j += 1;
            }
        }
        steps += 1;
        if steps > MAX_STEPS {
            run.unknown = true;
            return run;
        }
        let from = p.pc;
        let next = match &code.instrs[p.pc as usize] {
            Instr::Set { slot, value } => {
                if mentions(value, p.tainted) {
                    Next::Unknown
                } else {
                    match m.eval(value, u, &p.locals) {
                        Ok(v) => {
                            p.locals[*slot as usize] = v;
                            if *slot < 64 {
                                p.tainted &= !(1 << slot);
                            }
                            p.pc += 1;
                            Next::Go
                        }
                        Err(_) => Next::Unknown,
                    }
                }
            }
            Instr::Jump(to) => {
                p.pc = *to;
                Next::Go
            }
            Instr::JumpIfZero { cond, target } => {
                if mentions(cond, p.tainted) {
                    match decide(m, u, cond, &p) {
                        Decided::Value(v) => {
                            p.pc = if v == 0 { *target } else { p.pc + 1 };
                            Next::Go
                        }
                        Decided::Error => Next::Unknown,
                        Decided::Either => {
                            live.push(p.fork(*target));
                            p.pc += 1;
                            Next::Go
                        }
                    }
                } else {
                    match m.eval(cond, u, &p.locals) {
                        Ok(v) => {
                            p.pc = if v == 0 { *target } else { p.pc + 1 };
                            Next::Go
                        }
                        Err(_) => Next::Unknown,
                    }
                }
            }
            Instr::ForTest { var, end, exit } => {
                let t = p.tainted;
                if (*var < 64 && t & (1 << var) != 0) || (*end < 64 && t & (1 << end) != 0) {
                    Next::Unknown
                } else {
                    p.pc = if p.locals[*var as usize] < p.locals[*end as usize] {
                        p.pc + 1
                    } else {
                        *exit
                    };
                    Next::Go
                }
            }
            Instr::ForNext { var, test } => {
                p.locals[*var as usize] += 1;
                p.pc = *test;
                Next::Go
            }
            Instr::WhileTest {
                cond, trips, exit, ..
            } => {
                let value = if mentions(cond, p.tainted) {
                    match decide(m, u, cond, &p) {
                        Decided::Value(v) => Ok(v),
                        Decided::Error | Decided::Either => Err(()),
                    }
                } else {
                    m.eval(cond, u, &p.locals).map_err(|_| ())
                };
                {
                    match value {
                        Ok(0) => {
                            p.pc = *exit;
                            Next::Go
                        }
                        Ok(_) => {
                            p.locals[*trips as usize] += 1;
                            if p.locals[*trips as usize] > i64::from(m.max_loop_trips) {
                                // The real step reports the bound; stay conservative.
                                Next::Unknown
                            } else {
                                p.pc += 1;
                                Next::Go
                            }
                        }
                        Err(_) => Next::Unknown,
                    }
                }
            }
            // An `elect` of the warp of the thread standing still never fires.
            Instr::Elect { .. } if assumed.2.holds_warp(m, u) => Next::End,
            Instr::Elect { skip, .. } => {
                p.rv = (p.rv.0 + 1, p.rv.1 + 1);
                match elect {
                    Elect::Fork => {
                        live.push(p.fork(*skip));
                        p.pc += 1;
                    }
                    Elect::Lead => p.pc += 1,
                    Elect::Skip => p.pc = *skip,
                }
                Next::Go
            }
            Instr::Exit { .. } | Instr::End { .. } => {
                run.may_finish = true;
                run.leave_rv = Some(match run.leave_rv {
                    None => p.rv,
                    Some(r) => (r.0.min(p.rv.0), r.1.max(p.rv.1)),
                });
                Next::End
            }
            Instr::Op { op, .. } => {
                if matches!(op, Op::SyncWarp) && !assumed.2.holds_warp(m, u) {
                    p.rv = (p.rv.0 + 1, p.rv.1 + 1);
                }
                op_step(m, s, u, op, assumed, &mut p, &mut run)
            }
        };
        match next {
            Next::Go => {
                if p.pc <= from {
                    p.back += 1;
                }
                live.push(p);
                if live.len() > MAX_PATHS {
                    run.unknown = true;
                    return run;
                }
            }
            Next::End => {
                run.max_rv = run.max_rv.max(p.rv.1);
                finish(p, &mut run)
            }
            Next::Unknown => {
                run.unknown = true;
                return run;
            }
        }
    }
    run
}

/// Add `from`'s counts to `into`, key by key, keeping the larger count of a key in both (the
/// most arrivals or named-barrier uses of any one path).
fn merge_max<K: PartialEq, N: Ord>(into: &mut Vec<(K, N)>, from: Vec<(K, N)>) {
    for (k, n) in from {
        match into.iter_mut().find(|e| e.0 == k) {
            Some(e) => {
                if n > e.1 {
                    e.1 = n;
                }
            }
            None => into.push((k, n)),
        }
    }
}

/// A path that ended: what it leaves in the run.
fn finish(p: Path, run: &mut Run) {
    for &b in &p.waits_since_arrive {
        flag(&mut run.bars, b, B_WAIT_LATE);
    }
    merge_max(&mut run.named, p.named);
    // A thread follows one path: its arrivals are bounded by the largest path's.
    merge_max(&mut run.arrivals, p.arrivals);
}

/// One visible operation of a run.
fn op_step(
    m: &PhaseModel,
    s: &State,
    u: u32,
    op: &Op,
    (stuck, named_stuck, still): Assumption,
    p: &mut Path,
    run: &mut Run,
) -> Next {
    // Resolve every object the operation names; any doubt ends the run.
    let own = m.block_of(u);
    let mut ids = [0u32; 2];
    let mut pipe = None;
    for (i, r) in op.object_refs().into_iter().enumerate() {
        let exprs = r.index.iter().chain(r.cta.iter());
        if exprs.into_iter().any(|e| mentions(e, p.tainted)) {
            return Next::Unknown;
        }
        if let Layout::Pipe { .. } | Layout::ThreadPipe { .. } = m.layouts[r.object.0 as usize] {
            match peek_pipe(m, u, r, &p.locals) {
                Some(x) => pipe = Some(x),
                None => return Next::Unknown,
            }
            continue;
        }
        let Some(id) = peek_with(m, u, r, &p.locals) else {
            return Next::Unknown;
        };
        let block = match m.layouts[r.object.0 as usize] {
            Layout::Bar { .. } => m.bar_block[id as usize],
            Layout::Buf { .. } => m.buf_block[id as usize],
            Layout::Pipe { .. } | Layout::ThreadPipe { .. } => return Next::Unknown,
        };
        if block != u32::MAX && block != own {
            run.remote = true;
            if !run.remote_into.contains(&block) {
                run.remote_into.push(block);
            }
        }
        ids[i.min(1)] = id;
    }
    let eval = |e: &Expr, p: &Path| -> Option<i64> {
        if mentions(e, p.tainted) {
            return None;
        }
        m.eval(e, u, &p.locals).ok()
    };
    let taint = |p: &mut Path, slot: u32| {
        if slot < 64 {
            p.tainted |= 1 << slot;
            p.tbool &= !(1 << slot);
            true
        } else {
            false
        }
    };
    let arrive = |p: &mut Path, run: &mut Run, b: u32, n: u32, f: u8| {
        bump(&mut p.arrivals, b, n);
        p.waits_since_arrive.retain(|&x| x != b);
        let first = if p.observed.contains(&b) {
            0
        } else {
            B_ARRIVE_FIRST
        };
        flag(&mut run.bars, b, B_ARRIVE | first | f);
    };
    match op {
        Op::Arrive { count, token, .. } => {
            let b = ids[0];
            let n = match count {
                Some(c) => match eval(c, p) {
                    Some(v) => v.clamp(0, i64::from(u32::MAX)) as u32,
                    None => return Next::Unknown,
                },
                None => 1,
            };
            arrive(p, run, b, n, 0);
            if let Some(l) = token {
                if stuck[b as usize] {
                    p.locals[l.0 as usize] = encode_token(b, s.bars[b as usize].phase);
                    if l.0 < 64 {
                        p.tainted &= !(1 << l.0);
                    }
                } else if !taint(p, l.0) {
                    return Next::Unknown;
                }
            }
        }
        Op::ArriveDrop { .. } | Op::CpAsyncArrive { noinc: true, .. } => {
            arrive(p, run, ids[0], 1, 0)
        }
        // Raises the pending count now, with the in-flight arrive-on that lowers it again
        // later: pending never ends up lower than before, so it counts as no arrival.
        Op::CpAsyncArrive { noinc: false, .. } => arrive(p, run, ids[0], 0, 0),
        Op::ArriveExpectTx { .. } => arrive(p, run, ids[0], 1, B_TX | B_TX_UP),
        Op::ExpectTx { .. } | Op::CompleteTx { .. } => flag(&mut run.bars, ids[0], B_TX | B_TX_UP),
        Op::Init { .. } | Op::Inval { .. } => flag(&mut run.bars, ids[0], B_INIT),
        // A wait that blocks for good ends the path and is no step of the run: it reads
        // nothing before the candidate moves. One that passes is a step (it reads the phase
        // and marks it observed).
        Op::WaitParity { parity, .. } => {
            let b = ids[0];
            let bs = &s.bars[b as usize];
            if m.bar_block[b as usize] == own && bs.valid && stuck[b as usize] {
                let Some(par) = eval(parity, p) else {
                    return Next::Unknown;
                };
                if !parity_passes(bs, par) {
                    return Next::End;
                }
            }
            flag(&mut run.bars, b, B_WAIT);
            p.observed.push(b);
            p.waits_since_arrive.push(b);
        }
        Op::WaitToken { token, .. } => {
            let b = ids[0];
            let bs = &s.bars[b as usize];
            let known = token.0 < 64 && p.tainted & (1 << token.0) == 0;
            if m.bar_block[b as usize] == own
                && bs.valid
                && stuck[b as usize]
                && known
                && matches!(
                    token_check(p.locals[token.0 as usize], b, bs.phase),
                    TokenWait::Block
                )
            {
                return Next::End;
            }
            flag(&mut run.bars, b, B_WAIT);
            p.observed.push(b);
            p.waits_since_arrive.push(b);
        }
        Op::ArriveAndWait { .. } => {
            let b = ids[0];
            arrive(p, run, b, 1, 0);
            let bs = &s.bars[b as usize];
            // It waits for the phase it arrived in, which a stuck barrier never completes.
            if bs.valid && stuck[b as usize] {
                return Next::End;
            }
            flag(&mut run.bars, b, B_WAIT);
            p.observed.push(b);
            p.waits_since_arrive.push(b);
        }
        Op::TestWait { parity, result, .. } => {
            let b = ids[0];
            flag(&mut run.bars, b, B_WAIT);
            p.waits_since_arrive.push(b);
            let bs = &s.bars[b as usize];
            if bs.valid && stuck[b as usize] {
                let Some(par) = eval(parity, p) else {
                    return Next::Unknown;
                };
                p.locals[result.0 as usize] = i64::from(parity_passes(bs, par));
                if result.0 < 64 {
                    p.tainted &= !(1 << result.0);
                }
            } else if taint(p, result.0) {
                // Its value is 0 or 1: a branch on it may still be decided ([`decide`]).
                p.tbool |= 1 << result.0;
            } else {
                return Next::Unknown;
            }
        }
        Op::Tma {
            multicast: None,
            bytes,
            ..
        } => {
            flag(&mut run.bufs, ids[0], X_WRITE);
            flag(&mut run.bars, ids[1], B_TX);
            lower_tx(run, ids[1], eval(bytes, p));
        }
        // A multicast copy writes the same CTA-relative buffer and signals the same
        // CTA-relative barrier in every block of its mask, as the transition does
        // (`Exec::step`, `Op::Tma`): follow it there instead of giving up the whole run (a
        // CUTLASS cluster producer multicasts every k-tile; issue 24 point 3).
        Op::Tma {
            dst,
            bar,
            bytes,
            multicast: Some(e),
        } => {
            let bytes = eval(bytes, p);
            let Some(mask) = eval(e, p) else {
                return Next::Unknown;
            };
            let ti = &m.threads[u as usize];
            let k = &m.kernels[ti.kernel as usize];
            if mask <= 0 || mask >= (1i64 << k.cluster) {
                // The transition reports it as a model error: no footprint to promise.
                return Next::Unknown;
            }
            let bar_o = i64::from(m.program.object(bar.object).count());
            let buf_o = i64::from(m.program.object(dst.object).count());
            for c in 0..k.cluster {
                if mask & (1 << c) == 0 {
                    continue;
                }
                let delta = i64::from(k.first_block + c) - i64::from(own);
                let b = i64::from(ids[1]) + delta * bar_o;
                let x = i64::from(ids[0]) + delta * buf_o;
                if b < 0 || x < 0 || b as usize >= s.bars.len() || x as usize >= m.buf_block.len() {
                    return Next::Unknown;
                }
                if delta != 0 {
                    run.remote = true;
                    let block = k.first_block + c;
                    if !run.remote_into.contains(&block) {
                        run.remote_into.push(block);
                    }
                }
                flag(&mut run.bufs, x as u32, X_WRITE);
                flag(&mut run.bars, b as u32, B_TX);
                lower_tx(run, b as u32, bytes);
            }
        }
        // A byte range whose key this path knows: listed, so that accesses of other bytes
        // may commute with it (`por::ranged_clear`).
        Op::Read { buf } | Op::Write { buf, .. } | Op::Mma { buf }
            if buf
                .bytes
                .as_ref()
                .is_some_and(|r| eval(&r.off, p).is_some_and(|off| off >= 0)) =>
        {
            let r = buf.bytes.as_ref().expect("a byte range");
            let off = eval(&r.off, p).expect("evaluated above");
            let key = m.ranges.key(m.threads[u as usize].kernel, p.pc, u, off);
            let write = matches!(op, Op::Write { .. });
            let entry = (ids[0], p.pc, key, write);
            if !run.ranged.contains(&entry) {
                run.ranged.push(entry);
            }
            flag(
                &mut run.bufs,
                ids[0],
                if write { X_RANGED_WRITE } else { X_RANGED_READ },
            );
        }
        Op::Read { .. }
        | Op::Load { .. }
        | Op::LoadAcquire { .. }
        | Op::Mma { .. }
        | Op::TmaStore { .. } => flag(&mut run.bufs, ids[0], X_READ),
        Op::Write { part: true, .. } => flag(&mut run.bufs, ids[0], X_PART),
        Op::Write { value: Some(v), .. } => {
            let x = ids[0];
            match run.values.iter().find(|e| e.0 == x) {
                Some(&(_, w)) if w != *v => flag(&mut run.bufs, x, X_WRITE),
                Some(_) => {}
                None => run.values.push((x, *v)),
            }
            flag(&mut run.bufs, x, X_VALUE);
        }
        Op::Write { .. } | Op::Store { .. } | Op::StoreRelease { .. } | Op::CpAsync { .. } => {
            flag(&mut run.bufs, ids[0], X_WRITE)
        }
        Op::ProducerAcquire { .. }
        | Op::ProducerCommit { .. }
        | Op::ConsumerWait { .. }
        | Op::ConsumerRelease { .. }
        | Op::ConsumerWaitPrior { .. }
        | Op::MemcpyAsync { .. }
        | Op::Quit { .. } => {
            let Some(pr) = pipe else {
                return Next::Unknown;
            };
            return pipe_step(m, s, u, op, &pr, ids[0], stuck, p, run);
        }
        // Named barriers: an arrival on the slot; a `bar_sync` on a stuck use blocks for good.
        // `syncthreads` is `bar_sync 0` with the whole-block count: an arrival on the block's
        // barrier 0 too. (It used to add none, so a use that some thread of the block was still
        // on its way to stayed stuck, the threads already waiting at it stayed frozen, and
        // their futures were left out of the footprints: a TMA copy one of them issues after
        // the barrier, into a buffer with another copy still in flight, was a missed data race
        // when the copy in flight landed alone. Found by the memory-model oracle's long run.)
        Op::BarSync { .. } | Op::BarArrive { .. } | Op::SyncThreads => {
            let (idv, c) = match op {
                Op::BarSync { id, count, .. } | Op::BarArrive { id, count, .. } => {
                    let Some(idv) = eval(id, p) else {
                        return Next::Unknown;
                    };
                    let c = match count {
                        Some(c) => match eval(c, p) {
                            Some(v) => v,
                            None => return Next::Unknown,
                        },
                        None => 0,
                    };
                    (idv, c)
                }
                _ => (0, 0),
            };
            if !(0..i64::from(NAMED)).contains(&idv) {
                return Next::Unknown;
            }
            let slot = own * NAMED + idv as u32;
            match p.named.iter_mut().find(|e| e.0 == slot) {
                Some(e) => e.1 = e.1.saturating_add(1),
                None => p.named.push((slot, 1)),
            }
            if !run.named_counts.contains(&(slot, c)) {
                run.named_counts.push((slot, c));
            }
            if matches!(op, Op::BarArrive { .. }) && !run.named_nonblocking.contains(&slot) {
                run.named_nonblocking.push(slot);
            }
            // A `bar_sync` on a stuck use, or on a whole-block use of the block of the thread
            // standing still, blocks for good.
            if matches!(op, Op::BarSync { .. } | Op::SyncThreads)
                && (named_stuck[slot as usize] || (c == 0 && still.holds(own, idv as u32)))
            {
                return Next::End;
            }
        }
        // Completing the thread's copies in flight turns them into kept accesses (race
        // flags), which an arrive-on in flight that completes them first would not: list them.
        Op::WaitGroup { .. } => {
            for c in &s.threads[u as usize].cp {
                flag(&mut run.bufs, c.buf, X_WRITE);
            }
        }
        Op::BulkWaitRead { .. } => {
            for c in &s.threads[u as usize].bulk {
                flag(&mut run.bufs, c.0, X_READ);
            }
        }
        // A `syncwarp` of the warp of the thread standing still never fires
        // (`Still::holds_warp`). (A `syncthreads` of its block never completes: the
        // whole-block case of the named-barrier arm above.)
        Op::SyncWarp if still.holds_warp(m, u) => return Next::End,
        // Other rendezvous, fences, groups, compute: assumed to pass (an upper bound); they
        // touch no barrier object or buffer that the reduction asks about.
        Op::SyncWarp
        | Op::ClusterSync
        | Op::ClusterArrive
        | Op::ClusterWait
        | Op::FenceMbarrierInit
        | Op::FenceProxyAsync
        | Op::Fence { .. }
        | Op::Compute
        | Op::CommitGroup
        | Op::BulkCommit => {}
    }
    p.pc += 1;
    Next::Go
}

/// One `cuda::pipeline` operation of a run (model/exec/mod.rs has the real step): waits on the
/// stage barriers like `wait`, commits and releases arrive like `arrive`, `memcpy_async` is a
/// cp.async. A step that would report an error (a role switch, an operation after `quit`, an
/// invalid stage barrier) cannot be followed.
#[allow(clippy::too_many_arguments)]
fn pipe_step(
    m: &PhaseModel,
    s: &State,
    u: u32,
    op: &Op,
    pr: &PipeRef,
    dst: u32,
    stuck: &[bool],
    p: &mut Path,
    run: &mut Run,
) -> Next {
    let producer = matches!(
        op,
        Op::ProducerAcquire { .. } | Op::ProducerCommit { .. } | Op::MemcpyAsync { .. }
    );
    let ps = *p.pipe(pr.id);
    if ps.quit {
        return Next::Unknown;
    }
    if pr.block.is_some() && !pr.unified && !matches!(op, Op::Quit { .. }) {
        let want = if producer { 1 } else { 2 };
        match ps.role {
            0 => p.pipe(pr.id).role = want,
            r if r != want => return Next::Unknown,
            _ => {}
        }
    }
    // A wait on a stage barrier: it ends the path where it blocks for good; otherwise it is a
    // step that reads the phase. (`enabled` lets it go once the thread has quit any pipeline:
    // then it reports an error.)
    let stage_wait = |b: u32, parity: u8, p: &mut Path, run: &mut Run| -> Next {
        let bs = &s.bars[b as usize];
        if !bs.valid || p.pipes.iter().any(|x| x.1.quit) {
            return Next::Unknown;
        }
        if stuck[b as usize] && !parity_passes(bs, i64::from(parity)) {
            return Next::End;
        }
        flag(&mut run.bars, b, B_WAIT);
        p.observed.push(b);
        p.waits_since_arrive.push(b);
        Next::Go
    };
    let arrive = |p: &mut Path, run: &mut Run, b: u32| -> Next {
        if !s.bars[b as usize].valid {
            return Next::Unknown;
        }
        bump(&mut p.arrivals, b, 1);
        p.waits_since_arrive.retain(|&x| x != b);
        let first = if p.observed.contains(&b) {
            0
        } else {
            B_ARRIVE_FIRST
        };
        flag(&mut run.bars, b, B_ARRIVE | first);
        Next::Go
    };
    let next = match (op, pr.block) {
        (Op::ProducerAcquire { .. }, Some((bars, stages))) => {
            stage_wait(bars + ps.head % stages, ps.consumed_parity, p, run)
        }
        (Op::ConsumerWait { .. } | Op::ConsumerWaitPrior { .. }, Some((bars, stages))) => {
            stage_wait(bars + stages + ps.tail % stages, ps.produced_parity, p, run)
        }
        // A commit raises the pending count and puts an arrive-on in flight (no arrival, as
        // for `cp_async_arrive`), then arrives once.
        (Op::ProducerCommit { .. }, Some((bars, stages))) => {
            let next = arrive(p, run, bars + stages + ps.head % stages);
            let ps = p.pipe(pr.id);
            ps.head += 1;
            if ps.head == stages {
                ps.head = 0;
                ps.consumed_parity ^= 1;
            }
            next
        }
        (Op::ConsumerRelease { .. }, Some((bars, stages))) => {
            let next = arrive(p, run, bars + ps.tail % stages);
            let ps = p.pipe(pr.id);
            ps.tail += 1;
            if ps.tail == stages {
                ps.tail = 0;
                ps.produced_parity ^= 1;
            }
            next
        }
        // Quit reads nothing of the stage barriers (what it leaves short is judged at a
        // deadlock, from the thread's own ring state: `quit_checks`). The last quit
        // invalidates the barriers ([`frozen`] counts the quits).
        (Op::Quit { .. }, Some((bars, stages))) => {
            if !run.quits.iter().any(|q| q.0 == pr.id) {
                run.quits.push((pr.id, bars, stages));
            }
            p.pipe(pr.id).quit = true;
            Next::Go
        }
        (Op::Quit { .. }, None) => {
            p.pipe(pr.id).quit = true;
            Next::Go
        }
        (Op::MemcpyAsync { .. }, _) => {
            flag(&mut run.bufs, dst, X_WRITE);
            Next::Go
        }
        // A thread-scope pipeline is the thread's own: its waits complete its own copies
        // (kept accesses, as for `wait_group`).
        (Op::ConsumerWait { .. } | Op::ConsumerWaitPrior { .. }, None) => {
            for c in &s.threads[u as usize].cp {
                flag(&mut run.bufs, c.buf, X_WRITE);
            }
            let ps = p.pipe(pr.id);
            if let Op::ConsumerWaitPrior { n, .. } = op {
                let Some(n) = (!mentions(n, p.tainted))
                    .then(|| m.eval(n, u, &p.locals).ok())
                    .flatten()
                else {
                    return Next::Unknown;
                };
                let ps = p.pipe(pr.id);
                ps.tail = (i64::from(ps.head) - n.max(0)).max(0) as u32;
            } else if ps.head > ps.tail {
                ps.tail += 1;
            }
            Next::Go
        }
        (Op::ProducerCommit { .. }, None) => {
            p.pipe(pr.id).head += 1;
            Next::Go
        }
        (Op::ProducerAcquire { .. } | Op::ConsumerRelease { .. }, None) => Next::Go,
        _ => Next::Unknown,
    };
    if let Next::Go = next {
        p.pc += 1;
    }
    next
}
