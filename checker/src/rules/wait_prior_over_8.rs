//! `wait-prior-over-8` (PC402).

super::declare_rule! {
    /// # What
    ///
    /// `consumer_wait_prior P, N` (`pipeline_consumer_wait_prior<N>` / `__pipeline_wait_prior(N)`)
    /// with N > 8.
    ///
    /// # Why
    ///
    /// libcu++ implements it as `cp.async.wait_group min(N, 8)` (the cap is in `cuda/pipeline`), so
    /// a request to leave more than 8 batches in flight waits until only 8 are: more batches than
    /// asked. The protocol is still correct, but the prefetch depth it was written for is lost.
    ///
    /// # Example
    ///
    /// `corpus/hazards/wait-prior-over-8/fail.phase`:
    ///
    /// ```phase
    /// protocol wait_prior_over_8_fail
    ///
    /// param DEPTH = 12
    /// block 1
    ///
    /// pipeline pipe thread
    /// buffer buf[DEPTH]
    ///
    /// for b in 0..DEPTH {
    ///   memcpy_async buf[b] -> pipe
    ///   producer_commit pipe
    /// }
    /// consumer_wait_prior pipe, 10
    /// read buf[0]
    /// read buf[1]
    ///
    /// expect warning wait-prior-over-8
    /// expect ok
    /// ```
    ///
    /// # Fix
    ///
    /// Ask for at most 8 (keep the prefetch depth at 8 batches or fewer).
    ///
    /// `corpus/hazards/wait-prior-over-8/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol wait_prior_over_8_pass
    ///
    /// param DEPTH = 12
    /// block 1
    ///
    /// pipeline pipe thread
    /// buffer buf[DEPTH]
    ///
    /// for b in 0..DEPTH {
    ///   memcpy_async buf[b] -> pipe
    ///   producer_commit pipe
    /// }
    /// consumer_wait_prior pipe, 8
    /// read buf[0]
    /// read buf[1]
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.9.25.3.3 *cp.async.wait_group / cp.async.wait_all*, what the wait waits
    /// for:
    ///
    /// > "`cp.async.wait_group` instruction will cause executing thread to wait till only `N` or
    /// > fewer of the most recent cp.async-groups are pending and all the prior cp.async-groups
    /// > committed by the executing threads are complete."
    ///
    /// The cap at 8 is libcu++'s, not the ISA's: libcu++ `cuda/pipeline`
    /// (`pipeline_consumer_wait_prior`) passes `min(N, 8)` to it.
    ///
    /// Also: semantics.md §4.1.
    code: "PC402",
    name: "wait-prior-over-8",
    class: Perf,
    severity: Warning,
    summary: "consumer_wait_prior with N > 8 waits for more batches than asked (libcu++ caps N at 8)",
}
