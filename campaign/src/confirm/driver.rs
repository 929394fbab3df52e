//! `confirm`'s driver: check a loaded program ([`check`]), then replay each error-level finding
//! on the GPU ([`confirm_program`]: the kernel of its replay lowered, the replay, why it did
//! not show the finding, the fuzz aimed at it: [`super::replay::replay_one`]), or fuzz a file
//! without error-level findings. Everything comes back as a [`ConfirmReport`]; nothing here
//! prints. The command line runs each finding in a child process of its own (a kernel stuck
//! in a hardware barrier is freed only with its process); [`confirm_program`] runs what it is
//! given in this process and stops at the first lost context.
//!
//! Every result says where its evidence came from ([`Evidence`]): today a stress kernel lowered
//! from the protocol. A replay on the user's own instrumented kernel (issue 27) plugs in as a
//! second [`Evidence`] beside [`replay_on_model`].

use super::replay::{ReplayFailed, Replayer, lower_for_replay, not_lowered, replay_one};
use super::report::{ConfirmReport, Evidence, FindingResult};
use crate::fuzz::{self, Accumulator, FuzzSummary, GpuOptions};
use checker::{Finding, Severity};
use gpu_harness::lower::{self, LowerError, LowerOptions, Mode};
use gpu_harness::run::{Gpu, RunError};
use protocols::SourceFile;
use protocols::ir::Program;
use std::sync::Arc;
use std::time::Instant;

/// How long `confirm` runs, and how it launches: the knobs of `phasecheck confirm`, with its
/// defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfirmSettings {
    /// Time limit of the replay of each finding, in seconds (`--seconds`).
    pub seconds: f64,
    /// Seconds of fuzzing aimed at a finding its replay did not show (`--aim-seconds`; 0: none).
    pub aim_seconds: f64,
    /// Fuzzing time for a file without error-level findings (`--fuzz-seconds`).
    pub fuzz_seconds: f64,
    /// Device, delays, wait budget, launch timeout.
    pub gpu: GpuOptions,
}

impl Default for ConfirmSettings {
    fn default() -> Self {
        ConfirmSettings {
            seconds: 5.0,
            aim_seconds: 5.0,
            fuzz_seconds: 10.0,
            gpu: GpuOptions::default(),
        }
    }
}

/// What reports the report so far should the read-back of a stuck launch not return in time
/// (the process ends right after, with [`ConfirmPlan::exit_code`]).
pub type ConfirmWatchdog = Arc<dyn Fn(ConfirmReport) + Send + Sync>;

/// What one run of [`confirm_program`] needs besides the program.
pub struct ConfirmPlan {
    pub settings: ConfirmSettings,
    /// Which error-level finding to replay (its index among them); None: all of them.
    pub only: Option<usize>,
    /// Told when a kernel cannot be lowered (the result says so too); the command line prints
    /// the lowering's diagnostics.
    pub on_lower_error: fn(&SourceFile, &LowerError),
    /// See [`ConfirmWatchdog`].
    pub watchdog: ConfirmWatchdog,
    pub exit_code: i32,
}

/// Why [`confirm_program`] could not give its report.
#[derive(Debug)]
pub enum ConfirmError {
    /// `only` names no error-level finding: the index and how many there are.
    NoSuchFinding { index: usize, count: usize },
    /// The file has no error-level finding and its fuzzing kernel cannot be lowered.
    NotLowered(LowerError),
    /// The GPU could not be used (no GPU or CUDA library: [`RunError::Env`]), a kernel did not
    /// compile, or a launch failed; `report` holds what ran before.
    Run {
        report: Box<ConfirmReport>,
        error: RunError,
    },
}

/// The checker's report of `program` as `confirm` sees it (the file's `allow` comments
/// applied), and the seconds the check took.
pub fn check(program: &Program, file: &SourceFile) -> (checker::Report, f64) {
    let t0 = Instant::now();
    let options = checker::CheckOptions {
        goal: checker::lints::suppress::goal(program, file),
        ..checker::CheckOptions::default()
    };
    let mut report = checker::check(program, &options);
    checker::lints::suppress::apply_to_report(program, file, &mut report);
    (report, t0.elapsed().as_secs_f64())
}

