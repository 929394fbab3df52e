//! A generic breadth-first explorer, in the style of TLC and stateright: it knows nothing of
//! the `.phase` language. Visited states are stored as 64-bit fingerprints with a parent
//! pointer (parent index + action), not as full states; only the BFS frontier holds states.
//! A counterexample is rebuilt by following parent pointers and replaying the actions from the
//! initial state. Breadth-first order makes the first path found to any finding a shortest one.

use crate::memo::{Claim, Lock, Visited, VisitedShard};
use std::collections::{BTreeMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::time::Instant;

mod settled;
mod workers;

use settled::Settled;
pub use workers::{
    CHEAP_PARALLEL_FROM, PARALLEL_ROUND_BYTES, PARALLEL_ROUND_STATES, Rayon, Sequential, Workers,
    ensure_pool, narrow_round, set_threads,
};

/// What one transition produced.
pub enum Step<S> {
    Next(S),
    /// The path ends here (undefined behaviour, model error): no successor.
    Stop,
    /// A search bound (e.g. loop trips) was hit: no successor, and the search is incomplete.
    Bound(String),
}

/// A transition system with findings.
pub trait Model {
    type State: Clone + Hash + Eq;
    type Finding;
    type Key: Ord + Clone;

    fn init_state(&self) -> Self::State;
    /// Enabled actions, in a deterministic order.
    fn actions(&self, state: &Self::State, out: &mut Vec<u32>);
    /// Apply `action`; findings of the transition go to `found`.
    fn next(
        &self,
        state: &Self::State,
        action: u32,
        found: &mut Vec<Self::Finding>,
    ) -> Step<Self::State>;
    /// Findings of a state itself (races between enabled accesses, deadlock when `actions`
    /// is empty, ...).
    fn check_state(&self, state: &Self::State, actions: &[u32], found: &mut Vec<Self::Finding>);
    fn key(&self, finding: &Self::Finding) -> Self::Key;
    /// Partial-order reduction: an enabled action independent of everything the other actors
    /// can still do; the explorer then takes only that action from this state. Models must
    /// have acyclic state graphs for this (no cycle proviso is applied). `history` says how
    /// often the model's costly analysis found such an action before, for a back-off that
    /// depends only on the search order (not on timing or the number of cores).
    fn ample(
        &self,
        _state: &Self::State,
        _actions: &[u32],
        _history: ReductionHistory,
    ) -> Reduction {
        Reduction::default()
    }
    /// Rough size of a state, for the memory limit. It may count parts shared with other
    /// states by their share: the explorer asks only when the live states are the same on any
    /// number of cores (the queue and the current round's new states).
    fn state_bytes(&self, state: &Self::State) -> usize;
    /// Bytes the model holds for the search beside its states (parts of states stored once,
    /// such as interned thread states, which [`Model::state_bytes`] does not count), for the
    /// memory limit. The explorer asks only when every worker is done with a round, so that
    /// it depends only on the states made so far, not on timing.
    fn shared_bytes(&self) -> u64 {
        0
    }
    /// The goals of the search that the finding meets, one bit each ([`Model::goals`]); the
    /// search is decided, and may stop early ([`Limits::after_findings`]), once its findings
    /// meet every goal. By default there is one goal, and every finding meets it.
    fn meets(&self, _finding: &Self::Finding) -> u64 {
        1
    }
    /// Every goal's bit.
    fn goals(&self) -> u64 {
        1
    }
}

/// What the explorer tells [`Model::ample`] of the reduction so far: the states expanded before
/// this one (`tries`, counting this one), and of the states expanded before the current round
/// ([`ROUND`]), how many the model's costly analysis ran on (`analysed`, [`Reduction`]) and
/// how many of those it reduced (`hits`). The rate of hits is `hits / analysed`, both as of the
/// round's start: states the analysis never ran on (a prologue's `init`s and
/// `cluster_arrive`s, hundreds of states in a cluster kernel) say nothing of it, and
/// `hits / tries` would also fall through every round while `hits` stays put.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReductionHistory {
    pub tries: u64,
    pub analysed: u64,
    pub hits: u64,
}

/// What [`Model::ample`] decided: the action to take alone, if any, and whether its costly
/// analysis ran (it counts in [`ReductionHistory::analysed`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Reduction {
    pub ample: Option<Ample>,
    pub analysed: bool,
}

