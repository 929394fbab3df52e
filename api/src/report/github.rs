//! GitHub Actions workflow commands (`--format github`): one annotation per finding,
//! `::error file=F,line=L,col=C,endLine=..,endColumn=..,title=CODE name::message`.
//!
//! Values are escaped as the Actions runner expects: `%`, CR and LF in messages; also `:` and
//! `,` in properties.

use super::files::{FileResult, Outcome, Summary};
use super::origin::{Located, Locator, Place};
use checker::{Incomplete, Severity, Verdict};
use protocols::{SourceFile, Span};

fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

fn position(place: &Place) -> String {
    let mut out = String::new();
    if let Some(line) = place.line {
        out.push_str(&format!(",line={line}"));
        if let Some(c) = place.column {
            out.push_str(&format!(",col={c}"));
        }
        if let Some((l, c)) = place.end {
            out.push_str(&format!(",endLine={l},endColumn={c}"));
        }
    }
    out
}

/// `file=F,line=L,...` of a place (no line: the file as a whole).
fn command_at(kind: &str, place: &Place, title: &str, message: &str) -> String {
    format!(
        "::{kind} file={}{},title={}::{}\n",
        escape_property(&place.path),
        position(place),
        escape_property(title),
        escape_data(message)
    )
}

fn command(
    kind: &str,
    file: &SourceFile,
    span: Option<Span>,
    title: &str,
    message: &str,
) -> String {
    let place = match span {
        Some(span) => Locator::new(file, None).locate(span).primary,
        None => Place {
            path: file.name.clone(),
            line: None,
            column: None,
            end: None,
        },
    };
    command_at(kind, &place, title, message)
}

/// `path:line` (`path` alone for a whole file).
fn short(p: &Place) -> String {
    match p.line {
        Some(l) => format!("{}:{l}", p.path),
        None => p.path.clone(),
    }
}

/// The lines a finding on a `.ptx` file adds to its message: the inline stack and the PTX
/// line (the annotation itself is at the user's frame).
fn ptx_context(l: &Located) -> String {
    let mut out = String::new();
    if !l.stack.is_empty() {
        let frames: Vec<String> = l.stack.iter().map(short).collect();
        out.push_str(&format!(
            "\ninline stack (innermost first): {}",
            frames.join(" <- ")
        ));
    }
    if l.ptx.is_some() {
        let lines: Vec<String> = l.ptx_lines.iter().map(u32::to_string).collect();
        out.push_str(&format!("\nPTX lines: {}", lines.join(", ")));
    }
    out
}

/// The annotation of a search that stopped at a limit. An inconclusive file fails the job
/// (exit 3, or worse with other files), so it is an error, not a notice that a reviewer
/// scrolls past. A search that stopped after it had found a hazard (the breadth-first search,
/// or a random schedule that confirmed one) has its verdict: the hazard's own annotations are
/// the errors, and this one only says that the search did not run to the end.
fn stopped_early(file: &SourceFile, verdict: Verdict, inc: &Incomplete) -> String {
    match verdict {
        Verdict::Hazard => command(
            "notice",
            file,
            None,
            "search stopped after a hazard",
            &format!(
                "hazard found; the search stopped early, so other findings may exist: {}; covered: {}",
                inc.reason, inc.covered
            ),
        ),
        Verdict::Inconclusive | Verdict::Ok => command(
            "error",
            file,
            None,
            "inconclusive (exit 3)",
            &format!(
                "inconclusive: the search stopped early and found no hazard, which is not a proof: {}; covered: {}",
                inc.reason, inc.covered
            ),
        ),
    }
}

pub fn render(results: &[FileResult]) -> String {
    let mut out = String::new();
    for r in results {
        match &r.outcome {
            Outcome::Checked { program, report } => {
                for f in &report.findings {
                    let kind = match f.severity {
                        Severity::Error => "error",
                        Severity::Warning => "warning",
                    };
                    let mut message = f.message.clone();
                    if let Some(h) = &f.help {
                        message.push_str(&format!("\nhelp: {h}"));
                    }
                    if let Some(cmd) = r.locator().replay(program, f) {
                        message.push_str(&format!("\nreplay: {cmd}"));
                    }
                    let located = r.locator().locate(f.span);
                    message.push_str(&ptx_context(&located));
                    let title = format!("{} {}", f.rule.code, f.rule.name);
                    out.push_str(&command_at(kind, &located.primary, &title, &message));
                }
                if let Some(inc) = &report.incomplete {
                    out.push_str(&stopped_early(&r.file, report.verdict, inc));
                }
            }
            Outcome::LoadFailed(errors) => {
                for e in &errors.errors {
                    let mut message = e.message.clone();
                    if let Some(h) = &e.help {
                        message.push_str(&format!("\nhelp: {h}"));
                    }
                    out.push_str(&command("error", &r.file, e.span, e.code, &message));
                }
            }
            Outcome::Unreadable(msg) => {
                out.push_str(&command("error", &r.file, None, "unreadable", msg));
            }
        }
    }
    let s = Summary::of(results);
    out.push_str(&format!(
        "phasecheck: {} files, {} errors, {} warnings, {} inconclusive, {} not loaded\n",
        s.files, s.errors, s.warnings, s.inconclusive, s.bad_input
    ));
    out
}
