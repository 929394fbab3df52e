//! The JSON contract of `verify --format json` (schema 1).

use checker::Report;
use protocols::SourceFile;
use protocols::ir::Program;
use serde_json::json;

pub fn render(file: &SourceFile, program: &Program, report: &Report) -> serde_json::Value {
    json!({
        "schema": 1,
        "file": file.name,
        "protocol": program.name,
        "verdict": report.verdict,
        "findings": [],
        "stats": report.stats,
    })
}
