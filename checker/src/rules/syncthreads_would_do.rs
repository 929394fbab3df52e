//! `syncthreads-would-do` (PC403).

super::declare_rule! {
    /// # What
    ///
    /// A whole-block async barrier used like syncthreads (every thread arrives and waits at once).
    code: "PC403",
    name: "syncthreads-would-do",
    class: Perf,
    severity: Warning,
    summary: "a whole-block async barrier used like syncthreads (every thread arrives and waits at once)",
}
