//! `unified-pipeline` (PC401).

super::declare_rule! {
    /// # What
    ///
    /// A block-scope pipeline where every thread both produces and consumes.
    code: "PC401",
    name: "unified-pipeline",
    class: Perf,
    severity: Warning,
    summary: "a block-scope pipeline where every thread both produces and consumes",
}
