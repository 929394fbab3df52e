//! Symmetry past a prologue (issue 24 point 2; checker `symmetry.rs`, "Prologues"): threads
//! that differ only in statements before a `syncthreads` that nothing after it reaches again
//! (the Programming Guide's `if (rank < 4) init(bar + rank, ...)`) are interchangeable once
//! every thread is past that `syncthreads`. Every protocol here runs with the reductions on and
//! off (common::check: the same findings and verdict); the generated ones of this shape
//! (`protogen::elements`) are in `reductions_agree.rs`, with replay of every error.

mod common;
use checker::model::PhaseModel;
use common::*;
use protogen::{Elements, ElementsBug, InitBy};

fn elements(
    np: u32,
    trips: u32,
    init_by: InitBy,
    unrolled: bool,
    bug: Option<ElementsBug>,
) -> String {
    Elements {
        producers: np,
        trips,
        init_by,
        unrolled,
        bug,
    }
    .source()
}

fn classes(src: &str) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let p = load(src);
    let m = PhaseModel::new(&p, 8, true);
    (m.classes.clone(), m.late_classes.clone())
}

#[test]
fn init_by_four_threads_is_told_apart_only_before_the_cut() {
    // Two producers (0, 1), four consumers (2..5); threads 0..3 initialize one barrier each.
    let (early, late) = classes(&elements(2, 2, InitBy::Four, false, None));
    // Before it every thread is a class of its own (`bar[tid]` evaluates differently for
    // every thread, even those that do not run it).
    assert_eq!(early.len(), 6, "{early:?}");
    assert_eq!(late, vec![vec![0, 1], vec![2, 3, 4, 5]]);
}

#[test]
fn a_statement_after_the_cut_still_tells_threads_apart() {
    // `if tid == 0 { arrive bar[0] }` after the `syncthreads` is no prologue: thread 0 stays a
    // class of its own for good.
    let src = elements(2, 2, InitBy::Four, false, None)
        .replace("syncthreads\n", "syncthreads\nif tid == 0 { compute }\n");
    let (_, late) = classes(&src);
    assert_eq!(late, vec![vec![0], vec![1], vec![2, 3, 4, 5]]);
}

#[test]
fn no_cut_when_the_syncthreads_can_be_reached_again() {
    // The init and the `syncthreads` in one loop: what comes after the `syncthreads` reaches
    // the init again, so there is no prologue and the late classes are the classes.
    let src = "protocol p\nblock 4\nmbarrier bar[4]\nfor r in 0..2 {\n  if tid == r { init bar[tid], 4 }\n  syncthreads\n}\nfor b in 0..2 { arrive_and_wait bar[b] }\n";
    let (early, late) = classes(src);
    assert_eq!(early, late);
    assert_eq!(early.len(), 4, "{early:?}");
}

#[test]
fn the_guides_shape_is_ok_with_the_reductions_on_and_off() {
    for init_by in [InitBy::One, InitBy::Four, InitBy::Spread] {
        for unrolled in [false, true] {
            assert_ok(&elements(2, 2, init_by, unrolled, None));
        }
    }
}

