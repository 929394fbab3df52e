//! Progress of long searches on stderr when it is not a terminal (a pipe, a CI log): a plain
//! status line per running search every `PHASECHECK_STATUS_INTERVAL` (default 5 s), for
//! `verify`, `lint` and `test`; nothing for quick searches, nothing on stdout.

use std::path::PathBuf;
use std::process::{Command, Output};

/// A search that runs for seconds: 32 consumers polling two barriers each while the TMA copies
/// land, at the file's declared size (over a million states, about 30 s; its `expect` lines use
/// small sizes; `--max-time` stops it). `cuda::pipeline` at 128 threads used to be this slow.
const SLOW: &str = "corpus/production/poll_both_barriers.phase";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str], interval: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_phasecheck"));
    c.current_dir(root()).args(args);
    match interval {
        Some(i) => c.env("PHASECHECK_STATUS_INTERVAL", i),
        None => c.env_remove("PHASECHECK_STATUS_INTERVAL"),
    };
    c.output().expect("phasecheck runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The status lines of stderr, checked for their parts: `phasecheck CMD: NAME: N states,
/// depth D, memory X of Y, T s` (or `starting, T s` before the first report).
fn status_lines(err: &str, command: &str, name: &str) -> Vec<String> {
    let prefix = format!("phasecheck {command}: {name}: ");
    let lines: Vec<String> = err
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .map(str::to_string)
        .collect();
    for l in &lines {
        let rest = &l[prefix.len()..];
        assert!(
            rest.starts_with("starting, ")
                || (rest.contains(" states, depth ") && rest.contains(", memory ")),
            "{l}"
        );
        assert!(rest.contains(" s"), "{l}");
    }
    lines
}

#[test]
fn verify_prints_status_lines_at_the_interval() {
    let out = run(&["verify", SLOW, "--max-time", "3s"], Some("300ms"));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    let lines = status_lines(&stderr, "verify", SLOW);
    assert!(lines.len() >= 3, "{stderr}");
    assert!(
        lines.iter().any(|l| l.contains(" states, depth ")),
        "{stderr}"
    );
    assert!(!stdout.contains("phasecheck verify:"), "{stdout}");
    // A quick search prints none at the default interval.
    let out = run(&["verify", "corpus/hazards/deadlock/fail.phase"], None);
    assert!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));
}

#[test]
fn lint_and_test_print_status_lines_too() {
    let out = run(
        &[
            "lint",
            "--no-config",
            SLOW,
            "--max-time",
            "2s",
            "--format",
            "json",
        ],
        Some("300ms"),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let lines = status_lines(&stderr, "lint", SLOW);
    assert!(lines.len() >= 2, "{stderr}");
    // The JSON on stdout is untouched.
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["summary"]["inconclusive"], 1);

    // `test`: one line per running expect line, named FILE:LINE.
    let dir = std::env::temp_dir().join(format!("phasecheck-status-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("slow.phase");
    let text_of_slow = std::fs::read_to_string(root().join(SLOW)).unwrap();
    let lines_before = text_of_slow.lines().count();
    std::fs::write(&file, format!("{text_of_slow}expect ok\n")).unwrap();
    let name = format!("{}:{}", file.display(), lines_before + 1);
    let out = run(&["test", &name, "--max-time", "2s"], Some("300ms"));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}{stderr}", text(&out.stdout));
    let lines = status_lines(&stderr, "test", &name);
    assert!(lines.len() >= 2, "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_interval_can_be_turned_off_and_a_bad_one_is_an_error() {
    let out = run(&["verify", SLOW, "--max-time", "1s"], Some("none"));
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));
    let out = run(&["lint", "--no-config", SLOW], Some("often"));
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("PHASECHECK_STATUS_INTERVAL") && err.contains("not a time limit"),
        "{err}"
    );
}
