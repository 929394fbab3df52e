//! `phasecheck confirm FILE`: check the file, then replay each error-level finding's
//! counterexample on the GPU with the device-side sequencer (the threads of the trace take
//! their steps in the trace's order; everybody else waits until the trace is done, then all
//! run free with bounded waits) and look for the hazard: the wait that hangs, the access that
//! overlaps a conflicting one, the wait that passes on an old phase, the UB as far as the
//! hardware shows it. Files without error-level findings are fuzzed instead.

use crate::cli::{ConfirmArgs, Exit, Format, GpuArgs};
use crate::cmd::fuzz::{self, Accumulator};
use crate::cmd::lower::{load, report_lower_error};
use checker::{Actor, Class, Finding, Severity};
use gpu_harness::decode::{EventKind, LaunchResult};
use gpu_harness::lower::{self, LowerOptions, Lowered, Mode};
use gpu_harness::run::{Gpu, LaunchParams, LoadedKernel, RunError};
use gpu_harness::sequencer::{self, Landing, Partner, SeqStep};
use protocols::ir::Program;
use protocols::{SourceFile, Span};
use serde::Serialize;
use std::time::{Duration, Instant};

/// What the hardware showed for one finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Confirmed,
    NotObserved,
    NotObservable,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Confirmed => "confirmed",
            Outcome::NotObserved => "not observed",
            Outcome::NotObservable => "not observable on hardware",
        }
    }
}

#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct FindingResult {
    pub rule: String,
    pub code: String,
    pub class: String,
    pub line: u32,
    pub statement: String,
    pub outcome: Outcome,
    /// What was seen (or why nothing could be).
    pub detail: String,
    pub trials: u64,
    pub trials_showing: u64,
    pub seconds: f64,
    pub trace_steps: usize,
    /// The GPU context is lost (a fault or a stuck hardware barrier): later findings of the
    /// file cannot be replayed in this process.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub stuck: bool,
}

#[derive(Serialize)]
struct ConfirmReport {
    file: String,
    device: String,
    /// Seconds the checker took to find the counterexamples (CPU).
    check_seconds: f64,
    findings: Vec<FindingResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fuzz: Option<fuzz::FuzzSummary>,
}

/// The statement id of a span (exact, else the statement containing it).
fn stmt_of(lowered: &Lowered, span: Span) -> Option<u32> {
    lowered
        .stmts
        .iter()
        .find(|s| s.span == span)
        .or_else(|| {
            lowered
                .stmts
                .iter()
                .find(|s| s.span.start <= span.start && span.end <= s.span.end)
        })
        .map(|s| s.id)
}

/// A counterexample as sequencer steps: actor numbers from the schedule (exact), statements
/// from the trace (unfolded by its repeat counts). A TMA landing (an async event) becomes a
/// deferred landing before the next step when its copy has one destination block; other
/// async events are left to the hardware. Returns the thread steps, the landings and where
/// the trace completes a thread's `cp.async` copies (see [`Steps`]).
fn steps_of(program: &Program, lowered: &Lowered, f: &Finding) -> Result<Steps, String> {
    let kernel = &program.kernels[0];
    let nthreads = kernel.block * kernel.cluster;
    let unfolded: Vec<&checker::TraceStep> = f
        .trace
        .iter()
        .flat_map(|t| std::iter::repeat_n(t, t.repeat.max(1) as usize))
        .collect();
    let stmt_at = |span: Span| {
        stmt_of(lowered, span).ok_or_else(|| {
            if span.start == span.end {
                // The checker's step for a thread running off the end of its program.
                "the trace orders a thread's exit (the end of its program), a step the \
                 sequencer has no statement for"
                    .to_string()
            } else {
                format!(
                    "the trace has a step (bytes {}..{} of the file) that is no statement of \
                     the kernel",
                    span.start, span.end
                )
            }
        })
    };
    let mut steps = Vec::new();
    let mut landings = Vec::new();
    let mut fills_done = Vec::new();
    // Each step's trace entry, to match a landing with its issue.
    let mut issued: Vec<&checker::TraceStep> = Vec::new();
    let mut land = |t: &checker::TraceStep,
                    steps: &[SeqStep],
                    issued: &[&checker::TraceStep],
                    landings: &mut Vec<Landing>|
     -> Result<(), String> {
        let Actor::Async { cta, tid, what, .. } = &t.actor else {
            return Ok(());
        };
        if what.starts_with("cp.async") {
            fills_done.push((*cta, *tid, steps.len()));
        }
        let stmt = stmt_at(t.span)?;
        if what != "tma" || !lowered.stmts[stmt as usize].deferrable {
            return Ok(());
        }
        if let Some(issue) = landing_issue(t, *cta, *tid, stmt, steps, issued, landings) {
            landings.push(Landing {
                issue,
                before: steps.len(),
            });
        }
        Ok(())
    };
    if unfolded.len() == f.schedule.0.len() {
        for (t, &actor) in unfolded.iter().zip(&f.schedule.0) {
            if actor >= nthreads {
                land(t, &steps, &issued, &mut landings)?;
                continue;
            }
            steps.push(SeqStep {
                cta: actor / kernel.block,
                tid: actor % kernel.block,
                stmt: stmt_at(t.span)?,
            });
            issued.push(t);
        }
    } else {
        // Fall back on the trace's own actors (exact when nothing was folded).
        for t in &f.trace {
            match t.actor {
                Actor::Thread { cta, tid, .. } => {
                    let stmt = stmt_at(t.span)?;
                    for _ in 0..t.repeat.max(1) {
                        steps.push(SeqStep { cta, tid, stmt });
                        issued.push(t);
                    }
                }
                Actor::Async { .. } => {
                    for _ in 0..t.repeat.max(1) {
                        land(t, &steps, &issued, &mut landings)?;
                    }
                }
            }
        }
    }
    Ok(Steps {
        steps,
        landings,
        fills_done,
    })
}

