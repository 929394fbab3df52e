//! Root-cause headlines (`checker/src/model/cause.rs`): a finding whose trace shows an `init`
//! count lower than the arrivals of one phase, or a wait whose parity selects the phase before
//! the barrier's first, leads with that cause, in every output format (insta snapshots).

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_phasecheck"))
        .current_dir(root())
        .env("PHASECHECK_STATUS_INTERVAL", "none")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

const COUNT: &str = "tests/fixtures/causes/count_too_low.phase";
const PARITY: &str = "tests/fixtures/causes/parity_off_by_one.phase";
const NAMED: &str = "tests/fixtures/causes/named_arrive_then_sync.phase";

/// The first line of every error's message (the headline).
fn headlines(file: &str) -> Vec<String> {
    let (code, out) = run(&["verify", "--format", "json", file]);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["files"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let m = f["message"].as_str().unwrap();
            format!(
                "{}: {}",
                f["rule"].as_str().unwrap(),
                m.lines().next().unwrap()
            )
        })
        .collect()
}

#[test]
fn a_count_below_the_arrivals_is_said_first() {
    let h = headlines(COUNT);
    assert!(!h.is_empty());
    // Every finding of this file comes from the early completion: each names the init first.
    for line in &h {
        assert!(
            line.contains(
                "`init empty[0], 2` makes each phase of `empty[0]` complete after 2 arrivals, \
                 but 4 threads run `arrive empty[0]` in each round"
            ),
            "{line}"
        );
    }
    // The unobserved-phase finding says who came late.
    assert!(
        h.iter().any(|l| l.starts_with("unobserved-phase:")
            && l.contains("then arrived for that round in phase 1")),
        "{h:#?}"
    );
}

#[test]
fn a_parity_off_by_one_is_said_first() {
    let h = headlines(PARITY);
    let race = h
        .iter()
        .find(|l| l.starts_with("data-race:"))
        .expect("the early read races with the write");
    assert!(
        race.contains(
            "`wait full[0] parity 1` selects the phase before the first of `full[0]`, which counts \
             as complete from init: consumer[0] passed it at once, before the phase 0 that \
             producer[0]'s write completes"
        ),
        "{race}"
    );
    // Where the consumers come late instead, the same parity waits one phase ahead.
    assert!(
        h.iter().any(|l| l.starts_with("deadlock:")
            && l.contains(
                "`wait full[0] parity 1` selects phase 1 of `full[0]`, one ahead: phase 0 \
                 completed, and consumer[0..3] (tid 1..4) never observed it"
            )),
        "{h:#?}"
    );
}

/// FlashInfer's epilogue: the same threads `bar_arrive` and then `bar_sync` on a named barrier
/// whose count is all of them; the race's headline says that a use completed with threads
/// counted twice and others absent, and the help quotes the ISA.
#[test]
fn a_named_barrier_use_completed_by_second_arrivals_is_said_first() {
    let h = headlines(NAMED);
    assert_eq!(h.len(), 1, "{h:#?}");
    assert!(
        h[0].starts_with("data-race: named barrier 1 (count 64) completed a use with ")
            && h[0].contains("counted twice (`bar_arrive`, then `bar_sync`) and without "),
        "{h:#?}"
    );
    let (_, out) = run(&["verify", NAMED]);
    assert!(out.contains("counts again in the same use"), "{out}");
    assert!(out.contains("Care must be taken to keep a warp"), "{out}");
}

/// The same protocol with the count fixed and the parity fixed is `ok`: the causes named are
/// the whole story.
#[test]
fn fixing_the_named_statement_fixes_the_protocol() {
    for (file, from, to) in [
        (COUNT, "init empty[s], 2 ", "init empty[s], NC"),
        (
            PARITY,
            "wait full[s] parity ph ^ 1",
            "wait full[s] parity ph",
        ),
        (NAMED, "bar_arrive 1, 64\n", ""),
    ] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        assert!(text.contains(from), "{file}");
        let dir = std::env::temp_dir().join(format!("phasecheck-causes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fixed = dir.join(PathBuf::from(file).file_name().unwrap());
        std::fs::write(&fixed, text.replacen(from, to, 1)).unwrap();
        let (code, out) = run(&["verify", fixed.to_str().unwrap()]);
        assert_eq!(code, 0, "{file} fixed:\n{out}");
    }
}

#[test]
fn human_report_leads_with_the_cause() {
    let (_, out) = run(&["verify", COUNT]);
    insta::assert_snapshot!("causes_human_count", out);
    let (_, out) = run(&["verify", PARITY]);
    insta::assert_snapshot!("causes_human_parity", out);
}

#[test]
fn github_annotations_lead_with_the_cause() {
    let (_, out) = run(&["lint", "--format", "github", COUNT, PARITY]);
    insta::assert_snapshot!("causes_github", out);
}

#[test]
fn sarif_results_lead_with_the_cause() {
    let (_, out) = run(&["lint", "--format", "sarif", COUNT, PARITY]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // The results (message, locations, related locations); the codeFlows repeat the traces
    // that the human snapshot pins.
    let results: Vec<serde_json::Value> = v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            serde_json::json!({
                "ruleId": r["ruleId"],
                "message": r["message"],
                "locations": r["locations"],
                "relatedLocations": r["relatedLocations"],
            })
        })
        .collect();
    insta::assert_json_snapshot!("causes_sarif", results);
}

#[test]
fn a_count_above_the_arrivals_is_said_first() {
    let h = headlines("tests/fixtures/causes/count_too_high.phase");
    assert!(
        h.iter().any(|l| l.starts_with("deadlock:")
            && l.contains(
                "`init empty[0], 6` makes each phase of `empty[0]` wait for 6 arrivals, but only 4 \
                 threads (consumer[0..3] (tid 1..4)) arrive on it, and all of them arrived in phase 0"
            )),
        "{h:#?}"
    );
}

/// A deadlock's "waits for" names the threads whose arrivals are missing (the two that exited),
/// not the consumers that already arrived in the phase and now wait elsewhere.
#[test]
fn waits_for_names_the_threads_whose_arrivals_are_missing() {
    let (code, out) = run(&["verify", "tests/fixtures/causes/exit_missing.phase"]);
    assert_eq!(code, 1, "{out}");
    let wait = out
        .split("waits for:\n")
        .nth(1)
        .expect("a wait-for list")
        .lines()
        .skip_while(|l| !l.contains("producer[0] (line"))
        .take_while(|l| !l.contains("consumer[0..1] (tid 1..2) (line"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        wait.contains("expected from consumer[2..3] (tid 3..4) (exited at line"),
        "{wait}"
    );
    assert!(!wait.contains("expected from consumer[0..1]"), "{wait}");
}
