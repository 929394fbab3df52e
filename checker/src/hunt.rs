//! The bug-hunting portfolio: random schedules through a [`Model`], beside the exhaustive
//! search, so that a hazard in a protocol too large to search completely is still found at
//! once. Like the explorer it knows nothing of the `.phase` language.
//!
//! Three kinds of walk take turns (walk `i` uses kind `i % 3`):
//! - **uniform**: every enabled action equally likely;
//! - **waves with laggards**: one or two actors are held back (scheduled only when nothing
//!   else can move) from a random point of their own on, and the others move in waves: after
//!   an actor steps, another enabled actor at the same statement goes next when there is one.
//!   A laggard is how most phase bugs show (a consumer still reading when the slot is
//!   refilled; an arrival that lands in the next phase), and waves fold into short traces;
//! - **priorities** (PCT, Burckhardt et al. 2010): a random priority per actor, the highest
//!   enabled one runs; at a few random steps the running actor drops to the lowest priority.
//!
//! A fourth kind is not random in whom it holds back: [`held_back`] runs one walk per thread
//! the caller names, holding that thread back from the point after which it only waits (its
//! last arrival, rendezvous or copy in the protocol's measured run, [`profile`]) until nothing
//! else can move, to the end of the kernel. Such a thread's lag behind the others is bounded by
//! nothing, and how far it can fall behind is where a lane left two phases behind its warp's
//! leader (ThunderKittens' producer warp, issue 23) shows; a uniformly picked laggard is that
//! thread once in about thirty walks (31 such lanes of 512 threads, laggards in a third of the
//! walks), and each walk costs seconds at 512 threads: a minute ran eight.
//!
//! A walk stops at a dead end (deadlock, undefined behaviour) or after `max_steps`. Every
//! finding is kept with the path that reached it (the actions from the initial state); the
//! caller replays and shortens it through the unreduced semantics before reporting it.
//! `ok` never comes from here: random schedules prove nothing.
//!
//! Walks run in rounds of a fixed size on every core (rayon); each walk's random stream is
//! fixed by its index, each walk is capped by a number of steps and a hunt by a number of
//! rounds, never by the clock, and results are merged in walk order: a hunt finds the same
//! things on any machine and any number of cores, so two runs print the same report.

use crate::explore::Model;
#[cfg(doc)]
use crate::explore::Step;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What the hunter needs to know of a model beyond [`Model`].
pub trait Walkable: Model {
    /// Number of actors that are threads (actions below it name a thread; others are events).
    fn threads(&self) -> u32;
    /// One walk's state, stepped in place.
    type Walker<'w>: Walker<Finding = Self::Finding>
    where
        Self: 'w;
    /// A walk from the initial state.
    fn walker(&self) -> Self::Walker<'_>;
}

/// The state of one walk, changed in place by each step: a walk keeps no history but the
/// actions it took (its path), which is all a hit needs to be replayed.
pub trait Walker {
    type Finding;
    /// The enabled actions, in the order of [`Model::actions`].
    fn actions(&mut self, out: &mut Vec<u32>);
    /// Findings of the current state ([`Model::check_state`]); at least those the walk's
    /// previous state did not have (the hunt keeps a finding only at the first state of the
    /// walk that has it: the shortest path).
    fn check(&mut self, actions: &[u32], found: &mut Vec<Self::Finding>);
    /// The statement an action executes (actions with the same label form a wave).
    fn label(&self, action: u32) -> u64;
    /// What the thread `action` (below [`Walkable::threads`]) does to the others if it steps now.
    fn kind(&self, action: u32) -> StepKind;
    /// Take the enabled `action`; findings of the transition go to `found`. `false`: the path
    /// ends here ([`Step::Stop`] or [`Step::Bound`]).
    fn step(&mut self, action: u32, found: &mut Vec<Self::Finding>) -> bool;
}

/// What a thread's step does to the other threads ([`Walker::kind`]): whether holding the
/// thread back before it can hold them up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// It may let another thread go on: an arrival, an `init`, a rendezvous (`syncthreads`,
    /// named barriers, `syncwarp`, `elect`, cluster barriers), a copy that completes bytes, a
    /// store a poll may read.
    Signal,
    /// It waits for or tests a phase (a parity or token wait, `test_wait`, a pipeline wait).
    Wait,
    /// Neither (a read, a compute step, a fence, a branch).
    Other,
}

