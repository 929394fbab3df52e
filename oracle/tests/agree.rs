//! The checker against the loom oracle on generated protocols.
//!
//! `protogen` generates protocols shaped like real kernels, half of them with a deliberate
//! bug. For those the oracle can run (one block of at most 4 threads; `oracle::prepare` says
//! why not, and the skips are counted per reason), the set of classes {deadlock, ub, race} of
//! the checker's error findings (exhaustive search) must equal the set of classes the loom
//! exploration observed.
//!
//! loom first runs with a preemption bound (`PHASECHECK_ORACLE_PREEMPTIONS`, default 1). A
//! bounded exploration can miss what needs more preemptions, never invent a finding, so when
//! it finds less than the checker the case is explored again with bounds up to 3, then
//! without a bound, each time at most `PHASECHECK_ORACLE_MAX_EXECUTIONS` executions (default
//! 5 000); a case still short of the checker's answer and cut there is counted as
//! inconclusive, not compared. (An exploration cut there that already observed the checker's
//! classes agrees; one that observed more disagrees, since every observation is a real
//! execution.)
//!
//! Deterministic (a fixed ChaCha seed). `PHASECHECK_ORACLE_CASES=N` runs N cases instead of
//! the default (and admits 4 threads), `PHASECHECK_ORACLE_SEED=S` picks another seed,
//! `PHASECHECK_ORACLE_COLLECT=1` lists every disagreement instead of stopping at the first,
//! `PHASECHECK_ORACLE_SLOW_MS=MS` prints every case slower than that.

use checker::{CheckOptions, Severity, Verdict};
use oracle::{Class, Options, Outcome};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

const DEFAULT_CASES: u32 = 250;

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
        1 => protogen::dispatch(),
    ]
}

#[derive(Default)]
struct Tally {
    agreed: u32,
    escalated: u32,
    inconclusive: u32,
    skipped: BTreeMap<String, u32>,
    executions: u64,
    disagreed: u32,
    by_classes: BTreeMap<String, u32>,
}

fn names(c: &BTreeSet<Class>) -> String {
    let v: Vec<_> = c.iter().map(|c| c.as_str()).collect();
    format!("{{{}}}", v.join(", "))
}

