//! `mutate --gpu`: each mutant fuzzed on the GPU (`fuzz`'s [`fuzz::fuzz_program`]) and the
//! checker's error-level findings replayed there (`confirm`'s [`confirm::replay_one`]: the
//! replay, why it does not show a finding, and the fuzz aimed at it).
//!
//! Each mutant runs in a child process of its own (`phasecheck mutate FILE --gpu-child N`, the
//! same binary), as `confirm` replays each finding in one: a mutant whose kernel gets stuck in a
//! hardware barrier (a `syncthreads` that threads reach at different statements) can only be
//! ended with its process, and must not take the other mutants with it. The child prints one
//! [`GpuOutcome`] as JSON.

use super::{GpuState, MutantResult, Prepared, Verdict4};
use crate::args::{Exit, Format, MutateArgs};
use crate::cmd::confirm::report::{FindingResult, Outcome};
use crate::cmd::confirm::{self, ReplayFailed, Replayer};
use crate::cmd::fuzz::{self, FuzzError, FuzzPlan, FuzzSummary, NotRun, WatchdogReport};
use checker::Severity;
use gpu_harness::run::{Gpu, RunError, end_process};
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
    /// A launch that got stuck in a hardware collective: the collectives its threads were
    /// still blocked in (`count`: threads).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) stuck_at: Vec<Seen>,
}

impl FuzzBrief {
    fn of(s: &FuzzSummary) -> FuzzBrief {
        let mut b = FuzzBrief::default();
        for part in std::iter::once(s).chain(s.proxy_window.as_deref()) {
            b.trials += part.trials;
            b.seconds += part.wall_seconds;
            b.runaway_loops += part.runaway_loops;
            for h in &part.hangs {
                let seen = Seen {
                    line: h.line,
                    statement: h.statement.clone(),
                    count: h.count,
                };
                if h.stuck {
                    b.stuck_at.push(seen);
                } else {
                    b.hangs.push(seen);
                }
            }
            b.stale_reads.extend(part.stale_reads.iter().map(|r| Seen {
                line: r.line,
                statement: r.statement.clone(),
                count: r.count,
            }));
        }
        b
    }

