//! The corpus as a data-driven test: every `expect` line of every `corpus/**/*.phase` file is
//! checked (adding a file needs no code), with `corpus/known-gaps.txt` as the list of expected
//! failures. A listed gap that starts passing fails the test, so the list can only shrink; a
//! file that does not load is always a failure.
//!
//! The judging logic is the one `phasecheck test` uses (api/src/expectations.rs).

use expectations::{KnownGaps, Status};
use phasecheck_api::expectations;
use std::path::{Path, PathBuf};

const CORPUS: &str = "corpus";
const GAPS: &str = "corpus/known-gaps.txt";

fn corpus_files() -> Vec<PathBuf> {
    corpus_targets().into_iter().map(|t| t.path).collect()
}

fn corpus_targets() -> Vec<expectations::Target> {
    assert!(
        Path::new(CORPUS).is_dir(),
        "run from the repository root (cargo test does)"
    );
    let targets = expectations::discover(&[PathBuf::from(CORPUS)]).expect("corpus is readable");
    assert!(!targets.is_empty(), "no .phase files under {CORPUS}/");
    targets
}

fn known_gaps() -> KnownGaps {
    let text = std::fs::read_to_string(GAPS).unwrap_or_default();
    KnownGaps::parse(&text).unwrap_or_else(|e| panic!("{GAPS}: {e}"))
}

/// The `expect` lines of a file, read textually (no loader needed).
fn expect_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| strip_comment(l).trim().to_string())
        .filter(|l| l.starts_with("expect ") || l == "expect")
        .map(|l| expectations::normalize(&l))
        .collect()
}

