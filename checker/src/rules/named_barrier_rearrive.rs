//! `named-barrier-rearrive` (PC212).

super::declare_rule! {
    /// # What
    ///
    /// The participants of one use of a named barrier (`bar_sync`/`bar_arrive` with an id) name
    /// different thread counts: a thread arrives with count `a` while the use in progress was
    /// started with count `b`.
    ///
    /// A thread that arrives again before the use completed is *not* this rule: each barrier
    /// instruction is one more arrival of its warp, and the checker counts it
    /// (semantics.md §9.1, "Arrivals are counted"). FlashAttention-3's forward epilogue relies
    /// on that: every epilogue warp `bar.arrive`s with NE + 32 and the last warp then `bar.sync`s
    /// with NE + 32, its second arrival (flash-attention issue #1389). An extra arrival that was
    /// not intended is reported as what it causes: the use completes without someone, whose
    /// later `bar_sync` then waits for a use that never completes (`deadlock`; CUTLASS's
    /// Blackwell MLA kernel returning early on an empty tile, vLLM #26026). The rule keeps its
    /// name so that existing suppressions still name it.
    ///
    /// # Why
    ///
    /// The hardware resets a named barrier when the arrivals reach the count of the use; the
    /// PTX ISA says what the count is for the whole use ("Operand b specifies the number of
    /// threads participating in the barrier") and nothing about participants that disagree, so
    /// which count the barrier completes at is unspecified (semantics.md §11: such a reading is
    /// UB). In practice it is an off-by-a-warp bug: one side of a hand-off counts the extra warp
    /// and the other does not.
    ///
    /// # Example
    ///
    /// `corpus/hazards/named-barrier-rearrive/fail.phase`:
    ///
    /// ```phase
    /// protocol named_barrier_rearrive_fail
    ///
    /// param NW = 4                  # epilogue warps (one math warpgroup)
    /// block NW
    ///
    /// buffer smem_o
    ///
    /// write part smem_o             # each warp its fragment of O
    /// fence_proxy_async
    /// bar_arrive 1, NW + 1
    /// if tid == NW - 1 {
    ///   bar_sync 1, NW
    ///   tma_store smem_o
    ///   bulk_commit
    ///   bulk_wait_read 0
    /// }
    ///
    /// expect ub named-barrier-rearrive
    /// ```
    ///
    /// # Fix
    ///
    /// Give every arrival of one use the same count. `corpus/hazards/named-barrier-rearrive/pass.phase`
    /// (one line differs):
    ///
    /// ```phase
    /// protocol named_barrier_rearrive_pass
    ///
    /// param NW = 4                  # epilogue warps (one math warpgroup)
    /// block NW
    ///
    /// buffer smem_o
    ///
    /// write part smem_o             # each warp its fragment of O
    /// fence_proxy_async
    /// bar_arrive 1, NW + 1
    /// if tid == NW - 1 {
    ///   bar_sync 1, NW + 1
    ///   tma_store smem_o
    ///   bulk_commit
    ///   bulk_wait_read 0
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.1 *bar, barrier*:
    ///
    /// > "Operand `b` specifies the number of threads participating in the barrier."
    ///
    /// > "Different warps may execute different forms of the `barrier{.cta}` instruction using the
    /// > same barrier name and thread count."
    ///
    /// The ISA names one thread count per barrier name and says nothing of participants that give
    /// different ones. On re-arrival, which this rule does not report, the same section:
    ///
    /// > "`barrier{.cta}` instruction causes executing thread to wait for all non-exited threads
    /// > from its warp and marks warps’ arrival at barrier."
    ///
    /// > "Care must be taken to keep a warp from executing more `barrier{.cta}` instructions than
    /// > intended (`barrier{.cta}.arrive` followed by any other `barrier{.cta}` instruction to the
    /// > same barrier) prior to the reset of the barrier."
    ///
    /// Also: flash-attention `hopper/epilogue_fwd.hpp` (`CollectiveEpilogueFwd::store`);
    /// semantics.md §9.1, §11; language.md §3.3.4 (`bar_sync`, `bar_arrive`).
    code: "PC212",
    name: "named-barrier-rearrive",
    class: Ub,
    severity: Error,
    summary: "the participants of one named-barrier use name different thread counts",
}
