//! `stale-phase` (PC302).

super::declare_rule! {
    /// # What
    ///
    /// A blocking parity wait that returns because of a phase completion this same thread already
    /// observed with an earlier wait on that barrier, and consumed since (it arrived on a
    /// barrier, touched a buffer, or ran any other operation but a wait or a test): its phase
    /// tracking is off, so the data the wait guards is not the fill it waits for.
    ///
    /// Re-testing or re-waiting a phase the thread has seen complete, with nothing but waits and
    /// tests in between, is legal and not reported: a consumer that polls two barriers with
    /// `test_wait` and then waits on each for the same phase (TensorRT-LLM's tinygemm2 loop,
    /// `corpus/production/poll_both_barriers.phase`) only re-confirms the phase. A `test_wait`
    /// that passes on a consumed phase does not make it fresh again.
    ///
    /// # Why
    ///
    /// `try_wait.parity p` returns true as soon as the phase with parity p is the one that just
    /// completed. If the thread's parity did not flip (a constant parity, a formula whose low bit
    /// is wrong for some round, a phase bit reset at the wrong time), the wait passes at once on
    /// the previous completion, and the thread reads the stage before the producer refilled it and
    /// releases it early. Nothing hangs, the results are silently wrong.
    ///
    /// # Example
    ///
    /// `corpus/hazards/stale-phase/fail.phase`:
    ///
    /// ```phase
    /// protocol stale_phase_fail
    ///
    /// param K = 3
    /// block 2
    ///
    /// mbarrier full
    /// mbarrier empty
    /// buffer slot
    ///
    /// if tid == 0 {
    ///   init full, 1
    ///   init empty, 1
    /// }
    /// syncthreads
    /// role producer when tid == 0 {
    ///   for k in 0..K {
    ///     wait empty parity (k % 2) ^ 1
    ///     write slot
    ///     arrive full
    ///   }
    /// }
    /// role consumer when tid == 1 {
    ///   for k in 0..K {
    ///     wait full parity 0
    ///     read slot
    ///     arrive empty
    ///   }
    /// }
    ///
    /// expect race stale-phase
    /// ```
    ///
    /// # Fix
    ///
    /// Track the phase: flip the parity every time the stage index wraps (`(k / STAGES) % 2`, or a
    /// local flipped with `^ 1`).
    ///
    /// `corpus/hazards/stale-phase/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol stale_phase_pass
    ///
    /// param K = 3
    /// block 2
    ///
    /// mbarrier full
    /// mbarrier empty
    /// buffer slot
    ///
    /// if tid == 0 {
    ///   init full, 1
    ///   init empty, 1
    /// }
    /// syncthreads
    /// role producer when tid == 0 {
    ///   for k in 0..K {
    ///     wait empty parity (k % 2) ^ 1
    ///     write slot
    ///     arrive full
    ///   }
    /// }
    /// role consumer when tid == 1 {
    ///   for k in 0..K {
    ///     wait full parity k % 2
    ///     read slot
    ///     arrive empty
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
    /// > "The `.parity` variant of the instructions test for the completion of the phase indicated
    /// > by the operand `phaseParity`, which is the integer parity of either the current phase or
    /// > the immediately preceding phase of the mbarrier object."
    ///
    /// > "Note: the use of the `.parity` variants of the instructions requires tracking the phase
    /// > of an mbarrier object throughout its lifetime."
    ///
    /// Also: semantics.md §2.8 (parity form, aliasing table, re-waiting), §0.1 (`stale-phase`);
    /// CUTLASS `sm90_pipeline.hpp` (`PipelineState`).
    code: "PC302",
    name: "stale-phase",
    class: Race,
    severity: Error,
    summary: "a wait returns because of a phase completion this thread already observed and consumed: its phase tracking is off",
}
