//! `mutate --gpu`: each mutant fuzzed on the GPU (`fuzz`'s [`fuzz::fuzz_program`]) and the
//! checker's error-level findings replayed there (`confirm`'s [`confirm::replay_one`]).
//!
//! Each mutant runs in a child process of its own (`phasecheck mutate FILE --gpu-child N`, the
//! same binary), as `confirm` replays each finding in one: a mutant whose kernel gets stuck in a
//! hardware barrier (a `syncthreads` that threads reach at different statements) can only be
//! ended with its process, and must not take the other mutants with it. The child prints one
//! [`GpuOutcome`] as JSON.

use super::{GpuState, MutantResult, Prepared, Verdict4};
use crate::cli::{Exit, Format, MutateArgs};
use crate::cmd::confirm::report::{FindingResult, Outcome};
use crate::cmd::confirm::{self, Replayer};
use crate::cmd::fuzz::{self, FuzzError, FuzzPlan, FuzzSummary, NotRun};
use checker::Severity;
use gpu_harness::run::{Gpu, RunError};
use serde::{Deserialize, Serialize};

/// Where the GPU saw a hang or a stale read while fuzzing: the statement and how often.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Seen {
    pub(crate) line: u32,
    pub(crate) statement: String,
    pub(crate) count: u64,
}

/// What fuzzing one mutant saw (both parts of the run: plain and proxy-window rounds).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct FuzzBrief {
    pub(crate) trials: u64,
    pub(crate) seconds: f64,
    pub(crate) hangs: Vec<Seen>,
    pub(crate) stale_reads: Vec<Seen>,
    pub(crate) runaway_loops: u64,
}

impl FuzzBrief {
    fn of(s: &FuzzSummary) -> FuzzBrief {
        let mut b = FuzzBrief::default();
        for part in std::iter::once(s).chain(s.proxy_window.as_deref()) {
            b.trials += part.trials;
            b.seconds += part.wall_seconds;
            b.runaway_loops += part.runaway_loops;
            b.hangs.extend(part.hangs.iter().map(|h| Seen {
                line: h.line,
                statement: h.statement.clone(),
                count: h.count,
            }));
            b.stale_reads.extend(part.stale_reads.iter().map(|r| Seen {
                line: r.line,
                statement: r.statement.clone(),
                count: r.count,
            }));
        }
        b
    }

    fn clean(&self) -> bool {
        self.hangs.is_empty() && self.stale_reads.is_empty() && self.runaway_loops == 0
    }
}

/// The GPU's answer for one mutant.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct GpuOutcome {
    /// `Some(true)`: the GPU showed a hazard (a hang or stale read while fuzzing, a replayed
    /// finding confirmed, a kernel stuck in a hardware barrier or one that trapped while
    /// fuzzing); `Some(false)`: the fuzzing
    /// ran and nothing was seen (nor confirmed); `None`: nothing could be run (see `notes`).
    pub(crate) hazard: Option<bool>,
    /// Fuzzing, when it ran.
    pub(crate) fuzz: Option<FuzzBrief>,
    /// Each replayed error-level finding of the checker (`confirm`'s results).
    pub(crate) findings: Vec<FindingResult>,
    /// While fuzzing, a kernel got stuck in a hardware barrier (a hang that cannot be
    /// bounded); the GPU context was lost after it.
    #[serde(default)]
    pub(crate) stuck: bool,
    /// While fuzzing, a kernel trapped (a driver error after it loaded); the context was lost.
    #[serde(default)]
    pub(crate) faulted: bool,
    /// What could not be run, and why.
    #[serde(default)]
    pub(crate) notes: Vec<String>,
}

impl GpuOutcome {
    fn not_run(note: String) -> GpuOutcome {
        GpuOutcome {
            notes: vec![note],
            ..Default::default()
        }
    }

