//! Why a replay cannot show a finding: which part of its schedule the sequencer cannot force
//! on the hardware, by class. A pure function of the finding, its replay plan and the lowered
//! kernel ([`obstacles`]); what the run itself showed adds [`after_run`].

use super::plan::{ReplayPlan, stmt_of};
use checker::{Actor, Class, Finding};
use gpu_harness::lower::Lowered;
use gpu_harness::sequencer::SeqStep;
use protocols::SourceFile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A class of reason why the replay cannot (or did not) show a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObstacleClass {
    /// The trace holds lanes of one warp a loop iteration apart.
    WarpLanes,
    /// The finding is at (or blocked in) a hardware collective, which cannot be entered
    /// partially nor bounded.
    HardwareCollective,
    /// The trace lands a copy later than the sequencer can defer it.
    AsyncCopy,
    /// The race needs generic stores still in flight when a bulk copy reads: a window of tens
    /// of cycles that the sequencer's fencing hand-offs would close (replayed unsequenced).
    StoreWindow,
    /// The trace cannot be turned into sequencer steps.
    NotReplayable,
    /// The protocol cannot be lowered.
    NotLowered,
    /// Several kernels: the sequencer orders the steps of one launch.
    SeveralKernels,
    /// The trace passes through UB first, where the hardware faults or hangs.
    UbOnTrace,
    /// UB that the hardware tolerated in the replayed interleaving.
    UbTolerated,
    /// The hardware left the trace (a thread reached another statement than its step).
    Diverged,
    /// Nothing kept the sequencer from forcing the trace: the hardware did not show the
    /// hazard in that order.
    Forced,
}

impl ObstacleClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ObstacleClass::WarpLanes => "warp-lanes",
            ObstacleClass::HardwareCollective => "hardware-collective",
            ObstacleClass::AsyncCopy => "async-copy",
            ObstacleClass::StoreWindow => "store-window",
            ObstacleClass::NotReplayable => "not-replayable",
            ObstacleClass::NotLowered => "not-lowered",
            ObstacleClass::SeveralKernels => "several-kernels",
            ObstacleClass::UbOnTrace => "ub-on-trace",
            ObstacleClass::UbTolerated => "ub-tolerated",
            ObstacleClass::Diverged => "diverged",
            ObstacleClass::Forced => "forced",
        }
    }
}

/// One reason, with what it is about in this finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Obstacle {
    pub class: ObstacleClass,
    pub detail: String,
    /// Threads the trace holds back where this obstacle lies, as (cta, tid): the aimed fuzz
    /// delays them.
    #[serde(skip)]
    pub laggards: Vec<(u32, u32)>,
    /// Statements where it lies: the aimed fuzz delays before them.
    #[serde(skip)]
    pub stmts: Vec<u32>,
}

impl Obstacle {
    pub fn new(class: ObstacleClass, detail: impl Into<String>) -> Obstacle {
        Obstacle {
            class,
            detail: detail.into(),
            laggards: Vec::new(),
            stmts: Vec::new(),
        }
    }
}

/// The parts of `f`'s schedule that the sequencer cannot force, from the finding, its replay
/// plan (or why there is none) and the kernel it replays in. Empty: nothing keeps the
/// sequencer from forcing the trace.
pub fn obstacles(
    f: &Finding,
    plan: Result<&ReplayPlan, &str>,
    lowered: &Lowered,
    file: &SourceFile,
) -> Vec<Obstacle> {
    let plan = match plan {
        Ok(p) => p,
        Err(e) => {
            return vec![Obstacle::new(
                ObstacleClass::NotReplayable,
                format!("the trace cannot be turned into sequencer steps: {e}"),
            )];
        }
    };
    let mut out = Vec::new();
    let line = |stmt: u32| file.line_of(lowered.stmts[stmt as usize].span);
    let text = |stmt: u32| crate::fuzz::stmt_text(file, lowered.stmts[stmt as usize].span);
    if plan.unsequenced {
        out.push(Obstacle::new(
            ObstacleClass::StoreWindow,
            "the race needs the writers' generic stores still in flight when the bulk copy \
             reads shared memory, a window of tens of cycles; every hand-off of the sequencer \
             fences (to order its turns) and would drain them, so it is replayed unsequenced, \
             in the kernel that leaves the stores in flight: the hardware picks the order",
        ));
    }
    if let Some(o) = warp_lanes(f, &plan.steps, lowered, &line, &text) {
        out.push(o);
    }
    if let Some(o) = hardware_collective(f, lowered, &line, &text) {
        out.push(o);
    }
    if let Some(o) = async_copy(f, lowered, &line, &text) {
        out.push(o);
    }
    out
}

