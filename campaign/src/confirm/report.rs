//! The result of `confirm`: per finding what the hardware showed (the command line renders it).

use super::aim::AimedFuzz;
use super::obstacle::Obstacle;
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
    pub fn as_str(self) -> &'static str {
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
            statement: crate::fuzz::stmt_text(file, f.span),
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
pub struct ConfirmReport {
    pub file: String,
    pub device: String,
    /// Seconds the checker took to find the counterexamples (CPU).
    pub check_seconds: f64,
    pub findings: Vec<FindingResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuzz: Option<crate::fuzz::FuzzSummary>,
}
