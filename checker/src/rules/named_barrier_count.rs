//! `named-barrier-count` (PC219).

super::declare_rule! {
    /// # What
    ///
    /// A named barrier (`bar_sync ID, N` / `bar_arrive ID, N`) used with a thread count `N` that
    /// is not a multiple of the warp size (32), in a block of 32 threads or more.
    ///
    /// # Why
    ///
    /// `bar.sync`/`bar.arrive` are executed per warp: the hardware adds a whole warp to the
    /// barrier's arrival count at a time, and PTX requires the count to be a multiple of the warp
    /// size. A count like 40 or 2 (the number of warps where the number of threads was meant)
    /// is never reached exactly: the kernel hangs, traps, or releases a use early, depending on
    /// the warps that take part. The model counts threads, so without this rule it would show
    /// the symptom instead (a deadlock of the "missing" threads of a partial warp, or readers
    /// running ahead).
    ///
    /// A block of fewer than 32 threads is read as a scaled-down model (one thread standing for
    /// a warp or a warpgroup, as the corpus pins small sizes): there the count is in the model's
    /// threads and is not judged.
    ///
    /// # Example
    ///
    /// `corpus/hazards/named-barrier-count/fail.phase`:
    ///
    /// ```phase
    /// protocol named_barrier_count_fail
    ///
    /// param NT = 64                   # epilogue threads: two warps
    /// block NT
    ///
    /// buffer tile
    ///
    /// if tid == 0 {
    ///   write tile                    # one writer stands for the fragment stores
    /// }
    /// bar_sync 1, NT / 32             # the bug: a count of warps, not threads
    /// read tile
    /// bar_sync 1, NT
    ///
    /// expect ub named-barrier-count
    /// ```
    ///
    /// # Fix
    ///
    /// Give the count in threads, and let whole warps take part (`32 * warps`); CUTLASS's
    /// `NamedBarrier` takes the number of threads.
    ///
    /// `corpus/hazards/named-barrier-count/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol named_barrier_count_pass
    ///
    /// param NT = 64                   # epilogue threads: two warps
    /// block NT
    ///
    /// buffer tile
    ///
    /// if tid == 0 {
    ///   write tile                    # one writer stands for the fragment stores
    /// }
    /// bar_sync 1, NT                  # everybody has the tile
    /// read tile
    /// bar_sync 1, NT
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.1 *bar, barrier*:
    ///
    /// > "When specifying a thread count, the value must be a multiple of the warp size."
    ///
    /// > "`barrier{.cta}` instruction causes executing thread to wait for all non-exited threads
    /// > from its warp and marks warps’ arrival at barrier."
    ///
    /// Also: semantics.md §9.1 ("Whole warps"); language.md §3.3.4 (`bar_sync`, `bar_arrive`).
    code: "PC219",
    name: "named-barrier-count",
    class: Ub,
    severity: Error,
    summary: "a named barrier's thread count is not a multiple of the warp size (in a block of 32 threads or more)",
}