/// Thread steps in schedule order, each with its occurrence (how often its thread ran that
/// statement before), then the steps the threads of the wait-for graph are blocked before
/// (pending: never taken).
fn steps_with_pending(f: &Finding, steps: &[SeqStep], lowered: &Lowered) -> Vec<(SeqStep, u32)> {
    let mut count: BTreeMap<(u32, u32, u32), u32> = BTreeMap::new();
    let mut all = Vec::new();
    for st in steps {
        let n = count.entry((st.cta, st.tid, st.stmt)).or_insert(0);
        all.push((*st, *n));
        *n += 1;
    }
    let names = thread_names(f, lowered);
    for w in &f.waits_for {
        let (Some(stmt), Some(threads)) = (stmt_of(lowered, w.span), names.get(&w.thread)) else {
            continue;
        };
        for &(cta, tid) in threads {
            let n = count.get(&(cta, tid, stmt)).copied().unwrap_or(0);
            all.push((SeqStep { cta, tid, stmt }, n));
        }
    }
    all
}

/// The threads behind each display name of the trace (`consumer[1..31]` is many).
fn thread_names(f: &Finding, lowered: &Lowered) -> BTreeMap<String, Vec<(u32, u32)>> {
    let block = lowered.block.max(1);
    let nthreads = block * lowered.cluster.max(1);
    let mut names: BTreeMap<String, Vec<(u32, u32)>> = BTreeMap::new();
    let unfolded: Vec<&checker::TraceStep> = f
        .trace
        .iter()
        .flat_map(|t| std::iter::repeat_n(t, t.repeat.max(1) as usize))
        .collect();
    if unfolded.len() == f.schedule.0.len() {
        for (t, &a) in unfolded.iter().zip(&f.schedule.0) {
            if a < nthreads {
                names
                    .entry(t.thread.clone())
                    .or_default()
                    .push((a / block, a % block));
            }
        }
    } else {
        for t in &f.trace {
            if let Actor::Thread { cta, tid, .. } = t.actor {
                names.entry(t.thread.clone()).or_default().push((cta, tid));
            }
        }
    }
    for v in names.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    names
}

