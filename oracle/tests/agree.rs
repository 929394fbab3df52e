//! The checker against the loom oracle on generated protocols.
//!
//! `protogen` generates protocols shaped like real kernels, half of them with a deliberate
//! bug. For those the oracle can run (one block of at most 4 threads; `oracle::prepare` says
//! why not, and the skips are counted per reason), the set of classes {deadlock, ub, race} of
//! the checker's error findings (exhaustive search) must equal the set of classes the loom
//! exploration observed.
//!
//! loom first runs with a preemption bound (`PHASECHECK_ORACLE_PREEMPTIONS`, default 2). A
//! bounded exploration can miss what needs more preemptions, never invent a finding, so when
//! it finds less than the checker the case is explored again without the bound (at most
//! `PHASECHECK_ORACLE_MAX_EXECUTIONS` executions, default 100 000); a case whose unbounded
//! run is cut there is counted as inconclusive, not compared.
//!
//! Deterministic (a fixed ChaCha seed). `PHASECHECK_ORACLE_CASES=N` runs N cases instead of
//! the default, `PHASECHECK_ORACLE_SEED=S` picks another seed.

use checker::{CheckOptions, Severity, Verdict};
use oracle::{Class, Options, Outcome};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

const DEFAULT_CASES: u32 = 200;

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
    )
}

fn runner(cases: u32) -> TestRunner {
    let seed = env_u64("PHASECHECK_ORACLE_SEED").unwrap_or(0x6f72_6163_6c65_2121);
    let mut bytes = [0u8; 32];
    for (i, b) in seed.to_le_bytes().iter().enumerate() {
        bytes[i] = *b;
        bytes[i + 8] = b.rotate_left(5);
    }
    let config = Config {
        cases,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        fork: false,
        timeout: 0,
        max_shrink_iters: 1024,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

/// The shapes that fit one block of at most 4 threads (clusters and `cuda::pipeline` are not
/// in the oracle; `prepare` would skip them all).
fn small_protocol() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => protogen::ring(),
        2 => protogen::tokens(),
        2 => protogen::rounds(),
        1 => protogen::pingpong(),
        1 => protogen::cp_async(),
        2 => protogen::tma(),
        1 => protogen::tile(),
    ]
}

#[derive(Default)]
struct Tally {
    agreed: u32,
    escalated: u32,
    inconclusive: u32,
    skipped: BTreeMap<String, u32>,
    executions: u64,
    by_classes: BTreeMap<String, u32>,
}

fn names(c: &BTreeSet<Class>) -> String {
    let v: Vec<_> = c.iter().map(|c| c.as_str()).collect();
    format!("{{{}}}", v.join(", "))
}

fn bounded() -> Options {
    Options {
        preemption_bound: Some(env_u64("PHASECHECK_ORACLE_PREEMPTIONS").unwrap_or(2) as usize),
        ..Options::default()
    }
}

fn unbounded() -> Options {
    Options {
        preemption_bound: None,
        max_executions: Some(
            env_u64("PHASECHECK_ORACLE_MAX_EXECUTIONS").unwrap_or(100_000) as usize,
        ),
        ..Options::default()
    }
}

/// The checker's answer: the classes of its error findings and the rules behind them, or
/// `None` when its search was not complete.
fn checker_classes(program: &protocols::ir::Program) -> Option<(BTreeSet<Class>, Vec<String>)> {
    let opts = CheckOptions {
        max_states: 1_000_000,
        exhaustive: true,
        ..CheckOptions::default()
    };
    let r = checker::check(program, &opts);
    if r.verdict == Verdict::Inconclusive || r.incomplete.is_some() {
        return None;
    }
    let mut classes = BTreeSet::new();
    let mut rules = Vec::new();
    for f in r.findings.iter().filter(|f| f.severity == Severity::Error) {
        classes.insert(match f.rule.class {
            checker::Class::Deadlock => Class::Deadlock,
            checker::Class::Ub => Class::Ub,
            checker::Class::Race => Class::Race,
            checker::Class::Perf => continue,
        });
        rules.push(format!("{}@{}", f.rule.name, f.span.start));
    }
    Some((classes, rules))
}

