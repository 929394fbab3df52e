//! The portfolio's held-back walks (`checker::hunt::held_back`): at its first pause the check
//! holds back, one per symmetry group, each thread that waits after its last signal in the
//! protocol's measured run, until nothing else can move. The shape is ThunderKittens' producer
//! warp (HazyResearch/ThunderKittens `0b55588d2769dde0c7a9a606ffc015b0ca7a9551`,
//! kernels/attention/mha_h100/mha_h100.cu, lines 116-125: every lane of the warp runs the
//! loop's `wait(compute_done)`, lane 0 alone loads), at a size where the exhaustive search does
//! not get there first: two consumer warps release each stage with one arrive per warp, and
//! lanes 1..31 of the producer warp wait on the release barrier with nothing that keeps them
//! within one phase of lane 0. Held back, such a lane reaches its first wait two phases late
//! and waits for a phase that never completes (PTX ISA, mbarrier.test_wait/try_wait: the parity
//! names "the current phase or the immediately preceding phase"). With a `syncwarp` after the
//! wait the same walks find nothing and the protocol is `ok`.

mod common;

use checker::{CheckOptions, FoundBy, Verdict};

/// `{sync}`: 1 puts a `syncwarp` after the producer warp's wait.
fn producer_warp(rounds: u32, sync: u32) -> String {
    format!(
        "protocol lane_lag
param R = {rounds}
param SYNC = {sync}
block 96
mbarrier full[2]
mbarrier done[2]
buffer   stage[2]

if tid == 64 {{
  for s in 0..2 {{
    init full[s], 1
    init done[s], 2
  }}
}}
syncthreads

role consumer when warp <= 1 {{
  for k in 0..2 * R {{
    wait full[k % 2] parity k / 2 % 2
    mma stage[k % 2]
    syncwarp
    if lane == 0 {{
      arrive done[k % 2]
    }}
  }}
}}

role producer_warp when warp == 2 {{
  for k in 0..2 * R {{
    if k >= 2 {{
      wait done[k % 2] parity (k / 2 - 1) % 2
      if SYNC == 1 {{
        syncwarp
      }}
    }}
    if lane == 0 {{
      arrive_expect_tx full[k % 2], 64
      tma stage[k % 2] -> full[k % 2], 64
    }}
  }}
}}
"
    )
}

/// A search cut short (2 000 states) does not reach the lagging lane; the held-back walk of
/// its group does, and the finding is confirmed by replaying its schedule through the
/// unreduced semantics (here once more through `checker::replay`, as `--replay` runs it).
#[test]
fn a_lane_nothing_holds_back_is_held_back_and_left_two_phases_behind() {
    let p = common::load(&producer_warp(4, 0));
    let options = CheckOptions {
        max_states: 2_000,
        ..CheckOptions::default()
    };
    let r = checker::check(&p, &options);
    assert_eq!(r.verdict, Verdict::Hazard);
    let f = r
        .findings
        .iter()
        .find(|f| f.rule.name == "deadlock")
        .unwrap_or_else(|| panic!("{:?}", common::rules(&r)));
    assert_eq!(f.found_by, FoundBy::HeldBack);
    assert!(
        f.message.contains(
            "only after phases 0 to 3 completed: producer_warp[0] of the same warp went on"
        ) && f.message.contains("immediately preceding phase"),
        "the headline names the lane lag and quotes the ISA: {}",
        f.message
    );
    assert!(
        f.help
            .as_deref()
            .is_some_and(|h| h.contains("__syncwarp()"))
    );
    let replayed = checker::replay(&p, &options, &f.schedule).expect("the schedule replays");
    assert!(
        replayed
            .findings
            .iter()
            .any(|g| g.rule.name == "deadlock" && g.span == f.span),
        "the replay through the unreduced semantics deadlocks at the same wait"
    );
}

/// With the lanes kept in step the held-back walks find nothing, and the search decides `ok`.
#[test]
fn a_syncwarp_after_the_wait_keeps_the_held_back_lane_in_step() {
    let r = checker::check(
        &common::load(&producer_warp(4, 1)),
        &CheckOptions::default(),
    );
    assert_eq!(r.verdict, Verdict::Ok, "{:?}", common::rules(&r));
}

/// Generated protocols of the shapes the walks hold threads back in (per-warp releases, rings,
/// elected lanes, thread-indexed elements, free-form): every finding a held-back walk hits, on
/// the unreduced model the portfolio walks, is a finding the exhaustive search reports too
/// (with the reductions on) wherever that search is decided. The walks only pick schedules;
/// this checks that the held-back kind picks them from the same semantics.
#[test]
fn held_back_hits_are_findings_of_the_exhaustive_search() {
    use checker::hunt;
    use checker::model::{PhaseModel, Search};
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    use std::collections::BTreeSet;

    fn generated<S: Strategy<Value = String>>(strategy: S, cases: u32) -> Vec<String> {
        let config = Config {
            rng_algorithm: RngAlgorithm::ChaCha,
            ..Config::default()
        };
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[11; 32]);
        let mut runner = TestRunner::new_with_rng(config, rng);
        (0..cases)
            .map(|_| {
                strategy
                    .new_tree(&mut runner)
                    .expect("a protocol")
                    .current()
            })
            .collect()
    }
    let mut sources = vec![producer_warp(1, 0), producer_warp(2, 0)];
    sources.extend(generated(protogen::per_warp(), 24));
    sources.extend(generated(protogen::ring(), 16));
    sources.extend(generated(protogen::elements(), 8));
    sources.extend(generated(protogen::protocol(), 24));
    let (mut compared, mut walks, mut hits) = (0, 0, 0);
    for src in &sources {
        let p = common::load(src);
        let exhaustive = checker::check(
            &p,
            &CheckOptions {
                exhaustive: true,
                max_states: 200_000,
                ..CheckOptions::default()
            },
        );
        if exhaustive.verdict == Verdict::Inconclusive {
            continue;
        }
        let reported: BTreeSet<(&str, u32)> = exhaustive
            .findings
            .iter()
            .map(|f| (f.rule.code, f.span.start))
            .collect();
        let mut raw = PhaseModel::new(&p, 1000, false);
        raw.por = false;
        let (init, _, bound, stop) = raw.initial();
        if bound.is_some() || stop {
            continue;
        }
        let search = Search::new(&raw, init);
        let profile = hunt::profile(&search, 1 << 16, None);
        let held: Vec<hunt::HoldBack> = profile.waiters.into_iter().take(8).collect();
        let found = hunt::held_back(&search, &held, 1 << 16, None);
        compared += 1;
        walks += found.walks;
        for h in &found.hits {
            hits += 1;
            assert!(
                reported.contains(&(h.finding.rule.code, h.finding.span.start)),
                "a held-back walk hit {} at {:?} ({}), which the exhaustive search did not report ({:?}):\n{src}",
                h.finding.rule.code,
                h.finding.span,
                h.finding.message,
                reported
            );
        }
    }
    eprintln!("compared {compared} protocols, {walks} held-back walks, {hits} hits");
    assert!(
        compared >= 60 && walks >= 40 && hits >= 5,
        "too few decided protocols, walks or hits to compare: {compared}, {walks}, {hits}"
    );
}