/// A counterexample as the sequencer replays it.
struct Steps {
    steps: Vec<SeqStep>,
    landings: Vec<Landing>,
    /// `(cta, tid, before)`: the trace completes thread (cta, tid)'s `cp.async` copies (a
    /// `cp.async` arrive-on event) just before step `before`; its earlier copies are no longer
    /// in flight from there on.
    fills_done: Vec<(u32, u32, usize)>,
}

/// The issue step of a TMA landing: the first step of the issuing thread at the `tma` whose
/// copy has not landed yet, preferring one on the barrier the landing completes (the issue's
/// state names it: `full[1]: phase ...`; the landing's text ends `completes tx on full[1]`).
fn landing_issue(
    t: &checker::TraceStep,
    cta: u32,
    tid: u32,
    stmt: u32,
    steps: &[SeqStep],
    issued: &[&checker::TraceStep],
    landings: &[Landing],
) -> Option<usize> {
    let open: Vec<usize> = (0..steps.len())
        .filter(|&i| steps[i] == SeqStep { cta, tid, stmt })
        .filter(|&i| landings.iter().all(|l| l.issue != i))
        .collect();
    let bar = t.op.rsplit("completes tx on ").next().unwrap_or("");
    open.iter()
        .copied()
        .find(|&i| issued[i].state.starts_with(&format!("{bar}:")))
        .or_else(|| open.first().copied())
}

/// A race with an async fill in flight: the finding's statements are a deferrable fill (a
/// one-destination `tma`, a `cp_async` or a `memcpy_async`) and a buffer access (`read`,
/// `write`, `mma`) that the trace runs after the issue while the copy has not landed. Returns
/// (access step, issue step).
fn tma_in_flight(
    lowered: &Lowered,
    f: &Finding,
    steps: &[SeqStep],
    landings: &[Landing],
    fills_done: &[(u32, u32, usize)],
) -> Option<(usize, usize)> {
    let mut stmts: Vec<u32> = f
        .labels
        .iter()
        .filter_map(|l| stmt_of(lowered, l.span))
        .collect();
    stmts.extend(stmt_of(lowered, f.span));
    let info = |s: u32| &lowered.stmts[s as usize];
    let tma = stmts.iter().copied().find(|&s| info(s).deferrable)?;
    let access = stmts
        .iter()
        .copied()
        .find(|&s| matches!(info(s).keyword, "read" | "write" | "mma"))?;
    let a = steps.iter().rposition(|st| st.stmt == access)?;
    // The copy must still be in flight at the access: not landed by a deferred landing before
    // it, nor (a `cp.async`/`memcpy_async`) completed by its thread's arrive-on event.
    let in_flight = |i: usize| {
        let st = steps[i];
        landings.iter().all(|l| l.issue != i || l.before > a)
            && fills_done.iter().all(|&(cta, tid, before)| {
                (cta, tid) != (st.cta, st.tid) || before <= i || before > a
            })
    };
    let issue = (0..a)
        .rev()
        .find(|&i| steps[i].stmt == tma && in_flight(i))?;
    Some((a, issue))
}

/// The thread whose next step after `schedule` executes statement `stmt`, and its actor.
fn next_access(
    program: &Program,
    lowered: &Lowered,
    schedule: &checker::Schedule,
    stmt: u32,
    not_actor: Option<u32>,
) -> Option<(SeqStep, u32)> {
    let kernel = &program.kernels[0];
    let nthreads = kernel.block * kernel.cluster;
    let options = checker::CheckOptions::default();
    for actor in (0..nthreads.min(1024)).filter(|a| Some(*a) != not_actor) {
        let mut sched = schedule.clone();
        sched.0.push(actor);
        if let Ok(r) = checker::replay(program, &options, &sched) {
            if r.trace.last().and_then(|t| stmt_of(lowered, t.span)) == Some(stmt) {
                let step = SeqStep {
                    cta: actor / kernel.block,
                    tid: actor % kernel.block,
                    stmt,
                };
                return Some((step, actor));
            }
        }
    }
    None
}

/// Continue `schedule` with the checker, one thread step at a time (the lowest thread that
/// can move; async events never, so copies stay in flight), until a thread accesses the buffer
/// of a one-destination TMA issued and not landed. Returns the added steps and the (access,
/// issue) step indices into `steps` + the added steps. At most 32 steps.
fn extend_to_in_flight_access(
    program: &Program,
    lowered: &Lowered,
    schedule: &checker::Schedule,
    steps: &[SeqStep],
    landings: &[Landing],
) -> Option<(Vec<SeqStep>, usize, usize)> {
    let kernel = &program.kernels[0];
    let nthreads = kernel.block * kernel.cluster;
    let options = checker::CheckOptions::default();
    let mut sched = schedule.clone();
    let mut all: Vec<SeqStep> = steps.to_vec();
    for _ in 0..32 {
        let next = (0..nthreads.min(1024)).find_map(|actor| {
            let mut s = sched.clone();
            s.0.push(actor);
            let r = checker::replay(program, &options, &s).ok()?;
            let stmt = stmt_of(lowered, r.trace.last()?.span)?;
            Some((actor, stmt))
        })?;
        let (actor, stmt) = next;
        sched.0.push(actor);
        all.push(SeqStep {
            cta: actor / kernel.block,
            tid: actor % kernel.block,
            stmt,
        });
        let info = &lowered.stmts[stmt as usize];
        if !matches!(info.keyword, "read" | "write" | "mma") {
            continue;
        }
        let access = all.len() - 1;
        let issue = all[..access].iter().rposition(|st| {
            let i = &lowered.stmts[st.stmt as usize];
            i.deferrable && i.object == info.object && st.cta == all[access].cta
        });
        if let Some(issue) = issue {
            if landings.iter().all(|l| l.issue != issue) {
                return Some((all.split_off(steps.len()), access, issue));
            }
        }
    }
    None
}

