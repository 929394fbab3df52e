//! The PTX front end on committed fixtures (CUDA kernels compiled with
//! `nvcc -arch=sm_90a -ptx -lineinfo`, see `fixtures/regen.sh`): extract, load, check, and
//! find each bug at its CUDA source line.

mod common;
use checker::{CheckOptions, Verdict};
use common::*;
use protocols::SourceFile;

fn opts(block: u32, args: &[(&str, i64)]) -> ptx::Options {
    ptx::Options {
        block: Some([block, 1, 1]),
        args: args.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..Default::default()
    }
}

struct Checked {
    ex: ptx::Extracted,
    file: SourceFile,
    report: checker::Report,
}

fn check(name: &str, o: &ptx::Options) -> Checked {
    let ex = ptx::extract(&read(name), name, o).unwrap_or_else(|e| panic!("{name}: {e}"));
    let file = SourceFile::new(name, &ex.text);
    let program = protocols::load(&file, &[]).unwrap_or_else(|e| {
        panic!(
            "{name}: the extracted protocol does not load: {e:?}\n{}",
            ex.text
        )
    });
    let report = checker::check(&program, &CheckOptions::default());
    Checked { ex, file, report }
}

/// Every CUDA source line an error-level finding names (its statement and its labels).
fn finding_lines(c: &Checked) -> Vec<(String, u32, &'static str)> {
    let mut out = Vec::new();
    for f in c
        .report
        .findings
        .iter()
        .filter(|f| f.severity == checker::Severity::Error)
    {
        for span in std::iter::once(f.span).chain(f.labels.iter().map(|l| l.span)) {
            if let Some((file, line)) = c.ex.source_of_line(c.file.line_of(span)) {
                out.push((file, line, f.rule.name));
            }
        }
    }
    out
}

/// `c` verified `ok` (else its findings and the extracted protocol are printed).
fn assert_ok(c: &Checked) {
    assert_eq!(
        c.report.verdict,
        Verdict::Ok,
        "{:?}\n{}",
        c.report.findings,
        c.ex.text
    );
}

/// Some error-level finding (or one of its labels) of `c` is at line `line` of fixture `cu`.
fn assert_finding_at(c: &Checked, cu: &str, line: u32) {
    let lines = finding_lines(c);
    assert!(
        lines.iter().any(|(f, l, _)| f.ends_with(cu) && *l == line),
        "no finding at {cu}:{line}: {lines:?}"
    );
}

#[test]
fn double_buffer_verifies() {
    let c = check("double_buffer.ptx", &opts(64, &[("2", 4)]));
    assert_ok(&c);
    // The same kernel with 4 consumer warps and 8 tiles.
    let c = check(
        "double_buffer.ptx",
        &opts(160, &[("double_buffer_param_2", 8)]),
    );
    assert_eq!(c.report.verdict, Verdict::Ok);
    assert!(c.ex.text.contains("for k in 0..8 {"), "{}", c.ex.text);
}

#[test]
fn double_buffer_parity_bug_is_found_at_its_line() {
    let c = check("double_buffer_parity_bug.ptx", &opts(64, &[("param_2", 4)]));
    assert_eq!(c.report.verdict, Verdict::Hazard);
    assert_finding_at(
        &c,
        "double_buffer.cu",
        line_of("double_buffer.cu", "// BUG"),
    );
    // The reads of the stage race with the copies.
    let lines = finding_lines(&c);
    assert!(lines.iter().any(|(_, _, r)| *r == "data-race"), "{lines:?}");
}

#[test]
fn barrier_tile_verifies() {
    let c = check("barrier_tile.ptx", &opts(64, &[]));
    assert_eq!(c.report.verdict, Verdict::Ok, "{:?}", c.report.findings);
    // A cuda::barrier that every thread arrives on and waits for is a __syncthreads: a
    // performance warning.
    let rules: Vec<&str> = c.report.findings.iter().map(|f| f.rule.name).collect();
    assert_eq!(rules, ["syncthreads-would-do"]);
    let c = check("barrier_tile.ptx", &opts(256, &[]));
    assert_eq!(c.report.verdict, Verdict::Ok);
}

#[test]
fn barrier_tile_missing_sync_is_a_race_between_the_two_lines() {
    let c = check("barrier_tile_missing_sync.ptx", &opts(64, &[]));
    assert_eq!(c.report.verdict, Verdict::Hazard);
    let read = line_of("barrier_tile.cu", "float x = tile[(tid + 1) % n];");
    let write = line_of("barrier_tile.cu", "tile[tid] = 2 * x;");
    let lines = finding_lines(&c);
    let race: Vec<u32> = lines
        .iter()
        .filter(|(_, _, r)| *r == "data-race")
        .map(|(_, l, _)| *l)
        .collect();
    assert!(race.contains(&read) && race.contains(&write), "{lines:?}");
}

#[test]
fn extracted_protocols() {
    for (name, block, args) in [
        ("double_buffer.ptx", 64, vec![("2", 4)]),
        ("barrier_tile.ptx", 64, vec![]),
    ] {
        let ex = ptx::extract(&read(name), name, &opts(block, &args)).expect("extracts");
        insta::assert_snapshot!(name, ex.text);
    }
}

#[test]
fn every_statement_line_maps_to_ptx_and_cuda() {
    let ex = ptx::extract(&read("double_buffer.ptx"), "d.ptx", &opts(64, &[("2", 4)])).unwrap();
    for (i, line) in ex.text.lines().enumerate() {
        let t = line.trim();
        let statement = !(t.is_empty()
            || t.starts_with('#')
            || t.starts_with("protocol")
            || t.starts_with("block")
            || t.starts_with("mbarrier")
            || t.starts_with("buffer")
            || t.starts_with("role")
            || t.starts_with("for ")
            || t == "}");
        let d = ex.describe_line(i as u32 + 1);
        assert_eq!(statement, d.is_some(), "line {}: {line} -> {d:?}", i + 1);
        if let Some(d) = d {
            assert!(
                d.contains("double_buffer.cu:") && d.contains("PTX line"),
                "{d}"
            );
        }
    }
}

// ---- CUTLASS ---------------------------------------------------------------------------------

