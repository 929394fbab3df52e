//! A counterexample trace as the table the device-side sequencer replays (see `prelude.cuh`:
//! `pc_step_begin`): header `[entries, held, partner, 0]`, then `(cta, tid, stmt, occurrence)`
//! per step in trace order. The occurrence of a step is how many times its thread executed that
//! statement before, so loops replay exactly.

use std::collections::BTreeMap;

/// One step: which thread executes which statement (by lowering id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeqStep {
    pub cta: u32,
    pub tid: u32,
    pub stmt: u32,
}

/// The table, plus the index each input step got.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeqTable {
    pub words: Vec<u32>,
}

pub const NONE: u32 = u32::MAX;

/// Build the table. `held`: index of a step whose access stays open until step `partner` has
/// run (`partner == None`: open for a fixed window), used to show that two accesses overlap.
pub fn build(steps: &[SeqStep], held: Option<usize>, partner: Option<usize>) -> SeqTable {
    let mut words = vec![
        steps.len() as u32,
        held.map_or(NONE, |h| h as u32),
        partner.map_or(NONE, |p| p as u32),
        0,
    ];
    let mut occ: BTreeMap<(u32, u32, u32), u32> = BTreeMap::new();
    for s in steps {
        let n = occ.entry((s.cta, s.tid, s.stmt)).or_insert(0);
        words.extend([s.cta, s.tid, s.stmt, *n]);
        *n += 1;
    }
    SeqTable { words }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occurrences_count_per_thread_and_statement() {
        let st = |tid, stmt| SeqStep { cta: 0, tid, stmt };
        let t = build(&[st(0, 3), st(1, 3), st(0, 3), st(0, 4)], Some(1), None);
        assert_eq!(&t.words[..4], &[4, 1, NONE, 0]);
        assert_eq!(
            &t.words[4..],
            &[0, 0, 3, 0, 0, 1, 3, 0, 0, 0, 3, 1, 0, 0, 4, 0]
        );
    }
}