/// For a race: the earlier access to hold open (the labelled one) and the racing access.
fn race_pair(lowered: &Lowered, f: &Finding, steps: &[SeqStep]) -> (Option<usize>, Option<usize>) {
    let Some(last) = steps.len().checked_sub(1) else {
        return (None, None);
    };
    let final_stmt = stmt_of(lowered, f.span);
    let final_idx = if final_stmt.is_some_and(|s| steps[last].stmt == s) {
        last
    } else {
        final_stmt
            .and_then(|s| steps.iter().rposition(|st| st.stmt == s))
            .unwrap_or(last)
    };
    let label_stmts: Vec<u32> = f
        .labels
        .iter()
        .filter_map(|l| stmt_of(lowered, l.span))
        .collect();
    let fin = steps[final_idx];
    let held = steps[..final_idx]
        .iter()
        .rposition(|st| label_stmts.contains(&st.stmt) && (st.tid, st.cta) != (fin.tid, fin.cta));
    match held {
        Some(h) => (Some(h), Some(final_idx)),
        // The other party is asynchronous (a copy in flight): hold the final access open.
        None => (Some(final_idx), None),
    }
}

struct Replayer<'a> {
    gpu: &'a Gpu,
    kernel: &'a LoadedKernel,
    lowered: &'a Lowered,
    gpu_args: &'a GpuArgs,
}

impl Replayer<'_> {
    /// One launch of the trace `table` in one trial per multiprocessor; `free`: no trace (the
    /// kernel runs unsequenced), as many trials as a fuzz round and no delays.
    fn launch(
        &self,
        table: &[u32],
        seed: u64,
        free: bool,
    ) -> Result<(LaunchResult, u32), RunError> {
        let cluster = self.lowered.cluster.max(1);
        let trials = if free {
            fuzz::default_blocks(self.gpu, cluster) / cluster
        } else {
            self.gpu.multiprocessors.max(1)
        }
        .min(lower::MAX_TRIALS / cluster);
        let blocks = trials * cluster;
        let params = LaunchParams {
            blocks,
            seed,
            delay_max_ns: if free { 0 } else { self.gpu_args.delay_ns },
            delay_every: self.gpu_args.delay_every.max(1),
            budget_cycles: self.gpu_args.wait_cycles,
            timeout: Duration::from_secs(10),
        };
        let (r, _) = self.gpu.launch(self.kernel, self.lowered, &params, table)?;
        Ok((r, trials))
    }
}

fn judge(
    lowered: &Lowered,
    file: &SourceFile,
    f: &Finding,
    steps: &[SeqStep],
    extra_wanted: Option<u32>,
    r: &LaunchResult,
) -> Option<(String, u64)> {
    let cluster = u64::from(lowered.cluster.max(1));
    let trials_with = |pred: &dyn Fn(&gpu_harness::decode::Event) -> bool| -> u64 {
        let mut t: Vec<u64> = r
            .events
            .iter()
            .filter(|e| pred(e))
            .map(|e| e.block / cluster)
            .collect();
        t.dedup();
        t.len() as u64
    };
    let line = |stmt: u32| file.line_col(lowered.stmts[stmt as usize].span.start).line;
    let final_stmt = stmt_of(lowered, f.span);
    match f.class() {
        Class::Deadlock => {
            let mut wanted: Vec<u32> = f
                .waits_for
                .iter()
                .filter_map(|w| stmt_of(lowered, w.span))
                .collect();
            wanted.extend(final_stmt);
            let n = trials_with(&|e| e.kind == EventKind::Hang && wanted.contains(&e.stmt));
            if n > 0 {
                let mut lines: Vec<u32> = r
                    .events
                    .iter()
                    .filter(|e| e.kind == EventKind::Hang && wanted.contains(&e.stmt))
                    .map(|e| line(e.stmt))
                    .collect();
                lines.sort_unstable();
                lines.dedup();
                let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                return Some((
                    format!("bounded waits expired at line {}", lines.join(", ")),
                    n,
                ));
            }
            None
        }
        Class::Race => {
            if f.rule.name == "stale-phase" {
                let n = trials_with(&|e| {
                    e.kind == EventKind::StepDone && Some(e.stmt) == final_stmt && e.a == 0
                });
                if n > 0 {
                    return Some((
                        "the wait passed at its first try at the replayed point, on a phase \
                         completion its thread had already observed"
                            .into(),
                        n,
                    ));
                }
                return None;
            }
            let mut wanted: Vec<u32> = f
                .labels
                .iter()
                .filter_map(|l| stmt_of(lowered, l.span))
                .collect();
            wanted.extend(final_stmt);
            wanted.extend(extra_wanted);
            if let Some(s) = steps.last() {
                wanted.push(s.stmt);
            }
            if unsequenced(lowered, f) {
                // Free running: only the stale read at the `tma_store` itself shows it.
                wanted = final_stmt.into_iter().collect();
            }
            let n = trials_with(&|e| e.kind == EventKind::Race && wanted.contains(&e.stmt));
            if n > 0 {
                let e = r
                    .events
                    .iter()
                    .find(|e| e.kind == EventKind::Race && wanted.contains(&e.stmt))
                    .expect("counted above");
                let other = gpu_harness::decode::Stamp::decode(e.a);
                let other = match other.stmt {
                    Some(s) => format!("line {}", line(s)),
                    None => "no write yet".into(),
                };
                return Some((
                    format!(
                        "the access at line {} overlapped the conflicting one ({other})",
                        line(e.stmt)
                    ),
                    n,
                ));
            }
            None
        }
        Class::Ub | Class::Perf => {
            let n = trials_with(&|e| e.kind == EventKind::Hang && Some(e.stmt) == final_stmt);
            if n > 0 {
                return Some((
                    "the hardware hangs at the statement (its bounded wait expired)".into(),
                    n,
                ));
            }
            let n = trials_with(&|e| e.kind == EventKind::Hang);
            if n > 0 {
                let e = r
                    .events
                    .iter()
                    .find(|e| e.kind == EventKind::Hang)
                    .expect("counted");
                return Some((
                    format!(
                        "after the statement the protocol hangs (line {})",
                        line(e.stmt)
                    ),
                    n,
                ));
            }
            let n = trials_with(&|e| e.kind == EventKind::Race);
            if n > 0 {
                return Some((
                    "a buffer access overlapped a conflicting one after it".into(),
                    n,
                ));
            }
            None
        }
    }
}

