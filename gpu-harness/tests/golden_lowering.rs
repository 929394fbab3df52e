//! Golden output of the lowering (the kernel after the shared prelude), on the CPU.

mod common;

use gpu_harness::lower::{LowerOptions, Mode, lower};
use protocols::SourceFile;
use std::path::Path;

fn lowered(name: &str, mode: Mode) -> String {
    lowered_with(
        name,
        &LowerOptions {
            mode,
            ..Default::default()
        },
    )
}

/// The generated kernel: what follows the shared prelude.
fn after_prelude(source: &str) -> &str {
    source
        .split_once("// ---- end of prelude ----\n")
        .expect("prelude marker")
        .1
}

fn lowered_with(name: &str, options: &LowerOptions) -> String {
    let l = common::lower_fixture(name, options);
    let kernel = after_prelude(&l.source);
    let header: String = l
        .source
        .lines()
        .take_while(|line| !line.starts_with("// ---- phasecheck prelude"))
        .map(|line| format!("{line}\n"))
        .collect();
    format!("{header}// [prelude elided]\n{kernel}")
}

#[test]
fn double_buffer() {
    insta::assert_snapshot!(lowered("double_buffer.phase", Mode::Fuzz));
}

#[test]
fn double_buffer_confirm_mode_differs_only_in_the_switch() {
    let fuzz = lowered("double_buffer.phase", Mode::Fuzz);
    let confirm = lowered("double_buffer.phase", Mode::Confirm);
    assert!(confirm.contains("#define PC_CONFIRM 1"));
    assert_eq!(
        fuzz.replace("#define PC_CONFIRM 0", "#define PC_CONFIRM 1"),
        confirm
    );
}

/// The kernel `confirm` replays a `missing-proxy-fence` race with: the writes become window
/// writes whose operands stay live to the thread's end; everything else is the fuzz kernel.
#[test]
fn proxy_window() {
    let window = lowered_with(
        "proxy_fence_store.phase",
        &LowerOptions {
            proxy_window: true,
            ..Default::default()
        },
    );
    insta::assert_snapshot!(window);
    let plain = lowered("proxy_fence_store.phase", Mode::Fuzz);
    let changed: Vec<(&str, &str)> = plain
        .lines()
        .zip(
            window
                .lines()
                .filter(|l| !l.contains("PcKeep pc_keep") && !l.contains("pc_keep_live(pc_keep)")),
        )
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(
        changed,
        vec![
            ("#define PC_PROXY_WINDOW 0", "#define PC_PROXY_WINDOW 1"),
            (
                "    pc_write(pc, c_smem[tid], 32, 0, pc_occ_0, (pc_u32)(tid));",
                "    pc_write_window(pc, c_smem[tid], 32, 0, pc_occ_0, pc_keep);"
            ),
        ]
    );
}

#[test]
fn multicast_pair() {
    insta::assert_snapshot!(lowered("multicast_pair.phase", Mode::Fuzz));
}

/// Cooperative tiles (`write part`): the part writes go through `pc_write_part` (counted in
/// flight, part stamp, no check against each other); the buffer's reads check the count
/// (`, true`) and the bootstrap clears it. Buffers without part writes lower as before.
#[test]
fn cooperative_tile() {
    let fuzz = lowered("cooperative_tile.phase", Mode::Fuzz);
    assert!(
        fuzz.contains("pc_write_part(pc, tile[s_2], 32, 4, pc_occ_4, (pc_u32)(s_2));"),
        "{fuzz}"
    );
    assert!(
        fuzz.contains("pc_read(pc, tile[s_4], 32, 7, (pc_u32)(s_4), true);"),
        "{fuzz}"
    );
    assert!(fuzz.contains(
        "for (long long i = tid; i < 2; i += nthreads) { *(pc_u64*)&tile[i][0] = 0; *(pc_u64*)&tile[i][8] = 0; }"
    ));
    insta::assert_snapshot!(fuzz);
    let window = lowered_with(
        "cooperative_tile.phase",
        &LowerOptions {
            proxy_window: true,
            ..Default::default()
        },
    );
    assert!(
        window.contains("pc_write_window(pc, tile[s_2], 32, 4, pc_occ_4, pc_keep, true);"),
        "{window}"
    );
}

#[test]
fn all_statements() {
    insta::assert_snapshot!(lowered("all_statements.phase", Mode::Fuzz));
}

/// Confirm mode: a one-destination `tma` goes through `pc_tma_seq` (the sequencer may defer its
/// landing) and the bootstrap initialises the proxy's private mbarrier.
#[test]
fn tma_in_flight_confirm() {
    insta::assert_snapshot!(lowered("tma_in_flight.phase", Mode::Confirm));
}

