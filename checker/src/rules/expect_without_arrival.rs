//! `expect-without-arrival` (PC217).

super::declare_rule! {
    /// # What
    ///
    /// Expect_tx settles a phase whose arrivals are already all in (pending 0, tx < 0): completion is unspecified.
    code: "PC217",
    name: "expect-without-arrival",
    class: Ub,
    severity: Error,
    summary: "expect_tx settles a phase whose arrivals are already all in (pending 0, tx < 0): completion is unspecified",
}