/// The guide's `if (rank < 4) init(bar + rank, ...)` with 8 producers, 16 consumers and 4
/// trips, the stage loop written once or unrolled: threads 0..3 were classes of their own to
/// the end, and the search stopped inconclusive (186 504 and 238 008 states in 20 s, main at
/// 22:40 UTC); past the prologue they join the producers' class: 464 states each.
#[test]
fn four_initializers_cost_nothing_past_the_prologue() {
    let stage_loop = |unrolled: bool| {
        if unrolled {
            "  for k in 0..2 {
    arrive_and_wait bar[0]
    write buf bytes 4 * tid .. +4
    write buf bytes 4 * NP + 4 * tid .. +4
    arrive bar[2]
    arrive_and_wait bar[1]
    write buf bytes 8 * NP + 4 * tid .. +4
    write buf bytes 12 * NP + 4 * tid .. +4
    arrive bar[3]
  }"
        } else {
            "  for i in 0..4 {
    arrive_and_wait bar[i % 2]
    write buf bytes i % 2 * 8 * NP + 4 * tid .. +4
    write buf bytes i % 2 * 8 * NP + 4 * NP + 4 * tid .. +4
    arrive bar[2 + i % 2]
  }"
        }
    };
    for unrolled in [false, true] {
        let src = format!(
            "protocol s
param NP = 8
block 3 * NP
buffer buf
mbarrier bar[4]
if tid < 4 {{
  init bar[tid], 3 * NP
}}
syncthreads
role producer when tid < NP {{
{}
}}
role consumer when tid >= NP {{
  arrive bar[0]
  arrive bar[1]
  for i in 0..4 {{
    arrive_and_wait bar[2 + i % 2]
    read buf bytes i % 2 * 8 * NP + 4 * tid - 4 * NP .. +4
    arrive bar[i % 2]
  }}
}}
",
            stage_loop(unrolled)
        );
        let r = checker::check(&load(&src), &checker::CheckOptions::default());
        assert_eq!(r.verdict, checker::Verdict::Ok, "{:?}", rules(&r));
        assert!(
            r.stats.states < 2_000,
            "unrolled {unrolled}: {} states",
            r.stats.states
        );
    }
}

#[test]
fn defects_are_found_with_and_without_the_reductions() {
    for init_by in [InitBy::One, InitBy::Four, InitBy::Spread] {
        for unrolled in [false, true] {
            let e = |bug| elements(2, 2, init_by, unrolled, Some(bug));
            assert_flags(&e(ElementsBug::Overlap), "data-race");
            assert_flags(&e(ElementsBug::WrongStage), "data-race");
            // Three trips (four unrolled), one producer: the unreduced search stays small.
            let skip = elements(
                1,
                3,
                init_by,
                unrolled,
                Some(ElementsBug::MissingProducerWait(0)),
            );
            assert_flags(&skip, "data-race");
            assert_flags(&e(ElementsBug::CountOver), "deadlock");
            // One arrival too many in the prologue, carried past the cut in the barrier.
            let r = check(&e(ElementsBug::PrologueArrive));
            assert!(
                !errors(&r).is_empty(),
                "{init_by:?} unrolled {unrolled}: {:?}",
                rules(&r)
            );
        }
    }
}

/// The stage loop as `phasecheck extract` writes the guide's kernel: unrolled two stages a trip,
/// each element at a constant offset per statement. The producers differ only in which of them
/// have acquired each other's kept writes (so none is another's twin); the partial-order
/// reduction tries four candidates per state, and it used to spend them all on producers
/// standing at the `ready` arrival (not alone) ahead of the writes (alone), growing
/// exponentially with the producers (16 producers: 32 907 states). Candidates equal up to names
/// to one already tried are skipped now (`symmetry::same_up_to_names`): a chain.
#[test]
fn the_unrolled_stage_loop_of_many_producers_is_a_chain() {
    let src = "protocol s
param NP = 16
block 3 * NP
buffer buf
mbarrier bar[4]
if tid == 0 {
  for k in 0..4 { init bar[k], 3 * NP }
}
syncthreads
role producer when tid < NP {
  for k in 0..2 {
    arrive_and_wait bar[0]
    write buf bytes 4 * tid .. +4
    write buf bytes 4 * NP + 4 * tid .. +4
    arrive bar[2]
    arrive_and_wait bar[1]
    write buf bytes 8 * NP + 4 * tid .. +4
    write buf bytes 12 * NP + 4 * tid .. +4
    arrive bar[3]
  }
}
role consumer when tid >= NP {
  arrive bar[0]
  arrive bar[1]
  for i in 0..4 {
    arrive_and_wait bar[2 + i % 2]
    read buf bytes i % 2 * 8 * NP + 4 * tid - 4 * NP .. +4
    arrive bar[i % 2]
  }
}
";
    let r = checker::check(&load(src), &checker::CheckOptions::default());
    assert_eq!(r.verdict, checker::Verdict::Ok, "{:?}", rules(&r));
    assert!(r.stats.states < 2_000, "{} states", r.stats.states);
}

