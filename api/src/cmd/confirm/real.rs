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
use checker::{Actor, Class, Finding};
use instrument::app::{AppPlan, run_once};
use instrument::sequence::{self, TraceStep};
use protocols::SourceFile;
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
        super::verdict::judge(&mut r, f, &file, &ex, &inst, &seq, &run);
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
pub(super) fn ptx_lines_of(
    file: &SourceFile,
    ex: &ptx::Extracted,
    span: protocols::Span,
) -> Vec<u32> {
    let line = file.line_col(span.start).line;
    line.checked_sub(1)
        .and_then(|l| ex.lines.get(l as usize))
        .and_then(Option::as_ref)
        .map(|o| o.ptx_lines.clone())
        .unwrap_or_default()
}

/// The source line of the protocol statement at `span` (as the points show theirs).
pub(super) fn source_of(
    file: &SourceFile,
    ex: &ptx::Extracted,
    span: protocols::Span,
) -> Option<String> {
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
