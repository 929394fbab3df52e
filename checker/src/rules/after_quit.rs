//! `after-quit` (PC216).

super::declare_rule! {
    /// # What
    ///
    /// A pipeline operation by a thread after it called `quit` on that pipeline, or a `quit` that
    /// leaves a stage barrier's phase one arrival short while another thread waits for that
    /// phase (reported at the `quit`, together with the `deadlock` it causes, whose headline
    /// names the quit).
    ///
    /// A quit that leaves short only phases that nobody waits for is not reported: a consumer
    /// that quits at one of its last batches owes `consumer_release`s that no later
    /// `producer_acquire` waits for (on an H100 such a pipeline finishes).
    ///
    /// # Why
    ///
    /// After `pipeline::quit()` the thread's pipeline object is in the quitted state and only its
    /// destructor may run (libcu++). And quit only drops the thread from the shared state's
    /// reference count: it does not `arrive_and_drop` on the stage barriers, which still count it,
    /// so a thread that quits while others carry on leaves later phases one arrival short (a hang
    /// once someone waits for one of them); if it is the last reference holder it invalidates
    /// barriers that others still use. The Programming Guide's "The remaining participating
    /// threads can proceed normally" holds only for a thread-scope pipeline or a thread whose
    /// later arrivals nobody needs.
    ///
    /// # Example
    ///
    /// `corpus/hazards/after-quit/fail.phase`:
    ///
    /// ```phase
    /// protocol after_quit_fail
    ///
    /// param NP = 1
    /// param NC = 1
    /// param NB = 3
    /// block NP + NC
    ///
    /// pipeline pipe stages 2 producers NP consumers NC
    /// buffer chunk[2]
    ///
    /// role producer when tid < NP {
    ///   for b in 0..NB {
    ///     producer_acquire pipe
    ///     memcpy_async chunk[b % 2] -> pipe
    ///     producer_commit pipe
    ///   }
    ///   quit pipe
    /// }
    /// role consumer when tid >= NP {
    ///   for b in 0..NB {
    ///     consumer_wait pipe
    ///     read chunk[b % 2]
    ///     consumer_release pipe
    ///     if b == 0 { quit pipe }
    ///   }
    /// }
    ///
    /// expect ub after-quit
    /// ```
    ///
    /// # Fix
    ///
    /// Quit once, after the thread's last operation on the pipeline; leave a block-scope pipeline
    /// early only when no other thread will wait for a stage phase that still counts this thread.
    ///
    /// `corpus/hazards/after-quit/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol after_quit_pass
    ///
    /// param NP = 1
    /// param NC = 1
    /// param NB = 3
    /// block NP + NC
    ///
    /// pipeline pipe stages 2 producers NP consumers NC
    /// buffer chunk[2]
    ///
    /// role producer when tid < NP {
    ///   for b in 0..NB {
    ///     producer_acquire pipe
    ///     memcpy_async chunk[b % 2] -> pipe
    ///     producer_commit pipe
    ///   }
    ///   quit pipe
    /// }
    /// role consumer when tid >= NP {
    ///   for b in 0..NB {
    ///     consumer_wait pipe
    ///     read chunk[b % 2]
    ///     consumer_release pipe
    ///     if b == NB - 1 { quit pipe }
    ///   }
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// Not an ISA rule: it rests on libcu++'s contract for `cuda::pipeline::quit` and on how
    /// libcu++ implements it. libcu++ documentation, *cuda::pipeline::quit* (`pipeline/quit.html`;
    /// "may called" is the page's own wording):
    ///
    /// > "Quits the current thread’s participation in the collective ownership of the corresponding
    /// > cuda::pipeline_shared_state."
    ///
    /// > "After the completion of a call to cuda::pipeline::quit, no other operations other than
    /// > cuda::pipeline::~pipeline may called by the current thread."
    ///
    /// The reading the rule qualifies, CUDA Programming Guide (the restructured guide,
    /// `04-special-topics/pipelines.html`), §4.10.5 *Early Exit*:
    ///
    /// > "The remaining participating threads can proceed normally with subsequent operations."
    ///
    /// Also: semantics.md §4.2 P2, P6, P7; libcu++ source `cuda/pipeline` (`quit`,
    /// `pipeline_shared_state`).
    code: "PC216",
    name: "after-quit",
    class: Ub,
    severity: Error,
    summary: "a pipeline operation after quit, or a quit that leaves a phase short which another thread waits for",
}
