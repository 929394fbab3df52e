//! mbarrier rules: deadlocks, init and its visibility, re-init and inval, arrival and
//! transaction counts, waits on tokens and phases.

use super::*;

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