/// An action to take alone, and whether the model's costly analysis found it (it counts in
/// [`ReductionHistory::hits`]).
#[derive(Clone, Copy, Debug)]
pub struct Ample {
    pub action: u32,
    pub by_analysis: bool,
}

/// States expanded together (a round): taken from the front of the queue, expanded and
/// deduplicated in parallel (rayon; the workers claim their successors in the shared visited
/// set, [`Visited`]), then numbered one state after the other in queue order, exactly as a
/// sequential search would. Round boundaries depend only on the queue, never on the number of
/// cores, so every run visits the same states in the same order and prints the same findings.
/// Large, so that the workers join twice per thousand states rather than sleeping and waking
/// per handful (issue 24); the reduction's history ([`ReductionHistory::hits`]) is as of the
/// round's start.
pub const ROUND: usize = 1024;

/// The most bytes of states a round takes (at least one state): a round's successors are all
/// made before any is queued or dropped, so large states make smaller rounds. (The new states
/// of a round count in the memory estimate from the start of its walk.)
pub const ROUND_BYTES: u64 = 16 << 20;

/// A search that has visited this many times [`Limits::pause_at`] states pauses even if they
/// are on one path (a long chain meets the random schedules too: 8 192 states by default).
pub const CHAIN_PAUSE: u64 = 32;

/// Locks the visited set is split into: many more than cores, so that a claim rarely waits.
pub const VISITED_SHARDS: usize = 1024;

/// Limits of one search.
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_states: u64,
    pub max_memory_bytes: u64,
    /// Wall-clock budget; `None`: none.
    pub max_time: Option<std::time::Duration>,
    /// Once the findings meet every goal ([`Model::meets`]), explore at most this many more
    /// states, then stop (the verdict is decided; the rest would only add findings). `None`:
    /// run to the end.
    pub after_findings: Option<u64>,
    /// Call the pause hook when this many states off the search's deepest path are visited,
    /// then again each time that count has grown fourfold, while nothing decisive was found
    /// (the bug-hunting portfolio runs there, taking a share of the time that shrinks as the
    /// search grows). States on one path do not count: a search that the reductions turn into
    /// a chain (one successor per state) follows a single interleaving to the end of the
    /// kernel, as fast as one random schedule would, and the schedules have nothing to add to
    /// it (issue 24: the 288-thread per-warp ring, a chain of 3 151 states, spent most of its
    /// time in the walks of its pause). A chain still pauses after [`CHAIN_PAUSE`] times this
    /// many states, and a search that a limit stops before its first pause pauses then.
    pub pause_at: Option<u64>,
}

/// Why a search stopped early and what it covered, as the pause hook returns it. The hook is
/// given the number of states the search has visited (the portfolio sizes its later rounds by
/// it: `portfolio::WALK_STEPS_PER_STATE`).
pub type Stopped = (String, String);

/// Progress, reported to an optional callback every 16k states, and at least every
/// [`PROGRESS_EVERY`] while the search runs (a search of large states is slow per state).
#[derive(Clone, Debug)]
pub struct Progress {
    pub states: u64,
    pub depth: u32,
    pub queued: u64,
    pub elapsed_ms: u64,
    /// The memory estimate that `Limits::max_memory_bytes` bounds.
    pub memory_bytes: u64,
}

/// The longest a search goes without a progress report (the clock is read every 64 states).
pub const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// A finding with where it was reached: the state (by index) and the action taken from it
/// (`None` for findings of the state itself).
pub struct Found<F> {
    pub finding: F,
    pub state: u32,
    pub action: Option<u32>,
}

pub struct Outcome<F> {
    pub found: Vec<Found<F>>,
    pub states: u64,
    pub transitions: u64,
    pub peak_memory_bytes: u64,
    pub elapsed_ms: u64,
    /// Why the search stopped early and what it covered.
    pub incomplete: Option<(String, String)>,
    /// Parent pointers: `parents[i] = (parent index, action)`; the root is its own parent.
    parents: Vec<(u32, u32)>,
}

