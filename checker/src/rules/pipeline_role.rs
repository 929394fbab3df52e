//! `pipeline-role` (PC215).

super::declare_rule! {
    /// # What
    ///
    /// In a partitioned block-scope `cuda::pipeline`, a thread calls operations of both roles: a
    /// consumer calls a producer operation (`producer_acquire`, `producer_commit`, `memcpy_async`)
    /// or a producer calls a consumer operation (`consumer_wait`, `consumer_release`). A thread's
    /// role is the one of its first pipeline operation; with `make_pipeline(group, &state,
    /// producer_count)` the producers are the threads of rank < producer_count.
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
    /// Not an ISA rule: it rests on libcu++'s preconditions. libcu++ documentation,
    /// *cuda::pipeline::producer_acquire* (`pipeline/producer_acquire.html`; `producer_commit.html`
    /// says the same):
    ///
    /// > "If the calling thread is a consumer thread, the behavior is undefined."
    ///
    /// libcu++ documentation, *cuda::pipeline::consumer_wait* (`pipeline/consumer_wait.html`;
    /// `consumer_release.html` says the same):
    ///
    /// > "If the calling thread is a producer thread, the behavior is undefined."
    ///
    /// CUDA Programming Guide (the restructured guide, `04-special-topics/pipelines.html`), §4.10.1
    /// *Initialization*:
    ///
    /// > "In a partitioned pipeline, each participating thread is either a producer or a consumer
    /// > and its role cannot change during the lifetime of the pipeline object."
    ///
    /// Also: semantics.md §4.2 P1, P3; libcu++ docs `make_pipeline.html`.
    code: "PC215",
    name: "pipeline-role",
    class: Ub,
    severity: Error,
    summary: "a consumer calls a producer operation of a partitioned pipeline, or the reverse",
}
