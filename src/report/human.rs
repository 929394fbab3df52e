//! Human-readable report of one checked program: each finding as a miette diagnostic (code,
//! labelled spans in the source, help), then its trace, its wait-for edges and the command
//! that replays it; a summary line with the verdict and search statistics.

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

/// Render one finding's diagnostic, trace and wait-for graph.
fn finding(out: &mut String, file: &SourceFile, f: &Finding, color: bool, replay_cmd: &str) {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(100)
        .with_links(false);
    let diag = FindingDiagnostic {
        finding: f,
        source: NamedSource::new(file.name.clone(), file.text.clone()),
    };
    let _ = handler.render_report(out, &diag);
    if !f.trace.is_empty() {
        let _ = writeln!(out, "  trace ({}):", f.found_by.trace_title());
        let wname = f.trace.iter().map(|s| s.thread.len()).max().unwrap_or(0);
        let wop = f.trace.iter().map(|s| s.op.len()).max().unwrap_or(0);
        for (i, s) in f.trace.iter().enumerate() {
            let line = file.line_of(s.span);
            let _ = write!(
                out,
                "  {:>3}. {:<wname$}  line {:<3} {:<wop$}",
                i + 1,
                s.thread,
                line,
                s.op
            );
            if !s.state.is_empty() {
                let _ = write!(out, "  {}", s.state);
            }
            out.push('\n');
        }
    }
    if !f.waits_for.is_empty() {
        out.push_str("  waits for:\n");
        for w in &f.waits_for {
            let _ = writeln!(
                out,
                "    {} (line {}) waits on {}: {}",
                w.thread,
                file.line_of(w.span),
                w.waits_on,
                w.missing
            );
            for p in &w.expected_from {
                let place = p
                    .span
                    .map(|s| format!(" at line {}", file.line_of(s)))
                    .unwrap_or_default();
                let status = serde_json::to_value(p.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                let _ = writeln!(out, "      expected from {} ({status}{place})", p.thread);
            }
        }
    }
    if !f.trace.is_empty() {
        let _ = writeln!(out, "  replay: {replay_cmd} --replay {}", f.schedule);
    }
    out.push('\n');
}

pub fn render(file: &SourceFile, program: &Program, report: &Report, color: bool) -> String {
    let mut out = String::new();
    let overrides: Vec<String> = program
        .params
        .iter()
        .filter(|p| p.overridden)
        .map(|p| format!(" --param {}={}", p.name, p.value))
        .collect();
    let replay_cmd = format!("phasecheck verify {}{}", file.name, overrides.concat());
    for f in &report.findings {
        finding(&mut out, file, f, color, &replay_cmd);
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
    let _ = writeln!(
        out,
        "{}: protocol {}: {verdict} ({}, {}; {}, {})",
        file.name,
        program.name,
        super::count(errors, "error"),
        super::count(warnings, "warning"),
        super::count(report.stats.states as usize, "state"),
        super::count(report.stats.transitions as usize, "transition"),
    );
    if let Some(inc) = &report.incomplete {
        let _ = writeln!(
            out,
            "  search incomplete: {}\n  covered: {}",
            inc.reason, inc.covered
        );
    }
    out
}
