//! `reinit` (PC202).

super::declare_rule! {
    /// # What
    ///
    /// Init on a barrier that is still valid (re-initialization needs inval first).
    code: "PC202",
    name: "reinit",
    class: Ub,
    severity: Error,
    summary: "init on a barrier that is still valid (re-initialization needs inval first)",
}
