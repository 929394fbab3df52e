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
    assert_ok(&src);
    // The reduction applies: fewer states than without symmetry. (Without the partial-order
    // reduction: with it the search is a chain that symmetry cannot shorten, since a lane's
    // steps are taken alone while its warp's releaser waits at the `syncwarp`.)
    let p = load(&src);
    let with = |symmetry| {
        checker::check(
            &p,
            &checker::CheckOptions {
                exhaustive: true,
                symmetry,
                partial_order: false,
                ..checker::CheckOptions::default()
            },
        )
    };
    let (r, off) = (with(true), with(false));
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

/// Two consumer warps of three live lanes (the others exit at once) release a one-stage TMA
/// ring with `if lane == 0 { arrive empty }` after a `syncwarp`; the empty barrier counts
/// warps. `bug`: "short" (count one warp too few), "flip" (consumer parity), "early" (the
/// second warp leaves at its second trip), "elect" (the release is `elect { }`, no bug);
/// "elect-short", "elect-flip", "elect-early": those bugs with the `elect` release.
fn two_warps(bug: &str, trips: u32) -> String {
    let (elect, bug) = match bug.strip_prefix("elect-") {
        Some(b) => (true, b),
        None => (bug == "elect", bug),
    };
    let count = if bug == "short" { 1 } else { 2 };
    let flip = u32::from(bug == "flip");
    let early = if bug == "early" {
        "if warp == 2 && k == 1 { exit }"
    } else {
        ""
    };
    let release = if elect {
        "elect { arrive empty }"
    } else {
        "if lane == 0 { arrive empty }"
    };
    format!(
        "protocol p
block 32 + 32 + 3
mbarrier full
mbarrier empty
buffer stage
if warp == 0 && lane > 0 {{ exit }}
if warp == 1 && lane >= 3 {{ exit }}
if tid == 0 {{
  init full, 1
  init empty, {count}
}}
syncthreads
role producer when tid == 0 {{
  for k in 0..{trips} {{
    wait empty parity (k & 1) ^ 1
    arrive_expect_tx full, 64
    tma stage -> full, 64
  }}
}}
role consumer when warp >= 1 {{
  for k in 0..{trips} {{
    {early}
    wait full parity (k + {flip}) % 2
    mma stage
    syncwarp
    {release}
  }}
}}
"
    )
}

fn states(src: &str, partial_order: bool) -> u64 {
    let p = load(src);
    let r = checker::check(
        &p,
        &checker::CheckOptions {
            exhaustive: true,
            partial_order,
            ..checker::CheckOptions::default()
        },
    );
    assert_eq!(r.verdict, checker::Verdict::Ok, "{:?}", rules(&r));
    r.stats.states
}

/// While a lane stands still, its warp's `syncwarp` cannot fire, so its warp's releaser cannot
/// arrive and the stage cannot be refilled: the lane's read is taken alone. Without that rule
/// (a `syncwarp` assumed to pass in the others' runs) the two warps' reads interleave.
#[test]
fn two_warp_release_is_ok_and_a_chain() {
    let src = two_warps("ok", 3);
    assert_ok(&src);
    let (on, off) = (states(&src, true), states(&src, false));
    // One step at a time: the reduced graph is a chain of about one state per step.
    // (57 states; 131 before the rule, 1 095 without the partial-order reduction.)
    assert!(
        on <= 70 && on * 4 < off,
        "{on} states with the reduction, {off} without"
    );
}

#[test]
fn two_warp_count_and_parity_bugs_are_found() {
    assert_flags(&two_warps("short", 3), "data-race");
    assert_flags(&two_warps("flip", 2), "data-race");
}

#[test]
fn two_warp_early_exit_deadlocks() {
    assert_flags(&two_warps("early", 3), "deadlock");
}

/// `elect { arrive }` releases for the warp as well, whichever live lane is elected.
#[test]
fn two_warp_elected_release_is_ok() {
    assert_ok(&two_warps("elect", 3));
}

