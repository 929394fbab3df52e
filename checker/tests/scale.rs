//! Production block sizes: the language.md §1 double buffer with 1 producer and 128 consumer
//! threads (K = 8) verifies exhaustively, and two bugs in it are found at that size, each
//! with a trace that replays through the unreduced semantics. Times are in
//! docs/performance.md (`scripts/bench-scale.sh`), not asserted here.

use checker::{CheckOptions, FoundBy, Severity, Verdict};
use protocols::SourceFile;

fn load(path: &str) -> protocols::ir::Program {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"));
    protocols::load(&SourceFile::new(path, &text), &[]).expect("loads")
}

/// Every error's schedule, replayed from the initial state without reductions, raises the
/// same rule at the same statement.
fn assert_replays(program: &protocols::ir::Program, report: &checker::Report) {
    for f in report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
    {
        let r = checker::replay(program, &CheckOptions::default(), &f.schedule)
            .unwrap_or_else(|e| panic!("{} does not replay: {e}", f.rule.name));
        assert!(
            r.findings
                .iter()
                .any(|g| g.rule.code == f.rule.code && g.span == f.span),
            "the replay of {} at {:?} does not raise it again",
            f.rule.name,
            f.span
        );
    }
}

#[test]
fn full_size_double_buffer_verifies() {
    let p = load("../corpus/guide/double_buffer.phase");
    let r = checker::check(&p, &CheckOptions::default());
    assert_eq!(r.verdict, Verdict::Ok, "{:?}", r.incomplete);
    assert!(r.incomplete.is_none());
}

#[test]
fn full_size_parity_flip_is_a_race() {
    let p = load("tests/data/double_buffer_parity_flip.phase");
    let r = checker::check(&p, &CheckOptions::default());
    assert_eq!(r.verdict, Verdict::Hazard);
    assert!(r.findings.iter().any(|f| f.rule.name == "data-race"));
    assert_replays(&p, &r);
}

#[test]
fn full_size_short_count_is_found_by_random_schedules() {
    let p = load("tests/data/double_buffer_count_short.phase");
    // The default walks: their outcome depends only on their fixed random streams and step
    // caps, so a debug build finds what a release build does.
    let patient = CheckOptions::default();
    let r = checker::check(&p, &patient);
    assert_eq!(r.verdict, Verdict::Hazard);
    let race = r
        .findings
        .iter()
        .find(|f| f.rule.name == "data-race")
        .expect("the refill races with the last reader");
    assert_eq!(race.found_by, FoundBy::RandomSchedule);
    assert_replays(&p, &r);
}

/// The exhaustive search expands batches of states in parallel and merges them in queue order:
/// one worker thread and two visit the same states and report the same findings with the same
/// schedules (generated protocols with bugs, plus a corpus file whose search branches widely).
#[test]
fn parallel_search_is_deterministic() {
    let exhaustive = CheckOptions {
        exhaustive: true,
        ..CheckOptions::default()
    };
    let run = |threads: usize, p: &protocols::ir::Program| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool")
            .install(|| checker::check(p, &exhaustive))
    };
    let summary = |r: &checker::Report| {
        let findings: Vec<_> = r
            .findings
            .iter()
            .map(|f| (f.rule.name, f.span, f.schedule.to_string()))
            .collect();
        (r.stats.states, r.stats.transitions, findings)
    };
    let files = [
        "../corpus/cutlass/pipeline_async.phase",
        "../corpus/hazards/deadlock/fail.phase",
        "../corpus/hazards/data-race/fail.phase",
    ];
    for path in files {
        let p = load(path);
        let one = run(1, &p);
        assert!(one.stats.states > 1, "{path}");
        // 16: narrow rounds run on the calling thread, wide ones on the workers
        // (`explore::narrow_round`), with more workers than this machine's cores.
        for threads in [2, 16] {
            assert_eq!(
                summary(&one),
                summary(&run(threads, &p)),
                "{path}, {threads}"
            );
        }
    }
}

