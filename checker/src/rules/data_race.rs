//! `data-race` (PC300).

super::declare_rule! {
    /// # What
    ///
    /// Two accesses to one buffer, at least one a write, not ordered by happens-before.
    code: "PC300",
    name: "data-race",
    class: Race,
    severity: Error,
    summary: "two accesses to one buffer, at least one a write, not ordered by happens-before",
}
