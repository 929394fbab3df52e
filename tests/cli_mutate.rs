//! `phasecheck mutate`: the human table (an insta snapshot on the §1 double buffer at its
//! `expect ok with K = 1` parameters), the JSON shape (docs/ci.md), exit codes, and `--gpu`
//! skipping cleanly on a machine without a GPU (with `PHASECHECK_GPU_TESTS=1` on a GPU
//! machine, the GPU part runs for real).

use std::path::Path;
use std::process::Command;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_phasecheck"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("PHASECHECK_STATUS_INTERVAL", "none");
    c
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = bin().args(args).output().expect("runs");
    (
        out.status.code().expect("an exit code"),
        String::from_utf8(out.stdout).expect("UTF-8"),
        String::from_utf8(out.stderr).expect("UTF-8"),
    )
}

fn gpu_tests() -> bool {
    std::env::var("PHASECHECK_GPU_TESTS").is_ok_and(|v| v == "1")
}

/// The operators whose double-buffer mutants the checker decides in under 1 000 states (the
/// search alone, no random-schedule portfolio): the table is the same on every machine.
const QUICK: &str = "count-plus-one,count-minus-one,arrive-to-drop,swap-stage,trips-plus-one,trips-minus-one,exit-early";

#[test]
fn human_table_of_the_double_buffer() {
    let (code, out, err) = run(&[
        "mutate",
        "corpus/guide/double_buffer.phase",
        "--operator",
        QUICK,
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    insta::assert_snapshot!("mutate_double_buffer_human", out);
}

/// Every field of the JSON object, with its type; the mutants' ids run 1..n, the counts add
/// up and the score is hazard / mutants.
#[test]
fn json_shape() {
    let (code, out, err) = run(&[
        "mutate",
        "corpus/guide/tma_transaction_barrier.phase",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(v["schema"], 1);
    assert_eq!(v["tool"], "phasecheck");
    assert_eq!(v["command"], "mutate");
    assert!(v["version"].is_string());
    assert_eq!(v["exit_code"], 0);
    assert!(v["gpu"].is_null(), "no --gpu: {}", v["gpu"]);
    assert_eq!(v["options"]["max_time_ms"], 10_000);
    assert!(v["options"]["max_states"].is_u64());
    let files = v["files"].as_array().expect("files");
    assert_eq!(files.len(), 1);
    let f = &files[0];
    assert_eq!(f["file"], "corpus/guide/tma_transaction_barrier.phase");
    assert_eq!(f["protocol"], "tma_transaction_barrier");
    assert_eq!(f["params"]["NT"], 3);
    assert_eq!(f["params_from"], "expect-ok-line");
    assert_eq!(f["original"]["verdict"], "ok");
    assert!(f["matrix"].is_null());
    let mutants = f["mutants"].as_array().expect("mutants");
    assert!(mutants.len() >= 5, "{out}");
    let (mut hazard, mut ok) = (0, 0);
    for (i, m) in mutants.iter().enumerate() {
        assert_eq!(m["id"], i + 1);
        assert!(m["operator"].is_string());
        assert!(m["line"].as_u64().is_some_and(|l| l > 0));
        assert!(m["before"].is_array() && m["after"].is_array(), "{m}");
        assert_eq!(m["disagreement"], false);
        assert!(m["gpu"].is_null());
        let c = &m["checker"];
        match c["verdict"].as_str().expect("a verdict") {
            "hazard" => {
                hazard += 1;
                assert!(!c["rules"].as_array().expect("rules").is_empty(), "{m}");
            }
            "ok" => {
                ok += 1;
                assert!(c["rules"].as_array().expect("rules").is_empty(), "{m}");
            }
            other => panic!("verdict {other}: {m}"),
        }
        assert!(c["states"].is_u64() && c["elapsed_ms"].is_u64());
        assert!(c.get("note").is_some());
    }
    let s = &f["summary"];
    assert_eq!(s["mutants"], mutants.len());
    assert_eq!(s["hazard"], hazard);
    assert_eq!(s["ok"], ok);
    assert_eq!(s["inconclusive"], 0);
    assert_eq!(s["error"], 0);
    assert!(s["not_loading"].is_u64() && s["duplicates"].is_u64());
    let score = s["score"].as_f64().expect("a score");
    assert!((score - hazard as f64 / mutants.len() as f64).abs() < 1e-9);
    assert!(f["not_loading"].is_array());
    assert_eq!(v["summary"]["files"], 1);
    assert_eq!(v["summary"]["bad_input"], 0);
    assert_eq!(v["summary"]["counts"], *s);
    // One operator of each kind the file has appears.
    let ops: Vec<&str> = mutants
        .iter()
        .map(|m| m["operator"].as_str().unwrap())
        .collect();
    for op in [
        "flip-parity",
        "remove-wait",
        "tx-plus-16",
        "tx-minus-16",
        "tx-times-2",
    ] {
        assert!(ops.contains(&op), "{op}: {ops:?}");
    }
    let tx = mutants
        .iter()
        .find(|m| m["operator"] == "tx-times-2")
        .expect("a tx-times-2 mutant");
    assert!(
        tx["after"][0]
            .as_str()
            .unwrap()
            .starts_with("arrive_expect_tx bar, BYTES * 2"),
        "{tx}"
    );
}

#[test]
fn bad_input_is_exit_2() {
    let (code, _, err) = run(&["mutate", "/nonexistent/x.phase"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = run(&[
        "mutate",
        "corpus/guide/double_buffer.phase",
        "--operator",
        "flip-parrity",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a mutation operator"), "{err}");
    assert!(err.contains("flip-parity"), "{err}");
    // A file that does not load: exit 2, the others are still mutated and reported.
    let dir = std::env::temp_dir().join(format!("phasecheck-mutate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.phase");
    std::fs::write(&bad, "protocol\n").unwrap();
    let (code, out, err) = run(&[
        "mutate",
        bad.to_str().unwrap(),
        "corpus/guide/init_bootstrap.phase",
        "--format",
        "json",
    ]);
    assert_eq!(code, 2, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["exit_code"], 2);
    assert_eq!(v["summary"]["bad_input"], 1);
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert!(files.iter().any(|f| f["error"].is_string()), "{out}");
    assert!(files.iter().any(|f| f["mutants"].is_array()), "{out}");
}

/// `--declared` starts from the declared values; `-p` sets one on top of the default.
#[test]
fn parameters_and_where_they_come_from() {
    let (code, out, _) = run(&[
        "mutate",
        "corpus/guide/double_buffer.phase",
        "--operator",
        "count-minus-one",
        "-p",
        "K=2",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["files"][0]["params"]["K"], 2);
    assert_eq!(v["files"][0]["params_from"], "expect-ok-line");
    // A file without `expect ok ... with` takes the [[params]] of corpus/phasecheck.toml
    // (this one is a race at them: the table warns that the score says little).
    let (code, out, _) = run(&[
        "mutate",
        "corpus/production/cooperative_tile_part_no_wait.phase",
        "--operator",
        "count-plus-one",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("NP = 2, NC = 1")
            && out.contains("(from [[params]] of corpus/phasecheck.toml)"),
        "{out}"
    );
    assert!(out.contains("warning: the original is not ok"), "{out}");
    let (code, out, _) = run(&[
        "mutate",
        "corpus/guide/pipeline_block_early_quit.phase",
        "--operator",
        "count-plus-one",
        "--declared",
        "-p",
        "NP=1",
        "-p",
        "NC=2",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["files"][0]["params_from"], "declared");
    assert_eq!(v["files"][0]["params"]["NB"], 6);
    assert_eq!(v["files"][0]["params"]["NC"], 2);
}

/// Without a GPU, `--gpu` runs the checker part, says on stderr that the GPU part is skipped
/// and why, exits 0, and the JSON says `"gpu": {"skipped": true, "reason": "no-gpu", ...}`.
#[test]
fn gpu_without_a_gpu_is_skipped_cleanly() {
    if gpu_tests() {
        eprintln!("skipped: PHASECHECK_GPU_TESTS=1 (a GPU is expected here)");
        return;
    }
    let out = bin()
        .args([
            "mutate",
            "--gpu",
            "--gpu-seconds",
            "1",
            "corpus/guide/init_bootstrap.phase",
            "--format",
            "json",
        ])
        .env("CUDA_HOME", "/nonexistent/cuda-home")
        .env_remove("CUDA_PATH")
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    if v["gpu"]["device"].is_string() {
        eprintln!("skipped: this machine has a GPU and CUDA");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("the GPU part is skipped"), "{err}");
    assert!(err.contains("was not found"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(v["gpu"]["skipped"], true, "{v}");
    assert_eq!(v["gpu"]["reason"], "no-gpu", "{v}");
    assert!(v["files"][0]["matrix"].is_null());
    assert!(v["files"][0]["mutants"][0]["gpu"].is_null());
    // The human form says so in one line at the end.
    let out = bin()
        .args(["mutate", "--gpu", "corpus/guide/init_bootstrap.phase"])
        .env("CUDA_HOME", "/nonexistent/cuda-home")
        .env_remove("CUDA_PATH")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\ngpu: skipped (no-gpu): "), "{text}");
}

/// On a GPU machine (`PHASECHECK_GPU_TESTS=1`): every mutant of a small TMA file is fuzzed and
/// its findings replayed; no mutant the checker calls ok shows a hazard on the GPU.
#[test]
fn gpu_mutants_of_a_tma_barrier() {
    if !gpu_tests() {
        eprintln!("skipped: set PHASECHECK_GPU_TESTS=1 on a GPU machine to run");
        return;
    }
    let f = Path::new("corpus/guide/tma_transaction_barrier.phase");
    let (code, out, err) = run(&[
        "mutate",
        "--gpu",
        "--gpu-seconds",
        "1",
        "--confirm-seconds",
        "1",
        f.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(v["gpu"]["device"].is_string(), "{v}");
    for m in v["files"][0]["mutants"].as_array().unwrap() {
        let g = &m["gpu"];
        assert!(g["hazard"].is_boolean(), "every mutant ran: {m}");
        if m["checker"]["verdict"] == "hazard" {
            // Replayed, unless fuzzing already lost the context to the hazard: a kernel that
            // trapped (measured on an H200: `init bar, NT - 1` over-arrives and the launch
            // fails) or got stuck, which is a GPU hazard shown without a replay.
            let lost = g["faulted"] == true || g["stuck"] == true;
            assert!(lost || !g["findings"].as_array().unwrap().is_empty(), "{m}");
            if lost {
                assert_eq!(g["hazard"], true, "{m}");
            }
        }
    }
    let matrix = &v["gpu"]["matrix"];
    assert_eq!(matrix["checker_ok"]["gpu_hazard"], 0, "{matrix}");
}
