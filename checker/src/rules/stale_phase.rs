//! `stale-phase` (PC302).

super::declare_rule! {
    /// # What
    ///
    /// A wait returns because of a phase completion this thread already observed: its phase tracking is off.
    code: "PC302",
    name: "stale-phase",
    class: Race,
    severity: Error,
    summary: "a wait returns because of a phase completion this thread already observed: its phase tracking is off",
}
