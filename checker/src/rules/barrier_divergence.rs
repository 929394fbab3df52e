//! `barrier-divergence` (PC211).

super::declare_rule! {
    /// # What
    ///
    /// Syncthreads, syncwarp or a cluster barrier reached by some threads at different statements.
    code: "PC211",
    name: "barrier-divergence",
    class: Ub,
    severity: Error,
    summary: "syncthreads, syncwarp or a cluster barrier reached by some threads at different statements",
}
