//! `phasecheck confirm KERNEL.ptx [PTX options] --app -- ./app ARGS` (issue 27 point 3):
//! replay each deadlock's counterexample on the user's own kernel, instrumented, inside the
//! user's application, and say per finding whether the real kernel showed it.
//!
//! For each error-level deadlock the trace's thread steps are mapped to the instrumented points
//! at their statements' PTX lines (`instrument::sequence`); the kernel is instrumented with the
//! sequencer holding each listed thread at its points until the trace's turn comes, and the
//! application runs once with its launches of the kernel swapped for that copy (as `fuzz
//! --app`). The finding is **confirmed on the real kernel** when the replay followed the whole
//! trace (no thread gave up waiting for its turn), then the real kernel got stuck (it hung
//! until the watchdog: a replay's bounded waits record once and wait on), every thread of the
//! replayed block recorded at a bounded wait is one the checker reports blocked, at one of the
//! PTX lines of the statement the checker reports it blocked at, at that statement's source
//! line, or finishing that statement's wait (the front end takes CUTLASS's `consumer_try_wait`
//! and `consumer_wait` as one wait at the first `try_wait`; the record names the pending
//! wait's group), and there is at least one such thread (wait-for groups with no thread recorded,
//! such as threads at a `syncwarp` or a `bar.sync`, which have no bounded form, are listed as
//! not recorded). Otherwise it is **not reproduced on the real
//! kernel** (diverged at step N, ran clean, stuck elsewhere). Other findings (data races, ...)
//! stay **model only**: the real kernel has no stamps on stage writes that would show a race.

use super::report::print_report;
use crate::args::{ConfirmArgs, Exit};
use crate::cmd::extract::{PtxArgs, extract_path, is_ptx};
use campaign::confirm::driver;
use campaign::confirm::report::{ConfirmReport, Evidence, FindingResult, Outcome};
use capture::fuzz::{Event, SEQ_HELD, StuckThread};
use checker::{Actor, Class, Finding};
use instrument::app::{AppPlan, AppRun, ranges, run_once};
use instrument::sequence::{self, Sequence, TraceStep};
use protocols::SourceFile;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

