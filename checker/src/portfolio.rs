//! The `.phase` side of the bug-hunting portfolio ([`crate::hunt`]): when the exhaustive
//! search has visited [`PAUSE_AT`] states off its deepest path without deciding the verdict
//! (`explore::Limits::pause_at`), it pauses and random
//! schedules run over the unreduced model (no symmetry, no partial-order reduction: actions are
//! real threads). Each hit is shortened, then replayed through the plain semantics from the
//! initial state; only a hit whose replay raises the same finding (rule and statement) is
//! reported. If an error is confirmed that way, the search stops with verdict `hazard`
//! (`--exhaustive` goes on to the end); otherwise it resumes, and if it later stops at a limit
//! the report says how many schedules the portfolio tried.

use crate::explore::{Model, Step};
use crate::goal::Goal;
use crate::hunt::{self, HoldBack, HuntOptions, StepKind, Walkable};
use crate::model::code::Instr;
use crate::model::walk::Walk;
use crate::model::{MFinding, PhaseModel, Search, exec, state::State};
use crate::{CheckOptions, Finding, FoundBy};
use protocols::ir::Op;
use protocols::ir::Program;

/// States off the deepest path that the exhaustive search visits before the portfolio runs
/// (`explore::Limits::pause_at`: a chain pauses late).
pub const PAUSE_AT: u64 = 256;

/// The longest walk of a later pause (steps, at 128 threads): 8 of them take about 3 s.
pub const WALK_STEPS_MAX: u32 = 6_144;

/// The longest run the first pause measures to size the walks (steps): a protocol whose run
/// is longer keeps the fixed caps. 131 072 steps is ten times ThunderKittens' 512-thread
/// attention forward (about 10 000 steps), and bounds what the measuring walk costs when a
/// walk does not end (a poll loop starved by the random order).
pub const RUN_LENGTH_MAX: u32 = 1 << 17;

/// After its first round, the portfolio walks at most this many steps per state the search has
/// visited: a later pause runs its round only if the steps of every round so far, plus the
/// most this one can take (walks per round times its cap), stay within this many times the
/// search's states; otherwise it is skipped (the next pause comes when the search has grown
/// fourfold). A walk step is the in-place, incremental one (`model::walk`) and costs a small
/// share of a search state (at least one full transition on a copy of the state, its
/// fingerprint, symmetry and footprints): on the 1 536-thread cluster bench about 1 ms a
/// state against well under 0.1 ms a step, so past the first round the walks slow a search
/// that finishes by a bounded share, whatever the kernel's run length. The first round is not
/// held back: that is where the deep bugs of a search that will not finish are found (the
/// real kernels' bugs of docs/performance.md all are), and later rounds still come as soon as
/// the search has grown enough to pay for them. Steps and states, never time: the report is
/// the same on every run (issue 24 point 3: a cluster of 4 ran a round of walks to the end of
/// its 1 536-thread kernel at each of its pauses, more CPU than its whole search).
/// `later_rounds_wait_for_the_search` checks it.
pub const WALK_STEPS_PER_STATE: u64 = 8;

/// Threads the first pause holds back, at most ([`hunt::held_back`]): each walk runs the whole
/// kernel, and a kernel whose threads are all told apart (thread-indexed elements) has as many
/// groups as threads.
pub const HELD_BACK_MAX: usize = 16;

/// Replays one shortening may spend per hit, and steps all of them together.
const SHORTEN_TRIES: u32 = 32;
const SHORTEN_STEPS: usize = 40_000;

impl Walkable for Search<'_, '_> {
    fn threads(&self) -> u32 {
        self.model.nthreads()
    }
    type Walker<'w>
        = Walk<'w, 'w>
    where
        Self: 'w;
    fn walker(&self) -> Walk<'_, '_> {
        Walk::new(self.model, self.init.clone())
    }
}

