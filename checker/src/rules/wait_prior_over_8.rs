//! `wait-prior-over-8` (PC402).

super::declare_rule! {
    /// # What
    ///
    /// Consumer_wait_prior with N > 8 waits for more batches than asked (libcu++ caps N at 8).
    code: "PC402",
    name: "wait-prior-over-8",
    class: Perf,
    severity: Warning,
    summary: "consumer_wait_prior with N > 8 waits for more batches than asked (libcu++ caps N at 8)",
}
