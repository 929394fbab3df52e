//! Human-readable report of one checked program: each finding as a miette diagnostic (code,
//! labelled spans in the source, help), then its trace, its wait-for edges and the command
//! that replays it; a summary line with the verdict and search statistics.
//!
//! Lines stay within [`width`] columns (the terminal's, or 120 when stdout is not a terminal):
//! long thread names get a line of their own, long states and messages wrap. The one exception
//! is the replay command, kept on one line so that it can be pasted.

use checker::{Finding, Report, Verdict};
use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceCode,
};
use protocols::SourceFile;
use protocols::ir::Program;
use std::fmt::{self, Write};
use std::sync::Arc;

#[derive(Debug)]
struct FindingDiagnostic<'a> {
    finding: &'a Finding,
    source: NamedSource<Arc<str>>,
}

impl fmt::Display for FindingDiagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.finding.message)
    }
}

impl std::error::Error for FindingDiagnostic<'_> {}

impl Diagnostic for FindingDiagnostic<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(format!(
            "{}({})",
            self.finding.rule.name, self.finding.rule.code
        )))
    }
    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.finding.severity {
            checker::Severity::Error => miette::Severity::Error,
            checker::Severity::Warning => miette::Severity::Warning,
        })
    }
    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.finding
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(&self.source)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let primary = LabeledSpan::new_primary_with_span(
            Some(self.finding.rule.class.as_str().to_string()),
            miette::SourceSpan::from(self.finding.span),
        );
        let rest = self.finding.labels.iter().map(|l| {
            LabeledSpan::new_with_span(Some(l.message.clone()), miette::SourceSpan::from(l.span))
        });
        Some(Box::new(std::iter::once(primary).chain(rest)))
    }
}

/// Columns of the human report when stdout is not a terminal (a pipe, a CI log).
pub const PIPE_WIDTH: usize = 120;

/// The width of the human report: the terminal's (at least 60 columns) or [`PIPE_WIDTH`].
pub fn width() -> usize {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal()
        && let Some((terminal_size::Width(w), _)) = terminal_size::terminal_size()
    {
        usize::from(w).max(60)
    } else {
        PIPE_WIDTH
    }
}

