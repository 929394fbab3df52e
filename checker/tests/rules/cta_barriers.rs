//! CTA-wide, warp and named barriers: divergence, counts, arrivals by part of a warp, and
//! unaligned barriers (with the partial-order reduction on).

use super::*;

#[test]
fn barrier_divergence() {
    assert_flags(
        "protocol p\nblock 64\nif tid < 32 { syncthreads } else { syncthreads }\n",
        "barrier-divergence",
    );
    assert_ok("protocol p\nblock 64\nsyncthreads\n");
}

#[test]
fn exited_threads_do_not_block_syncthreads() {
    assert_ok("protocol p\nblock 64\nif tid >= 32 { exit }\nsyncthreads\n");
}

#[test]
fn syncthreads_reached_by_some_threads_only() {
    let src = "protocol p
block 64
mbarrier b
if tid == 0 { init b, 1 }
syncthreads
if tid < 32 { syncthreads } else { wait b parity 0 }
";
    let r = assert_flags(src, "barrier-divergence");
    assert!(rules(&r).contains(&"deadlock"));
}

#[test]
fn named_barrier_rearrive() {
    // Small blocks: named-barrier arrivals are steps, and the unreduced runs of the comparison
    // explore every order of them. The rule is the participants of one use naming different
    // counts.
    assert_flags(
        "protocol p\nblock 4\nif tid == 0 { bar_arrive 1, 4 } else { bar_sync 1, 3 }\n",
        "named-barrier-rearrive",
    );
    assert_ok("protocol p\nblock 4\nbar_sync 1, 4\n");
    assert_ok("protocol p\nblock 4\nif tid < 2 { bar_arrive 1, 4 } else { bar_sync 1, 4 }\n");
}

/// semantics.md §9.1, "Arrivals are counted": a thread's second arrival in one use counts.
/// FlashAttention-3's epilogue: every thread (warp) arrives with count N + 1, then the last
/// one syncs with N + 1, so it waits for every other one.
#[test]
fn a_second_arrival_in_one_use_is_counted() {
    assert_ok(
        "protocol p\nblock 4\nbuffer o\nwrite part o\nbar_arrive 1, 5\nif tid == 3 {\n  bar_sync 1, 5\n  read o\n}\n",
    );
    // The sync needs every other thread's arrival: without the others' arrivals before their
    // writes, the read races.
    assert_flags(
        "protocol p\nblock 4\nbuffer o\nbar_arrive 1, 5\nwrite part o\nif tid == 3 {\n  bar_sync 1, 5\n  read o\n}\n",
        "data-race",
    );
    // Two arrivals alone complete a use of count 2 with nobody waiting: the waiter that comes
    // later starves (the ping-pong whose two warpgroups both give the first turn).
    assert_flags(
        "protocol p\nblock 2\nif tid == 0 {\n  bar_arrive 1, 2\n  bar_arrive 1, 2\n} else {\n  bar_sync 1, 2\n}\n",
        "deadlock",
    );
}

/// semantics.md §9.1, "Aligned waits of one use at different instructions": threads blocking
/// in one counted use of an aligned `bar_sync` at different statements (TIRx's FlashAttention
/// backward) are `barrier-divergence`; `unaligned` is the fix, and arrivals from other
/// statements stay legal.
#[test]
fn aligned_counted_bar_sync_at_different_statements() {
    assert_flags(
        "protocol p\nblock 4\nif tid < 2 { bar_sync 5, 4 } else { bar_sync 5, 4 }\n",
        "barrier-divergence",
    );
    assert_ok(
        "protocol p\nblock 4\nif tid < 2 { bar_sync 5, 4 unaligned } else { bar_sync 5, 4 unaligned }\n",
    );
    assert_ok("protocol p\nblock 4\nif tid < 2 { bar_arrive 5, 4 } else { bar_sync 5, 4 }\n");
}

