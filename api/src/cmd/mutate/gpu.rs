//! `mutate --gpu`: each mutant fuzzed on the GPU and the checker's error-level findings
//! replayed there (`campaign::mutate::gpu::run_mutant`), in a child process per mutant
//! (`phasecheck mutate FILE --gpu-child N`, started by [`crate::children::mutant_in_child`]).
//! The child prints one [`GpuOutcome`] as JSON; this module runs the child's side and says
//! an outcome in one line.

use super::{GpuState, Operator};
use crate::args::{Exit, Format, MutateArgs};
use crate::cmd::fuzz::{self, NotRun};
use campaign::confirm::driver::{ConfirmSettings, Device};
pub(crate) use campaign::mutate::gpu::GpuOutcome;
use campaign::mutate::gpu::{MutantPlan, Seen, run_mutant};
use gpu_harness::run::{Gpu, RunError, end_process};

/// One line for people: what the fuzzing saw and what the replays showed.
pub(crate) fn describe(o: &GpuOutcome) -> String {
    let mut parts = Vec::new();
    if let Some(f) = &o.fuzz {
        if f.clean() && !o.stuck {
            parts.push(format!("fuzz: nothing seen in {} trials", f.trials));
        } else {
            let mut seen = Vec::new();
            let lines = |rows: &[Seen]| {
                let mut l: Vec<String> = rows.iter().map(|r| r.line.to_string()).collect();
                l.dedup();
                l.join(", ")
            };
            if !f.hangs.is_empty() {
                let n: u64 = f.hangs.iter().map(|h| h.count).sum();
                seen.push(format!("{n} hang(s) at line {}", lines(&f.hangs)));
            }
            if !f.stale_reads.is_empty() {
                let n: u64 = f.stale_reads.iter().map(|h| h.count).sum();
                seen.push(format!(
                    "{n} stale read(s) at line {}",
                    lines(&f.stale_reads)
                ));
            }
            if f.runaway_loops > 0 {
                seen.push(format!("{} runaway loop(s)", f.runaway_loops));
            }
            if !f.stuck_at.is_empty() {
                seen.push(format!(
                    "stuck in a hardware collective at line {}",
                    lines(&f.stuck_at)
                ));
            }
            parts.push(format!("fuzz: {} in {} trials", seen.join(", "), f.trials));
        }
    }
    if !o.findings.is_empty() {
        let replays: Vec<String> = o
            .findings
            .iter()
            .map(|r| format!("{} (line {}) {}", r.rule, r.line, r.outcome.as_str()))
            .collect();
        parts.push(format!("replay: {}", replays.join(", ")));
    }
    parts.extend(o.notes.iter().cloned());
    parts.join("; ")
}

/// Whether `--gpu` can run here: the device's name, or why not.
pub(super) fn probe(args: &MutateArgs) -> GpuState {
    match Gpu::open(args.gpu_args.device) {
        Ok(g) => GpuState::On {
            device: format!("{} (device {})", g.device_name, g.ordinal),
        },
        Err(e) => GpuState::Skipped {
            reason: match e {
                RunError::Env(_) => "no-gpu",
                _ => "driver-error",
            }
            .into(),
            error: e.to_string(),
        },
    }
}

/// Print the child's answer (what the parent reads).
fn print_outcome(o: &GpuOutcome) {
    println!(
        "{}",
        serde_json::to_string_pretty(o).expect("JSON values serialize")
    );
}

