//! `inval-in-use` (PC203).

super::declare_rule! {
    /// # What
    ///
    /// `inval` while a thread may still wait on the barrier or operate on it, or while an
    /// asynchronous operation (a TMA complete-tx, a cp.async arrive-on) may still land on it.
    ///
    /// # Why
    ///
    /// After `mbarrier.inval` every operation on the object is undefined, including a wait that is
    /// already blocked and an async arrive-on that was issued before the inval. A thread that
    /// returns from its own wait does not know that the others have returned from theirs. The PTX
    /// examples put a `bar.sync` between the last use and the `inval` for exactly this reason.
    /// (Exiting the kernel without `inval` is fine; CUTLASS never invalidates.)
    ///
    /// # Example
    ///
    /// `corpus/hazards/inval-in-use/fail.phase`:
    ///
    /// ```phase
    /// protocol inval_in_use_fail
    ///
    /// param NT = 3
    /// block NT
    ///
    /// mbarrier bar
    ///
    /// if tid == 0 {
    ///   init bar, NT
    /// }
    /// syncthreads
    /// arrive bar
    /// wait bar parity 0
    /// if tid == 0 {
    ///   inval bar
    /// }
    ///
    /// expect ub inval-in-use
    /// ```
    ///
    /// # Fix
    ///
    /// A `syncthreads` between the last use of the barrier and the `inval`, and no async operation
    /// in flight on it.
    ///
    /// `corpus/hazards/inval-in-use/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol inval_in_use_pass
    ///
    /// param NT = 3
    /// block NT
    ///
    /// mbarrier bar
    ///
    /// if tid == 0 {
    ///   init bar, NT
    /// }
    /// syncthreads
    /// arrive bar
    /// wait bar parity 0
    /// syncthreads                   # every thread is done with bar
    /// if tid == 0 {
    ///   inval bar
    /// }
    ///
    /// expect ok
    /// expect ok with NT = 4
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15.10 *mbarrier.inval*:
    ///
    /// > "Performing any mbarrier operation except `mbarrier.init` on a memory location that does
    /// > not contain a valid mbarrier object, results in undefined behaviour."
    ///
    /// Also: semantics.md §1.2 (model for inval), L1.
    code: "PC203",
    name: "inval-in-use",
    class: Ub,
    severity: Error,
    summary: "inval while a thread or an async operation may still use the barrier",
}
