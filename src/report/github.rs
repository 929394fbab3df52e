//! GitHub Actions workflow commands (`--format github`): one annotation per finding,
//! `::error file=F,line=L,col=C,endLine=..,endColumn=..,title=CODE name::message`.
//!
//! Values are escaped as the Actions runner expects: `%`, CR and LF in messages; also `:` and
//! `,` in properties.

use super::files::{FileResult, Outcome, Summary};
use checker::Severity;
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
                    out.push_str(&command(
                        "notice",
                        &r.file,
                        None,
                        "inconclusive",
                        &format!(
                            "search stopped early: {}; covered: {}",
                            inc.reason, inc.covered
                        ),
                    ));
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
