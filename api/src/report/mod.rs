//! Reporters: each output format is one small file.

pub mod files;
#[cfg(test)]
mod fixtures;
pub mod github;
pub mod human;
pub mod json;
pub mod load_errors;
pub mod origin;
pub mod sarif;

use crate::args::Exit;
use checker::{Report, Severity, Verdict};

/// `1 file`, `2 files`, `0 errors`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Exit code of one checked program.
pub fn exit_code(report: &Report) -> Exit {
    if report
        .findings
        .iter()
        .any(|f| f.severity == Severity::Error)
    {
        Exit::Findings
    } else if report.verdict == Verdict::Inconclusive {
        Exit::Inconclusive
    } else {
        Exit::Clean
    }
}

/// Combine exit codes of several files: bad input beats findings beats inconclusive.
pub fn worse(a: Exit, b: Exit) -> Exit {
    let rank = |e: Exit| match e {
        Exit::Clean => 0,
        Exit::Inconclusive => 1,
        Exit::Findings => 2,
        Exit::BadInput => 3,
    };
    if rank(b) > rank(a) { b } else { a }
}
