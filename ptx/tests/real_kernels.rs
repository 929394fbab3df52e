//! What real kernels (CUTLASS, DeepGEMM, ThunderKittens, FA3; issue 23) need of the PTX front
//! end, on small fixtures written to have their shapes (`fixtures/wgmma_lambda.cu`,
//! `fixtures/many_roles.cu`): a WGMMA glued to its `{`, statements inside lambdas, inlined
//! calls on neighbouring lines, 512-thread blocks with many role ranges, blocks smaller than
//! the kernel's `.maxntid`, lanes released by lane 0 after a warp-converged instruction
//! (`fixtures/warp_converged.cu`); and that every fixture's extraction loads.

mod common;
use checker::{CheckOptions, Verdict};
use common::*;
use protocols::SourceFile;
use std::path::Path;

fn opts(block: Option<u32>, args: &[(&str, i64)], assume: &[(String, i64)]) -> ptx::Options {
    ptx::Options {
        block: block.map(|b| [b, 1, 1]),
        args: args.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        assume: assume.to_vec(),
        ..Default::default()
    }
}

fn extract(name: &str, o: &ptx::Options) -> ptx::Extracted {
    ptx::extract(&read(name), name, o).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn check(name: &str, o: &ptx::Options) -> (ptx::Extracted, checker::Report) {
    let ex = extract(name, o);
    let file = SourceFile::new(name, &ex.text);
    let program = protocols::load(&file, &[])
        .unwrap_or_else(|e| panic!("{name} does not load: {e:?}\n{}", ex.text));
    let report = checker::check(&program, &CheckOptions::default());
    (ex, report)
}

/// The line of the extracted text that starts with `stmt` (trimmed) and its comment's CUDA line.
fn cuda_line(ex: &ptx::Extracted, cu: &str, stmt: &str) -> u32 {
    let lines: Vec<&str> = ex.text.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.trim_start().starts_with(stmt))
        .unwrap_or_else(|| panic!("no `{stmt}` in\n{}", ex.text));
    let (file, line) = ex
        .source_of_line(i as u32 + 1)
        .unwrap_or_else(|| panic!("`{stmt}` has no source line"));
    assert!(file.ends_with(cu), "{file}");
    line
}

/// The CUDA lines of the first `data-race`'s statements (the race and its labels).
fn first_race_lines(name: &str, ex: &ptx::Extracted, report: &checker::Report) -> Vec<u32> {
    let race = report
        .findings
        .iter()
        .find(|f| f.rule.name == "data-race")
        .unwrap_or_else(|| panic!("no data-race: {:?}\n{}", report.findings, ex.text));
    let file = SourceFile::new(name, &ex.text);
    std::iter::once(race.span)
        .chain(race.labels.iter().map(|l| l.span))
        .filter_map(|sp| ex.source_of_line(file.line_of(sp)).map(|(_, l)| l))
        .collect()
}

fn wgmma_lambda() -> ptx::Options {
    opts(Some(256), &[("3", 4)], &[])
}

/// DeepGEMM's inline assembly writes `wgmma.mma_async...e4m3.e4m3{%f1, ...}`: ptxas reads the
/// opcode up to the `{`. Read at the first blank, the opcode swallowed the first accumulator
/// and the descriptors were read from the accumulators (0.0), so every WGMMA was left out
/// without a word.
#[test]
fn a_wgmma_glued_to_its_brace_is_read() {
    let (ex, report) = check("wgmma_lambda.ptx", &wgmma_lambda());
    for want in ["mma smem_a[k % 2]", "mma smem_b[k % 2]"] {
        assert!(ex.text.contains(want), "no `{want}` in\n{}", ex.text);
    }
    // FP8 operands are one byte: a stage of A is 64 x 32 bytes, one WGMMA reads one stage.
    assert!(ex.text.contains("buffer   smem_a[2]"), "{}", ex.text);
    assert_eq!(report.verdict, Verdict::Ok, "{:?}", report.findings);
}

