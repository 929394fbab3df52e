//! Load errors as human text (miette) and JSON.

use protocols::LoadErrors;
use serde_json::json;

pub fn human(errors: &LoadErrors) -> String {
    let mut out = String::new();
    for e in &errors.errors {
        out.push_str(&format!("error[{}]: {}\n", e.code, e.message));
    }
    out
}

pub fn json(errors: &LoadErrors) -> serde_json::Value {
    let list: Vec<_> = errors
        .errors
        .iter()
        .map(|e| {
            let pos = e.span.map(|s| errors.file.line_col(s.start));
            json!({
                "file": errors.file.name,
                "line": pos.map(|p| p.line),
                "column": pos.map(|p| p.column),
                "code": e.code,
                "message": e.message,
            })
        })
        .collect();
    json!({ "schema": 1, "file": errors.file.name, "verdict": "error", "errors": list })
}
