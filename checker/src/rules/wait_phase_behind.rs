//! `wait-phase-behind` (PC210).

super::declare_rule! {
    /// # What
    ///
    /// A parity wait for a phase two or more behind the barrier's current phase: the barrier
    /// advanced twice (or more) since this thread last observed it, so the parity it passes names
    /// the current, incomplete phase instead of the one it means.
    ///
    /// # Why
    ///
    /// `try_wait.parity` is defined only for the current phase and the one before it. Two phases
    /// behind, the parity is that of the current phase, so the thread waits for a later completion
    /// than it intended (over-wait): a hang if that completion needs this thread's own later
    /// arrival, otherwise a late wake after the buffers were already refilled. Three behind, it
    /// passes by luck. The root cause is missing back-pressure from this thread, for example a
    /// release done by one lane for the whole group (`arrive empty, NC`) before the group finished,
    /// or an `init` count lower than the arrivals of one phase (each phase completes early, and
    /// the barrier runs ahead of its waiters); the headline names the `init` when the trace shows
    /// a phase completed by only some of the threads that arrive at one statement in a round.
    ///
    /// # Example
    ///
    /// `corpus/hazards/wait-phase-behind/fail.phase`:
    ///
    /// ```phase
    /// protocol wait_phase_behind_fail
    ///
    /// param NC = 2
    /// param K = 3
    /// block NC + 1
    ///
    /// mbarrier full
    /// mbarrier empty
    /// buffer slot
    ///
    /// if tid == 0 {
    ///   init full, 1
    ///   init empty, NC
    /// }
    /// syncthreads
    /// role producer when tid == NC {
    ///   for k in 0..K {
    ///     wait empty parity (k % 2) ^ 1
    ///     write slot
    ///     arrive full
    ///   }
    /// }
    /// role consumer when tid < NC {
    ///   for k in 0..K {
    ///     wait full parity k % 2
    ///     read slot
    ///     if tid == 0 { arrive empty, NC }
    ///   }
    /// }
    ///
    /// expect ub wait-phase-behind
    /// ```
    ///
    /// # Fix
    ///
    /// Every consumer thread releases for itself (or the group synchronises before one lane
    /// releases for it), so the producer cannot refill and re-arm a stage while a consumer is still
    /// behind.
    ///
    /// `corpus/hazards/wait-phase-behind/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol wait_phase_behind_pass
    ///
    /// param NC = 2
    /// param K = 3
    /// block NC + 1
    ///
    /// mbarrier full
    /// mbarrier empty
    /// buffer slot
    ///
    /// if tid == 0 {
    ///   init full, 1
    ///   init empty, NC
    /// }
    /// syncthreads
    /// role producer when tid == NC {
    ///   for k in 0..K {
    ///     wait empty parity (k % 2) ^ 1
    ///     write slot
    ///     arrive full
    ///   }
    /// }
    /// role consumer when tid < NC {
    ///   for k in 0..K {
    ///     wait full parity k % 2
    ///     read slot
    ///     arrive empty
    ///   }
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15.16 *mbarrier.test_wait / mbarrier.try_wait*:
    ///
    /// > "The test_wait and try_wait operations are valid only for :
    /// > - the current incomplete phase, for which `waitComplete` returns `False`.
    /// > - the immediately preceding phase, for which `waitComplete` returns `True`."
    ///
    /// Also: semantics.md §2.8 (aliasing table, T = P-2), §1.4, W2.
    code: "PC210",
    name: "wait-phase-behind",
    class: Ub,
    severity: Error,
    summary: "a parity wait for a phase two or more behind the barrier's current phase (it waits for the wrong phase)",
}