impl<F> Outcome<F> {
    /// The actions leading from the initial state to state `index`.
    pub fn path(&self, index: u32) -> Vec<u32> {
        let mut path = Vec::new();
        let mut i = index;
        while i != 0 {
            let (p, a) = self.parents[i as usize];
            path.push(a);
            i = p;
        }
        path.reverse();
        path
    }
}

/// 64-bit fingerprint of a state: its `Hash` stream collected as bytes, then XXH3-64 over them.
///
/// Feeding the derived `Hash` of a state straight into SipHash costs one hasher round per field
/// (it was 45% of the search time at 10 threads); appending the fields to a reused buffer and
/// hashing it in one pass is several times cheaper, and XXH3 has full 64-bit quality, so the
/// chance that two distinct states share a fingerprint stays that of a random 64-bit value.
/// The derived `Hash` writes a length before every sequence, so the byte stream is unambiguous.
/// Fixed seed: deterministic across runs and machines of one endianness.
/// Re-entrant: a value whose `Hash` fingerprints its parts (a shared thread caches its own
/// fingerprint) calls back in while hashing; each level takes its own buffer from a per-thread
/// pool and returns it, so no call allocates once the pool is warm.
pub fn fingerprint<S: Hash>(s: &S) -> u64 {
    thread_local! {
        static POOL: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut bytes = ByteStream(POOL.with(|p| p.borrow_mut().pop()).unwrap_or_default());
    bytes.0.clear();
    s.hash(&mut bytes);
    let h = xxhash_rust::xxh3::xxh3_64(&bytes.0);
    POOL.with(|p| p.borrow_mut().push(bytes.0));
    h
}

/// A `Hasher` that only records what it is fed (see [`fingerprint`]).
struct ByteStream(Vec<u8>);

impl Hasher for ByteStream {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
    fn finish(&self) -> u64 {
        xxhash_rust::xxh3::xxh3_64(&self.0)
    }
}

/// Bytes per visited entry: the fingerprint map's slot (key and value, 16 bytes, a control
/// byte) at its load factor (7/8) and up to twice the entries after growing, and the
/// parent pointer (8 bytes, up to twice after growing): measured on the full-size double
/// buffer, the estimate is 0.6-1.2 times the resident size (docs/performance.md).
const VISITED_ENTRY_BYTES: u64 = 17 * 8 / 7 * 2 + 8 * 2;

/// One successor of an expanded state, computed in parallel with the others of its round.
enum Move<S> {
    Next {
        state: S,
        fingerprint: u64,
    },
    /// A successor already visited, or reached earlier in the round (dropped by the worker).
    Duplicate,
    Stop,
    Bound(String),
}

/// Everything the search needs from one state: computed on any worker, touching of the shared
/// search state only the visited set (its successors' claims).
struct Expansion<S, F> {
    /// Findings of the state itself.
    found: Vec<F>,
    /// (action, what it produced, its findings), in the order a sequential search takes them.
    moves: Vec<(u32, Move<S>, Vec<F>)>,
    /// Transitions taken that produced no move (an ample action that stopped).
    discarded: u64,
    /// The reduction's costly analysis chose the action taken alone.
    hit: bool,
    /// The reduction's costly analysis ran.
    analysed: bool,
}

/// A value one worker puts in and another takes out.
type Slot<T> = std::sync::Mutex<Option<T>>;

fn expand<M: Model>(
    model: &M,
    state: &M::State,
    history: ReductionHistory,
) -> Expansion<M::State, M::Finding> {
    let mut actions = Vec::new();
    model.actions(state, &mut actions);
    let mut found = Vec::new();
    model.check_state(state, &actions, &mut found);
    let step = |a: u32| {
        let mut f = Vec::new();
        let m = match model.next(state, a, &mut f) {
            Step::Next(next) => Move::Next {
                fingerprint: fingerprint(&next),
                state: next,
            },
            Step::Stop => Move::Stop,
            Step::Bound(why) => Move::Bound(why),
        };
        (a, m, f)
    };
    let mut discarded = 0;
    let mut hit = false;
    let reduction = model.ample(state, &actions, history);
    let analysed = reduction.analysed;
    if let Some(ample) = reduction.ample {
        // The state graphs of this model are acyclic (every thread step advances a pc or a
        // loop counter, every event firing removes an event), so the ample action can never
        // be ignored along a cycle and no cycle proviso is needed.
        let (a, m, f) = step(ample.action);
        hit = ample.by_analysis;
        if let Move::Next { .. } = m {
            return Expansion {
                found,
                moves: vec![(a, m, f)],
                discarded,
                hit,
                analysed,
            };
        }
        // It stopped (an error, a bound): expand every action instead.
        discarded = 1;
    }
    Expansion {
        found,
        moves: actions.iter().map(|&a| step(a)).collect(),
        discarded,
        hit,
        analysed,
    }
}

/// The value in `slot`, taken out (a lock that a panicking worker left is still usable: the
/// value either was taken or not).
fn take<S>(slot: &std::sync::Mutex<Option<S>>) -> Option<S> {
    slot.lock().unwrap_or_else(|e| e.into_inner()).take()
}

pub fn explore<M>(
    model: &M,
    limits: &Limits,
    progress: Option<&dyn Fn(&Progress)>,
    pause: Option<&mut dyn FnMut(u64) -> Option<Stopped>>,
) -> Outcome<M::Finding>
where
    M: Model + Sync,
    M::State: Send + Sync,
    M::Finding: Send,
{
    explore_on::<M, Rayon, std::sync::Mutex<VisitedShard>>(&Rayon, model, limits, progress, pause)
}

/// The claim of the successor by move `j` of the state at position `i` of the round: the
/// sequential search's order (queue order, then action order), packed below
/// [`crate::memo::VISITED`].
fn claim_key(i: usize, j: usize) -> u64 {
    ((i as u64) << 32) | j as u64
}

/// [`explore`] with the rounds expanded by `workers`, the visited set's shards behind locks
/// of type `L`. The workers expand the states of a round and claim their successors in the
/// visited set, then settle which claims won ([`Visited`]); the parent pointers, the queue,
/// the findings and every limit are handled by the calling thread, state by state in queue
/// order, as the sequential search does.
pub fn explore_on<M, W, L>(
    workers: &W,
    model: &M,
    limits: &Limits,
    progress: Option<&dyn Fn(&Progress)>,
    mut pause: Option<&mut dyn FnMut(u64) -> Option<Stopped>>,
) -> Outcome<M::Finding>
where
    M: Model + Sync,
    M::State: Send + Sync,
    M::Finding: Send,
    W: Workers,
    L: Lock<VisitedShard> + Sync,
{
    let start = Instant::now();
    let visited: Visited<L> = Visited::new(workers.visited_shards());
    let mut parents: Vec<(u32, u32)> = Vec::new();
    // (state, index, depth, its `state_bytes` when queued: subtracted as is when it leaves)
    let mut queue: VecDeque<(M::State, u32, u32, u64)> = VecDeque::new();
    let mut found_keys: BTreeMap<M::Key, ()> = BTreeMap::new();
    let mut found: Vec<Found<M::Finding>> = Vec::new();
    let mut transitions = 0u64;
    let mut queue_bytes: u64 = 0;
    let mut peak = 0u64;
    let mut incomplete: Option<(String, String)> = None;
    let mut bound_hit: Option<String> = None;

    let init = model.init_state();
    visited.mark(fingerprint(&init));
    parents.push((0, 0));
    let bytes = model.state_bytes(&init) as u64;
    queue_bytes += bytes;
    queue.push_back((init, 0, 0, bytes));

    let mut last_depth_done = 0u32;
    // States visited when the findings first met every goal; the goals met and the findings
    // looked at so far.
    let mut decided_at: Option<u64> = None;
    let mut met = 0u64;
    let mut next_pause = limits.pause_at;
    // The depth of the deepest state queued so far: states beyond `deepest + 1` are off the
    // search's deepest path (`Limits::pause_at`).
    let mut deepest = 0u32;
    // The hook ran at least once; the search stopped at one of its limits.
    let (mut paused, mut at_limit) = (false, false);
    let mut scanned = 0usize;
    let mut record = |f: M::Finding, state: u32, action: Option<u32>, found: &mut Vec<_>| {
        let key = model.key(&f);
        if found_keys.insert(key, ()).is_none() {
            found.push(Found {
                finding: f,
                state,
                action,
            });
        }
    };

    let mut expanded = 0u64;
    let mut hits = 0u64;
    let mut analysed = 0u64;
    let (mut next_progress, mut last_progress) = (16_384u64, start);
    'search: while !queue.is_empty() {
        // Up to ROUND states, and no more than ROUND_BYTES of them: the round's new states
        // are held until it is walked, so large states make smaller rounds.
        let mut n = 0;
        let mut taken_bytes = 0u64;
        while n < queue.len().min(ROUND) && (n == 0 || taken_bytes < ROUND_BYTES) {
            taken_bytes += queue[n].3;
            n += 1;
        }
        // Each state of the round is taken by the worker that expands it, and dropped there:
        // dropping a state frees what other workers allocated, serial work on the calling
        // thread otherwise (docs/design.md, "Parallel search").
        let mut batch: Vec<(u32, u32, u64)> = Vec::with_capacity(n);
        let states: Vec<std::sync::Mutex<Option<M::State>>> = queue
            .drain(..n)
            .map(|(state, index, depth, bytes)| {
                batch.push((index, depth, bytes));
                std::sync::Mutex::new(Some(state))
            })
            .collect();
        let (tries0, analysed0, hits0) = (expanded, analysed, hits);
        // Expand and claim: a successor that is already visited, or behind a smaller claim,
        // is dropped by its worker; the moves left as `Move::Next` lead their claims, to be
        // settled in the second phase.
        let expansions: Vec<Slot<Expansion<M::State, M::Finding>>> =
            workers.map_round(n, taken_bytes, &|i| {
                let history = ReductionHistory {
                    tries: tries0 + i as u64 + 1,
                    analysed: analysed0,
                    hits: hits0,
                };
                let state = take(&states[i]).expect("each state of a round is expanded once");
                let mut ex = expand(model, &state, history);
                drop(state);
                for (j, (_, m, _)) in ex.moves.iter_mut().enumerate() {
                    if let Move::Next {
                        fingerprint: fp, ..
                    } = *m
                        && visited.claim(fp, claim_key(i, j)) != Claim::Leading
                    {
                        *m = Move::Duplicate;
                    }
                }
                std::sync::Mutex::new(Some(ex))
            });
        drop(states);
        // Settle, once every claim of the round is made: the least claim on each new state
        // wins. The same worker measures each winner (`Model::state_bytes` is a function of
        // the state alone) and boils the expansion down to what the walk below needs
        // ([`Settled`]), dropping the rest (the losers, the moves' list) there: frees of
        // blocks other workers allocated were the calling thread's largest serial cost.
        let settled: Vec<Settled<M::State, M::Finding>> = workers.map_cheap_batch(n, &|i| {
            let ex = take(&expansions[i]).expect("each expansion is settled once");
            Settled::of(ex, |j, fp, state| {
                visited
                    .settle(fp, claim_key(i, j))
                    .then(|| model.state_bytes(state) as u64)
            })
        });
        drop(expansions);
        // Parts the model stores once for the whole search (interned thread states): every
        // successor of the round is made, so this is the same on any number of cores.
        let shared_bytes = model.shared_bytes();
        // The new states of the round, held until they are queued: counted in the memory
        // estimate from the start of the walk (each moves into `queue_bytes` when queued).
        let mut pending_bytes: u64 = settled.iter().map(|s| s.new_bytes).sum();
        for ((index, depth, bytes), st) in batch.into_iter().zip(settled) {
            expanded += 1;
            hits += u64::from(st.hit);
            analysed += u64::from(st.analysed);
            transitions += st.transitions;
            queue_bytes = queue_bytes.saturating_sub(bytes);
            if depth > 0 {
                last_depth_done = last_depth_done.max(depth - 1);
            }
            for (action, f) in st.found {
                record(f, index, action, &mut found);
            }
            for (a, state, bytes) in st.winners {
                let new_index = parents.len() as u32;
                parents.push((index, a));
                queue_bytes += bytes;
                pending_bytes = pending_bytes.saturating_sub(bytes);
                queue.push_back((state, new_index, depth + 1, bytes));
                deepest = deepest.max(depth + 1);
            }
            if let Some(why) = st.bound {
                bound_hit.get_or_insert(why);
            }
            let states = parents.len() as u64;
            if decided_at.is_none() {
                for f in &found[scanned..] {
                    met |= model.meets(&f.finding);
                }
                if met & model.goals() == model.goals() {
                    decided_at = Some(states);
                }
                scanned = found.len();
            }
            if let (Some(at), Some(more)) = (decided_at, limits.after_findings)
                && states >= at.saturating_add(more)
            {
                incomplete = Some((
                    format!(
                        "stopped {more} states after the first error (or every finding looked for) was found; --exhaustive searches on for every finding"
                    ),
                    format!("all interleavings up to depth {last_depth_done} ({states} states)"),
                ));
                break 'search;
            }
            if decided_at.is_none()
                && next_pause.is_some_and(|at| {
                    states.saturating_sub(u64::from(deepest) + 1) >= at
                        || states >= at.saturating_mul(CHAIN_PAUSE)
                })
                && let Some(hook) = pause.as_mut()
            {
                next_pause = next_pause.map(|at| at.saturating_mul(4));
                paused = true;
                if let Some(stopped) = hook(states) {
                    incomplete = Some(stopped);
                    break 'search;
                }
            }
            let mem = states * VISITED_ENTRY_BYTES + queue_bytes + pending_bytes + shared_bytes;
            peak = peak.max(mem);
            if let Some(cb) = progress
                && (states >= next_progress
                    || (expanded.is_multiple_of(64) && last_progress.elapsed() >= PROGRESS_EVERY))
            {
                next_progress = states + 16_384;
                last_progress = Instant::now();
                cb(&Progress {
                    states,
                    depth,
                    queued: queue.len() as u64,
                    elapsed_ms: start.elapsed().as_millis() as u64,
                    memory_bytes: mem,
                });
            }
            if states >= limits.max_states {
                incomplete = Some((
                    format!(
                        "max-states ({}) reached; raise it with --max-states",
                        limits.max_states
                    ),
                    format!("all interleavings up to depth {last_depth_done}"),
                ));
                at_limit = true;
                break 'search;
            }
            // The clock is read every 64 expanded states: cheap, and a state costs well under
            // 100 ms even at 300 threads, so the limit is overshot by a few seconds at most.
            if let Some(budget) = limits.max_time
                && expanded.is_multiple_of(64)
                && start.elapsed() >= budget
            {
                incomplete = Some((
                    format!(
                        "max-time ({}) reached; raise it with --max-time, or model fewer threads: smaller parameters with --param, or one thread per warp where warps arrive and release as a whole (a block of fewer than 32 threads is a scaled-down model, docs/language.md)",
                        format_duration(budget)
                    ),
                    format!("all interleavings up to depth {last_depth_done} ({states} states)"),
                ));
                at_limit = true;
                break 'search;
            }
            if mem >= limits.max_memory_bytes {
                incomplete = Some((
                    format!(
                        "max-memory ({} MiB) reached; raise it with --max-memory",
                        limits.max_memory_bytes >> 20
                    ),
                    format!("all interleavings up to depth {last_depth_done}"),
                ));
                at_limit = true;
                break 'search;
            }
        }
    }
    // A search stopped by a limit before its first pause (a chain: `Limits::pause_at`), after
    // at least `pause_at` states, still gets one round of the hook, so that a chain too long
    // for the limits meets the random schedules at least once (what the hook finds replaces
    // the limit as the reason). A search stopped sooner (`--max-states 1`) gets none.
    if at_limit
        && !paused
        && decided_at.is_none()
        && limits.pause_at.is_some_and(|at| parents.len() as u64 >= at)
        && let Some(hook) = pause.as_mut()
        && let Some(stopped) = hook(parents.len() as u64)
    {
        incomplete = Some(stopped);
    }
    if incomplete.is_none()
        && let Some(why) = bound_hit
    {
        incomplete = Some((why, "every interleaving within the loop bound".to_string()));
    }
    Outcome {
        found,
        states: parents.len() as u64,
        transitions,
        peak_memory_bytes: peak,
        elapsed_ms: start.elapsed().as_millis() as u64,
        incomplete,
        parents,
    }
}

/// `90 s`, `10 min`: how a time limit is named in messages.
pub fn format_duration(d: std::time::Duration) -> String {
    let s = d.as_secs();
    if s >= 60 && s.is_multiple_of(60) {
        format!("{} min", s / 60)
    } else if s > 0 {
        format!("{s} s")
    } else {
        format!("{} ms", d.as_millis())
    }
}