/// CUTLASS 3.x sm90 TMA warp-specialized GEMM (`fixtures/cutlass/gemm_tma_ws.cu`): one 128x128
/// tile, K = 256 (4 k-tiles of 64), alpha/beta pointers null and beta 0. Parameter 0 is the
/// kernel's `Params`; the fields given are the problem shape (bytes 0..16), the mainloop's
/// transaction bytes per stage (640) and the epilogue's (772..800).
fn cutlass_opts(tx_bytes: i64, box_bytes: Option<i64>) -> ptx::Options {
    let mut args = vec![
        ("0+0", 128),
        ("0+4", 128),
        ("0+8", 256),
        ("0+12", 1),
        ("0+640", tx_bytes),
        ("0+772", 0),
        ("0+776", 0),
        ("0+784", 0),
        ("0+792", 0),
        ("0+800", 0),
    ];
    if let Some(b) = box_bytes {
        // The tensor maps of A and B (bytes one copy moves: a 128x64 bf16 box).
        args.extend([("0+128", b), ("0+384", b)]);
    }
    opts(256, &args)
}

#[test]
fn cutlass_gemm_verifies() {
    let c = check("cutlass/gemm_tma_ws.ptx", &cutlass_opts(32768, None));
    assert_eq!(c.report.verdict, Verdict::Ok, "{:?}", c.report.findings);
    // The pipeline as CUTLASS's PipelineTmaAsync has it: 7 stages, full barriers with one
    // arrival, empty barriers with one per consumer thread, released one k-tile late.
    for want in [
        "init smem_bar[k], 1",
        "init smem_bar[7 + k], 128",
        "arrive_expect_tx smem_bar[k], 32768",
        "tma smem[k] -> smem_bar[k], 16384",
        "role consumer when warp >= 4",
        // The collective's first k-tile (its own `cute::gemm`, :496) and its loop (:543).
        "mma smem[0]",
        "mma smem[1 + k]",
    ] {
        assert!(c.ex.text.contains(want), "no `{want}` in\n{}", c.ex.text);
    }
    // The producer's statements are at the mainloop collective's lines (the kernel's
    // `operator()` only calls `collective_mainloop.load(...)` at
    // sm90_gemm_tma_warpspecialized.hpp:435), the initialization at the kernel's.
    for want in [
        "sm90_mma_tma_gmma_ss_warpspecialized.hpp:384 (via copy_sm90_tma.hpp:180)",
        "sm90_gemm_tma_warpspecialized.hpp:326 (via barrier.h:394)",
    ] {
        assert!(c.ex.text.contains(want), "no `{want}` in\n{}", c.ex.text);
    }
}

#[test]
fn cutlass_gemm_with_too_few_expected_bytes_races() {
    // The maps' boxes are 16 KiB each, but only 16 KiB are expected per stage: the phase
    // completes when one copy has landed, and the WGMMAs read the other one as it lands.
    let c = check("cutlass/gemm_tma_ws.ptx", &cutlass_opts(16384, Some(16384)));
    assert_eq!(c.report.verdict, Verdict::Hazard);
    let lines = finding_lines(&c);
    // The WGMMAs of the collective's first k-tile (:496), racing with the copy (:384): the
    // collective's own lines (the kernel's `operator()` calls `collective_mma.mma(...)` at
    // sm90_gemm_tma_warpspecialized.hpp:471). Since the WGMMA instructions are `syncwarp`s
    // (issue 23 point 7) the search reports the first k-tile's race only; those of the loop
    // (:543) were reported too when the lanes were independent.
    for line in [496, 384] {
        assert!(
            lines.iter().any(|(f, l, r)| *r == "data-race"
                && f.ends_with("sm90_mma_tma_gmma_ss_warpspecialized.hpp")
                && *l == line),
            "{line}: {lines:?}"
        );
    }
    let ok = check("cutlass/gemm_tma_ws.ptx", &cutlass_opts(32768, Some(16384)));
    assert_eq!(ok.report.verdict, Verdict::Ok);
}

// ---- errors ----------------------------------------------------------------------------------

