//! One failing and one passing protocol per rule the checker's search reports, plus the
//! subtle cases of semantics.md. Every case runs with symmetry reduction on and off and the
//! two runs must agree (common::check).

mod common;
use common::*;

const DB: &str = include_str!("data/double_buffer.phase");

fn small_db() -> String {
    DB.replace("param K = 8", "param K = 3")
        .replace("param NC = 8", "param NC = 2")
}

// ---------- deadlock ----------

#[test]
fn deadlock_wrong_parity() {
    let src = small_db().replace(
        "wait empty[s] parity ((k / STAGES) % 2) ^ 1",
        "wait empty[s] parity ((k / STAGES) % 2)",
    );
    let r = assert_flags(&src, "deadlock");
    let f = r
        .findings
        .iter()
        .find(|f| f.rule.name == "deadlock")
        .unwrap();
    assert!(!f.waits_for.is_empty());
    let producer = f
        .waits_for
        .iter()
        .find(|w| w.thread == "producer[0]")
        .unwrap();
    assert!(
        producer.waits_on.contains("empty[0]"),
        "{}",
        producer.waits_on
    );
    assert!(
        producer.missing.contains("2 arrivals"),
        "{}",
        producer.missing
    );
    // The role's indices with the threads' place in the block (tids 32 and 33).
    assert_eq!(
        producer.expected_from[0].thread,
        "consumer[0..1] (tid 32..33)"
    );
    assert_eq!(
        producer.expected_from[0].status,
        checker::PartyStatus::Blocked
    );
}

#[test]
fn deadlock_free_double_buffer() {
    assert_ok(&small_db());
}

#[test]
fn deadlock_exit_without_drop() {
    let src = "protocol p
block 2
mbarrier b
if tid == 0 { init b, 2 }
syncthreads
if tid == 1 { exit }
arrive b
wait b parity 0
";
    let r = assert_flags(src, "deadlock");
    let f = r
        .findings
        .iter()
        .find(|f| f.rule.name == "deadlock")
        .unwrap();
    let w = &f.waits_for[0];
    assert!(
        w.expected_from
            .iter()
            .any(|p| p.status == checker::PartyStatus::Exited)
    );
    // The fix: drop out before leaving.
    assert_ok(&src.replace(
        "if tid == 1 { exit }",
        "if tid == 1 { arrive_drop b; exit }",
    ));
}

// ---------- use before init, visibility, re-init, inval ----------

#[test]
fn use_before_init() {
    let bad = "protocol p\nblock 1\nmbarrier b\narrive b\n";
    assert_flags(bad, "use-before-init");
    assert_ok("protocol p\nblock 1\nmbarrier b\ninit b, 1\narrive b\nwait b parity 0\n");
}

#[test]
fn init_not_visible() {
    let bad = "protocol p
block 2
mbarrier b
if tid == 0 { init b, 2 }
if tid == 1 { while test_wait_never() { } }
";
    let _ = bad;
    let bad = "protocol p
block 2
mbarrier b
buffer x
if tid == 0 { init b, 2; write x }
if tid == 1 { read x }
arrive b
wait b parity 0
";
    assert_flags(bad, "init-not-visible");
    let good = "protocol p
block 2
mbarrier b
if tid == 0 { init b, 2 }
syncthreads
arrive b
wait b parity 0
";
    assert_ok(good);
}

#[test]
fn reinit() {
    assert_flags(
        "protocol p\nblock 1\nmbarrier b\ninit b, 1\ninit b, 1\n",
        "reinit",
    );
    assert_ok("protocol p\nblock 1\nmbarrier b\ninit b, 1\ninval b\ninit b, 1\n");
}

#[test]
fn inval_in_use() {
    let bad = "protocol p
block 2
mbarrier b
if tid == 0 { init b, 1 }
syncthreads
if tid == 0 { inval b } else { wait b parity 0 }
";
    assert_flags(bad, "inval-in-use");
    let good = "protocol p
block 2
mbarrier b
if tid == 0 { init b, 1 }
syncthreads
if tid == 0 { arrive b }
wait b parity 0
syncthreads
if tid == 0 { inval b }
";
    assert_ok(good);
}

// ---------- counts ----------

#[test]
fn count_range() {
    assert_flags(
        "protocol p\nblock 1\nmbarrier b\ninit b, 0\n",
        "count-range",
    );
    assert_flags(
        "protocol p\nblock 1\nmbarrier b\ninit b, 2\narrive b, 3\n",
        "count-range",
    );
    assert_ok("protocol p\nblock 1\nmbarrier b\ninit b, 2\narrive b, 2\nwait b parity 0\n");
}

