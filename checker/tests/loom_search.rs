//! The parallel search's shared structures under loom (docs/design.md, "Parallel search").
//!
//! What the search's worker threads share: the footprint run cache ([`checker::memo::Memo`],
//! its shards locked to look a run up and to store one), the visited set
//! ([`checker::memo::Visited`]: the workers claim their successors in it, the least claim in
//! the sequential order wins, then they settle which claims won) and the round being expanded
//! (each worker expands states of it; [`checker::explore::Workers::map_batch`] hands the
//! expansions back in queue order). The parent pointers, the queue and the findings belong to
//! the calling thread. The same code runs here with loom's mutex and loom threads in place of
//! std's mutex and rayon's pool, and loom enumerates the interleavings:
//!
//! - the cache: no lost insert and the pure function's value for every lookup, in every
//!   interleaving; a lock whose critical section is split (a deliberately broken variant)
//!   is caught;
//! - the whole search (`explore_on`, the real visited set, claims, queue and numbering) on a
//!   toy model with diamonds inside one round, whose transitions go through a shared cache:
//!   the outcome (states, transitions, every parent pointer, the findings in order) equals the
//!   sequential search's in every interleaving; workers that hand expansions back in
//!   completion order, and a visited set whose lock is split (a claim lost), both
//!   deliberately broken variants, are caught.
//!
//! No `--cfg loom` is needed: the structures are generic over their lock (`memo::Lock`) and
//! over the workers (`explore::Workers`), so this runs in `cargo test --workspace`.

use checker::explore::{self, Limits, Model, Sequential, Step, Workers};
use checker::memo::{Lock, Memo, VisitedShard};
use loom::sync::atomic::{AtomicUsize, Ordering};
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::AtomicU64;

/// Runs `f` (which runs a loom model) and returns its panic message, if it panicked.
fn panic_message(f: impl FnOnce()) -> Option<String> {
    let r = catch_unwind(AssertUnwindSafe(f)).err()?;
    Some(
        r.downcast_ref::<String>()
            .cloned()
            .or_else(|| r.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    )
}

/// loom's mutex behind the cache's lock trait.
struct LoomLock<T>(loom::sync::Mutex<T>);

impl<T> Lock<T> for LoomLock<T> {
    fn new(value: T) -> Self {
        LoomLock(loom::sync::Mutex::new(value))
    }
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.0.lock().unwrap())
    }
}

/// Deliberately broken: the critical section is split in two (copy the map under the lock,
/// change the copy without it, write the copy back under the lock), so an insert made by
/// another thread in between is lost.
struct SplitLock<T>(loom::sync::Mutex<T>);

impl<T: Clone> Lock<T> for SplitLock<T> {
    fn new(value: T) -> Self {
        SplitLock(loom::sync::Mutex::new(value))
    }
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let mut copy = self.0.lock().unwrap().clone();
        let r = f(&mut copy);
        *self.0.lock().unwrap() = copy;
        r
    }
}

type Cache<L> = Memo<u32, u64, L>;

/// The cached pure function.
fn square(k: u32) -> u64 {
    u64::from(k) * u64::from(k) + 7
}

/// Two workers look up overlapping keys; afterwards every key is cached with its value.
static CACHE_EXECUTIONS: AtomicU64 = AtomicU64::new(0);

fn cache_model<L: Lock<HashMap<u32, u64>> + Send + Sync + 'static>() {
    CACHE_EXECUTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // One shard: both workers' keys behind the one lock (the split-lock variant must be able
    // to lose an insert).
    let cache = loom::sync::Arc::new(Cache::<L>::with_shards(1 << 10, 1));
    let c = cache.clone();
    let other = loom::thread::spawn(move || {
        for k in [1, 2] {
            assert_eq!(c.get_or_compute(k, || square(k)), square(k));
        }
    });
    for k in [2, 3] {
        assert_eq!(cache.get_or_compute(k, || square(k)), square(k));
    }
    other.join().unwrap();
    for k in [1, 2, 3] {
        assert_eq!(cache.get(&k), Some(square(k)), "the insert of {k} was lost");
    }
    assert_eq!(cache.len(), 3);
}

#[test]
fn run_cache_keeps_every_insert_under_loom() {
    let before = CACHE_EXECUTIONS.load(std::sync::atomic::Ordering::Relaxed);
    loom::model(cache_model::<LoomLock<HashMap<u32, u64>>>);
    let n = CACHE_EXECUTIONS.load(std::sync::atomic::Ordering::Relaxed) - before;
    // Two threads, six lock sections each: loom explores many schedules (not one).
    assert!(n >= 20, "only {n} executions");
}