fn err(text: &str, o: &ptx::Options) -> String {
    match ptx::extract(text, "t.ptx", o) {
        Ok(e) => panic!("extracted:\n{}", e.text),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_branch_on_a_parameter_without_arg_asks_for_it() {
    let e = err(&read("double_buffer.ptx"), &opts(64, &[]));
    assert!(
        e.contains("kernel parameter 2 (`double_buffer_param_2`)"),
        "{e}"
    );
    assert!(e.contains("--arg 2=VALUE"), "{e}");
    assert!(
        e.contains("PTX line") && e.contains("double_buffer.cu:"),
        "{e}"
    );
}

#[test]
fn bad_options_are_errors() {
    let text = read("double_buffer.ptx");
    let e = err(&text, &ptx::Options::default());
    assert!(e.contains("--block"), "{e}");
    let e = err(&text, &opts(64, &[("count", 4)]));
    assert!(
        e.contains("no such parameter") && e.contains("double_buffer_param_2"),
        "{e}"
    );
    let e = err(
        &text,
        &ptx::Options {
            kernel: Some("gemm".into()),
            ..opts(64, &[])
        },
    );
    assert!(
        e.contains("no kernel `gemm`") && e.contains("double_buffer"),
        "{e}"
    );
}

/// A hand-written kernel: `prelude` + body.
fn kernel(body: &str) -> String {
    format!(
        ".version 8.0\n.target sm_90a\n.address_size 64\n\
         .visible .entry k(\n .param .u64 k_param_0\n)\n{{\n\
         .reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<8>;\n\
         .shared .align 8 .b8 bar[8];\n.shared .align 16 .b8 tile[256];\n\
         {body}\n}}\n"
    )
}

#[test]
fn a_branch_on_global_memory_asks_for_an_assumption() {
    let text = kernel(
        "ld.param.u64 %rd1, [k_param_0];\n\
         cvta.to.global.u64 %rd2, %rd1;\n\
         ld.global.u32 %r1, [%rd2];\n\
         setp.eq.s32 %p1, %r1, 0;\n\
         @%p1 bra DONE;\n\
         mov.u32 %r2, tile;\n\
         st.shared.u32 [%r2], %r1;\n\
         DONE:\n\
         ret;",
    );
    let load = text
        .lines()
        .position(|l| l.starts_with("ld.global"))
        .unwrap()
        + 1;
    let e = err(&text, &opts(32, &[]));
    assert!(e.contains("loaded from global memory"), "{e}");
    assert!(e.contains(&format!("--assume {load}=VALUE")), "{e}");
    // With the assumption, the store happens (value 1) or not (value 0).
    let mut o = opts(32, &[]);
    o.assume = vec![(load.to_string(), 1)];
    let ex = ptx::extract(&text, "t.ptx", &o).unwrap();
    assert!(ex.text.contains("write tile"), "{}", ex.text);
    o.assume = vec![(load.to_string(), 0)];
    let ex = ptx::extract(&text, "t.ptx", &o).unwrap();
    assert!(!ex.text.contains("write tile"), "{}", ex.text);
}

#[test]
fn a_test_wait_outside_a_wait_loop_is_refused() {
    let text = kernel(
        "mov.u32 %r1, bar;\n\
         mov.u32 %r3, %tid.x;\n\
         setp.ne.s32 %p3, %r3, 0;\n\
         @%p3 bra SKIP;\n\
         mbarrier.init.shared::cta.b64 [%r1], 32;\n\
         SKIP:\n\
         bar.sync 0;\n\
         mbarrier.test_wait.parity.shared::cta.b64 %p1, [%r1], 0;\n\
         @%p1 bra DONE;\n\
         mov.u32 %r2, tile;\n\
         st.shared.u32 [%r2], %r1;\n\
         DONE:\n\
         ret;",
    );
    let e = err(&text, &opts(32, &[]));
    assert!(e.contains("not a blocking wait"), "{e}");
    assert!(e.contains("st.shared.u32"), "{e}");
}

#[test]
fn a_wait_loop_with_a_backoff_is_a_blocking_wait() {
    // The false path sleeps for a while that depends on the clock, then retries.
    let text = kernel(
        "mov.u32 %r1, bar;\n\
         mov.u32 %r3, %tid.x;\n\
         setp.ne.s32 %p3, %r3, 0;\n\
         @%p3 bra SKIP;\n\
         mbarrier.init.shared::cta.b64 [%r1], 32;\n\
         SKIP:\n\
         bar.sync 0;\n\
         mbarrier.arrive.shared::cta.b64 %rd1, [%r1];\n\
         mbarrier.try_wait.shared::cta.b64 %p1, [%r1], %rd1;\n\
         @%p1 bra DONE;\n\
         RETRY:\n\
         mov.u32 %r4, %clock;\n\
         and.b32 %r5, %r4, 1;\n\
         setp.eq.s32 %p2, %r5, 0;\n\
         @%p2 bra AGAIN;\n\
         nanosleep.u32 20;\n\
         AGAIN:\n\
         mbarrier.try_wait.shared::cta.b64 %p1, [%r1], %rd1;\n\
         @!%p1 bra RETRY;\n\
         DONE:\n\
         ret;",
    );
    let ex = ptx::extract(&text, "t.ptx", &opts(32, &[])).unwrap();
    assert!(ex.text.contains("let t0 = arrive bar"), "{}", ex.text);
    assert!(ex.text.contains("wait bar token t0"), "{}", ex.text);
}

/// A `try_wait` loop that gives up after 100 tries counted in a register, then writes the
/// tile either way, is no blocking wait: its path is followed round the loop while its state
/// changes, to the way out. (It used to be taken as a wait: the path closed at the first wait
/// it had passed before, whatever the counter.)
#[test]
fn a_wait_loop_that_gives_up_after_a_count_of_tries_is_refused() {
    let text = kernel(
        "mov.u32 %r1, bar;\n\
         mov.u32 %r3, %tid.x;\n\
         setp.ne.s32 %p3, %r3, 0;\n\
         @%p3 bra SKIP;\n\
         mbarrier.init.shared::cta.b64 [%r1], 32;\n\
         SKIP:\n\
         bar.sync 0;\n\
         mov.u32 %r6, 0;\n\
         RETRY:\n\
         mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;\n\
         @%p1 bra DONE;\n\
         add.s32 %r6, %r6, 1;\n\
         setp.lt.s32 %p2, %r6, 100;\n\
         @%p2 bra RETRY;\n\
         DONE:\n\
         mov.u32 %r2, tile;\n\
         st.shared.u32 [%r2], %r3;\n\
         ret;",
    );
    let e = err(&text, &opts(32, &[]));
    assert!(e.contains("not a blocking wait"), "{e}");
    assert!(e.contains("st.shared.u32"), "{e}");
    // Without the count it is a wait loop.
    let loop_only = "add.s32 %r6, %r6, 1;\nsetp.lt.s32 %p2, %r6, 100;\n@%p2 bra RETRY;";
    assert!(text.contains(loop_only));
    let forever = text.replace(loop_only, "bra RETRY;");
    let ex = ptx::extract(&forever, "t.ptx", &opts(32, &[])).unwrap_or_else(|e| panic!("{e}"));
    assert!(ex.text.contains("wait bar parity 0"), "{}", ex.text);
    // A count without a way out never repeats a state: refused (docs/ptx.md §5), not guessed.
    let counted = text.replace(loop_only, "add.s32 %r6, %r6, 1;\nbra RETRY;");
    let e = err(&counted, &opts(32, &[]));
    assert!(e.contains("does not come back to the wait within"), "{e}");
}

/// A consumer (warp 1) polls two barriers, filled by threads 0 and 1, until both are ready
/// (tinygemm2's `while (!w || !a)` after a first test of each): one statement with both outcomes
/// of the first tests, and the kernel verifies.
#[test]
fn a_poll_of_two_barriers_extracts_with_both_outcomes_of_its_first_tests() {
    let c = check("poll_two.ptx", &opts(34, &[("3", 4)]));
    let poll = "let ok0 = test_wait w_full[k % 2] parity k / 2 % 2; \
                let ok1 = test_wait a_full[k % 2] parity k / 2 % 2; \
                if ok0 == 0 || ok1 == 0 { wait w_full[k % 2] parity k / 2 % 2; \
                wait a_full[k % 2] parity k / 2 % 2 }";
    assert!(c.ex.text.contains(poll), "{}", c.ex.text);
    let line = line_of("poll_two.cu", "bool w_ready = mb_try");
    assert!(
        c.ex.text.contains(&format!("poll_two.cu:{line} ")),
        "the poll names its first test's line {line}:\n{}",
        c.ex.text
    );
    assert_ok(&c);
}

/// `-DEITHER`: the loop goes on as soon as one of the two barriers is ready, so a consumer can
/// read a stage whose other half has not landed. That is no poll the front end follows (the
/// thread can go past it with a failed last test): refused, naming the test.
#[test]
fn a_poll_that_goes_on_when_either_barrier_is_ready_is_refused() {
    let e = match ptx::extract(
        &read("poll_two_either.ptx"),
        "e.ptx",
        &opts(34, &[("3", 4)]),
    ) {
        Ok(ex) => panic!("extracted:\n{}", ex.text),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("is not a blocking wait"), "{e}");
    assert!(
        e.contains("without having seen the barrier of test 2 of the poll complete"),
        "{e}"
    );
}

/// Thread 0 completes two barriers; the others test both, then poll until both are ready,
/// setting a flag in the loop (`r6`), then store to `tile` and run `after`.
fn poll_kernel(after: &str) -> String {
    format!(
        ".version 8.0\n.target sm_90a\n.address_size 64\n\
         .visible .entry k(\n .param .u64 k_param_0\n)\n{{\n\
         .reg .pred %p<8>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<8>;\n\
         .shared .align 8 .b8 bar[16];\n.shared .align 16 .b8 tile[256];\n\
         mov.u32 %r1, bar;\n\
         add.u32 %r2, %r1, 8;\n\
         mov.u32 %r3, %tid.x;\n\
         setp.ne.s32 %p5, %r3, 0;\n\
         @%p5 bra SKIP;\n\
         mbarrier.init.shared::cta.b64 [%r1], 1;\n\
         mbarrier.init.shared::cta.b64 [%r2], 1;\n\
         SKIP:\n\
         bar.sync 0;\n\
         @%p5 bra CONSUME;\n\
         mbarrier.arrive.shared::cta.b64 %rd1, [%r1];\n\
         mbarrier.arrive.shared::cta.b64 %rd2, [%r2];\n\
         ret;\n\
         CONSUME:\n\
         mov.u32 %r6, 0;\n\
         mbarrier.test_wait.parity.shared::cta.b64 %p1, [%r1], 0;\n\
         mbarrier.test_wait.parity.shared::cta.b64 %p2, [%r2], 0;\n\
         and.pred %p3, %p1, %p2;\n\
         @%p3 bra DONE;\n\
         LOOP:\n\
         mov.u32 %r6, 1;\n\
         mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;\n\
         mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;\n\
         and.pred %p3, %p1, %p2;\n\
         @!%p3 bra LOOP;\n\
         DONE:\n\
         mov.u32 %r4, tile;\n\
         st.shared.u32 [%r4], %r3;\n\
         {after}\n\
         END:\n\
         ret;\n}}\n"
    )
}

/// What the poll's outcomes agree on is known after it; what they do not (the flag the loop
/// sets) is unknown, and a branch on it is an error, never a guess.
#[test]
fn after_a_poll_only_what_all_its_outcomes_agree_on_is_known() {
    let ex = ptx::extract(&poll_kernel(""), "t.ptx", &opts(32, &[])).unwrap();
    assert!(
        ex.text.contains(
            "let ok0 = test_wait bar[0] parity 0; let ok1 = test_wait bar[1] parity 0; \
             if ok0 == 0 || ok1 == 0 { wait bar[0] parity 0; wait bar[1] parity 0 }"
        ),
        "{}",
        ex.text
    );
    assert!(ex.text.contains("write tile"), "{}", ex.text);
    let e = err(
        &poll_kernel("setp.eq.s32 %p4, %r6, 0;\n@%p4 bra END;\nst.shared.u32 [%r4+4], %r3;"),
        &opts(32, &[]),
    );
    assert!(e.contains("depends on the outcomes of the poll"), "{e}");
}

/// `kernel` whose threads branch on the word at `tile` after running `before` (every thread):
/// thread 1 writes the shared symbol `bar` (a buffer here) when the word is 7.
fn branch_on_shared(before: &str) -> String {
    kernel(&format!(
        "mov.u32 %r1, %tid.x;\n\
         mov.u32 %r2, tile;\n\
         {before}\n\
         ld.shared.u32 %r3, [%r2];\n\
         setp.ne.s32 %p1, %r3, 7;\n\
         setp.ne.s32 %p2, %r1, 1;\n\
         or.pred %p3, %p1, %p2;\n\
         @%p3 bra DONE;\n\
         mov.u32 %r7, bar;\n\
         st.shared.u32 [%r7], %r1;\n\
         DONE:\n\
         ret;"
    ))
}

#[test]
fn a_value_stored_before_a_block_barrier_is_known_after_it() {
    // Thread 0 stores 7, the block passes __syncthreads, every thread loads it.
    let text = branch_on_shared(
        "setp.ne.s32 %p1, %r1, 0;\n\
         @%p1 bra SKIP;\n\
         mov.u32 %r4, 7;\n\
         st.shared.u32 [%r2], %r4;\n\
         SKIP:\n\
         bar.sync 0;",
    );
    let ex = ptx::extract(&text, "t.ptx", &opts(64, &[])).unwrap_or_else(|e| panic!("{e}"));
    assert!(ex.text.contains("write bar"), "{}", ex.text);
    // Another value: no write.
    let ex = ptx::extract(
        &text.replace("mov.u32 %r4, 7;", "mov.u32 %r4, 8;"),
        "t.ptx",
        &opts(64, &[]),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(!ex.text.contains("write bar"), "{}", ex.text);
    // A barrier of only some threads (`bar.sync 1, 32`) does not order the store for all:
    // the value stays unknown, and the branch on it is an error.
    let e = err(
        &text.replace("bar.sync 0;", "bar.sync 1, 64;"),
        &opts(96, &[]),
    );
    assert!(e.contains("loaded from shared memory"), "{e}");
    // No barrier at all: unknown.
    let e = err(&text.replace("bar.sync 0;", ""), &opts(64, &[]));
    assert!(e.contains("loaded from shared memory"), "{e}");
}

#[test]
fn writes_of_one_epoch_must_agree_for_a_value_to_be_known() {
    // Every thread stores its own tid: which one lands last is not known.
    let e = err(
        &branch_on_shared("st.shared.u32 [%r2], %r1;\nbar.sync 0;"),
        &opts(64, &[]),
    );
    assert!(e.contains("loaded from shared memory"), "{e}");
    // Every thread stores the same 7: known.
    let ex = ptx::extract(
        &branch_on_shared("mov.u32 %r4, 7;\nst.shared.u32 [%r2], %r4;\nbar.sync 0;"),
        "t.ptx",
        &opts(64, &[]),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(ex.text.contains("write bar"), "{}", ex.text);
}

/// Check an extracted protocol (exhaustively: every finding).
fn verify_text(ex: &ptx::Extracted) -> checker::Report {
    let file = SourceFile::new("t.phase", &ex.text);
    let program = protocols::load(&file, &[]).unwrap_or_else(|e| panic!("{e:?}\n{}", ex.text));
    let o = CheckOptions {
        exhaustive: true,
        ..CheckOptions::default()
    };
    checker::check(&program, &o)
}

/// A store whose bytes the executor knows, the same in every run of the instruction, is
/// `write X value N` (semantics.md §6.1, "Same-value stores"): the stores of every thread are
/// a `same-value-store` warning, not a `data-race`. A store of a per-thread value, of an
/// unknown value, or of the same value through another instruction shape gets no value or
/// another one.
#[test]
fn stores_of_known_bytes_carry_their_value() {
    let body = |store: &str| {
        kernel(&format!(
            "mov.u32 %r1, %tid.x;\n\
             mov.u32 %r2, tile;\n\
             {store}\n\
             bar.sync 0;\n\
             ld.shared.u32 %r3, [%r2];\n\
             ret;"
        ))
    };
    let extract =
        |text: &str| ptx::extract(text, "t.ptx", &opts(64, &[])).unwrap_or_else(|e| panic!("{e}"));
    // Every thread stores the same vector constant (Triton's dispatch bytes).
    let ex = extract(&body("st.shared.v2.b32 [%r2], {0, 16843009};"));
    assert!(ex.text.contains("write tile value 1"), "{}", ex.text);
    assert!(
        ex.notes
            .iter()
            .any(|n| n.contains("1 = 00 00 00 00 01 01 01 01 (2 stores of 4 bytes) at `tile`+0")),
        "{:?}",
        ex.notes
    );
    let r = verify_text(&ex);
    let rules: Vec<&str> = r.findings.iter().map(|f| f.rule.name).collect();
    assert_eq!(rules, ["same-value-store"], "{}", ex.text);
    assert_eq!(r.verdict, checker::Verdict::Ok);
    // A register the executor computed: known too (every thread computes 7).
    let ex = extract(&body(
        "mov.u32 %r4, 3;\nadd.u32 %r5, %r4, 4;\nst.shared.u32 [%r2], %r5;",
    ));
    assert!(ex.text.contains("write tile value 1"), "{}", ex.text);
    // Each thread stores its own tid: no value, a data race.
    let ex = extract(&body("st.shared.u32 [%r2], %r1;"));
    assert!(!ex.text.contains(" value "), "{}", ex.text);
    let r = verify_text(&ex);
    assert!(
        r.findings.iter().any(|f| f.rule.name == "data-race"),
        "{}",
        ex.text
    );
    // An unknown value (loaded from global memory): no value.
    let ex = extract(&body(
        "ld.param.u64 %rd1, [k_param_0];\n\
         cvta.to.global.u64 %rd2, %rd1;\n\
         ld.global.u32 %r6, [%rd2];\n\
         st.shared.u32 [%r2], %r6;",
    ));
    assert!(!ex.text.contains(" value "), "{}", ex.text);
    // Thread 0 stores the 8 bytes as one b64, the others as two b32: the same bytes through
    // stores of another size are another value, and race.
    let ex = extract(&body(
        "setp.eq.u32 %p1, %r1, 0;\n\
         @%p1 bra ONE;\n\
         st.shared.v2.b32 [%r2], {0, 16843009};\n\
         bra.uni DONE_ST;\n\
         ONE:\n\
         mov.b64 %rd3, 72340172821233664;\n\
         st.shared.b64 [%r2], %rd3;\n\
         DONE_ST:",
    ));
    assert!(
        ex.text.contains("value 1") && ex.text.contains("value 2"),
        "{}",
        ex.text
    );
    let r = verify_text(&ex);
    assert!(
        r.findings.iter().any(|f| f.rule.name == "data-race"),
        "{}",
        ex.text
    );
}

#[test]
fn atomic_additions_of_one_epoch_add_up() {
    // Thread 0 zeroes the counter; after a barrier, threads 0..6 add 1 each (atom.add, whose
    // order does not matter); after another, the counter is 7.
    let text = branch_on_shared(
        "setp.ne.s32 %p1, %r1, 0;\n\
         @%p1 bra Z;\n\
         mov.u32 %r4, 0;\n\
         st.shared.u32 [%r2], %r4;\n\
         Z:\n\
         bar.sync 0;\n\
         setp.gt.u32 %p1, %r1, 6;\n\
         @%p1 bra A;\n\
         atom.shared.add.u32 %r5, [%r2], 1;\n\
         A:\n\
         bar.sync 0;",
    );
    let ex = ptx::extract(&text, "t.ptx", &opts(64, &[])).unwrap_or_else(|e| panic!("{e}"));
    assert!(ex.text.contains("write bar"), "{}", ex.text);
    // The counter is touched by the plain store and the load too: its accesses stay (as
    // writes and reads), so the atomics are not left out.
    assert!(!ex.text.contains("left out"), "{}", ex.text);
    // Eight adders: 8, no write by thread 1.
    let ex = ptx::extract(
        &text.replace("%p1, %r1, 6;", "%p1, %r1, 7;"),
        "t.ptx",
        &opts(64, &[]),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(!ex.text.contains("write bar"), "{}", ex.text);
}

#[test]
fn shared_memory_that_only_atomics_touch_is_left_out() {
    // Every thread adds to a counter and nothing else reads or writes it: no race, no buffer.
    let text = kernel(
        "mov.u32 %r2, tile;\n\
         atom.shared.add.u32 %r5, [%r2], 1;\n\
         ret;",
    );
    let ex = ptx::extract(&text, "t.ptx", &opts(64, &[])).unwrap_or_else(|e| panic!("{e}"));
    assert!(!ex.text.contains("buffer"), "{}", ex.text);
    assert!(ex.text.contains("left out"), "{}", ex.text);
    // With a plain load of it, every access stays: the atomics race with the load.
    let text = kernel(
        "mov.u32 %r2, tile;\n\
         atom.shared.add.u32 %r5, [%r2], 1;\n\
         ld.shared.u32 %r6, [%r2];\n\
         ret;",
    );
    let ex = ptx::extract(&text, "t.ptx", &opts(64, &[])).unwrap_or_else(|e| panic!("{e}"));
    assert!(ex.text.contains("buffer"), "{}", ex.text);
}

#[test]
fn bfind_shiftamt_is_the_shift_of_the_top_bit() {
    // libcu++ picks a warp's lowest lane as `bfind.shiftamt(brev(mask))`: for lanes {0, 1}
    // that is lane 0 (shift 0), not 31 (the bit index bfind gives without .shiftamt).
    for (op, want) in [("bfind.shiftamt.u32", 0), ("bfind.u32", 31)] {
        let text = kernel(&format!(
            "mov.u32 %r1, 3;\n\
             brev.b32 %r2, %r1;\n\
             {op} %r3, %r2;\n\
             setp.ne.s32 %p1, %r3, {want};\n\
             @%p1 bra DONE;\n\
             mov.u32 %r4, tile;\n\
             st.shared.u32 [%r4], %r3;\n\
             DONE:\n\
             ret;"
        ));
        let ex = ptx::extract(&text, "t.ptx", &opts(32, &[])).unwrap_or_else(|e| panic!("{e}"));
        assert!(ex.text.contains("write tile"), "{op}: {}", ex.text);
    }
}

/// The PTX line of the first `atom.add.acquire` (the libcu++ pipeline destructor's fetch_add:
/// its old value picks the last thread to leave, which invalidates the barriers).
fn destructor_atomic(name: &str) -> String {
    let line = read(name)
        .lines()
        .position(|l| l.contains("atom.add.acquire"))
        .unwrap_or_else(|| panic!("no atom.add.acquire in {name}"))
        + 1;
    line.to_string()
}

fn pipeline_opts(name: &str, batches: i64) -> ptx::Options {
    let mut o = opts(96, &[("2", batches)]);
    o.assume = vec![(destructor_atomic(name), 0)];
    o
}

#[test]
fn libcu_pipeline_copy_verifies() {
    let name = "pipeline_copy.ptx";
    // Without --assume the destructor's "am I the last" branch is an error naming the line.
    let e = err(&read(name), &opts(96, &[("2", 2)]));
    assert!(e.contains("old value returned by an atomic"), "{e}");
    assert!(
        e.contains(&format!("--assume {}=VALUE", destructor_atomic(name))),
        "{e}"
    );
    let c = check(name, &pipeline_opts(name, 2));
    assert_ok(&c);
    // The pipeline's barriers are counted from the roles: 32 producers, 64 consumers, read by
    // thread 0 from the count the producers added up before a __syncthreads.
    assert!(c.ex.text.contains("init state[0], 32"), "{}", c.ex.text);
    assert!(c.ex.text.contains("init state[1], 64"), "{}", c.ex.text);
}

#[test]
fn libcu_pipeline_count_bug_is_a_deadlock_at_the_consumer_wait() {
    let name = "pipeline_copy_count_bug.ptx";
    let c = check(name, &pipeline_opts(name, 2));
    assert_eq!(c.report.verdict, Verdict::Hazard, "{}", c.ex.text);
    let wait = line_of("pipeline_copy.cu", "pipe.consumer_wait();");
    let lines = finding_lines(&c);
    assert!(
        lines
            .iter()
            .any(|(f, l, r)| f.ends_with("pipeline_copy.cu") && *l == wait && *r == "deadlock"),
        "no deadlock at pipeline_copy.cu:{wait}: {lines:?}"
    );
    // The count of 64 producers comes from the `// BUG` line.
    let bug = line_of("pipeline_copy.cu", "// BUG");
    assert!(
        c.ex.text
            .lines()
            .any(|l| l.contains("init state[0], 64")
                && l.contains(&format!("pipeline_copy.cu:{bug} "))),
        "{}",
        c.ex.text
    );
}

/// The rule names of the error-level findings.
fn errors(c: &Checked) -> Vec<&'static str> {
    c.report
        .findings
        .iter()
        .filter(|f| f.severity == checker::Severity::Error)
        .map(|f| f.rule.name)
        .collect()
}

/// Lane 0 of two warps writes a flag before the `bar.sync 1, 64` that both warps run at one
/// instruction: the extra write is under `if` inside one role, the barrier is one statement,
/// and the kernel verifies (before roles were merged across a warp, lane 0 was a role of its
/// own and its barrier a different statement: `barrier-divergence`).
#[test]
fn a_warp_split_around_one_named_barrier_is_one_statement() {
    let c = check("warp_split.ptx", &opts(96, &[]));
    assert_ok(&c);
    let syncs: Vec<&str> =
        c.ex.text
            .lines()
            .filter(|l| l.trim_start().starts_with("bar_sync 1, 64"))
            .collect();
    assert_eq!(syncs.len(), 1, "{}", c.ex.text);
    // At the role's top level, not under the `if` of lane 0's write.
    assert!(syncs[0].starts_with("  bar_sync"), "{}", c.ex.text);
    assert!(c.ex.text.contains("  if lane == 0"), "{}", c.ex.text);
}

/// `-DDIVERGENT`: lane 0 and lanes 1..31 reach *different* `bar.sync 1, 64` instructions,
/// which is undefined behaviour (bar.sync is `.aligned`). The merged role keeps them as two
/// statements under their conditions, and the checker reports the divergence at both lines.
#[test]
fn lanes_of_a_warp_at_different_named_barrier_instructions_diverge() {
    let c = check("warp_split_divergent.ptx", &opts(96, &[]));
    assert_eq!(c.report.verdict, Verdict::Hazard, "{}", c.ex.text);
    assert!(!errors(&c).is_empty(), "{}", c.ex.text);
    assert!(
        errors(&c).iter().all(|r| *r == "barrier-divergence"),
        "{:?}\n{}",
        c.report.findings,
        c.ex.text
    );
    assert_finding_at(&c, "warp_split.cu", line_of("warp_split.cu", "// BUG"));
}

/// Two warps of one named barrier in different roles (only the first warp meets at a
/// `__syncwarp` and lets lane 0 store: CUTLASS's consumer warp group, whose first warp issues
/// the epilogue's TMA store) wait at one `bar.sync 1, 64` instruction: the roles are merged
/// there, the barrier is one statement, the first warp's `syncwarp` is kept under its whole-warp
/// guard, and the kernel verifies. As two roles it was two statements and a false
/// `barrier-divergence` (CUTLASS Pingpong, sm90_epilogue_tma_warpspecialized.hpp:711).
#[test]
fn warps_of_different_roles_at_one_named_barrier_instruction_are_one_statement() {
    let c = check("warp_groups_bar.ptx", &opts(96, &[]));
    assert_ok(&c);
    let syncs =
        c.ex.text
            .lines()
            .filter(|l| l.trim_start().starts_with("bar_sync 1, 64"))
            .count();
    assert_eq!(syncs, 1, "{}", c.ex.text);
    // The first warp's `__syncwarp` still orders lane 31's write before lane 0's read.
    assert!(
        c.ex.text.contains("if warp == 0 {\n    syncwarp"),
        "{}",
        c.ex.text
    );
}

/// `-DDIVERGENT`: the second warp waits at another `bar.sync 1, 64` instruction: still
/// `barrier-divergence`, at the `// BUG` line.
#[test]
fn warps_at_different_named_barrier_instructions_still_diverge() {
    let c = check("warp_groups_bar_divergent.ptx", &opts(96, &[]));
    assert_eq!(c.report.verdict, Verdict::Hazard, "{}", c.ex.text);
    assert_eq!(errors(&c), vec!["barrier-divergence"], "{}", c.ex.text);
    assert_finding_at(
        &c,
        "warp_groups_bar.cu",
        line_of("warp_groups_bar.cu", "// BUG"),
    );
}

fn triton_opts(k: i64) -> ptx::Options {
    // M, N, K (parameters 15-17); the bytes one copy through each tensor descriptor moves: A
    // 64 x 64 and B 128 x 64 fp16 per k-tile (8 192 + 16 384 = the 24 576 bytes expected per
    // stage), and C 64 x 64 fp16: Triton stores the 64 x 128 tile of a partition as two 64 x 64
    // boxes (the elected lanes of two warps, from shared offsets 8 192 apart, at columns 64
    // apart). The block size is the kernel's .reqntid (384).
    ptx::Options {
        args: [
            ("15", 64),
            ("16", 128),
            ("17", k),
            ("0", 8192),
            ("5", 16384),
            ("10", 8192),
        ]
        .iter()
        .map(|(a, v)| (a.to_string(), *v))
        .collect(),
        ..Default::default()
    }
}

#[test]
fn triton_warp_specialized_matmul_extracts() {
    // Triton's warp specialization dispatches the worker warps on a byte the default warps
    // store before a `barrier.sync 1` (shared memory ordered by a block-wide barrier).
    let name = "triton/matmul_ws.ptx";
    let ex = ptx::extract(&read(name), name, &triton_opts(256)).unwrap_or_else(|e| panic!("{e}"));
    assert!(ex.text.contains("block 384"), "{}", ex.text);
    // The producer partition: the elected thread expects the bytes of both tiles and issues
    // the two TMA copies of each k-tile (64 x 64 + 128 x 64 fp16).
    assert!(
        ex.text.contains("arrive_expect_tx global_smem_bar["),
        "{}",
        ex.text
    );
    assert!(ex.text.contains(", 24576"), "{}", ex.text);
    assert_eq!(
        ex.text.matches("    tma global_smem[").count() % 2,
        0,
        "{}",
        ex.text
    );
    // The consumer partition: waits for a stage and reads it with wgmma, then the epilogue's
    // TMA store.
    assert!(ex.text.contains("mma global_smem["), "{}", ex.text);
    assert!(ex.text.contains("tma_store global_smem["), "{}", ex.text);
    // Without the dispatch byte's value the workers could not be run: it is read, not assumed.
    assert!(!ex.text.contains("--assume"), "{}", ex.text);
}

/// The PTX lines (1-based) of the dispatch-byte stores: every thread of the default
/// partition stores `{0, 16843009}` (the worker partitions' dispatch bytes) and, at the end,
/// `{33686018, 33686018}` at `global_smem+106648`.
fn triton_dispatch_stores(ptx: &str) -> Vec<u32> {
    ptx.lines()
        .enumerate()
        .filter(|(_, l)| l.contains("st.shared.v2.b32") && l.contains("[global_smem+106648]"))
        .map(|(i, _)| i as u32 + 1)
        .collect()
}

/// The whole kernel verifies at its 384 threads, exhaustively, at 1, 2 and (release builds) 4 k-tiles: `ok`,
/// with one `same-value-store` warning at each of the two dispatch stores (docs/ptx.md §6).
/// What it takes, each pinned here:
/// - the dispatch stores carry their value (`write global_smem[..] value 1`): 128 threads store
///   the same bytes unordered, which PTX defines (semantics.md §6.1), not a `data-race`;
/// - the `bar.sync 0, 128`s of the producer warp group are one statement for the 128 threads
///   (one role, under no `if`): no false `barrier-divergence` (it was, when the elected thread
///   was a role of its own);
/// - the block-wide `barrier.sync 1` without `.aligned`, which the partitions reach at different
///   instructions, is `bar_sync 1 unaligned`: no false `barrier-divergence`; being a whole-block
///   barrier it publishes the barrier inits (no false `init-not-visible`);
/// - the epilogue's `stmatrix` writes one 16-byte row per lane at a swizzled offset, a GF(2)
///   map of `tid` (`write ... bytes (0 ^ tid % 2 * 144 ^ ...) .. +16`): each lane keeps its own
///   bytes (no false race between the lanes, or between the two partitions). Before that fit
///   the halves were regions of their own written in parts (`write part`), which took 5 802,
///   7 473 and 10 816 states at 1, 2 and 4 k-tiles (now 8 874 and 18 496 at 1 and 4);
/// - the search completes: whole-block arrivals and writes of one value are taken alone by the
///   partial-order reduction (without that, and with the dispatch stores as races, 550 000
///   states at 2 k-tiles did not finish).
#[test]
fn triton_warp_specialized_matmul_verifies() {
    let name = "triton/matmul_ws.ptx";
    let ptx = read(name);
    let stores = triton_dispatch_stores(&ptx);
    assert_eq!(stores.len(), 2, "{stores:?}");
    // 4 k-tiles only in an optimized build: since the swizzled rows keep their bytes its
    // exhaustive search takes about 45 s in release (docs/performance.md), many minutes in a
    // debug build; 1 and 2 k-tiles already run the loop twice.
    let ks: &[i64] = if cfg!(debug_assertions) {
        &[64, 128]
    } else {
        &[64, 128, 256]
    };
    for &k in ks {
        let ex = ptx::extract(&ptx, name, &triton_opts(k)).unwrap_or_else(|e| panic!("{e}"));
        // The `bar.sync 0, 128`s of the producer warp group: one role, under no `if`.
        let mut roles = Vec::new();
        let mut blocks: Vec<&str> = Vec::new();
        for l in ex.text.lines().map(str::trim) {
            if l.starts_with("role ") {
                roles.push(l);
                blocks.clear();
            } else if l.ends_with('{') {
                blocks.push(l);
            } else if l == "}" {
                blocks.pop();
            } else if l.starts_with("bar_sync 0, 128") {
                assert!(
                    blocks.iter().all(|b| !b.starts_with("if ")),
                    "K = {k}: {l} under {blocks:?}\n{}",
                    ex.text
                );
                let role = *roles.last().expect("in a role");
                assert!(role.contains("warp <= 3"), "K = {k}: {role}\n{}", ex.text);
            }
        }
        assert!(ex.text.contains("bar_sync 0, 128"), "{}", ex.text);
        assert!(ex.text.contains("bar_sync 1 unaligned"), "{}", ex.text);
        assert!(
            ex.text
                .lines()
                .any(|l| l.contains("write global_smem[") && l.contains(" ^ tid % 2 * 144 ^ ")),
            "{}",
            ex.text
        );
        // The dispatch stores: two values (the bytes differ), each from every producer thread.
        for v in [1, 2] {
            let line = ex
                .text
                .lines()
                .position(|l| l.contains(&format!("] value {v}")))
                .unwrap_or_else(|| panic!("K = {k}: no `value {v}`\n{}", ex.text));
            let o = ex.lines[line].as_ref().expect("an origin");
            assert!(
                o.ptx_lines.iter().all(|l| stores.contains(l)),
                "{:?} {stores:?}",
                o.ptx_lines
            );
        }
        let file = SourceFile::new(name, &ex.text);
        let program = protocols::load(&file, &[]).unwrap_or_else(|e| panic!("{e:?}"));
        let report = checker::check(
            &program,
            &CheckOptions {
                exhaustive: true,
                ..CheckOptions::default()
            },
        );
        let c = Checked { ex, file, report };
        assert!(
            c.report.incomplete.is_none(),
            "K = {k}: {:?}",
            c.report.incomplete
        );
        assert_eq!(
            c.report.verdict,
            Verdict::Ok,
            "K = {k}: {:?}",
            c.report.findings
        );
        let found: Vec<(&str, Vec<u32>)> = c
            .report
            .findings
            .iter()
            .map(|f| {
                let line = c.file.line_of(f.span);
                let o = c.ex.lines[line as usize - 1].as_ref().expect("an origin");
                (f.rule.name, o.ptx_lines.clone())
            })
            .collect();
        assert_eq!(
            found,
            stores
                .iter()
                .map(|&l| ("same-value-store", vec![l]))
                .collect::<Vec<_>>(),
            "K = {k}"
        );
    }
}

/// FlashInfer's sm90 epilogue at two warps: every thread stores its element, then `bar.arrive
/// 1, 64` and later `bar.sync 1, 64` (the same threads, a count of all of them), then reads the
/// other warp's element. A warp's arrive and sync both count, so one warp completes the use
/// alone: the read races with the other warp's store (seen on an H200 in FlashInfer itself:
/// docs/gpu.md, "FlashInfer's epilogue barrier"). The race is reported at the read, with the
/// store as the other access.
#[test]
fn arrive_then_sync_by_the_same_threads_races() {
    let c = check("epilogue_arrive_sync.ptx", &opts(64, &[]));
    assert_eq!(c.report.verdict, Verdict::Hazard, "{}", c.ex.text);
    assert_eq!(errors(&c), vec!["data-race"], "{}", c.ex.text);
    for marker in ["out[tid] = tile[63 - tid]", "tile[tid] = out[tid] + 1"] {
        let cu = "epilogue_arrive_sync.cu";
        assert_finding_at(&c, cu, line_of(cu, marker));
    }
}

/// The fix (`-DFIXED`): the `bar.arrive` left out, the `bar.sync 1, 64` is one use of both
/// warps and orders every store before every read: ok (0 of 560 000 instrumented FlashInfer
/// launches went wrong with the same fix).
#[test]
fn sync_alone_orders_the_epilogue() {
    let c = check("epilogue_arrive_sync_fixed.ptx", &opts(64, &[]));
    assert_ok(&c);
}

/// `elect_one.cu`: each warp's `elect.sync` leader arrives (CUTLASS's `elect_one_sync()`
/// shape). The extraction takes the lowest lane as the leader and says so in a note naming
/// the `elect.sync` line (docs/ptx.md, "elect.sync"); the kernel verifies.
#[test]
fn elect_sync_takes_the_lowest_lane_and_says_so() {
    let c = check("elect_one.ptx", &opts(64, &[]));
    assert_ok(&c);
    let ptx = read("elect_one.ptx");
    let line = ptx
        .lines()
        .position(|l| l.trim_start().starts_with("elect.sync"))
        .expect("an elect.sync")
        + 1;
    let note =
        c.ex.notes
            .iter()
            .find(|n| n.contains("elect.sync"))
            .unwrap_or_else(|| panic!("no note on elect.sync: {:?}", c.ex.notes));
    assert!(
        note.contains(&format!("PTX line {line} ")),
        "the note does not name PTX line {line}: {note}"
    );
    assert!(c.ex.text.contains("Note: `elect.sync`"), "{}", c.ex.text);
    // The elected lane's arrival is written for lane 0 of each warp.
    assert!(c.ex.text.contains("lane == 0"), "{}", c.ex.text);
}

/// An `elect.sync` whose mask holds a single live lane (a block of one thread) chooses
/// nothing: no note.
#[test]
fn an_elect_of_one_lane_needs_no_note() {
    let name = "elect_one.ptx";
    let ex = ptx::extract(&read(name), name, &opts(1, &[])).expect("extracts");
    assert!(
        !ex.notes.iter().any(|n| n.contains("elect.sync")),
        "{:?}",
        ex.notes
    );
    let ex = ptx::extract(&read(name), name, &opts(2, &[])).expect("extracts");
    assert!(ex.notes.iter().any(|n| n.contains("elect.sync")));
}
