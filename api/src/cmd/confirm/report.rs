//! The result of `confirm`: per finding what the hardware showed, in human or JSON form.

use super::aim::AimedFuzz;
use super::obstacle::Obstacle;
use crate::args::Format;
use crate::cmd::fuzz;
use checker::Finding;
use protocols::SourceFile;
use serde::Serialize;

/// What the hardware showed for one finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Confirmed,
    NotObserved,
    NotObservable,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Confirmed => "confirmed",
            Outcome::NotObserved => "not observed",
            Outcome::NotObservable => "not observable on hardware",
        }
    }
}

#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct FindingResult {
    pub rule: String,
    pub code: String,
    pub class: String,
    pub line: u32,
    pub statement: String,
    pub outcome: Outcome,
    /// What was seen (or why nothing could be).
    pub detail: String,
    pub trials: u64,
    pub trials_showing: u64,
    pub seconds: f64,
    pub trace_steps: usize,
    /// The GPU context is lost (a fault or a stuck hardware barrier): later findings of the
    /// file cannot be replayed in this process.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub stuck: bool,
    /// Why the replay could not show the finding, by class (when it did not).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub why_not_shown: Vec<Obstacle>,
    /// The aimed fuzz run after a replay that did not show the finding.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub aimed_fuzz: Option<AimedFuzz>,
}

impl FindingResult {
    /// The result of finding `f` before anything ran: not observed, nothing tried.
    pub fn new(f: &Finding, file: &SourceFile) -> FindingResult {
        FindingResult {
            rule: f.rule.name.to_string(),
            code: f.rule.code.to_string(),
            class: f.class().as_str().to_string(),
            line: file.line_col(f.span.start).line,
            statement: fuzz::stmt_text(file, f.span),
            outcome: Outcome::NotObserved,
            detail: String::new(),
            trials: 0,
            trials_showing: 0,
            seconds: 0.0,
            trace_steps: f.trace.iter().map(|t| t.repeat.max(1) as usize).sum(),
            stuck: false,
            why_not_shown: Vec::new(),
            aimed_fuzz: None,
        }
    }
}

#[derive(Clone, Serialize)]
pub(super) struct ConfirmReport {
    pub(super) file: String,
    pub(super) device: String,
    /// Seconds the checker took to find the counterexamples (CPU).
    pub(super) check_seconds: f64,
    pub(super) findings: Vec<FindingResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) fuzz: Option<fuzz::FuzzSummary>,
}

pub(super) fn render(report: &ConfirmReport) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "confirm {} on {} (checker: {:.2} s)",
        report.file, report.device, report.check_seconds
    );
    for r in &report.findings {
        let _ = writeln!(
            o,
            "  {:<9} {:<22} line {:<4} {:<36} {}",
            r.class,
            format!("{}({})", r.rule, r.code),
            r.line,
            r.statement,
            r.outcome.as_str()
        );
        let _ = writeln!(
            o,
            "            {} [{} of {} trials, {:.2} s, trace of {} steps]",
            r.detail, r.trials_showing, r.trials, r.seconds, r.trace_steps
        );
        for w in &r.why_not_shown {
            let _ = writeln!(
                o,
                "            why not shown ({}): {}",
                w.class.as_str(),
                w.detail
            );
        }
        if let Some(a) = &r.aimed_fuzz {
            let targets: Vec<&str> = a.targets.iter().map(|t| t.as_str()).collect();
            let lines: Vec<String> = a.lines.iter().map(|l| l.to_string()).collect();
            let ns: Vec<String> = a
                .delay_ns
                .iter()
                .map(|n| format!("{} us", f64::from(*n) / 1e3))
                .collect();
            let _ = writeln!(
                o,
                "            aimed fuzz ({} round(s), {} trials, {:.2} s; delays of up to {} \
                 before line {} in {}): {}{}",
                a.rounds,
                a.trials,
                a.seconds,
                ns.join(" / "),
                lines.join(", "),
                targets.join("; "),
                if a.shown { "shown: " } else { "" },
                a.detail
            );
        }
    }
    if let Some(fz) = &report.fuzz {
        let _ = writeln!(o, "  no error-level finding: fuzzed instead");
        for l in fuzz::render_human(fz).lines().skip(1) {
            let _ = writeln!(o, "{l}");
        }
    }
    o
}

pub(super) fn print_report(format: Format, out: &ConfirmReport) {
    match format {
        Format::Human => print!("{}", render(out)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(out).expect("JSON values serialize")
        ),
    }
}
