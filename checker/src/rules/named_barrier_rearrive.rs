//! `named-barrier-rearrive` (PC212).

super::declare_rule! {
    /// # What
    ///
    /// A thread arrives on a named barrier again before its current use completed, or with a different count.
    code: "PC212",
    name: "named-barrier-rearrive",
    class: Ub,
    severity: Error,
    summary: "a thread arrives on a named barrier again before its current use completed, or with a different count",
}
