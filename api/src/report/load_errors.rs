//! Load errors as human text (miette, colour only on a terminal without `NO_COLOR`) and JSON.

use protocols::LoadErrors;
use serde_json::json;
use std::io::IsTerminal;

/// Rendered for stderr.
pub fn human(errors: &LoadErrors) -> String {
    let color = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    protocols::render::render(errors, color, 100)
}

/// The `--format json` form: one object per file with every error's place, code and message.
pub fn json(errors: &LoadErrors) -> serde_json::Value {
    let list: Vec<_> = errors
        .errors
        .iter()
        .map(|e| {
            let pos = e.span.map(|s| errors.file.line_col(s.start));
            let end = e.span.map(|s| errors.file.line_col(s.end));
            json!({
                "file": errors.file.name,
                "line": pos.map(|p| p.line),
                "column": pos.map(|p| p.column),
                "end_line": end.map(|p| p.line),
                "end_column": end.map(|p| p.column),
                "code": e.code,
                "message": e.message,
                "label": if e.label.is_empty() { None } else { Some(&e.label) },
                "help": e.help,
            })
        })
        .collect();
    json!({ "schema": 1, "file": errors.file.name, "verdict": "error", "errors": list })
}
