//! `proxy-fence-after-sync` (PC406).

super::declare_rule! {
    /// # What
    ///
    /// A generic-proxy access (a store to a shared tile, a read of a stage) is followed by an
    /// async-proxy access of the same buffer by another thread (a TMA store of the tile, a TMA
    /// refill of the stage, a WGMMA operand read), ordered by synchronization, and the only
    /// `fence_proxy_async` between them is run by the async side's thread *after* the
    /// synchronization, not by the generic side's thread before it. ThunderKittens' attention
    /// epilogue does this: the warpgroup stores O, syncs, and the issuing thread fences right
    /// before its TMA store.
    ///
    /// With no fence at all, or a fence that is not on the causality path, it is still the
    /// error `missing-proxy-fence` (DeepEP #621: generic reads and then a TMA refill of the same
    /// bytes gave wrong results, fixed in #642 by a fence).
    ///
    /// # Why
    ///
    /// The PTX ISA's causality order crosses proxies only where its *proxy-preserved base
    /// causality order* says so, and that definition names a proxy fence "along the base
    /// causality path" only for alias proxies: "X and Y are aliases and there is an alias proxy
    /// fence along the base causality path from X to Y". For the async proxy it says where the
    /// fence works in the fence's own thread (program order) and nothing about a fence by
    /// another thread after the synchronization. So this placement rests on the hardware, not on
    /// the ISA's letter: a warning, not an error. On an H200 it held: a probe whose issuing
    /// thread fences after the barrier read no stale word in about 10 billion tile stores,
    /// while the same probe without a fence read millions (gpu.md, "Proxy fences").
    ///
    /// # Example
    ///
    /// `corpus/hazards/proxy-fence-after-sync/fail.phase`:
    ///
    /// ```phase
    /// protocol proxy_fence_after_sync_fail
    ///
    /// param NT = 4                  # consumer threads (a warpgroup in the model)
    /// block NT
    ///
    /// buffer o_smem
    ///
    /// write part o_smem             # each thread its fragment of O
    /// bar_sync 1, NT
    /// if tid == 0 {
    ///   fence_proxy_async
    ///   tma_store o_smem
    ///   bulk_commit
    ///   bulk_wait_read 0
    /// }
    ///
    /// expect warning proxy-fence-after-sync
    /// ```
    ///
    /// # Fix
    ///
    /// Fence in every generic-side thread after its access and before the synchronization, as
    /// CUTLASS (`fence_view_async_shared(); synchronize();`) and FlashAttention-3 do: the ISA's
    /// program order then puts the fence between the access and the release.
    /// `corpus/hazards/proxy-fence-after-sync/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol proxy_fence_after_sync_pass
    ///
    /// param NT = 4                  # consumer threads (a warpgroup in the model)
    /// block NT
    ///
    /// buffer o_smem
    ///
    /// write part o_smem             # each thread its fragment of O
    /// fence_proxy_async             # every writer fences before the barrier
    /// bar_sync 1, NT
    /// if tid == 0 {
    ///   fence_proxy_async
    ///   tma_store o_smem
    ///   bulk_commit
    ///   bulk_wait_read 0
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §8.9.5 *Causality Order*, *Proxy-preserved base causality order* (the one case
    /// that names a fence):
    ///
    /// > "X and Y are aliases and there is an alias proxy fence along the base causality path from
    /// > X to Y."
    ///
    /// PTX ISA 9.1, §9.7.13.4 *membar / fence*:
    ///
    /// > "A uni-directional proxy ordering from the from-proxykind to the to-proxykind establishes
    /// > ordering between a prior memory access performed via the from-proxykind and a subsequent
    /// > memory access performed via the to-proxykind."
    ///
    /// PTX ISA 9.4 or later, §9.7.15.4 *membar / fence* (a paragraph that 9.1 does not have; read
    /// in a copy of the newer text):
    ///
    /// > "Bi-directional proxy fences do not directly synchronize with other fences in the sense
    /// > that fences with .release or .acquire semantics do. Instead, bi-directional proxy fences
    /// > take effect within a single thread and therefore do not have a .scope qualifier. Their
    /// > cross-proxy synchronizing effect composes with other forms of synchronization according to
    /// > the rules of the Memory Consistency Model."
    ///
    /// Also: semantics.md §6.3 ("Where the fence may stand"); gpu.md "Proxy fences" (the H200 run,
    /// with date and command); HazyResearch/ThunderKittens `kernels/attn/h100/h100.cu` and the TMA
    /// store wrapper.
    code: "PC406",
    name: "proxy-fence-after-sync",
    class: Perf,
    severity: Warning,
    summary: "the only proxy fence between a generic access and another thread's async access is the async side's, after the synchronization: ordered on the hardware, not by the ISA's letter",
}