#[test]
fn tma_in_flight_fuzz_mode_issues_the_copy_at_once() {
    let fuzz = lowered("tma_in_flight.phase", Mode::Fuzz);
    assert!(fuzz.contains("pc_tma(pc, tile[0], "), "{fuzz}");
    assert!(!fuzz.contains("pc_tma_seq"));
    assert!(!fuzz.contains("pc_land_init"));
    let confirm = lowered("tma_in_flight.phase", Mode::Confirm);
    assert!(
        confirm.contains("pc_tma_seq(pc, pc_tr, tile[0], "),
        "{confirm}"
    );
    assert!(!confirm.contains("pc_tma(pc,"));
    // The private mbarrier is initialised before the bootstrap's synchronisation.
    let init = confirm.find("pc_land_init(pc);").expect("init");
    let sync = confirm.find("__syncthreads();").expect("bootstrap sync");
    assert!(init < sync);
}

/// A multicast copy lands in several blocks: it is issued at once in confirm mode too.
#[test]
fn multicast_tma_is_not_deferred() {
    let fuzz = lowered("multicast_pair.phase", Mode::Fuzz);
    let confirm = lowered("multicast_pair.phase", Mode::Confirm);
    assert_eq!(
        fuzz.replace("#define PC_CONFIRM 0", "#define PC_CONFIRM 1"),
        confirm
    );
}

/// Several kernels (language.md §6): one `extern "C"` function per kernel in one translation
/// unit, sharing the globals of a trial, with the domain each is launched in.
#[test]
fn memsync_domains() {
    insta::assert_snapshot!(lowered("memsync_domains.phase", Mode::Fuzz));
}

#[test]
fn several_kernels_lower_to_one_function_each() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/memsync_domains.phase");
    let file = SourceFile::new(
        "memsync_domains.phase",
        std::fs::read_to_string(path).unwrap(),
    );
    let program = protocols::load(&file, &[]).expect("loads");
    let l = lower(&program, Some(&file), &LowerOptions::default()).expect("lowers");
    let names: Vec<&str> = l.kernels.iter().map(|k| k.function.as_str()).collect();
    assert_eq!(names, ["pc_domains_compute", "pc_domains_comm"]);
    assert_eq!(l.kernel_name, "pc_domains_compute");
    use gpu_harness::lower::MemSyncDomain;
    assert_eq!(l.kernels[0].domain, MemSyncDomain::Default);
    assert_eq!(l.kernels[1].domain, MemSyncDomain::Remote);
    // Statements are numbered across kernels: two each, and each kernel's `finish`.
    assert_eq!(
        (l.kernels[0].stmts.clone(), l.kernels[1].stmts.clone()),
        (0..3, 3..6)
    );
    assert_eq!(l.stmts[2].keyword, "finish");
    assert_eq!(l.threads_per_trial(), 64);
    for k in &l.kernels {
        assert_eq!(
            l.source.matches(&format!("\n{}(", k.function)).count(),
            1,
            "{} defined once",
            k.function
        );
    }
    // A gpu-scope release and acquire are the .gpu forms; the acquire spins (bounded).
    assert!(
        l.source
            .contains("pc_store(pc, flag, 1, 2, true, 1, pc_occ_1);")
    );
    assert!(l.source.contains("pc_load_acquire(pc, flag, 2, 3);"));
}

#[test]
fn several_kernels_in_confirm_mode_are_a_clear_error() {
    let text = "protocol d\nglobal g\nkernel a domain default block 32 { store g }\nkernel b domain remote block 32 { load g }\n";
    let file = SourceFile::new("d.phase", text);
    let program = protocols::load(&file, &[]).expect("loads");
    let e = lower(
        &program,
        Some(&file),
        &LowerOptions {
            mode: Mode::Confirm,
            ..Default::default()
        },
    )
    .expect_err("confirm mode, two kernels");
    assert!(e.message.contains("2 kernels"), "{}", e.message);
    assert!(e.message.contains("phasecheck fuzz"), "{}", e.message);
    assert!(e.span.is_some());
}

#[test]
fn an_unknown_domain_is_a_clear_error() {
    let text = "protocol d\nglobal g\nkernel a domain default block 32 { store g }\nkernel b domain nvlink block 32 { load g }\n";
    let file = SourceFile::new("d.phase", text);
    let program = protocols::load(&file, &[]).expect("loads");
    let e = lower(&program, Some(&file), &LowerOptions::default()).expect_err("unknown domain");
    assert!(
        e.message.contains("`default` and `remote`"),
        "{}",
        e.message
    );
}

#[test]
fn lowering_is_deterministic() {
    assert_eq!(
        lowered("all_statements.phase", Mode::Confirm),
        lowered("all_statements.phase", Mode::Confirm)
    );
}

