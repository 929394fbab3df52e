//! `phasecheck verify` on files that do not load: exit code 2, miette text on stderr (no
//! colour when not on a terminal), `--format json` with file/line/column/code/message.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("protocols/tests/fixtures")
        .join(rel)
        .to_str()
        .expect("utf-8 path")
        .to_string()
}

fn phasecheck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_phasecheck"))
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .expect("phasecheck runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp_file(name: &str, bytes: &[u8]) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("phasecheck-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write");
    let s = path.to_str().expect("utf-8").to_string();
    (dir, s)
}

#[test]
fn load_errors_exit_2_with_codes_spans_and_help() {
    let bad = fixture("bad/many_errors.phase");
    let o = phasecheck(&["verify", &bad]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    for code in [
        "E0305", "E0206", "E0203", "E0212", "E0101", "E0201", "E0503",
    ] {
        assert!(err.contains(code), "missing {code}:\n{err}");
    }
    assert!(err.contains("many_errors.phase:10:13"), "{err}");
    assert!(err.contains("help: did you mean `slot`?"), "{err}");
    assert!(err.contains("8 load errors"), "{err}");
    // Not a terminal: no ANSI colour codes.
    assert!(!err.contains('\u{1b}'), "colour escapes in piped output");
}

#[test]
fn json_lists_every_error_with_position() {
    let bad = fixture("bad/many_errors.phase");
    let o = phasecheck(&["verify", "--format", "json", &bad]);
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON on stdout");
    assert_eq!(v["files"][0]["verdict"], "error");
    let errors = v["files"][0]["errors"].as_array().expect("errors array");
    assert_eq!(errors.len(), 8);
    let first = &errors[0];
    assert_eq!(first["code"], "E0305");
    assert_eq!(first["line"], 4);
    assert_eq!(first["column"], 7);
    assert!(
        first["file"]
            .as_str()
            .expect("file")
            .ends_with("many_errors.phase")
    );
    assert!(first["message"].as_str().expect("message").contains("2048"));
    assert!(
        o.stderr.is_empty(),
        "JSON mode prints nothing else: {}",
        stderr(&o)
    );
}

#[test]
fn unknown_param_override_is_a_load_error() {
    let good = fixture("lang/double_buffer.phase");
    let o = phasecheck(&["verify", "--param", "KK=3", &good]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("E0301"), "{err}");
    assert!(err.contains("did you mean `K`?"), "{err}");

    let o = phasecheck(&["verify", "--format", "json", "--param", "KK=3", &good]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let errors = &v["files"][0]["errors"];
    assert_eq!(errors[0]["code"], "E0301");
    assert!(errors[0]["line"].is_null(), "no place in the file");
}

#[test]
fn bad_block_size_from_override() {
    // `block` depends on a parameter; the override makes it invalid.
    let (dir, path) = temp_file(
        "blk.phase",
        b"protocol blk\nparam W = 4\nblock 32 * W\nsyncthreads\n",
    );
    let o = phasecheck(&["verify", "-p", "W=64", &path]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("block size 2048 is outside 1..=1024"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unreadable_and_non_utf8_files_exit_2() {
    let o = phasecheck(&["verify", "/nonexistent/file.phase"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read"));

    let (dir, path) = temp_file("bin.phase", &[0xff, 0xfe, 0x00, 0x80]);
    let o = phasecheck(&["verify", &path]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("E0004") && err.contains("not UTF-8"), "{err}");
    assert!(err.contains("UTF-16"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file that is not UTF-8 is a load error like any other (E0004): the first bad byte's line
/// and column, a span on it, a help line; in every command that reads files.
#[test]
fn non_utf8_file_names_the_first_bad_byte() {
    let (dir, path) = temp_file(
        "latin1.phase",
        b"protocol p\nblock 32\nmbarrier m  # the caf\xe9's barrier\nsyncthreads\n",
    );
    let o = phasecheck(&["verify", &path]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o).replace(&path, "latin1.phase");
    insta::assert_snapshot!("non_utf8_human", err);

    let o = phasecheck(&["verify", "--format", "json", &path]);
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    // The documented shape (docs/ci.md, "JSON output"): one entry per file in `files`, a file
    // that does not load with `verdict` "error" and its `errors`.
    let file = &v["files"][0];
    assert_eq!(file["verdict"], "error", "{v}");
    assert_eq!(v["exit_code"], 2, "{v}");
    let e = &file["errors"][0];
    assert_eq!(e["code"], "E0004");
    assert_eq!(
        (e["line"].as_u64(), e["column"].as_u64()),
        (Some(3), Some(22))
    );
    assert!(e["message"].as_str().expect("message").contains("0xE9"));

    for cmd in [&["lint"][..], &["test"][..], &["lower"][..]] {
        let mut args = cmd.to_vec();
        args.push(&path);
        let o = phasecheck(&args);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}");
        let all = format!("{}{}", stderr(&o), String::from_utf8_lossy(&o.stdout));
        assert!(all.contains("E0004"), "{cmd:?}: {all}");
        assert!(all.contains(":3"), "{cmd:?} names the line: {all}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn several_files_report_all_and_exit_2() {
    let a = fixture("bad/unknown_object.phase");
    let b = fixture("bad/buffer_as_barrier.phase");
    let o = phasecheck(&["verify", &a, &b]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("unknown_object.phase") && err.contains("buffer_as_barrier.phase"));
    let o = phasecheck(&["verify", "--format", "json", &a, &b]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["files"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["summary"]["bad_input"], 2);
    assert_eq!(v["exit_code"], 2);
}
