//! `phasecheck confirm KERNEL.ptx --app -- ./app ARGS` (issue 27 point 3): each deadlock's
//! counterexample replayed on the real kernel, instrumented, inside the application. Without a
//! GPU: the report's wording keeps the evidence apart (a race is `model only`, a deadlock whose
//! replay never ran is `not reproduced on the real kernel`, nothing is `confirmed`). With
//! `PHASECHECK_GPU_TESTS=1` on a GPU machine,
//! `the_handoff_count_bug_is_confirmed_on_the_real_kernel` compiles
//! instrument/tests/fixtures/handoff.cu with nvcc (and `-DCOUNT_BUG`) and replays its deadlock
//! (`PHASECHECK` may name a prebuilt binary, `PHASECHECK_ROOT` the repository,
//! `PHASECHECK_INJECT` the injection library, `NVCC` the compiler).

mod common;
use common::{bin, nvcc_handoff, root, text};

#[test]
fn confirm_app_needs_a_program_and_a_ptx_file() {
    let o = bin()
        .args(["confirm", "--app"])
        .arg(root().join("ptx/tests/fixtures/double_buffer_parity_bug.ptx"))
        .args(["--block", "64", "--arg", "2=4"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("needs the program to run after `--`"));
    let o = bin()
        .args(["confirm", "--app"])
        .arg(root().join("corpus/patterns/deepgemm/sm90_fp8_gemm_warp_release.phase"))
        .args(["--", "true"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("give its PTX"), "{}", text(&o));
}

/// The parity bug's deadlock is replayed (the program, `true`, never launches the kernel: not
/// reproduced, "not run"); its race is model only. No row says "confirmed", and the note about
/// a stress kernel built from the model is not there (none ran).
#[test]
fn the_report_keeps_real_kernel_and_model_apart() {
    let o = bin()
        .args(["confirm", "--app"])
        .arg(root().join("ptx/tests/fixtures/double_buffer_parity_bug.ptx"))
        .args(["--block", "64", "--arg", "2=4"])
        // Any file passes for the library: `true` loads no CUDA.
        .env("PHASECHECK_INJECT", "/dev/null")
        .args(["--", "true"])
        .output()
        .expect("runs");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("deadlock") && t.contains("not reproduced on the real kernel (not run)"),
        "{t}"
    );
    assert!(
        t.contains("the program never launched double_buffer (nothing was replayed)"),
        "{t}"
    );
    assert!(
        t.contains("data-race") && t.contains("model only (not replayed on the real kernel)"),
        "{t}"
    );
    assert!(!t.contains("confirmed"), "{t}");
    assert!(!t.contains("stress kernel built from the protocol"), "{t}");
}

#[test]
fn the_handoff_count_bug_is_confirmed_on_the_real_kernel() {
    if std::env::var("PHASECHECK_GPU_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set PHASECHECK_GPU_TESTS=1 on a GPU machine to run `confirm --app`");
        return;
    }
    let dir = std::env::temp_dir().join(format!("phasecheck-confirm-app-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (bug_app, bug_ptx) = (dir.join("handoff_bug"), dir.join("handoff_bug.ptx"));
    nvcc_handoff(&["-DCOUNT_BUG"], &bug_app);
    nvcc_handoff(&["-DCOUNT_BUG", "-ptx"], &bug_ptx);
    let o = bin()
        .args([
            "confirm",
            "--app",
            "--wait-bound-ms",
            "50",
            "--watchdog",
            "5",
        ])
        .arg(&bug_ptx)
        .args(["--block", "64", "--arg", "1=4"])
        .arg("--")
        .arg(&bug_app)
        .args(["4", "1"])
        .output()
        .expect("runs");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("confirmed on the real kernel"), "{t}");
    assert!(t.contains("handoff.cu:69"), "{t}");
}