    /// One line for people: what the fuzzing saw and what the replays showed.
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(f) = &self.fuzz {
            if f.clean() {
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
                parts.push(format!("fuzz: {} in {} trials", seen.join(", "), f.trials));
            }
        }
        if !self.findings.is_empty() {
            let replays: Vec<String> = self
                .findings
                .iter()
                .map(|r| format!("{} (line {}) {}", r.rule, r.line, r.outcome.as_str()))
                .collect();
            parts.push(format!("replay: {}", replays.join(", ")));
        }
        parts.extend(self.notes.iter().cloned());
        parts.join("; ")
    }
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

/// Run the GPU part of mutant `m` of a prepared file in a child process and read its answer.
pub(super) fn run_child(
    args: &MutateArgs,
    prepared: &Prepared,
    only: &[super::Operator],
    m: &MutantResult,
) -> GpuOutcome {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            return GpuOutcome::not_run(format!("cannot find the phasecheck executable: {e}"));
        }
    };
    let mut cmd = std::process::Command::new(&exe);
    // The child chooses exactly these parameters and operators, so its mutant N is ours.
    cmd.arg("mutate")
        .arg(&prepared.path)
        .args(["--declared", "--no-config", "--format", "json"])
        .args(["--gpu-child", &m.id.to_string()])
        .args(["--max-time", &super::time_arg(args.max_time)])
        .args(["--max-states", &args.max_states.to_string()])
        .args(["--max-memory", &args.max_memory.to_string()])
        .args(["--max-loop-trips", &args.max_loop_trips.to_string()])
        .args(["--gpu-seconds", &args.gpu_seconds.to_string()])
        .args(["--confirm-seconds", &args.confirm_seconds.to_string()])
        .args(["--device", &args.gpu_args.device.to_string()])
        .args(["--delay-ns", &args.gpu_args.delay_ns.to_string()])
        .args(["--delay-every", &args.gpu_args.delay_every.to_string()])
        .args(["--wait-cycles", &args.gpu_args.wait_cycles.to_string()]);
    for (k, v) in &prepared.overrides {
        cmd.args(["--param", &format!("{k}={v}")]);
    }
    for op in only {
        cmd.args(["--operator", op.name()]);
    }
    if m.checked.verdict == Verdict4::Hazard {
        cmd.arg("--gpu-child-replay");
    }
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => return GpuOutcome::not_run(format!("cannot run {}: {e}", exe.display())),
    };
    let value: Option<serde_json::Value> = serde_json::from_slice(&out.stdout).ok();
    if let Some(v) = &value
        && v["skipped"] == true
    {
        return GpuOutcome::not_run(format!(
            "not run ({}): {}",
            v["reason"].as_str().unwrap_or("?"),
            v["error"].as_str().unwrap_or("")
        ));
    }
    match value.and_then(|v| serde_json::from_value::<GpuOutcome>(v).ok()) {
        Some(o) => o,
        None => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            GpuOutcome::not_run(format!(
                "the GPU run ended without a result (exit {}): {}",
                out.status
                    .code()
                    .map_or_else(|| "by a signal".to_string(), |c| c.to_string()),
                stderr.trim().lines().last().unwrap_or("")
            ))
        }
    }
}

/// Print the child's answer and end the process (the GPU context may be stuck).
fn finish(mut o: GpuOutcome, fuzzed: bool) -> ! {
    let confirmed = o.findings.iter().any(|r| r.outcome == Outcome::Confirmed);
    let seen = o.fuzz.as_ref().is_some_and(|f| !f.clean());
    o.hazard = if seen || confirmed || o.stuck || o.faulted {
        Some(true)
    } else if fuzzed {
        Some(false)
    } else {
        None
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&o).expect("JSON values serialize")
    );
    std::process::exit(Exit::Clean as i32)
}