/// A wide search (the double buffer with 6 consumers and no partial-order reduction: 1 183
/// states, up to hundreds queued at once, many states reached from several parents of one
/// round) visits the same states, numbers them alike and gives every state the same shortest
/// path on 1, 2 and 4 worker threads: the claims in the shared visited set pick the parent the
/// sequential search picks, whichever worker gets there first.
#[test]
fn wide_parallel_search_numbers_states_alike() {
    let full = format!(
        "{}/tests/data/double_buffer.phase",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&full).expect("reads");
    let overrides = [("NC".to_string(), 6), ("K".to_string(), 2)];
    let p = protocols::load(&SourceFile::new(&full, &text), &overrides).expect("loads");
    let opts = CheckOptions {
        exhaustive: true,
        partial_order: false,
        ..CheckOptions::default()
    };
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool")
            .install(|| checker::check(&p, &opts))
    };
    let summary = |r: &checker::Report| {
        let findings: Vec<_> = r
            .findings
            .iter()
            .map(|f| (f.rule.name, f.span, f.schedule.to_string()))
            .collect();
        (r.verdict, r.stats.states, r.stats.transitions, findings)
    };
    let one = run(1);
    assert!(one.stats.states > 1_000, "{} states", one.stats.states);
    // More workers than this machine's cores, too: the claims then race in more orders.
    for threads in [2, 4, 8, 16] {
        assert_eq!(summary(&one), summary(&run(threads)), "{threads} threads");
    }

    // The explorer itself: every state's parent pointer (its path from the initial state) is
    // the sequential search's, on 4 workers.
    let mut model = checker::model::PhaseModel::new(&p, opts.max_loop_trips, opts.symmetry);
    model.por = false;
    let (mut init, _, _, _) = model.initial();
    model.canon(&mut init);
    let search = checker::model::Search::new(&model, init);
    let limits = checker::explore::Limits {
        max_states: 1 << 20,
        max_memory_bytes: u64::MAX,
        max_time: None,
        after_findings: None,
        pause_at: None,
    };
    let sequential = checker::explore::explore_on::<_, _, std::sync::Mutex<_>>(
        &checker::explore::Sequential,
        &search,
        &limits,
        None,
        None,
    );
    let parallel = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .expect("a pool")
        .install(|| checker::explore::explore(&search, &limits, None, None));
    assert_eq!(sequential.states, one.stats.states);
    assert_eq!(sequential.states, parallel.states);
    assert_eq!(sequential.transitions, parallel.transitions);
    for i in 0..sequential.states as u32 {
        assert_eq!(sequential.path(i), parallel.path(i), "state {i}");
    }
}

/// The portfolio's walks are capped by steps, not by the clock, and merged in walk order: a
/// hazard found by random schedules is reported with the same findings, traces and schedules
/// on one core and on four, and on a second run (the walks would have been cut at different
/// points by a time budget, most of all on one core).
#[test]
fn random_schedules_report_the_same_on_any_number_of_cores() {
    let p = load("tests/data/double_buffer_count_short.phase");
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool")
            .install(|| checker::check(&p, &CheckOptions::default()))
    };
    let summary = |r: &checker::Report| {
        let findings: Vec<_> = r
            .findings
            .iter()
            .map(|f| {
                (
                    f.rule.name,
                    f.span,
                    f.schedule.to_string(),
                    f.trace.len(),
                    f.found_by,
                )
            })
            .collect();
        (
            r.stats.states,
            r.incomplete.as_ref().map(|i| i.reason.clone()),
            findings,
        )
    };
    let one = run(1);
    assert!(
        one.findings
            .iter()
            .any(|f| f.found_by == FoundBy::RandomSchedule),
        "the hazard is found by random schedules"
    );
    assert_eq!(summary(&one), summary(&run(4)));
    assert_eq!(summary(&one), summary(&run(1)));
}