/// The property above can fail: loom finds the interleaving where the split lock loses an
/// insert.
#[test]
fn run_cache_model_catches_a_split_critical_section() {
    let msg = panic_message(|| loom::model(cache_model::<SplitLock<HashMap<u32, u64>>>));
    let msg = msg.expect("loom found no lost insert with a split lock");
    assert!(msg.contains("was lost"), "{msg}");
}

// ---------- the search ----------

/// A slot of a batch's results, written by the worker that took that state.
struct Slot<R>(loom::cell::UnsafeCell<Option<R>>);

// SAFETY: each slot is written by exactly one worker (the one whose `fetch_add` returned its
// index) and read by the caller after joining every worker; loom's `UnsafeCell` checks both.
unsafe impl<R: Send> Sync for Slot<R> {}

/// `map_batch` on loom threads: `threads` workers (the caller is one) take indices from a
/// shared counter, as rayon's work stealing hands states to whichever worker is free, and
/// store each result in its own slot. `in_completion_order` is the deliberately broken
/// variant: the results are handed back in the order the workers finished them.
struct LoomWorkers {
    threads: usize,
    in_completion_order: bool,
}

impl Workers for LoomWorkers {
    /// Two locks: claims on different states go through different shards, claims on one
    /// state through the same.
    fn visited_shards(&self) -> usize {
        2
    }

    fn map_batch<R: Send>(&self, n: usize, f: &(dyn Fn(usize) -> R + Sync)) -> Vec<R> {
        let slots: Vec<Slot<R>> = (0..n)
            .map(|_| Slot(loom::cell::UnsafeCell::new(None)))
            .collect();
        let next = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        // Completion order: slot `done` (the next free one) gets the result.
        let work = || {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    break;
                }
                let r = f(i);
                let at = if self.in_completion_order {
                    done.fetch_add(1, Ordering::SeqCst)
                } else {
                    i
                };
                // SAFETY: `at` is this worker's alone (see `Slot`).
                slots[at].0.with_mut(|p| unsafe { *p = Some(r) });
            }
        };
        let helpers = (self.threads - 1).min(n.saturating_sub(1));
        let handles: Vec<_> = (0..helpers)
            .map(|_| {
                let job: Box<dyn FnOnce() + '_> = Box::new(&work);
                // SAFETY: every helper is joined below before `work` and what it borrows go
                // out of scope (a scoped thread; loom 0.7 has no `thread::scope`). A panic in
                // a helper ends the whole loom execution.
                let job: Box<dyn FnOnce() + 'static> = unsafe { std::mem::transmute(job) };
                loom::thread::spawn(job)
            })
            .collect();
        work();
        for h in handles {
            h.join().unwrap();
        }
        slots
            .into_iter()
            .map(|s| s.0.into_inner().expect("every index was taken"))
            .collect()
    }
}

/// A toy model: two counters that go up to `MAX_A` and `MAX_B`, with diamonds (a state reached from
/// several parents of one round, whose claims race), findings on the diagonal, and every
/// transition looked up in a cache shared by the workers (as the footprint runs are).
struct Grid<L> {
    cache: Memo<(u8, u8, u32), (u8, u8), L>,
}

/// Two rounds of two states each ((1, 0) and (0, 1), then (2, 0) and (1, 1)), each with a
/// diamond: loom allows five threads per execution, and each such round starts one helper
/// per phase.
const MAX_A: u8 = 2;
const MAX_B: u8 = 1;

impl<L: Lock<HashMap<(u8, u8, u32), (u8, u8)>> + Sync> Model for Grid<L> {
    type State = (u8, u8);
    type Finding = String;
    type Key = String;

