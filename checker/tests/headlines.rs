//! Every rule's headline names the statement to change: for each rule, its hazard file in
//! `corpus/hazards/RULE/` is checked (search, lints, then suppressions and headlines as every
//! command applies them) and the first line of that rule's finding must quote the statement
//! given here.

use std::path::PathBuf;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus/hazards")
}

/// The first lines of the findings of `rule` in its hazard file (`file` under its folder).
fn headlines(rule: &str, file: &str) -> Vec<String> {
    let path = corpus().join(rule).join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let source = protocols::SourceFile::new(path.display().to_string(), text);
    let program = protocols::load(&source, &[]).unwrap();
    let mut report = checker::check(&program, &checker::CheckOptions::default());
    checker::lints::suppress::apply_to_report(&program, &source, &mut report);
    report
        .findings
        .iter()
        .filter(|f| f.rule.name == rule)
        .map(|f| f.message.lines().next().unwrap_or("").to_string())
        .collect()
}

/// Rule, its hazard file, and the quoted statement its headline must contain.
const EXPECTED: &[(&str, &str, &str)] = &[
    ("after-quit", "fail.phase", "`quit`"),
    (
        "arrive-on-zero-pending",
        "fail.phase",
        "`arrive_expect_tx full, 1024`",
    ),
    ("barrier-divergence", "fail.phase", "`syncthreads`"),
    ("count-range", "fail.phase", "`init empty, CONSUMERS / 128`"),
    ("data-race", "fail.phase", "`read data`"),
    ("deadlock", "fail.phase", "`arrive_drop`"),
    ("drop-to-zero", "fail.phase", "`arrive_drop bar`"),
    (
        "expect-after-completion",
        "fail.phase",
        "`expect_tx full, 1024`",
    ),
    (
        "expect-without-arrival",
        "fail.phase",
        "`expect_tx full, 1024`",
    ),
    ("init-not-visible", "fail.phase", "`wait bar parity 0`"),
    ("inval-in-use", "fail.phase", "`inval bar`"),
    ("missing-proxy-fence", "fail.phase", "`tma_store c_smem[j]`"),
    ("model-error", "fail.phase", "`init full[s], 1`"),
    ("named-barrier-count", "fail.phase", "`bar_sync 1, 2`"),
    ("named-barrier-rearrive", "fail.phase", "`bar_sync 1, NW`"),
    (
        "parity-not-bit",
        "fail.phase",
        "`wait full[k % STAGES] parity (k / STAGES) % STAGES`",
    ),
    ("pipeline-role", "fail.phase", "`consumer_wait`"),
    ("reinit", "fail.phase", "`init bar, 1`"),
    ("remote-cta-exited", "fail.phase", "`arrive empty @ 0`"),
    ("remote-op", "fail.phase", "`wait"),
    ("same-value-store", "fail.phase", "`write flag`"),
    ("proxy-fence-after-sync", "fail.phase", "`tma_store o_smem`"),
    ("stale-phase", "fail.phase", "`wait full parity"),
    ("stale-token", "fail.phase", "`wait bar token"),
    ("syncthreads-would-do", "fail.phase", "`syncthreads`"),
    ("tx-range", "fail.phase", "`arrive_expect_tx"),
    ("unified-pipeline", "fail.phase", "`pipeline pipe"),
    ("unobserved-phase", "fail.phase", "`arrive bar`"),
    ("unused-suppression", "fail.phase", "`stale-token`"),
    ("use-before-init", "fail.phase", "`arrive bar`"),
    ("wait-phase-behind", "fail.phase", "`wait full parity"),
    ("wait-prior-over-8", "fail.phase", "`consumer_wait_prior`"),
    ("warp-entanglement", "fail.phase", "`arrive`"),
];

#[test]
fn every_rule_has_an_expected_headline() {
    for rule in checker::rules::ALL {
        assert!(
            EXPECTED.iter().any(|e| e.0 == rule.name),
            "no headline expectation for {}",
            rule.name
        );
    }
}

#[test]
fn every_headline_names_the_statement_to_change() {
    let mut wrong = Vec::new();
    for &(rule, file, statement) in EXPECTED {
        let h = headlines(rule, file);
        if h.is_empty() {
            wrong.push(format!("{rule}: no finding in {file}"));
        } else if !h.iter().any(|l| l.contains(statement)) {
            wrong.push(format!("{rule}: {statement} not in {h:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