#[test]
fn tx_range() {
    assert_flags(
        "protocol p\nblock 1\nmbarrier b\ninit b, 1\narrive_expect_tx b, 2000000\n",
        "tx-range",
    );
    assert_ok(
        "protocol p\nblock 1\nmbarrier b\ninit b, 1\narrive_expect_tx b, 1024\ncomplete_tx b, 1024\nwait b parity 0\n",
    );
}

#[test]
fn arrive_on_zero_pending() {
    // Two leaders on a count-1 full barrier.
    let bad = "protocol p
block 2
mbarrier full
if tid == 0 { init full, 1 }
syncthreads
arrive_expect_tx full, 64
";
    assert_flags(bad, "arrive-on-zero-pending");
    let good = "protocol p
block 2
mbarrier full
if tid == 0 { init full, 1 }
syncthreads
if tid == 0 { arrive_expect_tx full, 64; complete_tx full, 64 }
wait full parity 0
";
    assert_ok(good);
}

#[test]
fn unobserved_phase() {
    assert_flags(
        "protocol p\nblock 1\nmbarrier b\ninit b, 1\narrive b\narrive b\n",
        "unobserved-phase",
    );
    assert_ok(
        "protocol p\nblock 1\nmbarrier b\ninit b, 1\narrive b\nwait b parity 0\narrive b\nwait b parity 1\n",
    );
}

#[test]
fn drop_to_zero() {
    assert_flags(
        "protocol p\nblock 1\nmbarrier b\ninit b, 1\narrive_drop b\n",
        "drop-to-zero",
    );
    let good = "protocol p
block 2
mbarrier b
if tid == 0 { init b, 2 }
syncthreads
if tid == 1 { arrive_drop b; exit }
arrive b
wait b parity 0
arrive b
wait b parity 1
";
    assert_ok(good);
}

// ---------- waits ----------

#[test]
fn stale_token() {
    let bad = "protocol p
block 1
mbarrier b
init b, 1
let t = arrive b
wait b token t
let u = arrive b
wait b token t
";
    assert_flags(bad, "stale-token");
    assert_ok(&bad.replace("wait b token t\n\0", "").replace(
        "let u = arrive b\nwait b token t",
        "let u = arrive b\nwait b token u",
    ));
}

/// Thread 1 observes phase 0, skips phases 1 and 2, then waits with parity 1 (for phase 1)
/// while the barrier is in phase 3: it waits for phase 3 instead and never returns.
const BEHIND: &str = "protocol p
block 2
mbarrier b
if tid == 0 { init b, 1 }
syncthreads
if tid == 0 { arrive b }
wait b parity 0
syncthreads
if tid == 0 { arrive b; wait b parity 1; arrive b; wait b parity 0 }
syncthreads
if tid == 1 { wait b parity PAR }
";

#[test]
fn wait_phase_behind_over_waits() {
    let r = assert_flags(&BEHIND.replace("PAR", "1"), "wait-phase-behind");
    // ... and the over-wait hangs.
    assert!(rules(&r).contains(&"deadlock"));
    assert_ok(&BEHIND.replace("PAR", "0"));
}

#[test]
fn parity_one_on_fresh_barrier_passes() {
    assert_ok("protocol p\nblock 1\nmbarrier b\ninit b, 1\nwait b parity 1\n");
}

#[test]
fn stale_phase() {
    // Consumed (an access, an arrive) and then waited on again: stale.
    assert_flags(
        "protocol p\nblock 1\nmbarrier b\nbuffer x\ninit b, 1\narrive b\nwait b parity 0\nread x\nwait b parity 0\n",
        "stale-phase",
    );
    assert_flags(
        "protocol p\nblock 1\nmbarrier b\nmbarrier c\ninit b, 1\ninit c, 2\narrive b\nwait b parity 0\narrive c\nwait b parity 0\n",
        "stale-phase",
    );
    assert_ok(
        "protocol p\nblock 1\nmbarrier b\ninit b, 1\narrive b\nwait b parity 0\narrive b\nwait b parity 1\n",
    );
}

