//! `mutate --gpu`'s work on one mutant ([`run_mutant`]): the mutant fuzzed on the GPU
//! ([`crate::fuzz::fuzz_program`]) and the checker's error-level findings replayed there
//! ([`crate::confirm::driver::replay_on_model`]: the replay, why it does not show a finding,
//! the fuzz aimed at it), as one [`GpuOutcome`]. The command line runs it in a child process
//! per mutant (a kernel stuck in a hardware barrier is freed only with its process) and
//! reads the outcome back as JSON.

use crate::confirm::driver::{ConfirmSettings, Device, error_findings, replay_on_model};
use crate::confirm::replay::ReplayFailed;
use crate::confirm::report::{FindingResult, Outcome};
use crate::fuzz::{FuzzError, FuzzPlan, FuzzSummary, WatchdogFallback, lower_for_fuzz};
use gpu_harness::lower::LowerError;
use gpu_harness::run::RunError;
use protocols::SourceFile;
use protocols::ir::Program;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Where the GPU saw a hang or a stale read while fuzzing: the statement and how often.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Seen {
    pub line: u32,
    pub statement: String,
    pub count: u64,
}

/// What fuzzing one mutant saw (both parts of the run: plain and proxy-window rounds).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FuzzBrief {
    pub trials: u64,
    pub seconds: f64,
    pub hangs: Vec<Seen>,
    pub stale_reads: Vec<Seen>,
    pub runaway_loops: u64,
    /// A launch that got stuck in a hardware collective: the collectives its threads were
    /// still blocked in (`count`: threads).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stuck_at: Vec<Seen>,
}

impl FuzzBrief {
    pub fn of(s: &FuzzSummary) -> FuzzBrief {
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

    pub fn clean(&self) -> bool {
        self.hangs.is_empty()
            && self.stale_reads.is_empty()
            && self.runaway_loops == 0
            && self.stuck_at.is_empty()
    }
}

/// The GPU's answer for one mutant.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GpuOutcome {
    /// `Some(true)`: the GPU showed a hazard (a hang or stale read while fuzzing, a replayed
    /// finding confirmed, a kernel stuck in a hardware barrier or one that trapped while
    /// fuzzing); `Some(false)`: the fuzzing ran and nothing was seen (nor confirmed); `None`:
    /// nothing could be run (see `notes`).
    pub hazard: Option<bool>,
    /// Fuzzing, when it ran.
    pub fuzz: Option<FuzzBrief>,
    /// Each replayed error-level finding of the checker (`confirm`'s results).
    pub findings: Vec<FindingResult>,
    /// While fuzzing, a kernel got stuck in a hardware barrier (a hang that cannot be
    /// bounded; `fuzz.stuck_at` says where, when it could be read back); the GPU context was
    /// lost after it.
    #[serde(default)]
    pub stuck: bool,
    /// While fuzzing, a kernel trapped (a driver error after it loaded); the context was lost.
    #[serde(default)]
    pub faulted: bool,
    /// What could not be run, and why.
    #[serde(default)]
    pub notes: Vec<String>,
}

impl GpuOutcome {
    pub fn not_run(note: String) -> GpuOutcome {
        GpuOutcome {
            notes: vec![note],
            ..Default::default()
        }
    }

    /// A flagged mutant left out by `--gpu-hazards N`.
    pub fn sampled_out(n: usize) -> GpuOutcome {
        GpuOutcome::not_run(format!(
            "not run (sampled out): --gpu-hazards {n} runs {n} of the mutants the checker flags per file"
        ))
    }

    /// Set `hazard` from what ran (`fuzzed`: the fuzzing ran to its end).
    pub fn settle(mut self, fuzzed: bool) -> GpuOutcome {
        let confirmed = self
            .findings
            .iter()
            .any(|r| r.outcome == Outcome::Confirmed);
        let seen = self.fuzz.as_ref().is_some_and(|f| !f.clean());
        self.hazard = if seen || confirmed || self.stuck || self.faulted {
            Some(true)
        } else if fuzzed {
            Some(false)
        } else {
            None
        };
        self
    }

