//! `barrier-divergence` (PC211).

super::declare_rule! {
    /// # What
    ///
    /// A block-wide barrier (`syncthreads`, `syncwarp` for a warp, `cluster_sync` for a cluster)
    /// reached by some threads at one statement and by others at another statement, or by some
    /// threads while others are stuck elsewhere.
    ///
    /// Also, in a block of 32 threads or more, a named barrier with a count (`bar_sync ID, N`,
    /// `bar_arrive ID, N`) run by only some lanes of a warp: inside an `elect` body, or under
    /// an `if`/`role` condition that splits the warp (`if lane == 0`). The finding names the warp
    /// and the lanes that never run the statement. (Static: lanes that leave by a condition on a
    /// local, or by `exit`, show as a `deadlock` of their arrivals instead.)
    ///
    /// # Why
    ///
    /// `__syncthreads()` is allowed in conditional code only if the condition evaluates identically
    /// across the block; `bar.sync` is `.aligned`: every lane of a warp executes the same barrier
    /// instruction together, so a single elected or divergent lane running a named barrier is
    /// undefined (the hardware marks whole warps' arrivals). Threads meeting at two different
    /// `syncthreads` statements is undefined: on recent GPUs it often "works" by accident (both
    /// statements use barrier 0) and then deadlocks or releases the wrong threads after a
    /// compiler or architecture change.
    ///
    /// # Example
    ///
    /// `corpus/hazards/barrier-divergence/fail.phase`:
    ///
    /// ```phase
    /// protocol barrier_divergence_fail
    ///
    /// param NT = 3
    /// param K = 2
    /// block NT
    ///
    /// buffer data
    ///
    /// for k in 0..K {
    ///   if tid == 0 {
    ///     write data
    ///   }
    ///   if tid != 0 { syncthreads }
    ///   read data
    ///   syncthreads
    /// }
    ///
    /// expect ub barrier-divergence
    /// ```
    ///
    /// # Fix
    ///
    /// Every thread executes the same barrier statement.
    ///
    /// `corpus/hazards/barrier-divergence/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol barrier_divergence_pass
    ///
    /// param NT = 3
    /// param K = 2
    /// block NT
    ///
    /// buffer data
    ///
    /// for k in 0..K {
    ///   if tid == 0 {
    ///     write data
    ///   }
    ///   syncthreads
    ///   read data
    ///   syncthreads
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.1 *bar, barrier*:
    ///
    /// > "Instruction `barrier{.cta}` has optional `.aligned` modifier. When specified, it
    /// > indicates that all threads in CTA will execute the same `barrier{.cta}` instruction. In
    /// > conditionally executed code, an aligned `barrier{.cta}` instruction should only be used if
    /// > it is known that all threads in CTA evaluate the condition identically, otherwise behavior
    /// > is undefined."
    ///
    /// > "`bar{.cta}.sync` is equivalent to `barrier{.cta}.sync.aligned`."
    ///
    /// CUDA C++ Programming Guide 13.1, §10.6 *Synchronization Functions*:
    ///
    /// > "`__syncthreads()` is allowed in conditional code but only if the conditional evaluates
    /// > identically across the entire thread block, otherwise the code execution is likely to hang
    /// > or produce unintended side effects."
    ///
    /// Also: semantics.md W8, §9.1 ("Whole warps", "Aligned waits of one use at different
    /// instructions").
    code: "PC211",
    name: "barrier-divergence",
    class: Ub,
    severity: Error,
    summary: "syncthreads, syncwarp or a cluster barrier reached by some threads at different statements, or a named barrier run by part of a warp",
}
