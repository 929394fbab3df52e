//! Who happens after a kept access (docs/design.md, "Races", 2.): a release reaches the threads
//! that acquire it, directly or through others, and no one else. Each race below is one that
//! co-enabledness cannot see, because the reader is enabled by something that orders nothing
//! (a TMA completion, threads finishing); each passing twin orders the same accesses through a
//! chain of acquires. Every case runs with the reductions on and off (common::check).

mod common;
use common::*;

/// Thread 0 arms `b` (its arrive is the one `b` counts), then writes `x` and releases it into
/// barrier `a`, which nobody waits on; thread 1's wait on `b` returns because of thread 0's TMA
/// copy, whose completion carries none of thread 0's history (semantics.md §2.11).
const TMA_AFTER_UNRELATED_RELEASE: &str = "protocol p
block 2
mbarrier a
mbarrier b
buffer x
buffer y
if tid == 0 {
  init a, 1
  init b, 1
}
syncthreads
if tid == 0 {
  arrive_expect_tx b, 16
  write x
  arrive a
  tma y -> b, 16
} else {
  wait b parity 0
  read x
}
";

#[test]
fn a_tma_completion_does_not_carry_an_unrelated_release() {
    let r = assert_flags(TMA_AFTER_UNRELATED_RELEASE, "data-race");
    assert!(
        r.findings.iter().any(|f| f.rule.name == "data-race"
            && f.message.contains("no release made after it reaches")),
        "{:?}",
        r.findings.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
}

#[test]
fn the_issuer_releasing_into_the_waited_barrier_orders_the_write() {
    // The passing twin: the write comes before thread 0's arrive on `b`, so the waiter
    // acquires it.
    let src = TMA_AFTER_UNRELATED_RELEASE.replace(
        "  arrive_expect_tx b, 16\n  write x\n",
        "  write x\n  arrive_expect_tx b, 16\n",
    );
    assert_ok(&src);
}

/// A chain of acquires: thread 0 → `a` → thread 1 → `b` → thread 2.
const CHAIN: &str = "protocol p
block 3
mbarrier a
mbarrier b
buffer x
if tid == 0 {
  init a, 1
  init b, 1
}
syncthreads
if tid == 0 {
  write x
  arrive a
} else if tid == 1 {
  wait a parity 0
  arrive b
} else {
  wait b parity 0
  read x
}
";

#[test]
fn a_release_reaches_through_a_thread_that_acquired_it() {
    assert_ok(CHAIN);
}

#[test]
fn a_release_made_before_the_acquire_does_not_pass_the_access_on() {
    // Thread 1 arrives on `b` before it acquires `a`: its release carries nothing of thread 0.
    let src = CHAIN.replace(
        "  wait a parity 0\n  arrive b\n",
        "  arrive b\n  wait a parity 0\n",
    );
    assert_flags(&src, "data-race");
}

/// A use of a whole-block named barrier that completes without the reader: thread 0 arrives
/// and finishes, thread 1 completes the use, thread 2 then completes a use of its own (the
/// oracle's regression `regression_release_without_acquire_whole_block_barrier`).
const WHOLE_BLOCK: &str = "protocol p
block 3
buffer data[3]
if tid == 0 { write data[0] }
if tid == 0 { bar_arrive 2 } else { bar_sync 2 }
if tid != 0 { read data[0] }
";

#[test]
fn a_named_barrier_use_hands_its_releases_only_to_its_participants() {
    let r = assert_flags(WHOLE_BLOCK, "data-race");
    assert!(
        r.findings
            .iter()
            .any(|f| f.rule.name == "data-race" && f.message.contains("`read data[0]`")),
        "{:?}",
        r.findings.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
}

#[test]
fn a_syncthreads_orders_the_write_before_every_reader() {
    assert_ok(&WHOLE_BLOCK.replace(
        "if tid == 0 { bar_arrive 2 } else { bar_sync 2 }",
        "syncthreads",
    ));
}

#[test]
fn a_warp_collective_joins_its_lanes() {
    let src = "protocol p
block 2
buffer x
if tid == 0 { write x }
syncwarp
if tid == 1 { read x }
";
    assert_ok(src);
    assert_flags(&src.replace("syncwarp\n", ""), "data-race");
}

/// Cumulativity (semantics.md §6.1): thread 5's store reaches thread 0 through a
/// `syncthreads`, and thread 0 releases at gpu scope to the other kernel's acquire. Causality
/// order is transitive whatever the scope of each link, so the other kernel's load is ordered
/// after thread 5's store: the shape of CUTLASS's split-K semaphore and of a grid sync.
const RELEASED_BY_AN_OBSERVER: &str = "protocol p
block 8
global partial
global flag
kernel producer domain default {
  if tid == 5 { store partial }
  LINK
  if tid == 0 { store_release flag scope SCOPE }
}
kernel consumer domain default block 2 {
  if tid == 0 {
    load_acquire flag scope gpu
    load partial
  }
}
";

fn observer(link: &str, scope: &str) -> String {
    RELEASED_BY_AN_OBSERVER
        .replace("LINK", link)
        .replace("SCOPE", scope)
}

#[test]
fn a_gpu_release_carries_what_its_thread_observed_through_syncthreads() {
    assert_ok(&observer("syncthreads", "gpu"));
    assert_ok(&observer("syncthreads", "sys"));
}

#[test]
fn a_cta_release_does_not_reach_another_kernel_even_after_syncthreads() {
    let r = assert_flags(&observer("syncthreads", "cta"), "data-race");
    assert!(
        r.findings
            .iter()
            .any(|f| f.message.contains("scope too narrow")),
        "{:?}",
        r.findings.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
}

#[test]
fn a_gpu_release_carries_what_its_thread_observed_through_a_named_barrier() {
    assert_ok(&observer("bar_sync 1, 8", "gpu"));
}

#[test]
fn a_gpu_release_without_observing_the_store_is_still_a_race() {
    // No link: thread 0 never learns of thread 5's store, so its release carries nothing.
    assert_flags(&observer("", "gpu"), "data-race");
}

/// The same through an mbarrier phase: thread 5 arrives after its store, thread 0 waits for
/// the phase, then releases at gpu scope.
const OBSERVED_THROUGH_A_PHASE: &str = "protocol p
block 8
mbarrier done
global partial
global flag
kernel producer domain default {
  if tid == 0 { init done, 1 }
  syncthreads
  if tid == 5 {
    store partial
    arrive done
  }
  if tid == 0 {
    wait done parity 0
    store_release flag scope SCOPE
  }
}
kernel consumer domain default block 2 {
  if tid == 0 {
    load_acquire flag scope gpu
    load partial
  }
}
";

#[test]
fn a_gpu_release_carries_what_its_thread_observed_through_an_mbarrier_phase() {
    assert_ok(&OBSERVED_THROUGH_A_PHASE.replace("SCOPE", "gpu"));
    assert_flags(
        &OBSERVED_THROUGH_A_PHASE.replace("SCOPE", "cta"),
        "data-race",
    );
}

/// Within a cluster (blocks of 4 threads, a scaled-down model): thread 3 of block 0 writes its shared buffer, thread 0 of block 0
/// observes it through a `syncthreads` and arrives at cluster scope on block 1's barrier;
/// block 1 reads block 0's buffer after its wait, then lets block 0 finish (no cluster barrier
/// after the read: its arrivals would release thread 3's write at cluster scope by themselves).
const OBSERVED_THEN_RELEASED_TO_A_PEER: &str = "protocol p
block 4
cluster 2
mbarrier ready
mbarrier back
buffer x
if tid == 0 {
  init ready, 1
  init back, 1
}
cluster_sync
if cta == 0 {
  if tid == 3 { write x }
  syncthreads
  if tid == 0 {
    arrive ready @ 1 scope SCOPE
    wait back parity 0
  }
} else {
  if tid == 0 {
    wait ready parity 0 ACQUIRE
    read x @ 0
    arrive back @ 0 scope cluster
  }
}
";

fn released_to_a_peer(release: &str, acquire: &str) -> String {
    OBSERVED_THEN_RELEASED_TO_A_PEER
        .replace("SCOPE", release)
        .replace("ACQUIRE", acquire)
}

#[test]
fn a_cluster_arrive_carries_what_its_thread_observed() {
    assert_ok(&released_to_a_peer("cluster", "scope cluster"));
    assert_flags(&released_to_a_peer("cta", "scope cluster"), "data-race");
}

/// PTX "Morally strong operations": "each operation is strong and specifies a scope that
/// includes the thread executing the other operation." A `.acquire.cta` wait does not include the
/// arriving thread of the peer block, so a `.release.cluster` arrive does not synchronize
/// with it (litmus `mp_mbarrier_remote_cta_acquire`).
#[test]
fn a_cta_scope_wait_does_not_acquire_a_peer_blocks_cluster_release() {
    assert_flags(&released_to_a_peer("cluster", ""), "data-race");
}

/// A relay through a thread of another block: kernel `a` releases at gpu, a thread of kernel
/// `b` acquires it, hands it over in its block with a syncthreads, and another thread of `b`
/// releases it to kernel `c` (cumulativity: causality order is transitive whatever the scope
/// of each link, as long as each link is morally strong).
const RELAY: &str = "protocol p
block 2
global data
global f1
global f2
kernel a { if tid == 0 { store data; store_release f1 scope gpu } }
kernel b {
  if tid == 0 { load_acquire f1 scope gpu }
  syncthreads
  if tid == 1 { store_release f2 scope REL }
}
kernel c { if tid == 0 { load_acquire f2 scope gpu; load data } }
";

#[test]
fn a_release_reaches_through_a_thread_of_another_kernel() {
    assert_ok(&RELAY.replace("REL", "gpu"));
    assert_flags(&RELAY.replace("REL", "cta"), "data-race");
}

/// The release level belongs to the link, not to the thread: a `.gpu` release of a flag that
/// nobody acquires does not make a later `.cta` release of another flag reach another kernel
/// (litmus `mp_release_gpu_elsewhere_then_cta`).
#[test]
fn a_wide_release_nobody_acquires_does_not_widen_a_later_narrow_one() {
    assert_flags(
        "protocol p
block 1
global data
global flag
global other
kernel producer { store data; store_release other scope gpu; store_release flag scope cta }
kernel consumer { load_acquire flag scope gpu; load data }
",
        "data-race",
    );
}

/// A flag's own release and acquire race when they are not morally strong (PTX "Conflict
/// and Data-races"), although no data is handed over; morally strong, they do not.
#[test]
fn a_flag_released_and_acquired_at_scopes_that_miss_each_other_is_a_race() {
    let src = "protocol p
block 1
cluster 2
global flag
if cta == 1 { store_release flag scope REL }
if cta == 0 { load_acquire flag scope sys }
";
    assert_flags(&src.replace("REL", "cta"), "data-race");
    assert_ok(&src.replace("REL", "cluster"));
}
