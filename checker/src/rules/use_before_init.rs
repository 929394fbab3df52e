//! `use-before-init` (PC200).

super::declare_rule! {
    /// # What
    ///
    /// An operation on an mbarrier that was never initialized or was invalidated.
    code: "PC200",
    name: "use-before-init",
    class: Ub,
    severity: Error,
    summary: "an operation on an mbarrier that was never initialized or was invalidated",
}
