//! The perf lints on small `.phase` programs: each lint fires on its hazard and stays quiet on
//! the idioms next to it.

use crate::report::Finding;
use protocols::SourceFile;

fn lint(src: &str) -> (SourceFile, Vec<Finding>) {
    let file = SourceFile::new("t.phase", src);
    let program = match protocols::load(&file, &[]) {
        Ok(p) => p,
        Err(e) => panic!("load failed: {:?}", e.errors),
    };
    let findings = super::run(&program);
    let findings = super::suppress::apply(&program, &file, findings, true);
    (file, findings)
}

/// `rule@line` for every finding.
fn hits(src: &str) -> Vec<String> {
    let (file, findings) = lint(src);
    findings
        .iter()
        .map(|f| format!("{}@{}", f.rule.name, file.line_of(f.span)))
        .collect()
}

const PRELUDE: &str =
    "protocol t\nblock 128\nmbarrier b\nif tid == 0 { init b, 128 }\nsyncthreads\n";

fn with_prelude(body: &str) -> String {
    format!("{PRELUDE}{body}")
}

#[test]
fn warp_entanglement_needs_two_lanes_of_a_split_warp() {
    // line 6: half a warp arrives under a lane condition.
    assert_eq!(
        hits(&with_prelude("if lane < 16 { arrive b }\n")),
        ["warp-entanglement@6"]
    );
    // One lane per warp, one thread, or elect: one update per warp anyway.
    assert!(hits(&with_prelude("if lane == 0 { arrive b, 32 }\n")).is_empty());
    assert!(hits(&with_prelude("role p when tid == 0 { arrive b, 128 }\n")).is_empty());
    assert!(hits(&with_prelude("elect { arrive b, 32 }\n")).is_empty());
    // Warp-uniform conditions do not split a warp.
    assert!(hits(&with_prelude("if warp == 1 { arrive b, 4 }\n")).is_empty());
    assert!(
        hits(&with_prelude(
            "for k in 0..4 {\n  if k == 0 { arrive b }\n}\n"
        ))
        .is_empty()
    );
    // A role boundary inside a warp splits it.
    assert_eq!(
        hits(&with_prelude("role c when tid >= 16 { arrive b }\n")),
        ["warp-entanglement@6"]
    );
}

#[test]
fn warp_entanglement_covers_commits_and_trip_counts() {
    let src = "protocol t\nblock 64\nbuffer x\npipeline p thread\n\
               if lane % 2 == 0 { cp_async x; commit_group }\n\
               for i in 0..lane { producer_acquire p; producer_commit p }\n";
    assert_eq!(hits(src), ["warp-entanglement@5", "warp-entanglement@6"]);
}

#[test]
fn unified_pipeline_is_producers_equal_consumers_equal_block() {
    let unified = "protocol t\nblock 128\npipeline p stages 2 producers 128 consumers 128\n\
                   producer_acquire p\nproducer_commit p\nconsumer_wait p\nconsumer_release p\n";
    assert_eq!(hits(unified), ["unified-pipeline@3"]);
    let split = "protocol t\nblock 128\npipeline p stages 2 producers 32 consumers 96\n\
                 role prod when warp == 0 { producer_acquire p; producer_commit p }\n\
                 role cons when warp >= 1 { consumer_wait p; consumer_release p }\n";
    assert!(hits(split).is_empty());
}

#[test]
fn wait_prior_over_8_uses_param_values() {
    let src = "protocol t\nparam N = 12\nblock 32\npipeline p thread\nbuffer x\n\
               memcpy_async x -> p\nproducer_commit p\n\
               consumer_wait_prior p, N\nconsumer_wait_prior p, 8\n";
    assert_eq!(hits(src), ["wait-prior-over-8@8"]);
}

