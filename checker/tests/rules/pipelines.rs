//! `cuda::pipeline`: roles, quitting with obligations left, reads before the wait.

use super::*;

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