/// What a finding's replay runs: the thread steps, the sequencer's table (with deferred TMA
/// landings and the held access), and a statement whose stale read also shows the finding.
struct ReplayPlan {
    steps: Vec<SeqStep>,
    table: sequencer::SeqTable,
    extra_wanted: Option<u32>,
    /// Run the kernel without the sequencer (an empty table), see [`unsequenced`].
    unsequenced: bool,
}

/// Whether the finding is replayed without the sequencer. A `missing-proxy-fence` before a
/// `tma_store` is between two accesses that the protocol's own synchronization already orders
/// (were they unordered it would be a data race): every interleaving reaches them in the
/// trace's order. What the hazard needs is the writers' generic stores still in flight when
/// the copy engine reads, a window of tens of cycles; the sequencer's hand-offs fence
/// (`__threadfence`, to order its turns), which drains those stores and closes the window.
/// So the kernel runs free, many blocks a launch, without delays, and a stale stamp at the
/// `tma_store` (what the copy engine stored is not what the generic proxy saw at the issue)
/// shows the hazard. Measured on an H100 (docs/gpu.md "Proxy fences").
fn unsequenced(lowered: &Lowered, f: &Finding) -> bool {
    f.rule.name == "missing-proxy-fence"
        && stmt_of(lowered, f.span)
            .is_some_and(|s| lowered.stmts[s as usize].keyword == "tma_store")
}

fn plan(program: &Program, lowered: &Lowered, f: &Finding) -> Result<ReplayPlan, String> {
    let Steps {
        mut steps,
        mut landings,
        fills_done,
    } = steps_of(program, lowered, f)?;
    if unsequenced(lowered, f) {
        steps.clear();
        return Ok(ReplayPlan {
            steps,
            table: sequencer::SeqTable::default(),
            extra_wanted: None,
            unsequenced: true,
        });
    }
    let mut pair = None;
    // A race may be reported before its accesses run (they are enabled, the trace stops
    // before them): find, with the checker's replay, the thread whose next step is the
    // access, and replay it too; when the other (labelled) access is another thread's next
    // step as well, replay it after, with the first held open across it.
    if f.class() == Class::Race && f.rule.name != "stale-phase" {
        if let Some(s) = stmt_of(lowered, f.span) {
            // The last step runs the racing statement, but its thread also made the other
            // (labelled) access: a thread does not race with itself, so the race is between
            // accesses the trace has not run yet (e.g. both enabled once a barrier completes).
            let labelled: Vec<u32> = f
                .labels
                .iter()
                .filter_map(|l| stmt_of(lowered, l.span))
                .collect();
            let by_itself = steps.split_last().is_some_and(|(last, before)| {
                last.stmt == s
                    && before
                        .iter()
                        .rev()
                        .find(|st| labelled.contains(&st.stmt))
                        .is_some_and(|st| (st.cta, st.tid) == (last.cta, last.tid))
            });
            if steps.last().is_none_or(|l| l.stmt != s) || by_itself {
                let not = if by_itself {
                    steps
                        .last()
                        .map(|l| l.cta * program.kernels[0].block + l.tid)
                } else {
                    None
                };
                if let Some((extra, actor)) = next_access(program, lowered, &f.schedule, s, not) {
                    steps.push(extra);
                    let mut sched = f.schedule.clone();
                    sched.0.push(actor);
                    for l in &f.labels {
                        let Some(ls) = stmt_of(lowered, l.span) else {
                            continue;
                        };
                        if let Some((other, _)) =
                            next_access(program, lowered, &sched, ls, Some(actor))
                        {
                            steps.push(other);
                            pair = Some((Some(steps.len() - 2), Some(steps.len() - 1)));
                            break;
                        }
                    }
                }
            }
        }
    }
    // Against an async fill (TMA, cp.async, memcpy_async) the copy engine writes later: hold
    // the other (labelled) access open while the copy lands.
    let async_fill = stmt_of(lowered, f.span).is_some_and(|s| {
        matches!(
            lowered.stmts[s as usize].keyword,
            "tma" | "cp_async" | "memcpy_async"
        )
    });
    if async_fill && f.class() == Class::Race {
        pair = None;
        let label = f.labels.iter().find_map(|l| stmt_of(lowered, l.span));
        if let Some(ls) = label {
            let held = match steps.iter().rposition(|st| st.stmt == ls) {
                Some(h) => Some(h),
                None => next_access(program, lowered, &f.schedule, ls, None).map(|(st, _)| {
                    steps.push(st);
                    steps.len() - 1
                }),
            };
            if held.is_some() {
                pair = Some((held, None));
            }
        }
    }
    let race = f.class() == Class::Race && f.rule.name != "stale-phase";
    let (mut held, partner) = if race {
        pair.unwrap_or_else(|| race_pair(lowered, f, &steps))
    } else {
        (None, None)
    };
    let mut partner = partner.map(Partner::Step);
    // A race against a TMA copy in flight: the copy would land about a microsecond after its
    // issue, before the replayed access. Defer its landing to after the access (the trace
    // lands it there, or not at all) and hold the access open until it has landed.
    let mut extra_wanted = None;
    let mut in_flight = if race {
        tma_in_flight(lowered, f, &steps, &landings, &fills_done)
    } else {
        None
    };
    if race && in_flight.is_none() && f.rule.name == "expect-after-completion" {
        // The trace stops at the misplaced expect_tx: continue it with the checker until an
        // access to the buffer of a copy still in flight (the consequence the rule names).
        if let Some((extra, access, issue)) =
            extend_to_in_flight_access(program, lowered, &f.schedule, &steps, &landings)
        {
            steps.extend(extra);
            extra_wanted = Some(steps[access].stmt);
            in_flight = Some((access, issue));
        }
    }
    if let Some((access, issue)) = in_flight {
        let l = match landings.iter().position(|l| l.issue == issue) {
            Some(l) => l,
            None => {
                landings.push(Landing {
                    issue,
                    before: steps.len(),
                });
                landings.len() - 1
            }
        };
        held = Some(access);
        partner = Some(Partner::Landing(l));
    }
    let table = sequencer::build(&steps, &landings, held, partner);
    let table = if race { table.stop_after() } else { table };
    Ok(ReplayPlan {
        steps,
        table,
        extra_wanted,
        unsequenced: false,
    })
}

