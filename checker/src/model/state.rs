//! The state of the model: plain, small, hashable data (no hash maps, no ghost clocks).
//!
//! A thread is its program counter, its locals and a little protocol state (cp.async and bulk
//! groups, pipeline counters, per-barrier phase tracking, race flags). Everything that is
//! shared lives in [`State`] per instance. Thread ids inside the shared part (`Bar::init_by`,
//! events) are global thread indices; [`super::symmetry`] renames them when it reorders
//! interchangeable threads.

/// Thread status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// At `pc`, a visible operation (enabled or blocked: see `Model::enabled`).
    Ready,
    /// Arrived at a rendezvous at `pc` and waiting for it to complete.
    Sync(SyncKind),
    /// Ran `exit`.
    Exited,
    /// Ran off the end of the kernel.
    Finished,
}

impl Mode {
    pub fn live(self) -> bool {
        !matches!(self, Mode::Exited | Mode::Finished)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SyncKind {
    /// `syncthreads` (`id` 0, count = block) or `bar_sync id, count`.
    Named { id: u8 },
    /// `syncwarp`.
    Warp,
    /// `elect { }` rendezvous.
    Elect,
    /// `cluster_sync` (arrived, waiting for the cluster phase to advance).
    Cluster,
}

/// What kind of access a race flag remembers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccessKind {
    /// Generic-proxy read (`read`, `load`).
    Read,
    /// Generic-proxy write (`write`, `store`, completed `cp_async`).
    Write,
    /// Async-proxy read (`mma`, `tma_store` source).
    AsyncRead,
    /// Async-proxy write (TMA landing).
    AsyncWrite,
    /// Generic-proxy write of this thread's part of the instance (`write part`).
    PartWrite,
}

impl AccessKind {
    pub fn is_write(self) -> bool {
        matches!(
            self,
            AccessKind::Write | AccessKind::AsyncWrite | AccessKind::PartWrite
        )
    }
    /// Whether accesses of these kinds by different agents to one instance conflict: one of
    /// them writes, unless both are part writes (each thread writes its own part).
    pub fn conflicts(self, other: AccessKind) -> bool {
        (self.is_write() || other.is_write())
            && !(self == AccessKind::PartWrite && other == AccessKind::PartWrite)
    }
    pub fn is_async(self) -> bool {
        matches!(self, AccessKind::AsyncRead | AccessKind::AsyncWrite)
    }
}

/// Release level reached since an access: 0 none, 1 cta, 2 cluster, 3 gpu, 4 sys.
pub type Level = u8;
pub const LVL_NONE: Level = 0;
pub const LVL_CTA: Level = 1;
pub const LVL_CLUSTER: Level = 2;
pub const LVL_GPU: Level = 3;
pub const LVL_SYS: Level = 4;

/// A past access of a thread that later accesses may still race with: some thread that may
/// still make a conflicting access (in its block, or in another block, kernel or domain that
/// can reach the buffer) is not ordered after it yet ([`Access::seen`]), or (generic accesses
/// to buffers that the async proxy also touches) no `fence_proxy_async` followed it yet.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    pub buf: u32,
    pub kind: AccessKind,
    /// Proxy fence: [`FENCE_NONE`], [`FENCE_OWN`] or [`FENCE_RELEASED`].
    pub fence: u8,
    /// A strong access (a flag's `store_release` / `load_acquire`): its scope; [`LVL_NONE`]
    /// for a weak one. Two strong accesses whose scopes include each other's thread are
    /// morally strong and never race (PTX "Conflict and Data-races").
    pub strong: Level,
    /// The statement that made it (instruction index in the thread's kernel).
    pub pc: u32,
    /// The key of its byte range (`bytes.rs`: the offset less the thread's own part), when
    /// the statement has one (`read X bytes OFF .. +LEN`); `None`: the whole instance.
    pub bytes: Option<i64>,
    /// The other threads that happen after it: those that acquired, with a morally strong
    /// acquire, a release of the accessing thread or of a thread already in this set, made
    /// after the access (PTX causality order is transitive whatever the scope of each link;
    /// each link must be morally strong). Threads of other blocks and kernels too.
    pub seen: ThreadSet,
    /// The threads in `seen` that ran `fence_proxy_async` after they were ordered after the
    /// access (a generic access to a buffer the async proxy also touches): their later async
    /// accesses meet it with the fence on the causality path but not in the accessing thread,
    /// the placement the PTX ISA leaves open (semantics.md §6.3, "Where the fence may stand").
    pub fenced_by: ThreadSet,
    /// Where the access was released by a thread that knows it (the accessing thread or one in
    /// `seen`), sorted: an acquire of such an object adds the acquirer to `seen`.
    pub pubs: Vec<Pub>,
}

