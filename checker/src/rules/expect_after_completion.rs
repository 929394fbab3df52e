//! `expect-after-completion` (PC303).

super::declare_rule! {
    /// # What
    ///
    /// Expect_tx after the phase it should cover already completed: the bytes charge the next phase.
    code: "PC303",
    name: "expect-after-completion",
    class: Race,
    severity: Error,
    summary: "expect_tx after the phase it should cover already completed: the bytes charge the next phase",
}