/// Named barriers count whole warps on the GPU: a scaled-down count (one model thread per
/// warpgroup) is refused with the statement and the way out, instead of a kernel that traps.
#[test]
fn named_barrier_counts_must_be_whole_warps() {
    let text = "protocol n\nparam WG = 1\nblock 2 * WG\nbar_sync 1, 2 * WG\n";
    let file = SourceFile::new("n.phase", text);
    let small = protocols::load(&file, &[]).expect("loads");
    let e = lower(&small, Some(&file), &LowerOptions::default()).expect_err("count 2");
    assert!(
        e.message.contains("count 2 is not a multiple of 32"),
        "{}",
        e.message
    );
    assert_eq!(e.span.map(|s| file.line_of(s)), Some(4));
    let full = protocols::load(&file, &[("WG".into(), 32)]).expect("loads");
    lower(&full, Some(&file), &LowerOptions::default()).expect("count 64 lowers");
}

/// A whole-block named barrier in a block that is not whole warps: `bar_sync ID` lowers to
/// `bar.sync ID` without a count (a count of 40 would not be a multiple of 32); `bar_arrive ID`
/// needs a count, so it is refused.
#[test]
fn whole_block_named_barriers_in_a_block_of_partial_warps() {
    let text = "protocol n\nblock 40\nbar_sync 1\n";
    let file = SourceFile::new("n.phase", text);
    let p = protocols::load(&file, &[]).expect("loads");
    let l = lower(&p, Some(&file), &LowerOptions::default()).expect("bar_sync lowers");
    assert!(l.source.contains("pc_bar_sync_all(1);"), "{}", l.source);
    let text = "protocol n\nblock 40\nif tid < 32 { bar_arrive 1 } else { bar_sync 1 }\n";
    let file = SourceFile::new("n.phase", text);
    let p = protocols::load(&file, &[]).expect("loads");
    let e = lower(&p, Some(&file), &LowerOptions::default()).expect_err("bar_arrive refused");
    assert!(
        e.message
            .contains("`bar_arrive` without a count in a block of 40 threads"),
        "{}",
        e.message
    );
}

/// Every hardware collective that blocks (which cannot be bounded) records first where its
/// thread is (`pc_at`), the kernel marks each thread running at entry and done at its finish,
/// and the fuzz-mode kernel reads its aimed delays from `seq`: what a stuck launch and the
/// aimed fuzz rely on.
#[test]
fn blocking_collectives_record_where_each_thread_is() {
    let k = lowered("all_statements.phase", Mode::Fuzz);
    for call in [
        "__syncthreads();",
        "pc_cluster_arrive(); pc_cluster_wait();",
        "pc_cluster_wait();",
        "__syncwarp(pc_warp_mask());",
        "pc_bar_sync(1, 64);",
        "pc_bar_sync(0, nthreads);",
    ] {
        // (The bootstrap's own barriers, which every thread reaches, record nothing.)
        assert!(
            k.lines()
                .any(|l| l.trim_end().ends_with(call) && l.contains("pc_at(pc, ")),
            "`{call}` recorded in\n{k}"
        );
    }
    // bar.arrive and cluster arrive do not block: nothing to record.
    assert!(k.contains("\n    pc_bar_arrive(2, 32);"), "{k}");
    assert!(k.contains("pos + (size_t)blockIdx.x * 128 + 0 + tid; *pc.pos = PC_POS_RUN;"));
    assert!(k.contains("*pc.pos = PC_POS_DONE;"));
    assert!(k.contains("pc.aim = pc_aim_of(seq, pc.cta, pc.tid);"));
    assert!(k.contains("const pc_u32* seq, pc_u64* pos) {"));
}

/// `write X value N` lowers to a stamp of the statement and the value, the same for every
/// writer (overlapping stores of one value are no race on the GPU either); a plain write keeps
/// its per-writer stamp.
#[test]
fn value_writes_share_one_stamp() {
    let text = "protocol v\nblock 4\nbuffer flag\nif tid < 2 {\n  write flag value 7\n}\nsyncthreads\nwrite flag\nread flag\n";
    let file = SourceFile::new("v.phase", text);
    let program = protocols::load(&file, &[]).expect("loads");
    let l = lower(&program, Some(&file), &LowerOptions::default()).expect("lowers");
    let kernel = after_prelude(&l.source);
    assert!(
        kernel.contains("pc_write_value(pc, flag[0], 32, 0, (pc_u32)(7ll), (pc_u32)(0));"),
        "{kernel}"
    );
    assert!(
        kernel.contains("pc_write(pc, flag[0], 32, 2, pc_occ_2,"),
        "{kernel}"
    );
}
