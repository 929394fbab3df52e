//! The footprints of warps that `elect` (the module doc of `footprint.rs` says what a run is):
//! which warps keep their leader through the runs, so that their lanes' runs may take each
//! `elect` as that leader decides ([`super::run::Elect`]), and what a warp with no leader yet
//! adds as the lane that will be chosen. Both look at a whole warp, which may span chunks of
//! the fold: the chunks keep their lanes' runs ([`Elections`]) for the end of the round.

use super::*;

/// A lane with its run as its warp's leader decides (or as a lane not chosen), and its run as
/// the one chosen where the warp has no leader yet.
pub(super) type LaneRuns = (u32, Arc<Run>, Option<Arc<Run>>);

/// What the `elect` modes of one fold leave for the end of its round, in thread order: the
/// lanes whose runs took `elect`s as their warp's leader decides ([`unsettled_warps`]), and
/// those of warps with no leader yet, as (lane, run not chosen, run as the one chosen)
/// ([`add_choices`]). Both look at a whole warp, which may span chunks.
#[derive(Default)]
pub(super) struct Elections {
    pub(super) decided: Vec<LaneRuns>,
    pub(super) choosers: Vec<(u32, Arc<Run>, Arc<Run>)>,
}

impl std::fmt::Debug for Elections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let decided: Vec<u32> = self.decided.iter().map(|e| e.0).collect();
        let choosers: Vec<u32> = self.choosers.iter().map(|e| e.0).collect();
        f.debug_struct("Elections")
            .field("decided", &decided)
            .field("choosers", &choosers)
            .finish()
    }
}

/// The warps of `decided` (lanes with their runs as the leader decides, and as the one chosen)
/// whose leader may change within the runs: a run could not be followed, or a lane may leave
/// (exit or finish) while an `elect` of the warp may still fire. A lane that leaves after
/// passing as many warp rendezvous as any path of the warp passes leaves after the last firing
/// the runs cover: every path that leaves passes exactly `R` rendezvous and none passes more
/// (every live lane takes part in every firing, so the lanes pass them in step).
pub(super) fn unsettled_warps(
    decided: &[LaneRuns],
    warp_of: impl Fn(u32) -> (u32, u32),
) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < decided.len() {
        let warp = warp_of(decided[i].0);
        let mut runs: Vec<&Run> = Vec::new();
        while i < decided.len() && warp_of(decided[i].0) == warp {
            runs.push(&decided[i].1);
            if let Some(l) = &decided[i].2 {
                runs.push(l);
            }
            i += 1;
        }
        let leaves: Vec<(u32, u32)> = runs.iter().filter_map(|r| r.leave_rv).collect();
        let last = leaves.first().map(|r| r.0);
        let settled = runs.iter().all(|r| !r.unknown)
            && last.is_none_or(|n| {
                leaves.iter().all(|&r| r == (n, n)) && runs.iter().all(|r| r.max_rv <= n)
            });
        if !settled {
            out.push(warp);
        }
    }
    out
}

/// The footprint of the warps with no leader yet, beyond their lanes' runs as lanes that are
/// not chosen (already added): the paths of each lane as the one chosen ([`Elect`]). One lane
/// leads every `elect` of the warp while none leaves, so the warp's arrivals are at most the
/// sum of its lanes' runs not chosen plus, for one lane, what its run as the one chosen adds:
/// the largest such excess over the lanes (likewise the transaction bytes and named-barrier
/// arrivals). What the paths as the one chosen may touch is added for every lane.
pub(super) fn add_choices(
    m: &PhaseModel,
    s: &State,
    choosers: &[(u32, Arc<Run>, Arc<Run>)],
    warp_of: impl Fn(u32) -> (u32, u32),
    f: &mut Frozen,
) {
    let mut i = 0;
    while i < choosers.len() {
        let warp = warp_of(choosers[i].0);
        let mut arrivals: Vec<(u32, u32)> = Vec::new();
        let mut tx: Vec<(u32, i64)> = Vec::new();
        let mut named: Vec<(u32, u32)> = Vec::new();
        while i < choosers.len() && warp_of(choosers[i].0) == warp {
            let (u, skip, lead) = &choosers[i];
            let find = |v: &[(u32, u32)], k: u32| v.iter().find(|e| e.0 == k).map_or(0, |e| e.1);
            let most =
                |v: &mut Vec<(u32, u32)>, k: u32, n: u32| match v.iter_mut().find(|e| e.0 == k) {
                    Some(e) => e.1 = e.1.max(n),
                    None => v.push((k, n)),
                };
            for &(b, n) in &lead.arrivals {
                most(&mut arrivals, b, n.saturating_sub(find(&skip.arrivals, b)));
            }
            for &(slot, n) in &lead.named {
                most(&mut named, slot, n.saturating_sub(find(&skip.named, slot)));
            }
            for &(b, n) in &lead.tx_lower {
                let before = skip.tx_lower.iter().find(|e| e.0 == b).map_or(0, |e| e.1);
                let extra = (n - before).max(0);
                match tx.iter_mut().find(|e| e.0 == b) {
                    Some(e) => e.1 = e.1.max(extra),
                    None => tx.push((b, extra)),
                }
            }
            // The run as the one chosen without its counts (summed above), not copied.
            add_with(m, s, *u, lead, false, f);
            i += 1;
        }
        for (b, n) in arrivals {
            f.arrivals[b as usize] = f.arrivals[b as usize].saturating_add(n);
        }
        for (b, n) in tx {
            f.tx_lower[b as usize] = f.tx_lower[b as usize].saturating_add(n).min(TX_UNBOUNDED);
        }
        for (slot, n) in named {
            f.named_arrivals[slot as usize] = f.named_arrivals[slot as usize].saturating_add(n);
        }
    }
}