/// Accesses sort by what they are before whom they are ordered: by [`Access::name_free`], then
/// by the set itself. So the order of a thread's kept accesses, and of threads that differ in
/// them, does not change when symmetry renames threads (renaming changes sets, not their sizes).
impl Ord for Access {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.name_free()
            .cmp(&other.name_free())
            .then_with(|| self.seen.cmp(&other.seen))
            .then_with(|| self.fenced_by.cmp(&other.fenced_by))
    }
}

impl PartialOrd for Access {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Access {
    /// Everything about the access but the names of the threads ordered after it (only how
    /// many there are): what a renaming of threads leaves unchanged.
    #[allow(clippy::type_complexity)]
    pub fn name_free(
        &self,
    ) -> (
        u32,
        AccessKind,
        u8,
        Level,
        u32,
        Option<i64>,
        u32,
        u32,
        &[Pub],
    ) {
        (
            self.buf,
            self.kind,
            self.fence,
            self.strong,
            self.pc,
            self.bytes,
            self.seen.len(),
            self.fenced_by.len(),
            &self.pubs,
        )
    }

    /// Does thread `t` (not the accessing thread) happen after this access?
    pub fn ordered_before(&self, t: u32) -> bool {
        self.seen.contains(t)
    }

    /// Everything `self` says about later accesses, `other` says too: it is ordered before no
    /// more threads, fenced no further, and published nowhere that `other` is not.
    pub fn subsumes(&self, other: &Access) -> bool {
        self.buf == other.buf
            && self.kind == other.kind
            && self.bytes == other.bytes
            && (self.bytes.is_none() || self.pc == other.pc)
            && self.strong == other.strong
            && self.fence <= other.fence
            && self.seen.is_subset(&other.seen)
            && self.fenced_by.is_subset(&other.fenced_by)
            && self
                .pubs
                .iter()
                .all(|p| other.pubs.iter().any(|q| q.covers(p)))
    }

    /// Is this access published into `obj` by a release that an acquire can see?
    pub fn published_in(&self, obj: SyncObj) -> bool {
        self.pubs.iter().any(|p| p.obj == obj && p.done)
    }

    /// Record a release `p` of a thread that knows this access. Returns whether anything
    /// changed: a publication that an existing one covers adds nothing, and one that the new
    /// one covers goes.
    pub fn publish(&mut self, p: Pub) -> bool {
        if self.pubs.iter().any(|q| q.covers(&p)) {
            return false;
        }
        self.pubs.retain(|q| !p.covers(q));
        let i = self.pubs.binary_search(&p).unwrap_or_else(|i| i);
        self.pubs.insert(i, p);
        true
    }