/// The findings `confirm` replays: the error-level ones, in report order.
pub fn error_findings(report: &checker::Report) -> Vec<&Finding> {
    report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect()
}

/// The GPU, opened when the first kernel is to run (a file whose kernels do not lower needs
/// none).
pub struct Device {
    ordinal: usize,
    gpu: Option<Gpu>,
}

impl Device {
    /// Device `ordinal`, not opened yet.
    pub fn new(ordinal: usize) -> Device {
        Device { ordinal, gpu: None }
    }

    /// The open GPU (opened now, the first time).
    pub fn open(&mut self) -> Result<&Gpu, RunError> {
        if self.gpu.is_none() {
            self.gpu = Some(Gpu::open(self.ordinal)?);
        }
        Ok(self.gpu.as_ref().expect("opened above"))
    }

    /// The device's name for a report, once opened.
    pub fn name(&self) -> Option<String> {
        self.gpu
            .as_ref()
            .map(|g| format!("{} (device {})", g.device_name, g.ordinal))
    }
}

/// Confirm the checker's findings (`report`, from [`check`], which took `check_seconds`) of a
/// loaded program on the GPU: replay each error-level finding (or the one `plan.only` names)
/// on a stress kernel lowered from the protocol ([`replay_on_model`]); a file without
/// error-level findings is fuzzed for `fuzz_seconds` instead. A finding whose kernel cannot be
/// lowered is reported as not observable, without a GPU.
///
/// A launch stuck in a hardware collective (or a faulted kernel) ends the run: the report comes
/// back with it ([`ConfirmReport::context_lost`]), later findings not replayed, and the caller
/// must end the process (`gpu_harness::run::end_process`) to free the GPU.
pub fn confirm_program(
    file: &SourceFile,
    program: &Program,
    report: &checker::Report,
    check_seconds: f64,
    plan: &ConfirmPlan,
) -> Result<ConfirmReport, ConfirmError> {
    let errors = error_findings(report);
    let mut out = ConfirmReport::new(&file.name, check_seconds);
    let mut device = Device::new(plan.settings.gpu.device);
    if errors.is_empty() {
        return fuzz_instead(file, program, plan, out, &mut device);
    }
    let chosen: Vec<&Finding> = match plan.only {
        Some(i) => match errors.get(i) {
            Some(f) => vec![*f],
            None => {
                return Err(ConfirmError::NoSuchFinding {
                    index: i,
                    count: errors.len(),
                });
            }
        },
        None => errors,
    };
    for f in chosen {
        let (watchdog, mut shell) = (plan.watchdog.clone(), out.clone());
        // Should the read-back of a stuck launch not return: the report so far, with this
        // finding's result.
        let fallback = move |r: FindingResult, device: &str| {
            shell.device = device.to_string();
            shell.findings.push(r);
            watchdog(shell);
        };
        let replayed = replay_on_model(
            &mut device,
            file,
            program,
            f,
            &plan.settings,
            plan.on_lower_error,
            fallback,
        );
        if let Some(name) = device.name() {
            out.device = name;
        }
        match replayed {
            Ok(r) => {
                let lost = r.stuck;
                out.findings.push(r);
                if lost {
                    break;
                }
            }
            Err(ReplayFailed { result, error }) => {
                out.findings.extend(result.map(|r| *r));
                return Err(ConfirmError::Run {
                    report: Box::new(out),
                    error,
                });
            }
        }
    }
    Ok(out)
}