/// The memory estimate counts the live states and the thread states the search has interned
/// (each once), so it is read only when both are the same on any number of cores: the peak,
/// and where a memory limit stops the search, are the same on 1, 2, 8 and 16 workers (they
/// differed by a few kilobytes from run to run when each worker measured its successors while
/// the others were still copying and dropping states, and a thread counted by its share of the
/// states holding it). The searches of this test share the process's table of interned thread
/// states: each counts what it used, whichever added it first. The double buffer with 8 consumers and
/// no partial-order reduction: 3 505 states, in rounds of up to hundreds.
#[test]
fn memory_estimate_and_memory_limit_do_not_depend_on_threads() {
    let full = format!(
        "{}/tests/data/double_buffer.phase",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&full).expect("reads");
    let overrides = [("NC".to_string(), 8), ("K".to_string(), 2)];
    let p = protocols::load(&SourceFile::new(&full, &text), &overrides).expect("loads");
    let run = |threads: usize, max_memory_bytes: u64| {
        let opts = CheckOptions {
            exhaustive: true,
            partial_order: false,
            max_memory_bytes,
            ..CheckOptions::default()
        };
        let r = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool")
            .install(|| checker::check(&p, &opts));
        (
            r.stats.states,
            r.stats.transitions,
            r.stats.peak_memory_bytes,
            r.incomplete.map(|i| i.reason),
        )
    };
    let full_run = run(1, CheckOptions::default().max_memory_bytes);
    assert!(full_run.3.is_none(), "{full_run:?}");
    // A limit that stops the search about halfway through.
    let limit = full_run.2 / 2;
    let limited = run(1, limit);
    assert!(
        limited
            .3
            .as_deref()
            .is_some_and(|r| r.contains("max-memory")),
        "{limited:?}"
    );
    for threads in [2, 8, 16] {
        assert_eq!(
            full_run,
            run(threads, CheckOptions::default().max_memory_bytes),
            "{threads} threads"
        );
        assert_eq!(
            limited,
            run(threads, limit),
            "{threads} threads, {limit} bytes"
        );
    }
}

/// A toy model whose every state has `WIDTH` successors at the next depth, the same `WIDTH`
/// states at each depth: rounds of `WIDTH` small states. It notes which threads ran `next`.
struct Layers {
    width: u32,
    depth: u32,
    threads: std::sync::Mutex<std::collections::HashSet<std::thread::ThreadId>>,
}

impl checker::explore::Model for Layers {
    type State = (u32, u32);
    type Finding = ();
    type Key = ();
    fn init_state(&self) -> (u32, u32) {
        (0, 0)
    }
    fn actions(&self, s: &(u32, u32), out: &mut Vec<u32>) {
        if s.0 < self.depth {
            out.extend(0..self.width);
        }
    }
    fn next(&self, s: &(u32, u32), a: u32, _: &mut Vec<()>) -> checker::explore::Step<(u32, u32)> {
        self.threads
            .lock()
            .unwrap()
            .insert(std::thread::current().id());
        checker::explore::Step::Next((s.0 + 1, a))
    }
    fn check_state(&self, _: &(u32, u32), _: &[u32], _: &mut Vec<()>) {}
    fn key(&self, _: &()) {}
    fn state_bytes(&self, _: &(u32, u32)) -> usize {
        8
    }
}

/// A search that stays narrow (rounds of 3 small states: below
/// `explore::PARALLEL_ROUND_STATES`) runs on the calling thread alone, whatever the pool's
/// size: it wakes no worker, so more threads cannot make it slower. A wide one (rounds of 64
/// states) gets the same states and transitions with the pool as without.
#[test]
fn narrow_rounds_run_on_the_calling_thread() {
    let limits = checker::explore::Limits {
        max_states: 1 << 20,
        max_memory_bytes: u64::MAX,
        max_time: None,
        after_findings: None,
        pause_at: None,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .expect("a pool");
    for width in [3, 64] {
        let layers = Layers {
            width,
            depth: 200,
            threads: Default::default(),
        };
        let parallel = pool.install(|| checker::explore::explore(&layers, &limits, None, None));
        let on = layers.threads.lock().unwrap().len();
        let sequential = checker::explore::explore_on::<_, _, std::sync::Mutex<_>>(
            &checker::explore::Sequential,
            &layers,
            &limits,
            None,
            None,
        );
        assert_eq!(parallel.states, 1 + 200 * u64::from(width));
        assert_eq!(
            (parallel.states, parallel.transitions),
            (sequential.states, sequential.transitions)
        );
        if width < checker::explore::PARALLEL_ROUND_STATES as u32 {
            assert_eq!(on, 1, "rounds of {width} states ran on {on} threads");
        }
    }
}