/// Re-testing or re-waiting a phase the thread already saw complete, with nothing done in
/// between, only re-confirms it (tinygemm2 polls two barriers, then waits on each).
#[test]
fn stale_phase_not_for_a_re_wait() {
    assert_ok(
        "protocol p\nblock 1\nmbarrier b\ninit b, 1\narrive b\nwait b parity 0\nwait b parity 0\n",
    );
    // Polling two barriers and then waiting on each: the waits on another barrier, and
    // `compute`, do not consume the phase.
    assert_ok(
        "protocol p
block 2
mbarrier w
mbarrier a
buffer x
if tid == 0 { init w, 1
  init a, 1 }
syncthreads
role loader when tid == 1 {
  arrive w
  arrive a
}
role mma when tid == 0 {
  let w_ok = test_wait w parity 0
  let a_ok = test_wait a parity 0
  compute
  wait w parity 0
  wait a parity 0
  let again = test_wait w parity 0
  wait w parity 0
  read x
}
",
    );
    // A test that passes on a consumed phase does not make it fresh again.
    assert_flags(
        "protocol p\nblock 1\nmbarrier b\nbuffer x\ninit b, 1\narrive b\nwait b parity 0\nread x\nlet ok = test_wait b parity 0\nwait b parity 0\n",
        "stale-phase",
    );
}

// ---------- tx ----------

#[test]
fn tx_may_go_negative_before_the_expect() {
    assert_ok(
        "protocol p\nblock 1\nmbarrier b\ninit b, 1\ncomplete_tx b, 16\nexpect_tx b, 16\narrive b\nwait b parity 0\n",
    );
}

#[test]
fn expect_without_arrival() {
    assert_flags(
        "protocol p\nblock 1\nmbarrier b\ninit b, 1\ncomplete_tx b, 16\narrive b\nexpect_tx b, 16\n",
        "expect-without-arrival",
    );
}

#[test]
fn expect_after_completion() {
    let bad = "protocol p
block 1
mbarrier full
buffer a
init full, 1
arrive full
expect_tx full, 1024
tma a -> full, 1024
wait full parity 0
read a
";
    assert_flags(bad, "expect-after-completion");
    let good = "protocol p
block 1
mbarrier full
buffer a
init full, 1
expect_tx full, 1024
tma a -> full, 1024
arrive full
wait full parity 0
read a
";
    assert_ok(good);
}

// ---------- CTA, warp, named barriers ----------

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

// ---------- clusters ----------

const PAIR: &str = include_str!("data/multicast_pair.phase");

#[test]
fn multicast_pair_is_ok() {
    assert_ok(&PAIR.replace("block 128", "block 3"));
}

#[test]
fn remote_cta_exited() {
    let bad = "protocol p
block 2
cluster 2
mbarrier b
if tid == 0 { init b, 1; fence_mbarrier_init }
cluster_sync
if cta == 0 && tid == 0 { arrive b @ 1 }
";
    assert_flags(bad, "remote-cta-exited");
    let good = "protocol p
block 2
cluster 2
mbarrier b
if tid == 0 { init b, 1; fence_mbarrier_init }
cluster_sync
if cta == 0 && tid == 0 { arrive b @ 1 scope cluster }
if cta == 1 { wait b parity 0 }
cluster_sync
";
    assert_ok(good);
}

/// A peer block's buffer (`X @ r`, `ld`/`st.shared::cluster` through `mapa`) after every
/// thread of that block finished is `remote-cta-exited`, as a remote arrive is: the Triton
/// multi-CTA scalar atomic (triton-lang/triton#11730, fixed by the exit barrier of #10656,
/// backported in #11731), where CTA 0 holds the result and the peers read it.
#[test]
fn remote_cta_exited_buffer_access() {
    for access in [
        "read result @ 0",
        "write result @ 0",
        "write part result @ 0",
        "write result @ 0 value 1",
        "mma result @ 0",
    ] {
        let src = |tail: &str| {
            format!(
                "protocol p
block 1
cluster 2
buffer result
if cta == 0 {{ write result; fence_proxy_async }}  # mma reads through the async proxy
cluster_sync
if cta == 1 {{ {access} }}
{tail}"
            )
        };
        let bad = src("");
        let r = assert_flags(&bad, "remote-cta-exited");
        let f = r
            .findings
            .iter()
            .find(|f| f.rule.name == "remote-cta-exited")
            .unwrap();
        assert!(f.message.contains("cta0.result"), "{access}: {}", f.message);
        // The fix of #10656: a cluster barrier before every return.
        assert_ok(&src("cluster_sync\n"));
    }
}

/// Only a peer's buffer depends on the peer running: the same access to the block's own
/// buffer after the peer finished is fine, and so is a remote access the peer outlives.
#[test]
fn remote_cta_exited_needs_a_peer_buffer() {
    assert_ok(
        "protocol p
block 1
cluster 2
buffer result
if cta == 0 { write result }
cluster_sync
if cta == 1 { read result; write result }
",
    );
    assert_ok(
        "protocol p
block 1
cluster 2
mbarrier done
buffer result
if cta == 0 { init done, 1; fence_mbarrier_init }
cluster_sync
if cta == 1 { read result @ 0; arrive done @ 0 scope cluster }
if cta == 0 { wait done parity 0 }
",
    );
}

