//! `after-quit` (PC216).

super::declare_rule! {
    /// # What
    ///
    /// A pipeline operation after quit, or quit while other threads still need this thread's arrivals.
    code: "PC216",
    name: "after-quit",
    class: Ub,
    severity: Error,
    summary: "a pipeline operation after quit, or quit while other threads still need this thread's arrivals",
}