/// One math warp (the quick size), three k-tiles: stage 0 is refilled for the third.
fn warp_converged() -> ptx::Options {
    opts(Some(160), &[("3", 3)], &[])
}

/// DeepGEMM's math warps (issue 23 point 7): every lane reads its scale with a plain load, the
/// warp runs `wgmma.fence` ... `wgmma.wait_group` (`.sync.aligned`: all lanes together), and
/// lane 0 releases the stage for the producer's TMA refill. The converged instructions are a
/// `syncwarp` of the warp (one per run of them with accesses on both sides), so the lanes'
/// reads are ordered before lane 0's arrive; taken as 32 independent lanes, lanes 1..31's
/// reads raced with the refill.
#[test]
fn lanes_released_by_lane_0_after_a_warp_converged_instruction_verify() {
    let (ex, report) = check("warp_converged.ptx", &warp_converged());
    let syncwarps: Vec<&str> = ex
        .text
        .lines()
        .filter(|l| l.trim_start().starts_with("syncwarp"))
        .collect();
    assert_eq!(syncwarps.len(), 2, "{}", ex.text);
    let cu = "warp_converged.cu";
    assert_eq!(
        cuda_line(&ex, cu, "syncwarp"),
        line_of(cu, "wgmma.fence.sync.aligned")
    );
    assert!(
        syncwarps[1].contains(&format!(
            "{cu}:{}",
            line_of(cu, "wgmma.wait_group.sync.aligned")
        )),
        "{}",
        ex.text
    );
    assert_eq!(
        report.verdict,
        Verdict::Ok,
        "{:?}\n{}",
        report.findings,
        ex.text
    );
}

/// The same with the scale read after `wgmma.wait_group`, right before lane 0's arrive: no
/// converged instruction orders lanes 1..31's reads before the release, so they race with the
/// refill (only a converged instruction *between* the access and the release orders it).
#[test]
fn a_read_with_no_converged_instruction_before_lane_0_s_release_stays_a_race() {
    let (ex, report) = check("warp_converged_no_converge.ptx", &warp_converged());
    let cu = "warp_converged.cu";
    let read = read(cu)
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("const float scale = smem_sfa"))
        .map(|(i, _)| i as u32 + 1)
        .last()
        .expect("the late scale read");
    let lines = first_race_lines("warp_converged_no_converge.ptx", &ex, &report);
    assert!(lines.contains(&read), "{lines:?} (the read is line {read})");
}

/// ThunderKittens' consumers: 256 threads, the second warpgroup's WGMMAs, four k-tiles (stage 0
/// is refilled for the third).
fn warpgroup_release() -> ptx::Options {
    ptx::Options {
        kernel: Some("warpgroup_release".into()),
        ..opts(Some(256), &[("2", 4)], &[])
    }
}

/// One thread releases the stage for its whole warpgroup after its own `wgmma.wait_group`
/// (ThunderKittens' H100 attention). The warps of a warpgroup meet at its `mma_async`, and one
/// warp's `wait_group` returns only once the group's operand reads are done (an H200: gpu.md,
/// "Warpgroup convergence of wgmma"); the front end writes a rendezvous of the warpgroup after
/// the batch's last `mma_async`, so the other warps' reads are ordered before the release.
/// Without it, the three other warps' WGMMA reads raced with the refill.
#[test]
fn one_thread_releasing_for_its_warpgroup_after_its_wgmma_verifies() {
    let (ex, report) = check("warpgroup_release.ptx", &warpgroup_release());
    let cu = "warp_converged.cu";
    let rendezvous: Vec<&str> = ex
        .text
        .lines()
        .filter(|l| l.trim_start().starts_with("bar_sync"))
        .collect();
    assert_eq!(rendezvous.len(), 1, "{}", ex.text);
    assert!(
        rendezvous[0].trim_start().starts_with("bar_sync 15, 128"),
        "{}",
        ex.text
    );
    assert_eq!(
        cuda_line(&ex, cu, "bar_sync"),
        cuda_line(&ex, cu, "mma smem_b")
    );
    assert_eq!(
        report.verdict,
        Verdict::Ok,
        "{:?}\n{}",
        report.findings,
        ex.text
    );
}