/// A thread to hold back, from when on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldBack {
    pub thread: u32,
    /// It is held back once it has taken this many [`StepKind::Signal`] steps (the walk counts
    /// signals, not steps: a poll loop's trips differ from run to run, its signals do not).
    pub after_signals: u32,
}

/// The protocol's measured run ([`profile`]).
pub struct Profile {
    /// Steps of the run to its end; `None` if it did not end within the cap.
    pub run_length: Option<u64>,
    /// Every thread that waited after its last signal in that run, in thread order, held back
    /// from that signal on: nothing it does later can hold the others up.
    pub waiters: Vec<HoldBack>,
}

/// Limits of one hunt.
#[derive(Clone, Debug)]
pub struct HuntOptions {
    /// Walks per round (run in parallel).
    pub walks_per_round: u32,
    /// Index of the first round (walks of round `r` are `r * walks_per_round ..`): a hunt in
    /// several parts goes on where the last one stopped.
    pub first_round: u32,
    /// Stop after this many rounds.
    pub max_rounds: u32,
    /// Steps per walk: a walk that has not reached a dead end by then stops there.
    pub max_steps: u32,
    /// Stop after the first round that found something.
    pub stop_at_first_hit: bool,
    /// Stop every walk, and the hunt, at this instant (the check's `--max-time`): a walk at
    /// 768 threads takes seconds, and a round of them ran minutes past the limit (issue 24,
    /// the 2x1-cluster CUTLASS GEMM). Only a check that hits its time limit depends on it.
    pub deadline: Option<Instant>,
}

impl Default for HuntOptions {
    fn default() -> Self {
        HuntOptions {
            walks_per_round: 8,
            first_round: 0,
            max_rounds: 64,
            max_steps: 200_000,
            stop_at_first_hit: true,
            deadline: None,
        }
    }
}

/// A finding of a walk and the path (actions from the initial state) that reached it.
pub struct Hit<F> {
    pub finding: F,
    pub path: Vec<u32>,
    /// Found by the last action of `path` (else by the state it reached).
    pub by_step: bool,
    /// Index of the walk.
    pub walk: u64,
}

/// What a hunt did.
pub struct Hunt<F> {
    /// Per finding key and kind of walk, the hit with the shortest path (the caller picks
    /// the one whose trace reads best).
    pub hits: Vec<Hit<F>>,
    pub walks: u64,
    pub steps: u64,
    pub elapsed: Duration,
}

/// SplitMix64: small, fast, and fully determined by its seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

/// Run the portfolio.
pub fn hunt<M>(model: &M, options: &HuntOptions) -> Hunt<M::Finding>
where
    M: Walkable + Sync,
    M::Finding: Send,
{
    use rayon::prelude::*;
    crate::explore::ensure_pool();
    let start = Instant::now();
    let mut best: BTreeMap<(M::Key, u64), Hit<M::Finding>> = BTreeMap::new();
    let mut walks = 0u64;
    let mut steps = 0u64;
    let first = u64::from(options.first_round);
    for round in first..first + u64::from(options.max_rounds) {
        let first = round * u64::from(options.walks_per_round);
        let results: Vec<(Vec<Hit<M::Finding>>, u64)> = (first
            ..first + u64::from(options.walks_per_round))
            .into_par_iter()
            .map(|w| {
                let out = walk(model, Plan::random(w), options.max_steps, options.deadline);
                (out.hits, out.steps)
            })
            .collect();
        for (hits, n) in results {
            walks += 1;
            steps += n;
            for h in hits {
                let key = (model.key(&h.finding), h.walk % 3);
                match best.get(&key) {
                    Some(old) if old.path.len() <= h.path.len() => {}
                    _ => {
                        best.insert(key, h);
                    }
                }
            }
        }
        let met = best.values().fold(0, |m, h| m | model.meets(&h.finding));
        if options.stop_at_first_hit && met & model.goals() == model.goals() {
            break;
        }
        if options.deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }
    Hunt {
        hits: best.into_values().collect(),
        walks,
        steps,
        elapsed: start.elapsed(),
    }
}