    /// The releases into `obj` became visible (its phase completed).
    pub fn complete(&mut self, obj: SyncObj) {
        let mut changed = false;
        for p in self.pubs.iter_mut().filter(|p| p.obj == obj && !p.done) {
            p.done = true;
            changed = true;
        }
        if changed {
            let pubs = std::mem::take(&mut self.pubs);
            for p in pubs {
                self.publish(p);
            }
        }
    }
}

/// A synchronization object that a release goes into and an acquire comes out of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SyncObj {
    /// An mbarrier instance: a wait that returns acquires the releases of every completed phase.
    Bar(u32),
    /// A named barrier (`block * 16 + id`): one use joins the releases of its arrivals into
    /// the threads that `bar_sync` in that use; the next use starts empty.
    Named(u32),
    /// A kernel's cluster barrier.
    Cluster(u32),
    /// A global flag (`store_release` / `load_acquire`).
    Flag(u32),
}

impl SyncObj {
    /// A number that orders objects as `Ord` does (the variant, then its index), quicker to
    /// compare.
    pub fn key(self) -> u64 {
        let (variant, i) = match self {
            SyncObj::Bar(i) => (0, i),
            SyncObj::Named(i) => (1, i),
            SyncObj::Cluster(i) => (2, i),
            SyncObj::Flag(i) => (3, i),
        };
        (variant << 32) | u64::from(i)
    }
}

/// A release of a kept access into a synchronization object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pub {
    pub obj: SyncObj,
    /// The block of the releasing thread: an acquire synchronizes with the release only if
    /// both scopes include the other thread (PTX "Morally strong operations"), which depends
    /// on where the two threads are.
    pub from: u32,
    /// The release's scope.
    pub scope: Level,
    /// The release is visible to acquires: the mbarrier phase or cluster-barrier phase it went
    /// into completed (a flag's release is visible at once; a named barrier's pending releases
    /// are handed over when its use completes).
    pub done: bool,
}

impl Pub {
    /// Every acquire that synchronizes with `other` synchronizes with `self` too.
    pub fn covers(&self, other: &Pub) -> bool {
        self.obj == other.obj
            && self.from == other.from
            && self.scope >= other.scope
            && (self.done || !other.done)
    }
}

/// A set of threads (global indices) as a bitset with no trailing zero words, so that equal sets
/// are equal values.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadSet(Vec<u64>);

impl ThreadSet {
    pub fn contains(&self, t: u32) -> bool {
        self.0
            .get((t / 64) as usize)
            .is_some_and(|w| w & (1 << (t % 64)) != 0)
    }

    /// Add `t`; returns whether it was new.
    pub fn insert(&mut self, t: u32) -> bool {
        let i = (t / 64) as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        let bit = 1u64 << (t % 64);
        let new = self.0[i] & bit == 0;
        self.0[i] |= bit;
        new
    }

    pub fn is_subset(&self, other: &ThreadSet) -> bool {
        self.0
            .iter()
            .enumerate()
            .all(|(i, w)| w & !other.0.get(i).copied().unwrap_or(0) == 0)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn intersects(&self, other: &ThreadSet) -> bool {
        self.0.iter().zip(other.0.iter()).any(|(a, b)| a & b != 0)
    }

    pub fn len(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    /// Is some thread of `self` other than `except` missing from `seen`?
    pub fn any_outside(&self, seen: &ThreadSet, except: u32) -> bool {
        self.0.iter().enumerate().any(|(i, &w)| {
            let mut w = w & !seen.0.get(i).copied().unwrap_or(0);
            if i == (except / 64) as usize {
                w &= !(1u64 << (except % 64));
            }
            w != 0
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            let mut rest = w;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let b = rest.trailing_zeros();
                    rest &= rest - 1;
                    i as u32 * 64 + b
                })
            })
        })
    }

    /// The threads that a renaming `inv` (`inv[t]` = the new name of `t`) moves.
    pub fn moved_by(inv: &[u32]) -> ThreadSet {
        let mut out = ThreadSet::default();
        for (t, &n) in inv.iter().enumerate() {
            if n as usize != t {
                out.insert(t as u32);
            }
        }
        out
    }

    /// The set renamed by `inv`, where `moved` holds every thread that `inv` moves (so it also
    /// holds their new names); `None` when renaming leaves the set as it is.
    pub fn renamed_within(&self, moved: &ThreadSet, inv: &[u32]) -> Option<ThreadSet> {
        if !self.intersects(moved) {
            return None;
        }
        let mut out = self.clone();
        for (i, m) in moved.0.iter().enumerate() {
            if let Some(w) = out.0.get_mut(i) {
                *w &= !m;
            }
        }
        for t in moved.iter() {
            if self.contains(t) {
                out.insert(inv[t as usize]);
            }
        }
        // Trailing empty words would make equal sets compare unequal.
        while out.0.last() == Some(&0) {
            out.0.pop();
        }
        (out != *self).then_some(out)
    }

    pub fn heap_words(&self) -> usize {
        self.0.len()
    }
}

