//! A counterexample trace as the table the device-side sequencer replays (see `prelude.cuh`:
//! `pc_step_begin`): header `[entries, held, partner, last]` (`last`: the entry of the last
//! thread step, which reports when it is done), then one 4-word entry per turn in
//! trace order:
//!
//! - a thread's step: `(cta, tid, stmt, occurrence)`. The occurrence of a step is how many
//!   times its thread executed that statement before, so loops replay exactly;
//! - a deferred TMA landing: `(cta, LANDING, issue, slot)`: at this turn the copy issued at
//!   entry `issue` (a `tma` step of block `cta`) lands. The issuing thread only recorded the
//!   request (in request slot `slot`); whichever thread of that block waits for a turn when
//!   this one comes issues the copy onto a private mbarrier, waits for its bytes, then
//!   completes them (`mbarrier.complete_tx`) on the protocol's barrier. So the bytes land at
//!   the trace's landing turn, not about a microsecond after the issue.

use std::collections::BTreeMap;

/// One step: which thread executes which statement (by lowering id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeqStep {
    pub cta: u32,
    pub tid: u32,
    pub stmt: u32,
}

/// A deferred TMA landing: the copy issued at step `issue` lands just before step `before`
/// (`before == steps.len()`: after the last step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Landing {
    pub issue: usize,
    pub before: usize,
}

/// What a held access waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partner {
    /// A thread's step (index into the steps).
    Step(usize),
    /// A deferred landing (index into the landings).
    Landing(usize),
}

/// The table, plus the index each input step got.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeqTable {
    pub words: Vec<u32>,
}

impl SeqTable {
    /// Every thread stops (skips all but the hardware collectives) once the trace is done,
    /// instead of running free: what a race replay shows is inside the trace, and a UB the
    /// protocol reaches after it could fault the launch and lose that (`PC_SEQ_STOP`).
    pub fn stop_after(mut self) -> Self {
        if let Some(n) = self.words.first_mut() {
            *n |= STOP;
        }
        self
    }
}

/// Bit of the entry count word: stop after the trace (see [`SeqTable::stop_after`]).
pub const STOP: u32 = 1 << 31;
pub const NONE: u32 = u32::MAX;
/// The `tid` word of a landing entry (no thread has it).
pub const LANDING: u32 = u32::MAX;
/// Request slots per block (`PC_MAX_LAND` in the prelude); landings past them are not deferred.
pub const MAX_LANDINGS: usize = 16;