#[test]
fn remote_op() {
    let bad = "protocol p
block 2
cluster 2
mbarrier b
if tid == 0 { init b, 1 }
cluster_sync
if cta == 0 && tid == 0 { wait b @ 1 parity 0 }
cluster_sync
";
    assert_flags(bad, "remote-op");
}

#[test]
fn init_not_visible_to_peer_block() {
    let bad = "protocol p
block 2
cluster 2
mbarrier b
if tid == 0 { init b, 1 }
if cta == 0 && tid == 0 { arrive b @ 1 }
cluster_sync
";
    assert_flags(bad, "init-not-visible");
}

// ---------- pipelines ----------

const PIPE: &str = "protocol p
block 64
pipeline pp stages 2 producers 32 consumers 32
buffer s[2]
role producer when warp == 0 {
  for k in 0..3 {
    producer_acquire pp
    memcpy_async s[k % 2] -> pp
    producer_commit pp
  }
}
role consumer when warp == 1 {
  for k in 0..3 {
    consumer_wait pp
    read s[k % 2]
    consumer_release pp
  }
}
";

#[test]
fn pipeline_roles() {
    // Too big for a unit test with 64 threads; shrink to one warp-ish group each.
    let src = PIPE
        .replace("block 64", "block 3")
        .replace("producers 32 consumers 32", "producers 1 consumers 2")
        .replace("warp == 0", "tid == 0")
        .replace("warp == 1", "tid >= 1");
    assert_ok(&src);
    let bad = src.replace(
        "    read s[k % 2]\n",
        "    read s[k % 2]\n    producer_acquire pp\n",
    );
    assert_flags(&bad, "pipeline-role");
}

#[test]
fn after_quit() {
    let src = "protocol p
block 1
pipeline tp thread
buffer a
quit tp
producer_acquire tp
";
    assert_flags(src, "after-quit");
    assert_ok(
        "protocol p\nblock 1\npipeline tp thread\nbuffer a\nproducer_acquire tp\nmemcpy_async a -> tp\nproducer_commit tp\nconsumer_wait tp\nread a\nconsumer_release tp\nquit tp\n",
    );
}

/// semantics.md §4.2 P6: a consumer that quits a partitioned pipeline while the producer still
/// needs its releases leaves a phase one arrival short. Reported as `after-quit` at the quit
/// (besides the deadlock it leads to, whose headline names the quit); the same consumers
/// quitting after their last release are fine, and so is a quit at one of the last two (=
/// stages) batches: the phases it leaves short are ones nobody waits for.
#[test]
fn quit_with_obligations_left() {
    let early = "protocol p
block 3
pipeline pipe stages 2 producers 1 consumers 2
buffer chunk[2]
role producer when tid == 0 {
  for b in 0..4 {
    producer_acquire pipe
    memcpy_async chunk[b % 2] -> pipe
    producer_commit pipe
  }
  quit pipe
}
role consumer when tid > 0 {
  for b in 0..4 {
    if tid == 2 && b == 1 {
      quit pipe
      exit
    }
    consumer_wait pipe
    read chunk[b % 2]
    consumer_release pipe
  }
  quit pipe
}
";
    let r = assert_flags(early, "after-quit");
    let f = r
        .findings
        .iter()
        .find(|f| f.rule.name == "after-quit")
        .unwrap();
    assert!(
        f.message
            .contains("consumer[1] quits while `pipe.consumed[1]` phase 0"),
        "{}",
        f.message
    );
    assert!(rules(&r).contains(&"deadlock"), "{:?}", rules(&r));
    let d = r
        .findings
        .iter()
        .find(|f| f.rule.name == "deadlock")
        .unwrap();
    assert!(
        d.message.starts_with(
            "consumer[1] (tid 2: warp 0 lane 2) quit `pipe` while `pipe.consumed[1]` still counts it (quit does not arrive_and_drop): producer[0] waits on `pipe.consumed[1]`"
        ),
        "{}",
        d.message
    );
    let late = early.replace("if tid == 2 && b == 1 {", "if tid == 2 && b == 9 {");
    assert_ok(&late);
    // At the last batches: nobody waits for what the quit leaves short.
    for at in [2, 3] {
        let last = early.replace(
            "if tid == 2 && b == 1 {",
            &format!("if tid == 2 && b == {at} {{"),
        );
        assert_ok(&last);
    }
    // The producer quits early: the consumers wait for its commits forever.
    let producer = "protocol p
block 2
pipeline pipe stages 2 producers 1 consumers 1
buffer chunk[2]
role producer when tid == 0 {
  for b in 0..3 {
    if b == 1 {
      quit pipe
      exit
    }
    producer_acquire pipe
    memcpy_async chunk[b % 2] -> pipe
    producer_commit pipe
  }
}
role consumer when tid == 1 {
  for b in 0..3 {
    consumer_wait pipe
    read chunk[b % 2]
    consumer_release pipe
  }
  quit pipe
}
";
    let r = assert_flags(producer, "after-quit");
    let f = r
        .findings
        .iter()
        .find(|f| f.rule.name == "after-quit")
        .unwrap();
    assert!(f.message.contains("`producer_commit`"), "{}", f.message);
}

