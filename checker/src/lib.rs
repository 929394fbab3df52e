//! The model checker: explores every interleaving of a loaded `.phase` program and returns
//! findings (deadlocks, undefined behaviour, races, performance warnings) to a reporter.
//!
//! It never prints. Entry points: [`check`], [`check_with_progress`], [`replay`].

pub mod explore;
pub mod goal;
pub mod headline;
pub mod hunt;
pub mod lints;
pub mod memo;
pub mod model;
mod portfolio;
pub mod report;
pub mod rules;

pub use explore::Progress;
pub use model::stuck::wait_for_dot;
pub use report::{
    Actor, Finding, FoundBy, Incomplete, Label, Party, PartyStatus, Report, Schedule, Stats,
    TraceStep, Verdict, WaitFor,
};
pub use rules::{Class, Rule, Severity};

use explore::Step;
use model::state::State;
use model::{MFinding, PhaseModel, Search};
use protocols::ir::Program;

/// Search limits and switches.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Stop (verdict inconclusive) after this many distinct states.
    pub max_states: u64,
    /// Stop (verdict inconclusive) before the visited set and queue exceed this many bytes.
    pub max_memory_bytes: u64,
    /// Per-thread bound on `while` loop trips.
    pub max_loop_trips: u32,
    /// Stop (verdict inconclusive) after this much wall-clock time; `None`: no limit.
    pub max_time: Option<std::time::Duration>,
    /// Merge states that differ only by a permutation of interchangeable threads (on by
    /// default; turning it off never changes findings, only the state count).
    pub symmetry: bool,
    /// Partial-order reduction: take a step alone when it is independent of everything the
    /// other actors can still do (on by default; turning it off never changes findings, only
    /// the state count).
    pub partial_order: bool,
    /// Run every search to its end. Otherwise the search stops [`AFTER_FINDINGS`] states after
    /// its first error (the verdict is decided), and a search that has not decided after
    /// [`portfolio::PAUSE_AT`] states off its deepest path pauses for the bug-hunting portfolio (random schedules,
    /// one round each), which ends it when it confirms an error.
    pub exhaustive: bool,
    /// Steps of each random walk at the portfolio's first pause (at up to 128 threads; fewer
    /// in proportion above); each later pause doubles
    /// it, up to [`portfolio::WALK_STEPS_MAX`] (or this, if larger). Steps, not time: the
    /// walks, and so the report, are the same on every machine and every run.
    pub hunt_walk_steps: u32,
    /// When a search that is not exhaustive is decided: by default at its first error; never
    /// by an allowed finding; with wanted findings (`phasecheck test`), once each has been
    /// found ([`goal`]).
    pub goal: goal::Goal,
}

/// States a non-exhaustive search explores after its first error, collecting more findings.
pub const AFTER_FINDINGS: u64 = 5_000;

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            max_states: 50_000_000,
            // A quarter of the 24 GiB machine this project is built for.
            max_memory_bytes: 6 << 30,
            max_loop_trips: 1_000,
            // A search nobody waits for is a hang: ten minutes, then inconclusive with the
            // reason and the coverage.
            max_time: Some(std::time::Duration::from_secs(600)),
            symmetry: true,
            partial_order: true,
            exhaustive: false,
            hunt_walk_steps: 1024,
            goal: goal::Goal::default(),
        }
    }
}

/// Check one program.
pub fn check(program: &Program, options: &CheckOptions) -> Report {
    check_with_progress(program, options, None)
}

