//! `--max-memory`: one budget for a whole run of `verify`, `lint` or `test`, shared by the
//! searches that run at once (api/src/budget.rs). A search that would need more than its share is
//! inconclusive (exit 3), and the message names the flag that raises it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("phasecheck-mem-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const OK: &str = "protocol ok
block 2
mbarrier b
if tid == 0 { init b, 2 }
syncthreads
arrive b
wait b parity 0
";

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_phasecheck"))
        .current_dir(dir)
        .env("PHASECHECK_STATUS_INTERVAL", "none")
        .env_remove("NO_COLOR")
        .args(args)
        .output()
        .expect("phasecheck runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A budget too small for any search: every file is inconclusive, and the message says that
/// the searches at once share `--max-memory` and how to give each more.
#[test]
fn lint_with_a_tiny_budget_is_inconclusive_and_names_the_flag() {
    let dir = scratch("lint");
    std::fs::write(dir.join("a.phase"), OK).unwrap();
    std::fs::write(dir.join("b.phase"), OK).unwrap();
    let out = run(
        &dir,
        &["lint", "--max-memory", "1K", "-j", "2", "-A", "perf", "."],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    insta::assert_snapshot!("lint_tiny_budget_two_jobs", stdout(&out));
    let out = run(&dir, &["lint", "--max-memory", "1K", "-j", "1", "a.phase"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("max-memory (1 KiB) reached; raise it with --max-memory"),
        "{text}"
    );
    // The default budget checks them.
    let out = run(&dir, &["lint", "."]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn verify_and_test_share_the_flag() {
    let dir = scratch("verify");
    std::fs::write(dir.join("a.phase"), format!("{OK}expect ok\n")).unwrap();
    let out = run(&dir, &["verify", "a.phase", "--max-memory", "1K"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("max-memory (1 KiB) reached; raise it with --max-memory"),
        "{}",
        stdout(&out)
    );
    let out = run(&dir, &["test", "a.phase", "--max-memory", "1K"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out)
            .contains("inconclusive: max-memory (1 KiB) reached; raise it with --max-memory"),
        "{}",
        stdout(&out)
    );
    let out = run(&dir, &["test", "a.phase"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

/// Sizes are `4G`, `512M`, `64K` or bytes; anything else is bad input, named.
#[test]
fn bad_sizes_are_clear_errors() {
    let dir = scratch("sizes");
    std::fs::write(dir.join("a.phase"), OK).unwrap();
    for cmd in ["verify", "lint", "test"] {
        for bad in ["4X", "0", "-1G", "lots"] {
            let flag = format!("--max-memory={bad}");
            let out = run(&dir, &[cmd, "a.phase", &flag]);
            assert_eq!(out.status.code(), Some(2), "{cmd} {bad}");
            let err = stderr(&out);
            assert!(err.contains("--max-memory"), "{cmd} {bad}: {err}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
    for good in ["512M", "4G", "4GiB", "1073741824"] {
        let out = run(&dir, &["lint", "a.phase", "--max-memory", good]);
        assert_eq!(out.status.code(), Some(0), "{good}: {}", stderr(&out));
    }
    let out = run(&dir, &["lint", "a.phase", "-j", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// `[limits] max-memory` in phasecheck.toml bounds one file's search (within its share), as a
/// size with a unit or in bytes.
#[test]
fn config_max_memory_takes_sizes() {
    let dir = scratch("config");
    std::fs::write(dir.join("a.phase"), OK).unwrap();
    std::fs::write(
        dir.join("phasecheck.toml"),
        "[limits]\nmax-memory = \"1K\"\n",
    )
    .unwrap();
    let out = run(&dir, &["lint", "."]);
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    assert!(stdout(&out).contains("--max-memory"), "{}", stdout(&out));
    std::fs::write(
        dir.join("phasecheck.toml"),
        "[limits]\nmax-memory = \"4 gigs\"\n",
    )
    .unwrap();
    let out = run(&dir, &["lint", "."]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("limits.max-memory"),
        "{}",
        stderr(&out)
    );
}
