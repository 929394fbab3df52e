//! `stale-token` (PC209).

super::declare_rule! {
    /// # What
    ///
    /// A wait with a token that is two or more phases old, or from another barrier.
    code: "PC209",
    name: "stale-token",
    class: Ub,
    severity: Error,
    summary: "a wait with a token that is two or more phases old, or from another barrier",
}