fn describe(o: &Outcome) -> String {
    let rules: Vec<_> = o.found.iter().map(|f| f.1).collect();
    format!(
        "{} {rules:?} in {} executions{}{}",
        names(&o.classes()),
        o.executions,
        if o.complete { "" } else { " (cut short)" },
        o.loom_panic
            .as_ref()
            .map(|p| format!(", loom panicked: {p}"))
            .unwrap_or_default()
    )
}

/// Compare one generated protocol.
pub fn compare(src: &str, tally: &RefCell<Tally>) -> Result<(), TestCaseError> {
    let file = protocols::SourceFile::new("gen.phase", src);
    let program = protocols::load(&file, &[])
        .map_err(|_| TestCaseError::fail("a generated protocol does not load"))?;
    let prog = match oracle::prepare(&program) {
        Ok(p) => p,
        Err(why) => {
            *tally.borrow_mut().skipped.entry(why).or_default() += 1;
            return Ok(());
        }
    };
    let Some((want, rules)) = checker_classes(&program) else {
        *tally
            .borrow_mut()
            .skipped
            .entry("checker inconclusive".into())
            .or_default() += 1;
        return Ok(());
    };
    let mut out = oracle::explore(&prog, &bounded());
    tally.borrow_mut().executions += out.executions as u64;
    if out.classes() != want && out.classes().is_subset(&want) {
        // The bound may have hidden an interleaving: explore them all.
        tally.borrow_mut().escalated += 1;
        out = oracle::explore(&prog, &unbounded());
        tally.borrow_mut().executions += out.executions as u64;
        if !out.complete && out.classes() != want && out.classes().is_subset(&want) {
            tally.borrow_mut().inconclusive += 1;
            return Ok(());
        }
    }
    if out.classes() != want {
        return Err(TestCaseError::fail(format!(
            "the checker and the oracle disagree\n  checker: {} {rules:?}\n  oracle:  {}",
            names(&want),
            describe(&out)
        )));
    }
    let mut t = tally.borrow_mut();
    t.agreed += 1;
    *t.by_classes.entry(names(&want)).or_default() += 1;
    Ok(())
}

fn run_property<S: Strategy<Value = String>>(strategy: S, cases: u32) {
    quiet_panics();
    let tally = RefCell::new(Tally::default());
    let mut runner = runner(cases);
    let start = std::time::Instant::now();
    let result = runner.run(&strategy, |src| compare(&src, &tally));
    let t = tally.into_inner();
    eprintln!(
        "{} agreed ({:?}), {} explored again without the preemption bound, {} inconclusive, skipped {:?}; {} loom executions, {:.1} s",
        t.agreed,
        t.by_classes,
        t.escalated,
        t.inconclusive,
        t.skipped,
        t.executions,
        start.elapsed().as_secs_f64()
    );
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, src)) => {
            panic!("{reason}\n--- minimal generated protocol ---\n{src}---")
        }
        Err(TestError::Abort(reason)) => panic!("proptest aborted: {reason}"),
    }
    assert!(
        t.inconclusive * 10 <= t.agreed + t.inconclusive,
        "too many inconclusive cases"
    );
}

/// loom reports the panics it catches (its own deadlock detection, our stop unwinding) through
/// the panic hook; the explorer classifies them, so keep them off the test output.
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = info.to_string();
            if !(msg.contains("deadlock") || msg.contains("maximum number of branches")) {
                default(info);
            }
        }));
    });
}

#[test]
fn checker_and_oracle_agree_on_generated_protocols() {
    let cases = env_u64("PHASECHECK_ORACLE_CASES").map_or(DEFAULT_CASES, |n| n as u32);
    run_property(small_protocol(), cases);
}

// ---------- disagreements found (kept as regression tests) ----------

#[allow(dead_code)]
#[track_caller]
fn regression(src: &str) {
    quiet_panics();
    let tally = RefCell::new(Tally::default());
    if let Err(e) = compare(src, &tally) {
        panic!("{e}\n--- protocol ---\n{src}---");
    }
}
