//! `phasecheck_api`: the commands of `phasecheck` as a library. The `phasecheck` binary and the
//! Python package (`python/`) are thin faces over it.
//!
//! Each command has a module under [`cmd`] whose `run` takes that command's options
//! ([`args`]) and prints what the command line prints; the typed functions at the root
//! ([`verify`], [`verify_ptx`], [`lint`], [`mutate`], [`fuzz`], [`confirm`], ...) return
//! report values instead. The GPU campaigns themselves live in the crate [`campaign`] (re-exported), which
//! returns values and prints nothing; this crate renders them.

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
mod replay_plan;
pub mod report;
pub mod status;

/// The campaign crate (fuzz rounds, confirm's plan/aim/judge, mutation operators), whose
/// report values the commands render.
pub use campaign;
pub use checks::{Checked, Error, VerifyOptions, extract, lint, verify, verify_ptx, verify_text};
pub use confirming::{ConfirmError, ConfirmOptions, confirm, confirm_text};
pub use fuzzing::{FuzzOptions, fuzz, fuzz_kernel, fuzz_text};
pub use mutations::{
    Mutant, MutantCheck, MutantResult, Mutants, MutateOptions, MutateReport, mutants, mutate,
    mutate_text,
};
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