/// Lanes of one warp a loop iteration apart: the trace has lane A run a statement for the
/// (n+1)-th time before a warp-mate B runs it (or, blocked, would run it) for the m-th time,
/// m <= n. The sequencer holds B by spinning before its step while A runs on. If A passes a
/// statement that its warp runs together (`StmtInfo::warp_sync`: `syncwarp`, an aligned
/// collective, an `elect` body) on the way, the order cannot be forced at all: A waits there
/// for B. Otherwise it is asked for, not forced: whether one lane can run a loop iteration
/// ahead of a held warp-mate depends on where the compiled code reconverges the warp.
fn warp_lanes(
    f: &Finding,
    steps: &[SeqStep],
    lowered: &Lowered,
    line: &dyn Fn(u32) -> u32,
    text: &dyn Fn(u32) -> String,
) -> Option<Obstacle> {
    let all = steps_with_pending(f, steps, lowered);
    let warp = |s: &SeqStep| (s.cta, s.tid / 32);
    let same = |x: &SeqStep, y: &SeqStep| (x.cta, x.tid) == (y.cta, y.tid);
    let mut asked: Option<Obstacle> = None;
    for (j, (a, occ_a)) in all.iter().enumerate() {
        let behind: Vec<(u32, u32, u32)> = all[j + 1..]
            .iter()
            .filter(|(b, occ_b)| {
                warp(b) == warp(a) && b.tid != a.tid && b.stmt == a.stmt && occ_b < occ_a
            })
            .map(|(b, occ_b)| (b.cta, b.tid, *occ_b))
            .collect();
        let Some(&(_, tid_b, occ_b)) = behind.iter().min_by_key(|b| (b.2, b.0, b.1)) else {
            continue;
        };
        let mut laggards: Vec<(u32, u32)> = behind.iter().map(|&(c, t, _)| (c, t)).collect();
        laggards.sort_unstable();
        laggards.dedup();
        let held = gpu_harness::decode::thread_ranges(&laggards, lowered.cluster.max(1));
        // A's steps since it ran the statement where B is held (its occurrence occ_b).
        let since = all[..j]
            .iter()
            .rposition(|(x, occ)| same(x, a) && x.stmt == a.stmt && *occ == occ_b)
            .unwrap_or(0);
        let converge = all[since..j]
            .iter()
            .find(|(x, _)| same(x, a) && lowered.stmts[x.stmt as usize].warp_sync)
            .map(|(x, _)| x.stmt);
        let ahead = format!(
            "the trace runs t{} through line {} (`{}`) for the {} time while its warp-mate \
             t{tid_b} has run it {} (held: {held}): lanes of one warp a loop iteration apart",
            a.tid,
            line(a.stmt),
            text(a.stmt),
            ordinal(occ_a + 1),
            times(occ_b),
        );
        let mut o = match converge {
            Some(w) => Obstacle::new(
                ObstacleClass::WarpLanes,
                format!(
                    "{ahead}, and on the way t{} passes line {} (`{}`), which its warp runs \
                     together: a lane waits there for its warp-mates, so it cannot run ahead \
                     of one that the sequencer holds before line {}",
                    a.tid,
                    line(w),
                    text(w),
                    line(a.stmt)
                ),
            ),
            None => Obstacle::new(
                ObstacleClass::WarpLanes,
                format!(
                    "{ahead}. The sequencer holds a lane by spinning before its step, but lanes \
                     of one warp share one instruction stream: whether one can run a loop \
                     iteration ahead of a held warp-mate depends on where the compiled code \
                     reconverges the warp, so this order is asked for, not forced"
                ),
            ),
        };
        o.laggards = laggards;
        o.stmts = vec![a.stmt];
        if let Some(w) = converge {
            o.stmts.push(w);
            return Some(o);
        }
        asked.get_or_insert(o);
    }
    asked
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn times(n: u32) -> String {
    match n {
        0 => "not yet".into(),
        1 => "once".into(),
        n => format!("{n} times"),
    }
}

/// The finding is at a hardware collective (`syncthreads`, `bar_sync`/`bar_arrive`,
/// `cluster_*`, `syncwarp`), or its threads are blocked in one.
fn hardware_collective(
    f: &Finding,
    lowered: &Lowered,
    line: &dyn Fn(u32) -> u32,
    text: &dyn Fn(u32) -> String,
) -> Option<Obstacle> {
    let collective = |s: &u32| lowered.stmts[*s as usize].collective;
    let at = stmt_of(lowered, f.span).filter(collective);
    let blocked_in = f
        .waits_for
        .iter()
        .filter_map(|w| stmt_of(lowered, w.span))
        .find(collective);
    let (stmt, how) = match (at, blocked_in) {
        (Some(s), _) if f.class() != Class::Race => (s, "the finding is at"),
        (_, Some(s)) => (s, "its threads are blocked in"),
        _ => return None,
    };
    let counted = if lowered.stmts[stmt as usize].keyword.starts_with("bar_") {
        " per warp"
    } else {
        ""
    };
    let mut o = Obstacle::new(
        ObstacleClass::HardwareCollective,
        format!(
            "{how} line {} (`{}`), a hardware collective: the sequencer can order the threads' \
             arrivals, but the hardware counts them{counted} and completes or blocks the \
             barrier by itself, so it cannot be held partly entered, and a thread blocked in it \
             cannot be bounded (the launch hangs, and only the end of the process frees the \
             GPU)",
            line(stmt),
            text(stmt)
        ),
    );
    o.stmts = vec![stmt];
    Some(o)
}

/// The trace lands a copy that the sequencer does not defer (a multicast `tma`: it lands in
/// several blocks) after other steps, or has more deferred landings than request slots.
fn async_copy(
    f: &Finding,
    lowered: &Lowered,
    line: &dyn Fn(u32) -> u32,
    text: &dyn Fn(u32) -> String,
) -> Option<Obstacle> {
    let mut deferrable = 0usize;
    let mut late_multicast = None;
    let mut since_issue: BTreeMap<(u32, u32, u32), usize> = BTreeMap::new();
    let mut thread_steps = 0usize;
    for t in &f.trace {
        let Some(stmt) = stmt_of(lowered, t.span) else {
            continue;
        };
        match &t.actor {
            Actor::Thread { cta, tid, .. } => {
                thread_steps += t.repeat.max(1) as usize;
                if lowered.stmts[stmt as usize].keyword == "tma" {
                    since_issue.insert((*cta, *tid, stmt), thread_steps);
                }
            }
            Actor::Async { cta, tid, what, .. } => {
                if what != "tma" {
                    continue;
                }
                if lowered.stmts[stmt as usize].deferrable {
                    deferrable += 1;
                } else if let Some(&at) = since_issue.get(&(*cta, *tid, stmt)) {
                    if thread_steps > at && late_multicast.is_none() {
                        late_multicast = Some(stmt);
                    }
                }
            }
        }
    }
    if let Some(stmt) = late_multicast {
        let mut o = Obstacle::new(
            ObstacleClass::AsyncCopy,
            format!(
                "the trace lands the multicast copy of line {} (`{}`) after other steps; a \
                 multicast copy lands in several blocks and the sequencer does not defer it: it \
                 is issued at its step and lands about a microsecond later",
                line(stmt),
                text(stmt)
            ),
        );
        o.stmts = vec![stmt];
        return Some(o);
    }
    if deferrable > gpu_harness::sequencer::MAX_LANDINGS {
        return Some(Obstacle::new(
            ObstacleClass::AsyncCopy,
            format!(
                "the trace lands {deferrable} copies; the sequencer defers at most {} (request \
                 slots per block), later ones land about a microsecond after their issue",
                gpu_harness::sequencer::MAX_LANDINGS
            ),
        ));
    }
    None
}

/// What the replay run adds: the UB its trace passes first (`ub_first`), a UB finding the
/// hardware tolerated, threads that left the trace (`diverged`), and, when nothing else
/// explains it, that the order was forced and the hardware did not show the hazard.
pub fn after_run(
    f: &Finding,
    static_obstacles: &[Obstacle],
    ub_first: Option<&str>,
    diverged: u64,
    trials: u64,
) -> Vec<Obstacle> {
    let mut out = Vec::new();
    if let Some(ub) = ub_first {
        out.push(Obstacle::new(
            ObstacleClass::UbOnTrace,
            format!(
                "the trace passes through {ub} first; the hardware may fault or hang there \
                 before the hazard"
            ),
        ));
    }
    if f.class() == Class::Ub && trials > 0 {
        out.push(Obstacle::new(
            ObstacleClass::UbTolerated,
            format!(
                "in {trials} replayed trials the statement completed and nothing after it \
                 failed: the hardware tolerated this UB in that interleaving (UB permits \
                 anything, including working)"
            ),
        ));
    }
    if diverged > 0 {
        out.push(Obstacle::new(
            ObstacleClass::Diverged,
            format!(
                "{diverged} thread(s) left the trace: the hardware ran another statement than \
                 the trace's next step (the rest ran unsequenced)"
            ),
        ));
    }
    if out.is_empty() && static_obstacles.is_empty() && trials > 0 {
        out.push(Obstacle::new(
            ObstacleClass::Forced,
            format!(
                "nothing kept the sequencer from forcing the trace: {trials} trials ran its \
                 steps in its order, and the hardware did not show the hazard there"
            ),
        ));
    }
    out
}
