//! `data-race` (PC300).

super::declare_rule! {
    /// # What
    ///
    /// Two accesses to one buffer by different threads (or by a thread and an asynchronous copy:
    /// TMA, cp.async, a TMA store reading its source), at least one of them a write, that are not
    /// ordered by happens-before.
    ///
    /// Cooperative tiles: `write part X` writes this thread's own part of `X` (a warp filling a
    /// tile, each lane its fragment). Part writes of one instance by different threads do not
    /// conflict with each other; a part write conflicts like any write with every read, every
    /// whole `write` and every async access of the instance by another thread. It is a
    /// generic-proxy write: a TMA store of the tile needs `fence_proxy_async` after it
    /// (`missing-proxy-fence`). See language.md, "Cooperative tiles: `write part`".
    ///
    /// # Why
    ///
    /// Only synchronisation orders memory: a release arrive and an acquire wait that observes it, a
    /// CTA barrier, a completed `wait_group`, a TMA completion observed through its mbarrier.
    /// Without it the reader may see old data, new data or a mix, and the write-after-read case
    /// lets a producer overwrite a stage that is still being read. Typical causes: reading before
    /// the wait on the full barrier, a producer that does not wait on the empty barrier, cp.async
    /// data used by another thread without a barrier after `wait_group`, and gpu-scope
    /// release/acquire between kernels in different memory synchronisation domains.
    ///
    /// # Example
    ///
    /// `corpus/hazards/data-race/fail.phase`:
    ///
    /// ```phase
    /// protocol data_race_fail
    ///
    /// block 2
    ///
    /// mbarrier full
    /// buffer data
    ///
    /// if tid == 0 {
    ///   init full, 1
    /// }
    /// syncthreads
    /// if tid == 0 {
    ///   write data
    ///   arrive full
    /// }
    /// if tid == 1 {
    ///   read data
    /// }
    ///
    /// expect race data-race
    /// ```
    ///
    /// # Fix
    ///
    /// Order the accesses: wait (acquire) on the barrier the writer arrives on (release) before
    /// reading, and release the buffer only after the last read.
    ///
    /// Two causes are named in the headline when the trace shows them: a wait whose parity
    /// selects the phase before the barrier's first (`wait full[s] parity ph ^ 1` with `ph = 0`:
    /// that phase counts as complete from init, so the reader passes at once, before the copy
    /// that completes phase 0), and an `init` count lower than the arrivals of one phase (the
    /// buffer is released after the first few consumers and refilled under the others).
    ///
    /// `corpus/hazards/data-race/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol data_race_pass
    ///
    /// block 2
    ///
    /// mbarrier full
    /// buffer data
    ///
    /// if tid == 0 {
    ///   init full, 1
    /// }
    /// syncthreads
    /// if tid == 0 {
    ///   write data
    ///   arrive full
    /// }
    /// if tid == 1 {
    ///   wait full parity 0
    ///   read data
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// Releases are cumulative: a release also carries the writes its thread has already
    /// observed. A write handed to thread 0 by a `syncthreads` and released by thread 0 at gpu
    /// scope is ordered before the other block or kernel that acquires it (a grid sync, CUTLASS's
    /// split-K semaphore); released at cta scope, it is not.
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §8.7.1 *Conflict and Data-races*:
    ///
    /// > "Two overlapping memory operations are said to conflict when at least one of them is a
    /// > write."
    ///
    /// > "Two conflicting memory operations are said to be in a data-race if they are not related
    /// > in causality order and they are not morally strong."
    ///
    /// PTX ISA 9.1, §8.9.5 *Causality Order* (its footnote):
    ///
    /// > "The transitivity of base causality order accounts for the “cumulativity” of synchronizing
    /// > operations."
    ///
    /// CUDA C++ Programming Guide 13.1, §6.2.7.1 *Memory Fence Interference*, of a system-scope
    /// release that follows a device-scope hand-off:
    ///
    /// > "The system-scope ordering provided by release and acquire of `b`, therefore, needs to
    /// > ensure not only writes issued from thread 2 itself are visible to thread 3, but also
    /// > writes from other threads that are visible to thread 2. This is known as cumulativity."
    ///
    /// CUDA C++ Programming Guide 13.1, §6.2.7.2 *Isolating Traffic with Domains*:
    ///
    /// > "When using domains, code must abide by the rule that **ordering or synchronization
    /// > between distinct domains on the same GPU requires system-scope fencing**. Within a
    /// > domain, device-scope fencing remains sufficient."
    ///
    /// Also: semantics.md §6.1, §6.2, §4.1, §6.5; PTX ISA §8.8 *Release and Acquire Patterns*,
    /// *mbarrier.test_wait / mbarrier.try_wait* (acquire), *cp.async.wait_group*; CUDA Programming
    /// Guide, *Memory Synchronization Domains*.
    code: "PC300",
    name: "data-race",
    class: Race,
    severity: Error,
    summary: "two accesses to one buffer, at least one a write, not ordered by happens-before",
}
