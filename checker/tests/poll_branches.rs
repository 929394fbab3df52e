//! Races through the branches of `test_wait` polls (docs/design.md, "Reductions", polls): each
//! protocol races only in schedules where a test fails, through the branch the failed test
//! takes, and must be found with the reductions on and off; the control waits on failure and
//! is ok. (These do not pin down the footprint rule's branch decision by themselves: forcing
//! that decision to either branch still finds these races, because the test itself depends on
//! the producer's arrive, so both orders of the two are kept anyway. A protocol whose verdict
//! depends on that decision is still owed.)

use checker::{CheckOptions, Verdict};
use protocols::SourceFile;

fn check(text: &str, por: bool) -> checker::Report {
    let p = protocols::load(&SourceFile::new("poll.phase", text), &[]).expect("loads");
    let options = CheckOptions {
        exhaustive: true,
        partial_order: por,
        ..CheckOptions::default()
    };
    checker::check(&p, &options)
}

fn races(text: &str) {
    for por in [true, false] {
        let r = check(text, por);
        assert_eq!(r.verdict, Verdict::Hazard, "por {por}: {:?}", r.findings);
        assert!(
            r.findings.iter().any(|f| f.rule.name == "data-race"),
            "por {por}: the race through the failed test is lost: {:?}",
            r.findings.iter().map(|f| f.rule.name).collect::<Vec<_>>()
        );
    }
}

const HEAD: &str = "protocol poll\nparam NC = 3\nblock NC + 1\nmbarrier full\nbuffer x\n\
    if tid == 0 {\n  init full, 1\n}\nsyncthreads\n\
    role producer when tid == NC {\n  write x\n  arrive full\n}\n";

/// The racy read sits in the branch of a failed test (`ok == 0`).
#[test]
fn a_failed_test_that_reads_races() {
    races(&format!(
        "{HEAD}role consumer when tid < NC {{\n  let ok = test_wait full parity 0\n  \
         if ok == 0 {{\n    read x\n  }}\n}}\n"
    ));
}

/// The same with the racy read in the `else` of a passed test.
#[test]
fn the_else_of_a_passed_test_that_reads_races() {
    races(&format!(
        "{HEAD}role consumer when tid < NC {{\n  let ok = test_wait full parity 0\n  \
         if ok == 1 {{\n    wait full parity 0\n  }} else {{\n    read x\n  }}\n}}\n"
    ));
}

/// Two tests, the read when either failed (the poll-both loop's first trip).
#[test]
fn either_of_two_failed_tests_races() {
    races(&format!(
        "{HEAD}role consumer when tid < NC {{\n  \
         let a = test_wait full parity 0\n  let b = test_wait full parity 0\n  \
         if a == 0 || b == 0 {{\n    read x\n  }}\n}}\n"
    ));
}

/// The control: when both branches wait before reading, nothing races.
#[test]
fn a_poll_that_waits_on_failure_is_ok() {
    for por in [true, false] {
        let r = check(
            &format!(
                "{HEAD}role consumer when tid < NC {{\n  let ok = test_wait full parity 0\n  \
                 if ok == 0 {{\n    wait full parity 0\n  }}\n  read x\n}}\n"
            ),
            por,
        );
        assert_eq!(r.verdict, Verdict::Ok, "por {por}: {:?}", r.findings);
    }
}
