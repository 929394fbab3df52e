//! `pipeline-role` (PC215).

super::declare_rule! {
    /// # What
    ///
    /// In a partitioned block-scope `cuda::pipeline`, a consumer thread calls a producer operation
    /// (`producer_acquire`, `producer_commit`, `memcpy_async`) or a producer thread calls a
    /// consumer operation (`consumer_wait`, `consumer_release`). Producers are the first
    /// `producers` threads of the block, as with `make_pipeline(group, &state, producer_count)`.
    ///
    /// # Why
    ///
    /// The roles of a partitioned pipeline are fixed at `make_pipeline`; the stage barriers count
    /// exactly the producers (produced) and the consumers (consumed). libcu++ documents calls of
    /// the other role's operations as undefined; in practice they corrupt the counts and hang or
    /// release stages early. Off-by-one role tests (`tid <= producer_count`) are the usual cause.
    ///
    /// # Example
    ///
    /// `corpus/hazards/pipeline-role/fail.phase`:
    ///
    /// ```phase
    /// protocol pipeline_role_fail
    ///
    /// param NP = 1
    /// param NC = 2
    /// param NB = 3
    /// block NP + NC
    ///
    /// pipeline pipe stages 2 producers NP consumers NC
    /// buffer chunk[2 * (NP + NC)]
    ///
    /// if tid <= NP {
    ///   for b in 0..NB {
    ///     producer_acquire pipe
    ///     memcpy_async chunk[(b % 2) * (NP + NC) + tid] -> pipe
    ///     producer_commit pipe
    ///   }
    /// }
    /// if tid >= NP {
    ///   for b in 0..NB {
    ///     consumer_wait pipe
    ///     read chunk[(b % 2) * (NP + NC)]
    ///     consumer_release pipe
    ///   }
    /// }
    ///
    /// expect ub pipeline-role
    /// ```
    ///
    /// # Fix
    ///
    /// Producers are exactly the threads with rank < producer_count (or those given
    /// `pipeline_role::producer`).
    ///
    /// `corpus/hazards/pipeline-role/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol pipeline_role_pass
    ///
    /// param NP = 1
    /// param NC = 2
    /// param NB = 3
    /// block NP + NC
    ///
    /// pipeline pipe stages 2 producers NP consumers NC
    /// buffer chunk[2 * (NP + NC)]
    ///
    /// if tid < NP {
    ///   for b in 0..NB {
    ///     producer_acquire pipe
    ///     memcpy_async chunk[(b % 2) * (NP + NC) + tid] -> pipe
    ///     producer_commit pipe
    ///   }
    /// }
    /// if tid >= NP {
    ///   for b in 0..NB {
    ///     consumer_wait pipe
    ///     read chunk[(b % 2) * (NP + NC)]
    ///     consumer_release pipe
    ///   }
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// semantics.md §4.2 P1, P3; libcu++ docs `pipeline/producer_acquire.html`,
    /// `pipeline/consumer_wait.html`, `make_pipeline.html`.
    code: "PC215",
    name: "pipeline-role",
    class: Ub,
    severity: Error,
    summary: "a consumer calls a producer operation of a partitioned pipeline, or the reverse",
}