/// The same, with every thread reading the stage after its own `wait_group`: the warps of the
/// group do not meet there (the H200 let one warp's `wait_group` return while another warp had
/// not reached its own), so those reads race with the refill that the one thread's release
/// allows.
#[test]
fn a_read_after_the_warpgroup_s_wait_group_stays_a_race() {
    let (ex, report) = check("warpgroup_release_late_read.ptx", &warpgroup_release());
    let cu = "warp_converged.cu";
    let read = line_of(cu, "BUG: after the warps part at wait_group");
    let lines = first_race_lines("warpgroup_release_late_read.ptx", &ex, &report);
    assert!(lines.contains(&read), "{lines:?} (the read is line {read})");
}

fn kernel(body: &str) -> String {
    format!(
        ".version 8.0\n.target sm_90a\n.address_size 64\n\
         .visible .entry k(\n .param .u64 k_param_0\n)\n{{\n\
         .reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<8>;\n\
         .shared .align 128 .b8 tile[256];\n\
         {body}\nret;\n}}\n"
    )
}

fn refused(text: &str) -> String {
    match ptx::extract(text, "t.ptx", &opts(Some(32), &[], &[])) {
        Ok(e) => panic!("extracted:\n{}", e.text),
        Err(e) => e.to_string(),
    }
}

