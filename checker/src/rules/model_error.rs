//! `model-error` (PC218).

super::declare_rule! {
    /// # What
    ///
    /// The protocol itself fails while running: a division or remainder by zero, an arithmetic
    /// overflow, or an index out of range of a barrier, buffer or pipeline array.
    ///
    /// # Why
    ///
    /// In the kernel this is an out-of-bounds shared-memory access (another barrier's or buffer's
    /// bytes) or a trap. In the model it stops the interleaving that reached it; the report gives
    /// that interleaving. Off-by-one loop bounds (`0..STAGES + 1`) and stage indices computed with
    /// the wrong modulus are the usual causes.
    ///
    /// # Example
    ///
    /// `corpus/hazards/model-error/fail.phase`:
    ///
    /// ```phase
    /// protocol model_error_fail
    ///
    /// param STAGES = 2
    /// block 1
    ///
    /// mbarrier full[STAGES]
    ///
    /// for s in 0..STAGES + 1 {
    ///   init full[s], 1
    /// }
    /// for s in 0..STAGES {
    ///   arrive full[s]
    ///   wait full[s] parity 0
    /// }
    ///
    /// expect ub model-error
    /// ```
    ///
    /// # Fix
    ///
    /// Keep indices within the declared sizes (loop over `0..STAGES`).
    ///
    /// `corpus/hazards/model-error/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol model_error_pass
    ///
    /// param STAGES = 2
    /// block 1
    ///
    /// mbarrier full[STAGES]
    ///
    /// for s in 0..STAGES {
    ///   init full[s], 1
    /// }
    /// for s in 0..STAGES {
    ///   arrive full[s]
    ///   wait full[s] parity 0
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// Not an ISA rule: it rests on the `.phase` language's own semantics (language.md §3.1:
    /// indexing out of range is an error reported at the offending statement; §3.2: division by
    /// zero is an error at run time of the model) and semantics.md §0.1. For a named barrier's id
    /// the ISA gives the range, PTX ISA 9.1, §9.7.13.1 *bar, barrier*:
    ///
    /// > "Each CTA instance has sixteen barriers numbered `0..15`."
    code: "PC218",
    name: "model-error",
    class: Ub,
    severity: Error,
    summary: "division by zero, overflow or an index out of range while running the protocol",
}
