//! `unified-pipeline` (PC401).

super::declare_rule! {
    /// # What
    ///
    /// A block-scope `cuda::pipeline` whose producers and consumers are the whole block: every
    /// thread both produces and consumes.
    ///
    /// # Why
    ///
    /// A shared-state pipeline costs a pair of shared-memory barriers per stage and their updates
    /// on every acquire, commit, wait and release. That buys something only when roles are
    /// partitioned. Unified, each thread only waits for its own copies plus everybody else's, which
    /// a per-thread pipeline (cp.async groups) and, where data is shared, one `syncthreads` do
    /// cheaper.
    ///
    /// # Example
    ///
    /// `corpus/hazards/unified-pipeline/fail.phase`:
    ///
    /// ```phase
    /// protocol unified_pipeline_fail
    ///
    /// param NT = 2
    /// param NB = 3
    /// block NT
    ///
    /// pipeline pipe stages 2 producers NT consumers NT
    /// buffer buf[2 * NT]
    ///
    /// for b in 0..NB {
    ///   producer_acquire pipe
    ///   memcpy_async buf[(b % 2) * NT + tid] -> pipe
    ///   producer_commit pipe
    ///   consumer_wait pipe
    ///   read buf[(b % 2) * NT + tid]
    ///   consumer_release pipe
    /// }
    ///
    /// expect warning unified-pipeline
    /// expect ok
    /// ```
    ///
    /// # Fix
    ///
    /// A thread-scope pipeline (`cuda::make_pipeline()`), with a `syncthreads` where threads read
    /// each other's data.
    ///
    /// `corpus/hazards/unified-pipeline/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol unified_pipeline_pass
    ///
    /// param NT = 2
    /// param NB = 3
    /// block NT
    ///
    /// pipeline pipe thread
    /// buffer buf[2 * NT]
    ///
    /// for b in 0..NB {
    ///   producer_acquire pipe
    ///   memcpy_async buf[(b % 2) * NT + tid] -> pipe
    ///   producer_commit pipe
    ///   consumer_wait pipe
    ///   read buf[(b % 2) * NT + tid]
    ///   consumer_release pipe
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// Not an ISA rule: a cost lint resting on the Programming Guide's advice. CUDA Programming
    /// Guide (the restructured guide, `04-special-topics/pipelines.html`), §4.10.1
    /// *Initialization*:
    ///
    /// > "To support partitioning, a shared `cuda::pipeline` incurs additional overheads, including
    /// > using a set of shared memory barriers per stage for synchronization. These are used even
    /// > when the pipeline is unified and could use `__syncthreads()` instead. Thus, it is
    /// > preferable to use thread-local pipelines which avoid these overheads when possible."
    ///
    /// Also: semantics.md §4.2.
    code: "PC401",
    name: "unified-pipeline",
    class: Perf,
    severity: Warning,
    summary: "a block-scope pipeline where every thread both produces and consumes",
}
