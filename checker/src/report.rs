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
    /// The blocked threads `thread` names, as (block rank in the cluster, thread index in the
    /// block): what `confirm --app` compares with the threads stuck in the real kernel.
    #[serde(skip)]
    pub blocked: Vec<(u32, u32)>,
}

/// A counterexample as scheduling choices: at each step, which actor moved (a thread's index,
/// or an asynchronous event's).
///
/// Text form (`phasecheck verify --replay`), compact so that a replay line stays short: runs of
/// one actor, each written as the actor's index in base 26 (upper-case letters for the higher
/// digits, a lower-case letter for the last: `a` = 0, `z` = 25, `Ba` = 26, `Ou` = 384)
/// followed by the length of the run in decimal when it is more than 1. `a11Ou3Hh` is actor 0
/// eleven times, 384 three times, then 189 once. Schedules repeat one actor for many steps in a
/// row (a thread runs until it blocks or another may interfere), so this is several times
/// shorter than the list of indices, and as exact. The older form, indices joined by `.`
/// (`0.0.3.1`), is still read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Schedule(pub Vec<u32>);

/// Write `v` as base-26 letters: higher digits upper-case, the last digit lower-case.
fn push_actor(out: &mut String, v: u32) {
    let mut high = Vec::new();
    let mut rest = v / 26;
    while rest > 0 {
        high.push(b'A' + (rest % 26) as u8);
        rest /= 26;
    }
    out.extend(high.iter().rev().map(|&b| b as char));
    out.push((b'a' + (v % 26) as u8) as char);
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        let mut i = 0;
        while i < self.0.len() {
            let v = self.0[i];
            let run = self.0[i..].iter().take_while(|&&x| x == v).count();
            push_actor(&mut out, v);
            if run > 1 {
                out.push_str(&run.to_string());
            }
            i += run;
        }
        f.write_str(&out)
    }
}

/// The compact form: `[A-Z]*[a-z][0-9]*` tokens.
fn parse_compact(s: &str) -> Result<Vec<u32>, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let too_long = || "a schedule must have fewer than 2^32 steps per actor".to_string();
    while i < bytes.len() {
        let start = i;
        let mut v: u64 = 0;
        while i < bytes.len() && bytes[i].is_ascii_uppercase() {
            v = v * 26 + u64::from(bytes[i] - b'A');
            i += 1;
            if v > u64::from(u32::MAX) {
                return Err(format!("`{}` is not an actor index", &s[start..i]));
            }
        }
        if i == bytes.len() || !bytes[i].is_ascii_lowercase() {
            let bad = s[i..]
                .chars()
                .next()
                .map_or("the end".to_string(), |c| format!("`{c}`"));
            return Err(format!(
                "{bad} at byte {i} of the schedule: expected a lower-case letter (an actor, as printed after --replay)"
            ));
        }
        v = v * 26 + u64::from(bytes[i] - b'a');
        i += 1;
        let v =
            u32::try_from(v).map_err(|_| format!("`{}` is not an actor index", &s[start..i]))?;
        let digits = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let run: usize = if i == digits {
            1
        } else {
            s[digits..i].parse().map_err(|_| too_long())?
        };
        if run == 0 {
            return Err(format!("`{}`: a run of 0 steps", &s[start..i]));
        }
        if out.len() + run > u32::MAX as usize {
            return Err(too_long());
        }
        out.extend(std::iter::repeat_n(v, run));
    }
    Ok(out)
}

impl std::str::FromStr for Schedule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(Schedule(Vec::new()));
        }
        if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return s
                .split('.')
                .map(|p| {
                    p.parse::<u32>()
                        .map_err(|_| format!("`{p}` is not a step number"))
                })
                .collect::<Result<_, _>>()
                .map(Schedule);
        }
        parse_compact(s).map(Schedule)
    }
}

#[cfg(test)]
mod schedule_tests {
    use super::Schedule;

    #[test]
    fn compact_form_round_trips_and_is_short() {
        let s = Schedule(vec![
            0, 0, 0, 384, 384, 384, 189, 25, 26, 675, 676, 17_575, 17_576,
        ]);
        let text = s.to_string();
        assert_eq!(text, "a3Ou3HhzBaZzBAaZZzBAAa");
        assert_eq!(text.parse::<Schedule>(), Ok(s));
        let long = Schedule((0..2000u32).map(|i| 128 + i / 7).collect());
        let dotted = long
            .0
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(".");
        let compact = long.to_string();
        assert!(
            compact.len() * 4 < dotted.len(),
            "{} vs {}",
            compact.len(),
            dotted.len()
        );
        assert_eq!(compact.parse::<Schedule>(), Ok(long));
        let max = Schedule(vec![u32::MAX, u32::MAX]);
        assert_eq!(max.to_string().parse::<Schedule>(), Ok(max));
    }

    #[test]
    fn dotted_form_is_still_read() {
        assert_eq!(
            "0.0.3.1".parse::<Schedule>(),
            Ok(Schedule(vec![0, 0, 3, 1]))
        );
        assert_eq!("".parse::<Schedule>(), Ok(Schedule(Vec::new())));
    }

    #[test]
    fn bad_text_is_an_error() {
        for bad in ["x.y", "A", "a0", "3a", "a-b", "ZZZZZZZZa", "é"] {
            assert!(bad.parse::<Schedule>().is_err(), "{bad}");
        }
    }
}