/// No `fence_proxy_async` of the thread followed the access.
pub const FENCE_NONE: u8 = 0;
/// A `fence_proxy_async` of the thread followed it: the thread's own later async accesses are
/// ordered after the fence (program order), other threads' are not yet.
pub const FENCE_OWN: u8 = 1;
/// The thread released after that fence: the fence reaches the threads that acquire from it.
pub const FENCE_RELEASED: u8 = 2;

/// Per-(thread, barrier) phase tracking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BarTrack {
    pub bar: u32,
    /// The latest phase whose completion this thread observed with a successful parity wait
    /// (`-1` = the virtual phase before init), or `i64::MIN` for none.
    pub last_obs: i64,
    /// The phase of this thread's latest arrive not yet followed by any completed wait.
    pub arrived_in: i64,
    /// `last_obs` is fresh: since observing it the thread did nothing but waits and tests
    /// (no arrive, no access, no other operation), so waiting on that phase again only
    /// re-confirms it (semantics.md §2.8, "Re-waiting").
    pub fresh: bool,
}

pub const NONE: i64 = i64::MIN;

/// An in-flight `cp.async` write of this thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpWrite {
    pub buf: u32,
    /// Issue sequence number (per thread).
    pub seq: u32,
    /// Commit group (`committed` count at issue: the open group).
    pub group: u32,
    pub pc: u32,
    /// Proxy fence of the issuing thread since the issue (as [`Access::fence`]): cp.async
    /// writes go through the generic proxy (semantics.md §6.3).
    pub fence: u8,
}

/// Per-thread state of one pipeline instance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PipeThread {
    pub head: u32,
    pub tail: u32,
    /// Block pipeline: parity of the next `consumed[head]` wait (starts at 1).
    pub consumed_parity: u8,
    /// Block pipeline: parity of the next `produced[tail]` wait.
    pub produced_parity: u8,
    /// 0 unknown, 1 producer, 2 consumer, 3 both (unified).
    pub role: u8,
    pub quit: bool,
    /// The `quit` statement (instruction index), once `quit`. A thread that quit keeps this
    /// entry when it finishes: the deadlock analysis reads which phases its quit left short.
    pub quit_pc: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Thread {
    pub pc: u32,
    pub mode: Mode,
    pub locals: Box<[i64]>,
    pub tracks: Vec<BarTrack>,
    pub acc: Vec<Access>,
    pub cp: Vec<CpWrite>,
    pub cp_seq: u32,
    pub cp_committed: u32,
    /// In-flight `tma_store` source reads: (buffer, bulk group, pc).
    pub bulk: Vec<(u32, u32, u32)>,
    pub bulk_committed: u32,
    /// (pipeline instance, state).
    pub pipes: Vec<(u32, PipeThread)>,
    /// Bit i: arrived (`bar_arrive`) on named barrier i, not yet completed.
    pub named_arrived: u16,
    /// Cluster barrier phase this thread arrived in (`cluster_arrive`), waiting for `cluster_wait`.
    pub cluster_token: Option<u32>,
    /// `arrive_and_wait`: arrived on (barrier, phase), now waiting for that phase.
    pub aw: Option<(u32, u32)>,
    /// This lane is its warp's elected leader: an `elect` of the warp chose it, and no lane of
    /// the warp has exited or finished since. Later `elect`s of the warp pick it again ("the
    /// same leader thread is elected for the same membermask every time", [PTX] `elect.sync`);
    /// an exit clears it for every lane of the warp, and the next `elect` chooses again
    /// (semantics.md §7 W3). Part of the thread's state, so a permutation of lanes moves it
    /// with the lane.
    pub leads: bool,
}