/// One random schedule of the model to its end (every thread finished, or a dead end), if it
/// ends within `cap` steps: its length is the protocol's own run length, which caps the walks
/// from below so that they reach the end of a long kernel (a bug late in its pipeline),
/// whatever the fixed step caps say; the threads that wait after their last signal in it are
/// those worth holding back ([`held_back`]). Deterministic (walk 0's seed); `run_length` is
/// `None` too when the `deadline` stopped it.
pub fn profile<M: Walkable>(model: &M, cap: u32, deadline: Option<Instant>) -> Profile {
    let plan = Plan {
        profile: true,
        ..Plan::random(0)
    };
    let Walked { steps, signals, .. } = walk(model, plan, cap, deadline);
    let stopped = deadline.is_some_and(|d| Instant::now() >= d);
    let run_length = (steps < u64::from(cap) && !stopped).then_some(steps);
    let waiters = match run_length {
        Some(_) => signals
            .iter()
            .enumerate()
            .filter(|(_, k)| k.waited_since_signal)
            .map(|(t, k)| HoldBack {
                thread: t as u32,
                after_signals: k.signals,
            })
            .collect(),
        None => Vec::new(),
    };
    Profile {
        run_length,
        waiters,
    }
}

/// One walk per entry of `held`, each holding its thread back from its point on until nothing
/// else can move (the others move in waves, as in the laggard walks), to the end of the run or
/// `max_steps`. Per finding key, the hit with the shortest path; deterministic, merged in the
/// order of `held`.
pub fn held_back<M>(
    model: &M,
    held: &[HoldBack],
    max_steps: u32,
    deadline: Option<Instant>,
) -> Hunt<M::Finding>
where
    M: Walkable + Sync,
    M::Finding: Send,
{
    use rayon::prelude::*;
    crate::explore::ensure_pool();
    let start = Instant::now();
    let results: Vec<(Vec<Hit<M::Finding>>, u64)> = held
        .par_iter()
        .map(|&h| {
            let plan = Plan {
                index: HELD_BACK_SEED ^ u64::from(h.thread),
                held: Some(h),
                profile: false,
            };
            let out = walk(model, plan, max_steps, deadline);
            (out.hits, out.steps)
        })
        .collect();
    let mut best: BTreeMap<M::Key, Hit<M::Finding>> = BTreeMap::new();
    let mut steps = 0;
    for (hits, n) in results {
        steps += n;
        for h in hits {
            let key = model.key(&h.finding);
            if best
                .get(&key)
                .is_none_or(|old| h.path.len() < old.path.len())
            {
                best.insert(key, h);
            }
        }
    }
    Hunt {
        hits: best.into_values().collect(),
        walks: held.len() as u64,
        steps,
        elapsed: start.elapsed(),
    }
}

/// Seeds of the held-back walks' random streams (xored with the thread), apart from the
/// random walks' indices.
const HELD_BACK_SEED: u64 = 0x4E1D_BAC4_0000_0000;

/// How one walk picks its actions.
#[derive(Clone, Copy)]
struct Plan {
    /// Seeds the random stream; for random walks also the kind (`index % 3`).
    index: u64,
    /// A thread held back from its point on (then the walk is of the laggard kind, with no
    /// random laggard).
    held: Option<HoldBack>,
    /// Record every thread's signals ([`profile`]).
    profile: bool,
}

impl Plan {
    fn random(index: u64) -> Self {
        Plan {
            index,
            held: None,
            profile: false,
        }
    }
}

/// What one walk did.
struct Walked<F> {
    hits: Vec<Hit<F>>,
    steps: u64,
    /// Per thread, with [`Plan::profile`] (else empty).
    signals: Vec<Signals>,
}

/// A thread's signals in a profiled walk.
#[derive(Clone, Copy, Default)]
struct Signals {
    signals: u32,
    waited_since_signal: bool,
}