/// The deadlock's headline names the root cause first: the thread that exited without
/// `arrive_drop`, and the barrier that still counts it.
#[test]
fn deadlock_headline_names_the_exited_thread() {
    let src = "protocol p
param NT = 3
block NT
barrier bar
if tid == 0 { init bar, NT }
syncthreads
for i in 0..3 {
  if tid == NT - 1 && i == 1 { exit }
  let t = arrive bar
  wait bar token t
}
";
    let r = assert_flags(src, "deadlock");
    let d = &r.findings[0];
    assert_eq!(
        d.message,
        "t2 exited without `arrive_drop` on `bar`, which still counts it: t0..t1 wait on `bar` phase 1 forever (1 arrival missing)"
    );
    // A thread that dropped before its exit is not the cause (here t1 never arrives at all).
    let r = assert_flags(
        "protocol p
block 3
mbarrier b
if tid == 0 { init b, 3 }
syncthreads
if tid == 2 {
  arrive_drop b
  exit
}
if tid == 0 {
  arrive b
  wait b parity 0
}
",
        "deadlock",
    );
    assert!(
        !r.findings[0].message.contains("exited"),
        "{}",
        r.findings[0].message
    );
    // No exit: the headline says who waits on what.
    let r = assert_flags(
        "protocol p\nblock 2\nmbarrier b\nif tid == 0 { init b, 2 }\nsyncthreads\nif tid == 0 { arrive b }\nwait b parity 0\n",
        "deadlock",
    );
    assert!(
        r.findings[0].message.contains("can never finish"),
        "{}",
        r.findings[0].message
    );
}

#[test]
fn thread_pipeline_read_before_wait_races() {
    assert_flags(
        "protocol p\nblock 1\npipeline tp thread\nbuffer a\nproducer_acquire tp\nmemcpy_async a -> tp\nproducer_commit tp\nread a\n",
        "data-race",
    );
}

// ---------- model errors and loop bounds ----------

#[test]
fn model_error() {
    assert_flags(
        "protocol p\nblock 1\nlet z = 0\nlet x = 1 / z\n",
        "model-error",
    );
    assert_ok("protocol p\nblock 1\nlet z = 1\nlet x = 1 / z\n");
}

#[test]
fn runaway_while_is_inconclusive() {
    let p = load(
        "protocol p\nblock 1\nmbarrier b\ninit b, 1\nlet i = 0\nwhile 1 { arrive b; wait b parity i; i = i ^ 1 }\n",
    );
    let r = checker::check(
        &p,
        &checker::CheckOptions {
            max_loop_trips: 5,
            ..checker::CheckOptions::default()
        },
    );
    assert_eq!(r.verdict, checker::Verdict::Inconclusive);
    assert!(r.incomplete.unwrap().reason.contains("max-loop-trips"));
}

#[test]
fn max_states_is_inconclusive() {
    let p = load(&small_db());
    let r = checker::check(
        &p,
        &checker::CheckOptions {
            max_states: 10,
            ..checker::CheckOptions::default()
        },
    );
    assert_eq!(r.verdict, checker::Verdict::Inconclusive);
    let inc = r.incomplete.unwrap();
    assert!(inc.reason.contains("max-states"));
    assert!(inc.covered.contains("depth"));
}

// ---------- races ----------

#[test]
fn data_race_arrive_before_read() {
    let src = small_db().replace(
        "    read slot[s]\n    arrive empty[s]",
        "    arrive empty[s]\n    read slot[s]",
    );
    assert_flags(&src, "data-race");
}

#[test]
fn tma_does_not_publish_issuer_writes() {
    let bad = "protocol p
block 2
mbarrier full
buffer a
buffer flag
if tid == 0 { init full, 1 }
syncthreads
if tid == 0 {
  arrive_expect_tx full, 64
  write flag
  tma a -> full, 64
}
wait full parity 0
read a
read flag
";
    assert_flags(bad, "data-race");
    let good = bad.replace(
        "  arrive_expect_tx full, 64\n  write flag\n",
        "  write flag\n  arrive_expect_tx full, 64\n",
    );
    assert_ok(&good);
}

