//! `named-barrier-rearrive` (PC212).

super::declare_rule! {
    /// # What
    ///
    /// A thread arrives on a named barrier (`bar_sync`/`bar_arrive` with an id) again before the
    /// current use of that barrier completed, or uses it with a different thread count than the
    /// other participants.
    ///
    /// # Why
    ///
    /// A named barrier counts arrivals up to its thread count and then resets. A thread that
    /// arrives twice in one use is counted twice, so the barrier completes with threads missing or
    /// carries arrivals into the next use, which PTX leaves undefined. It happens in ping-pong
    /// schedules (FlashAttention-3) when the "first turn" arrival is given by the wrong warpgroup,
    /// or when a warpgroup arrives on a barrier and then syncs on it before the other side arrived.
    ///
    /// # Example
    ///
    /// `corpus/hazards/named-barrier-rearrive/fail.phase`:
    ///
    /// ```phase
    /// protocol named_barrier_rearrive_fail
    ///
    /// param WG = 32                 # threads per math warpgroup (a warp in the model)
    /// param N = 2
    /// block 2 * WG
    ///
    /// let wg = tid / WG
    /// if wg >= 0 { bar_arrive 1, 2 * WG }          # mma_init: WG1 gets the first turn
    /// for n in 0..N {
    ///   bar_sync 1 + wg, 2 * WG                   # wait for my turn
    ///   compute                                   # GEMM
    ///   bar_arrive 1 + (1 - wg), 2 * WG           # the other warpgroup's turn
    /// }
    ///
    /// expect ub named-barrier-rearrive
    /// ```
    ///
    /// # Fix
    ///
    /// Each use of a named barrier gets exactly one arrival from each participating thread, with
    /// one agreed count; in the ping-pong, only the second warpgroup gives WG1 its first turn.
    ///
    /// `corpus/hazards/named-barrier-rearrive/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol named_barrier_rearrive_pass
    ///
    /// param WG = 32                 # threads per math warpgroup (a warp in the model)
    /// param N = 2
    /// block 2 * WG
    ///
    /// let wg = tid / WG
    /// if wg == 1 { bar_arrive 1, 2 * WG }          # mma_init: WG1 gets the first turn
    /// for n in 0..N {
    ///   bar_sync 1 + wg, 2 * WG                   # wait for my turn
    ///   compute                                   # GEMM
    ///   bar_arrive 1 + (1 - wg), 2 * WG           # the other warpgroup's turn
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA, *bar.sync / bar.arrive / barrier*; flash-attention
    /// `hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp` (`mma_init`, `warp_scheduler_barrier_sync`,
    /// `warp_scheduler_barrier_arrive`); language.md §3.3 (`bar_sync`, `bar_arrive`).
    code: "PC212",
    name: "named-barrier-rearrive",
    class: Ub,
    severity: Error,
    summary: "a thread arrives on a named barrier again before its current use completed, or with a different count",
}
