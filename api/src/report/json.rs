//! The JSON contract of `verify --format json` (schema 1):
//! `{"schema":1,"file","protocol","params":{..},"verdict","findings":[{"rule","code","class",
//! "severity","message","span":{line,column,end_line,end_column},"labels","help","trace":[{thread,
//! line,op,state,repeat}],"waits_for":[..],"schedule","found_by"}],"stats":{states,transitions,elapsed_ms,
//! peak_memory_bytes},"incomplete":null|{reason,covered}}`. tests/cli_verify.rs pins it.

use super::origin::{Locator, Place};
use checker::{Finding, Report};
use protocols::ir::Program;
use protocols::{SourceFile, Span};
use serde_json::{Value, json};

fn span(file: &SourceFile, s: Span) -> Value {
    let a = file.line_col(s.start);
    let b = file.line_col(s.end);
    json!({"line": a.line, "column": a.column, "end_line": b.line, "end_column": b.column})
}

fn finding(file: &SourceFile, f: &Finding) -> Value {
    json!({
        "rule": f.rule.name,
        "code": f.rule.code,
        "class": f.rule.class.as_str(),
        "severity": f.severity.as_str(),
        "message": f.message,
        "span": span(file, f.span),
        "labels": f.labels.iter().map(|l| json!({"span": span(file, l.span), "message": l.message})).collect::<Vec<_>>(),
        "help": f.help,
        "trace": f.trace.iter().map(|t| json!({
            "thread": t.thread,
            "line": file.line_of(t.span),
            "op": t.op,
            "state": t.state,
            "repeat": t.repeat,
        })).collect::<Vec<_>>(),
        "waits_for": f.waits_for.iter().map(|w| json!({
            "thread": w.thread,
            "line": file.line_of(w.span),
            "waits_on": w.waits_on,
            "missing": w.missing,
            "expected_from": w.expected_from.iter().map(|p| json!({
                "thread": p.thread,
                "status": p.status,
                "line": p.span.map(|s| file.line_of(s)),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "schedule": f.schedule.to_string(),
        "found_by": f.found_by,
    })
}

/// Where a finding on a `.ptx` file is in the CUDA source (or the PTX without debug info):
/// `{"file","line","column","stack":[{file,line,column}],"ptx_lines","protocol_line"}`,
/// the stack innermost first (docs/ci.md).
fn source(at: Locator<'_>, f: &Finding) -> Value {
    let l = at.locate(f.span);
    let place = |p: &Place| json!({"file": p.path, "line": p.line, "column": p.column});
    let mut v = place(&l.primary);
    v["stack"] = json!(l.stack.iter().map(place).collect::<Vec<_>>());
    v["ptx_lines"] = json!(l.ptx_lines);
    v["protocol_line"] = json!(l.protocol_line);
    v
}

pub fn render(file: &SourceFile, program: &Program, report: &Report) -> Value {
    render_located(Locator::new(file, None), program, report)
}

/// [`render`]; a finding on a `.ptx` file also gets `source`, its place in the CUDA source.
pub fn render_located(at: Locator<'_>, program: &Program, report: &Report) -> Value {
    let file = at.file;
    let params: serde_json::Map<String, Value> = program
        .params
        .iter()
        .map(|p| (p.name.clone(), json!(p.value)))
        .collect();
    json!({
        "schema": 1,
        "file": file.name,
        "protocol": program.name,
        "params": params,
        "verdict": report.verdict,
        "findings": report.findings.iter().map(|f| {
            let mut v = finding(file, f);
            if at.origin.is_some() {
                v["source"] = source(at, f);
            }
            v
        }).collect::<Vec<_>>(),
        "stats": report.stats,
        "incomplete": report.incomplete,
    })
}