impl hunt::Walker for Walk<'_, '_> {
    type Finding = MFinding;
    fn actions(&mut self, out: &mut Vec<u32>) {
        Walk::actions(self, out)
    }
    fn check(&mut self, actions: &[u32], found: &mut Vec<MFinding>) {
        Walk::check(self, actions, found)
    }
    fn label(&self, action: u32) -> u64 {
        let m = self.model();
        if action >= m.nthreads() {
            return u64::MAX;
        }
        let t = action as usize;
        let kernel = u64::from(m.threads[t].kernel);
        (kernel << 32) | u64::from(self.state().threads[t].pc)
    }
    fn kind(&self, action: u32) -> StepKind {
        let m = self.model();
        let pc = self.state().threads[action as usize].pc as usize;
        match m.code_of(action).instrs.get(pc) {
            Some(Instr::Elect { .. }) => StepKind::Signal,
            Some(Instr::Op { op, .. }) => step_kind(op),
            _ => StepKind::Other,
        }
    }
    fn step(&mut self, action: u32, found: &mut Vec<MFinding>) -> bool {
        Walk::step(self, action, found)
    }
}

/// What a statement does to the other threads ([`StepKind`]).
fn step_kind(op: &Op) -> StepKind {
    match op {
        Op::Init { .. }
        | Op::Arrive { .. }
        | Op::ArriveDrop { .. }
        | Op::ArriveExpectTx { .. }
        | Op::ExpectTx { .. }
        | Op::CompleteTx { .. }
        | Op::ArriveAndWait { .. }
        | Op::SyncThreads
        | Op::BarSync { .. }
        | Op::BarArrive { .. }
        | Op::SyncWarp
        | Op::ClusterSync
        | Op::ClusterArrive
        | Op::Tma { .. }
        | Op::CpAsyncArrive { .. }
        | Op::ProducerAcquire { .. }
        | Op::ProducerCommit { .. }
        | Op::ConsumerRelease { .. }
        | Op::MemcpyAsync { .. }
        | Op::Quit { .. }
        | Op::Store { .. }
        | Op::StoreRelease { .. } => StepKind::Signal,
        Op::WaitParity { .. }
        | Op::WaitToken { .. }
        | Op::TestWait { .. }
        | Op::ConsumerWait { .. }
        | Op::ConsumerWaitPrior { .. } => StepKind::Wait,
        Op::Inval { .. }
        | Op::ClusterWait
        | Op::FenceMbarrierInit
        | Op::Read { .. }
        | Op::Write { .. }
        | Op::Mma { .. }
        | Op::FenceProxyAsync
        | Op::TmaStore { .. }
        | Op::BulkCommit
        | Op::BulkWaitRead { .. }
        | Op::CpAsync { .. }
        | Op::CommitGroup
        | Op::WaitGroup { .. }
        | Op::Compute
        | Op::Load { .. }
        | Op::LoadAcquire { .. }
        | Op::Fence { .. } => StepKind::Other,
    }
}

/// What the portfolio found and did.
pub struct Hunted {
    /// Confirmed findings, each with its replayed trace and schedule.
    pub findings: Vec<Finding>,
    /// Random walks.
    pub walks: u64,
    /// Walks holding one thread back ([`hunt::held_back`]).
    pub held_back: u64,
    /// Steps of both.
    pub steps: u64,
    /// When the search is decided ([`CheckOptions::goal`]).
    goal: Goal,
}

impl Hunted {
    /// The confirmed findings meet every goal (by default: an error that is not allowed was
    /// confirmed): the verdict is decided.
    pub fn decided(&self) -> bool {
        let met = self
            .findings
            .iter()
            .fold(0, |m, f| m | self.goal.meets(f.rule, f.span, f.severity));
        met & self.goal.all() == self.goal.all()
    }