/// An instruction the front end does not model and that touches shared memory, a barrier or
/// the async proxy is an error naming its line, never left out.
#[test]
fn an_unmodelled_instruction_that_touches_shared_memory_is_an_error() {
    // A tensor map edited in shared memory (`tensormap` was a skipped hint).
    let e = refused(&kernel(
        "mov.u32 %r1, tile;\n\
         tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%r1], %rd1;",
    ));
    assert!(
        e.contains("PTX line 13") && e.contains("not modelled") && e.contains("shared memory"),
        "{e}"
    );
    // An unknown instruction with a generic address (it may be shared memory).
    let e = refused(&kernel(
        "mov.u64 %rd2, tile;\n\
         multimem.st.relaxed.sys.u32 [%rd2], %r1;",
    ));
    assert!(
        e.contains("PTX line 13") && e.contains("may be shared"),
        "{e}"
    );
    // The opcode ends where ptxas ends it, at the `[`: still a shared store, modelled.
    let ok = ptx::extract(
        &kernel("mov.u32 %r1, tile;\nst.shared.u32[%r1], 7;"),
        "t.ptx",
        &opts(Some(32), &[], &[]),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(ok.text.contains("write"), "{}", ok.text);
}

/// DeepGEMM's producer issues its copies in a lambda (`launch_k_iterations`): the statements
/// are at the lambda's lines, not all at the line that calls it.
#[test]
fn statements_in_a_lambda_are_at_the_lambda_s_lines() {
    let cu = "wgmma_lambda.cu";
    let ex = extract("wgmma_lambda.ptx", &wgmma_lambda());
    let call = line_of(cu, "load_stage(k);");
    for (stmt, marker) in [
        ("wait empty", "bar::wait(&empty[s]"),
        ("tma smem_a", "tma::load(smem_a[s]"),
        ("tma smem_b", "tma::load(smem_b[s]"),
    ] {
        let at = cuda_line(&ex, cu, stmt);
        assert_eq!(
            at,
            line_of(cu, marker),
            "`{stmt}` at {at}, the call is at {call}"
        );
    }
    // Where a finding is placed in the source names the lambda's call site too.
    let i = ex
        .text
        .lines()
        .position(|l| l.trim_start().starts_with("tma smem_a"))
        .expect("the copy") as u32;
    let d = ex.describe_line(i + 1).expect("a source line");
    assert!(d.contains(&format!(", called at {cu}:{call} (PTX")), "{d}");
}

/// Two calls of a helper that inlines another helper, on neighbouring lines (ThunderKittens'
/// `expect_bytes` for K and for V): the unrolled copies' `.loc`s name only the inner helper's
/// position, which both calls share; each statement is still at its own call's line.
#[test]
fn neighbouring_inlined_calls_keep_their_lines() {
    let cu = "wgmma_lambda.cu";
    let ex = extract("wgmma_lambda.ptx", &wgmma_lambda());
    let k = line_of(cu, "tma::expect_bytes(&full_a[s]");
    let v = line_of(cu, "tma::expect_bytes(&full_b[s]");
    assert_eq!(v, k + 1);
    assert_eq!(cuda_line(&ex, cu, "arrive_expect_tx full_a"), k);
    assert_eq!(cuda_line(&ex, cu, "arrive_expect_tx full_b"), v);
    // Every unrolled copy is placed: the loop is re-rolled into one body of four trips.
    assert!(
        ex.text.contains("for k in 0..4 {\n    wait empty"),
        "{}",
        ex.text
    );
    assert!(
        !ex.notes.iter().any(|n| n.contains("does not say")),
        "{:?}",
        ex.notes
    );
}

/// ThunderKittens' attention kernel has 512 threads and roles of many thread ranges: the
/// extracted protocol must load (a chain of 72 `||` was nested past the loader's 64 levels).
#[test]
fn a_512_thread_kernel_with_many_role_ranges_loads() {
    let (ex, report) = check("many_roles.ptx", &opts(Some(512), &[], &[]));
    assert!(
        ex.text.contains("when warp <= 11 && lane % 4 == 0 {"),
        "{}",
        ex.text
    );
    assert!(
        ex.text.contains("when warp <= 11 && lane % 4 != 0 {"),
        "{}",
        ex.text
    );
    assert_eq!(report.verdict, Verdict::Ok, "{:?}", report.findings);
}

/// `--block 384` on a kernel compiled for 512 threads: the producer warp group is not run,
/// the consumers wait for its copy forever. Say which warps are left out; the deadlock names
/// the waiting threads by tid beside their role index.
#[test]
fn a_block_smaller_than_maxntid_names_the_warps_left_out() {
    let (ex, report) = check("many_roles.ptx", &opts(Some(384), &[], &[]));
    assert!(
        ex.notes
            .iter()
            .any(|n| n.contains("up to 512 threads") && n.contains("warps 12..15")),
        "{:?}",
        ex.notes
    );
    assert_eq!(report.verdict, Verdict::Hazard);
    let deadlock = report
        .findings
        .iter()
        .find(|f| f.rule.name == "deadlock")
        .expect("a deadlock");
    // consumer2 is lanes 1-3 of every group of 4: its index is not its tid.
    let text = format!("{} {:?}", deadlock.message, deadlock.labels);
    assert!(
        text.contains("consumer2[0..287] (tids 1, 2, 3, 5, ...)"),
        "{text}"
    );
    assert!(text.contains("(tid 4..380 by 4)"), "{text}");
    // At the block it is compiled for, no note.
    let ex = extract("many_roles.ptx", &opts(Some(512), &[], &[]));
    assert!(
        !ex.notes.iter().any(|n| n.contains(".maxntid")),
        "{:?}",
        ex.notes
    );
}

/// The options each fixture is extracted with, and whether the extraction is refused (that
/// is the fixture's point).
fn fixture_options(name: &str) -> (ptx::Options, bool) {
    let destructor = |name: &str| {
        let line = read(name)
            .lines()
            .position(|l| l.contains("atom.add.acquire"))
            .expect("the destructor's atomic")
            + 1;
        vec![(line.to_string(), 0)]
    };
    let cutlass = [
        ("0+0", 128),
        ("0+4", 128),
        ("0+8", 256),
        ("0+12", 1),
        ("0+640", 32768),
        ("0+772", 0),
        ("0+776", 0),
        ("0+784", 0),
        ("0+792", 0),
        ("0+800", 0),
    ];
    let triton = [
        ("15", 64),
        ("16", 128),
        ("17", 64),
        ("0", 8192),
        ("5", 16384),
        ("10", 8192),
    ];
    let refused = name == "poll_two_either.ptx";
    let o = match name {
        "barrier_tile.ptx" | "barrier_tile_missing_sync.ptx" | "elect_one.ptx" => {
            opts(Some(64), &[], &[])
        }
        "double_buffer.ptx" | "double_buffer_parity_bug.ptx" => opts(Some(64), &[("2", 4)], &[]),
        "pipeline_copy.ptx" | "pipeline_copy_count_bug.ptx" => {
            opts(Some(96), &[("2", 2)], &destructor(name))
        }
        "poll_two.ptx" | "poll_two_either.ptx" => opts(Some(34), &[("3", 4)], &[]),
        "warp_split.ptx"
        | "warp_split_divergent.ptx"
        | "warp_groups_bar.ptx"
        | "warp_groups_bar_divergent.ptx" => opts(Some(96), &[], &[]),
        "epilogue_arrive_sync.ptx" | "epilogue_arrive_sync_fixed.ptx" => opts(Some(64), &[], &[]),
        "wgmma_lambda.ptx" => wgmma_lambda(),
        "many_roles.ptx" => opts(Some(512), &[], &[]),
        "warp_converged.ptx" | "warp_converged_no_converge.ptx" => warp_converged(),
        "warpgroup_release.ptx" | "warpgroup_release_late_read.ptx" => warpgroup_release(),
        "cutlass/gemm_tma_ws.ptx" => opts(Some(256), &cutlass, &[]),
        "triton/matmul_ws.ptx" => opts(None, &triton, &[]),
        // Q, K, V, O boxes and N_CTX (ptx/tests/triton_attention.rs).
        "triton/attn_ws.ptx" => opts(
            None,
            &[
                ("0", 8192),
                ("5", 8192),
                ("10", 8192),
                ("15", 8192),
                ("20", 64),
            ],
            &[],
        ),
        "producer_consumer.ptx"
        | "producer_consumer_one_init.ptx"
        | "producer_consumer_overlap.ptx" => opts(Some(96), &[("0", 4)], &[]),
        "tma_halves.ptx" | "tma_halves_overlap.ptx" => opts(Some(128), &[("0", 8192)], &[]),
        other => panic!("fixture {other} has no options here: add it to `fixture_options`"),
    };
    (o, refused)
}

/// Every fixture's extraction loads (the round trip's fixtures have their own test).
#[test]
fn every_fixture_extracts_and_loads() {
    let mut names = Vec::new();
    for sub in ["", "cutlass", "triton"] {
        for entry in std::fs::read_dir(dir().join(sub)).expect("the fixtures") {
            let path = entry.expect("an entry").path();
            if path.extension().is_some_and(|e| e == "ptx") {
                let file = path
                    .file_name()
                    .expect("a name")
                    .to_string_lossy()
                    .to_string();
                names.push(Path::new(sub).join(file).to_string_lossy().to_string());
            }
        }
    }
    names.sort();
    assert!(names.len() >= 14, "{names:?}");
    for name in names {
        let (o, refused) = fixture_options(&name);
        if refused {
            let e = ptx::extract(&read(&name), &name, &o).expect_err("refused");
            assert!(e.to_string().contains("poll"), "{name}: {e}");
            continue;
        }
        let ex = extract(&name, &o);
        let file = SourceFile::new(name.clone(), &ex.text);
        if let Err(e) = protocols::load(&file, &[]) {
            panic!(
                "{name}: the extracted protocol does not load: {e:?}\n{}",
                ex.text
            );
        }
    }
}

/// When neither the `.loc`s nor the events tell which of two calls an instruction is in (no
/// instruction of either call with a whole chain was run), both lines are named: in a note,
/// and beside the statement's source line.
#[test]
fn an_open_inlined_call_names_both_lines() {
    let text = ".version 8.0\n.target sm_90a\n.address_size 64\n\
        .visible .entry k()\n{\n\
        .reg .b32 %r<4>;\n\
        .shared .align 8 .b8 bar[8];\n\
        .loc 1 10 1\n\
        .loc 2 5 1, function_name $L__a, inlined_at 1 10 1\n\
        mov.u32 %r1, bar;\n\
        .loc 1 11 1\n\
        .loc 2 5 1, function_name $L__a, inlined_at 1 11 1\n\
        mov.u32 %r2, bar;\n\
        .loc 3 1 1, function_name $L__b, inlined_at 2 5 1\n\
        mbarrier.init.shared::cta.b64 [%r1], 1;\n\
        .loc 1 12 1\n\
        mbarrier.inval.shared::cta.b64 [%r1];\n\
        ret;\n}\n\
        .file 1 \"k.cu\"\n.file 2 \"h.cuh\"\n.file 3 \"asm.cuh\"\n";
    let ex =
        ptx::extract(text, "t.ptx", &opts(Some(32), &[], &[])).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        ex.notes
            .iter()
            .any(|n| n.contains("PTX line 15 (CUDA lines 10 or 11)")),
        "{:?}",
        ex.notes
    );
    let i = ex
        .text
        .lines()
        .position(|l| l.trim_start().starts_with("init bar"))
        .expect("the init") as u32;
    let d = ex.describe_line(i + 1).expect("a source line");
    assert!(
        d.starts_with("k.cu:11 (via asm.cuh:1) (or line 10: the PTX does not say which call)"),
        "{d}"
    );
}

