//! `pipeline-role` (PC215).

super::declare_rule! {
    /// # What
    ///
    /// A consumer calls a producer operation of a partitioned pipeline, or the reverse.
    code: "PC215",
    name: "pipeline-role",
    class: Ub,
    severity: Error,
    summary: "a consumer calls a producer operation of a partitioned pipeline, or the reverse",
}
