//! `drop-to-zero` (PC208).

super::declare_rule! {
    /// # What
    ///
    /// An `arrive_drop` that makes the expected arrival count 0.
    ///
    /// # Why
    ///
    /// `mbarrier.arrive_drop` lowers the expected count of every later phase, and PTX's table of
    /// counts makes 1 the least expected count: a drop to 0 leaves the range, which the checker
    /// reads as undefined (C++ `arrive_and_drop` only requires the count before the drop to be
    /// positive, so code that is legal C++ on a software barrier is not on a shared-memory
    /// barrier). It happens when the whole block leaves a loop with
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
    /// PTX ISA 9.1, §9.7.13.15.14 *mbarrier.arrive_drop*:
    ///
    /// > "Decrements the expected arrival count of the mbarrier object by the value specified by
    /// > the 32-bit integer operand `count`."
    ///
    /// > "The decrement done in the expected arrivals count of the mbarrier object will be for all
    /// > the subsequent phases of the mbarrier object."
    ///
    /// The table of §9.7.13.15.2 *Contents of the mbarrier object* gives the expected arrival count
    /// the minimum value 1. The *mbarrier.arrive_drop* page of 9.1 names no consequence of reaching
    /// 0 itself; the rule reads leaving the range as undefined (semantics.md §1.1 R-RANGE).
    ///
    /// Also: semantics.md §2.5, §3.2 B8; C++ [thread.barrier.class] `arrive_and_drop`.
    code: "PC208",
    name: "drop-to-zero",
    class: Ub,
    severity: Error,
    summary: "arrive_drop makes the expected arrival count 0",
}