/// The child: the GPU part of mutant `id` (1-based) of the one file given, as JSON.
pub(super) fn child(args: &MutateArgs, only: &[super::Operator], id: usize) -> Exit {
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
    let gpu = match fuzz::open_gpu(&args.gpu_args, &not_run) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let (file, program) = (&m.file, &m.program);
    let mut out = GpuOutcome::default();
    let mut fuzzed = false;
    match fuzz::lower_for_fuzz(program, file, false) {
        Err(e) => out
            .notes
            .push(format!("not fuzzed: cannot lower: {}", e.message)),
        Ok(lowered) => {
            let plan = FuzzPlan {
                gpu_args: &args.gpu_args,
                blocks: None,
                seed: None,
                seconds: args.gpu_seconds,
                proxy_window: false,
                window_rounds: true,
                params: &prepared.overrides,
            };
            match fuzz::fuzz_program(&gpu, file, program, &lowered, &plan, None) {
                Ok(s) => {
                    out.fuzz = Some(FuzzBrief::of(&s));
                    fuzzed = true;
                }
                Err(FuzzError::NotLowered(e)) => {
                    out.notes
                        .push(format!("not fuzzed: cannot lower: {}", e.message));
                }
                Err(FuzzError::Run(RunError::Stuck { seconds })) => {
                    out.stuck = true;
                    out.notes.push(format!(
                        "fuzzing: a kernel got stuck in a hardware barrier (it did not finish \
                         within {seconds:.0} s)"
                    ));
                    finish(out, false);
                }
                Err(FuzzError::Run(e @ RunError::Compile { .. })) => {
                    out.notes.push(format!("not fuzzed: {e}"));
                }
                Err(FuzzError::Run(RunError::Driver { what, error }))
                    if !what.starts_with("loading") && !what.starts_with("finding") =>
                {
                    // A launch failed after the kernel loaded: the kernel trapped (what `fuzz`
                    // reports as a finding, exit 1). The context is lost.
                    out.faulted = true;
                    out.notes
                        .push(format!("fuzzing: the kernel faulted ({what}: {error})"));
                    finish(out, false);
                }
                Err(FuzzError::Run(e)) => {
                    out.notes.push(format!("not fuzzed: {e}"));
                    finish(out, false);
                }
            }
        }
    }
    if args.gpu_child_replay && args.confirm_seconds > 0.0 {
        let options = super::check_options(args);
        let report = match crate::expectations::check_caught(file, program, &options) {
            Ok(r) => r,
            Err(e) => {
                out.notes.push(format!("not replayed: {e}"));
                finish(out, fuzzed);
            }
        };
        let errors: Vec<&checker::Finding> = report
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .collect();
        for f in errors {
            let (lowered, past_divergence) = match confirm::lower_for_replay(program, file, f) {
                Ok(l) => l,
                Err(e) => {
                    out.findings.push(confirm::not_lowered(file, f, &e.message));
                    continue;
                }
            };
            let kernel = match gpu.load(&lowered.source, &lowered.kernel_name) {
                Ok(k) => k,
                Err(e) => {
                    out.notes.push(format!("{} not replayed: {e}", f.rule.name));
                    if matches!(e, RunError::Compile { .. }) {
                        continue;
                    }
                    finish(out, fuzzed);
                }
            };
            let rp = Replayer {
                gpu: &gpu,
                kernel: &kernel,
                lowered: &lowered,
                gpu_args: &args.gpu_args,
            };
            match confirm::replay_one(&rp, past_divergence, program, file, f, args.confirm_seconds)
            {
                Ok(r) => {
                    let stuck = r.stuck;
                    out.findings.push(r);
                    if stuck {
                        out.notes.push(
                            "the GPU context was lost: later findings were not replayed".into(),
                        );
                        finish(out, fuzzed);
                    }
                }
                Err(e) => {
                    out.notes.push(format!("{} not replayed: {e}", f.rule.name));
                    finish(out, fuzzed);
                }
            }
        }
    }
    finish(out, fuzzed)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            }),
            findings: vec![FindingResult {
                rule: "deadlock".into(),
                code: "PC100".into(),
                class: "deadlock".into(),
                line: 23,
                statement: "wait empty[s] parity 1".into(),
                outcome: Outcome::Confirmed,
                detail: "bounded waits expired at line 23".into(),
                trials: 132,
                trials_showing: 132,
                seconds: 0.1,
                trace_steps: 4,
                stuck: false,
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
            back.describe(),
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
        assert_eq!(nothing.describe(), "fuzz: nothing seen in 10 trials");
    }
}
