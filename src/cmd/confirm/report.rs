//! The result of `confirm`: per finding what the hardware showed, in human or JSON form.

use crate::cli::Format;
use crate::cmd::fuzz;
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
}

#[derive(Serialize)]
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
