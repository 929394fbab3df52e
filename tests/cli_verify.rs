//! `phasecheck verify`: exit codes, the JSON contract (pinned by an insta snapshot) and the
//! human report (snapshot), on small fixtures.

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_phasecheck"))
}

fn write(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("phasecheck-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const OK: &str = "protocol ok
block 2
mbarrier b
if tid == 0 { init b, 2 }
syncthreads
arrive b
wait b parity 0
";

const DEADLOCK: &str = "protocol dl
block 2
mbarrier b
buffer x
role producer when tid == 0 { init b, 1 }
syncthreads
role producer when tid == 0 { write x }
role consumer when tid == 1 { wait b parity 0; read x }
";

fn run(args: &[&str]) -> (i32, String, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn exit_code_0_when_clean() {
    let p = write("ok.phase", OK);
    let (code, out, _) = run(&["verify", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(": ok ("), "{out}");
}

#[test]
fn exit_code_1_on_findings() {
    let p = write("dl.phase", DEADLOCK);
    let (code, out, _) = run(&["verify", p.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("deadlock(PC100)"), "{out}");
}

#[test]
fn exit_code_2_on_bad_input() {
    let p = write("bad.phase", "protocol\n");
    let (code, _, _) = run(&["verify", p.to_str().unwrap()]);
    assert_eq!(code, 2);
    let (code, _, _) = run(&["verify", "/nonexistent/x.phase"]);
    assert_eq!(code, 2);
    let q = write("ok2.phase", OK);
    let (code, _, err) = run(&["verify", q.to_str().unwrap(), "--replay", "x.y"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn exit_code_3_when_inconclusive() {
    let p = write("ok3.phase", OK);
    let (code, out, _) = run(&["verify", p.to_str().unwrap(), "--max-states", "1"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("inconclusive"), "{out}");
}

/// A search that outlives `--max-time` ends inconclusive (exit 3) with the limit and what was
/// covered, instead of running on: the full-size language.md §1 double buffer at K = 8 is far
/// beyond a second.
#[test]
fn max_time_ends_a_long_search_inconclusive() {
    let (code, out, err) = run(&[
        "verify",
        "corpus/guide/double_buffer.phase",
        "--max-time",
        "1s",
    ]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("max-time (1 s) reached"), "{out}");
    assert!(
        out.contains("covered: all interleavings up to depth"),
        "{out}"
    );
    let (code, _, err) = run(&[
        "verify",
        "corpus/guide/double_buffer.phase",
        "--max-time",
        "soon",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a time limit"), "{err}");
}

/// `# phasecheck: allow(rule) reason` works in `verify` as in `lint`: the deadlock is
/// suppressed (exit 0), and a suppression that silences nothing is a warning.
#[test]
fn inline_suppressions_apply_in_verify() {
    let allowed = DEADLOCK.replace(
        "role consumer when tid == 1 { wait b parity 0; read x }",
        "role consumer when tid == 1 {\n  wait b parity 0  # phasecheck: allow(deadlock) modelled elsewhere\n  read x\n}",
    );
    let p = write("allowed.phase", &allowed);
    let (code, out, _) = run(&["verify", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("deadlock(PC100)"), "{out}");
    let unused = OK.replace(
        "wait b parity 0",
        "wait b parity 0  # phasecheck: allow(stale-token) old",
    );
    let q = write("unused.phase", &unused);
    let (code, out, _) = run(&["verify", q.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("unused-suppression"), "{out}");
}

fn redact(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(a) = v.as_array_mut() {
        for x in a {
            *x = redact(x.take());
        }
        return v;
    }
    if let Some(stats) = v.get_mut("stats") {
        for k in ["elapsed_ms", "peak_memory_bytes"] {
            stats[k] = serde_json::json!(0);
        }
    }
    if let Some(f) = v.get_mut("file") {
        *f = serde_json::json!("FILE");
    }
    v
}

#[test]
fn json_contract() {
    let p = write("dl_json.phase", DEADLOCK);
    let (code, out, _) = run(&["verify", p.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for k in [
        "schema", "file", "protocol", "params", "verdict", "findings", "stats",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    let f = &v["findings"][0];
    for k in [
        "rule",
        "class",
        "severity",
        "message",
        "span",
        "trace",
        "waits_for",
    ] {
        assert!(f.get(k).is_some(), "finding lacks {k}");
    }
    insta::assert_json_snapshot!("verify_json_deadlock", redact(v));
    // Several files give an array.
    let q = write("ok_json.phase", OK);
    let (_, out, _) = run(&[
        "verify",
        p.to_str().unwrap(),
        q.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
}

#[test]
fn human_report() {
    let p = write("dl_human.phase", DEADLOCK);
    let (_, out, _) = run(&["verify", p.to_str().unwrap()]);
    let out = out.replace(p.to_str().unwrap(), "FILE");
    insta::assert_snapshot!("verify_human_deadlock", out);
}

#[test]
fn dot_and_replay() {
    let p = write("dl_dot.phase", DEADLOCK);
    let dot = p.with_extension("dot");
    let (code, out, _) = run(&[
        "verify",
        p.to_str().unwrap(),
        "--dot",
        dot.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    let g = std::fs::read_to_string(&dot).unwrap();
    assert!(g.starts_with("digraph"), "{g}");
    assert!(g.contains("consumer[0] (blocked)"), "{g}");
    // The printed schedule replays to the same deadlock.
    let sched = out
        .lines()
        .find_map(|l| l.split("--replay ").nth(1))
        .expect("a replay line")
        .trim()
        .to_string();
    let (code, out, err) = run(&["verify", p.to_str().unwrap(), "--replay", &sched]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("replayed trace"), "{out}");
    assert!(out.contains("deadlock"), "{out}");
}
