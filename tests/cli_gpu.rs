//! CLI tests of `lower`, `fuzz` and `confirm`. Without a GPU (CI), `fuzz` and `confirm` must
//! fail cleanly (exit 2, naming what is missing and where it was looked for). With
//! `PHASECHECK_GPU_TESTS=1` on a GPU machine (scripts/gpu-check.sh), they run for real.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_phasecheck"))
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("gpu-harness/tests/fixtures")
        .join(name)
}

fn gpu_tests() -> bool {
    std::env::var("PHASECHECK_GPU_TESTS").is_ok_and(|v| v == "1")
}

#[test]
fn lower_prints_a_kernel() {
    let out = bin()
        .args(["lower"])
        .arg(fixture("double_buffer.phase"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("extern \"C\" __global__"));
    assert!(text.contains("if ((warp >= 1)) {  // role consumer"));
    assert!(text.contains("// line 23: wait empty[s] parity ((k / STAGES) % 2) ^ 1"));
}

#[test]
fn lower_writes_the_output_file() {
    let dir = std::env::temp_dir().join(format!("phasecheck-lower-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cu = dir.join("kernel.cu");
    let out = bin()
        .args(["lower"])
        .arg(fixture("multicast_pair.phase"))
        .arg("-o")
        .arg(&cu)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&cu).expect("written");
    assert!(text.contains("__cluster_dims__(2, 1, 1)"));
    assert!(text.contains("multicast::cluster"));
}

#[test]
fn lower_reports_a_file_it_cannot_lower() {
    let dir = std::env::temp_dir().join(format!("phasecheck-lower2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let f = dir.join("two.phase");
    std::fs::write(
        &f,
        "protocol two\nglobal g\nkernel a domain default block 32 { store g }\nkernel b domain remote block 32 { load g }\n",
    )
    .expect("write");
    // Confirm mode sequences one kernel: several kernels are refused with the way out.
    let out = bin()
        .args(["lower", "--confirm"])
        .arg(&f)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("two.phase:4:1"), "{err}");
    assert!(err.contains("2 kernels"), "{err}");
    assert!(err.contains("phasecheck fuzz"), "{err}");
}

#[test]
fn lower_prints_one_function_per_kernel() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/domains/memsync_domains_sys.phase");
    let out = bin().arg("lower").arg(&f).output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.matches("extern \"C\" __global__").count(), 2, "{text}");
    assert!(text.contains("pc_domains_sys_compute("), "{text}");
    assert!(text.contains("pc_domains_sys_comm("), "{text}");
    assert!(text.contains("// Kernel: pc_domains_sys_comm (`comm`, domain remote"));
    // scope sys: the .sys forms (scope number 3).
    assert!(
        text.contains("pc_store(pc, flag, 1, 3, true, 1, pc_occ_1);"),
        "{text}"
    );
    assert!(text.contains("pc_load_acquire(pc, flag, 3, 3);"), "{text}");
}

#[test]
fn gpu_fuzz_of_a_sys_scope_domain_hand_off_sees_nothing() {
    if !gpu_tests() {
        eprintln!("skipped: set PHASECHECK_GPU_TESTS=1 on a GPU machine to run");
        return;
    }
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/domains/memsync_domains_sys.phase");
    let out = bin()
        .args(["fuzz", "--seconds", "1", "--quiet"])
        .arg(&f)
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("nothing seen"), "{text}");
    assert!(text.contains("kernels launched concurrently"), "{text}");
}