/// CUTLASS 4.2's Pingpong GEMM with the TMA-store epilogue (`fixtures/real/cutlass_pingpong.cu`),
/// at the values of its launch captured on an H200 (`real/cutlass.capture.json#0`; these are
/// the fields the front end asks for, read from the captured bytes, and the three tensor maps'
/// boxes). The two consumer warp groups' first warps (which issue the epilogue's TMA store) and
/// their other warps wait at one `bar.sync 1, 128` instruction: one statement per use, no false
/// `barrier-divergence`. The order barrier's parity, `2 - tid / 128` over the consumers, is
/// written with `% 2`: no false `parity-not-bit`. (The whole check, 40 s at 384 threads, is in
/// docs/ptx.md §6, "Real kernels at real size".)
#[test]
fn cutlass_pingpong_extracts_without_false_alarms_of_the_front_end() {
    let args: Vec<(&str, i64)> = vec![
        ("0+816", 0),
        ("0+808", 0),
        ("0+1668", 1),
        ("0+1656", 2),
        ("0+1616", 0),
        ("0+1640", 0),
        ("0+12", 256),
        ("0+640", 24576),
        ("0+128", 8192),
        ("0+384", 16384),
        ("0+1152", 4096),
    ];
    let name = "real/cutlass_pingpong.ptx";
    let ex = extract(name, &opts(Some(384), &args, &[]));
    let file = SourceFile::new(name, &ex.text);
    let program = protocols::load(&file, &[])
        .unwrap_or_else(|e| panic!("{name} does not load: {e:?}\n{}", ex.text));
    let lints: Vec<&str> = checker::lints::run(&program)
        .iter()
        .map(|f| f.rule.name)
        .collect();
    assert!(!lints.contains(&"parity-not-bit"), "{lints:?}\n{}", ex.text);
    assert!(
        ex.text.contains("parity (2 - (tid / 128)) % 2"),
        "{}",
        ex.text
    );
    // Every `bar_sync 1, 128` of the epilogue is in one role: the consumers' warps are merged.
    let roles_with_sync = ex
        .text
        .split("\nrole ")
        .filter(|r| r.contains("bar_sync 1, 128"))
        .count();
    assert_eq!(roles_with_sync, 1, "{}", ex.text);
}

