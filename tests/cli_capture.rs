//! `phasecheck capture` and `--launch` (issue 23 point 3, docs/ptx.md "Launch capture").
//!
//! Without a GPU the `--launch` tests read a capture file recorded on an H100
//! (capture/tests/fixtures/tma_launch.capture.json, docs/gpu.md). With `PHASECHECK_GPU_TESTS=1`
//! on a GPU machine, `capture_records_every_launch_on_the_gpu` compiles the test program with
//! nvcc and records it for real (`PHASECHECK` may name a prebuilt binary, `PHASECHECK_ROOT` the
//! repository, for a machine without Rust).

mod common;
use common::{bin, root};
use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    root().join("capture/tests/fixtures").join(name)
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("phasecheck runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn capture_records_every_launch_on_the_gpu() {
    if std::env::var("PHASECHECK_GPU_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set PHASECHECK_GPU_TESTS=1 on a GPU machine to run `capture`");
        return;
    }
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    let dir = std::env::temp_dir().join(format!("phasecheck-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let app = dir.join("tma_launch");
    let st = Command::new(&nvcc)
        .args(["-arch=sm_90a", "-O3", "-std=c++17", "-lcuda", "-o"])
        .arg(&app)
        .arg(fixture("tma_launch.cu"))
        .status()
        .expect("nvcc runs");
    assert!(st.success(), "nvcc failed");
    let cap = dir.join("cap.json");
    let o = bin()
        .arg("capture")
        .arg("-o")
        .arg(&cap)
        .arg("--")
        .arg(&app)
        .output()
        .expect("runs");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(
        err.contains("7 launches (tma_tiles x1, tma_multicast x1, probe x5)"),
        "{err}"
    );
    let c = std::fs::read_to_string(&cap).expect("capture file");
    let cap_text = c.lines().collect::<Vec<_>>();
    assert_eq!(cap_text.len(), 8, "{c}");
    assert!(cap_text[1].contains("\"kernel\":\"tma_tiles\""), "{c}");
    assert!(cap_text[1].contains("\"box_bytes\":4096"), "{c}");
    assert!(cap_text[2].contains("\"cluster\":[2,1,1]"), "{c}");
    // The captured launch answers every question of the front end.
    let spec = format!("{}#0", cap.display());
    let ptx = fixture("tma_launch.ptx");
    let o = run(&["verify", ptx.to_str().unwrap(), "--launch", &spec]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
}

fn launch(n: Option<u32>) -> String {
    let f = fixture("tma_launch.capture.json").display().to_string();
    match n {
        Some(n) => format!("{f}#{n}"),
        None => f,
    }
}

fn ptx() -> String {
    fixture("tma_launch.ptx").display().to_string()
}

#[test]
fn verify_takes_block_and_parameters_from_the_launch() {
    let o = run(&["verify", &ptx(), "--launch", &launch(Some(0))]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("protocol tma_tiles: ok"), "{out}");
    assert!(
        out.contains("#0: kernel tma_tiles, grid 1, block 64"),
        "{out}"
    );
    // Without the launch the same kernel needs --block and --arg.
    let o = run(&["verify", &ptx(), "--kernel", "tma_tiles"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn extract_takes_cluster_and_the_tensor_maps_box_from_the_launch() {
    let o = run(&["extract", &ptx(), "--launch", &launch(Some(1))]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("kernel `tma_multicast`"), "{out}");
    assert!(out.contains("\ncluster 2\n"), "{out}");
    // The box (4096 bytes) from the captured map, not a share of the expect_tx (8192).
    assert!(out.contains("buffer   buf[4]"), "{out}");
    assert!(!out.contains("is taken to move"), "{out}");
    assert!(err.is_empty(), "{err}");
}

#[test]
fn lint_takes_the_launch_too() {
    let o = run(&["lint", &ptx(), "--launch", &launch(Some(0))]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
}

#[test]
fn a_launch_of_several_kernels_must_be_chosen() {
    let o = run(&["extract", &ptx(), "--launch", &launch(None)]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(err.contains("7 different launches"), "{err}");
    assert!(err.contains("#N"), "{err}");
    let o = run(&[
        "extract",
        &ptx(),
        "--launch",
        &launch(Some(1)),
        "--kernel",
        "tma_tiles",
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("is not the --kernel given"), "{err}");
}

#[test]
fn values_that_make_the_kernel_do_nothing_are_warned_about() {
    // The launch with 0 tiles (an --arg wins over the launch's bytes).
    let o = run(&[
        "verify",
        &ptx(),
        "--launch",
        &launch(Some(0)),
        "--arg",
        "1=0",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(err.contains("warning:"), "{err}");
    assert!(err.contains("kernel `tma_tiles` does no work"), "{err}");
    // The real launch does work: no warning.
    let o = run(&["verify", &ptx(), "--launch", &launch(Some(0))]);
    assert!(!text(&o).1.contains("does no work"));
}

#[test]
fn a_copy_that_runs_past_its_buffer_is_warned_about() {
    // Each block's half of the multicast tile given as the whole tile: the second half's copy
    // runs past the end of `buf`.
    let o = run(&[
        "extract",
        &ptx(),
        "--launch",
        &launch(Some(1)),
        "--arg",
        "0=8192",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(err.contains("writes 8192 bytes at byte 12288 of `_ZZ13tma_multicastE3buf` (16384 bytes): it runs past its end"), "{err}");
    assert!(
        out.contains("# Warning: with the given values the copy"),
        "{out}"
    );
}

#[test]
fn a_multicast_copy_without_a_size_is_inferred_from_every_blocks_expect() {
    // Issue 23 point 2: each block loads half of the 8192 bytes its barrier expects and
    // multicasts it to both; the share of the expect_tx alone gave each half 8192 bytes.
    let o = run(&[
        "extract",
        &ptx(),
        "--kernel",
        "tma_multicast",
        "--block",
        "64",
        "--cluster",
        "2",
        "--arg",
        "1=2",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("buffer   buf[4]"), "{out}");
    assert!(
        out.contains("is taken to move 4096 bytes: the 8192 bytes of the expect_tx"),
        "{out}"
    );
    assert!(
        out.contains("2 multicast copies (mask 0x3, from blocks 0, 1)"),
        "{out}"
    );
}

/// FlashInfer's sm90 prefill at its launch captured on an H200 (`ptx/tests/fixtures/real/`,
/// docs/ptx.md §6 "Real kernels at real size"). The K and V tiles are each loaded as two TMA
/// copies of 64 columns: with the captured box (64 x 192 bf16, 24 576 bytes) each copy keeps its
/// half of the tile's buffer, so the halves do not race. The two branches on `sum > 0` of its
/// softmax (attention_updater.cuh:235) skip register-only code and need no `--assume`: the
/// protocol is the one the assumptions gave.
#[test]
fn flashinfer_s_tma_halves_keep_their_bytes_at_the_captured_launch() {
    let dir = root().join("ptx/tests/fixtures/real");
    let ptx = dir
        .join("flashinfer_prefill_sm90.ptx")
        .display()
        .to_string();
    let launch = dir.join("flashinfer.capture.json").display().to_string();
    let o = run(&["extract", &ptx, "--launch", &launch]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        out.contains(" bytes 0 .. +24576 -> ") && out.contains(" bytes 24576 .. +24576 -> "),
        "{out}"
    );
    let assumed = run(&[
        "extract", &ptx, "--launch", &launch, "--assume", "5572=1", "--assume", "5586=1",
    ]);
    let statements = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(statements(&out), statements(&text(&assumed).0));
}

/// CUTLASS's Cooperative GEMM on a 2x1 cluster (`ptx/tests/fixtures/real/`, its captured
/// launch): every consumer lane waits at the mainloop's one aligned `bar.sync` instruction (PTX
/// 1898, barrier 15 for the first warp group, 14 for the second), so it is one statement for all
/// of them. Two threads of CTA 1 (tid 168 and 296) had a group of their own, because their
/// per-thread epilogue stores fit one function of `tid`, and their copy of the barrier printed
/// as `bar_sync 16 - (tid / 128), 128` beside their warps' `bar_sync 15` / `bar_sync 14`:
/// lanes of one warp at "different" statements, a false `barrier-divergence` in `verify`.
#[test]
fn one_aligned_barrier_instruction_is_one_statement_for_every_lane() {
    let dir = root().join("ptx/tests/fixtures/real");
    let ptx = dir.join("cutlass_coop_cluster.ptx").display().to_string();
    let launch = format!("{}#1", dir.join("cutlass.capture.json").display());
    let o = run(&["extract", &ptx, "--launch", &launch]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let at_1898: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("PTX 1898") && l.trim_start().starts_with("bar_sync"))
        .collect();
    assert_eq!(
        at_1898,
        vec![
            "  bar_sync 16 - (tid / 128), 128    # sm90_mma_tma_gmma_ss_warpspecialized.hpp:496 (via mma_sm90_gmma.hpp:2838)  PTX 1898"
        ],
        "{out}"
    );
}