/// The child: the GPU part of mutant `id` (1-based) of the one file given, as JSON; then the
/// process ends with `end_process` (a kernel stuck in a hardware collective, or a faulted
/// context, is freed only with the process, and the driver's teardown at an ordinary exit
/// could wait for it).
pub(super) fn child(args: &MutateArgs, only: &[Operator], id: usize) -> Exit {
    let name = args
        .files
        .first()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let not_run = NotRun {
        format: Format::Json,
        file: &name,
    };
    if args.files.len() != 1 {
        return not_run.print("bad-input", "--gpu-child takes one file", Exit::BadInput);
    }
    let mut finder = crate::config::Finder::default();
    let prepared = match super::prepare(args, &args.files[0], &mut finder) {
        Ok(p) => p,
        Err(b) => return not_run.print("bad-input", &b.error, Exit::BadInput),
    };
    let (mut loaded, _, _) = super::loaded_mutants(&prepared, only);
    if id == 0 || id > loaded.len() {
        return not_run.print(
            "bad-input",
            &format!("there is no mutant {id} ({} load)", loaded.len()),
            Exit::BadInput,
        );
    }
    let m = loaded.swap_remove(id - 1);
    let (file, program) = (&m.file, &m.program);
    let plan = MutantPlan {
        settings: ConfirmSettings {
            seconds: args.confirm_seconds,
            aim_seconds: args.aim_seconds,
            fuzz_seconds: args.gpu_seconds,
            gpu: fuzz::GpuOptions::from(&args.gpu_args),
        },
        params: &prepared.overrides,
        replay: args.gpu_child_replay,
        on_lower_error: crate::cmd::lower::report_lower_error,
        watchdog: std::sync::Arc::new(|o: GpuOutcome| print_outcome(&o)),
        exit_code: Exit::Findings as i32,
    };
    let options = super::check_options(args);
    let check = || crate::expectations::check_caught(file, program, &options);
    let mut device = Device::new(args.gpu_args.device);
    match run_mutant(&mut device, file, program, check, &plan) {
        Ok(out) => {
            print_outcome(&out);
            end_process(Exit::Clean as i32)
        }
        Err(e) => fuzz::fail_as(e, Some(&not_run)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use campaign::confirm::report::{Evidence, FindingResult, Outcome};
    use campaign::fuzz::FuzzSummary;
    use campaign::mutate::gpu::{FuzzBrief, Seen};

    /// The child's answer survives the trip through JSON to the parent, and reads as one line.
    #[test]
    fn outcome_round_trip_and_description() {
        let o = GpuOutcome {
            hazard: Some(true),
            fuzz: Some(FuzzBrief {
                trials: 8448,
                seconds: 2.0,
                hangs: vec![Seen {
                    line: 23,
                    statement: "wait empty[s] parity 1".into(),
                    count: 3,
                }],
                stale_reads: Vec::new(),
                runaway_loops: 0,
                stuck_at: Vec::new(),
            }),
            findings: vec![FindingResult {
                rule: "deadlock".into(),
                code: "PC100".into(),
                class: "deadlock".into(),
                line: 23,
                statement: "wait empty[s] parity 1".into(),
                outcome: Outcome::Confirmed,
                evidence: Evidence::Model,
                detail: "bounded waits expired at line 23".into(),
                trials: 132,
                trials_showing: 132,
                seconds: 0.1,
                trace_steps: 4,
                stuck: false,
                why_not_shown: Vec::new(),
                aimed_fuzz: None,
                reason: None,
            }],
            stuck: false,
            faulted: false,
            notes: Vec::new(),
        };
        let text = serde_json::to_string(&o).expect("serializes");
        let back: GpuOutcome = serde_json::from_str(&text).expect("deserializes");
        assert_eq!(back.hazard, Some(true));
        assert_eq!(back.findings[0].outcome, Outcome::Confirmed);
        assert_eq!(
            describe(&back),
            "fuzz: 3 hang(s) at line 23 in 8448 trials; replay: deadlock (line 23) confirmed"
        );
        let nothing = GpuOutcome {
            hazard: Some(false),
            fuzz: Some(FuzzBrief {
                trials: 10,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(describe(&nothing), "fuzz: nothing seen in 10 trials");
    }

    /// A fuzzing run that ended with a launch stuck in a hardware collective is a GPU hazard:
    /// the collectives its threads were blocked in are `stuck_at`, not expired waits.
    #[test]
    fn a_stuck_fuzzing_launch_is_a_hazard() {
        use crate::cmd::fuzz::{HangRow, SeenAt, StuckReport};
        let row = |line, stuck| HangRow {
            statement: "bar_sync 1, 64".into(),
            line,
            count: 64,
            first: SeenAt { seed: 8, block: 1 },
            observed: String::new(),
            kernel: None,
            stuck,
            trials: stuck.then_some(2),
        };
        let s = FuzzSummary {
            trials: 4,
            hangs: vec![row(4, false), row(6, true)],
            stuck: Some(StuckReport {
                seed: 8,
                blocks: 4,
                seconds: 35.0,
                positions_read: true,
                read_error: None,
                trials_done: Some(1),
                trials_stuck: Some(2),
                trials_not_started: Some(1),
                running_elsewhere: 0,
            }),
            ..Default::default()
        };
        assert!(s.is_stuck());
        let mut out = GpuOutcome::default();
        out.record_stuck(&s);
        assert!(out.stuck);
        let f = out.fuzz.as_ref().expect("fuzzed");
        assert_eq!(f.hangs.len(), 1);
        assert_eq!(f.stuck_at.len(), 1);
        assert_eq!(f.stuck_at[0].line, 6);
        assert_eq!(
            describe(&out),
            "fuzz: 64 hang(s) at line 4, stuck in a hardware collective at line 6 in 4 trials; \
             fuzzing: the round of seed 8 (4 blocks) got stuck in a hardware collective (it did \
             not finish within 35 s)"
        );
        let back: GpuOutcome =
            serde_json::from_str(&serde_json::to_string(&out).expect("serializes"))
                .expect("deserializes");
        assert_eq!(back.fuzz.expect("fuzzed").stuck_at[0].count, 64);
        // Without the hang rows (the positions were not read): still a hazard, said once.
        let mut out = GpuOutcome::default();
        let bare = FuzzSummary {
            trials: 4,
            stuck: s.stuck.clone(),
            ..Default::default()
        };
        out.record_stuck(&bare);
        assert!(
            !describe(&out).contains("nothing seen"),
            "{}",
            describe(&out)
        );
    }
}
