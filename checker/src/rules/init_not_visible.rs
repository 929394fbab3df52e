//! `init-not-visible` (PC201).

super::declare_rule! {
    /// # What
    ///
    /// A thread uses a barrier before it is ordered after the barrier's init.
    code: "PC201",
    name: "init-not-visible",
    class: Ub,
    severity: Error,
    summary: "a thread uses a barrier before it is ordered after the barrier's init",
}
