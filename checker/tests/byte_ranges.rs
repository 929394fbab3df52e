//! Byte ranges (`read/write/mma X bytes OFF .. +LEN`, language.md "Byte ranges"): accesses
//! conflict only where their bytes meet. Every case runs with the reductions on and off
//! (`common::check`): findings and verdicts must agree, and the thread-indexed offsets must not
//! cost the symmetry reduction.

mod common;
use common::*;

/// `NT` threads each store `LEN` bytes at `STRIDE * tid`, then a syncthreads, then everybody
/// reads the tile.
fn fragments(nt: u32, stride: u32, len: u32) -> String {
    format!(
        "protocol p
block {nt}
buffer tile
write tile bytes {stride} * tid .. +{len}
syncthreads
read tile
"
    )
}

#[test]
fn each_thread_its_own_bytes_is_ok() {
    assert_ok(&fragments(4, 16, 16));
}

#[test]
fn fragments_that_overlap_by_one_byte_race() {
    assert_flags(&fragments(4, 16, 17), "data-race");
}

#[test]
fn a_whole_write_meets_every_range() {
    assert_flags(
        "protocol p
block 3
buffer tile
if tid == 0 { write tile }
if tid > 0 { write tile bytes 1000 + 4 * tid .. +4 }
",
        "data-race",
    );
}

/// Thread 0 stores bytes 0..4 of the tile; another thread reads bytes `lo .. lo + 4`, unordered.
fn read_against_write(lo: i64) -> String {
    format!(
        "protocol p
block 2
buffer tile
if tid == 0 {{ write tile bytes 0 .. +4 }}
if tid == 1 {{ read tile bytes {lo} .. +4 }}
"
    )
}

#[test]
fn a_read_races_exactly_when_its_bytes_meet_the_write() {
    assert_ok(&read_against_write(4));
    assert_ok(&read_against_write(100));
    assert_flags(&read_against_write(3), "data-race");
    assert_flags(&read_against_write(0), "data-race");
}

#[test]
fn a_negative_offset_is_a_model_error() {
    assert_flags(
        "protocol p
block 1
buffer tile
write tile bytes tid - 1 .. +4
",
        "model-error",
    );
}

/// Two blocks: block 0 writes `peer_off + 4 * tid` of block 1's buffer, block 1 its own
/// `4 * tid`, then a cluster barrier.
fn peer(peer_off: u32) -> String {
    format!(
        "protocol p
cluster 2
block 2
buffer x
cluster_sync
if cta == 0 {{ write x @ 1 bytes {peer_off} + 4 * tid .. +4 }}
if cta == 1 {{ write x bytes 4 * tid .. +4 }}
cluster_sync
"
    )
}

#[test]
fn a_peer_s_bytes_are_the_peer_s() {
    assert_ok(&peer(8));
    assert_flags(&peer(7), "data-race");
    assert_flags(&peer(0), "data-race");
}

/// Generic stores of bytes `0 .. 4 * NT`, a syncthreads, then a WGMMA read of `off .. +8`
/// with no proxy fence.
fn mma_after_store(off: u32) -> String {
    format!(
        "protocol p
block 2
buffer tile
write tile bytes 4 * tid .. +4
syncthreads
mma tile bytes {off} .. +8
"
    )
}

#[test]
fn an_async_read_needs_a_fence_only_where_it_meets_a_generic_store() {
    assert_ok(&mma_after_store(8));
    assert_flags(&mma_after_store(7), "missing-proxy-fence");
}

#[test]
fn a_tma_copy_meets_every_ranged_store() {
    assert_flags(
        "protocol p
block 2
mbarrier full
buffer tile
if tid == 0 {
  init full, 1
}
syncthreads
write tile bytes 4096 + 4 * tid .. +4
syncthreads
if tid == 0 {
  arrive_expect_tx full, 16
  tma tile -> full, 16
  wait full parity 0
}
",
        "missing-proxy-fence",
    );
}

/// The threads' own parts of the offsets do not cost symmetry: 6 threads storing their own
/// bytes have as few states as 6 threads storing `write part` (one class).
#[test]
fn thread_indexed_offsets_keep_the_threads_interchangeable() {
    let states = |src: &str| {
        let p = load(src);
        checker::check(
            &p,
            &checker::CheckOptions {
                exhaustive: true,
                partial_order: false,
                ..Default::default()
            },
        )
        .stats
        .states
    };
    let ranged = "protocol p
block 6
buffer tile
for k in 0..2 {
  write tile bytes k * 1024 + 16 * tid .. +16
  syncthreads
}
";
    let part = "protocol p
block 6
buffer tile
for k in 0..2 {
  write part tile
  syncthreads
}
";
    assert_ok(ranged);
    assert_eq!(states(ranged), states(part));
}

