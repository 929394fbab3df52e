//! Who runs the calls of a round's phases ([`Workers`]): the rayon pool ([`Rayon`]), with
//! narrow rounds and cheap phases on the calling thread, or one thread in order
//! ([`Sequential`]); and the global pool that `verify --threads` asks for, made lazily.

use super::VISITED_SHARDS;

/// How the states of a round are expanded: `map_batch(n, f)` returns `[f(0), .., f(n - 1)]`
/// in index order, whichever threads ran the calls. [`Rayon`] in the checker; the loom test
/// (`checker/tests/loom_search.rs`) runs them on loom threads, and checks that the search's
/// outcome is the same in every interleaving.
pub trait Workers {
    fn map_batch<R: Send>(&self, n: usize, f: &(dyn Fn(usize) -> R + Sync)) -> Vec<R>;
    /// [`Workers::map_batch`] for the expansion of a round of `n` states of `bytes` in all
    /// ([`super::Model::state_bytes`]): [`Rayon`] expands a narrow round on the calling thread
    /// ([`narrow_round`]).
    fn map_round<R: Send>(&self, n: usize, _bytes: u64, f: &(dyn Fn(usize) -> R + Sync)) -> Vec<R> {
        self.map_batch(n, f)
    }
    /// [`Workers::map_batch`] for a phase whose calls are cheap (a few lookups under locks
    /// each): [`Rayon`] runs fewer than [`CHEAP_PARALLEL_FROM`] of them on the calling thread.
    fn map_cheap_batch<R: Send>(&self, n: usize, f: &(dyn Fn(usize) -> R + Sync)) -> Vec<R> {
        self.map_batch(n, f)
    }
    /// Locks of the visited set ([`VISITED_SHARDS`]; the loom test uses fewer).
    fn visited_shards(&self) -> usize {
        VISITED_SHARDS
    }
}

/// A round narrower than this many states is expanded on the calling thread unless its
/// states are large ([`PARALLEL_ROUND_BYTES`]): waking the pool's sleeping workers and
/// putting the calling thread to sleep until they are done costs tens of microseconds, about
/// what a few small states cost to expand, so a search that stays narrow (a chain, a short
/// diamond) would pay for the workers on every round and be slower with more of them.
pub const PARALLEL_ROUND_STATES: usize = 8;

/// ... unless the round's states take this many bytes in all ([`super::Model::state_bytes`]): a
/// state's expansion grows with its threads (the 288-thread ring's cost about 200
/// microseconds each), and two such states are worth a worker's wake-up.
pub const PARALLEL_ROUND_BYTES: u64 = 16 << 10;

/// Whether [`Rayon`] expands a round of `n` states of `bytes` in all on the calling thread.
/// A function of the queue only, like the round's boundaries; and which thread expands a
/// state never changes what the round computes (the claims settle to the sequential order).
pub fn narrow_round(n: usize, bytes: u64) -> bool {
    n < 2 || (n < PARALLEL_ROUND_STATES && bytes < PARALLEL_ROUND_BYTES)
}

/// Settling fewer claims' states than this runs on the calling thread (a lock and a lookup
/// per new state: far below a wake-up of the workers).
pub const CHEAP_PARALLEL_FROM: usize = 64;

/// The size of the global pool that `verify --threads N` asked for ([`set_threads`]).
static POOL_THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// Ask for a global pool of `n` worker threads, made only when work is first handed to it
/// ([`ensure_pool`]): a search that stays narrow (a chain of 3 151 states at 288 threads)
/// then starts no thread at all, instead of starting `n` that only spin and sleep.
pub fn set_threads(n: usize) {
    let _ = POOL_THREADS.set(n);
}

/// Make the global pool of [`set_threads`]'s size, once, before the first parallel call
/// (the search's wide rounds, the portfolio's walks). Without [`set_threads`] it does
/// nothing: rayon makes its default pool, or a test's `install` gives its own.
pub fn ensure_pool() {
    static BUILT: std::sync::Once = std::sync::Once::new();
    if let Some(&n) = POOL_THREADS.get() {
        BUILT.call_once(|| {
            // Fails only if a pool was made before: that one is used.
            let _ = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build_global();
        });
    }
}

/// The current rayon pool (`verify --threads N` sets its size, [`set_threads`]).
pub struct Rayon;

impl Workers for Rayon {
    fn map_batch<R: Send>(&self, n: usize, f: &(dyn Fn(usize) -> R + Sync)) -> Vec<R> {
        use rayon::prelude::*;
        if n <= 1 {
            // Handing one call to the pool would only put this thread to sleep while a
            // worker wakes up.
            return (0..n).map(f).collect();
        }
        ensure_pool();
        // An indexed parallel iterator collects in index order.
        (0..n).into_par_iter().map(f).collect()
    }

    fn map_round<R: Send>(&self, n: usize, bytes: u64, f: &(dyn Fn(usize) -> R + Sync)) -> Vec<R> {
        if narrow_round(n, bytes) {
            return (0..n).map(f).collect();
        }
        self.map_batch(n, f)
    }

    fn map_cheap_batch<R: Send>(&self, n: usize, f: &(dyn Fn(usize) -> R + Sync)) -> Vec<R> {
        if n < CHEAP_PARALLEL_FROM {
            return (0..n).map(f).collect();
        }
        self.map_batch(n, f)
    }
}

/// One thread, in order (the reference the parallel runs must equal).
pub struct Sequential;

impl Workers for Sequential {
    fn map_batch<R: Send>(&self, n: usize, f: &(dyn Fn(usize) -> R + Sync)) -> Vec<R> {
        (0..n).map(f).collect()
    }
}
