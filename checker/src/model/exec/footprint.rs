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

mod elect;
mod run;
use elect::{Elections, add_choices, unsettled_warps};
use run::{Elect, simulate};

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
#[derive(Debug)]
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
    /// instance, statement, key, write); with those of [`Frozen::ranged_chunks`], see
    /// [`Frozen::ranged_of`].
    pub ranged: Vec<(u32, u32, u32, i64, bool)>,
    /// The chunks folded from the cache whose threads make ranged accesses ([`Chunk::ranged`]):
    /// their entries are looked up there, not copied (the epilogue of a real kernel lists a
    /// few per thread, and copying them was most of the cost of a state).
    ranged_chunks: Vec<std::sync::Arc<Chunk>>,
    /// The entries of `ranged` as (buffer instance, statement, key, write, range group,
    /// kernel): one per group is enough.
    ranged_listed: RangedSet,
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

impl Frozen {
    /// The ranged accesses of buffer instance `x` the other actors may still make, as
    /// (thread, buffer instance, statement, key, write). One thread of each range group stands
    /// for the group's accesses with that statement and key; which one does not matter to
    /// `bytes::overlap` (it asks only for the group, and whether the two sides are one thread,
    /// and the candidate's own accesses are never listed), so an access listed by several
    /// chunks is simply met several times.
    pub fn ranged_of(&self, x: u32) -> impl Iterator<Item = &(u32, u32, u32, i64, bool)> {
        let listed = self.ranged.iter().filter(move |e| e.1 == x);
        let chunked = self.ranged_chunks.iter().flat_map(move |c| {
            let lo = c.ranged.partition_point(|e| e.1 < x);
            let hi = c.ranged.partition_point(|e| e.1 <= x);
            &c.ranged[lo..hi]
        });
        listed.chain(chunked)
    }

    /// Everything but the representation of the ranged accesses, and those as the set of
    /// what decides an overlap: (buffer instance, statement, key, write, range group, kernel).
    fn same_as(&self, o: &Frozen, m: &PhaseModel) -> bool {
        let ranged = |f: &Frozen| -> std::collections::BTreeSet<RangedKey> {
            let chunked = f.ranged_chunks.iter().flat_map(|c| c.ranged.iter());
            f.ranged
                .iter()
                .chain(chunked)
                .map(|&(u, b, pc, key, w)| {
                    let group = m.ranges.group_of[u as usize];
                    (b, pc, key, w, group, m.threads[u as usize].kernel)
                })
                .collect()
        };
        self.stuck == o.stuck
            && self.bar == o.bar
            && self.arrivals == o.arrivals
            && self.tx_lower == o.tx_lower
            && self.buf == o.buf
            && self.buf_value == o.buf_value
            && self.remote == o.remote
            && self.remote_into == o.remote_into
            && self.pinned == o.pinned
            && self.named_stuck == o.named_stuck
            && self.named_arrivals == o.named_arrivals
            && self.named_present == o.named_present
            && self.named_count == o.named_count
            && self.named_nonblocking == o.named_nonblocking
            && ranged(self) == ranged(o)
    }
}

/// What decides whether a ranged access overlaps another: (buffer instance, statement, key,
/// write, range group, kernel).
type RangedKey = (u32, u32, i64, bool, u32, u32);

/// [`Frozen::ranged_listed`]: the ranged accesses listed so far, one per [`RangedKey`].
type RangedSet = std::collections::HashSet<RangedKey, std::hash::BuildHasherDefault<IntHasher>>;

/// A multiply-rotate hash (FxHash's) for the small integer tuples of [`Frozen::ranged_listed`]:
/// the standard SipHash of them took half the time of the real CUTLASS cluster kernel's search
/// (its epilogue's ranged stores are listed again for every candidate).
#[derive(Default, Clone, Copy)]
pub struct IntHasher(u64);

