//! `arrive-on-zero-pending` (PC206).

super::declare_rule! {
    /// # What
    ///
    /// An arrive while the current phase has no pending arrivals left: pending is 0 and the phase
    /// is only waiting for transaction bytes, so the arrive would take pending below zero.
    ///
    /// # Why
    ///
    /// With tx = 0, pending = 0 cannot persist (the phase completes and reloads), so "pending 0"
    /// means a phase waiting for bytes. Another arrive then drives pending to -1: undefined. The
    /// usual cause is more than one "leader" thread doing `arrive.expect_tx` on a full barrier
    /// initialised for one arrival, e.g. a lane test that selects two lanes or an `elect` that is
    /// missing. CUTLASS debug builds trap on it ("Most likely you have elected more than one
    /// leader").
    ///
    /// # Example
    ///
    /// `corpus/hazards/arrive-on-zero-pending/fail.phase`:
    ///
    /// ```phase
    /// protocol arrive_on_zero_pending_fail
    ///
    /// param NT = 4
    /// block NT
    ///
    /// mbarrier full
    /// buffer tile
    ///
    /// if tid == 0 {
    ///   init full, 1
    /// }
    /// syncthreads
    /// if lane < 2 { arrive_expect_tx full, 1024 }         # the leader arms the barrier
    /// if tid == 0 {
    ///   tma tile -> full, 1024
    /// }
    /// wait full parity 0
    /// read tile
    ///
    /// expect ub arrive-on-zero-pending
    /// ```
    ///
    /// # Fix
    ///
    /// Exactly one leader per producer arms the full barrier (lane 0 or `elect`), and the init
    /// count equals the number of threads that really arrive.
    ///
    /// `corpus/hazards/arrive-on-zero-pending/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol arrive_on_zero_pending_pass
    ///
    /// param NT = 4
    /// block NT
    ///
    /// mbarrier full
    /// buffer tile
    ///
    /// if tid == 0 {
    ///   init full, 1
    /// }
    /// syncthreads
    /// if lane == 0 { arrive_expect_tx full, 1024 }        # the leader arms the barrier
    /// if tid == 0 {
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
    /// PTX ISA 9.1, §9.7.13.15.7 *Arrive-on operation on mbarrier object*:
    ///
    /// > "Signals the arrival of the executing thread OR completion of the asynchronous instruction
    /// > which signals the arrive-on operation initiated by the executing thread on the mbarrier
    /// > object. As a result of this, the pending arrival count is decremented by count."
    ///
    /// PTX ISA 9.1, §9.7.13.15.13 *mbarrier.arrive*:
    ///
    /// > "The value of the operand `count` must be in the range as specified in Contents of the
    /// > mbarrier object."
    ///
    /// The table of §9.7.13.15.2 *Contents of the mbarrier object* gives the pending arrival count
    /// the minimum value 0.
    ///
    /// Also: semantics.md §2.3 ("Arrive on a phase with nothing pending"), W2, W7; CUTLASS
    /// `sm90_pipeline.hpp` (PipelineTmaAsync::producer_acquire, `is_leader`).
    code: "PC206",
    name: "arrive-on-zero-pending",
    class: Ub,
    severity: Error,
    summary: "an arrive while the current phase has no pending arrivals left (only bytes)",
}
