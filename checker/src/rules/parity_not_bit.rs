//! `parity-not-bit` (PC404).

super::declare_rule! {
    /// # What
    ///
    /// A parity expression that can take values other than 0 and 1: only its low bit counts.
    code: "PC404",
    name: "parity-not-bit",
    class: Perf,
    severity: Warning,
    summary: "a parity expression that can take values other than 0 and 1: only its low bit counts",
}
