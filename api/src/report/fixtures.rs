//! The same few results rendered in all four lint formats (insta snapshots): a deadlock with
//! its interleaving and wait-for edges, a race with a second labelled access, a perf warning,
//! a search that stopped early, a hazard confirmed by a random schedule before the search
//! ended, a file that failed to load and one that could not be read.
//!
//! The findings are built by hand (not by the checker) so that the formats are pinned down
//! independently of the search.

use super::files::{self, FileResult, Outcome, Summary};
use crate::args::Exit;
use checker::rules;
use checker::{
    Actor, Finding, FoundBy, Incomplete, Label, Party, PartyStatus, Report, Schedule, Severity,
    Stats, TraceStep, Verdict, WaitFor,
};
use protocols::{SourceFile, Span};

const PIPE: &str = "protocol pipe\nblock 64\nmbarrier full\nbuffer slot\n\
if tid == 0 { init full, 1 }\nsyncthreads\n\
role producer when tid == 0 {\n  write slot\n}\n\
role consumer when warp == 1 {\n  wait full parity 0\n  read slot\n}\n";

/// The span of the first occurrence of `needle` in `text`.
fn span_of(text: &str, needle: &str) -> Span {
    let start = text.find(needle).expect("needle in fixture") as u32;
    Span::new(start, start + needle.len() as u32)
}

fn step(thread: &str, tid: u32, op: &str, state: &str) -> TraceStep {
    TraceStep {
        actor: Actor::Thread {
            kernel: 0,
            cta: 0,
            tid,
        },
        thread: thread.to_string(),
        repeat: 1,
        span: span_of(PIPE, op),
        op: op.to_string(),
        state: state.to_string(),
    }
}

fn finding(rule: &'static checker::Rule, severity: Severity, message: &str, at: &str) -> Finding {
    Finding {
        rule,
        severity,
        message: message.to_string(),
        span: span_of(PIPE, at),
        labels: Vec::new(),
        help: None,
        trace: Vec::new(),
        waits_for: Vec::new(),
        schedule: Schedule::default(),
        found_by: FoundBy::Search,
    }
}

/// The results every format snapshot renders.
pub fn results() -> Vec<FileResult> {
    let file = SourceFile::new("corpus/pipe.phase", PIPE);
    let program = protocols::load(&file, &[]).expect("fixture loads");

    let mut deadlock = finding(
        &rules::deadlock::RULE,
        Severity::Error,
        "consumer[0..31] wait forever on `full`: phase 0 never completes",
        "wait full parity 0",
    );
    deadlock.trace = vec![
        step("t0", 0, "init full, 1", "full: phase 0, pending 1, tx 0"),
        step("t0", 0, "syncthreads", "block: 64 of 64 arrived"),
        step(
            "consumer[0]",
            32,
            "wait full parity 0",
            "full: phase 0, pending 1, tx 0",
        ),
    ];
    deadlock.trace[1].repeat = 64;
    deadlock.waits_for = vec![WaitFor {
        thread: "consumer[0]".into(),
        span: span_of(PIPE, "wait full parity 0"),
        waits_on: "full @ phase 0 (parity 0)".into(),
        missing: "1 arrival missing".into(),
        expected_from: vec![Party {
            thread: "producer[0]".into(),
            status: PartyStatus::Finished,
            span: Some(span_of(PIPE, "write slot")),
        }],
        blocked: vec![(0, 32)],
    }];
    deadlock.schedule = Schedule(vec![0, 0, 1]);
    deadlock.help = Some("the producer never arrives on `full`: add `arrive full`".into());

    let mut race = finding(
        &rules::data_race::RULE,
        Severity::Error,
        "`read slot` by consumer[0] races with `write slot` by producer[0]",
        "read slot",
    );
    race.labels = vec![Label {
        span: span_of(PIPE, "write slot"),
        message: "the conflicting write, not ordered before the read".into(),
    }];
    race.trace = vec![step(
        "producer[0]",
        0,
        "write slot",
        "slot: written by producer[0]",
    )];
    race.schedule = Schedule(vec![0]);

    let perf = finding(
        &rules::warp_entanglement::RULE,
        Severity::Warning,
        "`arrive` on barrier `full` runs on 16 lanes of warp 0 after a condition that splits that warp",
        "role consumer when warp == 1",
    );

    let checked = FileResult {
        origin: None,
        file: file.clone(),
        outcome: Outcome::Checked {
            program: Box::new(program.clone()),
            report: Report {
                verdict: Verdict::Hazard,
                findings: vec![deadlock, race.clone(), perf],
                stats: Stats {
                    states: 42,
                    transitions: 97,
                    elapsed_ms: 0,
                    peak_memory_bytes: 0,
                },
                incomplete: None,
            },
        },
    };
    let big = SourceFile::new("corpus/big pipe.phase", PIPE);
    let inconclusive = FileResult {
        origin: None,
        file: big,
        outcome: Outcome::Checked {
            program: Box::new(program.clone()),
            report: Report {
                verdict: Verdict::Inconclusive,
                findings: Vec::new(),
                stats: Stats::default(),
                incomplete: Some(Incomplete {
                    reason: "max-states (1000); raise it with [limits] max-states".into(),
                    covered: "all interleavings up to depth 12".into(),
                }),
            },
        },
    };
    // A hazard that a random schedule of the portfolio confirmed before the search ended.
    let mut confirmed_race = race.clone();
    confirmed_race.found_by = FoundBy::RandomSchedule;
    // A folded step of threads that are not contiguous, and a long state: both wrap.
    let mut spread = step(
        &(0..8)
            .map(|i| format!("consumer[{}]", 4 * i))
            .collect::<Vec<_>>()
            .join(", "),
        32,
        "wait full parity 0",
        "full: phase 1, pending 1, tx 0; observed by consumer[0], consumer[4], consumer[8], consumer[12], consumer[16]",
    );
    spread.repeat = 8;
    confirmed_race.trace.insert(0, spread);
    confirmed_race.schedule = Schedule(vec![1, 1, 1, 1, 1, 1, 1, 1, 0]);
    let confirmed = FileResult {
        origin: None,
        file: SourceFile::new("corpus/wide pipe.phase", PIPE),
        outcome: Outcome::Checked {
            program: Box::new(program),
            report: Report {
                verdict: Verdict::Hazard,
                findings: vec![confirmed_race],
                stats: Stats::default(),
                incomplete: Some(Incomplete {
                    reason: "stopped: 40 random schedules confirmed an error; --exhaustive searches every interleaving".into(),
                    covered: "the exhaustive search's first states, then random schedules".into(),
                }),
            },
        },
    };
    let bad = SourceFile::new("corpus/bad.phase", "protocol bad\nblock 0\n");
    let load_failed = FileResult {
        origin: None,
        outcome: Outcome::LoadFailed(protocols::load(&bad, &[]).expect_err("block 0 is rejected")),
        file: bad,
    };
    let unreadable = FileResult {
        origin: None,
        file: SourceFile::new("corpus/gone.phase", ""),
        outcome: Outcome::Unreadable("cannot read it: No such file or directory".into()),
    };
    vec![checked, inconclusive, confirmed, load_failed, unreadable]
}