pub fn run(args: &ConfirmArgs) -> Exit {
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        Exit::BadInput
    };
    let a = &args.app;
    if !is_ptx(&args.file) {
        return fail(format!(
            "{}: --app replays on the real kernel: give its PTX (`phasecheck confirm \
             KERNEL.ptx --app -- ./app ARGS`)",
            args.file.display()
        ));
    }
    if a.command.is_empty() {
        return fail(
            "--app needs the program to run after `--`: \
             `phasecheck confirm KERNEL.ptx --app -- ./app ARGS`"
                .into(),
        );
    }
    let name = args.file.display().to_string();
    // The same extraction as `confirm` without --app (whole buffers), so the findings are the
    // same ones.
    let ptx_args = PtxArgs {
        whole_buffers: true,
        ..args.ptx.clone()
    };
    let ex = match extract_path(&args.file, &ptx_args) {
        Ok(x) => x,
        Err(e) => return fail(e),
    };
    let file = SourceFile::new(name.clone(), ex.text.clone());
    let program = match protocols::load(&file, &args.params) {
        Ok(p) => p,
        Err(errors) => {
            eprint!("{}", crate::report::load_errors::human(&errors));
            return fail(format!(
                "the protocol extracted from {name} does not load (a bug of the PTX front end)"
            ));
        }
    };
    let text = match std::fs::read_to_string(&args.file) {
        Ok(t) => t,
        Err(e) => return fail(format!("{name}: {e}")),
    };
    // The kernel that runs: FILE's, or (--replay-on) another PTX of the same lines.
    let text = match &args.replay_on {
        None => text,
        Some(other) => match std::fs::read_to_string(other) {
            Ok(t) if t.lines().count() == text.lines().count() => t,
            Ok(_) => {
                return fail(format!(
                    "{}: --replay-on needs the same kernel line for line (an edited copy of {name})",
                    other.display()
                ));
            }
            Err(e) => return fail(format!("{}: {e}", other.display())),
        },
    };
    let (report, check_seconds) = driver::check(&program, &file);
    let errors = driver::error_findings(&report);
    // No random delays: the order is the sequencer's.
    let opts = instrument::Options {
        delay_chance: 0,
        delay_max_ns: a.delay_max_ns,
        wait_bound_us: a.wait_bound_ms.saturating_mul(1000),
    };
    let plain = match instrument::instrument(&text, &opts) {
        Ok(i) => i,
        Err(e) => return fail(format!("{name}: {e}")),
    };
    let kernel = match instrument::find_kernel(&plain, Some(&ex.kernel)) {
        Ok(k) => k.to_string(),
        Err(e) => return fail(format!("{name}: {e}")),
    };
    let dir = std::env::temp_dir().join(format!("phasecheck-confirm-app-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return fail(format!("{}: {e}", dir.display()));
    }
    let mut out = ConfirmReport::new(&name, check_seconds);
    out.device = match &args.replay_on {
        None => format!("the real kernel, run by `{}`", a.command.join(" ")),
        Some(o) => format!(
            "the real kernel of {}, run by `{}`",
            o.display(),
            a.command.join(" ")
        ),
    };
    let k = &program.kernels[0];
    let (block, ctas) = (k.block, k.cluster);
    for (i, f) in errors.iter().enumerate() {
        let mut r = FindingResult::new(f, &file);
        if f.class() != Class::Deadlock {
            r.outcome = Outcome::ModelOnly;
            r.detail = "not replayed on the real kernel: `confirm --app` replays deadlocks (a \
                        race would need stamps on the stage writes, which the instrumented \
                        kernel does not have); `confirm` without --app runs the model's stress \
                        kernel"
                .into();
            out.findings.push(r);
            continue;
        }
        r.evidence = Evidence::RealKernel;
        let t0 = Instant::now();
        let steps = trace_steps(f, &file, &ex, block, ctas);
        let unit = sequence::unit_of(&text);
        let seq = match sequence::plan(&plain.points, &kernel, block, ctas, unit, &steps) {
            Ok(s) => s,
            Err(e) => return fail(format!("{name}: finding {}: {e}", i + 1)),
        };
        let inst = match instrument::instrument_sequenced(&text, &opts, &seq) {
            Ok(x) => x,
            Err(e) => return fail(format!("{name}: {e}")),
        };
        let ptx_path = a
            .keep_ptx
            .as_ref()
            .map(|p| p.with_extension(format!("finding{}.ptx", i + 1)))
            .unwrap_or_else(|| dir.join(format!("finding{}.ptx", i + 1)));
        if let Err(e) = std::fs::write(&ptx_path, &inst.ptx) {
            return fail(format!("{}: {e}", ptx_path.display()));
        }
        let plan = AppPlan {
            command: a.command.clone(),
            kernel: kernel.clone(),
            ptx_path,
            runs: 1,
            seed: 1,
            repeat: 1,
            watchdog: Duration::from_secs_f64(a.watchdog.max(0.1)),
            run_timeout: Duration::from_secs_f64(a.run_timeout.max(1.0)),
        };
        let report_path = dir.join(format!("report-{}.jsonl", i + 1));
        let run = match run_once(&plan, 0, &report_path) {
            Ok(run) => run,
            Err(e) => return fail(e),
        };
        judge(&mut r, f, &file, &ex, &inst, &seq, &run);
        r.trials = 1;
        r.trials_showing = u64::from(r.outcome == Outcome::Confirmed);
        r.seconds = t0.elapsed().as_secs_f64();
        out.findings.push(r);
    }
    if a.keep_ptx.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    print_report(args.format, &out);
    if out.shown() {
        Exit::Findings
    } else {
        Exit::Clean
    }
}

/// The PTX lines of the protocol statement at `span`.
fn ptx_lines_of(file: &SourceFile, ex: &ptx::Extracted, span: protocols::Span) -> Vec<u32> {
    let line = file.line_col(span.start).line;
    line.checked_sub(1)
        .and_then(|l| ex.lines.get(l as usize))
        .and_then(Option::as_ref)
        .map(|o| o.ptx_lines.clone())
        .unwrap_or_default()
}

