//! Symmetry inside a warp (issue 24, "One arrive per warp"): in a kernel with `syncwarp`, the
//! lanes of one warp that no condition tells apart are interchangeable; lanes of different
//! warps are not (a `syncwarp` waits for its own warp). Every case runs with the reductions on
//! and off (common::check): the findings and verdicts must agree. Blocks under 32 threads are
//! one warp, so the unreduced runs stay small.

mod common;
use common::*;

/// Lane 0 produces, the other lanes consume; after a `syncwarp` lane 1 releases the stage for
/// the whole warp. Lanes 2 and 3 are interchangeable. `BUG` selects a defect.
fn per_warp(bug: &str) -> String {
    let (count, parity, sync, releaser) = match bug {
        "count" => ("2", "(k & 1) ^ 1", "syncwarp", "lane == 1"),
        "parity" => ("1", "k & 1", "syncwarp", "lane == 1"),
        "no-sync" => ("1", "(k & 1) ^ 1", "compute", "lane == 1"),
        "two-releasers" => ("1", "(k & 1) ^ 1", "syncwarp", "lane >= 2"),
        _ => ("1", "(k & 1) ^ 1", "syncwarp", "lane == 1"),
    };
    format!(
        "protocol p
block 4
mbarrier full
mbarrier empty
buffer x
if tid == 0 {{
  init full, 1
  init empty, {count}
}}
syncthreads
for k in 0..2 {{
  if tid == 0 {{
    wait empty parity {parity}
    write x
    arrive full
  }} else {{
    wait full parity k & 1
    read x
  }}
  {sync}
  if {releaser} {{ arrive empty }}
}}
"
    )
}

#[test]
fn per_warp_release_is_ok_and_reduced() {
    let src = per_warp("ok");
    let r = assert_ok(&src);
    // The reduction applies: fewer states than without symmetry.
    let p = load(&src);
    let off = checker::check(
        &p,
        &checker::CheckOptions {
            exhaustive: true,
            symmetry: false,
            ..checker::CheckOptions::default()
        },
    );
    assert!(
        r.stats.states < off.stats.states,
        "{} vs {}",
        r.stats.states,
        off.stats.states
    );
}

#[test]
fn per_warp_count_bug_is_a_deadlock() {
    assert_flags(&per_warp("count"), "deadlock");
}

#[test]
fn per_warp_parity_bug_is_found() {
    let r = check(&per_warp("parity"));
    assert_eq!(r.verdict, checker::Verdict::Hazard, "{:?}", rules(&r));
}

#[test]
fn per_warp_release_without_syncwarp_races() {
    assert_flags(&per_warp("no-sync"), "data-race");
}

#[test]
fn two_releasing_lanes_overrun_the_count() {
    let r = check(&per_warp("two-releasers"));
    assert_eq!(r.verdict, checker::Verdict::Hazard, "{:?}", rules(&r));
}
