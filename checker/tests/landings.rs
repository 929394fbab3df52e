//! TMA landings taken alone beside the threads' kept accesses of the buffer they refill
//! (docs/design.md, "Reductions": the TMA landing; docs/performance.md, "ThunderKittens at
//! real size"). The shape is ThunderKittens' H100 attention forward (HazyResearch/ThunderKittens
//! `0b55588d2769dde0c7a9a606ffc015b0ca7a9551`, kernels/attention/mha_h100/mha_h100.cu, lines
//! 79-125 and 147-204), cut to one thread per role: three consumers read a K and a V stage and
//! release it on `compute_done`, a producer refills each stage after waiting on `compute_done`,
//! and the producer warp's other lanes (`sync`) run the same waits with nothing holding them
//! back. Each protocol is checked with the reductions on and off (`common::check`: every
//! combination, exhaustive, the same findings and verdict), so a landing taken alone that
//! hides a race, a missing proxy fence or the lagging lane's deadlock fails here.

mod common;

/// The kernel's shape; `{k_read}` is how the consumers read the K stage, `{release}` what they
/// do before releasing it, `{sync_role}` the producer warp's other lanes.
fn attention(k_read: &str, release: &str, sync_role: &str) -> String {
    format!("{}{PRODUCER_LOOP}{sync_role}", kernel(5, k_read, release))
}

/// The prologue and the consumers, in a block of `block` threads (consumers tid 0..2).
fn kernel(block: u32, k_read: &str, release: &str) -> String {
    format!(
        "protocol attention
block {block}
mbarrier q
mbarrier k_arr[2]
mbarrier v_arr[2]
mbarrier compute_done[2]
buffer   shm[7]

role producer when tid == 0 {{
  init q, 1
  for k in 0..2 {{
    init k_arr[k], 1
    init v_arr[k], 1
    init compute_done[k], 3
  }}
  arrive_expect_tx q, 48
  for k in 0..3 {{
    tma shm[k] -> q, 16
  }}
  arrive_expect_tx k_arr[0], 32
  tma shm[3] -> k_arr[0], 32
  arrive_expect_tx v_arr[0], 32
  tma shm[5] -> v_arr[0], 32
}}

syncthreads

role consumer when tid <= 2 {{
  wait q parity 0
  for r in 0..2 {{
    for k in 0..2 {{
      wait k_arr[k] parity r
      mma shm[tid]
      {k_read} shm[3 + k]
      wait v_arr[k] parity r
      mma shm[5 + k]
      {release}
      arrive compute_done[k]
    }}
  }}
}}

"
    )
}

/// Lane 0 of the producer warp (tid 3), as ThunderKittens' loop runs it.
const PRODUCER_LOOP: &str = "
role producer2 when tid == 3 {
  for k in 0..2 {
    arrive_expect_tx k_arr[1 - k], 32
    tma shm[4 - k] -> k_arr[1 - k], 32
    arrive_expect_tx v_arr[1 - k], 32
    tma shm[6 - k] -> v_arr[1 - k], 32
    wait compute_done[k] parity 0
  }
  arrive_expect_tx k_arr[1], 32
  tma shm[4] -> k_arr[1], 32
  arrive_expect_tx v_arr[1], 32
  tma shm[6] -> v_arr[1], 32
  wait compute_done[0] parity 1
}
";

const SYNC_LANE: &str = "
role sync when tid == 4 {
  for k in 0..3 {
    wait compute_done[k % 2] parity k / 2 % 2
  }
}
";

/// The producer warp's other lanes wait on `compute_done` with parities from the loop counter,
/// and nothing makes them keep up: one that sleeps while the consumers complete `compute_done[0]`
/// twice waits for a phase two behind, which never comes ([PTX] *mbarrier.test_wait/try_wait*:
/// valid only for "the current incomplete phase" and "the immediately preceding phase";
/// semantics.md §2.8, "T = P-2"). Found with the reductions on and off; taking the K and V
/// landings alone lets the search run the consumers ahead of that lane.
#[test]
fn a_lane_left_two_phases_behind_deadlocks() {
    let r = common::assert_flags(&attention("mma", "", SYNC_LANE), "deadlock");
    assert!(
        r.findings
            .iter()
            .any(|f| f.rule.name == "deadlock" && f.message.contains("compute_done")),
        "{:#?}",
        r.findings.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
}

/// Without those lanes the kernel is `ok` with the reductions on and off.
#[test]
fn without_the_lagging_lanes_the_kernel_is_ok() {
    common::assert_ok(&attention("mma", "", ""));
}

/// The consumers read K through the generic proxy and release it with no proxy fence: the
/// refill's landing is taken alone while their reads are kept, and the missing fence is still
/// found (it is weighed while the refill is in flight).
#[test]
fn a_generic_read_without_a_proxy_fence_is_found_beside_a_landing_alone() {
    common::assert_flags(&attention("read", "", ""), "missing-proxy-fence");
}

/// The same with the fence: `ok`.
#[test]
fn a_fenced_generic_read_is_ok() {
    common::assert_ok(&attention("read", "fence_proxy_async", ""));
}

/// The producer warp as one loop run by two lanes of a warp of its own (tid 32 and 33), lane 0
/// loading; `{after_wait}` follows each wait.
fn producer_warp(after_wait: &str) -> String {
    format!(
        "{}
role producer_warp when tid >= 32 && tid <= 33 {{
  for k in 0..3 {{
    if tid == 32 {{
      arrive_expect_tx k_arr[1 - k % 2], 32
      tma shm[4 - k % 2] -> k_arr[1 - k % 2], 32
      arrive_expect_tx v_arr[1 - k % 2], 32
      tma shm[6 - k % 2] -> v_arr[1 - k % 2], 32
    }}
    wait compute_done[k % 2] parity k / 2 % 2
    {after_wait}
  }}
}}
",
        kernel(34, "mma", "")
    )
}

/// The loop as the kernel writes it, every lane of the warp running it: the other lane can
/// fall two phases behind (deadlock); a `syncwarp` after each wait keeps the lanes in step,
/// and the kernel is `ok` (a fix for ThunderKittens' loop, as is lane 0 alone waiting). With
/// the reductions on only: the 29 idle lanes of warp 0 make the unreduced search too large.
#[test]
fn a_syncwarp_in_the_producer_loop_keeps_the_lanes_in_step() {
    let check = |src: &str| {
        let options = checker::CheckOptions {
            exhaustive: true,
            ..checker::CheckOptions::default()
        };
        checker::check(&common::load(src), &options)
    };
    let lagging = check(&producer_warp(""));
    assert!(
        common::errors(&lagging).contains(&"deadlock"),
        "{:?}",
        common::rules(&lagging)
    );
    let in_step = check(&producer_warp("syncwarp"));
    assert!(
        common::errors(&in_step).is_empty(),
        "{:?}",
        common::rules(&in_step)
    );
    assert_eq!(in_step.verdict, checker::Verdict::Ok);
}