    /// Walks and steps, no time: the report says the same on every run.
    pub fn summary(&self) -> String {
        match (self.walks, self.held_back) {
            (walks, 0) => format!("{walks} random schedules ({} steps)", self.steps),
            (0, held) => format!(
                "{held} schedules holding one thread back ({} steps)",
                self.steps
            ),
            (walks, held) => format!(
                "{walks} random schedules and {held} holding one thread back ({} steps)",
                self.steps
            ),
        }
    }
}

/// The portfolio of one check: each [`Portfolio::pause`] of the exhaustive search runs one
/// round of walks, each walk capped at twice as many steps as at the pause before (the search
/// itself has grown fourfold since), up to [`WALK_STEPS_MAX`]. The caps are steps, not time, so
/// the report does not depend on the machine: the first pause's
/// [`CheckOptions::hunt_walk_steps`] (1 024 by default) is about what half a second of walking
/// reached on a 2-core machine at 129 threads when the hunt was timed; above 128 threads the
/// caps shrink in proportion (a step costs about as much more). No cap is below twice the
/// protocol's own run length ([`hunt::run_length`], measured once): a walk must be able to
/// reach the end of a long kernel, where a late bug in its pipeline is.
pub struct Portfolio<'p> {
    raw: PhaseModel<'p>,
    /// The initial state; `None` when the first run already stopped (nothing to walk).
    init: Option<State>,
    walk_steps: u32,
    /// Steps of one full run of the protocol (measured at the first pause): every walk may
    /// take twice as many, so that walks reach the end of the kernel (issue 24).
    run_length: Option<u64>,
    pauses: u32,
    rounds: u32,
    /// Steps the rounds took so far ([`WALK_STEPS_PER_STATE`]).
    walked: u64,
    /// The check's time limit (`--max-time`, counted from the start of the search): walks
    /// stop there ([`HuntOptions::deadline`]).
    deadline: Option<std::time::Instant>,
    pub hunted: Hunted,
}

impl<'p> Portfolio<'p> {
    pub fn new(
        program: &'p Program,
        options: &CheckOptions,
        deadline: Option<std::time::Instant>,
    ) -> Self {
        let mut raw = PhaseModel::new(program, options.max_loop_trips, false);
        raw.por = false;
        raw.goal = options.goal.clone();
        let (init, _, bound, stop) = raw.initial();
        Portfolio {
            raw,
            init: (bound.is_none() && !stop).then_some(init),
            walk_steps: options.hunt_walk_steps,
            run_length: None,
            pauses: 0,
            rounds: 0,
            walked: 0,
            deadline,
            hunted: Hunted {
                findings: Vec::new(),
                walks: 0,
                held_back: 0,
                steps: 0,
                goal: options.goal.clone(),
            },
        }
    }

