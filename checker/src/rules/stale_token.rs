//! `stale-token` (PC209).

super::declare_rule! {
    /// # What
    ///
    /// A `wait B token T` whose token is two or more phases old (the barrier completed T's phase
    /// and at least one more), or a token that came from another barrier.
    ///
    /// # Why
    ///
    /// A token names the phase of its arrive. A wait is defined only for the current phase (blocks)
    /// and the immediately preceding one (returns at once); C++, the Programming Guide and PTX make
    /// any other token undefined, and the token format is implementation specific, so what the
    /// hardware does with it is unknown. It happens when a token is kept across loop iterations
    /// instead of taken from this iteration's arrive.
    ///
    /// # Example
    ///
    /// `corpus/hazards/stale-token/fail.phase`:
    ///
    /// ```phase
    /// protocol stale_token_fail
    ///
    /// param NT = 2
    /// param ITERS = 3
    /// block NT
    ///
    /// barrier bar
    ///
    /// if tid == 0 {
    ///   init bar, NT
    /// }
    /// syncthreads
    /// let first = arrive bar
    /// wait bar token first
    /// for i in 0..ITERS {
    ///   let t = arrive bar
    ///   wait bar token first
    /// }
    ///
    /// expect ub stale-token
    /// ```
    ///
    /// # Fix
    ///
    /// Wait with the token of this iteration's `arrive`.
    ///
    /// `corpus/hazards/stale-token/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol stale_token_pass
    ///
    /// param NT = 2
    /// param ITERS = 3
    /// block NT
    ///
    /// barrier bar
    ///
    /// if tid == 0 {
    ///   init bar, NT
    /// }
    /// syncthreads
    /// let first = arrive bar
    /// wait bar token first
    /// for i in 0..ITERS {
    ///   let t = arrive bar
    ///   wait bar token t
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15.16 *mbarrier.test_wait / mbarrier.try_wait*, of the phase a wait
    /// tests:
    ///
    /// > "Specified by the 64-bit unsigned integer operand `state`, which was returned by an
    /// > `mbarrier.arrive` instruction on the same mbarrier object during the current or the
    /// > immediately preceding phase."
    ///
    /// PTX ISA 9.1, §9.7.13.15.13 *mbarrier.arrive*:
    ///
    /// > "Contents of the `state` operand are implementation specific."
    ///
    /// CUDA C++ Programming Guide 13.1, §10.26.4 *A Barrier’s Phase: Arrival, Countdown,
    /// Completion, and Reset*:
    ///
    /// > "`bar.wait()` must only be called using a `token` object of the current phase or the
    /// > immediately preceding phase. For any other values of the `token` object, the behavior is
    /// > undefined."
    ///
    /// Also: semantics.md §2.8 (token form), §3.2 B5; C++ [thread.barrier.class] `wait`
    /// precondition.
    code: "PC209",
    name: "stale-token",
    class: Ub,
    severity: Error,
    summary: "a wait with a token that is two or more phases old, or from another barrier",
}