#[test]
fn syncthreads_would_do_whole_block_arrive_and_wait() {
    // Two whole-block sync points: reported at the first.
    let src = with_prelude("arrive_and_wait b\nlet t = arrive b\nwait b token t\n");
    assert_eq!(hits(&src), ["syncthreads-would-do@6"]);
    // Not every thread: a real async barrier use.
    assert!(hits(&with_prelude("if tid < 64 { arrive_and_wait b }\n")).is_empty());
    // Split arrive and wait (work in between) is what mbarriers are for.
    assert!(hits(&with_prelude("arrive b\ncompute\nwait b parity 0\n")).is_empty());
    // A partial count is not the whole block.
    let partial = "protocol t\nblock 128\nmbarrier b\nif tid == 0 { init b, 64 }\nsyncthreads\n\
                   if tid < 64 { arrive_and_wait b }\n";
    assert!(hits(partial).is_empty());
    // Transaction bytes: not replaceable.
    let tx = "protocol t\nblock 128\nmbarrier b\nbuffer x\nif tid == 0 { init b, 128 }\n\
              syncthreads\nif tid == 0 { expect_tx b, 64; tma x -> b, 64 }\narrive_and_wait b\n";
    assert!(hits(tx).is_empty());
}

#[test]
fn parity_not_bit_uses_ranges_and_bit_shapes() {
    let src = with_prelude(
        "let phase = 0\n\
         for k in 0..8 {\n\
           wait b parity k\n\
           wait b parity k % 2\n\
           wait b parity ((k / 2) % 2) ^ 1\n\
           wait b parity k & 1\n\
           wait b parity phase\n\
           wait b parity k < 4\n\
           wait b parity 1 - phase\n\
           phase = phase ^ 1\n\
         }\n\
         wait b parity 2\n\
         wait b parity 0\n",
    );
    assert_eq!(hits(&src), ["parity-not-bit@8", "parity-not-bit@17"]);
    // A counter that only grows is not a bit.
    let grow = with_prelude("let n = 0\nwhile n < 4 {\n  wait b parity n\n  n = n + 1\n}\n");
    assert_eq!(hits(&grow), ["parity-not-bit@8"]);
}

#[test]
fn suppressions_silence_one_statement_and_report_unused_ones() {
    let src = with_prelude(
        "if lane < 16 { arrive b }  # phasecheck: allow(warp-entanglement) measured, fine\n\
         # phasecheck: allow(parity-not-bit) next statement\n\
         wait b parity 3\n\
         wait b parity 0  # phasecheck: allow(stale-token) nothing here\n\
         wait b parity 1  # phasecheck: allow(parity-not-bt)\n",
    );
    let (file, findings) = lint(&src);
    let got: Vec<_> = findings
        .iter()
        .map(|f| {
            (
                f.rule.name,
                file.line_of(f.span),
                f.help.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!((got[0].0, got[0].1), ("unused-suppression", 9));
    assert_eq!((got[1].0, got[1].1), ("unused-suppression", 10));
    assert!(
        got[1].2.contains("did you mean `parity-not-bit`"),
        "{got:?}"
    );
}

#[test]
fn parity_not_bit_holds_for_every_configuration() {
    // (k / 4) % 4 is 0 or 1 while k < 8, but not for longer loops: reported either way.
    let src = "protocol t\nparam STAGES = 4\nparam K = 8\nblock 1\nmbarrier b\ninit b, 1\n\
               for k in 0..K {\n  arrive b\n  wait b parity (k / STAGES) % STAGES\n  \
               wait b parity (k / STAGES) % 2\n}\n";
    let (_, findings) = lint(src);
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert!(
        findings[0]
            .message
            .contains("only for these parameter values")
    );
    // With K = 16 the values themselves leave 0..=1.
    let file = SourceFile::new("t.phase", src);
    let program = protocols::load(&file, &[("K".into(), 16)]).unwrap();
    let f = super::run(&program);
    assert_eq!(f.len(), 1);
    assert!(f[0].message.contains("any of 0..=3"), "{}", f[0].message);
}
