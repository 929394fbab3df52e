//! `wait-phase-behind` (PC210).

super::declare_rule! {
    /// # What
    ///
    /// A parity wait for a phase two or more behind the barrier's current phase (it waits for the wrong phase).
    code: "PC210",
    name: "wait-phase-behind",
    class: Ub,
    severity: Error,
    summary: "a parity wait for a phase two or more behind the barrier's current phase (it waits for the wrong phase)",
}