/// One mbarrier (or `cuda::barrier`, or pipeline stage barrier) instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bar {
    pub valid: bool,
    pub phase: u32,
    pub pending: i32,
    pub expected: i32,
    pub tx: i32,
    /// R-CONSUME: the completed phase was observed by a successful wait.
    pub consumed: bool,
    /// 0: not initialized; 1: only the initializer is ordered after the init; 2: the block;
    /// 3: the cluster.
    pub vis: u8,
    /// Thread that ran the init (global index), `u32::MAX` when none.
    pub init_by: u32,
    /// Invalidated by the last `quit` of a block pipeline.
    pub quit_inval: bool,
}

/// Asynchronous events that fire at any later step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Event {
    /// A TMA copy lands in one destination block: async write of `buf`, then `complete_tx`.
    Tma {
        buf: u32,
        bar: u32,
        bytes: i32,
        issuer: u32,
        pc: u32,
        /// The key of the bytes it writes (`tma X bytes OFF .. +LEN`; `bytes.rs`), the same in
        /// every block of a multicast; `None`: the whole instance.
        key: Option<i64>,
    },
    /// `cp_async_arrive` (or a pipeline commit's): after the thread's cp.async with
    /// `seq < upto` complete, an arrive-on of `bar`.
    CpArrive {
        thread: u32,
        bar: u32,
        upto: u32,
        pc: u32,
    },
}

/// Shared bookkeeping of one block's named barriers (16 ids): non-blocking arrivals and the
/// count of the current use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Named {
    pub arrived: u16,
    /// Thread count of the current use (0 = not in use).
    pub count: u16,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct State {
    pub threads: Vec<Shared<Thread>>,
    pub bars: Vec<Bar>,
    /// Per block (kernel-major), 16 named barriers each.
    pub named: Vec<Named>,
    /// Per kernel: the cluster barrier's phase.
    pub cluster_phase: Vec<u32>,
    /// Per global instance: a `store_release` happened.
    pub released: Vec<bool>,
    /// Per block pipeline instance: threads that have not quit.
    pub pipe_refs: Vec<u32>,
    /// Sorted.
    pub events: Vec<Event>,
}

impl State {
    /// Rough heap + inline size, for the memory limit. An interned thread state
    /// ([`Shared::interned`]) counts as its reference only: the search counts the table's
    /// entries it used once ([`super::shared::UsedEntries`]), however many states hold them.
    /// A thread state that is not interned (a state built outside the exhaustive search)
    /// counts whole.
    pub fn approx_bytes(&self) -> usize {
        let mut n = std::mem::size_of::<State>();
        for t in &self.threads {
            n += std::mem::size_of::<Shared<Thread>>();
            if !Shared::is_interned(t) {
                // The allocation behind the `Arc` (its counts, the thread and its cached hash).
                n += 16
                    + std::mem::size_of::<Thread>()
                    + 8
                    + super::shared::Intern::heap_bytes(&**t);
            }
        }
        n += self.bars.len() * std::mem::size_of::<Bar>();
        n += self.named.len() * 4 + self.cluster_phase.len() * 4 + self.released.len();
        n += self.events.len() * std::mem::size_of::<Event>();
        n
    }
}

