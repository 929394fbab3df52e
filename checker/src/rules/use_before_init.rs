//! `use-before-init` (PC200).

super::declare_rule! {
    /// # What
    ///
    /// An mbarrier operation (arrive, wait, expect_tx, a TMA or cp.async completion, ...) on a
    /// barrier that was never initialised, or that was invalidated with `inval` and not initialised
    /// again.
    ///
    /// # Why
    ///
    /// A `__shared__` mbarrier is never constructed: until `mbarrier.init` runs, its 8 bytes are
    /// whatever the previous kernel left in shared memory, so arrivals and phase bits are garbage.
    /// PTX makes every operation other than `init` on an invalid object undefined; in practice it
    /// shows up as a hang or as a wait that passes at once. This includes an asynchronous
    /// completion (TMA complete-tx, cp.async arrive-on) that lands after `inval`.
    ///
    /// # Example
    ///
    /// `corpus/hazards/use-before-init/fail.phase`:
    ///
    /// ```phase
    /// protocol use_before_init_fail
    ///
    /// block 2
    ///
    /// mbarrier bar
    /// buffer data
    ///
    /// if tid == 0 {
    /// }
    /// syncthreads
    /// if tid == 0 {
    ///   write data
    ///   arrive bar
    /// }
    /// if tid == 1 {
    ///   wait bar parity 0
    ///   read data
    /// }
    ///
    /// expect ub use-before-init
    /// ```
    ///
    /// # Fix
    ///
    /// Initialise the barrier (one thread) before anybody uses it, and publish the init to the
    /// other threads (see `init-not-visible`).
    ///
    /// `corpus/hazards/use-before-init/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol use_before_init_pass
    ///
    /// block 2
    ///
    /// mbarrier bar
    /// buffer data
    ///
    /// if tid == 0 {
    ///   init bar, 1
    /// }
    /// syncthreads
    /// if tid == 0 {
    ///   write data
    ///   arrive bar
    /// }
    /// if tid == 1 {
    ///   wait bar parity 0
    ///   read data
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15 *mbarrier*:
    ///
    /// > "Performing any mbarrier operation except `mbarrier.init` on an uninitialized mbarrier
    /// > object results in undefined behavior."
    ///
    /// PTX ISA 9.1, §9.7.13.15.10 *mbarrier.inval*:
    ///
    /// > "Performing any mbarrier operation except `mbarrier.init` on a memory location that does
    /// > not contain a valid mbarrier object, results in undefined behaviour."
    ///
    /// Also: semantics.md §1.2 L1, §3.2 B1; PTX ISA, *Lifecycle of the mbarrier object*; libcu++
    /// `barrier_block_scope.h` (init is mandatory for `__shared__` barriers).
    code: "PC200",
    name: "use-before-init",
    class: Ub,
    severity: Error,
    summary: "an operation on an mbarrier that was never initialized or was invalidated",
}
