//! `init-not-visible` (PC201).

super::declare_rule! {
    /// # What
    ///
    /// A thread (or a peer block, or a TMA issued by another thread) uses a barrier that was
    /// initialised by another thread, without being ordered after that `init` by a CTA barrier
    /// (`syncthreads`) or, across a cluster, by `fence_mbarrier_init` +
    /// `cluster_arrive`/`cluster_wait` (or `cluster_sync`).
    ///
    /// # Why
    ///
    /// `mbarrier.init` is a plain store with no release semantics. Until the other threads are
    /// ordered after it, they may see the uninitialised object, which is the same undefined
    /// behaviour as `use-before-init` but depends on timing, so it passes tests and fails in
    /// production. This is the "bootstrap" problem of the Programming Guide: the threads must
    /// synchronise before they can synchronise with the barrier. For clusters, the init must be
    /// released at cluster scope (`fence.mbarrier_init.release.cluster`) and acquired by the peer
    /// (`barrier.cluster.wait`).
    ///
    /// The lane that `elect` picks is not promised to be lane 0: "elect.sync elects one
    /// predicated active leader thread from among a set of threads specified by membermask"
    /// ([PTX] `elect.sync`), and only "the same leader thread is elected for the same membermask
    /// every time". So an `init` under `if lane == 0` followed, with no barrier between, by an
    /// `arrive_expect_tx` in `elect { }` is correct only when lane 0 happens to lead; the
    /// checker lets any live lane lead and reports the other lanes' use here (the trace shows
    /// which lane "is elected by `elect`"). Initialize inside the same `elect` (the same
    /// leader again), or put `syncthreads` between.
    ///
    /// # Example
    ///
    /// `corpus/hazards/init-not-visible/fail.phase`:
    ///
    /// ```phase
    /// protocol init_not_visible_fail
    ///
    /// block 2
    ///
    /// mbarrier bar
    /// buffer data
    ///
    /// if tid == 0 {
    ///   init bar, 1
    /// }
    /// if tid == 0 {
    ///   write data
    ///   arrive bar
    /// }
    /// if tid == 1 {
    ///   wait bar parity 0
    ///   read data
    /// }
    ///
    /// expect ub init-not-visible
    /// ```
    ///
    /// # Fix
    ///
    /// Put `syncthreads` (block.sync()) between the init and the first use by other threads; for a
    /// cluster, `fence_mbarrier_init` in the initialising thread, then `cluster_arrive` +
    /// `cluster_wait` in every thread.
    ///
    /// `corpus/hazards/init-not-visible/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol init_not_visible_pass
    ///
    /// block 2
    ///
    /// mbarrier bar
    /// buffer data
    ///
    /// if tid == 0 {
    ///   init bar, 1
    /// }
    /// syncthreads
    /// if tid == 0 {
    ///   write data
    ///   arrive bar
    /// }
    /// if tid == 1 {
    ///   wait bar parity 0
    ///   read data
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15.3 *Lifecycle of the mbarrier object*:
    ///
    /// > "The mbarrier object must be initialized prior to use."
    ///
    /// PTX ISA 9.1, §9.7.13.4 *membar / fence*:
    ///
    /// > "When `.op_restrict` is `.mbarrier_init`, the synchronizing effect of the fence only
    /// > applies to the prior `mbarrier.init` operations executed by the same thread on mbarrier
    /// > objects in `.shared::cta` state space."
    ///
    /// CUDA C++ Programming Guide 13.1, §10.26.3 *Bootstrap Initialization, Expected Arrival Count,
    /// and Participation*:
    ///
    /// > "This poses a bootstrapping challenge in that threads must synchronize before
    /// > participating in the `cuda::barrier`, but threads are creating a `cuda::barrier` in order
    /// > to synchronize."
    ///
    /// Also: semantics.md §6.4 R-INITVIS, §2.12, §3.2 B1; CUTLASS `cutlass/arch/barrier.h`
    /// (`fence_barrier_init`).
    code: "PC201",
    name: "init-not-visible",
    class: Ub,
    severity: Error,
    summary: "a thread uses a barrier before it is ordered after the barrier's init",
}
