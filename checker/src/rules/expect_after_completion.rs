//! `expect-after-completion` (PC303).

super::declare_rule! {
    /// # What
    ///
    /// An `expect_tx` that runs after the phase it should cover has already completed, so the bytes
    /// are charged to the next phase.
    ///
    /// # Why
    ///
    /// The expect must land in the phase the tracked copies belong to, while that phase still has
    /// an arrival pending. If the arrive comes first, it completes the phase at once (no bytes
    /// expected yet): waiters are released before the copy has landed (they read a tile the TMA is
    /// still writing), and the next phase inherits a tx-count that its own bytes never cancel (a
    /// hang one round later).
    ///
    /// # Example
    ///
    /// `corpus/hazards/expect-after-completion/fail.phase`:
    ///
    /// ```phase
    /// protocol expect_after_completion_fail
    ///
    /// block 2
    ///
    /// mbarrier full
    /// buffer tile
    ///
    /// if tid == 0 {
    ///   init full, 1
    /// }
    /// syncthreads
    /// if tid == 0 {
    ///   arrive full
    ///   expect_tx full, 1024
    ///   tma tile -> full, 1024
    /// }
    /// wait full parity 0
    /// read tile
    ///
    /// expect race expect-after-completion
    /// ```
    ///
    /// # Fix
    ///
    /// `expect_tx` before your own `arrive` (as in the libcu++ `barrier_expect_tx` example), or the
    /// fused `arrive_expect_tx`.
    ///
    /// `corpus/hazards/expect-after-completion/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol expect_after_completion_pass
    ///
    /// block 2
    ///
    /// mbarrier full
    /// buffer tile
    ///
    /// if tid == 0 {
    ///   init full, 1
    /// }
    /// syncthreads
    /// if tid == 0 {
    ///   expect_tx full, 1024
    ///   arrive full
    ///   tma tile -> full, 1024
    /// }
    /// wait full parity 0
    /// read tile
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15.5 *Tracking asynchronous operations by the mbarrier object*:
    ///
    /// > "The tx-count of an mbarrier object must be set to the total amount of asynchronous memory
    /// > operations, in units as specified by the asynchronous operations, to be tracked by the
    /// > current phase."
    ///
    /// PTX ISA 9.1, §9.7.13.15.5.1 *expect-tx operation*:
    ///
    /// > "This sets the current phase of the mbarrier object to expect and track the completion of
    /// > additional asynchronous transactions."
    ///
    /// Also: semantics.md §2.6 R-EXPECT; PTX ISA, *mbarrier.expect_tx*; libcu++ docs
    /// `barrier/barrier_expect_tx.html`.
    code: "PC303",
    name: "expect-after-completion",
    class: Race,
    severity: Error,
    summary: "expect_tx after the phase it should cover already completed: the bytes charge the next phase",
}
