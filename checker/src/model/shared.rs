//! Thread states shared between states: copied on write while a transition builds a successor,
//! hash-consed (interned) once the exhaustive search has the finished successor.
//!
//! A state of the search names each of its thread states by a plain reference into one
//! process-wide table that holds every distinct thread state once ([`Interner`]), as LTSmin's
//! tree compression does. Copying a state then copies references and writes nothing that other
//! workers read: with reference-counted thread states (`Arc`), every successor incremented the
//! count of each of its thread states and every duplicate successor decremented them again, and
//! a thread state that has not moved is held by much of the frontier, so 16 cores wrote the
//! same cache lines (issue 24 point 5; docs/performance.md).
//!
//! A transition changes one or a few thread states in place ([`Shared::make_mut`], through
//! `exec::Touched::mark`): such a thread state is *local* to the successor being built (copy on
//! write, as before), and [`Shared::interned`] looks it up in the table, or adds it, once the
//! successor is finished. The random schedules step one state in place and never intern.
//!
//! Nothing observable depends on where a value sits in the table or when it was added: a
//! thread state hashes, compares and orders by its value (two interned references are equal
//! exactly when they are the same reference, since the table holds each value once). The
//! table is never emptied (its entries are `'static`, so no `unsafe` is needed); what one
//! search has used of it is counted in that search's memory estimate ([`UsedEntries`]), which
//! depends only on the set of values the search reached, not on which search of the process
//! added them first, nor on the number of cores.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// A value with its fingerprint, computed once.
#[derive(Clone, Debug)]
pub struct Entry<T> {
    value: T,
    hash: OnceLock<u64>,
}

/// A value that can be hash-consed: its process-wide table, and its size for the memory
/// estimate.
pub trait Intern: Clone + Eq + std::hash::Hash + Send + Sync + 'static {
    fn table() -> &'static Interner<Self>;
    /// Bytes the value owns beyond its inline size (its vectors), for the memory estimate.
    fn heap_bytes(&self) -> usize;
}

/// A thread state of a state (see the module's documentation).
pub struct Shared<T: 'static>(Repr<T>);

enum Repr<T: 'static> {
    /// In the process-wide table: immutable, held by reference.
    Interned(&'static Entry<T>),
    /// Made or changed by the transition that built this state, copied on write.
    Local(Arc<Entry<T>>),
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(match &self.0 {
            Repr::Interned(e) => Repr::Interned(e),
            Repr::Local(a) => Repr::Local(a.clone()),
        })
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.entry().value.fmt(f)
    }
}

impl<T> Shared<T> {
    fn entry(&self) -> &Entry<T> {
        match &self.0 {
            Repr::Interned(e) => e,
            Repr::Local(a) => a,
        }
    }

    /// The same value by the same reference (then equal without comparing).
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        std::ptr::eq(a.entry(), b.entry())
    }

    /// Whether the value is in the process-wide table.
    pub fn is_interned(this: &Self) -> bool {
        matches!(this.0, Repr::Interned(_))
    }
}

impl<T: Clone + std::hash::Hash> Shared<T> {
    pub fn new(value: T) -> Self {
        Shared(Repr::Local(Arc::new(Entry {
            value,
            hash: OnceLock::new(),
        })))
    }

    /// The value, to be changed: copied first if it is interned or another state shares it;
    /// its cached hash is dropped.
    pub fn make_mut(this: &mut Self) -> &mut T {
        if let Repr::Interned(e) = this.0 {
            this.0 = Repr::Local(Arc::new(Entry {
                value: e.value.clone(),
                hash: OnceLock::new(),
            }));
        }
        let Repr::Local(a) = &mut this.0 else {
            unreachable!("made local above")
        };
        let inner = Arc::make_mut(a);
        inner.hash.take();
        &mut inner.value
    }

    /// The value's fingerprint, computed once per value.
    pub fn cached_hash(&self) -> u64 {
        let e = self.entry();
        *e.hash.get_or_init(|| crate::explore::fingerprint(&e.value))
    }
}

impl<T: Intern> Shared<T> {
    /// The same value, by reference into the process-wide table (added there if new); `used`
    /// notes it for the search's memory estimate.
    pub fn interned(self, used: &UsedEntries<T>) -> Self {
        match self.0 {
            Repr::Interned(_) => self,
            Repr::Local(a) => {
                let h = *a.hash.get_or_init(|| crate::explore::fingerprint(&a.value));
                let e = T::table().get_or_insert(h, a);
                used.note(h, e);
                Shared(Repr::Interned(e))
            }
        }
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.entry().value
    }
}

impl<T: Clone + std::hash::Hash> std::hash::Hash for Shared<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.cached_hash());
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            // The table holds each value once.
            (Repr::Interned(a), Repr::Interned(b)) => std::ptr::eq(*a, *b),
            _ => Shared::ptr_eq(self, other) || self.entry().value == other.entry().value,
        }
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T: Ord> PartialOrd for Shared<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: Ord> Ord for Shared<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if Shared::ptr_eq(self, other) {
            std::cmp::Ordering::Equal
        } else {
            self.entry().value.cmp(&other.entry().value)
        }
    }
}