impl super::shared::Intern for Thread {
    fn table() -> &'static super::shared::Interner<Thread> {
        static TABLE: std::sync::LazyLock<super::shared::Interner<Thread>> =
            std::sync::LazyLock::new(Default::default);
        &TABLE
    }

    /// One allocation per non-empty vector, each with the allocator's own overhead.
    fn heap_bytes(&self) -> usize {
        const ALLOC: usize = 16;
        let heap = |len: usize, size: usize| if len == 0 { 0 } else { len * size + ALLOC };
        heap(self.locals.len(), 8)
            + heap(self.tracks.len(), std::mem::size_of::<BarTrack>())
            + heap(self.acc.len(), std::mem::size_of::<Access>())
            + self
                .acc
                .iter()
                .map(|a| {
                    heap(a.seen.heap_words(), 8) + heap(a.pubs.len(), std::mem::size_of::<Pub>())
                })
                .sum::<usize>()
            + heap(self.cp.len(), std::mem::size_of::<CpWrite>())
            + heap(self.bulk.len(), 12)
            + heap(self.pipes.len(), 16)
    }
}

pub use super::shared::Shared;

#[cfg(test)]
mod tests {
    use super::Shared;
    use crate::explore::fingerprint;

    #[test]
    fn shared_values_hash_by_content_and_forget_their_hash_when_changed() {
        let a = Shared::new(vec![1u32, 2, 3]);
        let b = Shared::new(vec![1u32, 2, 3]);
        // Separate allocations with equal content: equal, same fingerprint.
        assert!(!Shared::ptr_eq(&a, &b));
        assert_eq!(a, b);
        assert_eq!(fingerprint(&a), fingerprint(&b));
        let before = fingerprint(&a);
        // A copy shares the value until it is changed; the change does not leak back.
        let mut c = a.clone();
        assert!(Shared::ptr_eq(&a, &c));
        Shared::make_mut(&mut c).push(4);
        assert!(!Shared::ptr_eq(&a, &c));
        assert_eq!(*a, vec![1, 2, 3]);
        assert_ne!(fingerprint(&c), before);
        assert_eq!(fingerprint(&a), before);
        assert!(a < c);
        // A state of shared parts fingerprints through the parts' cached hashes (re-entrant).
        assert_eq!(
            fingerprint(&vec![a.clone(), c.clone()]),
            fingerprint(&vec![b, c])
        );
    }

    #[test]
    fn renaming_a_thread_set_touches_only_moved_threads_and_keeps_sets_canonical() {
        use super::ThreadSet;
        let set = |ts: &[u32]| {
            let mut s = ThreadSet::default();
            for &t in ts {
                s.insert(t);
            }
            s
        };
        let naive = |s: &ThreadSet, inv: &[u32]| {
            set(&s.iter().map(|t| inv[t as usize]).collect::<Vec<_>>())
        };
        // 200 threads; 3 -> 130 -> 64 -> 3 rotate, everyone else stays.
        let mut inv: Vec<u32> = (0..200).collect();
        inv[3] = 130;
        inv[130] = 64;
        inv[64] = 3;
        let moved = ThreadSet::moved_by(&inv);
        assert_eq!(moved, set(&[3, 64, 130]));
        for ts in [
            &[][..],
            &[5, 6, 7],
            &[3, 64, 130, 199],
            &[3],
            &[130],
            &[64, 1],
            &[3, 64],
        ] {
            let s = set(ts);
            let want = naive(&s, &inv);
            match s.renamed_within(&moved, &inv) {
                None => assert_eq!(want, s, "{ts:?} was left as it is but renames"),
                Some(got) => {
                    assert_ne!(got, s, "{ts:?} reported changed but is not");
                    assert_eq!(got, want, "{ts:?}");
                }
            }
        }
        // {130} renames to {64}: the word of 130 goes, and the set equals one built directly.
        assert_eq!(set(&[130]).renamed_within(&moved, &inv), Some(set(&[64])));
    }
}