/// Check one program, reporting progress to `progress` about every 16k states.
pub fn check_with_progress(
    program: &Program,
    options: &CheckOptions,
    progress: Option<&dyn Fn(&Progress)>,
) -> Report {
    let start = std::time::Instant::now();
    let mut m = PhaseModel::new(program, options.max_loop_trips, options.symmetry);
    m.por = options.partial_order;
    let (raw_init, init_found, init_bound, init_stop) = m.initial();
    let mut findings: Vec<Finding> = init_found
        .into_iter()
        .map(|f| finish(f, Vec::new(), Schedule::default()))
        .collect();
    // The static lints find what they find without a search: what the goal looks for among
    // them is not searched for (an `expect warning parity-not-bit` line must not make the
    // search run to its end).
    let lint_findings = lints::run(program);
    let goal = options.goal.left_after(
        findings
            .iter()
            .chain(&lint_findings)
            .map(|f| (f.rule, f.span, f.severity)),
    );
    m.goal = goal.clone();
    let options = &CheckOptions {
        goal,
        ..options.clone()
    };
    let mut stats = Stats::default();
    let mut incomplete = None;
    if let Some(b) = init_bound {
        incomplete = Some(Incomplete {
            reason: b,
            covered: "nothing: the bound was hit before the first step".into(),
        });
    } else if !init_stop {
        let mut init = raw_init.clone();
        m.canon(&mut init);
        let search = Search::new(&m, init);
        let limits = explore::Limits {
            max_states: options.max_states,
            max_memory_bytes: options.max_memory_bytes,
            max_time: options.max_time,
            after_findings: (!options.exhaustive).then_some(AFTER_FINDINGS),
            pause_at: (!options.exhaustive).then_some(portfolio::PAUSE_AT),
        };
        // Made at the first pause: most searches finish before one. Its walks stop at the
        // check's time limit, counted from here.
        let deadline = options
            .max_time
            .and_then(|t| std::time::Instant::now().checked_add(t));
        let mut portfolio: Option<portfolio::Portfolio> = None;
        // Each pause runs one round of walks, longer each time (steps, not time).
        let mut hook = |states: u64| {
            let portfolio = portfolio
                .get_or_insert_with(|| portfolio::Portfolio::new(program, options, deadline));
            portfolio.pause(states).then(|| {
                (
                    format!(
                        "stopped: {} confirmed {}; --exhaustive searches every interleaving",
                        portfolio.hunted.summary(),
                        if options.goal.wanted.is_empty() {
                            "an error"
                        } else {
                            "every finding looked for"
                        }
                    ),
                    "the exhaustive search's first states, then random schedules".to_string(),
                )
            })
        };
        let out = explore::explore(&search, &limits, progress, Some(&mut hook));
        stats = Stats {
            states: out.states,
            transitions: out.transitions,
            elapsed_ms: 0,
            peak_memory_bytes: out.peak_memory_bytes,
        };
        if let Some((reason, covered)) = &out.incomplete {
            let mut covered = covered.clone();
            if let Some(h) = portfolio.as_ref().map(|p| &p.hunted)
                && h.walks > 0
                && !h.decided()
            {
                covered.push_str(&format!("; {} found no error", h.summary()));
            }
            incomplete = Some(Incomplete {
                reason: reason.clone(),
                covered,
            });
        }
        for f in &out.found {
            let mut path = out.path(f.state);
            if let Some(a) = f.action {
                path.push(a);
            }
            findings.push(rebuild(&m, &raw_init, &path, f.action.is_some(), &f.finding).finding);
        }
        // Findings of the portfolio that the search did not reach (it stopped early).
        for f in portfolio.into_iter().flat_map(|p| p.hunted.findings) {
            if !findings
                .iter()
                .any(|g| g.rule.code == f.rule.code && g.span == f.span)
            {
                findings.push(f);
            }
        }
    }
    // Root causes, once per reported finding (not per candidate path of the portfolio).
    for f in &mut findings {
        let schedule = std::mem::take(&mut f.schedule);
        model::cause::explain(&m, &raw_init, &schedule.0, f);
        f.schedule = schedule;
    }
    findings.extend(lint_findings);
    findings.sort_by(|a, b| (a.span, a.rule.code).cmp(&(b.span, b.rule.code)));
    stats.elapsed_ms = start.elapsed().as_millis() as u64;
    let verdict = if findings.iter().any(|f| f.severity == Severity::Error) {
        Verdict::Hazard
    } else if incomplete.is_some() {
        Verdict::Inconclusive
    } else {
        Verdict::Ok
    };
    Report {
        verdict,
        findings,
        stats,
        incomplete,
    }
}

fn finish(f: MFinding, trace: Vec<TraceStep>, schedule: Schedule) -> Finding {
    Finding {
        rule: f.rule,
        severity: f.rule.default_severity,
        message: f.message,
        span: f.span,
        labels: f.labels,
        help: f.help,
        trace,
        waits_for: f.waits_for,
        schedule,
        found_by: FoundBy::Search,
    }
}

/// Map an action on the canonical form of `real` to the same action on `real` itself.
fn real_action(m: &PhaseModel, real: &State, canonical_action: u32) -> u32 {
    if !m.symmetry {
        // Paths of the unreduced model (random schedules) name real actors already.
        return canonical_action;
    }
    let mut c = real.clone();
    let perm = m.canon(&mut c);
    let n = m.nthreads();
    if canonical_action < n {
        return perm[canonical_action as usize];
    }
    let want = c.events[(canonical_action - n) as usize];
    let mut inv = vec![0u32; n as usize];
    for (new, &old) in perm.iter().enumerate() {
        inv[old as usize] = new as u32;
    }
    let idx = real
        .events
        .iter()
        .position(|e| model::symmetry::rename_event(*e, &inv) == want)
        .expect("the canonical event exists in the real state");
    n + idx as u32
}

/// One step of a replay on real (not canonical) states, rendered. `index`: the replay's
/// [`model::exec::WalkIndex`], the same for every step of one replay.
fn replay_step(
    m: &PhaseModel,
    s: &mut State,
    action: u32,
    found: &mut Vec<MFinding>,
    index: &mut model::exec::WalkIndex,
) -> (TraceStep, Option<u32>, Step<()>) {
    let (actor, name, span, op, bar) = model::trace::describe(m, s, action);
    let before = bar.map(|b| s.bars[b as usize]);
    // In place: a replay of a walk's path at 768 threads is 100 000 steps, and a copy of the
    // state per step was most of it. Stepped as a walk is: the same states as the plain step
    // (`walks_agree_with_full_steps`), without a scan of every thread per kept access at
    // every step (at 288 threads that scan was most of a replay's step).
    let (step, _) = m.step_walk(s, action, found, index);
    let state = match (&step, bar, before) {
        (Step::Next(()), Some(b), _) => model::trace::bar_state(m, s, b),
        (_, Some(b), Some(old)) => model::trace::bar_text(m, b, &old),
        _ => String::new(),
    };
    let thread = (action < m.nthreads()).then_some(action);
    (
        TraceStep {
            actor,
            thread: name,
            repeat: 1,
            span,
            op,
            state,
        },
        thread,
        step,
    )
}