#[test]
fn tma_read_before_wait_races() {
    let src = "protocol p
block 1
mbarrier full
buffer a
init full, 1
arrive_expect_tx full, 64
tma a -> full, 64
read a
wait full parity 0
";
    assert_flags(src, "data-race");
}

#[test]
fn missing_proxy_fence() {
    let bad = "protocol p
block 2
buffer a
if tid == 1 { write a }
syncthreads
if tid == 0 { tma_store a; bulk_commit; bulk_wait_read 0 }
";
    assert_flags(bad, "missing-proxy-fence");
    assert_ok(&bad.replace("write a }", "write a; fence_proxy_async }"));
}

#[test]
fn cp_async_visible_to_issuing_thread_only() {
    let bad = "protocol p
block 2
buffer a
mbarrier b
if tid == 0 { init b, 1 }
syncthreads
if tid == 0 { cp_async a; commit_group; wait_group 0 }
if tid == 1 { read a }
";
    assert_flags(bad, "data-race");
    let good = "protocol p
block 2
buffer a
if tid == 0 { cp_async a; commit_group; wait_group 0 }
syncthreads
if tid == 1 { read a }
";
    assert_ok(good);
}

#[test]
fn cp_async_mbarrier_arrive_publishes() {
    let good = "protocol p
block 2
buffer a
mbarrier b
if tid == 0 { init b, 1 }
syncthreads
if tid == 0 { cp_async a; cp_async_arrive b noinc }
if tid == 1 { wait b parity 0; read a }
";
    assert_ok(good);
}

const DOMAINS: &str = include_str!("data/domains.phase");

#[test]
fn gpu_scope_handoff_across_domains_races() {
    assert_flags(DOMAINS, "data-race");
    assert_ok(&DOMAINS.replace("scope gpu", "scope sys"));
    // Same domain: gpu scope suffices.
    assert_ok(&DOMAINS.replace("domain remote", "domain default"));
}

// ---------- cooperative tiles: `write part` ----------

/// Four threads fill one tile, each its own part: no race among them; the read after the
/// syncthreads is ordered after every part.
#[test]
fn part_writes_of_one_tile_do_not_race() {
    let src = "protocol p
block 4
buffer tile[2]
write part tile[1]
syncthreads
read tile[1]
";
    assert_ok(src);
    // The same with whole writes is a race.
    assert_flags(&src.replace("write part", "write"), "data-race");
}