/// With `elect`, the lanes of a warp are interchangeable too (the leader is part of the state,
/// one election step per candidate, which symmetry merges): the reduced search is a chain as
/// for the lane-0 release, and symmetry alone shrinks the unreduced one.
#[test]
fn two_warp_elected_release_is_reduced() {
    let src = two_warps("elect", 3);
    let (on, off) = (states(&src, true), states(&src, false));
    assert!(
        on <= 70 && on * 4 < off,
        "{on} states with the reduction, {off} without"
    );
    let p = load(&src);
    let with = |symmetry| {
        checker::check(
            &p,
            &checker::CheckOptions {
                exhaustive: true,
                symmetry,
                partial_order: false,
                ..checker::CheckOptions::default()
            },
        )
        .stats
        .states
    };
    let (sym, none) = (with(true), with(false));
    assert!(sym * 2 < none, "{sym} states with symmetry, {none} without");
}

#[test]
fn two_warp_elected_count_parity_and_exit_bugs_are_found() {
    assert_flags(&two_warps("elect-short", 3), "data-race");
    assert_flags(&two_warps("elect-flip", 2), "data-race");
    assert_flags(&two_warps("elect-early", 3), "deadlock");
}

/// Lane 0 initializes the barrier, the elected lane arms it, with no barrier between: correct
/// only if lane 0 is the one elected. The PTX ISA does not promise that ("elect.sync elects one
/// predicated active leader thread from among a set of threads specified by membermask",
/// `elect.sync`), so another lane may arm a barrier whose `init` it is not ordered after.
/// `init`: who initializes (`if lane == 0`, or `elect`: then the same lane as the arming one,
/// "the same leader thread is elected for the same membermask every time"). `between`: what
/// runs between the two (a lane leaving changes the lanes an `elect` chooses from).
fn lane0_init(init: &str, between: &str) -> String {
    format!(
        "protocol p
block 3
mbarrier full
buffer stage
{init} {{ init full, 1 }}
{between}
elect {{
  arrive_expect_tx full, 64
  tma stage -> full, 64
}}
syncthreads
wait full parity 0
read stage
"
    )
}

/// The unreduced replay of every error of `r` (`checker::replay`) reports it again.
fn assert_replays(src: &str, r: &checker::Report) {
    let p = load(src);
    for f in &r.findings {
        if f.severity != checker::Severity::Error || f.schedule.0.is_empty() {
            continue;
        }
        let replay = checker::replay(&p, &checker::CheckOptions::default(), &f.schedule)
            .unwrap_or_else(|e| panic!("the schedule {} does not replay: {e}", f.schedule));
        assert!(
            replay
                .findings
                .iter()
                .any(|g| g.rule.name == f.rule.name && g.span == f.span),
            "replaying {} of `{}` reports {:?}",
            f.schedule,
            f.rule.name,
            replay
                .findings
                .iter()
                .map(|g| g.rule.name)
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn an_elected_lane_other_than_lane_0_is_found() {
    let src = lane0_init("if lane == 0", "");
    let r = assert_flags(&src, "init-not-visible");
    assert_replays(&src, &r);
    // The counterexample says who was elected: not lane 0.
    let f = r
        .findings
        .iter()
        .find(|f| f.rule.name == "init-not-visible")
        .expect("found above");
    let elected: Vec<&str> = f
        .trace
        .iter()
        .filter(|s| s.op.starts_with("is elected"))
        .map(|s| s.thread.as_str())
        .collect();
    assert!(
        elected.len() == 1 && elected[0] != "t0",
        "{elected:?} in {:#?}",
        f.trace
    );
}

/// An `init` by the elected lane is the arming lane's own: the same leader again.
#[test]
fn the_same_lane_is_elected_again() {
    assert_ok(&lane0_init("elect", ""));
}

/// Once a lane has left, the next `elect` chooses again among the lanes left (the model reads
/// the ISA's promise as holding for the same participating lanes only: fail-closed).
#[test]
fn a_lane_leaving_lets_the_next_elect_choose_again() {
    let src = lane0_init("elect", "if lane == 2 { exit }");
    let r = assert_flags(&src, "init-not-visible");
    assert_replays(&src, &r);
}

/// The per-warp ring's errors (reduced with symmetry across `elect`) replay unreduced.
#[test]
fn elected_release_errors_replay() {
    for bug in ["elect-short", "elect-flip", "elect-early"] {
        let src = two_warps(bug, if bug == "elect-flip" { 2 } else { 3 });
        let r = check(&src);
        assert_eq!(r.verdict, checker::Verdict::Hazard, "{bug}");
        assert_replays(&src, &r);
    }
}