impl std::hash::Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u8(&mut self, x: u8) {
        self.write_u64(u64::from(x));
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }
    fn write_i64(&mut self, x: i64) {
        self.write_u64(x as u64);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
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
///
/// Beside the runs, the folds of whole chunks of threads ([`Chunk`]), keyed by (first thread
/// of the chunk, fingerprint of the chunk's thread states, fingerprint of the context they
/// read): a state of a long chain changes one or two threads, so every chunk but theirs is
/// reused, and a candidate's footprints cost a fold of the chunks instead of one of the threads.
pub struct RunCache {
    runs: crate::memo::Memo<(u32, u64, u64), std::sync::Arc<Run>>,
    chunks: crate::memo::Memo<(u32, u64, u64), std::sync::Arc<Chunk>>,
}

impl Default for RunCache {
    fn default() -> Self {
        RunCache {
            runs: crate::memo::Memo::new(RUN_CACHE_LIMIT),
            chunks: crate::memo::Memo::new(CHUNK_CACHE_LIMIT),
        }
    }
}

/// Chunk folds kept before the cache is emptied (one is a few hundred bytes).
const CHUNK_CACHE_LIMIT: usize = 1 << 16;

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
    /// Threads per chunk ([`CHUNK`]), and per chunk a fingerprint of their states.
    chunk: u32,
    chunk_states: Vec<u64>,
    /// A fingerprint of every named-barrier slot's use count (a thread waiting at a named
    /// barrier reads its slot's, [`fold_threads`]).
    named_counts: u64,
    /// Per thread: the live lane of its warp that an `elect` chose (`Thread::leads`), if any.
    leader: Vec<Option<u32>>,
    /// Per kernel: its code has an `elect`.
    has_elect: Vec<bool>,
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
        let chunk = cross_check::chunk();
        let chunk_states = s
            .threads
            .chunks(chunk as usize)
            .map(|c| {
                let hashes: Vec<u64> = c.iter().map(|th| th.cached_hash()).collect();
                crate::explore::fingerprint(&hashes)
            })
            .collect();
        let counts: Vec<u16> = s.named.iter().map(|x| x.count).collect();
        let warp = |u: u32| (m.block_of(u), m.threads[u as usize].tid / 32);
        let leaders: Vec<u32> = (0..n as u32)
            .filter(|&u| s.threads[u as usize].leads && s.threads[u as usize].mode.live())
            .collect();
        let leader = (0..n as u32)
            .map(|u| leaders.iter().copied().find(|&l| warp(l) == warp(u)))
            .collect();
        let has_elect = m
            .kernels
            .iter()
            .map(|k| {
                k.code
                    .instrs
                    .iter()
                    .any(|i| matches!(i, Instr::Elect { .. }))
            })
            .collect();
        Threads {
            blocked_on,
            twin_of_prev,
            named_present,
            chunk,
            chunk_states,
            named_counts: crate::explore::fingerprint(&counts),
            leader,
            has_elect,
        }
    }

    /// How thread `u`'s run takes its `elect`s, and whether it also needs a run as the one
    /// chosen (its warp has no leader yet): with `elect` in its kernel, as its warp's leader
    /// decides, or, without one yet, as a lane that is not chosen plus a run as the one chosen
    /// ([`Elect`]); both outcomes where the warp is `unsettled` or the kernel has no `elect`.
    /// This reads other lanes' states (the leader is marked on its own lane): a chunk's key
    /// covers it ([`Threads::chunk_modes`]).
    fn elect_mode(&self, m: &PhaseModel, unsettled: &[bool], u: u32) -> (Elect, bool) {
        match self.leader[u as usize] {
            _ if unsettled[u as usize]
                || !self.has_elect[m.threads[u as usize].kernel as usize] =>
            {
                (Elect::Fork, false)
            }
            Some(l) if l == u => (Elect::Lead, false),
            Some(_) => (Elect::Skip, false),
            None => (Elect::Skip, true),
        }
    }

    /// A fingerprint of the `elect` modes of threads `range` ([`Threads::elect_mode`]) for a
    /// chunk's key: its threads' own states do not decide them (the leader of a warp is marked
    /// on one lane, maybe in another chunk, and `unsettled` is the round's). 0 when no kernel
    /// has an `elect` (every mode is `Fork`).
    ///
    /// Two things decide a mode besides the chunk's states, and the key needs each:
    ///
    /// - **`unsettled`** changes from one round of the fixed point to the next with nothing
    ///   else of the key (a round that marks a warp unsettled changes no stuck phase). Without
    ///   it the next round gets the chunk folded with decided modes again: the fixed point
    ///   looped forever on `corpus/production/elect_after_leader_exit.phase` in chunks of 3
    ///   (the agreement test `footprint_chunks_agree` hung), and `frozen_with` now folds
    ///   thread by thread there instead and the agreement test records the miss (it fails).
    /// - **Whether the warp has a leader** (a lane of another chunk, or none: before the
    ///   warp's first `elect`, or since a lane left). No protocol found needs this part: the
    ///   agreement test passes without it in chunks of 3 and of 32 (its corpus and generated
    ///   protocols), although it meets chunks whose modes differ only by it (a leader to
    ///   follow, or none) with footprints that agree. Why, for two states on one path: the
    ///   chunk's lanes in the same state on both sides of an election or of a lane's exit
    ///   means either a warp rendezvous fired without them moving, which cannot be (they take
    ///   part in every one, and their code cannot come back to a state: a loop's trip counter
    ///   grows), or a lane left that every run of the warp had leave after the warp's last
    ///   rendezvous (else the warp is unsettled and every mode is `Fork`), so that no `elect`
    ///   of the chunk's lanes is left to take either way. Two states on different paths
    ///   escape that argument (a lane that polls a barrier and exits in one, and polled before
    ///   the barrier completed and went on in the other, with the same phases by then), so
    ///   it is not a proof: kept, for the price of a fingerprint.
    fn chunk_modes(&self, m: &PhaseModel, unsettled: &[bool], range: std::ops::Range<u32>) -> u64 {
        if !self.has_elect.iter().any(|&e| e) {
            return 0;
        }
        let modes: Vec<(Elect, bool)> = range.map(|u| self.elect_mode(m, unsettled, u)).collect();
        crate::explore::fingerprint(&modes)
    }
}

