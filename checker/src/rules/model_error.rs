//! `model-error` (PC218).

super::declare_rule! {
    /// # What
    ///
    /// Division by zero, overflow or an index out of range while running the protocol.
    code: "PC218",
    name: "model-error",
    class: Ub,
    severity: Error,
    summary: "division by zero, overflow or an index out of range while running the protocol",
}
