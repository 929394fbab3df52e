//! Shared by the confirm tests: a corpus file's error-level findings with its confirm-mode
//! lowering.

use checker::{Finding, Severity};
use gpu_harness::lower::{self, LowerOptions, Lowered, Mode};
use protocols::SourceFile;
use protocols::ir::Program;

/// The error-level findings of a corpus file, its program and its confirm-mode lowering.
pub fn findings(path: &str) -> (Program, Lowered, Vec<Finding>) {
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(path);
    let text = std::fs::read_to_string(&path).expect("corpus file");
    findings_of(SourceFile::new(path.display().to_string(), text))
}

pub fn findings_of(file: SourceFile) -> (Program, Lowered, Vec<Finding>) {
    let program = protocols::load(&file, &[]).expect("loads");
    let report = checker::check(&program, &checker::CheckOptions::default());
    let lowered = lower::lower(
        &program,
        Some(&file),
        &LowerOptions {
            mode: Mode::Confirm,
            ..Default::default()
        },
    )
    .expect("lowers");
    let errors = report
        .findings
        .into_iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    (program, lowered, errors)
}