/// Locks each table is split into: many more than cores, so that two workers rarely want the
/// same one. A value's shard is chosen by bits of its hash that the shard's own hash table
/// does not use for its buckets (low bits) or its control bytes (the top 7).
const SHARDS: usize = 256;

fn shard_of(h: u64) -> usize {
    (h >> 32) as usize % SHARDS
}

fn lock<S>(m: &Mutex<S>) -> MutexGuard<'_, S> {
    // A shard holds only complete entries: a panic elsewhere leaves it usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The process-wide table of interned values: each distinct value once, never removed.
pub struct Interner<T: 'static> {
    shards: Box<[Mutex<hashbrown::HashTable<&'static Entry<T>>>]>,
}

impl<T: Intern> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(hashbrown::HashTable::new()))
                .collect(),
        }
    }
}

impl<T: Intern> Interner<T> {
    /// The table's entry equal to `local`'s value (whose fingerprint is `h`), added if new.
    fn get_or_insert(&self, h: u64, local: Arc<Entry<T>>) -> &'static Entry<T> {
        let mut shard = lock(&self.shards[shard_of(h)]);
        if let Some(e) = shard.find(h, |e| e.value == local.value) {
            return e;
        }
        let value = Arc::try_unwrap(local)
            .map(|e| e.value)
            .unwrap_or_else(|a| a.value.clone());
        let e: &'static Entry<T> = Box::leak(Box::new(Entry {
            value,
            hash: OnceLock::from(h),
        }));
        shard.insert_unique(h, e, |e| *e.hash.get().expect("interned with its hash"));
        e
    }
}

/// The entries of the process-wide table that one search has used, and their bytes: the
/// search's memory estimate counts a thread state once, here, however many of its states
/// hold it. The set of values a search reaches does not depend on timing, so neither does
/// this count once every worker is done with a round.
pub struct UsedEntries<T: 'static> {
    shards: Box<[Mutex<hashbrown::HashTable<&'static Entry<T>>>]>,
    bytes: AtomicU64,
}

impl<T: Intern> Default for UsedEntries<T> {
    fn default() -> Self {
        UsedEntries {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(hashbrown::HashTable::new()))
                .collect(),
            bytes: AtomicU64::new(0),
        }
    }
}

impl<T: Intern> UsedEntries<T> {
    fn note(&self, h: u64, e: &'static Entry<T>) {
        let mut shard = lock(&self.shards[shard_of(h)]);
        if shard.find(h, |&u| std::ptr::eq(u, e)).is_none() {
            shard.insert_unique(h, e, |u| *u.hash.get().expect("interned with its hash"));
            // The entry (its allocation, with the allocator's overhead) and a slot in each
            // table (the process-wide one and this one: a pointer and a control byte, at a
            // load factor of 7/8 and up to twice the entries after growing).
            const ALLOC: usize = 16;
            const SLOT: usize = 9 * 8 / 7 * 2;
            let n = std::mem::size_of::<Entry<T>>() + ALLOC + 2 * SLOT + e.value.heap_bytes();
            self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    /// Bytes of the entries used so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// How many distinct values were used so far.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::{Intern, Interner, Shared, UsedEntries};
    use crate::explore::fingerprint;

    impl Intern for Vec<u32> {
        fn table() -> &'static Interner<Self> {
            static TABLE: std::sync::LazyLock<Interner<Vec<u32>>> =
                std::sync::LazyLock::new(Default::default);
            &TABLE
        }
        fn heap_bytes(&self) -> usize {
            self.len() * 4
        }
    }

    #[test]
    fn interning_keeps_one_entry_per_value_and_each_search_counts_what_it_used() {
        let used = UsedEntries::default();
        // Values no other test interns (the table is the process's).
        let a = Shared::new(vec![7001u32, 2]).interned(&used);
        let b = Shared::new(vec![7001u32, 2]).interned(&used);
        assert!(Shared::is_interned(&a));
        assert!(Shared::ptr_eq(&a, &b), "one entry per value");
        assert_eq!(used.len(), 1);
        let one = used.bytes();
        assert!(one > 0);
        // A local value equal to an interned one is equal, hashes and orders alike.
        let local = Shared::new(vec![7001u32, 2]);
        assert!(!Shared::is_interned(&local));
        assert_eq!(local, a);
        assert_eq!(fingerprint(&local), fingerprint(&a));
        assert_eq!(local.cmp(&a), std::cmp::Ordering::Equal);
        // Changing an interned value copies it; the table's entry stays as it was.
        let mut c = a.clone();
        Shared::make_mut(&mut c).push(3);
        assert!(!Shared::is_interned(&c));
        assert_eq!(*a, vec![7001, 2]);
        assert_ne!(c, a);
        assert!(a < c);
        let c = c.interned(&used);
        assert!(Shared::is_interned(&c));
        assert_ne!(c, a, "distinct interned values are unequal");
        assert_eq!(used.len(), 2);
        assert!(used.bytes() > one);
        // Another search that reaches a value counts it too, whichever search added it first.
        let other = UsedEntries::default();
        let d = Shared::new(vec![7001u32, 2]).interned(&other);
        assert!(Shared::ptr_eq(&d, &a));
        assert_eq!(other.bytes(), one);
        assert_eq!(other.len(), 1);
    }
}