/// Threads per chunk of the fold of the footprints ([`Chunk`]): a warp (the agreement test
/// sets fewer, [`cross_check::enable`], so that its small protocols have several chunks).
const CHUNK: u32 = 32;

/// The footprints of every actor but `t` in `s` (see the module doc).
///
/// `t` is the candidate thread (`u32::MAX` when the candidate is the in-flight event
/// `skip_event`, which then is left out instead).
///
/// The threads are folded chunk by chunk ([`Chunk`]): every chunk but the candidate's comes
/// from the cache, so a state of a long chain costs about as much as its step changed, not as
/// much as it has threads. Under [`cross_check`] every call also folds thread by thread and
/// records any difference.
pub fn frozen(
    m: &PhaseModel,
    s: &State,
    known: &Threads,
    t: u32,
    skip_event: Option<usize>,
) -> Frozen {
    let chunked = frozen_with(m, s, known, t, skip_event, true);
    if cross_check::enabled() {
        let fresh = frozen_with(m, s, known, t, skip_event, false);
        cross_check::record(m, &chunked, &fresh, t, skip_event);
    }
    chunked
}

/// What one round of the fixed point assumes and reads, shared by its threads.
#[derive(Clone, Copy)]
struct Round<'a, 'p> {
    m: &'a PhaseModel<'p>,
    s: &'a State,
    known: &'a Threads,
    stuck: &'a [bool],
    named_stuck: &'a [bool],
    still: Still,
    /// Fingerprint of what a run reads besides its thread ([`Round::run_context`]), for each
    /// way the thread standing still may matter to a thread: not at all (another block), by
    /// its block's whole-block barriers, and by its warp's rendezvous too.
    contexts: [u64; 3],
    /// Per thread: its warp's leader is not known to stay through the runs ([`Elect`],
    /// [`unsettled_warps`]).
    unsettled: &'a [bool],
}

impl Round<'_, '_> {
    /// Which of [`Round::contexts`] applies to threads `range`: the least of `still` they
    /// can read ([`Still::holds`] and [`Still::holds_warp`] ask only about the thread's own
    /// block and warp).
    fn still_level(&self, range: std::ops::Range<u32>) -> usize {
        let m = self.m;
        let mut level = 0;
        for u in range {
            if m.block_of(u) == self.still.block {
                level = level.max(1);
                if m.threads[u as usize].tid / 32 == self.still.warp {
                    return 2;
                }
            }
        }
        level
    }
}

