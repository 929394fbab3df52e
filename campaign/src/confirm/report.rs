//! The result of `confirm`: per finding what the hardware showed, and on which kernel (the
//! command line renders it).

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
    /// The counterexample was replayed on the real kernel, which did not show it: it diverged
    /// from the trace, ran clean, or got stuck elsewhere ([`FindingResult::reason`] says which).
    NotReproduced,
    /// Not replayed on the real kernel (`confirm --app` replays deadlocks only): what the
    /// finding rests on is the model.
    ModelOnly,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Confirmed => "confirmed",
            Outcome::NotObserved => "not observed",
            Outcome::NotObservable => "not observable on hardware",
            Outcome::NotReproduced => "not reproduced",
            Outcome::ModelOnly => "model only",
        }
    }
}

/// Where a finding's GPU evidence came from. `confirm` replays and aimed fuzz run a stress
/// kernel lowered from the protocol (`gpu_harness::lower`): for a `.ptx` input that protocol is
/// the one the PTX front end extracted, so what the GPU shows there is what the *model* of the
/// kernel shows, not the user's kernel (issue 27). `confirm --app` replays a deadlock's
/// counterexample on the user's own kernel, instrumented, inside the user's application.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Evidence {
    /// A stress kernel lowered from the protocol (the `.phase` file, or the protocol extracted
    /// from a `.ptx`).
    #[default]
    Model,
    /// The user's own kernel, instrumented and run with its real arguments (issue 27,
    /// `confirm --app`).
    RealKernel,
}

impl Evidence {
    /// The kernel the evidence came from, as the report says it.
    pub fn kernel(self) -> &'static str {
        match self {
            Evidence::Model => "a stress kernel built from the model",
            Evidence::RealKernel => "the real kernel",
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
    /// The kernel that ran: a stress kernel lowered from the protocol, or the real one.
    #[serde(default)]
    pub evidence: Evidence,
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
    /// Why the real kernel did not reproduce it, in a few words (`diverged at step 12`, `ran
    /// clean`), for [`Outcome::NotReproduced`].
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
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
            evidence: Evidence::Model,
            detail: String::new(),
            trials: 0,
            trials_showing: 0,
            seconds: 0.0,
            trace_steps: f.trace.iter().map(|t| t.repeat.max(1) as usize).sum(),
            stuck: false,
            why_not_shown: Vec::new(),
            aimed_fuzz: None,
            reason: None,
        }
    }

    /// The outcome as the report says it, naming the kernel it was seen (or not seen) on:
    /// "confirmed on a stress kernel built from the model", never a bare "confirmed" for a
    /// result the model's kernel gave.
    pub fn outcome_text(&self) -> String {
        match self.outcome {
            Outcome::Confirmed | Outcome::NotObserved => {
                format!("{} on {}", self.outcome.as_str(), self.evidence.kernel())
            }
            Outcome::NotObservable => self.outcome.as_str().to_string(),
            Outcome::NotReproduced => match &self.reason {
                Some(r) => format!("not reproduced on {} ({r})", self.evidence.kernel()),
                None => format!("not reproduced on {}", self.evidence.kernel()),
            },
            Outcome::ModelOnly => "model only (not replayed on the real kernel)".to_string(),
        }
    }
}

/// `confirm`'s report of one file.
#[derive(Clone, Debug, Serialize)]
pub struct ConfirmReport {
    pub file: String,
    pub device: String,
    /// Seconds the checker took to find the counterexamples (CPU).
    pub check_seconds: f64,
    pub findings: Vec<FindingResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuzz: Option<crate::fuzz::FuzzSummary>,
}

impl ConfirmReport {
    /// The report of `file` before anything ran on a GPU.
    pub fn new(file: &str, check_seconds: f64) -> ConfirmReport {
        ConfirmReport {
            file: file.to_string(),
            device: "none (not lowered)".into(),
            check_seconds,
            findings: Vec::new(),
            fuzz: None,
        }
    }

    /// The GPU showed a hazard: a finding confirmed, or (a file without error-level findings)
    /// its fuzzing saw a hang or stale read.
    pub fn shown(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.outcome == Outcome::Confirmed)
            || self.fuzz.as_ref().is_some_and(|f| !f.clean())
    }

    /// The GPU context is lost (a launch stuck in a hardware collective, or a faulted kernel):
    /// the stuck kernel is freed only when the process ends (`gpu_harness::run::end_process`),
    /// and nothing else may run on the GPU in this process.
    pub fn context_lost(&self) -> bool {
        self.findings.iter().any(|f| f.stuck) || self.fuzz.as_ref().is_some_and(|f| f.is_stuck())
    }
}