    fn clean(&self) -> bool {
        self.hangs.is_empty()
            && self.stale_reads.is_empty()
            && self.runaway_loops == 0
            && self.stuck_at.is_empty()
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
    /// bounded; `fuzz.stuck_at` says where, when it could be read back); the GPU context was
    /// lost after it.
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

    /// A flagged mutant left out by `--gpu-hazards N`.
    pub(crate) fn sampled_out(n: usize) -> GpuOutcome {
        GpuOutcome::not_run(format!(
            "not run (sampled out): --gpu-hazards {n} runs {n} of the mutants the checker flags per file"
        ))
    }

    /// One line for people: what the fuzzing saw and what the replays showed.
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(f) = &self.fuzz {
            if f.clean() && !self.stuck {
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
        .args(["--wait-cycles", &args.gpu_args.wait_cycles.to_string()])
        .args(["--aim-seconds", &args.aim_seconds.to_string()]);
    if let Some(t) = args.gpu_args.launch_timeout {
        cmd.args(["--launch-timeout", &t.to_string()]);
    }
    for (k, v) in &prepared.overrides {
        cmd.args(["--param", &format!("{k}={v}")]);
    }
    for op in only {
        cmd.args(["--operator", op.name()]);
    }
    if m.checked.verdict == Verdict4::Hazard {
        cmd.arg("--gpu-child-replay");
    }
    // The child bounds its own launches (stuck ones end it), so this deadline only catches a
    // child that hangs anyway (a driver call that never returns): it is killed, the mutant is
    // reported as not run, and the other mutants go on.
    let replays = m.checked.rules.len() as f64;
    let deadline = std::time::Duration::from_secs_f64(
        120.0 + args.gpu_seconds + replays * (args.confirm_seconds + args.aim_seconds + 45.0),
    );
    let out = match output_within(&mut cmd, deadline) {
        Ok(Some(o)) => o,
        Ok(None) => {
            return GpuOutcome::not_run(format!(
                "the GPU run did not answer within {:.0} s and was killed",
                deadline.as_secs_f64()
            ));
        }
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

/// Run `cmd` to its end like `Command::output`, but kill it after `deadline` (`Ok(None)`).
fn output_within(
    cmd: &mut std::process::Command,
    deadline: std::time::Duration,
) -> std::io::Result<Option<std::process::Output>> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Both pipes drained on threads of their own, so that a full pipe never blocks the child.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if t0.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    Ok(Some(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }))
}

/// Print the child's answer (what the parent reads).
fn print_outcome(mut o: GpuOutcome, fuzzed: bool) {
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
}

/// Print the child's answer and end the process with `end_process`: a kernel stuck in a
/// hardware collective (or a faulted context) is freed only with the process, and the
/// driver's teardown at an ordinary exit could wait for it.
fn finish(o: GpuOutcome, fuzzed: bool) -> ! {
    print_outcome(o, fuzzed);
    end_process(Exit::Clean as i32)
}

/// Record a fuzzing run that ended with a launch stuck in a hardware collective: a GPU hazard.
fn record_stuck(out: &mut GpuOutcome, s: &FuzzSummary) {
    out.fuzz = Some(FuzzBrief::of(s));
    out.stuck = true;
    let stuck = std::iter::once(s)
        .chain(s.proxy_window.as_deref())
        .find_map(|p| p.stuck.as_ref());
    out.notes.push(match stuck {
        Some(st) => format!(
            "fuzzing: the round of seed {} ({} blocks) got stuck in a hardware collective (it \
             did not finish within {:.0} s){}",
            st.seed,
            st.blocks,
            st.seconds,
            st.read_error
                .as_ref()
                .map(|e| format!("; where its threads were is not known: {e}"))
                .unwrap_or_default()
        ),
        None => "fuzzing: a kernel got stuck in a hardware collective".into(),
    });
}

/// The answer the watchdog prints when the read-back of a stuck fuzzing launch does not
/// return (fuzzing is the child's first GPU work: nothing else to report); it then ends the
/// process.
fn stuck_fuzz_fallback(s: FuzzSummary) {
    let mut out = GpuOutcome::default();
    record_stuck(&mut out, &s);
    print_outcome(out, true);
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
                gpu: fuzz::GpuOptions::from(&args.gpu_args),
                blocks: None,
                seed: None,
                seconds: args.gpu_seconds,
                proxy_window: false,
                window_rounds: true,
                params: &prepared.overrides,
                watchdog: WatchdogReport::With(stuck_fuzz_fallback).into_watchdog(),
                exit_code: Exit::Findings as i32,
            };
            match fuzz::fuzz_program(&gpu, file, program, &lowered, &plan, None) {
                Ok(s) if s.is_stuck() => {
                    // The stuck kernel still runs: report it, then end the process.
                    record_stuck(&mut out, &s);
                    finish(out, true);
                }
                Ok(s) => {
                    out.fuzz = Some(FuzzBrief::of(&s));
                    fuzzed = true;
                }
                Err(FuzzError::NotLowered(e)) => {
                    out.notes
                        .push(format!("not fuzzed: cannot lower: {}", e.message));
                }
                Err(FuzzError::Run(RunError::Stuck(s))) => {
                    out.stuck = true;
                    out.notes.push(format!(
                        "fuzzing: a kernel got stuck in a hardware barrier (it did not finish \
                         within {:.0} s)",
                        s.seconds
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
                    out.findings
                        .push(confirm::not_lowered(program, file, f, &e.message));
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
            let gpu_options = fuzz::GpuOptions::from(&args.gpu_args);
            let rp = Replayer {
                gpu: &gpu,
                kernel: &kernel,
                lowered: &lowered,
                gpu_args: &gpu_options,
                on_lower_error: crate::cmd::lower::report_lower_error,
            };
            const LOST: &str = "the GPU context was lost: later findings were not replayed";
            let mut shell = out.clone();
            // Should the read-back of a stuck launch not return: the answer so far.
            let fallback = move |r| {
                shell.findings.push(r);
                shell.notes.push(LOST.into());
                print_outcome(shell, fuzzed);
            };
            let replayed = confirm::replay_one(
                &rp,
                past_divergence,
                program,
                file,
                f,
                args.confirm_seconds,
                args.aim_seconds,
                fallback,
            );
            match replayed {
                Ok(r) => {
                    let stuck = r.stuck;
                    out.findings.push(r);
                    if stuck {
                        out.notes.push(LOST.into());
                        finish(out, fuzzed);
                    }
                }
                Err(ReplayFailed { result, error }) => {
                    let what = if result.is_some() {
                        "aimed fuzz failed"
                    } else {
                        "not replayed"
                    };
                    out.findings.extend(result.map(|r| *r));
                    out.notes.push(format!("{} {what}: {error}", f.rule.name));
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

    /// A child that answers is read whole; one that does not is killed at the deadline.
    #[cfg(unix)]
    #[test]
    fn a_child_past_its_deadline_is_killed() {
        use std::process::Command;
        use std::time::{Duration, Instant};
        let out = output_within(
            Command::new("sh").args(["-c", "echo answer; echo note >&2"]),
            Duration::from_secs(30),
        )
        .expect("runs")
        .expect("in time");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "answer\n");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "note\n");
        let t0 = Instant::now();
        let late = output_within(
            Command::new("sh").args(["-c", "sleep 30"]),
            Duration::from_millis(200),
        )
        .expect("runs");
        assert!(late.is_none());
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    }

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
                detail: "bounded waits expired at line 23".into(),
                trials: 132,
                trials_showing: 132,
                seconds: 0.1,
                trace_steps: 4,
                stuck: false,
                why_not_shown: Vec::new(),
                aimed_fuzz: None,
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
        record_stuck(&mut out, &s);
        assert!(out.stuck);
        let f = out.fuzz.as_ref().expect("fuzzed");
        assert_eq!(f.hangs.len(), 1);
        assert_eq!(f.stuck_at.len(), 1);
        assert_eq!(f.stuck_at[0].line, 6);
        assert_eq!(
            out.describe(),
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
        record_stuck(&mut out, &bare);
        assert!(
            !out.describe().contains("nothing seen"),
            "{}",
            out.describe()
        );
    }
}