    /// Record a fuzzing run that ended with a launch stuck in a hardware collective: a GPU
    /// hazard.
    pub fn record_stuck(&mut self, s: &FuzzSummary) {
        self.fuzz = Some(FuzzBrief::of(s));
        self.stuck = true;
        let stuck = std::iter::once(s)
            .chain(s.proxy_window.as_deref())
            .find_map(|p| p.stuck.as_ref());
        self.notes.push(match stuck {
            Some(st) => format!(
                "fuzzing: the round of seed {} ({} blocks) got stuck in a hardware collective \
                 (it did not finish within {:.0} s){}",
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
}

/// What reports the outcome so far should the read-back of a stuck launch not return in time
/// (the process ends right after, with [`MutantPlan::exit_code`]); it comes settled.
pub type OutcomeWatchdog = Arc<dyn Fn(GpuOutcome) + Send + Sync>;

/// How one mutant runs on the GPU.
pub struct MutantPlan<'a> {
    /// `fuzz_seconds`: the fuzzing (`--gpu-seconds`); `seconds`: each replay
    /// (`--confirm-seconds`, 0: no replays); `aim_seconds`; the GPU options.
    pub settings: ConfirmSettings,
    /// The parameter overrides, for the fuzz summary's replay flags.
    pub params: &'a [(String, i64)],
    /// Replay the checker's error-level findings (the checker flagged the mutant).
    pub replay: bool,
    pub on_lower_error: fn(&SourceFile, &LowerError),
    pub watchdog: OutcomeWatchdog,
    pub exit_code: i32,
}

const LOST: &str = "the GPU context was lost: later findings were not replayed";

/// Fuzz one mutant (`file`, `program`) on `device` and, with `plan.replay`, replay the
/// error-level findings of `check()` (the checker's report of the mutant, or why there is
/// none). The outcome comes back settled ([`GpuOutcome::settle`]). Whatever it holds, the
/// caller must then end the process (`gpu_harness::run::end_process`): a kernel stuck in a
/// hardware collective, or a faulted context, is freed only with it, and the driver's teardown
/// at an ordinary exit could wait for it. A GPU that cannot be opened is `Err`.
pub fn run_mutant(
    device: &mut Device,
    file: &SourceFile,
    program: &Program,
    check: impl FnOnce() -> Result<checker::Report, String>,
    plan: &MutantPlan<'_>,
) -> Result<GpuOutcome, RunError> {
    let gpu = device.open()?;
    let mut out = GpuOutcome::default();
    let mut fuzzed = false;
    match lower_for_fuzz(program, file, false) {
        Err(e) => out
            .notes
            .push(format!("not fuzzed: cannot lower: {}", e.message)),
        Ok(lowered) => {
            let watchdog = plan.watchdog.clone();
            let fallback: WatchdogFallback = Arc::new(move |s: FuzzSummary| {
                // Fuzzing is the first GPU work: nothing else to report.
                let mut o = GpuOutcome::default();
                o.record_stuck(&s);
                watchdog(o.settle(true));
            });
            let fuzz_plan = FuzzPlan {
                gpu: plan.settings.gpu.clone(),
                blocks: None,
                seed: None,
                seconds: plan.settings.fuzz_seconds,
                proxy_window: false,
                window_rounds: true,
                params: plan.params,
                watchdog: fallback,
                exit_code: plan.exit_code,
            };
            match crate::fuzz::fuzz_program(gpu, file, program, &lowered, &fuzz_plan, None) {
                Ok(s) if s.is_stuck() => {
                    out.record_stuck(&s);
                    return Ok(out.settle(true));
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
                    return Ok(out.settle(false));
                }
                Err(FuzzError::Run(e @ RunError::Compile { .. })) => {
                    out.notes.push(format!("not fuzzed: {e}"));
                }
                Err(FuzzError::Run(RunError::Driver { what, error }))
                    if !what.starts_with("loading") && !what.starts_with("finding") =>
                {
                    // A launch failed after the kernel loaded: the kernel trapped (what `fuzz`
                    // reports as a finding). The context is lost.
                    out.faulted = true;
                    out.notes
                        .push(format!("fuzzing: the kernel faulted ({what}: {error})"));
                    return Ok(out.settle(false));
                }
                Err(FuzzError::Run(e)) => {
                    out.notes.push(format!("not fuzzed: {e}"));
                    return Ok(out.settle(false));
                }
            }
        }
    }
    if !(plan.replay && plan.settings.seconds > 0.0) {
        return Ok(out.settle(fuzzed));
    }
    let report = match check() {
        Ok(r) => r,
        Err(e) => {
            out.notes.push(format!("not replayed: {e}"));
            return Ok(out.settle(fuzzed));
        }
    };
    for f in error_findings(&report) {
        let (watchdog, mut shell) = (plan.watchdog.clone(), out.clone());
        // Should the read-back of a stuck launch not return: the answer so far.
        let fallback = move |r: FindingResult, _device: &str| {
            shell.findings.push(r);
            shell.notes.push(LOST.into());
            watchdog(shell.settle(fuzzed));
        };
        let replayed = replay_on_model(
            device,
            file,
            program,
            f,
            &plan.settings,
            plan.on_lower_error,
            fallback,
        );
        match replayed {
            Ok(r) => {
                let stuck = r.stuck;
                out.findings.push(r);
                if stuck {
                    out.notes.push(LOST.into());
                    break;
                }
            }
            Err(ReplayFailed {
                result: None,
                error: e @ RunError::Compile { .. },
            }) => {
                out.notes.push(format!("{} not replayed: {e}", f.rule.name));
            }
            Err(ReplayFailed { result, error }) => {
                let what = if result.is_some() {
                    "aimed fuzz failed"
                } else {
                    "not replayed"
                };
                out.findings.extend(result.map(|r| *r));
                out.notes.push(format!("{} {what}: {error}", f.rule.name));
                break;
            }
        }
    }
    Ok(out.settle(fuzzed))
}
