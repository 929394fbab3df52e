//! `arrive-on-zero-pending` (PC206).

super::declare_rule! {
    /// # What
    ///
    /// An arrive while the current phase has no pending arrivals left (only bytes).
    code: "PC206",
    name: "arrive-on-zero-pending",
    class: Ub,
    severity: Error,
    summary: "an arrive while the current phase has no pending arrivals left (only bytes)",
}
