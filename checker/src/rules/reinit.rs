//! `reinit` (PC202).

super::declare_rule! {
    /// # What
    ///
    /// `init` on a barrier that is still valid: initialised and not invalidated since.
    ///
    /// # Why
    ///
    /// PTX makes `mbarrier.init` on a valid object undefined whether or not the barrier is idle:
    /// the hardware may hold state for it (the sync unit caches barriers, and asynchronous
    /// arrive-ons or complete-tx may still target it). Reusing the slot for a new barrier, a new
    /// count, or as plain shared memory requires `mbarrier.inval` first. A common form of this bug
    /// is an init that is not guarded by `if tid == 0`, so every thread initialises the barrier.
    ///
    /// # Example
    ///
    /// `corpus/hazards/reinit/fail.phase`:
    ///
    /// ```phase
    /// protocol reinit_fail
    ///
    /// param NT = 2
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
    /// syncthreads                   # every use of the first life is over
    /// if tid == 0 {
    ///   init bar, 1                 # a second life with one arrival
    ///   arrive bar
    ///   wait bar parity 0
    /// }
    ///
    /// expect ub reinit
    /// ```
    ///
    /// # Fix
    ///
    /// `inval` the barrier (after a CTA barrier that ends every use of its first life), then `init`
    /// it again.
    ///
    /// `corpus/hazards/reinit/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol reinit_pass
    ///
    /// param NT = 2
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
    /// syncthreads                   # every use of the first life is over
    /// if tid == 0 {
    ///   inval bar
    ///   init bar, 1                 # a second life with one arrival
    ///   arrive bar
    ///   wait bar parity 0
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15.9 *mbarrier.init*:
    ///
    /// > "The behavior of performing an `mbarrier.init` operation on a memory location containing a
    /// > valid mbarrier object is undefined; invalidate the mbarrier object using `mbarrier.inval`
    /// > first, before repurposing the memory location for any other purpose, including another
    /// > mbarrier object."
    ///
    /// Also: semantics.md §1.2 L2, L4, §3.2 B1.
    code: "PC202",
    name: "reinit",
    class: Ub,
    severity: Error,
    summary: "init on a barrier that is still valid (re-initialization needs inval first)",
}