    fn init_state(&self) -> (u8, u8) {
        (0, 0)
    }
    fn actions(&self, s: &(u8, u8), out: &mut Vec<u32>) {
        if s.0 < MAX_A {
            out.push(0);
        }
        if s.1 < MAX_B {
            out.push(1);
        }
    }
    fn next(&self, s: &(u8, u8), a: u32, found: &mut Vec<String>) -> Step<(u8, u8)> {
        let n = self.cache.get_or_compute((s.0, s.1, a), || {
            if a == 0 {
                (s.0 + 1, s.1)
            } else {
                (s.0, s.1 + 1)
            }
        });
        if n == (MAX_A, 0) {
            found.push(format!("edge to {n:?} by {a}"));
        }
        Step::Next(n)
    }
    fn check_state(&self, s: &(u8, u8), _actions: &[u32], found: &mut Vec<String>) {
        if s.0 == s.1 && s.0 > 0 {
            found.push(format!("diagonal {s:?}"));
        }
    }
    fn key(&self, f: &String) -> String {
        f.clone()
    }
    fn state_bytes(&self, _s: &(u8, u8)) -> usize {
        2
    }
}

/// Everything a search's outcome says, for comparison.
type Summary = (u64, u64, Vec<(String, u32, Option<u32>)>, Vec<Vec<u32>>);

/// The search with the run cache behind `L` and the visited set's shards behind `V`.
fn search<L, V, W>(workers: &W) -> Summary
where
    L: Lock<HashMap<(u8, u8, u32), (u8, u8)>> + Sync,
    V: Lock<VisitedShard> + Sync,
    W: Workers,
{
    let model = Grid::<L> {
        cache: Memo::with_shards(1 << 10, 1),
    };
    let limits = Limits {
        max_states: 1_000,
        max_memory_bytes: u64::MAX,
        max_time: None,
        after_findings: None,
        pause_at: None,
    };
    let out = explore::explore_on::<_, _, V>(workers, &model, &limits, None, None);
    assert!(out.incomplete.is_none());
    let found = out
        .found
        .iter()
        .map(|f| (f.finding.clone(), f.state, f.action))
        .collect();
    let paths = (0..out.states as u32).map(|i| out.path(i)).collect();
    (out.states, out.transitions, found, paths)
}

/// The reference: one thread, std's mutex.
fn sequential() -> Summary {
    let s = search::<std::sync::Mutex<_>, std::sync::Mutex<_>, _>(&Sequential);
    // 6 states (3 x 2), each of the 7 edges taken once.
    assert_eq!(s.0, 6);
    assert_eq!(s.1, 7);
    s
}

static SEARCH_EXECUTIONS: AtomicU64 = AtomicU64::new(0);

/// How the parallel search under test is built.
#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Correct,
    /// Deliberately broken: expansions handed back in completion order.
    CompletionOrder,
    /// Deliberately broken: the visited set's lock split in two.
    SplitVisitedLock,
}

fn parallel_model(variant: Variant) {
    let want = sequential();
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(move || {
        SEARCH_EXECUTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let workers = LoomWorkers {
            threads: 2,
            in_completion_order: variant == Variant::CompletionOrder,
        };
        let got = if variant == Variant::SplitVisitedLock {
            search::<LoomLock<_>, SplitLock<_>, _>(&workers)
        } else {
            search::<LoomLock<_>, LoomLock<_>, _>(&workers)
        };
        assert_eq!(
            got, want,
            "the parallel search differs from the sequential one"
        );
    });
}

#[test]
fn parallel_search_equals_the_sequential_one_under_loom() {
    let before = SEARCH_EXECUTIONS.load(std::sync::atomic::Ordering::Relaxed);
    parallel_model(Variant::Correct);
    let n = SEARCH_EXECUTIONS.load(std::sync::atomic::Ordering::Relaxed) - before;
    assert!(n >= 20, "only {n} executions");
    eprintln!("{n} loom executions of the search");
}

/// The property above can fail: workers that hand the expansions back in the order they
/// finished them make the merge order, and so the parent pointers, depend on the schedule.
#[test]
fn parallel_search_model_catches_a_merge_in_completion_order() {
    let msg = panic_message(|| parallel_model(Variant::CompletionOrder))
        .expect("loom found no schedule where the completion order changes the search");
    assert!(msg.contains("differs from the sequential"), "{msg}");
}

/// The property above can fail through the visited set too: with its lock split, two workers
/// claiming the same state in one round can both copy the shard before either writes it back,
/// so the least claim is lost (the state gets the wrong parent) or a settled state is claimed
/// again (it is numbered twice).
#[test]
fn parallel_search_model_catches_a_lost_claim() {
    let msg = panic_message(|| parallel_model(Variant::SplitVisitedLock))
        .expect("loom found no schedule where a split visited-set lock changes the search");
    assert!(msg.contains("differs from the sequential"), "{msg}");
}
