//! `count-range` (PC204).

super::declare_rule! {
    /// # What
    ///
    /// An arrival count outside 1..2^20-1: an `init` count of 0 or 2^20 or more, an `arrive` count
    /// of 0, or a transition that takes the pending or expected count out of its range (for
    /// `cp_async_arrive` without `noinc`, the pending increment).
    ///
    /// # Why
    ///
    /// The mbarrier keeps its counts in 20-bit fields (v0 layout). PTX says the count of
    /// `mbarrier.init` and `mbarrier.arrive` must be in range and calls leaving it undefined for
    /// `cp.async.mbarrier.arrive`; C++ and libcu++ assert `1 <= count`. A count of 0 is the frequent one: counts computed by integer
    /// division (one arrival per warpgroup: `consumers / 128`) truncate to 0 for small
    /// configurations. Counts of 2^20 and more come from confusing bytes and arrivals.
    ///
    /// # Example
    ///
    /// `corpus/hazards/count-range/fail.phase`:
    ///
    /// ```phase
    /// protocol count_range_fail
    ///
    /// param CONSUMERS = 96          # consumer threads: less than one warpgroup
    /// block 2                       # a producer and one model thread for the consumer warpgroup
    ///
    /// mbarrier full
    /// mbarrier empty
    /// buffer data
    ///
    /// if tid == 0 {
    ///   init full, 1
    ///   init empty, CONSUMERS / 128
    /// }
    /// syncthreads
    /// role producer when tid == 0 {
    ///   write data
    ///   arrive full
    ///   wait empty parity 0         # the consumers are done with data
    ///   write data
    /// }
    /// role consumer when tid == 1 {
    ///   wait full parity 0
    ///   read data
    ///   arrive empty                # one arrival for the warpgroup
    /// }
    ///
    /// expect ub count-range
    /// ```
    ///
    /// # Fix
    ///
    /// Round up, as CUTLASS does (`ceil_div(num_consumers, 128)`), and keep counts in 1..2^20-1.
    ///
    /// `corpus/hazards/count-range/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol count_range_pass
    ///
    /// param CONSUMERS = 96          # consumer threads: less than one warpgroup
    /// block 2                       # a producer and one model thread for the consumer warpgroup
    ///
    /// mbarrier full
    /// mbarrier empty
    /// buffer data
    ///
    /// if tid == 0 {
    ///   init full, 1
    ///   init empty, (CONSUMERS + 127) / 128
    /// }
    /// syncthreads
    /// role producer when tid == 0 {
    ///   write data
    ///   arrive full
    ///   wait empty parity 0         # the consumers are done with data
    ///   write data
    /// }
    /// role consumer when tid == 1 {
    ///   wait full parity 0
    ///   read data
    ///   arrive empty                # one arrival for the warpgroup
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15.9 *mbarrier.init*:
    ///
    /// > "The value of operand count must be in the range as specified in Contents of the mbarrier
    /// > object."
    ///
    /// PTX ISA 9.1, §9.7.13.15.15 *cp.async.mbarrier.arrive*:
    ///
    /// > "The pending count of the mbarrier object after the increment should not exceed the limit
    /// > as mentioned in Contents of the mbarrier object. Otherwise, the behavior is undefined."
    ///
    /// The table of §9.7.13.15.2 *Contents of the mbarrier object* gives the expected arrival count
    /// the range 1 to 2^20 - 1 and the pending arrival count 0 to 2^20 - 1.
    ///
    /// Also: semantics.md §1.1 R-RANGE, §2.1, §2.3, §2.10, §3.2 B2; CUTLASS `sm90_pipeline.hpp`
    /// (PipelineTmaAsync empty barrier count).
    code: "PC204",
    name: "count-range",
    class: Ub,
    severity: Error,
    summary: "an arrival count outside 1..2^20-1 (init count, arrive count, pending or expected)",
}
