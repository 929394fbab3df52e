//! Triton's warp specialization on an attention forward pass (`fixtures/triton/attn_ws.py`,
//! our own kernel compiled by Triton 3.9 for sm_90 without a GPU; docs/ptx.md §6): a producer
//! partition loads K and V through TMA tensor descriptors onto transaction barriers, two
//! consumer partitions run the two dots and the online softmax and release each stage, the
//! epilogue stores O through a TMA store. Code nobody here wrote the synchronization of: it
//! verifies with no false alarm, and a wrong box size is found at the consumers' wait.

mod common;
use checker::{CheckOptions, Report, Verdict};
use common::*;
use protocols::SourceFile;

const NAME: &str = "triton/attn_ws.ptx";

/// The bytes one copy through each tensor descriptor moves (Q, K, V and O boxes of 64 x 64
/// fp16, parameters 0, 5, 10, 15) and the sequence length (parameter 20); the block size is
/// the kernel's `.reqntid` (384).
fn opts(k_box: i64, n_ctx: i64) -> ptx::Options {
    ptx::Options {
        args: [
            ("0", 8192),
            ("5", k_box),
            ("10", 8192),
            ("15", 8192),
            ("20", n_ctx),
        ]
        .iter()
        .map(|(a, v)| (a.to_string(), *v))
        .collect(),
        ..Default::default()
    }
}

/// The rule of each finding with the Python line of its statement.
fn findings(ex: &ptx::Extracted, report: &Report) -> Vec<(&'static str, u32)> {
    let file = SourceFile::new(NAME, &ex.text);
    report
        .findings
        .iter()
        .map(|f| {
            let (src, line) = ex
                .source_of_line(file.line_of(f.span))
                .unwrap_or_else(|| panic!("{} has no source line", f.rule.name));
            assert!(src.ends_with("attn_ws.py"), "{src}");
            (f.rule.name, line)
        })
        .collect()
}

/// The extraction and its loaded program (a panic naming the text if either fails).
fn load(o: &ptx::Options) -> (ptx::Extracted, protocols::ir::Program) {
    let ex = ptx::extract(&read(NAME), NAME, o).unwrap_or_else(|e| panic!("{e}"));
    let file = SourceFile::new(NAME, &ex.text);
    let program =
        protocols::load(&file, &[]).unwrap_or_else(|e| panic!("does not load: {e:?}\n{}", ex.text));
    (ex, program)
}

fn check(o: &ptx::Options) -> (ptx::Extracted, Report) {
    let (ex, program) = load(o);
    let report = checker::check(&program, &CheckOptions::default());
    (ex, report)
}

/// One K/V tile (N_CTX = 64): `ok`, with only the `same-value-store` warnings of Triton's
/// dispatch bytes (every producer thread stores the partition index, as in the matmul). The
/// search is about 12 000 states, 15 s of CPU in release and minutes in a debug build, so a
/// debug build checks the extraction only.
#[test]
fn triton_attention_verifies() {
    let py = "triton/attn_ws.py";
    let o = opts(8192, 64);
    if cfg!(debug_assertions) {
        let (ex, _) = load(&o);
        assert!(ex.text.contains("tma_store"), "{}", ex.text);
        return;
    }
    let (ex, report) = check(&o);
    assert!(report.incomplete.is_none(), "{:?}", report.incomplete);
    assert_eq!(report.verdict, Verdict::Ok, "{:?}", report.findings);
    let dispatch = line_of(py, "def attn_fwd(");
    let load = line_of(py, "q = q_desc.load(");
    assert_eq!(
        findings(&ex, &report),
        vec![("same-value-store", load), ("same-value-store", dispatch)],
        "{}",
        ex.text
    );
}

/// K's box halved (8 192 -> 4 096 bytes): each K stage gets half the bytes its barrier
/// expects, and both consumer partitions wait on that barrier for ever, 4 096 bytes short.
/// (Triton's line information puts the consumers' wait at the lines before the loop, 39-40,
/// and every producer statement at the `def`: the test names the barrier, not a line.)
#[test]
fn triton_attention_wrong_box_is_a_deadlock_on_the_k_stage() {
    let (ex, report) = check(&opts(4096, 64));
    assert_eq!(report.verdict, Verdict::Hazard, "{:?}", report.findings);
    let deadlock = report
        .findings
        .iter()
        .find(|f| f.rule.name == "deadlock")
        .unwrap_or_else(|| panic!("no deadlock: {:?}", report.findings));
    // The K copy: the one TMA load of 4 096 bytes, `tma global_smem[..] -> BAR, 4096`.
    let k_copy = ex
        .text
        .lines()
        .find(|l| l.trim_start().starts_with("tma ") && l.contains(", 4096"))
        .unwrap_or_else(|| panic!("no 4096-byte copy in\n{}", ex.text));
    let barrier = k_copy
        .split("-> ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("no barrier in `{k_copy}`"));
    let consumers: Vec<_> = deadlock
        .waits_for
        .iter()
        .filter(|w| w.thread.starts_with("consumer"))
        .collect();
    assert_eq!(consumers.len(), 2, "{:?}", deadlock.waits_for);
    for w in consumers {
        assert!(
            w.waits_on.starts_with(&format!("`{barrier}`")),
            "{} waits on {}, not on {barrier}",
            w.thread,
            w.waits_on
        );
        assert!(
            w.missing.contains("4096 bytes"),
            "{}: {}",
            w.thread,
            w.missing
        );
    }
}
