//! Data races: what publishes (arrive, TMA, cp.async), proxy fences, part writes of a tile,
//! same-value stores.

use super::*;

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

const DOMAINS: &str = include_str!("../data/domains.phase");

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
