//! `unobserved-phase` (PC207).

super::declare_rule! {
    /// # What
    ///
    /// An arrive on a barrier whose previous phase has not been observed complete by any successful
    /// wait (R-CONSUME): the barrier is about to advance a second time while nobody has seen the
    /// first completion.
    ///
    /// # Why
    ///
    /// PTX requires, for every phase, at least one `test_wait`/`try_wait` returning true before any
    /// arrive-on of the following phase. Without it the barrier can run ahead of its waiters, and a
    /// waiter aliases onto the wrong phase (it sees the parity it expects, but of a later phase):
    /// silent wrong results or a hang. It is the signature of missing back-pressure: a producer
    /// without an empty barrier, or a split arrive/wait loop whose wait was dropped.
    ///
    /// It is also what an `init` count that is too low looks like: `init empty[s], 2` while 8
    /// warps release each stage completes phase 0 after the first two arrivals, and the third
    /// warp's arrival lands in phase 1, which nobody observed. When the trace shows that (a
    /// phase completed with the arrivals of only some of the threads that run one `arrive` in
    /// that round), the finding's headline says so first, naming the `init`, the count, how
    /// many threads arrive and which ones came late; the fix is then the count (`init empty[s],
    /// 8`), not back-pressure.
    ///
    /// # Example
    ///
    /// `corpus/hazards/unobserved-phase/fail.phase`:
    ///
    /// ```phase
    /// protocol unobserved_phase_fail
    ///
    /// param NT = 2
    /// param ITERS = 3
    /// block NT
    ///
    /// mbarrier bar
    ///
    /// if tid == 0 {
    ///   init bar, NT
    /// }
    /// syncthreads
    /// for i in 0..ITERS {
    ///   arrive bar
    ///   compute
    /// }
    ///
    /// expect ub unobserved-phase
    /// ```
    ///
    /// # Fix
    ///
    /// Observe every phase before arriving on the next one: the loop waits for its phase, or the
    /// producer waits on an empty barrier that the consumers release after their wait.
    ///
    /// `corpus/hazards/unobserved-phase/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol unobserved_phase_pass
    ///
    /// param NT = 2
    /// param ITERS = 3
    /// block NT
    ///
    /// mbarrier bar
    ///
    /// if tid == 0 {
    ///   init bar, NT
    /// }
    /// syncthreads
    /// for i in 0..ITERS {
    ///   arrive bar
    ///   compute
    ///   wait bar parity i % 2
    /// }
    ///
    /// expect ok
    /// expect ok with NT = 3
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15.4 *Phase of the mbarrier object*:
    ///
    /// > "For each phase of the mbarrier object, at least one test_wait or try_wait operation must
    /// > be performed which returns `True` for `waitComplete` before an arrive-on operation in the
    /// > subsequent phase."
    ///
    /// CUDA C++ Programming Guide 13.1, §10.26.4 *A Barrier’s Phase: Arrival, Countdown,
    /// Completion, and Reset*:
    ///
    /// > "After barrier initialization, if a thread’s call to `bar.arrive()` causes the countdown
    /// > to reach zero then a call to `bar.wait(std::move(token))` must happen before the barrier
    /// > can be reused for a subsequent call to `bar.arrive()`."
    ///
    /// Also: semantics.md §1.4 R-CONSUME, §3.2 B4, B6.
    code: "PC207",
    name: "unobserved-phase",
    class: Ub,
    severity: Error,
    summary: "an arrive on the next phase before any wait observed the previous phase complete (R-CONSUME)",
}