/// One walk; returns its hits and the number of steps it took, and with `plan.profile` every
/// thread's signals.
fn walk<M: Walkable>(
    model: &M,
    plan: Plan,
    max_steps: u32,
    deadline: Option<Instant>,
) -> Walked<M::Finding> {
    let index = plan.index;
    let mut rng = Rng::new(index.wrapping_mul(0xD129_0A6B_2F3C_4E5D) ^ 0x5EED);
    let kind = if plan.held.is_some() { 1 } else { index % 3 };
    let n = model.threads();
    let mut signals: Vec<Signals> = if plan.profile {
        vec![Signals::default(); n as usize]
    } else {
        Vec::new()
    };
    // The held-back thread's signals so far.
    let mut held_signals = 0u32;
    // Waves with laggards: who lags, and from which of its own steps on.
    let mut lag_from: Vec<u32> = vec![u32::MAX; n as usize];
    if kind == 1 && n > 1 && plan.held.is_none() {
        for _ in 0..1 + rng.below(2) {
            let t = rng.below(u64::from(n)) as usize;
            lag_from[t] = rng.below(4) as u32;
        }
    }
    let mut own_steps: Vec<u32> = vec![0; n as usize];
    // Priorities: a random order; change points drop the running actor to the bottom.
    let mut priority: Vec<u64> = (0..n).map(|_| rng.next() >> 8).collect();
    let change_points: Vec<u64> = (0..3).map(|_| rng.below(2 * u64::from(n) + 64)).collect();

    let mut hits = Vec::new();
    // The findings this walk has hit: a later hit of one has a longer path, and the hunt keeps
    // the shortest (a race that lasts for thousands of steps was a copy of the path each).
    let mut hit_keys: std::collections::BTreeSet<M::Key> = std::collections::BTreeSet::new();
    let mut keep = |f: M::Finding, path: &[u32], by_step: bool, hits: &mut Vec<Hit<M::Finding>>| {
        if hit_keys.insert(model.key(&f)) {
            hits.push(Hit {
                finding: f,
                path: path.to_vec(),
                by_step,
                walk: index,
            });
        }
    };
    let mut walker = model.walker();
    let mut path: Vec<u32> = Vec::new();
    let mut actions = Vec::new();
    let mut found = Vec::new();
    let mut last_label: Option<u64> = None;
    for step in 0..u64::from(max_steps) {
        if step % 64 == 63 && deadline.is_some_and(|d| Instant::now() >= d) {
            return Walked {
                hits,
                steps: step,
                signals,
            };
        }
        actions.clear();
        walker.actions(&mut actions);
        found.clear();
        walker.check(&actions, &mut found);
        for f in found.drain(..) {
            keep(f, &path, false, &mut hits);
        }
        if actions.is_empty() {
            return Walked {
                hits,
                steps: step,
                signals,
            };
        }
        let a = match kind {
            0 => actions[rng.below(actions.len() as u64) as usize],
            1 => {
                let lagging = |a: u32| {
                    a < n
                        && (own_steps[a as usize] >= lag_from[a as usize]
                            || plan
                                .held
                                .is_some_and(|h| h.thread == a && held_signals >= h.after_signals))
                };
                let normal: Vec<u32> = actions.iter().copied().filter(|&a| !lagging(a)).collect();
                let pool = if normal.is_empty() { &actions } else { &normal };
                let wave =
                    last_label.and_then(|l| pool.iter().copied().find(|&a| walker.label(a) == l));
                wave.unwrap_or_else(|| pool[rng.below(pool.len() as u64) as usize])
            }
            _ => {
                let prio = |a: u32| {
                    if a < n {
                        priority[a as usize]
                    } else {
                        // Events land at a random priority each step.
                        rng.clone_seed(a) >> 8
                    }
                };
                let a = *actions
                    .iter()
                    .max_by_key(|&&a| (prio(a), std::cmp::Reverse(a)))
                    .expect("actions is not empty");
                if change_points.contains(&step) && a < n {
                    priority[a as usize] = 0;
                    for p in priority.iter_mut() {
                        *p = p.saturating_add(1);
                    }
                }
                a
            }
        };
        last_label = Some(walker.label(a));
        if a < n {
            own_steps[a as usize] += 1;
            if plan.profile || plan.held.is_some_and(|h| h.thread == a) {
                let signal = walker.kind(a);
                if plan.held.is_some() && signal == StepKind::Signal {
                    held_signals += 1;
                }
                if let Some(k) = signals.get_mut(a as usize) {
                    match signal {
                        StepKind::Signal => {
                            k.signals += 1;
                            k.waited_since_signal = false;
                        }
                        StepKind::Wait => k.waited_since_signal = true,
                        StepKind::Other => {}
                    }
                }
            }
        }
        let goes_on = walker.step(a, &mut found);
        path.push(a);
        for f in found.drain(..) {
            keep(f, &path, true, &mut hits);
        }
        if !goes_on {
            return Walked {
                hits,
                steps: step + 1,
                signals,
            };
        }
    }
    Walked {
        hits,
        steps: u64::from(max_steps),
        signals,
    }
}

impl Rng {
    /// A value derived from the stream's position and `salt`, without advancing it.
    fn clone_seed(&self, salt: u32) -> u64 {
        let mut r = Rng(self.0 ^ u64::from(salt).wrapping_mul(0xA24B_AED4_963E_E407));
        r.next()
    }
}
