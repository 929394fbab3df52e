//! SARIF 2.1.0 (OASIS) output of `phasecheck lint --format sarif`.
//!
//! One run. `tool.driver.rules` lists every rule of the registry (id = code, with its
//! summary, the `What` section of its doc and the whole doc as help). Each finding is a result
//! with rule id and index, level, message, physical location (1-based line/column, end column
//! exclusive, columns in Unicode code points), related locations for its labels and for the
//! threads of a deadlock, and its counterexample as a `codeFlow`: one `threadFlow` per thread,
//! the global order of steps in `executionOrder`. Files that failed to load, and searches that
//! stopped early, are tool execution notifications of the invocation.

use super::files::{FileResult, Outcome, Summary};
use super::origin::{Located, Locator, Place};
use checker::{Finding, Rule, Severity};
use protocols::ir::Program;
use protocols::{SourceFile, Span};
use serde_json::{Value, json};

pub const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// Percent-encode a path into a URI reference (relative paths stay relative).
pub fn uri(path: &str) -> String {
    let path = path.replace('\\', "/");
    let (prefix, rest) = if path.starts_with('/') {
        ("file://", path.as_str())
    } else {
        ("", path.strip_prefix("./").unwrap_or(&path))
    };
    let mut out = String::from(prefix);
    for b in rest.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// The paragraph under `# What` (the rule's full description), or its summary.
pub fn what_section(rule: &Rule) -> String {
    let mut lines = rule
        .doc
        .lines()
        .skip_while(|l| l.trim() != "# What")
        .skip(1);
    let mut text = Vec::new();
    for l in lines.by_ref() {
        if l.trim_start().starts_with("# ") {
            break;
        }
        text.push(l.trim());
    }
    let joined = text
        .split(|l| l.is_empty())
        .map(|p| p.join(" "))
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    if joined.is_empty() {
        rule.summary.to_string()
    } else {
        joined
    }
}

fn descriptor(rule: &Rule) -> Value {
    let doc = crate::cmd::explain::doc(rule);
    json!({
        "id": rule.code,
        "name": rule.name,
        "shortDescription": { "text": rule.summary },
        "fullDescription": { "text": what_section(rule) },
        "help": { "text": doc, "markdown": doc },
        "defaultConfiguration": { "level": level(rule.default_severity) },
        "properties": { "tags": [rule.class.as_str()], "class": rule.class.as_str() },
    })
}

fn physical(place: &Place) -> Value {
    let mut phys = json!({ "artifactLocation": { "uri": uri(&place.path) } });
    if let Some(line) = place.line {
        let mut region = json!({ "startLine": line });
        if let Some(c) = place.column {
            region["startColumn"] = json!(c);
        }
        if let Some((l, c)) = place.end {
            region["endLine"] = json!(l);
            region["endColumn"] = json!(c);
        }
        phys["region"] = region;
    }
    phys
}

fn place_location(place: &Place, message: Option<&str>) -> Value {
    let mut loc = json!({ "physicalLocation": physical(place) });
    if let Some(m) = message {
        loc["message"] = json!({ "text": m });
    }
    loc
}

fn location(at: Locator<'_>, span: Span, message: Option<&str>) -> Value {
    place_location(&at.locate(span).primary, message)
}

/// The `.loc` inline stack of a finding on a `.ptx` file, innermost frame first (as SARIF
/// orders a stack's frames); the frame the finding is reported at says so.
fn inline_stack(located: &Located) -> Option<Value> {
    if located.stack.is_empty() {
        return None;
    }
    let n = located.stack.len();
    let frames: Vec<Value> = located
        .stack
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let what = if i == 0 {
                "the `.loc` position".to_string()
            } else {
                format!("inlined at (call site {i} of {})", n - 1)
            };
            let reported = if p.path == located.primary.path && p.line == located.primary.line {
                "; the user's frame, where the finding is reported"
            } else {
                ""
            };
            json!({ "location": place_location(p, Some(&format!("{what}{reported}"))) })
        })
        .collect();
    Some(json!({
        "message": { "text": "inline stack from the PTX's `.loc ... inlined_at` (innermost first)" },
        "frames": frames,
    }))
}

/// `word` as one POSIX shell word: as it is when it has only characters no shell treats
/// specially, else in single quotes.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The command that replays a finding's interleaving (with the parameter values it ran with),
/// pasteable into a shell.
pub fn replay_command(file: &SourceFile, program: &Program, f: &Finding) -> Option<String> {
    let overrides: String = program
        .params
        .iter()
        .filter(|p| p.overridden)
        .map(|p| format!(" --param {}={}", p.name, p.value))
        .collect();
    (!f.trace.is_empty()).then(|| {
        format!(
            "phasecheck verify {}{overrides} --replay {}",
            shell_word(&file.name),
            f.schedule
        )
    })
}

fn code_flow(at: Locator<'_>, program: &Program, f: &Finding) -> Value {
    // One threadFlow per thread, in order of first appearance; steps keep their global order.
    let mut threads: Vec<(&str, Vec<Value>)> = Vec::new();
    for (i, step) in f.trace.iter().enumerate() {
        let text = if step.repeat > 1 {
            format!(
                "{}: {} (x{}) -> {}",
                step.thread, step.op, step.repeat, step.state
            )
        } else {
            format!("{}: {} -> {}", step.thread, step.op, step.state)
        };
        let tfl = json!({
            "location": location(at, step.span, Some(&text)),
            "executionOrder": i + 1,
        });
        match threads.iter_mut().find(|(t, _)| *t == step.thread) {
            Some((_, locs)) => locs.push(tfl),
            None => threads.push((&step.thread, vec![tfl])),
        }
    }
    let mut message = format!(
        "counterexample: {} ({})",
        f.found_by.trace_title(),
        super::count(f.trace.len(), "step")
    );
    if let Some(cmd) = at.replay(program, f) {
        message.push_str(&format!("; replay: {cmd}"));
    }
    json!({
        "message": { "text": message },
        "threadFlows": threads
            .into_iter()
            .map(|(t, locs)| json!({ "id": t, "message": { "text": t }, "locations": locs }))
            .collect::<Vec<_>>(),
    })
}