/// The source line of the protocol statement at `span` (as the points show theirs).
fn source_of(file: &SourceFile, ex: &ptx::Extracted, span: protocols::Span) -> Option<String> {
    let line = file.line_col(span.start).line;
    let src = line
        .checked_sub(1)
        .and_then(|l| ex.lines.get(l as usize))
        .and_then(Option::as_ref)
        .and_then(|o| o.src)?;
    Some(ptx::source_text(&src, &ex.files, ex.trampoline))
}

/// The counterexample's thread steps (folded runs unfolded; asynchronous events, which the
/// hardware does on its own, left out), each with the PTX lines of its statement. The actors
/// come from the schedule (exact), as the model's replay takes them.
pub(crate) fn trace_steps(
    f: &Finding,
    file: &SourceFile,
    ex: &ptx::Extracted,
    block: u32,
    ctas: u32,
) -> Vec<TraceStep> {
    let nthreads = block * ctas;
    let unfolded: Vec<&checker::TraceStep> = f
        .trace
        .iter()
        .flat_map(|t| std::iter::repeat_n(t, t.repeat.max(1) as usize))
        .collect();
    let mut steps = Vec::new();
    if unfolded.len() == f.schedule.0.len() {
        for (t, &actor) in unfolded.iter().zip(&f.schedule.0) {
            if actor >= nthreads {
                continue;
            }
            steps.push(TraceStep {
                cta: actor / block,
                tid: actor % block,
                ptx_lines: ptx_lines_of(file, ex, t.span),
            });
        }
    } else {
        for t in &f.trace {
            if let Actor::Thread { cta, tid, .. } = t.actor {
                for _ in 0..t.repeat.max(1) {
                    steps.push(TraceStep {
                        cta,
                        tid,
                        ptx_lines: ptx_lines_of(file, ex, t.span),
                    });
                }
            }
        }
    }
    steps
}

/// The source line shown for a statement or a point, without the inlined helper's line
/// (`prefill_sm90.cuh:276 (via barrier.h:416)` -> `prefill_sm90.cuh:276`): a wait the front end
/// takes at a first `try_wait` may spin at a second one of the same source line.
fn user_line(source: &str) -> &str {
    source.split(" (via ").next().unwrap_or(source)
}

/// Where the checker says a thread is blocked: the statement's PTX lines and its source line.
#[derive(Clone, Debug)]
struct BlockedAt {
    group: usize,
    ptx_lines: Vec<u32>,
    source: Option<String>,
}

impl BlockedAt {
    fn matches(&self, p: &instrument::Point) -> bool {
        self.ptx_lines.contains(&p.ptx_line)
            || matches!((&self.source, &p.source),
                (Some(a), Some(b)) if user_line(a) == user_line(b))
    }
}

/// Stuck records of one run: the sequencer's (a thread that gave up waiting for its turn) and
/// the kernel's (a bounded wait expired).
fn records(run: &AppRun) -> (Vec<StuckThread>, Vec<StuckThread>) {
    let mut held = Vec::new();
    let mut stuck = Vec::new();
    for e in &run.events {
        if let Event::Batch { stuck: s, .. } | Event::Hang { stuck: s, .. } = e {
            for t in s {
                if t.point & SEQ_HELD != 0 {
                    held.push(t.clone());
                } else {
                    stuck.push(t.clone());
                }
            }
        }
    }
    (held, stuck)
}

/// The replayed block's thread of a record: (rank in the cluster, linear tid), for a 1-D
/// block of a cluster laid out along x (the kernels of docs/gpu.md); `None` for others.
fn replayed_thread(t: &StuckThread, ctas: u32) -> Option<(u32, u32)> {
    let in_first = t.block[0] < ctas && t.block[1] == 0 && t.block[2] == 0;
    (in_first && t.thread[1] == 0 && t.thread[2] == 0).then_some((t.block[0], t.thread[0]))
}

