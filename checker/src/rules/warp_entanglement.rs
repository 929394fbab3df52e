//! `warp-entanglement` (PC400).

super::declare_rule! {
    /// # What
    ///
    /// An arrive-on (`arrive`, `arrive_expect_tx`, `arrive_drop`, `cp_async_arrive`),
    /// `producer_commit` or `commit_group` executed by several lanes of a warp that an enclosing
    /// condition has split.
    ///
    /// # Why
    ///
    /// Arrive-ons and commits are coalesced across converged threads: a converged warp updates the
    /// barrier (or the pipeline's batch sequence) once, a diverged warp once per lane, up to 32
    /// times. The counts stay per thread, so the protocol is still correct, but it pays 32
    /// shared-memory barrier updates and, for commits, makes `wait_prior` over-wait. One lane with
    /// the other lanes elsewhere (`if lane == 0`) is fine.
    ///
    /// # Example
    ///
    /// `corpus/hazards/warp-entanglement/fail.phase`:
    ///
    /// ```phase
    /// protocol warp_entanglement_fail
    ///
    /// param NT = 4
    /// param HALF = 2
    /// block NT
    ///
    /// mbarrier bar
    ///
    /// if tid == 0 {
    ///   init bar, HALF
    /// }
    /// syncthreads
    /// if lane < HALF {
    ///   compute
    /// }
    /// if lane < HALF { arrive bar }
    /// wait bar parity 0
    ///
    /// expect warning warp-entanglement
    /// expect ok
    /// ```
    ///
    /// # Fix
    ///
    /// Re-converge before the arrive (`__syncwarp()`), or let one elected lane arrive for the group
    /// with a count (`elect { arrive bar, N }`).
    ///
    /// `corpus/hazards/warp-entanglement/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol warp_entanglement_pass
    ///
    /// param NT = 4
    /// param HALF = 2
    /// block NT
    ///
    /// mbarrier bar
    ///
    /// if tid == 0 {
    ///   init bar, HALF
    /// }
    /// syncthreads
    /// if lane < HALF {
    ///   compute
    /// }
    /// elect { arrive bar, HALF }
    /// wait bar parity 0
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// Not an ISA rule: a cost lint resting on the Programming Guide. CUDA C++ Programming Guide
    /// 13.1, §10.27.6.5 *Warp Entanglement - Arrive-On*:
    ///
    /// > "Warp-divergence affects the number of times an `arrive_on(bar)` operation updates the
    /// > barrier. If the invoking warp is fully converged, then the barrier is updated once. If the
    /// > invoking warp is fully diverged, then 32 individual updates are applied to the barrier."
    ///
    /// CUDA C++ Programming Guide 13.1, §10.27.6.3 *Warp Entanglement - Commit*:
    ///
    /// > "The commit operation is coalesced such that the sequence is incremented once for all
    /// > converged threads that invoke the commit operation. If the warp is fully converged, the
    /// > sequence is incremented by one; if the warp is fully diverged, the sequence is incremented
    /// > by 32."
    ///
    /// CUDA C++ Programming Guide 13.1, §10.27.6.6 *Keep Commit and Arrive-On Operations
    /// Converged*:
    ///
    /// > "When code preceding these operations diverges threads, then the warp should be
    /// > re-converged, via `__syncwarp` before invoking commit or arrive-on operations."
    ///
    /// Also: semantics.md §4.3, W1, W6; CUDA Programming Guide, *Pipelines > Warp Entanglement*.
    code: "PC400",
    name: "warp-entanglement",
    class: Perf,
    severity: Warning,
    summary: "arrive or commit under a lane-divergent condition: the warp updates the barrier once per lane",
}
