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