/// A UB that the race finding `f`'s interleaving runs into before the race: the checker's
/// replay of `f`'s schedule, which reports every finding it hits on the way. When the hardware
/// faults or hangs at that UB, the race cannot be shown behind it.
struct UbFirst {
    rule: &'static str,
    line: u32,
}

impl std::fmt::Display for UbFirst {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(out, "`{}` (line {})", self.rule, self.line)
    }
}

fn ub_on_trace(program: &Program, f: &Finding, file: &SourceFile) -> Option<UbFirst> {
    if f.class() != Class::Race {
        return None;
    }
    let replay = checker::replay(program, &checker::CheckOptions::default(), &f.schedule).ok()?;
    replay
        .findings
        .iter()
        .find(|u| u.class() == Class::Ub && u.severity == Severity::Error)
        .map(|u| UbFirst {
            rule: u.rule.name,
            line: file.line_of(u.span),
        })
}

/// Add how the replay differed from a plain one to a result's detail.
fn with_note(mut r: FindingResult, note: Option<String>) -> FindingResult {
    if let Some(n) = note {
        r.detail = format!("{} ({n})", r.detail);
    }
    r
}

fn replay_finding(
    rp: &Replayer<'_>,
    program: &Program,
    file: &SourceFile,
    f: &Finding,
    ub_first: Option<String>,
    seconds: f64,
) -> Result<FindingResult, RunError> {
    let lowered = rp.lowered;
    let line = file.line_col(f.span.start).line;
    let mut res = FindingResult {
        rule: f.rule.name.to_string(),
        code: f.rule.code.to_string(),
        class: f.class().as_str().to_string(),
        line,
        statement: fuzz::stmt_text(file, f.span),
        outcome: Outcome::NotObserved,
        detail: String::new(),
        trials: 0,
        trials_showing: 0,
        seconds: 0.0,
        trace_steps: f.trace.iter().map(|t| t.repeat.max(1) as usize).sum(),
        stuck: false,
    };
    let ReplayPlan {
        steps,
        table,
        extra_wanted,
        unsequenced,
    } = match plan(program, lowered, f) {
        Ok(p) => p,
        Err(e) => {
            res.outcome = Outcome::NotObservable;
            res.detail = format!("the trace cannot be replayed: {e}");
            return Ok(res);
        }
    };
    let t0 = Instant::now();
    let mut seed = 1u64;
    let mut diverged = 0u64;
    loop {
        let (r, trials) = match rp.launch(&table.words, seed, unsequenced) {
            Ok(x) => x,
            Err(RunError::Driver { what, error }) if f.class() == Class::Ub => {
                // A trap poisons the context; it is what the hardware shows for this UB.
                res.outcome = Outcome::Confirmed;
                res.detail = format!("the kernel faulted ({what}: {error})");
                res.seconds = t0.elapsed().as_secs_f64();
                res.stuck = true;
                return Ok(res);
            }
            Err(RunError::Driver { what, error }) if ub_first.is_some() => {
                res.outcome = Outcome::NotObservable;
                res.detail = format!(
                    "the trace passes through {} first, and the kernel faults there ({what}: \
                     {error}) before the racing access",
                    ub_first.as_deref().unwrap_or_default()
                );
                res.seconds = t0.elapsed().as_secs_f64();
                res.stuck = true;
                return Ok(res);
            }
            Err(RunError::Stuck { seconds }) => {
                res.outcome = match (&ub_first, f.class()) {
                    (Some(_), _) => Outcome::NotObservable,
                    (None, Class::Race) => Outcome::NotObserved,
                    (None, _) => Outcome::Confirmed,
                };
                res.detail = format!(
                    "the kernel hung in a hardware barrier that cannot be bounded (syncthreads, \
                     bar.sync, barrier.cluster) for {seconds:.0} s; the process ends to free the GPU"
                );
                if let Some(ub) = &ub_first {
                    res.detail = format!(
                        "the trace passes through {ub} first, and the hardware hangs there: {}",
                        res.detail
                    );
                }
                res.seconds = t0.elapsed().as_secs_f64();
                res.stuck = true;
                return Ok(res);
            }
            Err(e) => return Err(e),
        };
        seed += 1;
        res.trials += u64::from(trials);
        diverged += r.seq_diverged;
        if let Some((detail, n)) = judge(lowered, file, f, &steps, extra_wanted, &r) {
            res.outcome = Outcome::Confirmed;
            res.detail = if unsequenced {
                format!(
                    "{detail}: the copy engine stored an older stamp than the generic proxy saw \
                     at the issue (run without the sequencer, whose fencing hand-offs would \
                     drain the stores; the protocol orders these accesses in every interleaving)"
                )
            } else {
                detail
            };
            res.trials_showing += n;
            res.seconds = t0.elapsed().as_secs_f64();
            return Ok(res);
        }
        if t0.elapsed().as_secs_f64() >= seconds {
            break;
        }
    }
    res.seconds = t0.elapsed().as_secs_f64();
    if f.class() == Class::Ub {
        res.outcome = Outcome::NotObservable;
        res.detail = "the statement completed and nothing after it failed: the hardware \
                      tolerated this UB in the replayed interleaving"
            .into();
    } else {
        res.detail = if unsequenced {
            "run unsequenced, no TMA store read an older stamp than the generic proxy saw at \
             its issue (on an H100 a copy overtakes unfenced generic stores only while they \
             still wait in their warps' queues, behind other warps' store traffic; the \
             harness's read of the stamp at the issue waits for them: docs/gpu.md \"Proxy \
             fences\")"
                .into()
        } else if diverged > 0 {
            format!("the replay left the trace in {diverged} thread(s)")
        } else {
            "the replayed interleaving did not show it".into()
        };
    }
    Ok(res)
}

