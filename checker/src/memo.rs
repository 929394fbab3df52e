//! The structures the parallel search shares between its worker threads, generic over their
//! synchronization so that `checker/tests/loom_search.rs` runs the same code on loom's
//! primitives (docs/design.md, "Parallel search").
//!
//! - [`Memo`]: a cache of a pure function, split into shards each behind its own lock, locked
//!   only to look a key up and to store a value, never while the value is computed (the
//!   footprint run cache, `model/exec/footprint.rs`).
//! - [`Visited`]: the search's visited set, split the same way; the workers that expand a
//!   round of states also deduplicate their successors in it, and the least (parent, action)
//!   that reaches a new state claims it, whichever worker gets there first.
//! - [`Workers`](crate::explore::Workers) (in `explore.rs`): how the states of a round are
//!   expanded in parallel.
//!
//! Why shards: with one lock, 16 workers doing a run-cache lookup per thread of every state
//! spent four times more time in the kernel (futex waits, 45 M context switches) than in the
//! search itself (issue 24). A shard is picked by bits of the key's hash that the shard's own
//! hash table does not use, so every shard's table stays evenly filled.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// A mutual-exclusion lock around a `T`: `std::sync::Mutex` in the checker, loom's in tests.
pub trait Lock<T> {
    fn new(value: T) -> Self;
    /// Run `f` with the value locked.
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R;
}

impl<T> Lock<T> for std::sync::Mutex<T> {
    fn new(value: T) -> Self {
        std::sync::Mutex::new(value)
    }
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // A worker that panicked while holding the lock left a map that is still consistent
        // (an insert or a clear either happened or not).
        f(&mut self.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Shards of a [`Memo`] made with [`Memo::new`]: many more than cores, so two workers rarely
/// want the same lock at once.
pub const MEMO_SHARDS: usize = 64;

/// A cache of a pure function shared by worker threads: [`Memo::get_or_compute`] looks the key
/// up under its shard's lock, computes a missing value without it, and stores it under the
/// lock. Two workers may compute the same value at once; since the function is pure, both get
/// the same value and which one stores it does not matter. When a shard holds more than its
/// share of `limit` entries it is emptied before the next store (only lookups are ever made:
/// no iteration order can leak into a result).
pub struct Memo<K, V, L = std::sync::Mutex<HashMap<K, V>>> {
    shards: Box<[L]>,
    limit_per_shard: usize,
    _kv: std::marker::PhantomData<fn(K) -> V>,
}

impl<K: Eq + Hash, V: Clone, L: Lock<HashMap<K, V>>> Memo<K, V, L> {
    pub fn new(limit: usize) -> Self {
        Self::with_shards(limit, MEMO_SHARDS)
    }

    /// A cache split into `shards` locks (at least one).
    pub fn with_shards(limit: usize, shards: usize) -> Self {
        let shards = shards.max(1);
        Memo {
            shards: (0..shards).map(|_| L::new(HashMap::new())).collect(),
            limit_per_shard: (limit / shards).max(1),
            _kv: std::marker::PhantomData,
        }
    }

    fn shard(&self, key: &K) -> &L {
        // The shard's `HashMap` hashes with its own random keys, so any fixed hash of the key
        // picks the shard independently of the slot inside it.
        let h = crate::explore::fingerprint(key);
        &self.shards[(h % self.shards.len() as u64) as usize]
    }

    pub fn get(&self, key: &K) -> Option<V> {
        self.shard(key).with(|m| m.get(key).cloned())
    }

    /// Store a value (replacing none: the function is pure, an entry already there is equal).
    pub fn store(&self, key: K, value: V) {
        let limit = self.limit_per_shard;
        self.shard(&key).with(|m| {
            if m.len() >= limit {
                m.clear();
            }
            m.entry(key).or_insert(value);
        });
    }

    /// The cached value of `key`, or `compute()` (run without the lock), stored.
    pub fn get_or_compute(&self, key: K, compute: impl FnOnce() -> V) -> V {
        if let Some(v) = self.get(&key) {
            return v;
        }
        let v = compute();
        self.store(key, v.clone());
        v
    }

    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.with(|m| m.len())).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The hasher behind the visited set's tables: fingerprints are already hashes.
#[derive(Default)]
pub struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// One shard of the visited set: fingerprint -> [`VISITED`], or the least claim made on it in
/// the current round.
pub type VisitedShard = HashMap<u64, u64, BuildHasherDefault<IdentityHasher>>;

/// The value of a fingerprint whose state has an index (visited in an earlier round, or the
/// winner of its claims in this one). Claims are smaller ([`crate::explore`] packs them as
/// `round position << 32 | move position`).
pub const VISITED: u64 = u64::MAX;

/// What a claim on a fingerprint found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The state was visited before this round: a duplicate.
    Seen,
    /// This claim is the least so far; [`Visited::settle`] says whether it stays so.
    Leading,
    /// A smaller claim was made on it in this round: a duplicate.
    Behind,
}

/// The search's visited set, shared by the workers of a round: fingerprints in `shards`
/// hash tables, each behind its own lock. A round is two phases separated by a join of the
/// workers: every successor [`claim`](Visited::claim)s its fingerprint with its position in
/// the sequential search's order (its parent's place in the round, then its action's), and
/// the least claim wins whatever the timing; then every successor still leading asks
/// [`settle`](Visited::settle) whether it won, and the winner marks the state visited. The
/// winners are exactly the states the sequential search would have added in that order.
pub struct Visited<L> {
    shards: Box<[L]>,
}

impl<L: Lock<VisitedShard>> Visited<L> {
    pub fn new(shards: usize) -> Self {
        Visited {
            shards: (0..shards.max(1))
                .map(|_| L::new(VisitedShard::default()))
                .collect(),
        }
    }

    fn shard(&self, fp: u64) -> &L {
        // Bits 32-47: hashbrown indexes its slots with the low bits and tags them with the top
        // seven, so these leave each shard's table evenly used up to 2^32 slots.
        &self.shards[((fp >> 32) & 0xffff) as usize % self.shards.len()]
    }

    /// Mark a state visited outright (the initial state).
    pub fn mark(&self, fp: u64) {
        self.shard(fp).with(|m| m.insert(fp, VISITED));
    }

    /// Claim `fp` for the successor at `key` (smaller: earlier in the sequential order).
    pub fn claim(&self, fp: u64, key: u64) -> Claim {
        debug_assert!(key < VISITED);
        self.shard(fp).with(|m| match m.entry(fp) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(key);
                Claim::Leading
            }
            std::collections::hash_map::Entry::Occupied(mut e) => {
                let v = e.get_mut();
                if *v == VISITED {
                    Claim::Seen
                } else if key < *v {
                    *v = key;
                    Claim::Leading
                } else {
                    Claim::Behind
                }
            }
        })
    }

    /// After every claim of the round: whether the claim `key` on `fp` is the least; if so,
    /// the state is marked visited (later rounds see it as [`Claim::Seen`]).
    pub fn settle(&self, fp: u64, key: u64) -> bool {
        self.shard(fp).with(|m| match m.get_mut(&fp) {
            Some(v) if *v == key => {
                *v = VISITED;
                true
            }
            _ => false,
        })
    }
}
