//! `remote-op` (PC214).

super::declare_rule! {
    /// # What
    ///
    /// `init`, `inval`, `wait` or `test_wait` on a peer block's barrier (`B @ r` with r not this
    /// block). Only `arrive`, `arrive_drop`, `expect_tx` and `complete_tx` may address
    /// `.shared::cluster`.
    ///
    /// # Why
    ///
    /// PTX supports only the arrive-like operations on a barrier in another block's shared memory;
    /// waits, tests, init and inval must use the `.shared::cta` address of the executing block's
    /// own barrier (its table says "Not supported" on `.shared::cluster`). A remote arrive also
    /// cannot return a token, so remote parties cannot use tokens. Waiting on the issuing block's
    /// barrier instead of one's own is the usual mistake in multicast code.
    ///
    /// # Example
    ///
    /// `corpus/hazards/remote-op/fail.phase`:
    ///
    /// ```phase
    /// protocol remote_op_fail
    ///
    /// block 1
    /// cluster 2
    ///
    /// mbarrier full
    /// buffer tile
    ///
    /// if tid == 0 {
    ///   init full, 1
    ///   fence_mbarrier_init
    /// }
    /// cluster_sync
    /// arrive_expect_tx full, 1024
    /// if cta == 0 {
    ///   tma tile -> full, 1024 multicast 0b11
    /// }
    /// wait full @ 0 parity 0
    /// read tile
    /// cluster_sync
    ///
    /// expect ub remote-op
    /// ```
    ///
    /// # Fix
    ///
    /// Wait on your own block's barrier: a multicast TMA signals the barrier at the same offset in
    /// every destination block.
    ///
    /// `corpus/hazards/remote-op/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol remote_op_pass
    ///
    /// block 1
    /// cluster 2
    ///
    /// mbarrier full
    /// buffer tile
    ///
    /// if tid == 0 {
    ///   init full, 1
    ///   fence_mbarrier_init
    /// }
    /// cluster_sync
    /// arrive_expect_tx full, 1024
    /// if cta == 0 {
    ///   tma tile -> full, 1024 multicast 0b11
    /// }
    /// wait full parity 0
    /// read tile
    /// cluster_sync
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15 *mbarrier*:
    ///
    /// > "One-way synchronization of threads across CTAs of a cluster. As noted in mbarrier support
    /// > with shared memory, threads can perform only arrive operations but not `*_wait` on an
    /// > mbarrier located in `shared::cluster` space."
    ///
    /// The table of §9.7.13.15.8 *mbarrier support with shared memory* marks the operations other
    /// than `mbarrier.arrive`, `mbarrier.expect_tx` and `mbarrier.complete_tx` "Not supported" on
    /// `.shared::cluster`. PTX ISA 9.1, §9.7.13.15.13 *mbarrier.arrive*:
    ///
    /// > "`mbarrier.arrive` operation on an mbarrier object located in `.shared::cluster` but not
    /// > in `.shared::cta` cannot return a value."
    ///
    /// Also: semantics.md §1.2 L5, L6, §2.3.
    code: "PC214",
    name: "remote-op",
    class: Ub,
    severity: Error,
    summary: "init, inval, wait or test_wait on a peer block's barrier (only arrive, arrive_drop, expect_tx and complete_tx may be remote)",
}
