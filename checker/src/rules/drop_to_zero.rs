//! `drop-to-zero` (PC208).

super::declare_rule! {
    /// # What
    ///
    /// Arrive_drop makes the expected arrival count 0.
    code: "PC208",
    name: "drop-to-zero",
    class: Ub,
    severity: Error,
    summary: "arrive_drop makes the expected arrival count 0",
}