/// `corpus/production/poll_both_barriers.phase` with `NC` compute threads and `K` k-tiles:
/// thread 0 initializes every barrier before the `syncthreads`, then joins the compute
/// threads' class.
fn poll_both_barriers(nc: u32, k: u32) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus/production/poll_both_barriers.phase");
    let src = std::fs::read_to_string(path).expect("the corpus file");
    let src = src
        .replace("param NC = 32 ", &format!("param NC = {nc} "))
        .replace("param K = 4 ", &format!("param K = {k} "));
    assert!(
        src.contains(&format!("param NC = {nc} ")),
        "NC not replaced"
    );
    assert!(src.contains(&format!("param K = {k} ")), "K not replaced");
    src
}

/// Past the prologue, which compute thread ran the `init`s (`Bar::init_by`) was part of the
/// state, so states that differ only in whether the initializer is the thread furthest along
/// or another one were kept apart: 61 572 states at 8 compute threads (39 522 before symmetry
/// past a prologue), and past 11.6 M at the file's 32. Once the init is visible to the block
/// (the `syncthreads`, in a cluster of one block) the initializer is forgotten: 24 173.
#[test]
fn the_initializer_is_forgotten_once_the_init_is_visible() {
    let r = checker::check(
        &load(&poll_both_barriers(8, 4)),
        &checker::CheckOptions::default(),
    );
    assert_eq!(r.verdict, checker::Verdict::Ok, "{:?}", rules(&r));
    assert!(r.stats.states < 30_000, "{} states", r.stats.states);
}

/// The same shape with the reductions on and off (common::check: the same findings and
/// verdict), as written and with two defects after the prologue: a loader that does not wait
/// for the stage's release (the TMA overwrites tiles still read), and a consumer that does not
/// wait for the weights after a failed test.
#[test]
fn poll_both_barriers_agrees_with_the_reductions_on_and_off() {
    // Three k-tiles over two stages: the first stage is refilled once.
    let ok = poll_both_barriers(2, 3);
    assert_ok(&ok);
    let no_release_wait = ok.replacen(
        "    wait consumed[s] parity ((k / STAGES) % 2) ^ 1\n    arrive_expect_tx wt_ready",
        "    arrive_expect_tx wt_ready",
        1,
    );
    assert_ne!(no_release_wait, ok);
    assert!(!errors(&check(&no_release_wait)).is_empty());
    let no_weight_wait = ok.replacen("      wait wt_ready[s] parity ph", "      # no wait:", 1);
    assert_ne!(no_weight_wait, ok);
    assert!(!errors(&check(&no_weight_wait)).is_empty());
}

/// Where another block of the cluster can address the barrier, a use before the cluster is
/// ordered after the init is still flagged after the block's `syncthreads`, and the message
/// still names the thread that ran the init (it is forgotten only at `vis` 3 there).
#[test]
fn a_remote_use_before_the_cluster_sync_still_names_the_initializer() {
    let src = "protocol p
cluster 2
block 2
mbarrier bar
if tid == 1 { init bar, 2 }
syncthreads
arrive bar @ (cta ^ 1)
";
    let r = checker::check(&load(src), &checker::CheckOptions::default());
    let f = r
        .findings
        .iter()
        .find(|f| f.rule.name == "init-not-visible")
        .unwrap_or_else(|| panic!("{:?}", rules(&r)));
    assert!(f.message.contains("init by"), "{}", f.message);
    assert!(!f.message.contains("its initializer"), "{}", f.message);
}