/// The Programming Guide's producer/consumer (`fixtures/producer_consumer.cu`, issue 24 point
/// 2): the threads' elements are byte ranges of one buffer, each a term of `tid` of its own
/// (so the threads of a role stay interchangeable), and an 8-byte store at a 4-byte stride
/// (`-DOVERLAP_BUG`) is a data race at the store's line.
#[test]
fn thread_indexed_elements_are_byte_ranges_and_an_overlap_is_found() {
    let o = opts(Some(96), &[("0", 4)], &[]);
    let ex = extract("producer_consumer_one_init.ptx", &o);
    for stmt in [
        "write buffer bytes 4 * tid .. +4",
        "write buffer bytes 128 + 4 * tid .. +4",
        "read buffer bytes 4 * tid - 128 .. +4",
    ] {
        assert!(ex.text.contains(stmt), "no `{stmt}` in:\n{}", ex.text);
    }
    assert!(
        !ex.text.contains("buffer["),
        "elements are not buffers of their own:\n{}",
        ex.text
    );
    let (ex, report) = check("producer_consumer_overlap.ptx", &o);
    assert!(
        ex.text.contains("write buffer bytes 4 * tid .. +8"),
        "the 8-byte store:\n{}",
        ex.text
    );
    let race = report
        .findings
        .iter()
        .find(|f| f.rule.name == "data-race")
        .unwrap_or_else(|| panic!("no data race: {:?}", report.verdict));
    // At the producer's call in the kernel, via the store in `producer` (line 23).
    let line = cuda_line(
        &ex,
        "producer_consumer.cu",
        "write buffer bytes 4 * tid .. +8",
    );
    assert_eq!(line, 69, "the call of `producer`");
    let stmt = ex
        .text
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with("write buffer bytes 4 * tid .. +8")
        })
        .expect("the store");
    assert!(stmt.contains("(via line 23)"), "{stmt}");
    let at = &ex.text[race.span.start as usize..race.span.end as usize];
    assert!(
        at.starts_with("write buffer bytes"),
        "the race is at a store: {at}"
    );
}