/// Replay one finding on a stress kernel lowered from the protocol ([`Evidence::Model`]), on
/// `device` (opened if it is not yet). A finding whose kernel cannot be lowered is not
/// observable, and needs no GPU. The error comes with the finding's result when the replay ran
/// (the aimed fuzz after it failed), without when its kernel could not be loaded (a
/// [`RunError::Compile`] is this finding's alone; anything else means the GPU cannot go on).
/// Should the read-back of a stuck launch not return, `fallback` gets the result so far and
/// the device's name, and the process ends.
pub fn replay_on_model(
    device: &mut Device,
    file: &SourceFile,
    program: &Program,
    f: &Finding,
    settings: &ConfirmSettings,
    on_lower_error: fn(&SourceFile, &LowerError),
    fallback: impl FnOnce(FindingResult, &str) + Send + 'static,
) -> Result<FindingResult, ReplayFailed> {
    let (lowered, past_divergence) = match lower_for_replay(program, file, f) {
        Ok(l) => l,
        Err(e) => {
            on_lower_error(file, &e);
            return Ok(not_lowered(program, file, f, &e.message));
        }
    };
    let gpu = device.open()?;
    let name = format!("{} (device {})", gpu.device_name, gpu.ordinal);
    let kernel = gpu.load(&lowered.source, &lowered.kernel_name)?;
    let rp = Replayer {
        gpu,
        kernel: &kernel,
        lowered: &lowered,
        gpu_args: &settings.gpu,
        on_lower_error,
    };
    let replayed = replay_one(
        &rp,
        past_divergence,
        program,
        file,
        f,
        settings.seconds,
        settings.aim_seconds,
        move |r| fallback(with_evidence(r, Evidence::Model), &name),
    );
    match replayed {
        Ok(r) => Ok(with_evidence(r, Evidence::Model)),
        Err(ReplayFailed { result, error }) => Err(ReplayFailed {
            result: result.map(|r| Box::new(with_evidence(*r, Evidence::Model))),
            error,
        }),
    }
}

fn with_evidence(mut r: FindingResult, evidence: Evidence) -> FindingResult {
    r.evidence = evidence;
    r
}

/// A file without error-level findings: fuzz its stress kernel for `fuzz_seconds` (launches
/// bounded by `--launch-timeout`, else 30 s).
fn fuzz_instead(
    file: &SourceFile,
    program: &Program,
    plan: &ConfirmPlan,
    mut out: ConfirmReport,
    device: &mut Device,
) -> Result<ConfirmReport, ConfirmError> {
    let options = LowerOptions {
        mode: Mode::Fuzz,
        ..Default::default()
    };
    let lowered = lower::lower(program, Some(file), &options).map_err(|e| {
        (plan.on_lower_error)(file, &e);
        ConfirmError::NotLowered(e)
    })?;
    let run = |out: &mut ConfirmReport, device: &mut Device| -> Result<FuzzSummary, RunError> {
        let gpu = device.open()?;
        out.device = format!("{} (device {})", gpu.device_name, gpu.ordinal);
        let kernel = gpu.load(&lowered.source, &lowered.kernel_name)?;
        let mut acc = Accumulator::new(file, program, &lowered);
        let blocks = fuzz::default_blocks(gpu, lowered.cluster.max(1));
        acc.summary.device = out.device.clone();
        acc.summary.blocks_per_round = blocks;
        acc.summary.first_seed = fuzz::seed_from_clock();
        let gpu_options = GpuOptions {
            launch_timeout: Some(plan.settings.gpu.launch_timeout.unwrap_or(30.0)),
            ..plan.settings.gpu.clone()
        };
        let t0 = Instant::now();
        let first_seed = acc.summary.first_seed;
        let stuck = fuzz::fuzz_rounds(
            gpu,
            &kernel,
            &mut acc,
            &lowered,
            &gpu_options,
            blocks,
            first_seed,
            plan.settings.fuzz_seconds,
            None,
        )?;
        if let Some(stuck) = stuck {
            let wall = t0.elapsed().as_secs_f64();
            let (watchdog, mut shell) = (plan.watchdog.clone(), out.clone());
            fuzz::read_back_stuck(gpu, &mut acc, &stuck, wall, plan.exit_code, move |s| {
                shell.fuzz = Some(s);
                watchdog(shell);
            });
        }
        Ok(acc.finish(t0.elapsed().as_secs_f64()))
    };
    match run(&mut out, device) {
        Ok(summary) => {
            out.fuzz = Some(summary);
            Ok(out)
        }
        Err(error) => Err(ConfirmError::Run {
            report: Box::new(out),
            error,
        }),
    }
}
