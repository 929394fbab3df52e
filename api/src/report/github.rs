//! GitHub Actions workflow commands (`--format github`): one annotation per finding,
//! `::error file=F,line=L,col=C,endLine=..,endColumn=..,title=CODE name::message`.
//!
//! Values are escaped as the Actions runner expects: `%`, CR and LF in messages; also `:` and
//! `,` in properties.

use super::files::{FileResult, Outcome, Summary};
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

fn position(file: &SourceFile, span: Span) -> String {
    let start = file.line_col(span.start);
    let end = file.line_col(span.end.max(span.start));
    format!(
        "line={},col={},endLine={},endColumn={}",
        start.line, start.column, end.line, end.column
    )
}

fn command(
    kind: &str,
    file: &SourceFile,
    span: Option<Span>,
    title: &str,
    message: &str,
) -> String {
    let mut props = format!("file={}", escape_property(&file.name));
    if let Some(span) = span {
        props.push(',');
        props.push_str(&position(file, span));
    }
    format!(
        "::{kind} {props},title={}::{}\n",
        escape_property(title),
        escape_data(message)
    )
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
                    if let Some(cmd) = super::sarif::replay_command(&r.file, program, f) {
                        message.push_str(&format!("\nreplay: {cmd}"));
                    }
                    let title = format!("{} {}", f.rule.code, f.rule.name);
                    out.push_str(&command(kind, &r.file, Some(f.span), &title, &message));
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
