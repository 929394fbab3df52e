//! `tx-range` (PC205).

super::declare_rule! {
    /// # What
    ///
    /// A transaction count outside -(2^20-1)..2^20-1.
    code: "PC205",
    name: "tx-range",
    class: Ub,
    severity: Error,
    summary: "a transaction count outside -(2^20-1)..2^20-1",
}
