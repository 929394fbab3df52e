//! The typed `phasecheck_api::confirm` on a GPU (with `PHASECHECK_GPU_TESTS=1` on a GPU machine;
//! skipped otherwise, where the doc test of `confirm_text` shows the `NoGpu` error): a finding
//! replayed in this process and confirmed on a stress kernel built from the model, and a file
//! without error-level findings fuzzed instead.

use phasecheck_api::campaign::confirm::report::{Evidence, Outcome};
use phasecheck_api::{ConfirmOptions, confirm};
use std::path::Path;

fn gpu_tests() -> bool {
    std::env::var("PHASECHECK_GPU_TESTS").is_ok_and(|v| v == "1")
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../gpu-harness/tests/fixtures")
        .join(name)
}

fn options() -> ConfirmOptions {
    let mut o = ConfirmOptions {
        params: vec![("K".into(), 2)],
        ..ConfirmOptions::default()
    };
    o.settings.seconds = 2.0;
    o.settings.aim_seconds = 0.0;
    o.settings.fuzz_seconds = 1.0;
    o
}

#[test]
fn typed_confirm_confirms_the_wrong_parity_deadlock_on_the_model() {
    if !gpu_tests() {
        eprintln!("skipped: set PHASECHECK_GPU_TESTS=1 on a GPU machine to run");
        return;
    }
    let report = confirm(&fixture("db_wrong_parity.phase"), &options()).expect("a report");
    assert!(report.device.contains("(device 0)"), "{report:?}");
    let deadlock = report
        .findings
        .iter()
        .find(|f| f.class == "deadlock")
        .unwrap_or_else(|| panic!("a deadlock finding: {report:?}"));
    assert_eq!(deadlock.outcome, Outcome::Confirmed, "{deadlock:?}");
    assert_eq!(deadlock.evidence, Evidence::Model);
    assert_eq!(
        deadlock.outcome_text(),
        "confirmed on a stress kernel built from the model"
    );
    assert!(report.shown());
}

#[test]
fn typed_confirm_fuzzes_a_file_without_findings() {
    if !gpu_tests() {
        eprintln!("skipped: set PHASECHECK_GPU_TESTS=1 on a GPU machine to run");
        return;
    }
    let report = confirm(&fixture("double_buffer.phase"), &options()).expect("a report");
    assert!(report.findings.is_empty(), "{report:?}");
    let fuzz = report.fuzz.as_ref().expect("fuzzed instead");
    assert!(fuzz.trials > 0 && fuzz.clean(), "{fuzz:?}");
    assert!(!report.shown() && !report.context_lost());
}
