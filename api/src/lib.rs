//! `phasecheck_api`: the commands of `phasecheck` as a library. The `phasecheck` binary and the
//! Python package (`python/`) are thin faces over it.
//!
//! Each command has a module under [`cmd`] whose `run` takes that command's options
//! ([`args`]) and prints what the command line prints; the typed functions at the root
//! ([`verify`], [`verify_ptx`], [`lint`], [`mutate`], [`fuzz`], [`confirm`], ...) return
//! report values instead. The GPU campaigns themselves live in the crate [`campaign`]
//! (re-exported), which returns values and prints nothing; this crate renders them.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use phasecheck_api::{cmd::extract::PtxArgs, confirm, verify, ConfirmOptions, VerifyOptions};
//! let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
//! let race = format!("{root}/corpus/hazards/data-race/fail.phase");
//! let checked = verify(race.as_ref(), &VerifyOptions::default())?;
//! assert_eq!(checked.verdict(), "hazard");
//! let ptx = PtxArgs { block: Some([64, 1, 1]), args: vec![("2".into(), 4)], ..Default::default() };
//! let kernel = VerifyOptions { ptx, ..Default::default() };
//! let db = format!("{root}/ptx/tests/fixtures/double_buffer.ptx");
//! assert_eq!(verify(db.as_ref(), &kernel)?.verdict(), "ok");
//! let mut options = ConfirmOptions::default();
//! options.settings.aim_seconds = 0.0;
//! match confirm(race.as_ref(), &options) {
//!     // Never a bare "confirmed": the report names the kernel that showed it.
//!     Ok(report) => assert!(report.findings.iter().all(|f| f.outcome_text() != "confirmed")),
//!     Err(e) if e.is_no_gpu() => eprintln!("{e}"),
//!     Err(e) => return Err(e.into()),
//! }
//! # Ok(())
//! # }
//! ```

pub mod args;
pub mod budget;
mod checks;
mod children;
pub mod cmd;
pub mod config;
mod confirming;
pub mod expectations;
mod fuzzing;
mod mutations;
pub mod real_kernel;
mod replay_plan;
pub mod report;
pub mod status;

/// The campaign crate (fuzz rounds, confirm's plan/aim/judge, mutation operators), whose
/// report values the commands render.
pub use campaign;
pub use checks::{Checked, Error, VerifyOptions, extract, lint, verify, verify_ptx, verify_text};
pub use confirming::{ConfirmError, ConfirmOptions, confirm, confirm_text};
pub use fuzzing::{FuzzOptions, fuzz, fuzz_kernel, fuzz_text};
/// The instrumenter of real kernels (issue 27), whose options and versions the real-kernel
/// functions take.
pub use instrument;
pub use mutations::{
    Mutant, MutantCheck, MutantResult, Mutants, MutateOptions, MutateReport, mutants, mutate,
    mutate_text,
};
pub use real_kernel::{RealKernel, RealKernelReport, instrument_real_kernel};
pub use replay_plan::{PlannedReplay, confirm_plan};

/// The GPU commands, as the command line runs them: each prints its report (human or
/// `--format json`) to standard output and returns the command's exit code. The report values
/// are [`fuzz`]'s `FuzzSummary`, [`confirm`]'s `ConfirmReport` and [`mutate`]'s `MutateReport`
/// (checker side); [`confirm_plan`] is confirm's GPU-free part as a value.
pub mod campaigns {
    pub use crate::cmd::confirm::run as confirm;
    pub use crate::cmd::fuzz::run as fuzz;
    pub use crate::cmd::mutate::run as mutate;
}
