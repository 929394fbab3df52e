//! `parity-not-bit` (PC404).

super::declare_rule! {
    /// # What
    ///
    /// A `wait ... parity EXPR` or `test_wait ... parity EXPR` whose expression can take values
    /// other than 0 and 1.
    ///
    /// # Why
    ///
    /// `try_wait.parity` uses only the low bit of its operand, so the wait is right only if the low
    /// bit of the expression is the phase bit. Formulas like `(k / STAGES) % STAGES` (the TileLang
    /// seed) happen to work for an even number of stages and are wrong for an odd one, where the
    /// low bit of `r % STAGES` is not `r % 2`: with 3 stages, round 3 waits with parity 0 instead
    /// of 1. Writing the parity as a bit makes the intent checkable.
    ///
    /// # Example
    ///
    /// `corpus/hazards/parity-not-bit/fail.phase`:
    ///
    /// ```phase
    /// protocol parity_not_bit_fail
    ///
    /// param STAGES = 4
    /// param K = 8
    /// block 2
    ///
    /// mbarrier full[STAGES]
    /// mbarrier empty[STAGES]
    /// buffer slot[STAGES]
    ///
    /// if tid == 0 {
    ///   for s in 0..STAGES {
    ///     init full[s], 1
    ///     init empty[s], 1
    ///   }
    /// }
    /// syncthreads
    /// role producer when tid == 0 {
    ///   for k in 0..K {
    ///     wait empty[k % STAGES] parity ((k / STAGES) % 2) ^ 1
    ///     write slot[k % STAGES]
    ///     arrive full[k % STAGES]
    ///   }
    /// }
    /// role consumer when tid == 1 {
    ///   for k in 0..K {
    ///     wait full[k % STAGES] parity (k / STAGES) % STAGES
    ///     read slot[k % STAGES]
    ///     arrive empty[k % STAGES]
    ///   }
    /// }
    ///
    /// expect warning parity-not-bit
    /// expect ok
    /// ```
    ///
    /// # Fix
    ///
    /// Write the parity as a bit: `(k / STAGES) % 2`, or track it in a local flipped with `^ 1`.
    ///
    /// `corpus/hazards/parity-not-bit/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol parity_not_bit_pass
    ///
    /// param STAGES = 4
    /// param K = 8
    /// block 2
    ///
    /// mbarrier full[STAGES]
    /// mbarrier empty[STAGES]
    /// buffer slot[STAGES]
    ///
    /// if tid == 0 {
    ///   for s in 0..STAGES {
    ///     init full[s], 1
    ///     init empty[s], 1
    ///   }
    /// }
    /// syncthreads
    /// role producer when tid == 0 {
    ///   for k in 0..K {
    ///     wait empty[k % STAGES] parity ((k / STAGES) % 2) ^ 1
    ///     write slot[k % STAGES]
    ///     arrive full[k % STAGES]
    ///   }
    /// }
    /// role consumer when tid == 1 {
    ///   for k in 0..K {
    ///     wait full[k % STAGES] parity (k / STAGES) % 2
    ///     read slot[k % STAGES]
    ///     arrive empty[k % STAGES]
    ///   }
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §9.7.13.15.16 *mbarrier.test_wait / mbarrier.try_wait*:
    ///
    /// > "An even phase has integer parity 0 and an odd phase has integer parity of 1. So the valid
    /// > values of `phaseParity` operand are 0 and 1."
    ///
    /// Also: semantics.md §2.8; language.md §3.3 (only the low bit of the parity counts); TileLang
    /// mbarrier guide (seed 003).
    code: "PC404",
    name: "parity-not-bit",
    class: Perf,
    severity: Warning,
    summary: "a parity expression that can take values other than 0 and 1: only its low bit counts",
}
