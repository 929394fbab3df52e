//! `inval-in-use` (PC203).

super::declare_rule! {
    /// # What
    ///
    /// Inval while a thread or an async operation may still use the barrier.
    code: "PC203",
    name: "inval-in-use",
    class: Ub,
    severity: Error,
    summary: "inval while a thread or an async operation may still use the barrier",
}