    /// Run the next part of the hunt, the search having visited `states` states; whether an
    /// error is now confirmed. A pause after the first runs nothing when the search has not
    /// grown enough to pay for its round ([`WALK_STEPS_PER_STATE`]). The first pause measures
    /// the protocol's run ([`hunt::profile`]) and, before its random round, holds back each
    /// thread that waits after its last signal there, one per symmetry group
    /// ([`hunt::held_back`]).
    pub fn pause(&mut self, states: u64) -> bool {
        let Some(init) = &self.init else {
            return false;
        };
        let rounds = 1;
        // A step costs about as much per thread as there are threads: above 128 threads the
        // walks are shorter by as much, so that a pause takes about as long at any size.
        let n = self.raw.nthreads().max(128);
        let scale = |steps: u32| (u64::from(steps) * 128 / u64::from(n)).max(64) as u32;
        let search = Search::new(&self.raw, init.clone());
        let first = self.pauses == 0;
        let mut held = Vec::new();
        if first {
            let profile = hunt::profile(&search, RUN_LENGTH_MAX, self.deadline);
            self.run_length = profile.run_length;
            held = one_per_group(&self.raw, profile.waiters);
        }
        // The fixed caps are for time; a long kernel's walks still reach its end: at least
        // twice the measured run length (a walk ends earlier by itself when the run does).
        let full_run = self.run_length.map_or(0, |l| {
            l.saturating_mul(2).min(u64::from(RUN_LENGTH_MAX)) as u32
        });
        let max_steps = scale(self.walk_steps)
            .saturating_mul(1 << self.pauses.min(16))
            .min(scale(WALK_STEPS_MAX.max(self.walk_steps)))
            .max(full_run);
        let hunt_options = HuntOptions {
            first_round: self.rounds,
            max_rounds: rounds,
            max_steps,
            deadline: self.deadline,
            ..HuntOptions::default()
        };
        let most =
            u64::from(hunt_options.walks_per_round) * u64::from(rounds) * u64::from(max_steps);
        if !first && self.walked.saturating_add(most) > states.saturating_mul(WALK_STEPS_PER_STATE)
        {
            return false;
        }
        self.pauses += 1;
        if !held.is_empty() {
            let h = hunt::held_back(&search, &held, max_steps, self.deadline);
            self.walked += h.steps;
            self.hunted.held_back += h.walks;
            self.hunted.steps += h.steps;
            let found = confirm(&search, init, h.hits, FoundBy::HeldBack, self.deadline);
            merge(&mut self.hunted.findings, found);
            if self.hunted.decided() {
                return true;
            }
        }
        let h = hunt::hunt(&search, &hunt_options);
        self.rounds += rounds;
        self.walked += h.steps;
        self.hunted.walks += h.walks;
        self.hunted.steps += h.steps;
        let found = confirm(
            &search,
            init,
            h.hits,
            FoundBy::RandomSchedule,
            self.deadline,
        );
        merge(&mut self.hunted.findings, found);
        self.hunted.decided()
    }
}

