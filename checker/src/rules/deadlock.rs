//! `deadlock` (PC100).

super::declare_rule! {
    /// # What
    ///
    /// Some thread can never finish: it is blocked in a wait (mbarrier parity or token wait,
    /// `arrive_and_wait`, `syncthreads`, a named barrier, a pipeline acquire/wait, `wait_group`)
    /// whose phase, barrier or copy can no longer complete, because every thread or async operation
    /// that could still arrive, complete bytes or reach the barrier has exited, finished or is
    /// itself blocked. The report names who waits for whom and what is missing (`1 arrival and 1024
    /// bytes missing`). Where the root cause is plain, the headline names it first: a thread that
    /// ran `exit` while a barrier it could still have arrived on counts it (`t2 exited without
    /// arrive_drop on `bar`, which still counts it: t0..t1 wait on `bar` phase 1 forever`), or a
    /// pipeline `quit` that left the waited phase short (then `after-quit` is reported at the
    /// `quit` too).
    ///
    /// # Why
    ///
    /// On the GPU this is a hang: the kernel never returns and the whole process (or the CI job)
    /// times out, usually with no hint of which barrier is short. The classic causes are a thread
    /// that leaves a barrier loop without `arrive_drop` (its arrival is still counted in every
    /// later phase), an `expect_tx` whose bytes never arrive, an init count larger than the number
    /// of threads that really arrive, a wait on a parity one phase too far, and a `syncthreads`
    /// that some thread never reaches.
    ///
    /// # Example
    ///
    /// `corpus/hazards/deadlock/fail.phase`:
    ///
    /// ```phase
    /// protocol deadlock_fail
    ///
    /// param NT = 3
    /// param N = 3
    /// block NT
    ///
    /// barrier bar
    ///
    /// if tid == 0 {
    ///   init bar, NT
    /// }
    /// syncthreads
    ///
    /// for i in 0..N {
    ///   if tid == NT - 1 && i == 1 {
    ///     exit
    ///   }
    ///   let t = arrive bar
    ///   wait bar token t
    /// }
    ///
    /// expect deadlock
    /// expect deadlock deadlock
    /// ```
    ///
    /// # Fix
    ///
    /// The leaving thread drops itself from the barrier first (`arrive_drop`, i.e.
    /// `bar.arrive_and_drop()`): it fulfils its arrival in the current phase and lowers the
    /// expected count of all later phases.
    ///
    /// `corpus/hazards/deadlock/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol deadlock_pass
    ///
    /// param NT = 3
    /// param N = 3
    /// block NT
    ///
    /// barrier bar
    ///
    /// if tid == 0 {
    ///   init bar, NT
    /// }
    /// syncthreads
    ///
    /// for i in 0..N {
    ///   if tid == NT - 1 && i == 1 {
    ///     arrive_drop bar
    ///     exit
    ///   }
    ///   let t = arrive bar
    ///   wait bar token t
    /// }
    ///
    /// expect ok
    /// expect ok with NT = 4
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15.6 *Phase Completion of the mbarrier object*:
    ///
    /// > "An mbarrier object completes the current phase when all of the following conditions are
    /// > met:
    /// > - The count of the pending arrivals has reached zero.
    /// > - The tx-count has reached zero."
    ///
    /// PTX ISA 9.1, §9.7.13.15.14 *mbarrier.arrive_drop*:
    ///
    /// > "A thread that wants to either exit or opt out of participating in the arrive-on operation
    /// > can use `mbarrier.arrive_drop` to drop itself from the `mbarrier`."
    ///
    /// PTX ISA 9.1, §9.7.13.1 *bar, barrier*:
    ///
    /// > "In addition to signaling its arrival at the barrier, the `barrier{.cta}.red` and
    /// > `barrier{.cta}.sync` instructions causes executing thread to wait for non-exited threads
    /// > of all other warps participating in the barrier to arrive."
    ///
    /// Also: semantics.md §0.1 (DL), §2.5, §3.2 B8, §8 item 5; CUDA Programming Guide,
    /// *Asynchronous Barriers > Early Exit*.
    code: "PC100",
    name: "deadlock",
    class: Deadlock,
    severity: Error,
    summary: "some thread can never finish: it waits on a phase, barrier or copy that can no longer complete",
}