fn strip_comment(line: &str) -> &str {
    let cut = [line.find('#'), line.find("//")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(line.len());
    &line[..cut]
}

fn options() -> checker::CheckOptions {
    checker::CheckOptions {
        // Keeps a blown-up search from running for minutes: it turns inconclusive (a failure).
        max_states: 3_000_000,
        ..checker::CheckOptions::default()
    }
}

/// How long a known-gap line may run before it counts as still failing (the gaps are mostly
/// searches that today's checker cannot finish; when one finishes and passes within this time,
/// the test asks for its removal).
const GAP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A known-gap line, run as `phasecheck test FILE:LINE --known-gaps` in a child process that is
/// killed at [`GAP_TIMEOUT`].
struct GapRun {
    place: String,
    child: Option<std::process::Child>,
    problem: Option<String>,
}

fn start_gap_runs(gaps: &KnownGaps) -> Vec<GapRun> {
    let mut runs = Vec::new();
    for gap in gaps.entries.iter().filter(|g| g.text.starts_with("expect")) {
        let line = std::fs::read_to_string(&gap.file).ok().and_then(|text| {
            text.lines().enumerate().find_map(|(i, l)| {
                (expectations::normalize(strip_comment(l)) == gap.text).then_some(i + 1)
            })
        });
        let Some(line) = line else {
            runs.push(GapRun {
                place: format!("{GAPS}:{}", gap.line),
                child: None,
                problem: Some(format!(
                    "`{}: {}` matches no expect line of the corpus: remove it",
                    gap.file, gap.text
                )),
            });
            continue;
        };
        let place = format!("{}:{line}", gap.file);
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_phasecheck"))
            .args(["test", &place, "--known-gaps", GAPS, "-j", "1"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("phasecheck runs");
        runs.push(GapRun {
            place,
            child: Some(child),
            problem: None,
        });
    }
    runs
}

/// Wait for the gap runs (killing those past the deadline); the problems found.
fn finish_gap_runs(runs: Vec<GapRun>, started: std::time::Instant) -> Vec<String> {
    use std::io::Read;
    let mut problems = Vec::new();
    for mut run in runs {
        if let Some(p) = run.problem.take() {
            problems.push(p);
        }
        let Some(mut child) = run.child.take() else {
            continue;
        };
        let status = loop {
            match child.try_wait().expect("child status") {
                Some(status) => break Some(status),
                None if started.elapsed() > GAP_TIMEOUT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                None => std::thread::sleep(std::time::Duration::from_millis(50)),
            }
        };
        let mut out = String::new();
        if let Some(mut stdout) = child.stdout.take() {
            let _ = stdout.read_to_string(&mut out);
        }
        match status {
            // Still failing within the time: an expected failure.
            None => eprintln!("  gap {}: still running after {GAP_TIMEOUT:?}", run.place),
            Some(s) if s.success() => eprintln!("  gap {}: still fails as listed", run.place),
            Some(_) => problems.push(format!(
                "known gap {}: {}",
                run.place,
                out.lines()
                    .filter(|l| l.starts_with("FAIL"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        }
    }
    problems
}

#[test]
fn every_expect_line_of_the_corpus_holds() {
    let targets = corpus_targets();
    let gaps = known_gaps();
    let jobs = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let start = std::time::Instant::now();
    // Known gaps are skipped here and run afterwards in child processes (they may be searches
    // that do not finish).
    let is_gap = |case: &expectations::Case| gaps.find(case).is_some();
    let results = expectations::check_files(&targets, &options(), jobs, &is_gap);
    let mut failures = Vec::new();
    let mut passed = 0;
    let mut slowest: Vec<(u64, String)> = Vec::new();
    for file in &results {
        match &file.cases {
            Err(why) => failures.push(format!("{}: does not load: {why}", file.file)),
            Ok(cases) => {
                for r in cases {
                    slowest.push((r.elapsed_ms, format!("{}:{}", r.case.file, r.case.line)));
                    match expectations::status(r, &gaps) {
                        Status::Pass => passed += 1,
                        Status::KnownGap(why) | Status::Fail(why) => failures.push(format!(
                            "{}:{} `{}`: {why}",
                            r.case.file, r.case.line, r.case.text
                        )),
                    }
                }
            }
        }
    }
    let gap_start = std::time::Instant::now();
    let gap_runs = start_gap_runs(&gaps);
    let gap_count = gap_runs.len();
    failures.extend(finish_gap_runs(gap_runs, gap_start));
    slowest.sort_by(|a, b| b.cmp(a));
    eprintln!(
        "corpus: {} files, {passed} passed, {} failed, {gap_count} known gaps, {:.1} s",
        targets.len(),
        failures.len(),
        start.elapsed().as_secs_f64()
    );
    for (ms, place) in slowest.iter().take(5) {
        eprintln!("  slowest: {place} {ms} ms");
    }
    assert!(
        failures.is_empty(),
        "{} corpus expectation(s) failed:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

#[test]
fn every_corpus_file_says_what_it_models_and_has_expect_lines() {
    for path in corpus_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let first = text.lines().next().unwrap_or("").trim_start();
        assert!(
            first.starts_with('#') || first.starts_with("//"),
            "{}: must start with a comment saying what it models and where it comes from",
            path.display()
        );
        assert!(
            !expect_lines(&text).is_empty(),
            "{}: has no expect line",
            path.display()
        );
    }
}

#[test]
fn docs_corpus_md_lists_every_file() {
    let doc = std::fs::read_to_string("docs/corpus.md").expect("docs/corpus.md exists");
    let mut missing = Vec::new();
    for path in corpus_files() {
        let name = expectations::display_name(&path);
        let short = name.strip_prefix("corpus/").unwrap_or(&name);
        if !doc.contains(&format!("`{short}`")) && !doc.contains(&format!("`{name}`")) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "docs/corpus.md does not list: {}",
        missing.join(", ")
    );
}

/// The significant lines of a protocol: no comments, no blank lines, no `expect` lines.
fn significant_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| expectations::normalize(strip_comment(l)))
        .filter(|l| !l.is_empty() && !l.starts_with("expect ") && !l.starts_with("protocol "))
        .collect()
}

/// The lines of a protocol without full-line comments, blank lines, `expect` and `protocol`
/// lines, trailing comments kept.
fn code_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(expectations::normalize)
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with('#')
                && !l.starts_with("//")
                && !l.starts_with("expect ")
                && !l.starts_with("protocol ")
        })
        .collect()
}

/// True when `a` and `b` are equal after dropping at most one line from each: one line
/// changed, added, removed or moved.
fn differ_in_one_line(a: &[String], b: &[String]) -> bool {
    if a == b {
        return false;
    }
    let drop = |v: &[String], i: Option<usize>| -> Vec<String> {
        v.iter()
            .enumerate()
            .filter(|(j, _)| Some(*j) != i)
            .map(|(_, l)| l.clone())
            .collect()
    };
    let options = |n: usize| std::iter::once(None).chain((0..n).map(Some));
    for i in options(a.len()) {
        let a2 = drop(a, i);
        for j in options(b.len()) {
            if a2 == drop(b, j) {
                return true;
            }
        }
    }
    false
}

/// The fail and pass files of a hazard folder: `fail.phase`/`pass.phase` or `*-fail.phase`/
/// `*-pass.phase`.
fn hazard_pair(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut fail = None;
    let mut pass = None;
    for entry in std::fs::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        let name = path.file_name()?.to_str()?.to_string();
        if name == "fail.phase" || name.ends_with("-fail.phase") {
            fail.get_or_insert(path);
        } else if name == "pass.phase" || name.ends_with("-pass.phase") {
            pass.get_or_insert(path);
        }
    }
    Some((fail?, pass?))
}

#[test]
fn every_rule_has_a_hazard_pair_that_differs_in_one_line() {
    let mut problems = Vec::new();
    for rule in checker::rules::ALL {
        let dir = Path::new(CORPUS).join("hazards").join(rule.name);
        let Some((fail, pass)) = hazard_pair(&dir) else {
            problems.push(format!(
                "{}: no fail.phase/pass.phase pair for rule `{}`",
                dir.display(),
                rule.name
            ));
            continue;
        };
        let fail_text = std::fs::read_to_string(&fail).unwrap();
        let pass_text = std::fs::read_to_string(&pass).unwrap();
        let names_rule = expect_lines(&fail_text)
            .iter()
            .any(|l| l.split_whitespace().nth(2) == Some(rule.name));
        if !names_rule {
            problems.push(format!(
                "{}: no expect line names `{}`",
                fail.display(),
                rule.name
            ));
        }
        if !expect_lines(&pass_text)
            .iter()
            .any(|l| l.starts_with("expect ok"))
        {
            problems.push(format!("{}: no `expect ok` line", pass.display()));
        }
        // Comments aside; for a pair whose difference is a comment (a suppression), with the
        // trailing comments kept.
        let one_line = differ_in_one_line(
            &significant_lines(&fail_text),
            &significant_lines(&pass_text),
        ) || differ_in_one_line(&code_lines(&fail_text), &code_lines(&pass_text));
        if !one_line {
            problems.push(format!(
                "{} and {} must differ in exactly one line (comments and expect lines aside)",
                fail.display(),
                pass.display()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `expect ok` does not rule out a warning, so for each pair the pass twin is also checked
/// for the absence of its rule (with the parameters of its first `expect ok` line).
#[test]
fn pass_twins_do_not_trigger_their_rule() {
    let gaps = known_gaps();
    let mut problems = Vec::new();
    for rule in checker::rules::ALL {
        let dir = Path::new(CORPUS).join("hazards").join(rule.name);
        let Some((_, pass)) = hazard_pair(&dir) else {
            continue; // reported by the pair test
        };
        let name = expectations::display_name(&pass);
        let text = std::fs::read_to_string(&pass).unwrap();
        let file = protocols::SourceFile::new(name.clone(), text);
        let program = match protocols::load(&file, &[]) {
            Ok(p) => p,
            Err(e) => {
                problems.push(format!(
                    "{name}: does not load: {}",
                    expectations::describe_load_errors(&e)
                ));
                continue;
            }
        };
        let Some(ok) = program
            .expects
            .iter()
            .find(|e| e.verdict == protocols::ir::ExpectVerdict::Ok)
        else {
            continue; // reported by the pair test
        };
        let program = match protocols::load(&file, &ok.overrides) {
            Ok(p) => p,
            Err(e) => {
                problems.push(format!(
                    "{name}: does not load: {}",
                    expectations::describe_load_errors(&e)
                ));
                continue;
            }
        };
        let report = match expectations::check_caught(&file, &program, &options()) {
            Ok(r) => r,
            Err(why) => {
                problems.push(format!("{name}: {why}"));
                continue;
            }
        };
        let text = format!("no {}", rule.name);
        let case = expectations::Case {
            file: name.clone(),
            line: 0,
            text: text.clone(),
        };
        let triggered = report.findings.iter().any(|f| f.rule.name == rule.name);
        match (triggered, gaps.find(&case)) {
            (false, None) => {}
            (true, Some(_)) => {}
            (true, None) => {
                problems.push(format!("{name}: the pass twin triggers `{}`", rule.name))
            }
            (false, Some(g)) => problems.push(format!(
                "{GAPS}:{}: `{name}: {text}` passes now: remove it",
                g.line
            )),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn one_line_difference_is_detected() {
    let v = |s: &str| -> Vec<String> { s.split(',').map(str::to_string).collect() };
    assert!(differ_in_one_line(&v("a,b,c"), &v("a,x,c")));
    assert!(differ_in_one_line(&v("a,b,c"), &v("a,c")));
    assert!(differ_in_one_line(&v("a,b,c"), &v("a,c,b")));
    assert!(!differ_in_one_line(&v("a,b,c"), &v("a,b,c")));
    assert!(!differ_in_one_line(&v("a,b,c"), &v("x,b,y")));
}

mod judging {
    use super::expectations::{KnownGaps, judge};
    use checker::{Finding, FoundBy, Report, Schedule, Severity, Stats, Verdict, rules};
    use protocols::Span;
    use protocols::ir::{Expect, ExpectVerdict};

    fn finding(name: &str, severity: Severity) -> Finding {
        Finding {
            rule: rules::find(name).unwrap(),
            severity,
            message: String::new(),
            span: Span::new(0, 1),
            labels: Vec::new(),
            help: None,
            trace: Vec::new(),
            waits_for: Vec::new(),
            schedule: Schedule::default(),
            found_by: FoundBy::Search,
        }
    }

    fn report(verdict: Verdict, findings: Vec<Finding>) -> Report {
        Report {
            verdict,
            findings,
            stats: Stats::default(),
            incomplete: None,
        }
    }

    fn expect(verdict: ExpectVerdict, rule: Option<&str>) -> Expect {
        Expect {
            verdict,
            rule: rule.map(str::to_string),
            overrides: Vec::new(),
            span: Span::new(0, 0),
        }
    }

    #[test]
    fn ok_means_no_error_level_finding() {
        let warn = report(
            Verdict::Ok,
            vec![finding("parity-not-bit", Severity::Warning)],
        );
        assert!(judge(&expect(ExpectVerdict::Ok, None), &warn).is_ok());
        let bad = report(Verdict::Hazard, vec![finding("deadlock", Severity::Error)]);
        assert!(judge(&expect(ExpectVerdict::Ok, None), &bad).is_err());
    }

    #[test]
    fn verdicts_match_class_and_rule() {
        let r = report(
            Verdict::Hazard,
            vec![finding("stale-token", Severity::Error)],
        );
        assert!(judge(&expect(ExpectVerdict::Ub, None), &r).is_ok());
        assert!(judge(&expect(ExpectVerdict::Ub, Some("stale-token")), &r).is_ok());
        assert!(judge(&expect(ExpectVerdict::Ub, Some("reinit")), &r).is_err());
        assert!(judge(&expect(ExpectVerdict::Deadlock, None), &r).is_err());
        // A rule of another class than the verdict is a mistake in the expect line.
        let e = judge(&expect(ExpectVerdict::Race, Some("stale-token")), &r).unwrap_err();
        assert!(e.contains("class ub"), "{e}");
    }

    #[test]
    fn warnings_need_a_warning_of_that_rule() {
        let r = report(
            Verdict::Ok,
            vec![finding("parity-not-bit", Severity::Warning)],
        );
        assert!(judge(&expect(ExpectVerdict::Warning, Some("parity-not-bit")), &r).is_ok());
        assert!(
            judge(
                &expect(ExpectVerdict::Warning, Some("unified-pipeline")),
                &r
            )
            .is_err()
        );
        assert!(judge(&expect(ExpectVerdict::Warning, None), &r).is_err());
    }

    #[test]
    fn unknown_rules_and_inconclusive_searches_fail() {
        let r = report(Verdict::Hazard, vec![finding("deadlock", Severity::Error)]);
        let e = judge(&expect(ExpectVerdict::Deadlock, Some("no-such-rule")), &r).unwrap_err();
        assert!(e.contains("unknown rule `no-such-rule`"), "{e}");
        let inc = report(Verdict::Inconclusive, Vec::new());
        for v in [
            ExpectVerdict::Ok,
            ExpectVerdict::Deadlock,
            ExpectVerdict::Ub,
            ExpectVerdict::Race,
        ] {
            assert!(judge(&expect(v, None), &inc).is_err());
        }
    }

    #[test]
    fn known_gaps_parse_and_need_reasons() {
        let g = KnownGaps::parse("# comment\n\ncorpus/a.phase: expect  ok with K = 1  # why\n")
            .unwrap();
        assert_eq!(g.entries.len(), 1);
        assert_eq!(g.entries[0].file, "corpus/a.phase");
        assert_eq!(g.entries[0].text, "expect ok with K = 1");
        assert!(KnownGaps::parse("corpus/a.phase: expect ok\n").is_err());
        assert!(KnownGaps::parse("no colon here # why\n").is_err());
    }
}

/// The `phasecheck explain` text of each rule shows its hazard pair: the `# Example` block is
/// the fail file and the `# Fix` block the pass file (comments aside), so every doc example is
/// itself checked by the corpus test.
#[test]
fn rule_docs_show_their_hazard_pair() {
    let mut problems = Vec::new();
    for rule in checker::rules::ALL {
        let dir = Path::new(CORPUS).join("hazards").join(rule.name);
        let Some((fail, pass)) = hazard_pair(&dir) else {
            continue; // reported by the pair test
        };
        for section in ["# What", "# Why", "# Example", "# Fix", "# Source"] {
            if !rule.doc.contains(section) {
                problems.push(format!("{}: doc has no `{section}` section", rule.name));
            }
        }
        if !rule.doc.contains("```phase") {
            // A rule documented by another part of the project (e.g. `unused-suppression`).
            continue;
        }
        let blocks: Vec<String> = rule
            .doc
            .split("```phase\n")
            .skip(1)
            .filter_map(|b| b.split("```").next())
            .map(str::to_string)
            .collect();
        for (i, file) in [fail, pass].iter().enumerate() {
            let text = std::fs::read_to_string(file).unwrap();
            let shown = blocks.get(i).map(|b| significant_lines(b));
            if shown.as_ref() != Some(&significant_lines(&text)) {
                problems.push(format!(
                    "{}: ```phase block {} of the doc is not {}",
                    rule.name,
                    i + 1,
                    file.display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