#[test]
fn fuzz_without_a_gpu_is_a_clear_error() {
    if gpu_tests() {
        eprintln!("skipped: PHASECHECK_GPU_TESTS=1 (a GPU is expected here)");
        return;
    }
    let out = bin()
        .args(["fuzz", "--seconds", "1"])
        .arg(fixture("double_buffer.phase"))
        .env("CUDA_HOME", "/nonexistent/cuda-home")
        .env_remove("CUDA_PATH")
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(0) || out.status.code() == Some(1) {
        eprintln!("skipped: this machine has a GPU and CUDA ({err})");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("was not found"), "{err}");
    assert!(err.contains("looked in:"), "{err}");
    assert!(err.contains("/nonexistent/cuda-home/lib64"), "{err}");
    assert!(err.contains("/usr/local/cuda/lib64"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// `--format json` without a GPU still prints one JSON object: `skipped`, the `reason`
/// (`no-gpu`), the message and the exit code (2), for `fuzz` and `confirm` alike.
#[test]
fn json_without_a_gpu_is_one_object_saying_why() {
    if gpu_tests() {
        eprintln!("skipped: PHASECHECK_GPU_TESTS=1 (a GPU is expected here)");
        return;
    }
    for args in [
        vec!["fuzz", "--seconds", "1", "--format", "json"],
        vec!["confirm", "--param", "K=2", "--format", "json"],
    ] {
        let file = if args[0] == "fuzz" {
            fixture("double_buffer.phase")
        } else {
            fixture("db_wrong_parity.phase")
        };
        let out = bin()
            .args(&args)
            .arg(&file)
            .env("CUDA_HOME", "/nonexistent/cuda-home")
            .env_remove("CUDA_PATH")
            .output()
            .expect("runs");
        if out.status.code() != Some(2) {
            eprintln!("skipped: this machine has a GPU and CUDA");
            return;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: no JSON on stdout ({e})"));
        assert_eq!(v["skipped"], true, "{v}");
        assert_eq!(v["reason"], "no-gpu", "{v}");
        assert_eq!(v["exit_code"], 2, "{v}");
        assert_eq!(v["file"], file.display().to_string(), "{v}");
        assert!(
            v["error"].as_str().unwrap().contains("was not found"),
            "{v}"
        );
    }
    // A file that does not load: the same object, reason `bad-input`.
    let out = bin()
        .args(["fuzz", "--format", "json", "/nonexistent/x.phase"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["reason"], "bad-input", "{v}");
}

#[test]
fn confirm_without_a_gpu_is_a_clear_error() {
    if gpu_tests() {
        eprintln!("skipped: PHASECHECK_GPU_TESTS=1 (a GPU is expected here)");
        return;
    }
    let out = bin()
        .args(["confirm"])
        .arg(fixture("db_wrong_parity.phase"))
        .args(["--param", "K=2"])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(2) {
        eprintln!("skipped: this machine has a GPU and CUDA");
        return;
    }
    assert!(err.contains("looked in:"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn gpu_fuzz_of_a_correct_protocol_sees_nothing() {
    if !gpu_tests() {
        eprintln!("skipped: set PHASECHECK_GPU_TESTS=1 on a GPU machine to run");
        return;
    }
    let out = bin()
        .args(["fuzz", "--seconds", "1", "--quiet"])
        .arg(fixture("double_buffer.phase"))
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("nothing seen"), "{text}");
}

#[test]
fn gpu_fuzz_finds_the_missing_empty_wait() {
    if !gpu_tests() {
        eprintln!("skipped: set PHASECHECK_GPU_TESTS=1 on a GPU machine to run");
        return;
    }
    let out = bin()
        .args(["fuzz", "--seconds", "1", "--quiet", "--format", "json"])
        .arg(fixture("db_no_empty_wait.phase"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let stale = v["stale_reads"].as_array().expect("array");
    assert!(stale.iter().any(|r| r["buffer"] == "slot"), "{v}");
}

#[test]
fn gpu_confirm_confirms_the_wrong_parity_deadlock() {
    if !gpu_tests() {
        eprintln!("skipped: set PHASECHECK_GPU_TESTS=1 on a GPU machine to run");
        return;
    }
    let out = bin()
        .args(["confirm", "--format", "json", "--param", "K=2"])
        .arg(fixture("db_wrong_parity.phase"))
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let f = v["findings"].as_array().expect("findings");
    assert!(
        f.iter().any(|x| x["class"] == "deadlock"
            && x["outcome"] == "confirmed"
            && x["evidence"] == "model"),
        "{v}"
    );
    // The human report names the kernel that showed it.
    let out = bin()
        .args(["confirm", "--param", "K=2", "--aim-seconds", "0"])
        .arg(fixture("db_wrong_parity.phase"))
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.lines().any(|l| l.contains("deadlock")
            && l.ends_with("confirmed on a stress kernel built from the model")),
        "{text}"
    );
}

/// A file that bulk-stores gets proxy-window rounds: the missing `fence_proxy_async` of
/// `proxy_fence_store.phase` shows there (at the `tma_store`, with the write as the other
/// access), and its fenced variant shows nothing.
#[test]
fn gpu_fuzz_finds_the_missing_proxy_fence_in_proxy_window_rounds() {
    if !gpu_tests() {
        eprintln!("skipped: set PHASECHECK_GPU_TESTS=1 on a GPU machine to run");
        return;
    }
    let out = bin()
        .args(["fuzz", "--seconds", "4", "--quiet", "--format", "json"])
        .arg(fixture("proxy_fence_store.phase"))
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let w = &v["proxy_window"];
    assert!(w["trials"].as_u64().unwrap_or(0) > 0, "{v}");
    let stale = w["stale_reads"].as_array().expect("array");
    assert!(
        stale.iter().any(|r| r["statement"] == "tma_store c_smem[j]"
            && r["other"]
                .as_str()
                .is_some_and(|o| o.contains("write c_smem[tid]"))),
        "{v}"
    );
    // The same protocol with the fence (one more line before the barrier).
    let text = std::fs::read_to_string(fixture("proxy_fence_store.phase")).expect("fixture");
    let fenced = text.replace(
        "write c_smem[tid]\n",
        "write c_smem[tid]\nfence_proxy_async\n",
    );
    assert_ne!(fenced, text);
    let dir = std::env::temp_dir().join(format!("phasecheck-fence-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let f = dir.join("fenced.phase");
    std::fs::write(
        &f,
        fenced.replace("expect race missing-proxy-fence", "expect ok"),
    )
    .expect("write");
    let out = bin()
        .args(["fuzz", "--seconds", "4", "--quiet", "--format", "json"])
        .arg(&f)
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert!(v["proxy_window"]["trials"].as_u64().unwrap_or(0) > 0, "{v}");
}

/// A launch stuck in a hardware collective is a finding, not an error: warps 0 and 1 wait at
/// two named barriers of 64 threads, each of which only one of them reaches. The report (exit 1, one JSON object) names the
/// statement and the threads blocked there, and the process ends (which frees the GPU).
#[test]
fn gpu_fuzz_reports_a_stuck_named_barrier_as_a_hang() {
    if !gpu_tests() {
        eprintln!("skipped: set PHASECHECK_GPU_TESTS=1 on a GPU machine to run");
        return;
    }
    let dir = std::env::temp_dir().join(format!("phasecheck-stuck-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let f = dir.join("stuck.phase");
    std::fs::write(
        &f,
        "protocol stuck\nblock 64\nsyncthreads\nif tid < 32 {\n  bar_sync 1, 64\n} else {\n  \
         bar_sync 2, 64\n}\n",
    )
    .expect("write");
    let t0 = std::time::Instant::now();
    let out = bin()
        .args(["fuzz", "--seconds", "1", "--quiet", "--format", "json"])
        .args(["--launch-timeout", "3", "--blocks", "264", "--seed", "5"])
        .arg(&f)
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert!(t0.elapsed().as_secs() < 60, "the process ended");
    assert_eq!(v["stuck"]["seed"], 5, "{v}");
    assert_eq!(v["stuck"]["positions_read"], true, "{v}");
    let rows = v["hangs"].as_array().expect("hangs");
    assert_eq!(rows.len(), 2, "{v}");
    for (row, line, stmt, threads) in [
        (&rows[0], 5, "bar_sync 1, 64", "t0-t31 of block "),
        (&rows[1], 7, "bar_sync 2, 64", "t32-t63 of block "),
    ] {
        assert_eq!(row["stuck"], true, "{v}");
        assert_eq!(row["line"], line, "{v}");
        assert_eq!(row["statement"], stmt, "{v}");
        assert!(
            row["observed"]
                .as_str()
                .is_some_and(|o| o.starts_with(threads)),
            "{v}"
        );
    }
    // The GPU is usable again right away.
    let out = bin()
        .args(["fuzz", "--seconds", "1", "--quiet"])
        .arg(fixture("double_buffer.phase"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
}

/// A replay that does not show its finding says why, by class, and fuzzes the file aimed at
/// it (a lone leader lane: lane 0 arrives on `empty` alone, the producer runs two phases ahead
/// of lanes 1-31).
#[test]
fn gpu_confirm_explains_what_it_cannot_show_and_aims_a_fuzz() {
    if !gpu_tests() {
        eprintln!("skipped: set PHASECHECK_GPU_TESTS=1 on a GPU machine to run");
        return;
    }
    let dir = std::env::temp_dir().join(format!("phasecheck-aim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let f = dir.join("lone_leader.phase");
    std::fs::write(
        &f,
        "protocol lone_leader\nparam N = 3\nblock 64\nmbarrier ready\nmbarrier empty\n\
         if tid == 0 {\n  init ready, 1\n  init empty, 1\n}\nsyncthreads\n\
         role producer when tid == 32 {\n  for i in 0..N {\n    wait empty parity (i % 2) ^ 1\n    \
         arrive ready\n  }\n}\nrole consumer when tid < 32 {\n  for i in 0..N {\n    \
         wait ready parity i % 2\n    if lane == 0 { arrive empty }\n  }\n}\n",
    )
    .expect("write");
    let out = bin()
        .args([
            "confirm",
            "--format",
            "json",
            "--seconds",
            "2",
            "--aim-seconds",
            "2",
        ])
        .arg(&f)
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let findings = v["findings"].as_array().expect("findings");
    let deadlock = findings
        .iter()
        .find(|x| x["class"] == "deadlock")
        .expect("the deadlock");
    if deadlock["outcome"] != "confirmed" || deadlock.get("aimed_fuzz").is_some() {
        // Not shown by the replay: the reason and the aimed fuzz are there.
        let why = deadlock["why_not_shown"].as_array().expect("reasons");
        assert!(why.iter().any(|w| w["class"] == "warp-lanes"), "{v}");
        assert!(
            deadlock["aimed_fuzz"]["rounds"].as_u64().unwrap_or(0) > 0,
            "{v}"
        );
    }
}
