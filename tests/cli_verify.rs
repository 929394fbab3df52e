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
/// covered, instead of running on: the full-size language.md §1 double buffer at K = 8 without
/// the partial-order reduction (129 interleaving consumers) is far beyond a second. (With it,
/// the file verifies in under a second: docs/performance.md.)
#[test]
fn max_time_ends_a_long_search_inconclusive() {
    let (code, out, err) = run(&[
        "verify",
        "corpus/guide/double_buffer.phase",
        "--no-por",
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

/// Every thread stores one flag (a data race that the file allows), then a producer/consumer
/// ring runs and the producer finally waits on a barrier nobody arrives on: a deadlock that
/// only the end of the search reaches.
pub const HIDDEN_DEADLOCK: &str = "protocol hidden_deadlock
param NC = 4
param K = 4
block 1 + NC
mbarrier full[2]
mbarrier empty[2]
mbarrier never
buffer slot[2]
buffer flag
if tid == 0 {
  for s in 0..2 {
    init full[s], 1
    init empty[s], NC
  }
  init never, 1
}
syncthreads
write flag   # phasecheck: allow(data-race) every thread stores the same flag
role producer when tid == 0 {
  for k in 0..K {
    let s = k % 2
    wait empty[s] parity ((k / 2) % 2) ^ 1
    write slot[s]
    arrive full[s]
  }
  wait never parity 0
}
role consumer when tid >= 1 {
  for k in 0..K {
    let s = k % 2
    wait full[s] parity (k / 2) % 2
    read slot[s]
    arrive empty[s]
  }
}
";

/// An allowed finding does not stop the search: the data race, found first, is suppressed,
/// and the deadlock behind it is still reported. (Before, the search stopped 5 000 states after
/// the race, the suppression dropped it, and the report was `inconclusive` with nothing in
/// it.) Without the reductions, so that the deadlock lies beyond those 5 000 states.
#[test]
fn an_allowed_finding_does_not_stop_the_search() {
    let p = write("hidden.phase", HIDDEN_DEADLOCK);
    let (code, out, _) = run(&["verify", "--no-por", "--no-symmetry", p.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("deadlock(PC100)"), "{out}");
    assert!(!out.contains("data-race(PC"), "{out}");
    assert!(out.contains(": hazard ("), "{out}");
}

/// A suppression after another comment on the statement (an extracted protocol's own
/// `# k.cu:12  PTX 40`) applies; one that silences nothing there is reported; a
/// `phasecheck: allow` in the middle of a comment's prose is a load error, never ignored.
#[test]
fn a_suppression_after_another_comment_applies() {
    let racy = "protocol racy
block 2
buffer x
write x";
    let after = format!("{racy}    # k.cu:12  PTX 40  # phasecheck: allow(data-race) same value\n");
    let p = write("after.phase", &after);
    let (code, out, _) = run(&["verify", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("data-race(PC"), "{out}");
    assert!(!out.contains("unused-suppression"), "{out}");
    // The same with nothing to silence.
    let unused = after.replace("write x", "compute");
    let q = write("after_unused.phase", &unused);
    let (code, out, _) = run(&["verify", q.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("unused-suppression"), "{out}");
    // Without a `#` of its own: not a suppression, and said so.
    let prose = format!("{racy}    # k.cu:12 phasecheck: allow(data-race)\n");
    let r = write("prose.phase", &prose);
    let (code, out, err) = run(&["verify", r.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(format!("{out}{err}").contains("E0504"), "{out}{err}");
}

/// A search that stops early (after a real error) cannot tell that a suppression is stale: its
/// `unused-suppression` says how far the search went, and the exhaustive search finds what the
/// suppression silences.
#[test]
fn an_unused_suppression_after_an_early_stop_says_so() {
    // Thread 0's arrive on a barrier nobody initialised is UB at once; the data race on `x`
    // (allowed) comes only deep in the search.
    let src = "protocol late_race
param N = 20
block 4
mbarrier b
global flag
buffer x
if tid == 0 { arrive b }
for i in 0..N + tid { store_release flag scope gpu }
write x  # phasecheck: allow(data-race) every thread stores the same value
";
    let p = write("late_race.phase", src);
    let (code, out, _) = run(&["verify", p.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("use-before-init(PC"), "{out}");
    assert!(
        out.contains("unused suppression, as far as the search went"),
        "{out}"
    );
    let (code, out, _) = run(&["verify", "--exhaustive", p.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(!out.contains("unused"), "{out}");
    assert!(!out.contains("data-race(PC"), "{out}");
}

fn redact(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(a) = v.as_array_mut() {
        for x in a {
            *x = redact(x.take());
        }
        return v;
    }
    if let Some(files) = v.get_mut("files") {
        *files = redact(files.take());
    }
    if v.get("version").is_some() {
        v["version"] = serde_json::json!("VERSION");
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

/// `--format json` has one shape for any number of files: the object `lint --format json`
/// prints, with one entry per file in `files` (docs/ci.md).
#[test]
fn json_contract() {
    let p = write("dl_json.phase", DEADLOCK);
    let (code, out, _) = run(&["verify", p.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for k in ["schema", "tool", "files", "summary", "exit_code"] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert_eq!(v["files"].as_array().unwrap().len(), 1);
    assert_eq!(v["exit_code"], 1);
    let file = &v["files"][0];
    for k in [
        "schema", "file", "protocol", "params", "verdict", "findings", "stats",
    ] {
        assert!(file.get(k).is_some(), "missing {k}");
    }
    let f = &file["findings"][0];
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
    // Several files, one that cannot be read: the same object, one entry each.
    let q = write("ok_json.phase", OK);
    let (code, out, _) = run(&[
        "verify",
        p.to_str().unwrap(),
        q.to_str().unwrap(),
        "/nonexistent/x.phase",
        "--format",
        "json",
    ]);
    assert_eq!(code, 2);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 3);
    assert_eq!(files[1]["verdict"], "ok");
    assert_eq!(files[2]["verdict"], "error");
    assert_eq!(v["summary"]["bad_input"], 1);
    assert_eq!(v["exit_code"], 2);
}

/// The deadlock's headline names the root cause first: the thread that exited without
/// `arrive_drop` and the barrier that still counts it.
#[test]
fn human_report_names_the_exited_thread() {
    let src = "protocol dx
block 3
barrier bar
if tid == 0 { init bar, 3 }
syncthreads
for i in 0..3 {
  if tid == 2 && i == 1 { exit }
  let t = arrive bar
  wait bar token t
}
";
    let p = write("dl_exit.phase", src);
    let (_, out, _) = run(&["verify", p.to_str().unwrap()]);
    let out = out.replace(p.to_str().unwrap(), "FILE");
    insta::assert_snapshot!("verify_human_deadlock_exited", out);
}

/// A named barrier in a block of whole warps: a count that is not a multiple of 32, and a
/// statement that only one lane of each warp runs (`elect`).
#[test]
fn human_report_named_barrier_warps() {
    let p = write("nb_count.phase", "protocol nb\nblock 64\nbar_sync 1, 40\n");
    let (code, out, _) = run(&["verify", p.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    let out = out.replace(p.to_str().unwrap(), "FILE");
    insta::assert_snapshot!("verify_human_named_barrier_count", out);
    let p = write(
        "nb_elect.phase",
        "protocol nb\nblock 64\nelect { bar_sync 1, 64 }\n",
    );
    let (code, out, _) = run(&["verify", p.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    let out = out.replace(p.to_str().unwrap(), "FILE");
    insta::assert_snapshot!("verify_human_named_barrier_elect", out);
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
    // The role index with the thread's place in the block (issue 23, point 5).
    assert!(
        g.contains("consumer[0] (tid 1: warp 0 lane 1) (blocked)"),
        "{g}"
    );
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

/// A scratch folder of its own.
fn folder(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("phasecheck-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `verify DIR` checks every .phase file below DIR, sorted (it used to fail with "Is a
/// directory"); a folder without one is bad input.
#[test]
fn folders_stand_for_their_phase_files() {
    let dir = folder("dir");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/b.phase"), DEADLOCK).unwrap();
    std::fs::write(dir.join("a.phase"), OK).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a protocol").unwrap();
    let (code, out, err) = run(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    let a = out.find("a.phase: protocol ok: ok").expect(&out);
    let b = out.find("b.phase: protocol dl: hazard").expect(&out);
    assert!(a < b, "sorted: {out}");
    assert!(!err.contains("directory"), "{err}");
    let empty = folder("empty");
    let (code, _, err) = run(&["verify", empty.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no .phase files under"), "{err}");
}

/// `verify` does not judge `expect` lines; it says so and names the command that does.
#[test]
fn expect_lines_are_pointed_to_phasecheck_test() {
    let dir = folder("expect");
    let p = dir.join("e.phase");
    std::fs::write(&p, format!("{OK}expect ok\nexpect deadlock\n")).unwrap();
    let (code, out, _) = run(&["verify", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let out = out.replace(&format!("{}/", dir.display()), "DIR/");
    insta::assert_snapshot!("verify_notes_expect_lines", out);
    // Without expect lines there is no note.
    let q = write("no_expect.phase", OK);
    let (_, out, _) = run(&["verify", q.to_str().unwrap()]);
    assert!(!out.contains("note:"), "{out}");
}

/// `--dot FILE` without a deadlock says that it wrote nothing.
#[test]
fn dot_without_a_deadlock_says_so() {
    let p = write("ok_dot.phase", OK);
    let dot = p.with_extension("dot");
    let _ = std::fs::remove_file(&dot);
    let (code, _, err) = run(&[
        "verify",
        p.to_str().unwrap(),
        "--dot",
        dot.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!dot.exists());
    let err = err.replace(dot.to_str().unwrap(), "FILE.dot");
    insta::assert_snapshot!("verify_dot_without_deadlock", err);
}

/// A reader that goes away (`phasecheck verify ... | head -1`) ends the run quietly by SIGPIPE,
/// as other command-line tools do; it used to panic in `println!` (exit 101, a backtrace on
/// standard error).
#[cfg(unix)]
#[test]
fn a_closed_stdout_is_no_panic() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let p = write("closed_stdout.phase", DEADLOCK);
    let mut child = bin()
        .arg("verify")
        .arg(&p)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end before the report is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        // SIGPIPE is 13 on Linux and the BSDs; exit code 1 (the verdict) if the report fitted
        // into the pipe before it closed.
        out.status.signal() == Some(13) || out.status.code() == Some(1),
        "{:?}: {stderr}",
        out.status
    );
}

/// `--threads` changes nothing in the report (standard output, byte for byte): the parallel
/// search visits the same states in the same order on any number of workers, so the findings,
/// their shortest traces, the state counts and where a memory limit stops the search are the
/// same (docs/design.md, "Parallel search"). More workers than this machine's cores, too.
#[test]
fn verify_report_is_byte_identical_on_any_thread_count() {
    let root = env!("CARGO_MANIFEST_DIR");
    let db = "checker/tests/data/double_buffer.phase";
    let cases: [&[&str]; 3] = [
        &["corpus/hazards/data-race/fail.phase", "--exhaustive"],
        &[
            db,
            "--param",
            "NC=6",
            "--param",
            "K=2",
            "--no-por",
            "--exhaustive",
        ],
        // Stopped by the memory limit after 4 259 states, in the middle of its wide rounds
        // (the build that measured state sizes while other workers were still copying and
        // dropping states stopped this search at 7 083 states on 1 to 3 threads and at 7 967
        // on 16).
        &[
            db,
            "--param",
            "NC=16",
            "--param",
            "K=2",
            "--no-por",
            "--exhaustive",
            "--max-memory",
            "69M",
        ],
    ];
    for args in cases {
        let report = |threads: &str| {
            let o = bin()
                .current_dir(root)
                .arg("verify")
                .args(args)
                .args(["--threads", threads])
                .output()
                .unwrap();
            String::from_utf8(o.stdout).unwrap()
        };
        let one = report("1");
        assert!(one.contains(" states"), "{args:?}: {one}");
        let states: u64 = one
            .split_whitespace()
            .collect::<Vec<_>>()
            .windows(2)
            .find(|w| w[1].starts_with("states"))
            .and_then(|w| w[0].parse().ok())
            .unwrap_or_else(|| panic!("{args:?}: no state count in {one}"));
        // Every case branches (the memory-limited one does not stop at its first state).
        assert!(states > 5, "{args:?}: {states} states");
        for threads in ["2", "3", "16"] {
            assert_eq!(one, report(threads), "{args:?} on {threads} threads");
        }
    }
}