fn exit(results: &[FileResult]) -> Exit {
    Summary::of(results).exit(false)
}

#[test]
fn human_snapshot() {
    let r = results();
    insta::assert_snapshot!(files::human(&r, exit(&r), false));
}

#[test]
fn human_lines_fit_the_pipe_width_except_replays() {
    let r = results();
    let human = files::human(&r, exit(&r), false);
    for line in human.lines() {
        assert!(
            line.trim_start().starts_with("replay: ")
                || line.chars().count() <= super::human::PIPE_WIDTH,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    // Nothing was cut: the long thread list and state are there, word for word.
    let joined = human.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(joined.contains("consumer[24], consumer[28]"), "{human}");
    assert!(
        joined.contains("observed by consumer[0], consumer[4]"),
        "{human}"
    );
}

#[test]
fn wrap_breaks_at_spaces_and_keeps_long_words() {
    let w = super::human::wrap("  ", "    ", "aa bb cc dddddddddd", 8);
    assert_eq!(w, "  aa bb\n    cc\n    dddddddddd\n");
}

#[test]
fn replay_commands_quote_file_names_for_the_shell() {
    assert_eq!(super::sarif::shell_word("corpus/a.phase"), "corpus/a.phase");
    assert_eq!(
        super::sarif::shell_word("my dir/a.phase"),
        "'my dir/a.phase'"
    );
    assert_eq!(super::sarif::shell_word("it's.phase"), "'it'\\''s.phase'");
}

#[test]
fn human_colour_only_when_asked() {
    let r = results();
    assert!(!files::human(&r, exit(&r), false).contains('\x1b'));
    assert!(files::human(&r, exit(&r), true).contains("\x1b[1;31m"));
}

#[test]
fn json_snapshot() {
    let r = results();
    insta::assert_json_snapshot!(files::json(&r, exit(&r)));
}

#[test]
fn sarif_snapshot() {
    let r = results();
    let mut v = super::sarif::render(&r, exit(&r) as u8);
    // The rule catalogue is snapshotted by `phasecheck rules`; keep this snapshot to results.
    v["runs"][0]["tool"]["driver"]["rules"] =
        serde_json::json!("<every rule: docs/rules.md, pinned by tests/cli_lint.rs>");
    insta::assert_json_snapshot!(v);
}

#[test]
fn github_snapshot() {
    let r = results();
    insta::assert_snapshot!(super::github::render(&r));
}

#[test]
fn every_finding_appears_in_every_format_with_its_rule() {
    let r = results();
    let human = files::human(&r, exit(&r), false);
    let json = files::json(&r, exit(&r)).to_string();
    let sarif = super::sarif::render(&r, exit(&r) as u8);
    let github = super::github::render(&r);
    let Outcome::Checked { report, .. } = &r[0].outcome else {
        unreachable!()
    };
    let sarif_ids: Vec<&str> = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["ruleId"].as_str().unwrap())
        .collect();
    for f in &report.findings {
        assert!(human.contains(f.rule.name), "human lacks {}", f.rule.name);
        assert!(json.contains(f.rule.name), "json lacks {}", f.rule.name);
        assert!(
            sarif_ids.contains(&f.rule.code),
            "sarif lacks {}",
            f.rule.code
        );
        assert!(
            github.contains(&format!("title={} {}", f.rule.code, f.rule.name)),
            "github lacks {}",
            f.rule.name
        );
    }
    assert_eq!(exit(&r), Exit::BadInput);
}
