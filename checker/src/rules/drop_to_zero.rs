//! `drop-to-zero` (PC208).

super::declare_rule! {
    /// # What
    ///
    /// An `arrive_drop` that makes the expected arrival count 0.
    ///
    /// # Why
    ///
    /// `mbarrier.arrive_drop` lowers the expected count of every later phase; PTX makes it
    /// undefined when that count reaches 0 (C++ `arrive_and_drop` only requires the count before
    /// the drop to be positive, so code that is legal C++ on a software barrier is undefined on a
    /// shared-memory barrier). It happens when the whole block leaves a loop with
    /// `arrive_and_drop`.
    ///
    /// # Example
    ///
    /// `corpus/hazards/drop-to-zero/fail.phase`:
    ///
    /// ```phase
    /// protocol drop_to_zero_fail
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
    /// for i in 0..N {
    ///   if i == 1 && tid >= 0 {
    ///     arrive_drop bar
    ///     exit
    ///   }
    ///   let t = arrive bar
    ///   wait bar token t
    /// }
    ///
    /// expect ub drop-to-zero
    /// ```
    ///
    /// # Fix
    ///
    /// At least one participant stays, or the last one leaves with a plain exit once nobody uses
    /// the barrier any more.
    ///
    /// `corpus/hazards/drop-to-zero/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol drop_to_zero_pass
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
    /// for i in 0..N {
    ///   if i == 1 && tid >= 1 {
    ///     arrive_drop bar
    ///     exit
    ///   }
    ///   let t = arrive bar
    ///   wait bar token t
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// semantics.md §2.5, §3.2 B8; PTX ISA, *mbarrier.arrive_drop*; C++ [thread.barrier.class]
    /// `arrive_and_drop`.
    code: "PC208",
    name: "drop-to-zero",
    class: Ub,
    severity: Error,
    summary: "arrive_drop makes the expected arrival count 0",
}