/// An offset that is not a sum of thread-free and local-free thread terms is compared
/// exactly and keeps the threads apart (no symmetry), with the same verdicts.
#[test]
fn an_offset_mixing_a_local_and_the_thread_is_exact() {
    assert_ok(
        "protocol p
block 3
buffer tile
for k in 0..2 {
  write tile bytes (k * 3 + tid) * 4 .. +4
  syncthreads
}
",
    );
    assert_flags(
        "protocol p
block 3
buffer tile
for k in 0..2 {
  write tile bytes (k * 3 + tid) * 4 .. +5
  syncthreads
}
",
        "data-race",
    );
}

/// One producer loads a 2 x `HALF`-byte tile as two TMA copies, the second at `second`
/// (FlashInfer's K and V tiles: two boxes of 64 columns into one buffer), then every thread
/// waits and reads the whole tile.
fn two_tma_halves(second: u32, expect: u32) -> String {
    format!(
        "protocol p
block 2
mbarrier full
buffer tile
if tid == 0 {{
  init full, 1
}}
syncthreads
if tid == 0 {{
  arrive_expect_tx full, {expect}
  tma tile bytes 0 .. +64 -> full, 64
  tma tile bytes {second} .. +64 -> full, 64
}}
wait full parity 0
read tile
"
    )
}

#[test]
fn two_tma_copies_race_exactly_when_their_bytes_meet() {
    assert_ok(&two_tma_halves(64, 128));
    assert_ok(&two_tma_halves(1000, 128));
    assert_flags(&two_tma_halves(63, 128), "data-race");
    assert_flags(&two_tma_halves(0, 128), "data-race");
}

/// The bytes a copy writes do not change the bytes it completes on its barrier: the expect_tx
/// must still count the copies' byte counts, not their ranges.
#[test]
fn a_ranged_tma_completes_its_byte_count() {
    // 128 bytes expected, 128 land: ok above; 192 expected: the phase never completes.
    assert_flags(&two_tma_halves(64, 192), "deadlock");
    // A range shorter than the byte count (the count is what completes): still ok.
    assert_ok(
        "protocol p
block 1
mbarrier full
buffer tile
init full, 1
arrive_expect_tx full, 128
tma tile bytes 0 .. +16 -> full, 128
wait full parity 0
read tile
",
    );
}

/// A WGMMA reads bytes `lo .. +64` of a stage while the refill of the stage's other half is in
/// flight: a race only where the bytes meet.
fn mma_during_refill(lo: u32) -> String {
    format!(
        "protocol p
block 2
mbarrier full
mbarrier full2
buffer tile
if tid == 0 {{
  init full, 1
  init full2, 1
}}
syncthreads
if tid == 0 {{
  arrive_expect_tx full, 64
  tma tile bytes 0 .. +64 -> full, 64
  wait full parity 0
  arrive_expect_tx full2, 64
  tma tile bytes 64 .. +64 -> full2, 64
}}
if tid == 1 {{
  wait full parity 0
  mma tile bytes {lo} .. +64
}}
"
    )
}

#[test]
fn a_tma_copy_and_a_wgmma_read_race_exactly_when_their_bytes_meet() {
    assert_ok(&mma_during_refill(0));
    assert_flags(&mma_during_refill(1), "data-race");
    assert_flags(&mma_during_refill(64), "data-race");
}

/// A multicast copy writes the same CTA-relative bytes in every block of its mask: each block's
/// rank 0 loads its own half `64 * cta .. +64` and multicasts it to both blocks.
fn multicast_halves(len: u32) -> String {
    format!(
        "protocol p
cluster 2
block 1
mbarrier full
buffer tile
init full, 1
fence_mbarrier_init
cluster_sync
arrive_expect_tx full, 2 * {len}
tma tile bytes 64 * cta .. +{len} -> full, {len} multicast 3
wait full parity 0
read tile
cluster_sync
"
    )
}

#[test]
fn multicast_copies_land_at_the_same_bytes_in_every_block() {
    assert_ok(&multicast_halves(64));
    assert_flags(&multicast_halves(65), "data-race");
}

#[test]
fn a_ranged_tma_meets_a_generic_store_only_where_the_bytes_meet() {
    let src = |lo: u32| {
        format!(
            "protocol p
block 2
mbarrier full
buffer tile
if tid == 0 {{
  init full, 1
}}
syncthreads
if tid == 1 {{
  write tile bytes {lo} .. +4
}}
if tid == 0 {{
  arrive_expect_tx full, 64
  tma tile bytes 0 .. +64 -> full, 64
  wait full parity 0
}}
"
        )
    };
    assert_ok(&src(64));
    assert_flags(&src(60), "data-race");
}

/// An offset whose thread part is not a term of its own keeps the threads apart (language.md,
/// "Thread-dependent offsets and symmetry"): the symmetry reduction must see it. Before the
/// offset was among the expressions the symmetry analysis reads, the three threads below were
/// one class and the search merged states whose threads had written different bytes (7 states
/// instead of 15).
#[test]
fn an_offset_mixing_a_local_and_the_thread_costs_the_symmetry() {
    let src = "protocol p
block 3
buffer tile
for k in 0..2 {
  write tile bytes (k * 3 + tid) * 4 .. +4
  syncthreads
}
";
    let states = |symmetry: bool| {
        checker::check(
            &load(src),
            &checker::CheckOptions {
                exhaustive: true,
                partial_order: false,
                symmetry,
                ..Default::default()
            },
        )
        .stats
        .states
    };
    assert_eq!(states(true), states(false));
}