/// Decide one finding from its replay (see the module's doc).
pub(crate) fn judge(
    r: &mut FindingResult,
    f: &Finding,
    file: &SourceFile,
    ex: &ptx::Extracted,
    inst: &instrument::Instrumented,
    seq: &Sequence,
    run: &AppRun,
) {
    let total = f
        .trace
        .iter()
        .map(|t| t.repeat.max(1) as usize)
        .sum::<usize>();
    let turns = format!(
        "{} of the trace's {total} steps held in order at the kernel's instructions ({} turns \
         of {})",
        seq.entries.len(),
        seq.turns(),
        if seq.unit == 128 {
            "warpgroups"
        } else {
            "warps"
        }
    );
    let errors: Vec<&str> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Error { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    let loaded = run.events.iter().any(|e| matches!(e, Event::Loaded { .. }));
    let hung = run.killed || run.events.iter().any(|e| matches!(e, Event::Hang { .. }));
    r.outcome = Outcome::NotReproduced;
    if !errors.is_empty() || !loaded {
        r.reason = Some(if loaded { "error" } else { "not run" }.into());
        r.detail = if loaded {
            format!("the replay failed: {}", errors.join("; "))
        } else {
            format!(
                "the program never launched {} (nothing was replayed)",
                seq.kernel
            )
        };
        return;
    }
    let (held, stuck) = records(run);
    if let Some(first) = held.iter().min_by_key(|t| sequence::held_turns(t.seed)) {
        // The turn the ticket stopped at is the trace's step the real kernel did not take.
        let (stopped, own) = sequence::held_turns(first.seed);
        let step = seq.step_of_turn(stopped).map_or(0, |s| s + 1);
        let waiter = inst.point(first.point & !SEQ_HELD);
        let owners: Vec<u32> = seq
            .threads_of_turn(stopped)
            .into_iter()
            .map(|(_, tid)| tid)
            .collect();
        let group = seq
            .entries
            .iter()
            .find(|e| e.turn == stopped)
            .map(|e| e.group);
        let at = group
            .and_then(|g| seq.points_of_group(g).first().copied())
            .and_then(|p| inst.point(p));
        let place = |p: Option<&instrument::Point>| {
            p.map_or("an unknown point".to_string(), |p| {
                format!(
                    "{} (PTX line {})",
                    p.source.as_deref().unwrap_or("no line information"),
                    p.ptx_line
                )
            })
        };
        // Threads of the replayed block stuck at the kernel's own waits meanwhile (or after
        // the sequencer let everyone go): where the real kernel went instead.
        let mut meanwhile: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for t in &stuck {
            if let Some((_, tid)) = replayed_thread(t, seq.ctas) {
                meanwhile.entry(t.point).or_default().push(tid);
            }
        }
        let meanwhile = if meanwhile.is_empty() {
            String::new()
        } else {
            let parts: Vec<String> = meanwhile
                .into_iter()
                .map(|(p, tids)| format!("tid {} at {}", ranges(tids), place(inst.point(p))))
                .collect();
            format!("; stuck at the kernel's own waits: {}", parts.join("; "))
        };
        r.reason = Some(format!("diverged at step {step}"));
        r.detail = format!(
            "the real kernel left the trace at step {step} (turn {stopped} of {}: tid {} at {}), \
             which never ended; thread {} of block {} waited for its turn {own} at {} past the \
             wait bound, and the rest ran free{meanwhile}; {turns}",
            seq.turns(),
            ranges(owners),
            place(at),
            first.thread[0],
            first.block[0],
            place(waiter),
        );
        return;
    }
    // What the checker says: each blocked thread and where it is blocked.
    let mut expected: BTreeMap<(u32, u32), BlockedAt> = BTreeMap::new();
    for (group, w) in f.waits_for.iter().enumerate() {
        let at = BlockedAt {
            group,
            ptx_lines: ptx_lines_of(file, ex, w.span),
            source: source_of(file, ex, w.span),
        };
        for &t in &w.blocked {
            expected.insert(t, at.clone());
        }
    }
    let mut matched_groups: BTreeSet<usize> = BTreeSet::new();
    let mut matched: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut elsewhere: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut other_blocks = 0usize;
    for t in &stuck {
        let Some(thread) = replayed_thread(t, seq.ctas) else {
            other_blocks += 1;
            continue;
        };
        // A thread stuck finishing a pending wait (a second `try_wait` after a failed first
        // one, the record's last word is the pending wait's group) is at that wait's points.
        let pending: Vec<&instrument::Point> = if t.seed == u32::MAX {
            Vec::new()
        } else {
            seq.points_of_group(t.seed)
                .into_iter()
                .filter_map(|q| inst.point(q))
                .collect()
        };
        match (expected.get(&thread), inst.point(t.point)) {
            (Some(b), Some(p)) if b.matches(p) || pending.iter().any(|q| b.matches(q)) => {
                matched_groups.insert(b.group);
                matched.entry(t.point).or_default().push(thread.1);
            }
            _ => elsewhere.entry(t.point).or_default().push(thread.1),
        }
    }
    let at = |by: &BTreeMap<u32, Vec<u32>>| -> String {
        by.iter()
            .map(|(p, tids)| {
                let point = inst.point(*p);
                format!(
                    "tid {} at {} (PTX line {})",
                    ranges(tids.clone()),
                    point
                        .and_then(|p| p.source.as_deref())
                        .unwrap_or("no line information"),
                    point.map_or(0, |p| p.ptx_line)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let unrecorded: Vec<String> = f
        .waits_for
        .iter()
        .enumerate()
        .filter(|(g, _)| !matched_groups.contains(g))
        .map(|(_, w)| w.thread.clone())
        .collect();
    let others = if other_blocks > 0 {
        format!(
            "; {other_blocks} stuck thread(s) of blocks the trace does not replay, not compared"
        )
    } else {
        String::new()
    };
    // A replay's bounded waits record once and wait on, so a deadlock ends as a hang (the
    // watchdog); a kernel that finished had only slow waits, whatever they recorded.
    if !hung && !stuck.is_empty() {
        r.reason = Some("ran clean".into());
        r.detail = format!(
            "the real kernel followed the trace and then ran to its end (program exit {}); \
             waits that took longer than the bound on the way: {}{others}; {turns}",
            run.exit_code.map_or("none".to_string(), |c| c.to_string()),
            at(&matched.into_iter().chain(elsewhere).collect())
        );
        return;
    }
    if !matched.is_empty() && elsewhere.is_empty() {
        r.outcome = Outcome::Confirmed;
        r.detail = format!(
            "after the trace the real kernel got stuck where the checker's wait-for report \
             says: {}{}{}; {turns}",
            at(&matched),
            if unrecorded.is_empty() {
                String::new()
            } else {
                format!(
                    "; not recorded (no bounded wait there: a `syncwarp`, a `bar.sync`, a poll of \
                     several barriers): {}",
                    unrecorded.join(", ")
                )
            },
            others
        );
        return;
    }
    if matched.is_empty() && elsewhere.is_empty() {
        if hung {
            r.reason = Some("hung, no thread recorded".into());
            r.detail = format!(
                "the real kernel hung after the trace with no thread stuck at a bounded wait \
                 of the replayed block (a wait with no try form, or a poll of several \
                 barriers): not the checker's wait-for report{others}; {turns}"
            );
        } else {
            r.reason = Some("ran clean".into());
            r.detail = format!(
                "the real kernel followed the trace and then ran to its end (program exit {}){others}; {turns}",
                run.exit_code.map_or("none".to_string(), |c| c.to_string())
            );
        }
        return;
    }
    r.reason = Some("stuck elsewhere".into());
    r.detail = format!(
        "the real kernel got stuck, not as the checker says: {}{}{others}; {turns}",
        at(&elsewhere),
        if matched.is_empty() {
            String::new()
        } else {
            format!("; as the checker says: {}", at(&matched))
        }
    );
}