/// The threads to hold back: of `waiters`, the first of each symmetry group (the late classes
/// with symmetry on, `PhaseModel::range_groups`: its other members would walk alike), at most
/// [`HELD_BACK_MAX`].
fn one_per_group(m: &PhaseModel, waiters: Vec<HoldBack>) -> Vec<HoldBack> {
    let mut group = vec![u32::MAX; m.nthreads() as usize];
    for (g, members) in m.range_groups.iter().enumerate() {
        for &t in members {
            group[t as usize] = g as u32;
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    waiters
        .into_iter()
        .filter(|h| {
            let g = group[h.thread as usize];
            // A thread of no group (none: every thread is in one) stands for itself.
            g == u32::MAX || seen.insert(g)
        })
        .take(HELD_BACK_MAX)
        .collect()
}

/// Per finding (rule and statement): of its hits, the one whose replayed trace is shortest,
/// shortened (replays are the cost) and replayed again through the plain semantics; a hit
/// whose replay does not raise its finding is dropped. The findings are shortened
/// independently, on every core, and merged in the groups' order, so the report does not
/// depend on the number of threads.
fn confirm(
    search: &Search,
    init: &State,
    mut hits: Vec<hunt::Hit<MFinding>>,
    found_by: FoundBy,
    deadline: Option<std::time::Instant>,
) -> Vec<Finding> {
    use rayon::prelude::*;
    let raw = search.model;
    hits.sort_by_key(|h| (h.finding.rule.code, h.finding.span, h.path.len()));
    let mut groups = Vec::new();
    let mut i = 0;
    while i < hits.len() {
        let key = (hits[i].finding.rule.code, hits[i].finding.span);
        let end = i + hits[i..]
            .iter()
            .take_while(|h| (h.finding.rule.code, h.finding.span) == key)
            .count();
        groups.push((i, end, key));
        i = end;
    }
    crate::explore::ensure_pool();
    let shortened: Vec<Option<Finding>> = groups
        .par_iter()
        .map(|&(i, end, key)| {
            let mut best: Option<(Finding, usize)> = None;
            // Past the check's deadline a hit is not replayed: unconfirmed, it is
            // dropped (at 768 threads the replays of a round's hits ran a minute past
            // `--max-time`; only a check that reaches its time limit depends on this).
            let late = || deadline.is_some_and(|d| std::time::Instant::now() >= d);
            for (j, hit) in hits[i..end].iter().enumerate() {
                if late() {
                    break;
                }
                // Reported only if the plain semantics raise the finding again on
                // this path.
                let Some(f) =
                    crate::rebuild_strict(raw, init, &hit.path, hit.by_step, &hit.finding)
                else {
                    continue;
                };
                if best
                    .as_ref()
                    .is_none_or(|(b, _)| f.trace.len() < b.trace.len())
                {
                    best = Some((f, i + j));
                }
            }
            let (mut f, j) = best?;
            let hit = &hits[j];
            let (path, by_step) =
                shorten(search, init, (hit.path.clone(), hit.by_step), key, deadline);
            if !late()
                && let Some(g) = crate::rebuild_strict(raw, init, &path, by_step, &hit.finding)
                && g.trace.len() <= f.trace.len()
            {
                f = g;
            }
            f.found_by = found_by;
            Some(f)
        })
        .collect();
    shortened.into_iter().flatten().collect()
}

/// Add `found` to the confirmed findings: one per rule and statement, the shortest trace.
fn merge(findings: &mut Vec<Finding>, found: Vec<Finding>) {
    for f in found {
        let size = |g: &Finding| (g.trace.len(), g.schedule.0.len());
        match findings
            .iter_mut()
            .find(|g| g.rule.code == f.rule.code && g.span == f.span)
        {
            Some(g) if size(g) <= size(&f) => {}
            Some(g) => *g = f,
            None => findings.push(f),
        }
    }
}

/// Replay `schedule` from `init`, skipping actions that cannot move; the executed prefix up to
/// the first step or state that raises `key`, if any.
fn reaches(
    search: &Search,
    init: &State,
    schedule: &[u32],
    key: (&'static str, protocols::Span),
) -> Option<(Vec<u32>, bool)> {
    let m = search.model;
    let n = m.nthreads();
    let hit = |f: &MFinding| (f.rule.code, f.span) == key;
    let mut s = init.clone();
    let mut done = Vec::new();
    let mut found = Vec::new();
    // Stepped as walks step (the same states: `walks_agree_with_full_steps`), keeping the
    // witness sets and publication holders from step to step instead of scanning the block.
    let mut index = exec::WalkIndex::default();
    for &a in schedule {
        let can = if a < n {
            exec::enabled(m, &s, a)
        } else {
            ((a - n) as usize) < s.events.len()
        };
        if !can {
            continue;
        }
        found.clear();
        let (step, _) = m.step_walk(&mut s, a, &mut found, &mut index);
        done.push(a);
        if found.iter().any(hit) {
            return Some((done, true));
        }
        if !matches!(step, Step::Next(())) {
            return None;
        }
    }
    let mut actions = Vec::new();
    search.actions(&s, &mut actions);
    found.clear();
    search.check_state(&s, &actions, &mut found);
    found.iter().any(hit).then_some((done, false))
}

/// Shorten a walk's path: drop ever smaller chunks of it while the replay still reaches the
/// finding (delta debugging, at most [`SHORTEN_TRIES`] replays and [`SHORTEN_STEPS`] replayed
/// steps, and none past the check's `deadline`: at 768 threads its replays ran minutes past
/// `--max-time`). Deterministic unless the deadline stops it.
fn shorten(
    search: &Search,
    init: &State,
    (path, by_step): (Vec<u32>, bool),
    key: (&'static str, protocols::Span),
    deadline: Option<std::time::Instant>,
) -> (Vec<u32>, bool) {
    let mut best = (path, by_step);
    let mut tries = 0;
    let mut steps = 0;
    let budget = |tries: u32, steps: usize| {
        tries < SHORTEN_TRIES
            && steps < SHORTEN_STEPS
            && deadline.is_none_or(|d| std::time::Instant::now() < d)
    };
    let mut chunk = best.0.len() / 2;
    while chunk >= 1 && budget(tries, steps) {
        let mut i = 0;
        while i < best.0.len() && budget(tries, steps) {
            let end = (i + chunk).min(best.0.len());
            let candidate: Vec<u32> = best.0[..i].iter().chain(&best.0[end..]).copied().collect();
            tries += 1;
            steps += candidate.len();
            match reaches(search, init, &candidate, key) {
                Some(shorter) if shorter.0.len() < best.0.len() => best = shorter,
                _ => i += chunk,
            }
        }
        chunk /= 2;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TMA ring with no bug: a producer and three consumers, 8 trips.
    const RING: &str = "protocol ring
block 4
mbarrier full
mbarrier empty
buffer tile
if tid == 0 {
  init full, 1
  init empty, 3
}
syncthreads
role producer when tid == 0 {
  for k in 0..8 {
    wait empty parity (k & 1) ^ 1
    arrive_expect_tx full, 64
    tma tile -> full, 64
  }
}
role consumer when tid >= 1 {
  for k in 0..8 {
    wait full parity k & 1
    mma tile
    arrive empty
  }
}
";

    /// A later pause runs its round only when the search has grown enough to pay for it
    /// ([`WALK_STEPS_PER_STATE`]); the first pause always runs.
    #[test]
    fn later_rounds_wait_for_the_search() {
        let f = protocols::SourceFile::new("ring.phase", RING);
        let p = protocols::load(&f, &[]).expect("loads");
        let mut portfolio = Portfolio::new(&p, &CheckOptions::default(), None);
        assert!(!portfolio.pause(300), "the ring has no bug");
        let first = portfolio.hunted.walks;
        assert_eq!(
            first, 8,
            "the first pause runs one round whatever the search's size"
        );
        // The search has not grown: the next round would exceed its share.
        assert!(!portfolio.pause(300));
        assert_eq!(
            portfolio.hunted.walks, first,
            "a round the search cannot pay for"
        );
        // Grown enough for everything walked so far and the next round at its largest.
        assert!(!portfolio.pause(1_000_000));
        assert_eq!(portfolio.hunted.walks, 2 * first);
    }

    /// The measured run names the threads that wait after their last signal, and one per
    /// symmetry group is held back: in the ring every thread's last step signals (nothing to
    /// hold back, no walk spent); in a warp whose lanes wait while lane 0 alone arrives, the
    /// lanes 1..3 are one group.
    #[test]
    fn the_first_pause_holds_back_one_waiter_per_group() {
        let waiters = |text: &str| {
            let f = protocols::SourceFile::new("t.phase", text);
            let p = protocols::load(&f, &[]).expect("loads");
            let raw = PhaseModel::new(&p, 1000, false);
            let (init, ..) = raw.initial();
            let search = Search::new(&raw, init);
            let profile = hunt::profile(&search, RUN_LENGTH_MAX, None);
            assert!(profile.run_length.is_some());
            one_per_group(&raw, profile.waiters)
        };
        assert_eq!(waiters(RING), vec![]);
        let lanes = "protocol lanes
block 4
mbarrier done
if tid == 0 {
  init done, 1
}
syncthreads
for k in 0..3 {
  if lane == 0 {
    arrive done
  }
  wait done parity k % 2
}
";
        // Lane 0 too waits after its last arrive; lanes 1..3 signal nothing the walk steps
        // through (`syncthreads` is eager, not a step of its own), so they are held
        // back from their first step, and lanes 2 and 3 walk as lane 1 does.
        let held = waiters(lanes);
        assert_eq!(
            held.iter().map(|h| h.thread).collect::<Vec<_>>(),
            vec![0, 1]
        );
        assert!(held[0].after_signals >= 3 && held[1].after_signals == 0);
    }
}
