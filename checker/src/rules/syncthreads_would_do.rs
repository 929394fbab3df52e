//! `syncthreads-would-do` (PC403).

super::declare_rule! {
    /// # What
    ///
    /// An mbarrier or `cuda::barrier` initialised for the whole block that every thread uses only
    /// as arrive-then-wait at once (`arrive_and_wait`, or an arrive directly followed by its wait),
    /// with nothing between and no transaction bytes, async arrivals or drops.
    ///
    /// # Why
    ///
    /// Then the barrier does what `__syncthreads()` (`bar.sync 0`) does in one instruction, at the
    /// price of a shared-memory object, its init and bootstrap, and a polling wait. Split
    /// arrive/wait pays off only when independent work goes between the arrive and the wait, or
    /// when the barrier tracks something `syncthreads` cannot (bytes, async copies, a subset of
    /// threads).
    ///
    /// # Example
    ///
    /// `corpus/hazards/syncthreads-would-do/fail.phase`:
    ///
    /// ```phase
    /// protocol syncthreads_would_do_fail
    ///
    /// param NT = 3
    /// param ITERS = 2
    /// block NT
    ///
    /// barrier bar
    ///
    /// if tid == 0 {
    ///   init bar, NT
    /// }
    /// syncthreads
    /// for i in 0..ITERS {
    ///   let t = arrive bar
    ///   wait bar token t
    /// }
    ///
    /// expect warning syncthreads-would-do
    /// expect ok
    /// ```
    ///
    /// # Fix
    ///
    /// Put the independent work between the arrive and the wait (or use `syncthreads`).
    ///
    /// `corpus/hazards/syncthreads-would-do/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol syncthreads_would_do_pass
    ///
    /// param NT = 3
    /// param ITERS = 2
    /// block NT
    ///
    /// barrier bar
    ///
    /// if tid == 0 {
    ///   init bar, NT
    /// }
    /// syncthreads
    /// for i in 0..ITERS {
    ///   let t = arrive bar
    ///   compute                     # independent work overlaps the other arrivals
    ///   wait bar token t
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// Not an ISA rule: a cost lint resting on the Programming Guide's advice. CUDA C++ Programming
    /// Guide 13.1, §10.26.3 *Bootstrap Initialization, Expected Arrival Count, and Participation*:
    ///
    /// > "If the intention of the user is to synchronize a full thread block or a full warp we
    /// > recommend using `__syncthreads()` and `__syncwarp(mask)` respectively for performance
    /// > reasons."
    ///
    /// Also: semantics.md §0.1 (PERF).
    code: "PC403",
    name: "syncthreads-would-do",
    class: Perf,
    severity: Warning,
    summary: "a whole-block async barrier used like syncthreads (every thread arrives and waits at once)",
}