/// [`frozen`], folding the threads chunk by chunk from the cache (`chunked`) or thread by
/// thread.
fn frozen_with(
    m: &PhaseModel,
    s: &State,
    known: &Threads,
    t: u32,
    skip_event: Option<usize>,
    chunked: bool,
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
    let mut f = blank(m, s);
    f.stuck = s
        .bars
        .iter()
        .map(|b| b.valid && (b.pending > 0 || b.tx != 0))
        .collect();
    f.named_present = known.named_present.clone();
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
    let nthreads = m.nthreads();
    let chunk = known.chunk;
    // Per thread: its warp's leader is not known to stay through the runs (see [`Elect`]).
    let mut unsettled = vec![false; nthreads as usize];
    let warp_of = |u: u32| (m.block_of(u), m.threads[u as usize].tid / 32);
    loop {
        let stuck: Vec<bool> = f.stuck.clone();
        let named_stuck = f.named_stuck.clone();
        let ctx: Vec<(bool, bool, u32)> = s
            .bars
            .iter()
            .zip(stuck.iter())
            .map(|(b, &st)| (st, b.valid, b.phase))
            .collect();
        let unheld = Still {
            block: u32::MAX,
            arrived: 0,
            warp: u32::MAX,
        };
        let block_only = Still {
            warp: u32::MAX,
            ..still
        };
        let contexts = [unheld, block_only, still]
            .map(|st| crate::explore::fingerprint(&(&ctx, &named_stuck, st)));
        let round = Round {
            m,
            s,
            known,
            stuck: &stuck,
            named_stuck: &named_stuck,
            still,
            contexts,
            unsettled: &unsettled,
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
        // The lanes whose runs took `elect`s as their warp's leader decides, in thread order.
        let mut elections = Elections::default();
        if chunked {
            for (c, lo) in (0..nthreads).step_by(chunk as usize).enumerate() {
                let range = lo..(lo + chunk).min(nthreads);
                if range.contains(&t) {
                    fold_threads(&round, range, t, &mut f, &mut quits, &mut elections);
                    continue;
                }
                // The `elect` modes of the chunk's threads depend on the leader marked on
                // another lane of their warp (maybe in another chunk) and on `unsettled`: in
                // the key.
                let context = crate::explore::fingerprint(&(
                    round.contexts[round.still_level(range.clone())],
                    known.named_counts,
                    chunk,
                    known.chunk_modes(m, &unsettled, range.clone()),
                ));
                let key = (lo, known.chunk_states[c], context);
                let chunk = m
                    .run_cache
                    .chunks
                    .get_or_compute(key, || std::sync::Arc::new(Chunk::fold(&round, range)));
                chunk.add_to(&mut f, &mut quits, &mut elections);
                if !chunk.ranged.is_empty()
                    && !f
                        .ranged_chunks
                        .iter()
                        .any(|c| std::sync::Arc::ptr_eq(c, &chunk))
                {
                    f.ranged_chunks.push(chunk);
                }
            }
        } else {
            fold_threads(&round, 0..nthreads, t, &mut f, &mut quits, &mut elections);
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
        let leaving = unsettled_warps(&elections.decided, warp_of);
        if !leaving.is_empty() {
            let mut marked = false;
            for u in 0..nthreads {
                if leaving.contains(&warp_of(u)) && !unsettled[u as usize] {
                    unsettled[u as usize] = true;
                    marked = true;
                }
            }
            if marked {
                continue;
            }
            // Every lane of those warps is unsettled already, yet some took `elect`s as a
            // leader decides: only a chunk from the cache can hold such runs (a fresh fold
            // forks the unsettled lanes' runs and does not list them), so its key missed what
            // decides the modes ([`Threads::chunk_modes`]). Going round again would give the
            // same chunk forever: fold thread by thread instead (and the agreement test
            // records the miss).
            debug_assert!(chunked, "a fresh fold listed an unsettled lane as decided");
            cross_check::missed_modes(t, skip_event);
            return frozen_with(m, s, known, t, skip_event, false);
        }
        add_choices(m, s, &elections.choosers, warp_of, &mut f);
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

/// Footprints with nothing in them yet: no barrier stuck, every named-barrier use stuck (as
/// phases are at the start of the fixed point), nothing present.
fn blank(m: &PhaseModel, s: &State) -> Frozen {
    let nb = s.bars.len();
    Frozen {
        stuck: vec![false; nb],
        bar: vec![0; nb],
        arrivals: vec![0; nb],
        tx_lower: vec![0; nb],
        buf: vec![0; m.buf_names.len()],
        buf_value: vec![None; m.buf_names.len()],
        ranged: Vec::new(),
        ranged_chunks: Vec::new(),
        ranged_listed: Default::default(),
        remote: false,
        remote_into: vec![false; m.nblocks as usize],
        pinned: vec![false; m.nblocks as usize],
        // Every named-barrier use, current or next, is assumed stuck at first, like phases.
        named_stuck: vec![true; s.named.len()],
        named_arrivals: vec![0; s.named.len()],
        named_present: vec![0; s.named.len()],
        named_count: vec![None; s.named.len()],
        named_nonblocking: vec![false; s.named.len()],
    }
}

/// Fold the footprints of threads `range` but `t` into `f` (and the pipeline quits they may
/// make into `quits`), in thread order, under what `round` assumes.
fn fold_threads(
    round: &Round,
    range: std::ops::Range<u32>,
    t: u32,
    f: &mut Frozen,
    quits: &mut Vec<(u32, u32, u32, u32)>,
    elections: &mut Elections,
) {
    let Round {
        m,
        s,
        known,
        stuck,
        named_stuck,
        still,
        unsettled,
        ..
    } = *round;
    // The cache is shared by the search's worker threads: it is locked only to look a run up
    // and to store one, never while a run is simulated. (A run is a pure function of its key,
    // so which thread stores it first does not matter; `crate::memo`, tested under loom.)
    let cache = &m.run_cache.runs;
    // The run of the thread just before, for its twins (with its run as the leader its warp
    // may still choose, and its `elect` mode).
    #[allow(clippy::type_complexity)]
    let mut prev: Option<(u32, Arc<Run>, Option<Arc<Run>>, (Elect, bool))> = None;
    for u in range {
        if u == t || !s.threads[u as usize].mode.live() {
            continue;
        }
        // Blocked for good: at a wait on a stuck phase that does not pass now.
        if known.blocked_on[u as usize].is_some_and(|b| stuck[b as usize]) {
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
            if named_stuck[slot as usize]
                || (whole_block && still.holds(m.block_of(u), u32::from(id)))
            {
                f.pinned[m.block_of(u) as usize] = true;
                continue;
            }
        }
        // With `elect` in its kernel: as the warp's leader decides, or, without one yet, as a
        // lane that is not chosen plus a run as the one chosen ([`Elect`]).
        let (elect, chooses) = known.elect_mode(m, unsettled, u);
        let sim = |mode: Elect| {
            let context = round.contexts[round.still_level(u..u + 1)];
            let ctx = if mode == Elect::Fork {
                context
            } else {
                crate::explore::fingerprint(&(context, mode))
            };
            let key = (u, s.threads[u as usize].cached_hash(), ctx);
            cache.get_or_compute(key, || {
                Arc::new(simulate(m, s, u, (stuck, named_stuck, still), mode))
            })
        };
        let (run, lead) = match prev.take() {
            // A twin (same class and state) with the same `elect` mode.
            Some((p, r, l, e))
                if p + 1 == u && known.twin_of_prev[u as usize] && e == (elect, chooses) =>
            {
                (r, l)
            }
            _ => (sim(elect), chooses.then(|| sim(Elect::Lead))),
        };
        if elect != Elect::Fork {
            elections.decided.push((u, run.clone(), lead.clone()));
        }
        add(m, s, u, &run, f);
        // As the one chosen the lane may take other paths: it is pinned only if neither run
        // may finish, and it may quit what either run may.
        let may_finish = run.may_finish || lead.as_ref().is_some_and(|l| l.may_finish);
        if !run.unknown && !may_finish {
            f.pinned[m.block_of(u) as usize] = true;
        }
        let lead_quits = lead.as_ref().map_or(&[][..], |l| &l.quits[..]);
        let lead_only = lead_quits
            .iter()
            .filter(|q| !run.quits.iter().any(|r| r.0 == q.0));
        for &(inst, bars, stages) in run.quits.iter().chain(lead_only) {
            match quits.iter_mut().find(|q| q.0 == inst) {
                Some(q) => q.3 += 1,
                None => quits.push((inst, bars, stages, 1)),
            }
        }
        if let Some(l) = &lead {
            elections.choosers.push((u, run.clone(), l.clone()));
        }
        prev = Some((u, run, lead, (elect, chooses)));
    }
}

/// The fold of one chunk of threads in one round ([`fold_threads`] into blank footprints),
/// kept as the entries it set: adding it to footprints ([`Chunk::add_to`]) gives what folding
/// its threads there one by one gives. Each field folds by an operation that is associative
/// (or, saturating sums, "the one value if all agree, else -1", the first value with a
/// conflict marked as `X_WRITE`, a list kept in the order its entries were first listed), so
/// folding the chunks in thread order is folding the threads in thread order.
#[derive(Debug, Default)]
pub struct Chunk {
    bar: Vec<(u32, u8)>,
    arrivals: Vec<(u32, u32)>,
    tx_lower: Vec<(u32, i64)>,
    buf: Vec<(u32, u8)>,
    buf_value: Vec<(u32, i64)>,
    /// As [`Frozen::ranged`] (one entry per range group), sorted by buffer instance.
    ranged: Vec<(u32, u32, u32, i64, bool)>,
    remote: bool,
    remote_into: Vec<u32>,
    pinned: Vec<u32>,
    named_arrivals: Vec<(u32, u32)>,
    named_count: Vec<(u32, i64)>,
    named_nonblocking: Vec<u32>,
    quits: Vec<(u32, u32, u32, u32)>,
    /// Its lanes' runs for the end of the round ([`Elections`]).
    elections: Elections,
}

impl Chunk {
    fn fold(round: &Round, range: std::ops::Range<u32>) -> Chunk {
        let mut f = blank(round.m, round.s);
        let mut quits = Vec::new();
        let mut elections = Elections::default();
        fold_threads(round, range, u32::MAX, &mut f, &mut quits, &mut elections);
        fn set<T: Copy + PartialEq + Default>(v: &[T]) -> Vec<(u32, T)> {
            v.iter()
                .enumerate()
                .filter(|&(_, &x)| x != T::default())
                .map(|(i, &x)| (i as u32, x))
                .collect()
        }
        fn marked(v: &[bool]) -> Vec<u32> {
            (0..v.len() as u32).filter(|&i| v[i as usize]).collect()
        }
        Chunk {
            bar: set(&f.bar),
            arrivals: set(&f.arrivals),
            tx_lower: set(&f.tx_lower),
            buf: set(&f.buf),
            buf_value: f
                .buf_value
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (i as u32, v)))
                .collect(),
            ranged: {
                // Sorted by buffer instance, for [`Frozen::ranged_of`].
                let mut r = f.ranged;
                r.sort_by_key(|e| e.1);
                r
            },
            remote: f.remote,
            remote_into: marked(&f.remote_into),
            pinned: marked(&f.pinned),
            named_arrivals: set(&f.named_arrivals),
            named_count: f
                .named_count
                .iter()
                .enumerate()
                .filter_map(|(i, c)| c.map(|c| (i as u32, c)))
                .collect(),
            named_nonblocking: marked(&f.named_nonblocking),
            quits,
            elections,
        }
    }

    /// Fold this chunk into `f` and `quits` as [`add`] folds a run (and [`fold_threads`] its
    /// thread's quits and pinning, and its lanes' `elections`), but for its ranged accesses,
    /// which the caller lists by reference ([`Frozen::ranged_chunks`]).
    fn add_to(
        &self,
        f: &mut Frozen,
        quits: &mut Vec<(u32, u32, u32, u32)>,
        elections: &mut Elections,
    ) {
        elections
            .decided
            .extend(self.elections.decided.iter().cloned());
        elections
            .choosers
            .extend(self.elections.choosers.iter().cloned());
        for &(b, x) in &self.bar {
            f.bar[b as usize] |= x;
        }
        for &(b, n) in &self.arrivals {
            f.arrivals[b as usize] = f.arrivals[b as usize].saturating_add(n);
        }
        for &(b, n) in &self.tx_lower {
            f.tx_lower[b as usize] = f.tx_lower[b as usize].saturating_add(n).min(TX_UNBOUNDED);
        }
        for &(x, v) in &self.buf {
            f.buf[x as usize] |= v;
        }
        for &(x, v) in &self.buf_value {
            let cur = &mut f.buf_value[x as usize];
            match *cur {
                None => *cur = Some(v),
                Some(w) if w == v => {}
                Some(_) => f.buf[x as usize] |= X_WRITE,
            }
        }
        f.remote |= self.remote;
        for &c in &self.remote_into {
            f.remote_into[c as usize] = true;
        }
        for &c in &self.pinned {
            f.pinned[c as usize] = true;
        }
        for &(slot, n) in &self.named_arrivals {
            f.named_arrivals[slot as usize] = f.named_arrivals[slot as usize].saturating_add(n);
        }
        for &(slot, c) in &self.named_count {
            let cur = &mut f.named_count[slot as usize];
            *cur = match *cur {
                None => Some(c),
                Some(x) if x == c => Some(x),
                _ => Some(-1),
            };
        }
        for &slot in &self.named_nonblocking {
            f.named_nonblocking[slot as usize] = true;
        }
        for &(inst, bars, stages, n) in &self.quits {
            match quits.iter_mut().find(|q| q.0 == inst) {
                Some(q) => q.3 += n,
                None => quits.push((inst, bars, stages, n)),
            }
        }
    }
}

/// Checking the chunked fold against the fold thread by thread, on every call of [`frozen`]
/// (the agreement test `checker/tests/footprint_chunks_agree.rs` turns it on): the two must
/// give the same footprints, field by field.
pub mod cross_check {
    use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

    static ON: AtomicBool = AtomicBool::new(false);
    static CHUNK: AtomicU32 = AtomicU32::new(super::CHUNK);
    static COMPARED: AtomicU64 = AtomicU64::new(0);
    static DIFFERENT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

    /// Compare on every call from now on, in this process, with chunks of `chunk` threads
    /// (at least 1).
    pub fn enable(chunk: u32) {
        CHUNK.store(chunk.max(1), Ordering::SeqCst);
        ON.store(true, Ordering::SeqCst);
    }

    /// Threads per chunk.
    pub(super) fn chunk() -> u32 {
        CHUNK.load(Ordering::Relaxed)
    }

    pub(super) fn enabled() -> bool {
        ON.load(Ordering::Relaxed)
    }

    /// Calls compared so far.
    pub fn compared() -> u64 {
        COMPARED.load(Ordering::SeqCst)
    }

    /// The differences found so far (at most the first 16).
    pub fn differences() -> Vec<String> {
        DIFFERENT.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A chunked fold met a chunk from the cache whose lanes took `elect`s as their warp's
    /// leader decides while that warp was unsettled (`frozen_with` then folds thread by
    /// thread): recorded as a difference.
    pub(super) fn missed_modes(t: u32, skip_event: Option<usize>) {
        if !enabled() {
            return;
        }
        let mut d = DIFFERENT.lock().unwrap_or_else(|e| e.into_inner());
        if d.len() < 16 {
            d.push(format!(
                "candidate {t} (event {skip_event:?}): a cached chunk's lanes took `elect` as a leader decides in an unsettled warp"
            ));
        }
    }

    pub(super) fn record(
        m: &super::PhaseModel,
        chunked: &super::Frozen,
        fresh: &super::Frozen,
        t: u32,
        skip_event: Option<usize>,
    ) {
        COMPARED.fetch_add(1, Ordering::SeqCst);
        if !chunked.same_as(fresh, m) {
            let mut d = DIFFERENT.lock().unwrap_or_else(|e| e.into_inner());
            if d.len() < 16 {
                d.push(format!(
                    "candidate {t} (event {skip_event:?}): chunked {chunked:?}\n  fresh {fresh:?}"
                ));
            }
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
    add_with(m, s, u, run, true, f);
}

/// [`add`]; without `counts`, the run's arrivals, transaction bytes and named-barrier arrivals
/// are left out (what `elect::add_choices` sums itself), as if those lists were empty.
fn add_with(m: &PhaseModel, s: &State, u: u32, run: &Run, counts: bool, f: &mut Frozen) {
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
    let none = &[][..];
    for &(slot, n) in if counts { &run.named[..] } else { none } {
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
    for &(b, n) in if counts { &run.arrivals[..] } else { none } {
        f.arrivals[b as usize] = f.arrivals[b as usize].saturating_add(n);
    }
    let tx: &[(u32, i64)] = if counts { &run.tx_lower } else { &[] };
    for &(b, n) in tx {
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
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
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
