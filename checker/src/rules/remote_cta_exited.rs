//! `remote-cta-exited` (PC213).

super::declare_rule! {
    /// # What
    ///
    /// An operation on a peer block's barrier or buffer after that block exited.
    code: "PC213",
    name: "remote-cta-exited",
    class: Ub,
    severity: Error,
    summary: "an operation on a peer block's barrier or buffer after that block exited",
}
