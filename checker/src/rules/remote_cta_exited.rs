//! `remote-cta-exited` (PC213).

super::declare_rule! {
    /// # What
    ///
    /// An operation on a peer block's barrier or buffer (a remote arrive `B @ r`, a multicast TMA
    /// write or complete-tx, a `read`, `write`, `write part`, `write X value N` or `mma` of
    /// `X @ r`) after that block exited.
    ///
    /// # Why
    ///
    /// Distributed shared memory of a block exists only while the block runs. The CUDA
    /// Programming Guide (*Distributed Shared Memory*): "The user also needs to ensure that all
    /// distributed shared memory operations happen before the exit of a thread block". A remote
    /// arrive, load or store into an exited block is undefined and in practice an
    /// illegal-address error ("unspecified launch failure") or an access to the shared memory of
    /// whatever block the SM runs next. In a cluster pipeline the consumers of every block
    /// release the producer's stage with remote arrives, so the producer's block must not exit
    /// before the last of them landed; that is what CUTLASS `producer_tail` (`load_tail`) is
    /// for. A block whose shared memory its peers read (Triton's multi-CTA scalar atomic, whose
    /// result CTA 0 keeps in its shared memory) must not return before they have read it.
    ///
    /// # Example
    ///
    /// `corpus/hazards/remote-cta-exited/fail.phase`:
    ///
    /// ```phase
    /// protocol remote_cta_exited_fail
    ///
    /// block 1
    /// cluster 2
    ///
    /// mbarrier full
    /// mbarrier empty
    /// buffer tile
    ///
    /// if tid == 0 {
    ///   init full, 1
    ///   init empty, 2               # one release from each block
    ///   fence_mbarrier_init
    /// }
    /// cluster_sync
    /// arrive_expect_tx full, 1024
    /// if cta == 0 {
    ///   tma tile -> full, 1024 multicast 0b11
    /// }
    /// wait full parity 0
    /// read tile
    /// arrive empty @ 0              # consumer_release to the block that issued the multicast
    ///
    /// expect ub remote-cta-exited
    /// ```
    ///
    /// # Fix
    ///
    /// The block waits until every remote operation into it has happened before it exits:
    /// `producer_tail` (wait on the empty barrier of every stage's last round), or a final
    /// `cluster_sync` (what Triton emits before every return of a multi-CTA kernel since
    /// triton-lang/triton#10656).
    ///
    /// `corpus/hazards/remote-cta-exited/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol remote_cta_exited_pass
    ///
    /// block 1
    /// cluster 2
    ///
    /// mbarrier full
    /// mbarrier empty
    /// buffer tile
    ///
    /// if tid == 0 {
    ///   init full, 1
    ///   init empty, 2               # one release from each block
    ///   fence_mbarrier_init
    /// }
    /// cluster_sync
    /// arrive_expect_tx full, 1024
    /// if cta == 0 {
    ///   tma tile -> full, 1024 multicast 0b11
    /// }
    /// wait full parity 0
    /// read tile
    /// arrive empty @ 0              # consumer_release to the block that issued the multicast
    /// if cta == 0 { wait empty parity 0 }           # producer_tail
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §2.2.2 *Cluster of Cooperative Thread Arrays*:
    ///
    /// > "The executing CTA has to make sure that the shared memory of the peer CTA exists before
    /// > communicating with it via shared memory and the peer CTA hasn’t exited before completing
    /// > the shared memory operation."
    ///
    /// CUDA C++ Programming Guide 13.1, §6.2.5 *Distributed Shared Memory*:
    ///
    /// > "The user also needs to ensure that all distributed shared memory operations happen before
    /// > the exit of a thread block, e.g., if a remote thread block is trying to read a given
    /// > thread block’s shared memory, user needs to ensure that the shared memory read by remote
    /// > thread block is completed before it can exit."
    ///
    /// Also: semantics.md §1.2 L7, §5.2 (`producer_tail`); CUTLASS `sm90_pipeline.hpp`
    /// (`producer_tail`), `sm90_mma_tma_gmma_ss_warpspecialized.hpp` (`load_tail`);
    /// triton-lang/triton issue #11730 and PR #11731
    /// (`corpus/production/triton_multicta_scalar_atomic.phase`).
    code: "PC213",
    name: "remote-cta-exited",
    class: Ub,
    severity: Error,
    summary: "an operation on a peer block's barrier or buffer after that block exited",
}