/// CUTLASS's Pingpong epilogue (sm90_epilogue_tma_warpspecialized.hpp, our model of its
/// shape): two groups of `g` threads take turns on one pair of staging buffers, ordered by an
/// mbarrier. Each thread stores its own 16 bytes, fences, and after a `bar_sync` the issuers
/// (`issuers` threads of the group: CUTLASS has every lane of the group's first warp issue the
/// TMA store) read the buffer with a bulk store, wait for the previous one's reads, and a second
/// `bar_sync` hands the buffer back. `edit` turns one line into a bug.
fn pingpong_epilogue(g: u32, issuers: &str, edit: Option<(&str, &str)>) -> String {
    let src = format!(
        "protocol pingpong_epilogue
block {nt}
buffer smem[2]
mbarrier order
if tid == 0 {{
  init order, {g}
}}
syncthreads
if tid >= {g} {{
  wait order parity 0
}}
for k in 0..3 {{
  write smem[k % 2] bytes 16 * (tid % {g}) .. +16
  fence_proxy_async
  bar_sync 1, {g}
  if {issuers} {{
    tma_store smem[k % 2]
    bulk_commit
    bulk_wait_read 1
  }}
  bar_sync 1, {g}
}}
if {issuers} {{
  bulk_wait_read 0
}}
if tid < {g} {{
  arrive order
}}
",
        nt = 2 * g
    );
    match edit {
        Some((from, to)) => {
            assert!(src.contains(from), "{from}");
            src.replacen(from, to, 1)
        }
        None => src,
    }
}

/// The reductions agree on the epilogue and on three bugs in it: the next group's stores
/// before the last bulk store has read (no final wait), a buffer rewritten while its bulk
/// store may still read it (no wait in the loop), and no proxy fence before the bulk store.
#[test]
fn a_pingpong_epilogue_and_its_bugs_agree_with_the_reductions_off() {
    let issuers = "tid % 4 < 2";
    assert_ok(&pingpong_epilogue(4, issuers, None));
    for (from, to, rule) in [
        ("  bulk_wait_read 0\n", "  bulk_commit\n", "data-race"),
        ("    bulk_wait_read 1\n", "    bulk_commit\n", "data-race"),
        ("  fence_proxy_async\n", "", "missing-proxy-fence"),
    ] {
        assert_flags(&pingpong_epilogue(4, issuers, Some((from, to))), rule);
    }
}

/// At real size (two groups of 64 threads, the 32 lanes of one warp issuing each bulk store)
/// every step is taken alone: a chain of states. A lane's `bulk_wait_read` used to wait for
/// the other lanes' bulk reads in flight to finish (reads do not conflict with reads), and a
/// `bar_sync` for the group's later stores into the buffer that a kept bulk read covers (its
/// proxy fence is read nowhere): 20 000 states and 390 000 transitions in 30 s, unfinished.
#[test]
fn a_pingpong_epilogue_at_64_threads_a_group_is_one_chain() {
    let p = load(&pingpong_epilogue(64, "warp == 0 || warp == 2", None));
    let r = checker::check(
        &p,
        &checker::CheckOptions {
            exhaustive: true,
            max_states: 20_000,
            ..Default::default()
        },
    );
    assert_eq!(r.verdict, checker::Verdict::Ok, "{:?}", r.incomplete);
    assert_eq!(r.stats.transitions + 1, r.stats.states);
}

/// Eight threads store 16-byte rows at offsets swizzled over GF(2) (the form the PTX front end
/// writes for CuTe's `Swizzle<3, 4, 3>`: `tid`'s bits XORed into the row), into two
/// buffers in turn, then read another thread's row. `v2` is the row of thread bit 2.
fn swizzled(v2: u32) -> String {
    format!(
        "protocol p
block 8
buffer tile[2]
for k in 0..3 {{
  write tile[k % 2] bytes (tid % 2 * 144 ^ tid / 2 % 2 * 288 ^ tid / 4 % 2 * {v2}) .. +16
  syncthreads
  read tile[k % 2] bytes ((tid + 1) % 8 % 2 * 144 ^ (tid + 1) % 8 / 2 % 2 * 288) .. +16
}}
"
    )
}

/// Distinct rows are no race with the reductions on and off; a row that two threads share
/// (thread 4's `432` is thread 3's `144 ^ 288`) is one.
#[test]
fn swizzled_rows_race_exactly_where_two_threads_share_a_row() {
    assert_ok(&swizzled(576));
    assert_ok(&swizzled(16));
    assert_flags(&swizzled(432), "data-race");
    assert_flags(&swizzled(144), "data-race");
}
