//! `warp-entanglement` (PC400).

super::declare_rule! {
    /// # What
    ///
    /// Arrive or commit under a lane-divergent condition: the warp updates the barrier once per lane.
    code: "PC400",
    name: "warp-entanglement",
    class: Perf,
    severity: Warning,
    summary: "arrive or commit under a lane-divergent condition: the warp updates the barrier once per lane",
}
