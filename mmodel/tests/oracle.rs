//! The oracle on hand-written programs: what it refuses, deadlocks, flag races, the race
//! witness, determinism.

use mmodel::{Verdict, decide};

fn load(src: &str) -> protocols::ir::Program {
    let file = protocols::SourceFile::new("t.phase", src);
    protocols::load(&file, &[]).unwrap_or_else(|e| {
        panic!(
            "does not load: {:?}",
            e.errors.iter().map(|x| &x.message).collect::<Vec<_>>()
        )
    })
}

fn verdict(src: &str) -> Verdict {
    decide(&load(src)).unwrap_or_else(|e| panic!("refused: {e}"))
}

fn refusal(src: &str) -> mmodel::Refusal {
    match decide(&load(src)) {
        Ok(v) => panic!("decided: {v:?}"),
        Err(e) => e,
    }
}

#[test]
fn refuses_what_lies_outside_the_fragment() {
    let cases = [
        (
            "protocol p\nblock 1\nlet i = 0\nwhile i < 2 { i = i + 1 }\n",
            "while",
        ),
        (
            "protocol p\nblock 1\nbuffer b\nelect { write b }\n",
            "elect",
        ),
        (
            "protocol p\nblock 9\nbuffer b\nwrite b\n",
            "more than 8 threads",
        ),
        (
            "protocol p\nblock 1\ncluster 2\nbuffer b\nif cta == 0 { write b @ 1 }\n",
            "peer block",
        ),
        (
            "protocol p\nblock 1\nglobal g\nstore g\nstore_release g scope cta\n",
            "both as a flag",
        ),
        (
            "protocol p\nblock 1\nbuffer b\nwrite part b\n",
            "write part",
        ),
        (
            "protocol p\nblock 2\nbuffer b\nwrite b bytes 4 * tid .. +4\n",
            "byte range",
        ),
        (
            "protocol p\nblock 1\nmbarrier m\ninit m, 1\narrive m, 2\n",
            "more arrivals",
        ),
        (
            "protocol p\nblock 2\nmbarrier m\nif tid == 0 { init m, 1 }\nsyncthreads\narrive m\n",
            "R-CONSUME",
        ),
        (
            "protocol p\nblock 2\nmbarrier m\nif tid == 0 { init m, 1 }\nif tid == 1 { arrive m }\n",
            "before its init",
        ),
        (
            "protocol p\nblock 1\nbuffer b\nfor i in 0..100 { write b }\n",
            "more than 64 events",
        ),
    ];
    for (src, why) in cases {
        let r = refusal(src);
        assert!(
            r.why.contains(why),
            "{src:?}: refused with {r:?}, expected {why:?}"
        );
        // Only the bounds on size are capacity; the rest lies outside the fragment.
        let capacity = why.starts_with("more than") && !why.contains("arrivals");
        assert_eq!(r.too_large, capacity, "{src:?}: {r:?}");
    }
}

#[test]
fn a_wait_that_can_never_pass_is_a_deadlock() {
    let v = verdict(
        "protocol p\nblock 2\nmbarrier m\nif tid == 0 { init m, 2 }\nsyncthreads\nif tid == 0 { arrive m }\nif tid == 1 { wait m parity 0 }\n",
    );
    assert!(v.deadlock);
}

#[test]
fn a_race_on_the_flag_alone_is_kept_apart() {
    // The .cta release and the .gpu acquire in another kernel are not morally strong: a data
    // race on the flag; no data is handed over.
    let v = verdict(
        "protocol p\nblock 1\nglobal f\nkernel a { store_release f scope cta }\nkernel b { load_acquire f scope gpu }\n",
    );
    assert!(v.race.is_none());
    assert!(v.flag_race.is_some() && v.any_race());
    // Morally strong: no race at all.
    let v = verdict(
        "protocol p\nblock 1\nglobal f\nkernel a { store_release f scope gpu }\nkernel b { load_acquire f scope gpu }\n",
    );
    assert!(!v.any_race());
}

#[test]
fn the_witness_names_both_accesses() {
    let src = "protocol p\nblock 2\nbuffer b\nif tid == 0 { write b }\nif tid == 1 { read b }\n";
    let v = verdict(src);
    let (a, b) = v.race.expect("a race");
    assert_eq!((a.thread.as_str(), b.thread.as_str()), ("t0", "t1"));
    assert_eq!(&src[a.span.start as usize..a.span.end as usize], "write b");
    assert_eq!(&src[b.span.start as usize..b.span.end as usize], "read b");
}

#[test]
fn a_fence_adds_no_synchronization() {
    // Crate docs, "Fences": the same verdict with and without every fence.
    let with = "protocol p\nblock 1\nglobal d\nglobal f\nkernel a { store d; fence scope sys; store_release f scope cta; fence scope sys }\nkernel b { fence scope sys; load_acquire f scope gpu; fence scope sys; load d }\n";
    let without = "protocol p\nblock 1\nglobal d\nglobal f\nkernel a { store d; store_release f scope cta }\nkernel b { load_acquire f scope gpu; load d }\n";
    assert!(verdict(with).race.is_some());
    assert!(verdict(without).race.is_some());
}

#[test]
fn an_acquire_may_read_an_older_release_it_does_not_see_overwritten() {
    // t1 releases the flag after t0; t2 may read either release (both executed, neither
    // seen overwritten), so t0's data is not ordered before t2's load.
    let v = verdict(
        "protocol p\nblock 3\nglobal d\nglobal f\nif tid == 0 { store d; store_release f scope cta }\nif tid == 1 { store_release f scope cta }\nif tid == 2 { load_acquire f scope cta; load d }\n",
    );
    assert!(v.race.is_some());
    // When t1 acquires t0's release before releasing itself, both paths carry the data.
    let v = verdict(
        "protocol p\nblock 3\nglobal d\nglobal f\nglobal g\nif tid == 0 { store d; store_release f scope cta }\nif tid == 1 { load_acquire f scope cta; store_release g scope cta }\nif tid == 2 { load_acquire g scope cta; load d }\n",
    );
    assert!(v.race.is_none());
}

#[test]
fn deterministic() {
    let src = std::fs::read_to_string("litmus/iriw_reader_misses_one_flag.phase").expect("file");
    let p = load(&src);
    let (a, b) = (decide(&p).expect("decided"), decide(&p).expect("decided"));
    assert_eq!(a.race, b.race);
    assert_eq!((a.executions, a.states), (b.executions, b.states));
}
