//! `unobserved-phase` (PC207).

super::declare_rule! {
    /// # What
    ///
    /// An arrive on the next phase before any wait observed the previous phase complete (R-CONSUME).
    code: "PC207",
    name: "unobserved-phase",
    class: Ub,
    severity: Error,
    summary: "an arrive on the next phase before any wait observed the previous phase complete (R-CONSUME)",
}