/// `text` broken at spaces into lines of at most `width` columns, the first starting with
/// `first`, the others with `indent` (a word longer than a line stays whole).
pub fn wrap(first: &str, indent: &str, text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ') {
        let cols = line.chars().count() + usize::from(!empty) + word.chars().count();
        if !empty && cols > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = indent.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The widest thread column of a trace; longer names get a line of their own.
const THREAD_COLUMN: usize = 24;
/// The widest statement column of a trace; a longer statement pushes its state to the next line.
const OP_COLUMN: usize = 40;

fn trace(out: &mut String, file: &SourceFile, f: &Finding, width: usize) {
    let lines = if file.name.ends_with(".ptx") {
        "; lines of the extracted protocol"
    } else {
        ""
    };
    let _ = writeln!(out, "  trace ({}{lines}):", f.found_by.trace_title());
    let wname = f
        .trace
        .iter()
        .map(|s| s.thread.chars().count())
        .filter(|&n| n <= THREAD_COLUMN)
        .max()
        .unwrap_or(0);
    let wop = f
        .trace
        .iter()
        .map(|s| s.op.chars().count())
        .filter(|&n| n <= OP_COLUMN)
        .max()
        .unwrap_or(0);
    let wline = f
        .trace
        .iter()
        .map(|s| file.line_of(s.span).to_string().len())
        .max()
        .unwrap_or(1)
        .max(3);
    for (i, s) in f.trace.iter().enumerate() {
        let number = format!("  {:>3}. ", i + 1);
        let pad = " ".repeat(number.len());
        let thread = if s.thread.chars().count() > wname {
            // `consumer[0], consumer[32], ...`: its own line(s), then the step below it.
            out.push_str(&wrap(&number, &pad, &s.thread, width));
            format!("{pad}{:<wname$}", "")
        } else {
            format!("{number}{:<wname$}", s.thread)
        };
        let head = format!(
            "{thread}  line {:<wline$} {:<wop$}",
            file.line_of(s.span),
            s.op
        );
        let head_cols = head.chars().count();
        if s.state.is_empty() {
            out.push_str(head.trim_end());
            out.push('\n');
        } else if head_cols + 2 + s.state.chars().count() <= width {
            let _ = writeln!(out, "{head}  {}", s.state);
        } else {
            // The state on the next line(s), under the statement.
            out.push_str(head.trim_end());
            out.push('\n');
            let indent = " ".repeat(pad.len() + wname + 2 + 5 + wline + 1 + 2);
            out.push_str(&wrap(&indent, &indent, &s.state, width));
        }
    }
}

/// The name the snippets are labelled with. A `.ptx` file is checked as the protocol extracted
/// from it, and the snippets and line numbers are that protocol's, not the PTX's: say so.
pub fn source_name(file: &SourceFile) -> String {
    if file.name.ends_with(".ptx") {
        format!("{} (extracted protocol)", file.name)
    } else {
        file.name.clone()
    }
}

/// Render one finding's diagnostic, trace and wait-for graph.
fn finding(
    out: &mut String,
    file: &SourceFile,
    f: &Finding,
    color: bool,
    replay: Option<&str>,
    width: usize,
) {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(width)
        .with_links(false);
    let diag = FindingDiagnostic {
        finding: f,
        source: NamedSource::new(source_name(file), file.text.clone()),
    };
    let _ = handler.render_report(out, &diag);
    if !f.trace.is_empty() {
        trace(out, file, f, width);
    }
    if !f.waits_for.is_empty() {
        out.push_str("  waits for:\n");
        for w in &f.waits_for {
            let text = format!(
                "{} (line {}) waits on {}: {}",
                w.thread,
                file.line_of(w.span),
                w.waits_on,
                w.missing
            );
            out.push_str(&wrap("    ", "        ", &text, width));
            for p in &w.expected_from {
                let place = p
                    .span
                    .map(|s| format!(" at line {}", file.line_of(s)))
                    .unwrap_or_default();
                let status = serde_json::to_value(p.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                let text = format!("expected from {} ({status}{place})", p.thread);
                out.push_str(&wrap("      ", "          ", &text, width));
            }
        }
    }
    if let Some(cmd) = replay {
        let _ = writeln!(out, "  replay: {cmd}");
    }
    out.push('\n');
}

pub fn render(file: &SourceFile, program: &Program, report: &Report, color: bool) -> String {
    render_with_options(file, program, report, color, &[])
}

/// [`render`], with the options the file was read with (a `.ptx` file's `--block`, `--arg`,
/// ...) added to each replay command, so that it runs as printed.
pub fn render_with_options(
    file: &SourceFile,
    program: &Program,
    report: &Report,
    color: bool,
    options: &[String],
) -> String {
    let mut out = String::new();
    let width = width();
    for f in &report.findings {
        let replay = super::sarif::replay_command(file, program, f).map(|cmd| {
            options
                .iter()
                .fold(cmd, |c, o| format!("{c} {}", super::sarif::shell_word(o)))
        });
        finding(&mut out, file, f, color, replay.as_deref(), width);
    }
    let verdict = match report.verdict {
        Verdict::Ok => "ok",
        Verdict::Hazard => "hazard",
        Verdict::Inconclusive => "inconclusive",
    };
    let errors = report
        .findings
        .iter()
        .filter(|f| f.severity == checker::Severity::Error)
        .count();
    let warnings = report.findings.len() - errors;
    let summary = format!(
        "{}: protocol {}: {verdict} ({}, {}; {}, {})",
        file.name,
        program.name,
        super::count(errors, "error"),
        super::count(warnings, "warning"),
        super::count(report.stats.states as usize, "state"),
        super::count(report.stats.transitions as usize, "transition"),
    );
    out.push_str(&wrap("", "  ", &summary, width));
    if let Some(inc) = &report.incomplete {
        let text = format!("search incomplete: {}", inc.reason);
        out.push_str(&wrap("  ", "    ", &text, width));
        out.push_str(&wrap(
            "  ",
            "    ",
            &format!("covered: {}", inc.covered),
            width,
        ));
    }
    out
}
