//! `phasecheck extract` and `phasecheck verify` on `.ptx` files (docs/ptx.md).

use std::process::Command;

fn phasecheck(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_phasecheck"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const DB: &str = "ptx/tests/fixtures/double_buffer.ptx";
const BUG: &str = "ptx/tests/fixtures/double_buffer_parity_bug.ptx";

#[test]
fn extract_writes_a_protocol_that_loads() {
    let dir = std::env::temp_dir().join(format!("pc-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("db.phase");
    let (code, _, err) = phasecheck(&[
        "extract",
        DB,
        "--block",
        "64",
        "--arg",
        "2=4",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("protocol double_buffer"), "{text}");
    // The written protocol is an ordinary .phase file.
    let (code, stdout, err) = phasecheck(&["verify", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(stdout.contains(": ok ("), "{stdout}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn verify_reports_a_ptx_finding_at_its_cuda_line() {
    let (code, stdout, err) = phasecheck(&["verify", DB, "--block", "64", "--arg", "2=4"]);
    assert_eq!(code, 0, "{stdout}{err}");
    let (code, stdout, _) = phasecheck(&["verify", BUG, "--block", "64", "--arg", "2=4"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("findings in the source"), "{stdout}");
    assert!(stdout.contains("double_buffer.cu:82"), "{stdout}");
    // The snippets and trace lines are the extracted protocol's, and say so: line 20 of the
    // protocol is not line 20 of the PTX.
    assert!(
        stdout.contains("double_buffer_parity_bug.ptx (extracted protocol):"),
        "{stdout}"
    );
    assert!(
        stdout.contains("; lines of the extracted protocol):"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("╭─[ptx/tests/fixtures/double_buffer_parity_bug.ptx:"),
        "{stdout}"
    );
    // The replay carries the extraction's options, and runs as printed.
    let replay = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: phasecheck "))
        .expect("a replay line");
    assert!(replay.contains("--block 64,1,1 --arg 2=4"), "{replay}");
    let args: Vec<&str> = replay.split(' ').collect();
    let (code, out, err) = phasecheck(&args);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("replayed trace"), "{out}");
}

#[test]
fn bad_ptx_input_is_exit_2_with_what_to_give() {
    let (code, _, err) = phasecheck(&["extract", DB, "--block", "64"]);
    assert_eq!(code, 2);
    assert!(err.contains("--arg 2=VALUE"), "{err}");
    let (code, _, err) = phasecheck(&["verify", DB]);
    assert_eq!(code, 2);
    assert!(err.contains("--block"), "{err}");
    let (code, _, err) = phasecheck(&["extract", DB, "--block", "0"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn lint_checks_a_ptx_file_with_the_options_of_verify() {
    let (code, stdout, err) = phasecheck(&["lint", DB, "--block", "64", "--arg", "2=4"]);
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(stdout.contains("checked 1 file: 0 errors"), "{stdout}");
    let (code, stdout, err) = phasecheck(&[
        "lint", BUG, "--block", "64", "--arg", "2=4", "--format", "json",
    ]);
    assert_eq!(code, 1, "{stdout}{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    let rules: Vec<&str> = v["files"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(rules.contains(&"deadlock"), "{stdout}");
    // The findings are on the extracted protocol, whose comments name the CUDA lines.
    assert!(
        stdout.contains("ptx/tests/fixtures/double_buffer_parity_bug.ptx"),
        "{stdout}"
    );
    // Without the options the extraction needs: exit 2 with what to give.
    let (code, stdout, _) = phasecheck(&["lint", DB]);
    assert_eq!(code, 2, "{stdout}");
    assert!(
        stdout.contains("cannot extract its protocol") && stdout.contains("--block"),
        "{stdout}"
    );
    let (code, stdout, _) = phasecheck(&["lint", DB, "--block", "64"]);
    assert_eq!(code, 2, "{stdout}");
    assert!(stdout.contains("--arg 2=VALUE"), "{stdout}");
    let (code, stdout, _) = phasecheck(&[
        "lint", DB, "--block", "64", "--arg", "2=4", "--kernel", "nope",
    ]);
    assert_eq!(code, 2, "{stdout}");
    assert!(stdout.contains("nope"), "{stdout}");
}

#[test]
fn confirm_takes_a_ptx_file_with_the_options_of_verify() {
    // Without --block the extraction fails before anything runs: bad input, saying what to give.
    let (code, stdout, _) = phasecheck(&["confirm", BUG, "--format", "json"]);
    assert_eq!(code, 2, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(v["reason"], "bad-input", "{stdout}");
    assert!(v["error"].as_str().unwrap().contains("--block"), "{stdout}");
    // With them, the extracted protocol's findings are replayed, each in a child process that
    // extracts the file again with the same options: on a machine without a GPU that is
    // `no-gpu` (not bad input); with one, a report on the findings.
    let (code, stdout, err) = phasecheck(&[
        "confirm",
        BUG,
        "--block",
        "64",
        "--arg",
        "2=4",
        "--format",
        "json",
        "--seconds",
        "1",
        "--aim-seconds",
        "0",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    if code == 2 {
        assert_eq!(v["reason"], "no-gpu", "{stdout}{err}");
    } else {
        // Exit 1 when a finding is confirmed (on an H200, 2026-11-26: the deadlock and both
        // races of this file were).
        assert!(code == 0 || code == 1, "{stdout}{err}");
        let findings = v["findings"].as_array().expect("findings");
        assert!(!findings.is_empty(), "{stdout}");
        // The replays ran a stress kernel built from the extracted protocol, not the kernel
        // itself: every result says so (issue 27 point 3).
        for f in findings {
            assert_eq!(f["evidence"], "model", "{f}");
        }
        let (_, human, err) = phasecheck(&[
            "confirm",
            BUG,
            "--block",
            "64",
            "--arg",
            "2=4",
            "--seconds",
            "1",
            "--aim-seconds",
            "0",
        ]);
        let rows: Vec<&str> = human
            .lines()
            .filter(|l| l.contains(" confirmed") || l.ends_with("not observed"))
            .collect();
        for row in rows {
            assert!(
                row.ends_with("on a stress kernel built from the model"),
                "{row}\n{human}{err}"
            );
        }
    }
}

/// `lower` and `fuzz` take a `.ptx` file with the same options: `lower` writes the stress
/// kernel of the extracted protocol; `fuzz` extracts, lowers and (without a GPU) says why it
/// cannot run, as one JSON object.
#[test]
fn lower_and_fuzz_take_a_ptx_file() {
    let (code, stdout, err) = phasecheck(&["lower", DB, "--block", "64", "--arg", "2=4"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.contains("Stress kernel for protocol `double_buffer`"),
        "{stdout}"
    );
    let (code, stdout, _) = phasecheck(&["lower", DB]);
    assert_eq!(
        code, 2,
        "without --block the extraction says what to give: {stdout}"
    );
    let (code, stdout, err) = phasecheck(&[
        "fuzz",
        DB,
        "--block",
        "64",
        "--arg",
        "2=4",
        "--seconds",
        "1",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    if code == 2 {
        assert_eq!(v["reason"], "no-gpu", "{stdout}{err}");
    } else {
        assert_eq!(code, 0, "the correct double buffer: {stdout}{err}");
        assert!(v["trials"].as_u64().unwrap_or(0) > 0, "{stdout}");
    }
}