/// Rules, with partial-order reduction on (a warp's worth of named-barrier arrivals is too
/// many orders for the unreduced runs), with symmetry on and off; the two must agree.
fn check_por(src: &str) -> checker::Report {
    let p = load(src);
    let opts = |symmetry| checker::CheckOptions {
        exhaustive: true,
        symmetry,
        ..checker::CheckOptions::default()
    };
    let on = checker::check(&p, &opts(true));
    let off = checker::check(&p, &opts(false));
    let keys = |r: &checker::Report| {
        r.findings
            .iter()
            .map(|f| (f.rule.name, f.span.start))
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(keys(&on), keys(&off), "symmetry changed the findings");
    assert_eq!(on.verdict, off.verdict);
    on
}

/// semantics.md §9.1: in a block of a warp or more, a named barrier's count is in threads of
/// whole warps; a count that is not a multiple of 32 is its own finding, not a deadlock of the
/// lanes of a partial warp. A block under 32 threads is a scaled-down model: not judged.
#[test]
fn named_barrier_count() {
    let r = assert_flags(
        "protocol p\nblock 64\nbar_sync 1, 40\n",
        "named-barrier-count",
    );
    assert!(!rules(&r).contains(&"deadlock"), "{:?}", rules(&r));
    assert_flags(
        "protocol p\nblock 64\nif tid == 0 { bar_arrive 1, 2 }\n",
        "named-barrier-count",
    );
    // Scaled down: one model thread per warp(group).
    assert_ok("protocol p\nblock 3\nif tid > 0 { bar_sync 1, 2 }\n");
    // Whole warps.
    let r = check_por("protocol p\nblock 64\nbar_sync 1, 64\nbar_sync 2, 64\n");
    assert!(errors(&r).is_empty(), "{:?}", rules(&r));
    let r = check_por(
        "protocol p\nblock 96\nif warp == 0 { bar_arrive 1, 96 } else { bar_sync 1, 96 }\n",
    );
    assert!(errors(&r).is_empty(), "{:?}", rules(&r));
}

/// semantics.md §9.1 / W8: `bar_sync`/`bar_arrive` with a count are `.aligned`: run by some
/// lanes of a warp only (inside `elect`, under a lane condition) is `barrier-divergence`,
/// naming the warp and the lanes that never come; not the deadlock of their arrivals.
#[test]
fn named_barrier_by_part_of_a_warp() {
    let r = assert_flags(
        "protocol p\nblock 64\nelect { bar_sync 1, 64 }\n",
        "barrier-divergence",
    );
    assert!(!rules(&r).contains(&"deadlock"), "{:?}", rules(&r));
    let f = &r.findings[0];
    assert!(
        f.message.contains("only some lanes of warp")
            && f.message.contains("t1..t31 never reach")
            && f.message.contains("elect"),
        "{}",
        f.message
    );
    let r = assert_flags(
        "protocol p\nblock 64\nif lane == 0 { bar_arrive 1, 64 }\n",
        "barrier-divergence",
    );
    assert!(
        r.findings[0].message.contains("t0 arrives on it"),
        "{}",
        r.findings[0].message
    );
    // Lanes of one warp at two statements.
    let r = check_por(
        "protocol p\nblock 64\nif lane < 16 { bar_sync 1, 64 } else { bar_sync 1, 64 }\n",
    );
    assert!(rules(&r).contains(&"barrier-divergence"), "{:?}", rules(&r));
    // Warp 0 runs it whole, warp 1 in part: the threads of one symmetry class (tid < 40) differ
    // in their warps' gaps.
    let r = check_por("protocol p\nblock 64\nif tid < 40 { bar_sync 1, 64 }\n");
    let f = r
        .findings
        .iter()
        .find(|f| f.rule.name == "barrier-divergence")
        .expect("a partial warp 1");
    assert!(
        f.message.contains("warp 1") && f.message.contains("t40..t63"),
        "{}",
        f.message
    );
    // Small blocks: not judged (one thread may stand for a warp).
    assert_ok("protocol p\nblock 3\nif tid == 0 { bar_arrive 1, 3 } else { bar_sync 1, 3 }\n");
}

/// semantics.md §9.1, "Without `.aligned`": `bar_sync ID unaligned` (`barrier.sync`) may be
/// reached by the threads of one whole-block use at different statements; with an aligned
/// statement among them it is `barrier-divergence`. A whole-block use publishes the block's
/// barrier inits (§6.4) whatever its id.
#[test]
fn unaligned_whole_block_barrier_at_different_statements() {
    let src = "protocol p
block 4
mbarrier go
buffer flag
if tid == 0 { init go, 1 }
if tid < 2 {
  write flag value 1
  bar_sync 1 unaligned
} else {
  bar_sync 1 unaligned
  read flag
}
if tid == 2 { arrive go }
if tid == 3 { wait go parity 0 }
";
    let r = assert_ok(src);
    assert_eq!(rules(&r), ["same-value-store"], "{:?}", rules(&r));
    // One of the statements `.aligned`: divergence.
    let r = assert_flags(
        &src.replacen(
            "  bar_sync 1 unaligned
} else",
            "  bar_sync 1
} else",
            1,
        ),
        "barrier-divergence",
    );
    assert!(!rules(&r).contains(&"init-not-visible"), "{:?}", rules(&r));
    // Without the barrier the init is not ordered before the others' uses.
    assert_flags(
        &src.replace(
            "  bar_sync 1 unaligned
",
            "",
        ),
        "init-not-visible",
    );
}

/// An `unaligned` named barrier with a count has no "whole warps" check: the lanes of a warp
/// may reach it at different statements (with the aligned form that is `barrier-divergence`).
#[test]
fn unaligned_named_barrier_split_across_a_warp() {
    let src = "protocol p\nblock 64\nif lane < 16 { bar_sync 1, 64 unaligned } else { bar_sync 1, 64 unaligned }\n";
    let r = check_por(src);
    assert!(errors(&r).is_empty(), "{:?}", rules(&r));
    assert_eq!(r.verdict, checker::Verdict::Ok);
    let r = check_por(&src.replace(" unaligned", ""));
    assert!(rules(&r).contains(&"barrier-divergence"), "{:?}", rules(&r));
    // The count is still in whole warps.
    let r = check_por("protocol p\nblock 64\nbar_sync 1, 40 unaligned\n");
    assert!(
        rules(&r).contains(&"named-barrier-count"),
        "{:?}",
        rules(&r)
    );
}

/// 96 threads meet at a whole-block `bar_sync 1 unaligned` from three roles, then one writes
/// and the others read after a second one: the arrivals are taken alone (they complete
/// nothing), so the search stays small, and the reductions agree.
#[test]
fn unaligned_whole_block_barriers_of_three_roles_reduce() {
    let src = "protocol p
block 96
buffer flag
role a when warp == 0 {
  if tid == 0 { write flag value 2 }
  bar_sync 1 unaligned
  bar_sync 1 unaligned
}
role b when warp == 1 {
  bar_sync 1 unaligned
  read flag
  bar_sync 1 unaligned
}
role c when warp == 2 {
  bar_sync 1 unaligned
  read flag
  bar_sync 1 unaligned
}
";
    let r = check_por(src);
    assert!(r.findings.is_empty(), "{:?}", rules(&r));
    assert!(r.stats.states < 2_000, "{} states", r.stats.states);
}