/// Build the table. `held`: index of a step whose access stays open until `partner` has run
/// (`partner == None`: open for a fixed window), used to show that two accesses overlap.
/// `landings` are interleaved before the steps they precede, in their order; a landing that
/// does not follow its issue with at least one step between (it would land at once anyway),
/// whose issue is no step, or past [`MAX_LANDINGS`], is dropped: that copy is issued at its
/// step as in fuzz mode.
pub fn build(
    steps: &[SeqStep],
    landings: &[Landing],
    held: Option<usize>,
    partner: Option<Partner>,
) -> SeqTable {
    let kept: Vec<(usize, Landing)> = landings
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, l)| l.issue < steps.len() && l.before > l.issue + 1)
        .take(MAX_LANDINGS)
        .collect();
    // Entry index of each step: the steps before it plus the landings before it.
    let entry_of_step = |i: usize| i + kept.iter().filter(|(_, l)| l.before <= i).count();
    let mut entries: Vec<[u32; 4]> = Vec::with_capacity(steps.len() + kept.len());
    let mut landing_entry: BTreeMap<usize, usize> = BTreeMap::new();
    let mut occ: BTreeMap<(u32, u32, u32), u32> = BTreeMap::new();
    for i in 0..=steps.len() {
        for (slot, (orig, l)) in kept.iter().enumerate().filter(|(_, (_, l))| l.before == i) {
            landing_entry.insert(*orig, entries.len());
            entries.push([
                steps[l.issue].cta,
                LANDING,
                entry_of_step(l.issue) as u32,
                slot as u32,
            ]);
        }
        if let Some(s) = steps.get(i) {
            let n = occ.entry((s.cta, s.tid, s.stmt)).or_insert(0);
            entries.push([s.cta, s.tid, s.stmt, *n]);
            *n += 1;
        }
    }
    let partner = match partner {
        Some(Partner::Step(p)) => Some(entry_of_step(p)),
        // A dropped landing: its copy is issued at once, hold for the fixed window.
        Some(Partner::Landing(l)) => landing_entry.get(&l).copied(),
        None => None,
    };
    let mut words = vec![
        entries.len() as u32,
        held.map_or(NONE, |h| entry_of_step(h) as u32),
        partner.map_or(NONE, |p| p as u32),
        steps
            .len()
            .checked_sub(1)
            .map_or(NONE, |last| entry_of_step(last) as u32),
    ];
    for e in entries {
        words.extend(e);
    }
    SeqTable { words }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(tid: u32, stmt: u32) -> SeqStep {
        SeqStep { cta: 0, tid, stmt }
    }

    #[test]
    fn occurrences_count_per_thread_and_statement() {
        let t = build(
            &[st(0, 3), st(1, 3), st(0, 3), st(0, 4)],
            &[],
            Some(1),
            None,
        );
        assert_eq!(&t.words[..4], &[4, 1, NONE, 3]);
        assert_eq!(
            &t.words[4..],
            &[0, 0, 3, 0, 0, 1, 3, 0, 0, 0, 3, 1, 0, 0, 4, 0]
        );
    }

    #[test]
    fn a_deferred_landing_is_an_entry_of_its_own_and_shifts_later_indices() {
        // t0: tma (stmt 2), t1: wait (5), t1: read (6) held until the copy lands at the end.
        let steps = [st(0, 2), st(1, 5), st(1, 6)];
        let t = build(
            &steps,
            &[Landing {
                issue: 0,
                before: 3,
            }],
            Some(2),
            Some(Partner::Landing(0)),
        );
        assert_eq!(&t.words[..4], &[4, 2, 3, 2]);
        assert_eq!(
            &t.words[4..],
            &[0, 0, 2, 0, 0, 1, 5, 0, 0, 1, 6, 0, 0, LANDING, 0, 0]
        );
        // A landing in the middle moves the steps after it by one entry.
        let t = build(
            &steps,
            &[Landing {
                issue: 0,
                before: 2,
            }],
            Some(2),
            Some(Partner::Step(1)),
        );
        assert_eq!(&t.words[..4], &[4, 3, 1, 3]);
        assert_eq!(&t.words[12..16], &[0, LANDING, 0, 0]);
        assert_eq!(&t.words[16..20], &[0, 1, 6, 0]);
    }

    #[test]
    fn a_landing_right_after_its_issue_is_not_deferred() {
        let steps = [st(0, 2), st(1, 5)];
        let t = build(
            &steps,
            &[Landing {
                issue: 0,
                before: 1,
            }],
            Some(1),
            Some(Partner::Landing(0)),
        );
        assert_eq!(&t.words[..4], &[2, 1, NONE, 1]);
        assert_eq!(t.words.len(), 4 + 8);
    }

    #[test]
    fn landings_take_request_slots_in_order_and_name_their_issue_entry() {
        let steps = [st(0, 2), st(0, 2), st(1, 5), st(1, 6)];
        let t = build(
            &steps,
            &[
                Landing {
                    issue: 0,
                    before: 2,
                },
                Landing {
                    issue: 1,
                    before: 4,
                },
            ],
            None,
            None,
        );
        assert_eq!(t.words[0], 6);
        assert_eq!(&t.words[4 + 8..4 + 12], &[0, LANDING, 0, 0]);
        assert_eq!(&t.words[4 + 20..4 + 24], &[0, LANDING, 1, 1]);
    }
}