/// The explorations tried in turn while the oracle finds less than the checker: growing
/// preemption bounds, then none (capped: a case cut there is inconclusive).
fn ladder() -> Vec<Options> {
    let first = env_u64("PHASECHECK_ORACLE_PREEMPTIONS").unwrap_or(1) as usize;
    let cap = env_u64("PHASECHECK_ORACLE_MAX_EXECUTIONS").unwrap_or(5_000) as usize;
    let mut v: Vec<Options> = (first..=3)
        .map(|b| Options {
            preemption_bound: Some(b),
            max_executions: Some(cap),
            ..Options::default()
        })
        .collect();
    v.push(Options {
        preemption_bound: None,
        max_executions: Some(cap),
        ..Options::default()
    });
    v
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
fn compare(src: &str, tally: &RefCell<Tally>) -> Result<(), TestCaseError> {
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
    let mut out = Outcome::default();
    for (i, opts) in ladder().iter().enumerate() {
        if i == 1 {
            tally.borrow_mut().escalated += 1;
        }
        out = oracle::explore(&prog, opts);
        tally.borrow_mut().executions += out.executions as u64;
        // A bounded exploration can miss a finding, never invent one.
        if !(out.classes() != want && out.classes().is_subset(&want)) {
            break;
        }
    }
    if !out.complete && out.classes() != want && out.classes().is_subset(&want) {
        tally.borrow_mut().inconclusive += 1;
        return Ok(());
    }
    if out.classes() != want {
        let msg = format!(
            "the checker and the oracle disagree\n  checker: {} {rules:?}\n  oracle:  {}",
            names(&want),
            describe(&out)
        );
        if std::env::var("PHASECHECK_ORACLE_COLLECT").is_ok() {
            // Long runs: list every disagreement instead of stopping (and shrinking) at the
            // first one.
            eprintln!("{msg}\n--- protocol ---\n{src}---");
            tally.borrow_mut().disagreed += 1;
            return Ok(());
        }
        return Err(TestCaseError::fail(msg));
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
    let slow_ms = env_u64("PHASECHECK_ORACLE_SLOW_MS");
    let done = std::cell::Cell::new(0u32);
    let result = runner.run(&strategy, |src| {
        done.set(done.get() + 1);
        if done.get().is_multiple_of(500) {
            eprintln!(
                "... {} cases, {:.0} s",
                done.get(),
                start.elapsed().as_secs_f64()
            );
        }
        let t = std::time::Instant::now();
        let before = tally.borrow().executions;
        let r = compare(&src, &tally);
        if slow_ms.is_some_and(|ms| t.elapsed().as_millis() > u128::from(ms)) {
            eprintln!(
                "slow case: {} ms, {} executions\n{src}",
                t.elapsed().as_millis(),
                tally.borrow().executions - before
            );
        }
        r
    });
    let t = tally.into_inner();
    eprintln!(
        "{} disagreed, {} agreed ({:?}), {} explored again with a larger bound, {} inconclusive, skipped {:?}; {} loom executions, {:.1} s",
        t.disagreed,
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
    assert_eq!(t.disagreed, 0, "disagreements (listed above)");
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

/// The block size of a generated protocol.
fn threads(src: &str) -> u32 {
    let file = protocols::SourceFile::new("gen.phase", src);
    protocols::load(&file, &[]).map_or(0, |p| p.kernels[0].block)
}

/// The default (CI) run keeps to protocols of at most 3 threads, whose explorations take
/// milliseconds; a run with `PHASECHECK_ORACLE_CASES` set takes every size up to 4 threads.
#[test]
fn checker_and_oracle_agree_on_generated_protocols() {
    match env_u64("PHASECHECK_ORACLE_CASES") {
        Some(n) => run_property(small_protocol(), n as u32),
        None => run_property(
            small_protocol().prop_filter("at most 3 threads", |s| threads(s) <= 3),
            DEFAULT_CASES,
        ),
    }
}

/// Protocols of 2 or 3 threads (one warp) whose outcome depends on which lane `elect` picks
/// and on whether the warp keeps it (semantics.md W3): the barrier is initialized by thread 0
/// or inside an `elect`, with or without `syncthreads` before the elected arrivals; the first
/// elected lane may exit, so that a second `elect` chooses again among the lanes left. With
/// lane 0 always leading (the oracle before it enumerated leaders) the `init-not-visible`
/// cases of a lane other than thread 0 arming the barrier were never seen. The final wait comes
/// after a `syncthreads` or not: without it a lane other than the initializer waits on a
/// barrier whose init it may not see, whatever the leader, and its wait uses the barrier even
/// where it never passes (the deadlocks of a count of 2 with one arrival): `init-not-visible`
/// and `deadlock` together ([`regression_blocked_wait_before_the_init_is_visible`]).
#[derive(Clone, Copy, Debug)]
struct ElectCase {
    /// 2 or 3.
    threads: u32,
    /// `elect { init bar, count }` instead of `if tid == 0 { init bar, count }`.
    init_in_elect: bool,
    /// `syncthreads` between the init and the elected arrivals.
    sync: bool,
    /// The first elected lane exits after its arrival.
    leader_exits: bool,
    /// A second `elect { arrive bar }`.
    second: bool,
    /// The barrier's count: 1 or 2.
    count: u32,
    /// `syncthreads` before the final `wait bar parity 0` of every lane.
    sync_before_wait: bool,
}

/// The protocol of one [`ElectCase`].
fn elect_protocol(c: ElectCase) -> String {
    let count = c.count;
    let init = if c.init_in_elect {
        format!("elect {{ init bar, {count} }}")
    } else {
        format!("if tid == 0 {{ init bar, {count} }}")
    };
    let sync = if c.sync { "syncthreads\n" } else { "" };
    let exit = if c.leader_exits { "\n  exit" } else { "" };
    let second = if c.second {
        "elect { arrive bar }\n"
    } else {
        ""
    };
    let last = if c.sync_before_wait {
        "syncthreads\n"
    } else {
        ""
    };
    format!(
        "protocol gen_elect\nblock {}\nmbarrier bar\n{init}\n{sync}\
         elect {{\n  arrive bar{exit}\n}}\n{second}{last}wait bar parity 0\n",
        c.threads
    )
}

/// The oracle tries every leader the model allows: both sides agree on every one of the 128
/// protocols of [`elect_protocol`].
#[test]
fn checker_and_oracle_agree_on_elected_leaders() {
    let mut cases = 0;
    for bits in 0u32..128 {
        let bit = |i: u32| bits & (1 << i) != 0;
        let case = ElectCase {
            threads: 2 + u32::from(bit(0)),
            init_in_elect: bit(1),
            sync: bit(2),
            leader_exits: bit(3),
            second: bit(4),
            count: 1 + u32::from(bit(5)),
            sync_before_wait: bit(6),
        };
        let src = elect_protocol(case);
        let tally = RefCell::new(Tally::default());
        quiet_panics();
        if let Err(e) = compare(&src, &tally) {
            // Printed, not only in the panic: `quiet_panics` hides messages that name a
            // deadlock.
            eprintln!("{case:?}: {e}\n--- protocol ---\n{src}---");
            panic!("{case:?}: the checker and the oracle disagree (above)");
        }
        let t = tally.into_inner();
        assert!(
            t.skipped.is_empty() && t.inconclusive == 0 && t.agreed == 1,
            "{case:?}: not compared (skipped {:?}, {} inconclusive)",
            t.skipped,
            t.inconclusive
        );
        cases += 1;
    }
    assert_eq!(cases, 128);
}

/// The barrier is initialized inside `elect`, the elected lane arrives once on a count of 2,
/// and every lane waits with no `syncthreads` after the init: the wait never passes
/// (`deadlock`), and the lanes other than the initializer use the barrier at their wait before
/// they are ordered after its init (`init-not-visible`). The wait is a `try_wait` loop, and
/// "performing any mbarrier operation except `mbarrier.init` on an uninitialized mbarrier
/// object results in undefined behavior" ([PTX] 9.1 §9.7.13.15 *mbarrier*): a try_wait that
/// returns false is such an operation. The oracle reported both; the checker checked the
/// visibility only at the step that passes a wait, and reported the deadlock alone.
#[test]
fn regression_blocked_wait_before_the_init_is_visible() {
    let src = "protocol p\nblock 2\nmbarrier bar\nelect { init bar, 2 }\n\
               elect { arrive bar }\nwait bar parity 0\n";
    regression(src);
    let file = protocols::SourceFile::new("gen.phase", src);
    let program = protocols::load(&file, &[]).unwrap();
    let (classes, rules) = checker_classes(&program).expect("a complete search");
    let both = classes.contains(&Class::Deadlock)
        && rules.iter().any(|r| r.starts_with("init-not-visible"));
    if !both {
        // `quiet_panics` hides a panic message that names a deadlock.
        eprintln!("the checker reports {rules:?}");
    }
    assert!(both, "not both findings (above)");
}

/// Thread 0 initializes, the elected lane arms with no barrier between: correct only when
/// lane 0 leads. The checker lets lane 1 lead (`init-not-visible`); so does the oracle now.
#[test]
fn regression_elected_lane_other_than_the_initializer() {
    regression(ELECTED_ARMS);
    let file = protocols::SourceFile::new("gen.phase", ELECTED_ARMS);
    let program = protocols::load(&file, &[]).unwrap();
    let out = oracle::explore(&oracle::prepare(&program).unwrap(), &Options::default());
    assert!(
        out.found.iter().any(|f| f.1 == "init-not-visible"),
        "{}",
        describe(&out)
    );
}

/// The leader initializes inside one `elect` and arms inside the next: the same lane (kept
/// while no lane leaves), so no finding; once it exits the next `elect` chooses another lane,
/// whose arrival is not ordered after the init (`init-not-visible`).
#[test]
fn regression_leader_kept_until_a_lane_leaves() {
    let kept = "protocol p\nblock 3\nmbarrier bar\nelect { init bar, 1 }\n\
                elect { arrive bar }\nelect { wait bar parity 0 }\n";
    regression(kept);
    let left = "protocol p\nblock 3\nmbarrier bar\nelect {\n  init bar, 1\n  exit\n}\n\
                elect { arrive bar }\nelect { wait bar parity 0 }\n";
    regression(left);
    let found = |src: &str| {
        let file = protocols::SourceFile::new("gen.phase", src);
        let program = protocols::load(&file, &[]).unwrap();
        oracle::explore(&oracle::prepare(&program).unwrap(), &Options::default()).found
    };
    assert!(found(kept).is_empty(), "{:?}", found(kept));
    assert!(
        found(left).iter().any(|f| f.1 == "init-not-visible"),
        "{:?}",
        found(left)
    );
}

const ELECTED_ARMS: &str = "protocol p
block 2
mbarrier bar
if tid == 0 { init bar, 1 }
elect { arrive bar }
wait bar parity 0
";

// ---------- disagreements found ----------

#[track_caller]
fn regression(src: &str) {
    quiet_panics();
    let tally = RefCell::new(Tally::default());
    if let Err(e) = compare(src, &tally) {
        // Printed, not only in the panic: `quiet_panics` hides messages that name a deadlock.
        eprintln!("{e}\n--- protocol ---\n{src}---");
        panic!("the checker and the oracle disagree (above)");
    }
}

/// A checker gap: a ring whose producer fills a stage with `cp_async` (generic proxy) and whose
/// consumer reads it with `mma` (async proxy) after the mbarrier hand-off, with no
/// `fence_proxy_async` anywhere. semantics.md §6.3: generic write then async read needs the
/// fence, and cp.async goes through the generic proxy. The checker reports nothing; the oracle
/// reports `missing-proxy-fence` (race). Found by the property at its first run; fixed: the
/// checker keeps a completed cp.async write for the proxy-fence check (design.md, "Races").
#[test]
fn regression_cp_async_then_mma_needs_a_proxy_fence() {
    regression(CP_ASYNC_THEN_MMA);
}

/// A checker gap, found by the 10 000-case run (protogen `Rounds`, broadcast, K = 1): thread
/// 0's `bar_arrive` releases its write, but the use of whole-block barrier 2 it arrives on can
/// complete without thread 2 (thread 0 finishes, thread 1 completes the use), and thread 2 then
/// completes a use of its own: nothing orders thread 0's write before thread 2's read. The
/// checker reported nothing (a release raised the writer's kept access for every thread); the
/// oracle reports `data-race`. Fixed in the checker: a kept access records which threads
/// happen after it (`Access::seen`), and a named-barrier use hands its releases only to the
/// threads that synced in it (design.md, "Races").
#[test]
fn regression_release_without_acquire_whole_block_barrier() {
    regression(RELEASE_WHOLE_BLOCK);
}

/// The same gap with two threads: thread 0's `bar_arrive 1` (whole block) is the only arrival
/// of a use that completes when thread 0 finishes (after `bar_sync 2, 1`, a barrier of one);
/// thread 1's `bar_sync 1` then completes a new use alone and reads without being ordered after
/// the write.
#[test]
fn regression_release_without_acquire_use_completed_by_exit() {
    regression(RELEASE_EXIT);
}

/// An oracle gap, found by the 10 000-case run (protogen `Rounds`, `CountOver`): thread 1's
/// `bar_sync 2, 3` can never complete, thread 0 waits at the `syncthreads` for it. Both report
/// the `deadlock`; the checker also reports `barrier-divergence` (semantics.md §9.1: a thread
/// never coming to a `__syncthreads` others wait at is UB), which the oracle did not raise at
/// a deadlock. Fixed in the oracle (`Data::record_deadlock`).
#[test]
fn regression_syncthreads_waited_while_a_thread_is_blocked_elsewhere() {
    regression(SYNCTHREADS_WHILE_BLOCKED);
    // Both sides see the UB, not only the deadlock.
    let file = protocols::SourceFile::new("gen.phase", SYNCTHREADS_WHILE_BLOCKED);
    let program = protocols::load(&file, &[]).unwrap();
    let out = oracle::explore(&oracle::prepare(&program).unwrap(), &Options::default());
    assert!(
        out.found.iter().any(|f| f.1 == "barrier-divergence"),
        "{}",
        describe(&out)
    );
}

const SYNCTHREADS_WHILE_BLOCKED: &str = "protocol gen_rounds
param NT = 2
param K = 1
block NT
buffer data[NT]
for k in 0..K {
  if tid == 0 { write data[0] }
  if tid == 0 { bar_arrive 2, NT + 1 } else { bar_sync 2, NT + 1 }
  if tid != 0 { read data[0] }
  syncthreads
}
";

const CP_ASYNC_THEN_MMA: &str = "protocol p
block 2
mbarrier full
mbarrier empty
buffer slot
if tid == 0 {
  init full, 1
  init empty, 1
}
syncthreads
if tid == 0 {
  wait empty parity 1
  cp_async slot
  cp_async_arrive full
  arrive full
} else {
  wait full parity 0
  mma slot
  arrive empty
}
";

const RELEASE_WHOLE_BLOCK: &str = "protocol gen_rounds
block 3
buffer data[3]
if tid == 0 { write data[0] }
if tid == 0 { bar_arrive 2 } else { bar_sync 2 }
if tid != 0 { read data[0] }
";

const RELEASE_EXIT: &str = "protocol gen_rounds
block 2
buffer data[2]
if tid == 0 { write data[0] }
if tid == 0 { bar_arrive 1 } else { bar_sync 1 }
if tid != 0 { read data[0] }
if tid != 0 { bar_arrive 2, 1 } else { bar_sync 2, 1 }
";
