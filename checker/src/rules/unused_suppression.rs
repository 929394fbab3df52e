//! `unused-suppression` (PC490).

super::declare_rule! {
    /// # What
    ///
    /// A `# phasecheck: allow(RULE) reason` comment that silences nothing: no finding of RULE
    /// starts on the statement it targets, or RULE is not a rule name at all.
    ///
    /// # Why
    ///
    /// A suppression records a decision ("this hazard is understood and accepted, because...").
    /// Once the code changes so that the finding is gone, or the finding moves to another
    /// statement, the comment keeps claiming a hazard that is not there, and it will silently
    /// swallow a *new* finding of that rule on that line. A misspelt rule name never worked.
    /// Reporting unused suppressions keeps them true, as ruff's `RUF100` and clippy's
    /// `unfulfilled_lint_expectations` do.
    ///
    /// # Example
    ///
    /// ```text
    /// protocol tidy
    /// block 32
    /// mbarrier bar
    /// if tid == 0 { init bar, 32 }
    /// syncthreads
    /// arrive bar   # phasecheck: allow(stale-token) left over from an older version
    /// wait bar parity 0
    /// expect warning unused-suppression
    /// ```
    ///
    /// # Fix
    ///
    /// ```text
    /// protocol tidy
    /// block 32
    /// mbarrier bar
    /// if tid == 0 { init bar, 32 }
    /// syncthreads
    /// arrive bar
    /// wait bar parity 0
    /// expect ok
    /// ```
    ///
    /// A suppression applies to the statement on its own line (trailing comment) or to the
    /// next statement (comment on a line of its own). Name rules by name or code; give the
    /// reason after the parenthesis. After another comment on the line (the extractor's
    /// `# k.cu:12  PTX 40` on an extracted protocol) it needs its own `#`:
    /// `write x  # k.cu:12  PTX 40  # phasecheck: allow(data-race) why`.
    ///
    /// When the search stopped early (after a real error), the finding a suppression is for may
    /// lie in the part it did not search: the warning then says "as far as the search went",
    /// and `phasecheck verify --exhaustive` tells whether the suppression is stale.
    ///
    /// # Source
    ///
    /// Not an ISA rule: phasecheck's own convention for suppressions (docs/ci.md, *Suppressions*),
    /// after ruff's `RUF100` and clippy's `unfulfilled_lint_expectations`; not a GPU rule.
    code: "PC490",
    name: "unused-suppression",
    class: Perf,
    severity: Warning,
    summary: "a `# phasecheck: allow(...)` comment that suppresses nothing",
}
