//! Model errors and the search's limits: runaway loops and `--max-states` are inconclusive.

use super::*;

#[test]
fn model_error() {
    assert_flags(
        "protocol p\nblock 1\nlet z = 0\nlet x = 1 / z\n",
        "model-error",
    );
    assert_ok("protocol p\nblock 1\nlet z = 1\nlet x = 1 / z\n");
}

#[test]
fn runaway_while_is_inconclusive() {
    let p = load(
        "protocol p\nblock 1\nmbarrier b\ninit b, 1\nlet i = 0\nwhile 1 { arrive b; wait b parity i; i = i ^ 1 }\n",
    );
    let r = checker::check(
        &p,
        &checker::CheckOptions {
            max_loop_trips: 5,
            ..checker::CheckOptions::default()
        },
    );
    assert_eq!(r.verdict, checker::Verdict::Inconclusive);
    assert!(r.incomplete.unwrap().reason.contains("max-loop-trips"));
}

#[test]
fn max_states_is_inconclusive() {
    let p = load(&small_db());
    let r = checker::check(
        &p,
        &checker::CheckOptions {
            max_states: 10,
            ..checker::CheckOptions::default()
        },
    );
    assert_eq!(r.verdict, checker::Verdict::Inconclusive);
    let inc = r.incomplete.unwrap();
    assert!(inc.reason.contains("max-states"));
    assert!(inc.covered.contains("depth"));
}
