//! `phasecheck fuzz --app` (issue 27): the real kernel, instrumented, swapped into the
//! application. Without a GPU only the command line's errors are tested. With
//! `PHASECHECK_GPU_TESTS=1` on a GPU machine, `the_real_kernel_runs_clean_and_its_count_bug_is_stuck`
//! compiles instrument/tests/fixtures/handoff.cu with nvcc (and `-DCOUNT_BUG`), fuzzes both and
//! checks the verdicts and the stuck threads' source lines (`PHASECHECK` may name a prebuilt
//! binary, `PHASECHECK_ROOT` the repository, `PHASECHECK_INJECT` the injection library).

mod common;
use common::{bin, nvcc_handoff, root, text};
use std::path::PathBuf;

fn fixture_ptx() -> PathBuf {
    root().join("ptx/tests/fixtures/double_buffer.ptx")
}

#[test]
fn app_mode_needs_a_program() {
    let o = bin()
        .args(["fuzz", "--app"])
        .arg(fixture_ptx())
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("needs the program to run after `--`"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_program_without_app_is_refused() {
    let o = bin()
        .arg("fuzz")
        .arg(fixture_ptx())
        .args(["--", "./app"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("only with --app"), "{}", text(&o));
}

#[test]
fn an_unknown_kernel_is_named() {
    let o = bin()
        .args(["fuzz", "--app", "--kernel", "nope"])
        .arg(fixture_ptx())
        .args(["--", "true"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no kernel `nope`; its kernels are double_buffer"),
        "{}",
        text(&o)
    );
}

#[test]
fn max_ptx_version_lowers_the_copy_for_the_drivers_jit() {
    // Triton 3.9's PTX says 9.4; a CUDA 13.0 driver JITs up to 9.0.
    let ptx = root().join("ptx/tests/fixtures/triton/matmul_ws.ptx");
    let kept = std::env::temp_dir().join(format!("phasecheck-maxv-{}.ptx", std::process::id()));
    let o = bin()
        .args(["fuzz", "--app", "--max-ptx-version", "9.0", "--keep-ptx"])
        .arg(&kept)
        .arg(&ptx)
        .args(["--", "true"])
        .output()
        .expect("runs");
    let t = text(&o);
    assert!(
        t.contains(".version 9.4 is lowered to 9.0 for the driver's JIT"),
        "{t}"
    );
    let copy = std::fs::read_to_string(&kept).expect("the copy is kept");
    let _ = std::fs::remove_file(&kept);
    assert!(copy.contains(".version 9.0\n") && !copy.contains(".version 9.4"));
    let o = bin()
        .args(["fuzz", "--app", "--max-ptx-version", "nine"])
        .arg(&ptx)
        .args(["--", "true"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not a PTX ISA version"), "{}", text(&o));
}

#[test]
fn a_program_that_never_launches_the_kernel_is_not_run() {
    // `true` makes no launch: nothing was tested, and the report says so (exit 2), never clean.
    let o = bin()
        .args(["fuzz", "--app"])
        .arg(fixture_ptx())
        .args(["--", "true"])
        .output()
        .expect("runs");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    if t.contains("the injection library") {
        eprintln!("the injection library is not built (cargo build -p capture-inject): {t}");
        return;
    }
    assert!(t.contains("result: not run"), "{t}");
}

#[test]
fn the_real_kernel_runs_clean_and_its_count_bug_is_stuck() {
    if std::env::var("PHASECHECK_GPU_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set PHASECHECK_GPU_TESTS=1 on a GPU machine to run `fuzz --app`");
        return;
    }
    let dir = std::env::temp_dir().join(format!("phasecheck-fuzz-app-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (app, ptx) = (dir.join("handoff"), dir.join("handoff.ptx"));
    let (bug_app, bug_ptx) = (dir.join("handoff_bug"), dir.join("handoff_bug.ptx"));
    let (sync_app, sync_ptx) = (dir.join("handoff_sync"), dir.join("handoff_sync.ptx"));
    nvcc_handoff(&[], &app);
    nvcc_handoff(&["-ptx"], &ptx);
    nvcc_handoff(&["-DCOUNT_BUG"], &bug_app);
    nvcc_handoff(&["-DCOUNT_BUG", "-ptx"], &bug_ptx);
    nvcc_handoff(&["-DSYNC_BUG"], &sync_app);
    nvcc_handoff(&["-DSYNC_BUG", "-ptx"], &sync_ptx);

    let o = bin()
        .args(["fuzz", "--app", "--repeat", "50"])
        .arg(&ptx)
        .arg("--")
        .arg(&app)
        .args(["64", "2"])
        .output()
        .expect("runs");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("100 launch(es) of the instrumented kernel (800 blocks)"),
        "{t}"
    );
    assert!(t.contains("result: clean"), "{t}");
    assert!(t.contains("handoff: 2 launches, 0 wrong sums"), "{t}");

    let o = bin()
        .args(["fuzz", "--app", "--wait-bound-ms", "50"])
        .arg(&bug_ptx)
        .arg("--")
        .arg(&bug_app)
        .args(["64", "1"])
        .output()
        .expect("runs");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("result: STUCK: 1 launch(es) with stuck threads"),
        "{t}"
    );
    // The consumer warp at its full-barrier wait, the producer warp at its empty-barrier wait,
    // in all 8 blocks, each at its line of handoff.cu.
    assert!(
        t.contains("stuck at handoff.cu:57 (via line ")
            && t.contains("256 thread(s) in 8 block(s), tid 0-31"),
        "{t}"
    );
    assert!(
        t.contains("stuck at handoff.cu:69 (via line ")
            && t.contains("256 thread(s) in 8 block(s), tid 32-63"),
        "{t}"
    );

    // A `bar.sync` cannot be bounded: the producer hangs there, the watchdog ends the batch,
    // and the consumer's records (its wait bound expired first) are read while the kernel runs.
    let o = bin()
        .args(["fuzz", "--app", "--wait-bound-ms", "50", "--watchdog", "3"])
        .arg(&sync_ptx)
        .arg("--")
        .arg(&sync_app)
        .args(["64", "1"])
        .output()
        .expect("runs");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("result: HANG"), "{t}");
    assert!(t.contains("a batch that never finished (watchdog)"), "{t}");
    assert!(t.contains("run 0: exit 124"), "{t}");
    assert!(
        t.contains("stuck at handoff.cu:69 (via line ") && t.contains("tid 32-63"),
        "{t}"
    );
}
