//! `count-range` (PC204).

super::declare_rule! {
    /// # What
    ///
    /// An arrival count outside 1..2^20-1 (init count, arrive count, pending or expected).
    code: "PC204",
    name: "count-range",
    class: Ub,
    severity: Error,
    summary: "an arrival count outside 1..2^20-1 (init count, arrive count, pending or expected)",
}
