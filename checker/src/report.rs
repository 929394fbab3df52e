//! What the checker returns. The checker never prints: reporters (the CLI's `report` module)
//! render these values as human text, JSON, SARIF or GitHub annotations.

use crate::rules::{Class, Rule, Severity};
use protocols::Span;
use serde::Serialize;

/// The overall answer for one program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every interleaving explored, no error-level finding.
    Ok,
    /// At least one error-level finding.
    Hazard,
    /// The search stopped at a limit before covering every interleaving (and found no error).
    Inconclusive,
}

#[derive(Clone, Debug)]
pub struct Report {
    pub verdict: Verdict,
    /// Sorted by (span, rule code); one per distinct (rule, statement).
    pub findings: Vec<Finding>,
    pub stats: Stats,
    /// Why the search stopped early and what it covered (`Some` iff the search was cut short).
    pub incomplete: Option<Incomplete>,
}

impl Report {
    /// The verdict that the findings and the search's completeness imply: any error-level
    /// finding is a hazard, else a cut-short search is inconclusive, else ok. Call it after
    /// changing findings (suppressions, configured levels).
    pub fn verdict_of_findings(&self) -> Verdict {
        if self.findings.iter().any(|f| f.severity == Severity::Error) {
            Verdict::Hazard
        } else if self.incomplete.is_some() {
            Verdict::Inconclusive
        } else {
            Verdict::Ok
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Incomplete {
    /// Which limit, e.g. "max-states (1000000)"; with how to raise it.
    pub reason: String,
    /// What was covered, e.g. "all interleavings up to depth 41".
    pub covered: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    pub states: u64,
    pub transitions: u64,
    pub elapsed_ms: u64,
    pub peak_memory_bytes: u64,
}

/// One hazard: a rule broken at one statement, with the shortest interleaving reaching it.
#[derive(Clone, Debug)]
pub struct Finding {
    pub rule: &'static Rule,
    /// Effective severity (the rule's default unless configuration changed it).
    pub severity: Severity,
    pub message: String,
    /// The statement that triggers it.
    pub span: Span,
    /// Further labelled places: the other access of a race, the init a use was not ordered
    /// after, the earlier wait that observed the phase, ...
    pub labels: Vec<Label>,
    pub help: Option<String>,
    /// The interleaving from the initial state to the hazard (empty for static lints).
    pub trace: Vec<TraceStep>,
    /// For deadlocks: who waits for whom.
    pub waits_for: Vec<WaitFor>,
    /// The trace as scheduling choices (replayable with `--replay`).
    pub schedule: Schedule,
    /// How the trace was found.
    pub found_by: FoundBy,
}

/// Where a finding's trace comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FoundBy {
    /// The breadth-first search: a shortest interleaving.
    Search,
    /// A random schedule of the bug-hunting portfolio, shortened and replayed.
    RandomSchedule,
}

impl FoundBy {
    /// How a report introduces the trace.
    pub fn trace_title(self) -> &'static str {
        match self {
            FoundBy::Search => "shortest interleaving",
            FoundBy::RandomSchedule => "a random schedule, shortened",
        }
    }
}

impl Finding {
    pub fn class(&self) -> Class {
        self.rule.class
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// Who takes a step.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Actor {
    /// A thread: its kernel index, block rank in the cluster, thread index in the block.
    Thread { kernel: u32, cta: u32, tid: u32 },
    /// An asynchronous event (TMA completion, cp.async completion, async arrive-on), with the
    /// thread that issued it.
    Async {
        kernel: u32,
        cta: u32,
        tid: u32,
        what: String,
    },
}

/// One step of a counterexample trace.
#[derive(Clone, Debug, Serialize)]
pub struct TraceStep {
    pub actor: Actor,
    /// Display name: `consumer[3]` (role name and index among the role's threads), or
    /// `t37` / `cta1.t5` for threads outside any role; folded runs read `consumer[0..127]`.
    pub thread: String,
    /// Number of identical steps folded into this one (1 when not folded).
    pub repeat: u32,
    pub span: Span,
    /// The statement as text, e.g. `arrive empty[1]`.
    pub op: String,
    /// State of the object the step touched, after the step, e.g. `empty[1]: phase 3, pending 7, tx 0`.
    pub state: String,
}

/// Status of a thread that a blocked thread waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PartyStatus {
    Blocked,
    Exited,
    Finished,
    Running,
}

#[derive(Clone, Debug, Serialize)]
pub struct Party {
    pub thread: String,
    pub status: PartyStatus,
    /// Where it is (the statement it is blocked at, or its exit).
    pub span: Option<Span>,
}

/// One edge set of the wait-for graph: a blocked thread and who could release it.
#[derive(Clone, Debug, Serialize)]
pub struct WaitFor {
    pub thread: String,
    pub span: Span,
    /// e.g. `full[0] @ phase 2 (parity 0)`.
    pub waits_on: String,
    /// e.g. `1 arrival and 1024 bytes missing`.
    pub missing: String,
    /// The threads (or async ops) expected to provide what is missing, and where they are.
    pub expected_from: Vec<Party>,
}

/// A counterexample as scheduling choices: at each step, which enabled actor moved.
/// Text form: actor indices joined by `.`, e.g. `0.0.3.1`; `phasecheck verify --replay`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Schedule(pub Vec<u32>);

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, c) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Schedule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().is_empty() {
            return Ok(Schedule(Vec::new()));
        }
        s.trim()
            .split('.')
            .map(|p| {
                p.parse::<u32>()
                    .map_err(|_| format!("`{p}` is not a step number"))
            })
            .collect::<Result<_, _>>()
            .map(Schedule)
    }
}