/// Rebuild the trace of a finding by replaying its canonical path from the real initial
/// state; the finding is regenerated on the real states so that it names the real threads.
struct Rebuilt {
    finding: Finding,
    /// The replay raised the finding again (else `finding` is the search's own).
    regenerated: bool,
}

fn rebuild(m: &PhaseModel, init: &State, path: &[u32], by_step: bool, f: &MFinding) -> Rebuilt {
    let mut s = init.clone();
    let mut steps = Vec::new();
    let mut schedule = Vec::new();
    let mut last_found = Vec::new();
    let mut index = model::exec::WalkIndex::default();
    for (i, &a) in path.iter().enumerate() {
        let real = real_action(m, &s, a);
        schedule.push(real);
        let mut found = Vec::new();
        let (step, thread, next) = replay_step(m, &mut s, real, &mut found, &mut index);
        steps.push((step, thread));
        if i + 1 == path.len() && by_step {
            last_found = found;
        }
        if !matches!(next, Step::Next(())) {
            break;
        }
    }
    if !by_step {
        let search = Search::new(m, s.clone());
        let mut actions = Vec::new();
        explore::Model::actions(&search, &s, &mut actions);
        explore::Model::check_state(&search, &s, &actions, &mut last_found);
    }
    let same = last_found
        .into_iter()
        .find(|g| g.rule.code == f.rule.code && g.span == f.span);
    let regenerated = same.is_some();
    Rebuilt {
        finding: finish(
            same.unwrap_or_else(|| f.clone()),
            model::trace::fold(m, steps),
            Schedule(schedule),
        ),
        regenerated,
    }
}

/// [`rebuild`] that reports the finding only if the replay raises it again (rule and
/// statement): for paths that did not come from the exhaustive search.
pub(crate) fn rebuild_strict(
    m: &PhaseModel,
    init: &State,
    path: &[u32],
    by_step: bool,
    f: &MFinding,
) -> Option<Finding> {
    let out = rebuild(m, init, path, by_step, f);
    out.regenerated.then_some(out.finding)
}

/// Result of `--replay`.
pub struct Replay {
    pub trace: Vec<TraceStep>,
    pub findings: Vec<Finding>,
}

/// Replay a schedule (real actor numbers: thread index, or thread count + index of an
/// in-flight event) and report the trace and what it hits.
pub fn replay(
    program: &Program,
    options: &CheckOptions,
    schedule: &Schedule,
) -> Result<Replay, String> {
    let m = PhaseModel::new(program, options.max_loop_trips, false);
    let (mut s, init_found, _, stop) = m.initial();
    let init = s.clone();
    let mut findings: Vec<Finding> = init_found
        .into_iter()
        .map(|f| finish(f, Vec::new(), Schedule::default()))
        .collect();
    let mut steps = Vec::new();
    let mut index = model::exec::WalkIndex::default();
    if stop {
        return Ok(Replay {
            trace: Vec::new(),
            findings,
        });
    }
    for (i, &a) in schedule.0.iter().enumerate() {
        let n = m.nthreads();
        let ok = if a < n {
            model::exec::enabled(&m, &s, a)
        } else {
            ((a - n) as usize) < s.events.len()
        };
        if !ok {
            return Err(format!(
                "step {} of the schedule: actor {a} cannot move in that state",
                i + 1
            ));
        }
        let mut found = Vec::new();
        let (step, thread, next) = replay_step(&m, &mut s, a, &mut found, &mut index);
        steps.push((step, thread));
        let sched = Schedule(schedule.0[..=i].to_vec());
        findings.extend(found.into_iter().map(|f| {
            let mut f = finish(f, Vec::new(), sched.clone());
            model::cause::explain(&m, &init, &sched.0, &mut f);
            f
        }));
        if !matches!(next, Step::Next(())) {
            return Ok(Replay {
                trace: model::trace::fold(&m, steps),
                findings,
            });
        }
    }
    let search = Search::new(&m, s.clone());
    let mut actions = Vec::new();
    explore::Model::actions(&search, &s, &mut actions);
    let mut found = Vec::new();
    explore::Model::check_state(&search, &s, &actions, &mut found);
    findings.extend(found.into_iter().map(|f| {
        let mut f = finish(f, Vec::new(), schedule.clone());
        model::cause::explain(&m, &init, &schedule.0, &mut f);
        f
    }));
    Ok(Replay {
        trace: model::trace::fold(&m, steps),
        findings,
    })
}
