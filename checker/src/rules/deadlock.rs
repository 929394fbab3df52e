//! `deadlock` (PC100).

super::declare_rule! {
    /// # What
    ///
    /// Some thread can never finish: it waits on a phase, barrier or copy that can no longer complete.
    code: "PC100",
    name: "deadlock",
    class: Deadlock,
    severity: Error,
    summary: "some thread can never finish: it waits on a phase, barrier or copy that can no longer complete",
}
