//! `expect-without-arrival` (PC217).

super::declare_rule! {
    /// # What
    ///
    /// An `expect_tx` that brings the tx-count of a phase back to 0 while the phase has no pending
    /// arrivals left (pending 0, tx < 0 before it): the bytes landed and all arrivals are in, and
    /// only the expect settles the phase.
    ///
    /// # Why
    ///
    /// PTX runs the phase-completion check only after an arrive-on or a complete-tx;
    /// `mbarrier.expect_tx` does not trigger it. A phase whose arrivals are all in and whose
    /// tx-count an expect brings to 0 is in a state the ISA does not describe: it may complete, or
    /// never. It arises when the thread that issued the copy arrives before it declares the bytes
    /// and the copy lands first.
    ///
    /// # Example
    ///
    /// `corpus/hazards/expect-without-arrival/fail.phase`:
    ///
    /// ```phase
    /// protocol expect_without_arrival_fail
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
    ///   tma tile -> full, 1024
    ///   arrive full
    ///   expect_tx full, 1024
    /// }
    /// wait full parity 0
    /// read tile
    ///
    /// expect ub expect-without-arrival
    /// ```
    ///
    /// # Fix
    ///
    /// Declare the bytes before your own arrival: `expect_tx` then `arrive`, or the fused
    /// `arrive_expect_tx`.
    ///
    /// `corpus/hazards/expect-without-arrival/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol expect_without_arrival_pass
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
    ///   tma tile -> full, 1024
    ///   expect_tx full, 1024
    ///   arrive full
    /// }
    /// wait full parity 0
    /// read tile
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15.5.1 *expect-tx operation* (the whole definition, which has no
    /// completion step):
    ///
    /// > "The expect-tx operation, with an `expectCount` argument, increases the tx-count of an
    /// > mbarrier object by the value specified by `expectCount`. This sets the current phase of
    /// > the mbarrier object to expect and track the completion of additional asynchronous
    /// > transactions."
    ///
    /// whereas an arrive-on (PTX ISA 9.1, §9.7.13.15.7) and a complete-tx (§9.7.13.15.5.2) each end
    /// with the step:
    ///
    /// > "If the current phase has been completed then the mbarrier transitions to the next phase."
    ///
    /// Also: semantics.md §1.3 (expect_tx does not trigger completion), §2.6 R-EXPECT, §3.2 B11;
    /// PTX ISA, *Phase Completion of the mbarrier object*; libcu++ docs
    /// `barrier/barrier_expect_tx.html`.
    code: "PC217",
    name: "expect-without-arrival",
    class: Ub,
    severity: Error,
    summary: "expect_tx settles a phase whose arrivals are already all in (pending 0, tx < 0): completion is unspecified",
}
