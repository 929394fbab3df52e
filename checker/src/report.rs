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
    /// A schedule of the portfolio that holds one thread back until nothing else can move
    /// (`hunt::held_back`), shortened and replayed.
    HeldBack,
}

impl FoundBy {
    /// How a report introduces the trace.
    pub fn trace_title(self) -> &'static str {
        match self {
            FoundBy::Search => "shortest interleaving",
            FoundBy::RandomSchedule => "a random schedule, shortened",
            FoundBy::HeldBack => "a schedule holding one thread back, shortened",
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
/// shorter than the list of indices, and as exact. A sweep, three or more consecutive actors
/// taking the same number of steps each in increasing order (what a round of the random
/// schedules over a warp group looks like), is written `first-last` and that number when it
/// is more than 1: `Ey-Ot` is actors 128, 129, ..., 383 once each, 5 characters instead of
/// 512; `a-Ex3` is actors 0 to 127 three steps each. The older form, indices joined by `.`
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

/// The shortest sweep written as `first-last`: two consecutive actors are as short as a
/// sweep (`ab` against `a-b`).
const MIN_SWEEP: usize = 3;

/// The sweep at the start of `steps`: actors `v`, `v + 1`, ... taking `run` steps each (the
/// first actor's run). Returns (number of actors, run). An actor with fewer steps ends the
/// sweep before it; one with more ends it after its first `run` steps (the rest are the next
/// token's).
fn sweep_at(steps: &[u32]) -> (usize, usize) {
    let run_at = |at: usize| steps[at..].iter().take_while(|&&x| x == steps[at]).count();
    let run = run_at(0);
    let mut actors = 1;
    let mut at = run;
    while at < steps.len() && Some(steps[at]) == steps[0].checked_add(actors as u32) {
        let here = run_at(at);
        if here < run {
            break;
        }
        actors += 1;
        at += run;
        if here > run {
            break;
        }
    }
    (actors, run)
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        let mut i = 0;
        while i < self.0.len() {
            let v = self.0[i];
            let (mut actors, run) = sweep_at(&self.0[i..]);
            push_actor(&mut out, v);
            if actors >= MIN_SWEEP {
                out.push('-');
                push_actor(&mut out, v + (actors as u32 - 1));
            } else {
                actors = 1;
            }
            if run > 1 {
                out.push_str(&run.to_string());
            }
            i += actors * run;
        }
        f.write_str(&out)
    }
}

/// One actor of the compact form starting at byte `at`: its index and the byte after it.
fn parse_actor(s: &str, at: usize) -> Result<(u32, usize), String> {
    let bytes = s.as_bytes();
    let mut i = at;
    let mut v: u64 = 0;
    while i < bytes.len() && bytes[i].is_ascii_uppercase() {
        v = v * 26 + u64::from(bytes[i] - b'A');
        i += 1;
        if v > u64::from(u32::MAX) {
            return Err(format!("`{}` is not an actor index", &s[at..i]));
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
    let v = u32::try_from(v).map_err(|_| format!("`{}` is not an actor index", &s[at..i]))?;
    Ok((v, i))
}

/// The run count at byte `*at` (1 when no digits follow), moving `*at` past it.
fn parse_run(s: &str, at: &mut usize) -> Result<usize, String> {
    let bytes = s.as_bytes();
    let digits = *at;
    while *at < bytes.len() && bytes[*at].is_ascii_digit() {
        *at += 1;
    }
    if *at == digits {
        return Ok(1);
    }
    s[digits..*at].parse().map_err(|_| too_long())
}

fn too_long() -> String {
    "a schedule must have fewer than 2^32 steps per actor".to_string()
}

/// The compact form: `[A-Z]*[a-z][0-9]*` tokens (an actor and its run) and
/// `[A-Z]*[a-z]-[A-Z]*[a-z][0-9]*` tokens (a sweep and the run of each of its actors).
fn parse_compact(s: &str) -> Result<Vec<u32>, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let (first, end) = parse_actor(s, i)?;
        i = end;
        // An actor and its run is a sweep of one actor; `first-last` names the last.
        let mut last = first;
        if i < bytes.len() && bytes[i] == b'-' {
            (last, i) = parse_actor(s, i + 1)?;
            if last <= first {
                return Err(format!(
                    "`{}`: a sweep goes from a lower actor to a higher one",
                    &s[start..i]
                ));
            }
        }
        let each = parse_run(s, &mut i)?;
        if each == 0 {
            return Err(format!("`{}`: a run of 0 steps", &s[start..i]));
        }
        let actors = (last - first) as usize + 1;
        if actors
            .checked_mul(each)
            .and_then(|n| n.checked_add(out.len()))
            .is_none_or(|n| n > u32::MAX as usize)
        {
            return Err(too_long());
        }
        for actor in first..=last {
            out.extend(std::iter::repeat_n(actor, each));
        }
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
    fn sweeps_are_one_token() {
        // Rounds of a random schedule over a warp group: actors 128..=383 once each, twice,
        // then actor 383 three more times and actor 5 twice.
        let mut steps: Vec<u32> = (128..=383).chain(128..=383).collect();
        steps.extend([383, 383, 383, 5, 5, 6, 8]);
        let s = Schedule(steps);
        let text = s.to_string();
        assert_eq!(text, "Ey-OtEy-OtOt3f2gi");
        assert_eq!(text.parse::<Schedule>(), Ok(s));
        // Two consecutive actors stay two tokens; a sweep needs three.
        assert_eq!(Schedule(vec![7, 8]).to_string(), "hi");
        assert_eq!(Schedule(vec![7, 8, 9]).to_string(), "h-j");
        assert_eq!("h-i".parse::<Schedule>(), Ok(Schedule(vec![7, 8])));
        // A sweep where each actor runs the same number of steps; a longer last run goes on
        // in the next token, a shorter one ends the sweep.
        let mut steps: Vec<u32> = (0..128).flat_map(|a| [a, a, a]).collect();
        steps.extend([128, 128, 128, 128, 129, 130, 130]);
        let s = Schedule(steps);
        let text = s.to_string();
        assert_eq!(text, "a-Ey3Ey-FaFa");
        assert_eq!(text.parse::<Schedule>(), Ok(s));
    }

    proptest::proptest! {
        /// Any schedule prints to text that reads back as itself, with runs and sweeps mixed
        /// (small actor indices so that both occur often).
        #[test]
        fn compact_form_round_trips(steps in proptest::collection::vec(0u32..6, 0..60),
                                    base in proptest::prop_oneof![proptest::strategy::Just(0u32), 20u32..800, proptest::strategy::Just(u32::MAX - 6)]) {
            let s = Schedule(steps.iter().map(|v| v + base).collect());
            let text = s.to_string();
            proptest::prop_assert_eq!(text.parse::<Schedule>(), Ok(s), "{}", text);
        }
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
        for bad in [
            "x.y",
            "A",
            "a0",
            "3a",
            "-a",
            "a-",
            "b-a",
            "c-c",
            "a-c0",
            "a-C",
            "ZZZZZZZZa",
            "é",
        ] {
            assert!(bad.parse::<Schedule>().is_err(), "{bad}");
        }
    }
}
