//! The structures the parallel search shares between its worker threads, generic over their
//! synchronization so that `checker/tests/loom_search.rs` runs the same code on loom's
//! primitives (docs/design.md, "Parallel search").
//!
//! - [`Memo`]: a cache of a pure function, locked only to look a key up and to store a value,
//!   never while the value is computed (the footprint run cache, `model/exec/footprint.rs`).
//! - [`Workers`] (in `explore.rs`): how the states of a batch are expanded in parallel; the
//!   visited set and the queue belong to the merging thread alone.

use std::collections::HashMap;
use std::hash::Hash;

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

/// A cache of a pure function shared by worker threads: [`Memo::get_or_compute`] looks the key
/// up under the lock, computes a missing value without it, and stores it under the lock.
/// Two workers may compute the same value at once; since the function is pure, both get the
/// same value and which one stores it does not matter. When the cache holds more than `limit`
/// entries it is emptied before the next store (only lookups are ever made: no iteration
/// order can leak into a result).
pub struct Memo<K, V, L = std::sync::Mutex<HashMap<K, V>>> {
    map: L,
    limit: usize,
    _kv: std::marker::PhantomData<fn(K) -> V>,
}

impl<K: Eq + Hash, V: Clone, L: Lock<HashMap<K, V>>> Memo<K, V, L> {
    pub fn new(limit: usize) -> Self {
        Memo {
            map: L::new(HashMap::new()),
            limit,
            _kv: std::marker::PhantomData,
        }
    }

    pub fn get(&self, key: &K) -> Option<V> {
        self.map.with(|m| m.get(key).cloned())
    }

    /// Store a value (replacing none: the function is pure, an entry already there is equal).
    pub fn store(&self, key: K, value: V) {
        let limit = self.limit;
        self.map.with(|m| {
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
        self.map.with(|m| m.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