fn result(at: Locator<'_>, program: &Program, f: &Finding, rules: &[&Rule]) -> Value {
    let mut text = f.message.clone();
    if let Some(h) = &f.help {
        text.push_str(&format!("\nhelp: {h}"));
    }
    let mut related: Vec<Value> = f
        .labels
        .iter()
        .map(|l| location(at, l.span, Some(&l.message)))
        .collect();
    for w in &f.waits_for {
        let parties: Vec<String> = w
            .expected_from
            .iter()
            .map(|p| {
                let status = serde_json::to_value(p.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                format!("{} ({status})", p.thread)
            })
            .collect();
        let msg = format!(
            "{} waits on {}: {}; expected from {}",
            w.thread,
            w.waits_on,
            w.missing,
            if parties.is_empty() {
                "nobody".to_string()
            } else {
                parties.join(", ")
            }
        );
        related.push(location(at, w.span, Some(&msg)));
    }
    let located = at.locate(f.span);
    if let Some(ptx) = &located.ptx {
        let text = match located.ptx_lines.as_slice() {
            [_, rest @ ..] if !rest.is_empty() => {
                let rest: Vec<String> = rest.iter().map(u32::to_string).collect();
                format!(
                    "the PTX instruction (its unrolled copies: PTX lines {})",
                    rest.join(", ")
                )
            }
            _ => "the PTX instruction".to_string(),
        };
        related.push(place_location(ptx, Some(&text)));
    }
    for (i, r) in related.iter_mut().enumerate() {
        r["id"] = json!(i + 1);
    }
    let mut out = json!({
        "ruleId": f.rule.code,
        "ruleIndex": rules.iter().position(|r| *r == f.rule).unwrap_or(0),
        "level": level(f.severity),
        "message": { "text": text },
        "locations": [place_location(&located.primary, None)],
        "properties": { "name": f.rule.name, "class": f.rule.class.as_str() },
    });
    if let Some(stack) = inline_stack(&located) {
        out["stacks"] = json!([stack]);
    }
    if let Some(line) = located.protocol_line {
        // The line of `phasecheck extract`'s output, which the human report's snippets show.
        out["properties"]["protocolLine"] = json!(line);
    }
    if !related.is_empty() {
        out["relatedLocations"] = json!(related);
    }
    if !f.trace.is_empty() {
        out["codeFlows"] = json!([code_flow(at, program, f)]);
    }
    if let Some(cmd) = at.replay(program, f) {
        out["properties"]["schedule"] = json!(f.schedule.to_string());
        out["properties"]["replay"] = json!(cmd);
    }
    out
}

fn notification(
    file: &SourceFile,
    level: &str,
    id: &str,
    text: String,
    span: Option<Span>,
) -> Value {
    let loc = match span {
        Some(s) => location(Locator::new(file, None), s, None),
        None => json!({ "physicalLocation": { "artifactLocation": { "uri": uri(&file.name) } } }),
    };
    json!({
        "level": level,
        "descriptor": { "id": id },
        "message": { "text": text },
        "locations": [loc],
    })
}

/// The whole SARIF log for one lint run.
pub fn render(results: &[FileResult], exit_code: u8) -> Value {
    let rules = checker::rules::ALL;
    let mut sarif_results = Vec::new();
    let mut notifications = Vec::new();
    for r in results {
        match &r.outcome {
            Outcome::Checked { program, report } => {
                sarif_results.extend(
                    report
                        .findings
                        .iter()
                        .map(|f| result(r.locator(), program, f, rules)),
                );
                if let Some(inc) = &report.incomplete {
                    // A search that stopped after finding errors decided its verdict: a note.
                    let (level, id) = if report.verdict == checker::Verdict::Hazard {
                        ("note", "stopped-early")
                    } else {
                        ("warning", "inconclusive")
                    };
                    notifications.push(notification(
                        &r.file,
                        level,
                        id,
                        format!(
                            "search stopped early: {}; covered: {}",
                            inc.reason, inc.covered
                        ),
                        None,
                    ));
                }
            }
            Outcome::LoadFailed(errors) => {
                for e in &errors.errors {
                    let mut text = e.message.clone();
                    if let Some(h) = &e.help {
                        text.push_str(&format!("\nhelp: {h}"));
                    }
                    notifications.push(notification(&r.file, "error", e.code, text, e.span));
                }
            }
            Outcome::Unreadable(msg) => notifications.push(notification(
                &r.file,
                "error",
                "unreadable",
                msg.clone(),
                None,
            )),
        }
    }
    let summary = Summary::of(results);
    json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "phasecheck",
                    "version": env!("CARGO_PKG_VERSION"),
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "rules": rules.iter().map(|r| descriptor(r)).collect::<Vec<_>>(),
                }
            },
            "invocations": [{
                "executionSuccessful": summary.bad_input == 0,
                "exitCode": exit_code,
                "toolExecutionNotifications": notifications,
            }],
            "columnKind": "unicodeCodePoints",
            "results": sarif_results,
        }]
    })
}
