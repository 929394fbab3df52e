//! `confirm` as a function that returns a report value: [`confirm`] / [`confirm_text`] check a
//! protocol and replay each error-level finding on the GPU (`campaign::confirm::driver`), or
//! fuzz a file without error-level findings, and return the [`ConfirmReport`]. Each finding's
//! result says where its evidence came from ([`Evidence`]): today a stress kernel lowered from
//! the protocol, never the user's own kernel.

use crate::checks::Error;
use crate::cmd::extract::PtxArgs;
use campaign::confirm::driver::{self, ConfirmPlan, ConfirmSettings};
use campaign::confirm::report::ConfirmReport;
#[cfg(doc)]
use campaign::confirm::report::Evidence;
use gpu_harness::run::RunError;
use protocols::SourceFile;
use std::path::Path;

/// The options of [`confirm`]: those of `phasecheck confirm` (same defaults).
#[derive(Clone, Debug, Default)]
pub struct ConfirmOptions {
    /// Parameter overrides, `("K", 64)` for `--param K=64`.
    pub params: Vec<(String, i64)>,
    /// Seconds per replay, aimed fuzz and fuzzing; device, delays, wait budget, launch timeout.
    pub settings: ConfirmSettings,
    /// Replay only the N-th error-level finding (None: all).
    pub finding: Option<usize>,
    /// For PTX input: kernel, block, cluster, kernel arguments, assumptions.
    pub ptx: PtxArgs,
}

/// Why [`confirm`] gave no report.
#[derive(Clone, Debug)]
pub enum ConfirmError {
    /// Bad input: a file that cannot be read, a protocol that does not load, a PTX kernel the
    /// front end cannot extract, a file without error-level findings whose fuzzing kernel
    /// cannot be lowered, a finding index out of range, a bad option.
    BadInput(Error),
    /// No GPU can be used here: no CUDA driver, NVRTC or device (the message says which).
    NoGpu(Error),
    /// The GPU run failed: a kernel NVRTC rejects, a driver error. `report` holds the findings
    /// replayed before (when any).
    Gpu {
        error: Error,
        report: Option<Box<ConfirmReport>>,
    },
}

impl ConfirmError {
    /// No GPU (or CUDA library) could be used.
    pub fn is_no_gpu(&self) -> bool {
        matches!(self, ConfirmError::NoGpu(_))
    }

    pub fn message(&self) -> &str {
        match self {
            ConfirmError::BadInput(e)
            | ConfirmError::NoGpu(e)
            | ConfirmError::Gpu { error: e, .. } => &e.message,
        }
    }
}

impl std::fmt::Display for ConfirmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfirmError::NoGpu(e) => write!(f, "no GPU: {e}"),
            ConfirmError::BadInput(e) | ConfirmError::Gpu { error: e, .. } => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ConfirmError {}

fn bad_input(message: impl Into<String>) -> ConfirmError {
    ConfirmError::BadInput(Error {
        message: message.into(),
    })
}