#[test]
fn part_write_races_with_a_read_by_another_thread() {
    let src = "protocol p
block 4
buffer tile
write part tile
read tile
";
    let r = assert_flags(src, "data-race");
    assert!(
        r.findings
            .iter()
            .any(|f| f.message.contains("`write part tile`")),
        "{:#?}",
        r.findings.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
    // A thread's own part write and its own later read are ordered by program order; another
    // thread's part write is not ordered before it without a barrier.
    let one = "protocol p
block 1
buffer tile
write part tile
read tile
";
    assert_ok(one);
}

#[test]
fn part_write_races_with_a_whole_write() {
    let src = "protocol p
block 2
buffer tile
if tid == 0 { write part tile }
if tid == 1 { write tile }
";
    assert_flags(src, "data-race");
    let ordered = "protocol p
block 2
buffer tile
if tid == 0 { write part tile }
syncthreads
if tid == 1 { write tile }
";
    assert_ok(ordered);
}

/// A producer warp fills a stage with part writes and hands it over with one mbarrier phase
/// (every producer arrives); without the consumer's wait the read races with the parts.
#[test]
fn part_writes_handed_over_by_an_mbarrier() {
    let ok = "protocol p
block 3
mbarrier full
buffer stage
if tid == 0 { init full, 2 }
syncthreads
if tid < 2 {
  write part stage
  arrive full
}
if tid == 2 {
  wait full parity 0
  read stage
}
";
    assert_ok(ok);
    assert_flags(&ok.replace("  wait full parity 0\n", ""), "data-race");
}

/// cp.async writes go through the generic proxy (semantics.md §6.3): a WGMMA operand read of
/// them needs the issuing thread's `fence_proxy_async` after the copy's issue, and a release
/// after the fence that the reader acquires. (The oracle's regression
/// `regression_cp_async_then_mma_needs_a_proxy_fence` in `oracle/tests/agree.rs`.)
#[test]
fn cp_async_writes_need_the_proxy_fence_before_an_mma() {
    let bad = "protocol p
block 2
mbarrier full
buffer slot
if tid == 0 { init full, 1 }
syncthreads
if tid == 0 {
  cp_async slot
  cp_async_arrive full
  arrive full
} else {
  wait full parity 0
  mma slot
}
";
    // Completed by the arrive-on, no fence.
    assert_flags(bad, "missing-proxy-fence");
    let fenced = bad.replace("cp_async slot\n", "cp_async slot\n  fence_proxy_async\n");
    assert_ok(&fenced);
    // The fence after the arrive that hands the slot over does not reach the reader.
    assert_flags(
        &bad.replace("arrive full\n}", "arrive full\n  fence_proxy_async\n}"),
        "missing-proxy-fence",
    );
    // With `noinc` only the copy is released to the reader, not the issuer's fence.
    let noinc = fenced.replace(
        "cp_async_arrive full\n  arrive full",
        "cp_async_arrive full noinc",
    );
    assert_flags(&noinc, "missing-proxy-fence");
    // Completed by `wait_group` (visible to the issuer), fenced after it, then handed over.
    let waited = "protocol p
block 2
buffer slot
if tid == 0 { cp_async slot; commit_group; wait_group 0 }
syncthreads
if tid == 1 { mma slot }
";
    assert_flags(waited, "missing-proxy-fence");
    assert_ok(&waited.replace("wait_group 0 }", "wait_group 0; fence_proxy_async }"));
}

/// Part writes are generic-proxy writes: the async proxy (a TMA store) needs the fence.
#[test]
fn part_writes_need_the_proxy_fence_before_a_tma_store() {
    let bad = "protocol p
block 2
buffer a
write part a
syncthreads
if tid == 0 { tma_store a; bulk_commit; bulk_wait_read 0 }
";
    assert_flags(bad, "missing-proxy-fence");
    assert_ok(&bad.replace("write part a\n", "write part a\nfence_proxy_async\n"));
}

/// A part write conflicts with an in-flight async copy into the same instance.
#[test]
fn part_write_races_with_an_in_flight_cp_async() {
    let src = "protocol p
block 2
buffer a
if tid == 0 { cp_async a; commit_group; wait_group 0 }
if tid == 1 { write part a }
";
    assert_flags(src, "data-race");
}

// ---------- same-value stores: `write X value N` ----------

/// Unordered writes of one instance that store the same value are a data race by PTX's
/// definition that PTX defines (semantics.md §6.1, "Same-value stores"): a `same-value-store`
/// warning, once per statement, not `data-race`. Different values, a write without a value and
/// a read that is not ordered after the writes still race.
#[test]
fn same_value_stores_are_a_warning_not_a_race() {
    let src = "protocol p
block 4
buffer flag
write flag value 7
syncthreads
read flag
";
    let r = assert_ok(src);
    assert_eq!(rules(&r), ["same-value-store"], "reported once");
    let f = &r.findings[0];
    assert_eq!(f.severity, checker::Severity::Warning);
    assert!(f.message.contains("same value (7)"), "{}", f.message);
    assert_eq!(
        f.labels.len(),
        1,
        "both statements: the finding and its label"
    );
    // Different values (each thread its own constant) race.
    let different = "protocol p
block 2
buffer flag
if tid == 0 { write flag value 1 } else { write flag value 2 }
syncthreads
read flag
";
    assert_flags(different, "data-race");
    assert!(!rules(&check(different)).contains(&"same-value-store"));
    // A write whose value is not known races with a write of a value.
    let unknown = "protocol p
block 2
buffer flag
if tid == 0 { write flag value 1 } else { write flag }
";
    assert_flags(unknown, "data-race");
    // A part write has no value: it races with the whole write.
    assert_flags(
        &unknown.replace("else { write flag }", "else { write part flag }"),
        "data-race",
    );
    // The read is not ordered after the writes: it may see the old bytes.
    let read = "protocol p
block 4
buffer flag
if tid < 2 { write flag value 7 } else { read flag }
";
    let r = assert_flags(read, "data-race");
    assert!(rules(&r).contains(&"same-value-store"), "{:?}", rules(&r));
}

/// The kept-access check (an access that co-enabledness cannot see: the second write is
/// enabled only after the first thread ran on, through a TMA completion that does not publish
/// the issuer's writes) makes the same distinction. The kept accesses of a thread keep writes
/// of different values apart: thread 0's write of 2 is not hidden by its later write of 1.
#[test]
fn same_value_stores_through_kept_accesses() {
    let src = "protocol p
block 2
mbarrier full
buffer flag
buffer tile
if tid == 0 { init full, 1 }
syncthreads
if tid == 0 {
  write flag value 1
  tma tile -> full, 64
} else {
  arrive_expect_tx full, 64
  wait full parity 0
  write flag value 1
}
";
    let r = assert_ok(src);
    assert_eq!(rules(&r), ["same-value-store"]);
    assert_flags(
        &src.replace("  write flag value 1\n}", "  write flag value 2\n}"),
        "data-race",
    );
    assert_flags(
        &src.replace("  write flag value 1\n}", "  read flag\n}"),
        "data-race",
    );
    let two = src.replace(
        "  write flag value 1\n  tma",
        "  write flag value 2\n  write flag value 1\n  tma",
    );
    let r = assert_flags(&two, "data-race");
    assert!(rules(&r).contains(&"same-value-store"), "{:?}", rules(&r));
}

/// Four threads store the same value and hand it over through an mbarrier: the warning, and
/// the reductions (symmetry folds the writers) agree with the unreduced search
/// (`common::check`).
#[test]
fn same_value_stores_handed_over() {
    let src = "protocol p
block 5
mbarrier go
buffer flag
if tid == 0 { init go, 4 }
syncthreads
if tid < 4 {
  write flag value 3
  arrive go
} else {
  wait go parity 0
  read flag
}
";
    let r = assert_ok(src);
    assert!(rules(&r).contains(&"same-value-store"), "{:?}", rules(&r));
    assert_flags(&src.replace("  wait go parity 0\n", ""), "data-race");
}

/// The generated dispatch shape (`protogen::Dispatch`, Triton's warp-specialization dispatch):
/// without a bug only the `same-value-store` warning, each bug its rule.
#[test]
fn generated_dispatch_bugs_have_their_rules() {
    use protogen::{Dispatch, DispatchBug};
    for rounds in 1..=2 {
        let d = |bug| Dispatch {
            dispatchers: 2,
            workers: 2,
            rounds,
            bug,
        };
        let r = assert_ok(&d(None).source());
        assert!(rules(&r).contains(&"same-value-store"), "{:?}", rules(&r));
        for (bug, rule) in [
            (DispatchBug::OtherValue, "data-race"),
            (DispatchBug::NoValue, "data-race"),
            (DispatchBug::EarlyRead, "data-race"),
            (DispatchBug::Aligned, "barrier-divergence"),
        ] {
            assert_flags(&d(Some(bug)).source(), rule);
        }
        if rounds == 2 {
            assert_flags(&d(Some(DispatchBug::EarlyRewrite)).source(), "data-race");
        }
    }
}

/// semantics.md §6.3, "Where the fence may stand": the only proxy fence is the async side's,
/// after the synchronization (ThunderKittens' epilogue, and a producer that fences after its
/// empty-barrier wait before a TMA refill): the warning `proxy-fence-after-sync`, not the error;
/// with no fence at all it stays `missing-proxy-fence` (DeepEP #621).
#[test]
fn proxy_fence_after_the_synchronization() {
    let tile = "protocol p\nblock 2\nbuffer o\nwrite part o\nFENCE_W\nbar_sync 1, 2\nif tid == 0 {\n  FENCE_I\n  tma_store o\n  bulk_commit\n  bulk_wait_read 0\n}\n";
    let with = |w: &str, i: &str| tile.replace("FENCE_W", w).replace("FENCE_I", i);
    let r = check(&with("compute", "fence_proxy_async"));
    assert_eq!(
        rules(&r),
        vec!["proxy-fence-after-sync"],
        "{:?}",
        r.findings
    );
    assert_ok(&with("fence_proxy_async", "compute"));
    assert_flags(&with("compute", "compute"), "missing-proxy-fence");
    // A fence before the issuer is ordered after the writes is no fence for them.
    let early = "protocol p\nblock 2\nbuffer o\nif tid == 0 { fence_proxy_async }\nwrite part o\nbar_sync 1, 2\nif tid == 0 {\n  tma_store o\n  bulk_commit\n  bulk_wait_read 0\n}\n";
    assert_flags(early, "missing-proxy-fence");
    // Write after read: consumers read a stage and release it; the producer waits, fences,
    // and refills it by TMA.
    let refill = "protocol p\nblock 2\nmbarrier empty\nmbarrier full\nbuffer stage\nif tid == 0 {\n  init empty, 1\n  init full, 1\n}\nsyncthreads\nif tid == 1 {\n  read stage\n  arrive empty\n} else {\n  wait empty parity 0\n  FENCE\n  arrive_expect_tx full, 16\n  tma stage -> full, 16\n  wait full parity 0\n}\n";
    let r = check(&refill.replace("FENCE", "fence_proxy_async"));
    assert_eq!(
        rules(&r),
        vec!["proxy-fence-after-sync"],
        "{:?}",
        r.findings
    );
    assert_flags(&refill.replace("FENCE", "compute"), "missing-proxy-fence");
}