fn render(report: &ConfirmReport) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "confirm {} on {} (checker: {:.2} s)",
        report.file, report.device, report.check_seconds
    );
    for r in &report.findings {
        let _ = writeln!(
            o,
            "  {:<9} {:<22} line {:<4} {:<36} {}",
            r.class,
            format!("{}({})", r.rule, r.code),
            r.line,
            r.statement,
            r.outcome.as_str()
        );
        let _ = writeln!(
            o,
            "            {} [{} of {} trials, {:.2} s, trace of {} steps]",
            r.detail, r.trials_showing, r.trials, r.seconds, r.trace_steps
        );
    }
    if let Some(fz) = &report.fuzz {
        let _ = writeln!(o, "  no error-level finding: fuzzed instead");
        for l in fuzz::render_human(fz).lines().skip(1) {
            let _ = writeln!(o, "{l}");
        }
    }
    o
}

pub fn run(args: &ConfirmArgs) -> Exit {
    let (file, program) = match load(&args.file, &args.params) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let t_check = Instant::now();
    let mut report = checker::check(&program, &checker::CheckOptions::default());
    checker::lints::suppress::apply_to_report(&program, &file, &mut report);
    let check_seconds = t_check.elapsed().as_secs_f64();
    let errors: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    let mode = if errors.is_empty() {
        Mode::Fuzz
    } else {
        Mode::Confirm
    };
    if !errors.is_empty() && args.finding.is_none() {
        return run_children(args, &file, &errors, check_seconds);
    }
    // A race behind a divergent `syncthreads`: the compiled `__syncthreads` hangs there (which
    // confirms the UB finding), so the race is replayed with the non-aligned barrier, whose
    // arrivals count wherever each thread is, as the checker models past that UB.
    let past_divergence = args
        .finding
        .and_then(|i| errors.get(i))
        .and_then(|f| ub_on_trace(&program, f, &file))
        .is_some_and(|u| u.rule == "barrier-divergence");
    let options = LowerOptions {
        mode,
        non_aligned_syncthreads: past_divergence,
    };
    let lowered = match lower::lower(&program, Some(&file), &options) {
        Ok(l) => l,
        Err(e) if !errors.is_empty() => {
            // Nothing to run: every finding is "not observable" for the same reason.
            report_lower_error(&file, &e);
            let out = ConfirmReport {
                file: file.name.clone(),
                device: "none (not lowered)".into(),
                check_seconds,
                findings: errors
                    .iter()
                    .map(|f| FindingResult {
                        rule: f.rule.name.to_string(),
                        code: f.rule.code.to_string(),
                        class: f.class().as_str().to_string(),
                        line: file.line_col(f.span.start).line,
                        statement: fuzz::stmt_text(&file, f.span),
                        outcome: Outcome::NotObservable,
                        detail: format!("the protocol cannot be lowered: {}", e.message),
                        trials: 0,
                        trials_showing: 0,
                        seconds: 0.0,
                        trace_steps: f.trace.iter().map(|t| t.repeat.max(1) as usize).sum(),
                        stuck: false,
                    })
                    .collect(),
                fuzz: None,
            };
            print_report(args.format, &out);
            return Exit::Clean;
        }
        Err(e) => {
            report_lower_error(&file, &e);
            return Exit::BadInput;
        }
    };
    let gpu = match fuzz::open_gpu(&args.gpu) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let kernel = match gpu.load(&lowered.source, &lowered.kernel_name) {
        Ok(k) => k,
        Err(e) => return fuzz::fail(e),
    };
    let mut out = ConfirmReport {
        file: file.name.clone(),
        device: format!("{} (device {})", gpu.device_name, gpu.ordinal),
        check_seconds,
        findings: Vec::new(),
        fuzz: None,
    };
    if errors.is_empty() {
        let mut acc = Accumulator::new(&file, &program, &lowered);
        let blocks = fuzz::default_blocks(&gpu, lowered.cluster.max(1));
        let seed = fuzz::seed_from_clock();
        acc.summary.device = out.device.clone();
        acc.summary.blocks_per_round = blocks;
        acc.summary.first_seed = seed;
        let t0 = Instant::now();
        if let Err(e) = fuzz::fuzz_rounds(
            &gpu,
            &kernel,
            &mut acc,
            &lowered,
            &args.gpu,
            blocks,
            seed,
            args.fuzz_seconds,
            None,
        ) {
            return fuzz::fail(e);
        }
        out.fuzz = Some(acc.finish(t0.elapsed().as_secs_f64()));
    } else {
        let rp = Replayer {
            gpu: &gpu,
            kernel: &kernel,
            lowered: &lowered,
            gpu_args: &args.gpu,
        };
        let only: Vec<&&Finding> = match args.finding {
            Some(i) => errors.get(i).into_iter().collect(),
            None => errors.iter().collect(),
        };
        for f in only {
            let (ub_first, past_ub) = match ub_on_trace(&program, f, &file) {
                Some(u) if past_divergence => (
                    None,
                    Some(format!(
                        "replayed past the divergent syncthreads of {u} with the non-aligned \
                         `barrier.sync 0`; as `__syncthreads` the compiled kernel hangs there"
                    )),
                ),
                u => (u.map(|u| u.to_string()), None),
            };
            match replay_finding(&rp, &program, &file, f, ub_first, args.seconds)
                .map(|r| with_note(r, past_ub))
            {
                Ok(r) if r.stuck => {
                    out.findings.push(r);
                    print_report(args.format, &out);
                    eprintln!(
                        "note: the GPU context is lost; the remaining findings of {} were not replayed",
                        file.name
                    );
                    // The kernel may still run: ending the process tears its context down.
                    std::process::exit(Exit::Findings as i32);
                }
                Ok(r) => out.findings.push(r),
                Err(e) => {
                    print_report(args.format, &out);
                    return fuzz::fail(e);
                }
            }
        }
    }
    print_report(args.format, &out);
    let seen = out.findings.iter().any(|f| f.outcome == Outcome::Confirmed)
        || out.fuzz.as_ref().is_some_and(|f| !f.clean());
    if seen { Exit::Findings } else { Exit::Clean }
}

