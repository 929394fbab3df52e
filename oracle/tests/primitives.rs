//! The oracle on small hand-written protocols whose answer is known (semantics.md), each
//! explored with a preemption bound of 2 (enough for every finding here).

use oracle::{Class, Options, explore, prepare};
use std::collections::BTreeSet;

#[track_caller]
fn classes(src: &str) -> BTreeSet<Class> {
    let file = protocols::SourceFile::new("t.phase", src);
    let p = protocols::load(&file, &[]).unwrap_or_else(|_| panic!("does not load:\n{src}"));
    let prog = prepare(&p).unwrap();
    let out = explore(
        &prog,
        &Options {
            preemption_bound: Some(2),
            ..Options::default()
        },
    );
    assert!(out.complete, "{out:?}");
    out.classes()
}

const EXCHANGE: &str = "protocol p
block 2
mbarrier bar
buffer data[2]
if tid == 0 { init bar, 2 }
syncthreads
let ph = 0
for i in 0..2 {
  write data[tid]
  arrive bar
  wait bar parity ph
  ph = ph ^ 1
  read data[(tid + 1) % 2]
  GUARD
}
";

#[test]
fn an_exchange_needs_its_write_after_read_guard() {
    let guarded = EXCHANGE.replace("GUARD", "arrive bar\n  wait bar parity ph\n  ph = ph ^ 1");
    assert_eq!(classes(&guarded), BTreeSet::new());
    assert_eq!(
        classes(&EXCHANGE.replace("GUARD", "")),
        [Class::Race].into()
    );
}

#[test]
fn a_count_too_high_deadlocks_and_a_missing_bootstrap_is_ub() {
    let src = "protocol p
block 2
mbarrier bar
if tid == 0 { init bar, 3 }
syncthreads
arrive bar
wait bar parity 0
";
    assert_eq!(classes(src), [Class::Deadlock].into());
    let unsynced = src
        .replace("init bar, 3", "init bar, 2")
        .replace("syncthreads\n", "");
    assert!(classes(&unsynced).contains(&Class::Ub));
}

#[test]
fn named_barriers_order_and_a_rearrive_counts() {
    let src = "protocol p
block 2
buffer data
if tid == 0 { write data; bar_arrive 1, 2 } else { bar_sync 1, 2; read data }
";
    assert_eq!(classes(src), BTreeSet::new());
    // The reader does not wait: the write and the read race.
    let racy = src.replace("bar_sync 1, 2; read data", "read data; bar_sync 1, 2");
    assert_eq!(classes(&racy), [Class::Race].into());
    // A second arrival of one thread counts (semantics.md §9.1): the two arrivals complete a
    // use with nobody waiting, and the later sync waits for a use nobody else joins.
    let twice = "protocol p
block 2
if tid == 0 { bar_arrive 1, 2; bar_arrive 1, 2 } else { bar_sync 1, 2 }
";
    assert_eq!(classes(twice), [Class::Deadlock].into());
    // Participants naming different counts stay UB.
    let mismatch = "protocol p
block 2
if tid == 0 { bar_arrive 1, 2 } else { bar_sync 1, 3 }
";
    assert!(classes(mismatch).contains(&Class::Ub));
}

#[test]
fn a_tma_completion_publishes_its_bytes_not_the_issuers_writes() {
    let src = "protocol p
block 2
mbarrier bar
buffer tile
buffer flag
if tid == 0 { init bar, 1 }
syncthreads
if tid == 0 { write flag; arrive_expect_tx bar, 64; tma tile -> bar, 64 }
wait bar parity 0
read tile
";
    assert_eq!(classes(src), BTreeSet::new());
    // The flag the issuer wrote travels with its arrive (a release), not with the copy.
    assert_eq!(classes(&format!("{src}read flag\n")), BTreeSet::new());
    let late = src.replace(
        "write flag; arrive_expect_tx bar, 64; tma tile -> bar, 64",
        "arrive_expect_tx bar, 64; write flag; tma tile -> bar, 64",
    );
    assert_eq!(classes(&format!("{late}read flag\n")), [Class::Race].into());
}
