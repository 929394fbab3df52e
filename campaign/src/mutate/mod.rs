//! `mutate`'s campaign pieces: the mutation operators ([`operators`]), the mutants of a loaded
//! program that load in turn ([`loaded_mutants`]), deduplicated by text (no GPU), and the GPU
//! run of one mutant ([`gpu::run_mutant`]: fuzzed, its findings replayed). Checking each mutant
//! (the checker, with `mutate`'s bounds) and running [`gpu::run_mutant`] in a child process per
//! mutant is the caller's (`phasecheck-api`).

pub mod gpu;
pub mod operators;

pub use operators::{Change, Operator, Proposal, change, mutants};

use protocols::SourceFile;
use protocols::ir::Program;
use serde::Serialize;

/// A mutant that loads.
pub struct Loaded {
    pub operator: Operator,
    pub change: Change,
    /// The mutant's text, under the original's name.
    pub file: SourceFile,
    pub program: Program,
}

/// A proposed mutant that does not load.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub operator: Operator,
    pub change: Change,
    /// The first load error's code and message.
    pub reason: String,
}

/// The mutants of `file` (loaded as `program` with `overrides`) that the operators in `only`
/// (all when empty) propose, and that load with the same overrides, in order (ids are their
/// positions + 1); the ones that do not load; and how many repeated an earlier mutant's text
/// (or the original's).
pub fn loaded_mutants(
    file: &SourceFile,
    program: &Program,
    overrides: &[(String, i64)],
    only: &[Operator],
) -> (Vec<Loaded>, Vec<Skipped>, usize) {
    let original = &file.text;
    let mut seen = std::collections::HashSet::new();
    seen.insert(original.to_string());
    let mut loaded = Vec::new();
    let mut skipped = Vec::new();
    let mut duplicates = 0;
    for p in operators::mutants(file, program, only) {
        let text = p.apply(original);
        let change = operators::change(original, &text);
        if !seen.insert(text.clone()) {
            duplicates += 1;
            continue;
        }
        let mutant = SourceFile::new(file.name.clone(), &text);
        match protocols::load(&mutant, overrides) {
            Ok(program) => loaded.push(Loaded {
                operator: p.operator,
                change,
                file: mutant,
                program,
            }),
            Err(e) => skipped.push(Skipped {
                operator: p.operator,
                change,
                reason: e
                    .errors
                    .first()
                    .map(|e| format!("{}: {}", e.code, e.message))
                    .unwrap_or_default(),
            }),
        }
    }
    (loaded, skipped, duplicates)
}