fn print_report(format: Format, out: &ConfirmReport) {
    match format {
        Format::Human => print!("{}", render(out)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(out).expect("JSON values serialize")
        ),
    }
}

/// Replay each finding in a child process (`--finding N`): a kernel stuck in a hardware
/// barrier can only be ended with its process, and must not take the other findings with it.
fn run_children(
    args: &ConfirmArgs,
    file: &SourceFile,
    errors: &[&Finding],
    check_seconds: f64,
) -> Exit {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot find the phasecheck executable: {e}");
            return Exit::BadInput;
        }
    };
    let mut out = ConfirmReport {
        file: file.name.clone(),
        device: String::new(),
        check_seconds,
        findings: Vec::new(),
        fuzz: None,
    };
    for (i, f) in errors.iter().enumerate() {
        let mut cmd = std::process::Command::new(&exe);
        cmd.arg("confirm")
            .arg(&args.file)
            .args(["--format", "json", "--finding", &i.to_string()])
            .args(["--seconds", &args.seconds.to_string()])
            .args(["--device", &args.gpu.device.to_string()])
            .args(["--delay-ns", &args.gpu.delay_ns.to_string()])
            .args(["--delay-every", &args.gpu.delay_every.to_string()])
            .args(["--wait-cycles", &args.gpu.wait_cycles.to_string()]);
        for (k, v) in &args.params {
            cmd.args(["--param", &format!("{k}={v}")]);
        }
        let res = match cmd.output() {
            Ok(o) => o,
            Err(e) => {
                eprintln!("error: cannot run {}: {e}", exe.display());
                return Exit::BadInput;
            }
        };
        if res.status.code() == Some(2) {
            // The child could not use the GPU (or CUDA is missing): say why, once.
            eprint!("{}", String::from_utf8_lossy(&res.stderr));
            return Exit::BadInput;
        }
        let parsed: Option<serde_json::Value> = serde_json::from_slice(&res.stdout).ok();
        let device = parsed
            .as_ref()
            .and_then(|v| v["device"].as_str())
            .map(str::to_string);
        let result = parsed
            .as_ref()
            .and_then(|v| v["findings"].get(0).cloned())
            .and_then(|v| serde_json::from_value::<FindingResult>(v).ok());
        if let Some(d) = device {
            out.device = d;
        }
        out.findings.push(result.unwrap_or_else(|| FindingResult {
            rule: f.rule.name.to_string(),
            code: f.rule.code.to_string(),
            class: f.class().as_str().to_string(),
            line: file.line_col(f.span.start).line,
            statement: fuzz::stmt_text(file, f.span),
            outcome: Outcome::NotObserved,
            detail: format!(
                "the replay ended without a result: {}",
                String::from_utf8_lossy(&res.stderr).trim()
            ),
            trials: 0,
            trials_showing: 0,
            seconds: 0.0,
            trace_steps: f.trace.iter().map(|t| t.repeat.max(1) as usize).sum(),
            stuck: false,
        }));
    }
    print_report(args.format, &out);
    if out.findings.iter().any(|f| f.outcome == Outcome::Confirmed) {
        Exit::Findings
    } else {
        Exit::Clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_harness::sequencer::{LANDING, NONE};

    /// The error-level findings of a corpus file, its program and its confirm-mode lowering.
    fn findings(path: &str) -> (Program, Lowered, Vec<Finding>) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        let text = std::fs::read_to_string(&path).expect("corpus file");
        let file = SourceFile::new(path.display().to_string(), text);
        let program = protocols::load(&file, &[]).expect("loads");
        let report = checker::check(&program, &checker::CheckOptions::default());
        let lowered = lower::lower(
            &program,
            Some(&file),
            &LowerOptions {
                mode: Mode::Confirm,
                ..Default::default()
            },
        )
        .expect("lowers");
        let errors = report
            .findings
            .into_iter()
            .filter(|f| f.severity == Severity::Error)
            .collect();
        (program, lowered, errors)
    }

    /// The table's entries, as (cta, tid, stmt-or-issue, occurrence-or-slot).
    fn entries(t: &sequencer::SeqTable) -> Vec<[u32; 4]> {
        t.words[4..]
            .chunks(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect()
    }

    #[test]
    fn races_against_a_tma_in_flight_defer_its_landing_past_the_held_access() {
        for path in [
            "corpus/hazards/expect-after-completion/fail.phase",
            "corpus/hazards/expect-without-arrival/fail.phase",
        ] {
            let (program, lowered, errors) = findings(path);
            let races: Vec<&Finding> = errors.iter().filter(|f| f.class() == Class::Race).collect();
            assert_eq!(races.len(), 4, "{path}");
            for f in races {
                let p = plan(&program, &lowered, f).expect("plan");
                let e = entries(&p.table);
                let what = format!("{path}: {} {:?}\n{e:?}", f.rule.name, p.table.words);
                let landing = e.iter().position(|x| x[1] == LANDING).expect(&what);
                let held = p.table.words[1] as usize;
                // The held access is a read of the TMA's buffer, before the landing; the
                // landing is what it waits for; the landing names the `tma` step.
                assert_eq!(p.table.words[2] as usize, landing, "{what}");
                assert!(held < landing, "{what}");
                assert_eq!(lowered.stmts[e[held][2] as usize].keyword, "read", "{what}");
                let issue = e[landing][2] as usize;
                assert!(issue < held, "{what}");
                assert_eq!(lowered.stmts[e[issue][2] as usize].keyword, "tma", "{what}");
            }
        }
    }

    /// pipeline-role: the races against t0's `memcpy_async` still in flight (t1's copy has
    /// completed: its arrive-on event is in the trace) defer t0's copy, not t1's, past the
    /// held read, and the replay stops after the trace.
    #[test]
    fn races_against_a_memcpy_in_flight_defer_that_copy() {
        let (program, lowered, errors) = findings("corpus/hazards/pipeline-role/fail.phase");
        let races: Vec<&Finding> = errors.iter().filter(|f| f.class() == Class::Race).collect();
        assert_eq!(races.len(), 2);
        for f in races {
            let p = plan(&program, &lowered, f).expect("plan");
            let e = entries(&p.table);
            let what = format!("{} {:?}\n{e:?}", f.rule.name, p.table.words);
            assert_ne!(p.table.words[0] & sequencer::STOP, 0, "{what}");
            let landing = e.iter().position(|x| x[1] == LANDING).expect(&what);
            let held = p.table.words[1] as usize;
            assert_eq!(p.table.words[2] as usize, landing, "{what}");
            assert_eq!(lowered.stmts[e[held][2] as usize].keyword, "read", "{what}");
            assert_eq!(e[held][1], 2, "t2 reads: {what}");
            let issue = e[landing][2] as usize;
            assert_eq!(
                lowered.stmts[e[issue][2] as usize].keyword, "memcpy_async",
                "{what}"
            );
            assert_eq!(e[issue][1], 0, "t0's copy is the one in flight: {what}");
        }
    }

    /// barrier-divergence: the trace ends with t0's own read; the race is t1's read (enabled
    /// once the divergent barrier completes) against t0's next write, so both are replayed
    /// after the trace, t1's read held open across t0's write.
    #[test]
    fn a_race_the_trace_has_not_run_yet_is_replayed_after_it() {
        let (program, lowered, errors) = findings("corpus/hazards/barrier-divergence/fail.phase");
        let f = errors
            .iter()
            .find(|f| f.class() == Class::Race)
            .expect("a race");
        let p = plan(&program, &lowered, f).expect("plan");
        let e = entries(&p.table);
        let what = format!("{:?}\n{e:?}", p.table.words);
        let held = p.table.words[1] as usize;
        let partner = p.table.words[2] as usize;
        assert_eq!(
            (e[held][1], lowered.stmts[e[held][2] as usize].keyword),
            (1, "read"),
            "{what}"
        );
        assert_eq!(
            (e[partner][1], lowered.stmts[e[partner][2] as usize].keyword),
            (0, "write"),
            "{what}"
        );
        assert!(held < partner, "{what}");
    }

    #[test]
    fn a_landing_right_after_its_issue_is_left_to_the_hardware() {
        let (program, lowered, errors) =
            findings("corpus/hazards/expect-without-arrival/fail.phase");
        let ub = errors
            .iter()
            .find(|f| f.rule.name == "expect-without-arrival")
            .expect("the UB finding");
        // Its trace lands the copy at once (tma, lands, arrive, expect_tx).
        assert!(
            ub.trace
                .iter()
                .any(|t| matches!(t.actor, Actor::Async { .. }))
        );
        let p = plan(&program, &lowered, ub).expect("plan");
        assert!(entries(&p.table).iter().all(|x| x[1] != LANDING));
        assert_eq!(p.table.words[1], NONE);
        assert_eq!(p.steps.len(), 4);
    }

    /// A race whose interleaving runs into a UB first names it (the hardware may fault or hang
    /// there); one whose interleaving hits no UB does not, even when a UB statement of the same
    /// file lies on it (pipeline-role: t1's commit is UB only once a phase went unobserved).
    #[test]
    fn races_behind_a_ub_name_it() {
        for (path, ub) in [
            (
                "corpus/hazards/barrier-divergence/fail.phase",
                Some("barrier-divergence"),
            ),
            ("corpus/hazards/pipeline-role/fail.phase", None),
            ("corpus/hazards/data-race/fail.phase", None),
        ] {
            let (program, _, errors) = findings(path);
            let file = SourceFile::new(
                path,
                std::fs::read_to_string(
                    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path),
                )
                .unwrap(),
            );
            let races: Vec<&Finding> = errors.iter().filter(|f| f.class() == Class::Race).collect();
            assert!(!races.is_empty(), "{path}");
            for f in races {
                let first = ub_on_trace(&program, f, &file);
                assert_eq!(
                    first.as_ref().map(|u| u.rule),
                    ub,
                    "{path}: {}",
                    f.rule.name
                );
            }
        }
    }

    #[test]
    fn a_trace_that_orders_a_thread_exit_says_so() {
        let (program, lowered, errors) = findings("corpus/hazards/remote-cta-exited/fail.phase");
        let f = errors
            .iter()
            .find(|f| f.rule.name == "remote-cta-exited")
            .expect("the UB finding");
        let why = plan(&program, &lowered, f).err().expect("no plan");
        assert!(why.contains("a thread's exit"), "{why}");
        assert!(!why.contains("Span"), "{why}");
    }
}
