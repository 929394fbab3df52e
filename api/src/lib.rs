//! `phasecheck_api`: the commands of `phasecheck` as a library. The `phasecheck` binary and the
//! Python package (`python/`) are thin faces over it.
//!
//! Each command has a module under [`cmd`] whose `run` takes that command's options
//! ([`args`]) and prints what the command line prints; the typed functions at the root
//! ([`verify`], [`verify_ptx`], [`lint`], ...) return report values instead.

pub mod args;
pub mod budget;
mod checks;
pub mod cmd;
pub mod config;
pub mod expectations;
mod mutations;
pub mod report;
pub mod status;

/// The campaign crate (fuzz rounds, confirm's plan/aim/judge, mutation operators), whose
/// report values the commands render.
pub use campaign;
pub use checks::{Checked, Error, VerifyOptions, extract, lint, verify, verify_ptx, verify_text};
pub use mutations::{
    Mutant, MutantCheck, MutantResult, Mutants, MutateOptions, MutateReport, mutants, mutate,
    mutate_text,
};

/// The GPU campaigns, as the command line runs them. Not yet report values: each prints its
/// report (human or `--format json`) to standard output and returns the command's exit code.
pub mod campaigns {
    pub use crate::cmd::confirm::run as confirm;
    pub use crate::cmd::fuzz::run as fuzz;
    pub use crate::cmd::mutate::run as mutate;
}
