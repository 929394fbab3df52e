//! `remote-op` (PC214).

super::declare_rule! {
    /// # What
    ///
    /// Init, inval, wait or test_wait on a peer block's barrier (only arrive, arrive_drop, expect_tx and complete_tx may be remote).
    code: "PC214",
    name: "remote-op",
    class: Ub,
    severity: Error,
    summary: "init, inval, wait or test_wait on a peer block's barrier (only arrive, arrive_drop, expect_tx and complete_tx may be remote)",
}