/// Check the protocol `text` (`.phase`; `name` is the file name its findings point to), then
/// replay each error-level finding on the GPU, as `phasecheck confirm` does, and return the
/// report: per finding the outcome (confirmed, not observed, not observable on hardware), what
/// was seen, why a replay could not show it, the fuzz aimed at it, and the kernel the evidence
/// came from ([`Evidence::Model`]: a stress kernel built from the protocol). A protocol without
/// error-level findings is fuzzed for `fuzz_seconds` instead (`report.fuzz`).
///
/// The findings run in this process, one after the other. A launch stuck in a hardware
/// collective (or a faulted kernel) ends the run: the report comes back with it
/// ([`ConfirmReport::context_lost`]), the later findings not replayed, and the stuck kernel
/// holds the GPU until the process ends (`gpu_harness::run::end_process`); should its read-back
/// not return, the report so far is printed (JSON, to standard error) and the process ends
/// with exit 1. (The command line runs each finding in a child process instead.)
///
/// Without a GPU the answer is [`ConfirmError::NoGpu`], not a panic; a finding whose kernel
/// cannot be lowered needs no GPU (it is not observable).
///
/// ```
/// use phasecheck_api::{ConfirmOptions, confirm_text};
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/hazards/data-race/fail.phase");
/// let text = std::fs::read_to_string(path).unwrap();
/// let mut options = ConfirmOptions::default();
/// options.settings.seconds = 1.0;
/// options.settings.aim_seconds = 1.0;
/// match confirm_text("fail.phase", &text, &options) {
///     // A machine with a GPU: the race, replayed on a stress kernel built from the model.
///     Ok(report) => {
///         let race = report.findings.iter().find(|f| f.rule == "data-race").unwrap();
///         assert_eq!(race.evidence, phasecheck_api::campaign::confirm::report::Evidence::Model);
///         assert!(race.outcome_text().ends_with("on a stress kernel built from the model"));
///     }
///     // Without one (CI): a clear error value.
///     Err(e) => assert!(e.is_no_gpu(), "{e}"),
/// }
/// // Bad input is an error before any GPU is looked for.
/// let bad = confirm_text("bad.phase", "protocol\n", &options).unwrap_err();
/// assert!(!bad.is_no_gpu());
/// ```
pub fn confirm_text(
    name: &str,
    text: &str,
    options: &ConfirmOptions,
) -> Result<ConfirmReport, ConfirmError> {
    confirm_source(SourceFile::new(name, text), options)
}

/// [`confirm_text`] of a `.phase` file, or of a `.ptx` file as the protocol extracted from it
/// (with `options.ptx`): its results are the model's, never the real kernel's.
pub fn confirm(path: &Path, options: &ConfirmOptions) -> Result<ConfirmReport, ConfirmError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_input(format!("cannot read {}: {e}", path.display())))?;
    let name = path.display().to_string();
    if crate::cmd::extract::is_ptx(path) {
        // The stress kernel checks whole buffer instances: no byte ranges.
        let ptx = PtxArgs {
            whole_buffers: true,
            ..options.ptx.clone()
        };
        let ex = crate::checks::extract(&name, &text, &ptx).map_err(ConfirmError::BadInput)?;
        confirm_source(SourceFile::new(name, ex.text), options)
    } else {
        confirm_text(&name, &text, options)
    }
}

fn confirm_source(
    file: SourceFile,
    options: &ConfirmOptions,
) -> Result<ConfirmReport, ConfirmError> {
    let s = &options.settings;
    for (what, v) in [
        ("seconds", s.seconds),
        ("aim_seconds", s.aim_seconds),
        ("fuzz_seconds", s.fuzz_seconds),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(bad_input(format!("{what} must be 0 or more, not {v}")));
        }
    }
    let program = protocols::load(&file, &options.params)
        .map_err(|errors| bad_input(protocols::render::render(&errors, false, 100)))?;
    let (report, check_seconds) = driver::check(&program, &file);
    let plan = ConfirmPlan {
        settings: options.settings.clone(),
        only: options.finding,
        on_lower_error: |_, _| {},
        watchdog: std::sync::Arc::new(|report: ConfirmReport| {
            if let Ok(json) = serde_json::to_string(&report) {
                eprintln!("{json}");
            }
        }),
        exit_code: crate::args::Exit::Findings as i32,
    };
    driver::confirm_program(&file, &program, &report, check_seconds, &plan).map_err(|e| match e {
        driver::ConfirmError::NoSuchFinding { index, count } => bad_input(format!(
            "{}: there is no error-level finding {index} ({count} found)",
            file.name
        )),
        driver::ConfirmError::NotLowered(e) => bad_input(format!(
            "{}: cannot be lowered to a fuzzing kernel: {}",
            file.name, e.message
        )),
        driver::ConfirmError::Run { report, error } => {
            let message = Error {
                message: error.to_string(),
            };
            match error {
                RunError::Env(_) => ConfirmError::NoGpu(message),
                _ => ConfirmError::Gpu {
                    error: message,
                    report: (!report.findings.is_empty()).then_some(report),
                },
            }
        }
    })
}
