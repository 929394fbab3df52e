//! `tx-range` (PC205).

super::declare_rule! {
    /// # What
    ///
    /// A transaction count (tx-count) that leaves -(2^20-1)..2^20-1: `arrive_expect_tx` or
    /// `expect_tx` adding more bytes than a phase can track, or completions taking it below the
    /// minimum.
    ///
    /// # Why
    ///
    /// The tx-count of an mbarrier phase is a signed 21-bit quantity. An `expect_tx` of 1 MiB or
    /// more (or several expects adding up to it in one phase) leaves the range, which is undefined;
    /// libcu++ `barrier_arrive_tx` asserts `tx <= 2^20-1`. It typically happens when a stage's
    /// bytes are summed over more tiles than fit one phase, or when bits are counted instead of
    /// bytes.
    ///
    /// # Example
    ///
    /// `corpus/hazards/tx-range/fail.phase`:
    ///
    /// ```phase
    /// protocol tx_range_fail
    ///
    /// param BYTES = 1 << 20         # bytes of the stage
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
    ///   arrive_expect_tx full, BYTES
    ///   tma tile -> full, BYTES
    /// }
    /// wait full parity 0
    /// read tile
    ///
    /// expect ub tx-range
    /// ```
    ///
    /// # Fix
    ///
    /// Keep the bytes of one phase below 1 MiB: split the transfer over stages (one phase per
    /// stage).
    ///
    /// `corpus/hazards/tx-range/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol tx_range_pass
    ///
    /// param BYTES = 1 << 17         # bytes of the stage
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
    ///   arrive_expect_tx full, BYTES
    ///   tma tile -> full, BYTES
    /// }
    /// wait full parity 0
    /// read tile
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15.2 *Contents of the mbarrier object*:
    ///
    /// > "Count of pending asynchronous memory operations (or transactions) tracked by the current
    /// > phase of the mbarrier object. This is also referred to as tx-count."
    ///
    /// > "The valid range of each of the counts is as shown below:"
    ///
    /// Its table gives the tx-count the range -(2^20 - 1) to 2^20 - 1. PTX names no consequence of
    /// leaving it; the rule reads it as undefined (semantics.md §1.1 R-RANGE).
    ///
    /// Also: semantics.md §2.4, §2.6, §3.2 B10, B11; PTX ISA, *mbarrier.expect_tx*; libcu++
    /// `barrier_arrive_tx.h`, `barrier_expect_tx.h`.
    code: "PC205",
    name: "tx-range",
    class: Ub,
    severity: Error,
    summary: "a transaction count outside -(2^20-1)..2^20-1",
}