/// For the GPU harness (`lower`, `fuzz`, `confirm`), which checks whole buffer instances, the
/// same kernel extracts without byte ranges: each element a region of its own, as before byte
/// ranges (`ptx::Options::whole_buffers`).
#[test]
fn whole_buffers_extract_without_byte_ranges() {
    let mut o = opts(Some(96), &[("0", 4)], &[]);
    let ranged = extract("producer_consumer_one_init.ptx", &o);
    assert!(ranged.text.contains(" bytes "), "{}", ranged.text);
    o.whole_buffers = true;
    let whole = extract("producer_consumer_one_init.ptx", &o);
    assert!(!whole.text.contains(" bytes "), "{}", whole.text);
    assert!(
        whole.text.contains("buffer["),
        "elements as buffers:\n{}",
        whole.text
    );
    let file = SourceFile::new("whole.phase", &whole.text);
    protocols::load(&file, &[]).unwrap_or_else(|e| panic!("does not load: {e:?}\n{}", whole.text));
}

/// Issue 24 point 2: the guide's kernel verifies from its PTX, with the guide's own
/// `if (rank < 4) init(bar + rank, ...)` (symmetry past the prologue, checker `symmetry.rs`)
/// and with one initializing thread. Both used to stop inconclusive (224 212 states in 60 s).
#[test]
fn the_guides_producer_consumer_verifies() {
    let o = opts(Some(96), &[("0", 4)], &[]);
    for name in ["producer_consumer.ptx", "producer_consumer_one_init.ptx"] {
        let (_, report) = check(name, &o);
        assert_eq!(report.verdict, Verdict::Ok, "{name}: {:?}", report.findings);
        assert!(
            report.stats.states < 10_000,
            "{name}: {} states",
            report.stats.states
        );
    }
}
