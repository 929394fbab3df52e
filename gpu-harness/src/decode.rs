//! The kernel's `out` array: its layout (mirroring the `PC_OUT_*` macros of `prelude.cuh`) and
//! its decoding into counts and events.

use crate::lower::{Lowered, MAX_TRIALS};
use serde::Serialize;

pub const HEADER: usize = 8;
pub const EVENT_WORDS: usize = 6;
pub const MAX_EVENTS: usize = 4096;
/// Per-statement event kinds (rows of the counters).
pub const KINDS: usize = 4;

/// What an event says happened (the `PC_EV_*` codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// A bounded wait expired.
    Hang,
    /// A buffer access overlapped a conflicting one (torn fill, stamp changed under a read,
    /// write over a write in flight).
    Race,
    /// A wait passed on a phase completion this thread had already observed.
    StalePhase,
    /// A hardware anomaly at the statement.
    Fault,
    /// Confirm mode: the replay left the trace.
    Diverged,
    /// Confirm mode: a traced step never got its turn.
    SeqStuck,
    /// Confirm mode: the last traced step completed (`a` = 1 if its wait did not pass at once).
    StepDone,
}

impl EventKind {
    fn from_code(c: u64) -> Option<EventKind> {
        Some(match c {
            0 => EventKind::Hang,
            1 => EventKind::Race,
            2 => EventKind::StalePhase,
            3 => EventKind::Fault,
            8 => EventKind::Diverged,
            9 => EventKind::SeqStuck,
            10 => EventKind::StepDone,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Hang => "hang",
            EventKind::Race => "stale read",
            EventKind::StalePhase => "stale phase",
            EventKind::Fault => "fault",
            EventKind::Diverged => "replay diverged",
            EventKind::SeqStuck => "sequencer stuck",
            EventKind::StepDone => "last step done",
        }
    }
}

/// Index layout of `out` for one lowered kernel.
#[derive(Clone, Copy, Debug)]
pub struct OutLayout {
    pub nobj: usize,
    pub nstmt: usize,
}

impl OutLayout {
    pub fn new(l: &Lowered) -> Self {
        OutLayout {
            nobj: (l.objects as usize).max(1),
            nstmt: l.stmts.len().max(1),
        }
    }
    pub fn arr(&self) -> usize {
        HEADER
    }
    pub fn init(&self) -> usize {
        self.arr() + 2 * self.nobj
    }
    pub fn count(&self) -> usize {
        self.init() + 2 * self.nobj
    }
    pub fn first(&self) -> usize {
        self.count() + KINDS * self.nstmt
    }
    pub fn turn(&self) -> usize {
        self.first() + KINDS * self.nstmt
    }
    pub fn events(&self) -> usize {
        self.turn() + MAX_TRIALS as usize
    }
    pub fn total_words(&self) -> usize {
        self.events() + MAX_EVENTS * EVENT_WORDS
    }
    /// The initial contents: zeros, except the first-block slots (atomicMin targets).
    pub fn initial(&self, l: &Lowered) -> Vec<u64> {
        let mut v = vec![0u64; self.total_words()];
        for w in &mut v[self.first()..self.turn()] {
            *w = u64::MAX;
        }
        for &(obj, prod, cons) in &l.pipeline_counts {
            v[self.init() + 2 * obj as usize] = u64::from(prod);
            v[self.init() + 2 * obj as usize + 1] = u64::from(cons);
        }
        v
    }
}

/// One recorded event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    pub kind: EventKind,
    pub stmt: u32,
    pub tid: u32,
    pub cta: u32,
    /// Block index in the launch.
    pub block: u64,
    /// Hang: observed barrier state (see [`BarrierState`]); race: the other party's stamp.
    pub a: u64,
    /// Hang: the parity or token waited for; race: instance index << 32 | detector.
    pub b: u64,
    /// Hang: the raw 64-bit mbarrier word (layout undocumented).
    pub raw: u64,
}

/// What a writer stamp says about the access that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Stamp {
    /// Statement id of the writer (None: never written).
    pub stmt: Option<u32>,
    /// Its occurrence (iteration) count.
    pub occurrence: u32,
    pub cta: u32,
    pub tid: u32,
    /// The write was still in flight.
    pub busy: bool,
    /// A part write (`write part`, PC_PART).
    pub part: bool,
}

impl Stamp {
    pub fn decode(s: u64) -> Stamp {
        let stmt = ((s >> 48) & 0x7fff) as u32;
        Stamp {
            stmt: stmt.checked_sub(1),
            occurrence: ((s >> 16) & 0xffff_ffff) as u32,
            cta: ((s >> 10) & 0x1f) as u32,
            tid: (s & 0x3ff) as u32,
            busy: s >> 63 != 0,
            part: (s >> 15) & 1 != 0,
        }
    }
}

/// The observed state of an mbarrier at an expired wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BarrierState {
    /// Parity of the phase in progress (from `test_wait.parity`).
    pub current_parity: u32,
    /// Instance index.
    pub index: u32,
}

impl BarrierState {
    pub fn decode(a: u64) -> BarrierState {
        BarrierState {
            current_parity: (a >> 63) as u32,
            index: ((a >> 48) & 0x7fff) as u32,
        }
    }
}

/// Decoded results of one launch.
#[derive(Clone, Debug, Default)]
pub struct LaunchResult {
    pub threads_done: u64,
    pub runaway: u64,
    pub seq_diverged: u64,
    pub seq_stuck: u64,
    /// Several kernels: blocks that started without their trial's partner blocks
    /// (`PC_OUT_APART`).
    pub apart: u64,
    /// `counts[kind][stmt]`.
    pub counts: Vec<Vec<u64>>,
    /// `first_block[kind][stmt]` (None: not seen).
    pub first_block: Vec<Vec<Option<u64>>>,
    /// Arrivals per object slot (2 per object) and init counts per slot.
    pub arrivals: Vec<u64>,
    pub init_counts: Vec<u64>,
    pub events: Vec<Event>,
    /// Events recorded beyond the buffer's capacity.
    pub events_dropped: u64,
}

impl LaunchResult {
    pub fn decode(layout: &OutLayout, out: &[u64]) -> LaunchResult {
        let mut r = LaunchResult {
            threads_done: out[0],
            runaway: out[1],
            seq_diverged: out[3],
            seq_stuck: out[4],
            apart: out[5],
            ..Default::default()
        };
        for k in 0..KINDS {
            let base = layout.count() + k * layout.nstmt;
            r.counts.push(out[base..base + layout.nstmt].to_vec());
            let base = layout.first() + k * layout.nstmt;
            r.first_block.push(
                out[base..base + layout.nstmt]
                    .iter()
                    .map(|&b| (b != u64::MAX).then_some(b))
                    .collect(),
            );
        }
        r.arrivals = out[layout.arr()..layout.arr() + 2 * layout.nobj].to_vec();
        r.init_counts = out[layout.init()..layout.init() + 2 * layout.nobj].to_vec();
        let n = out[2] as usize;
        r.events_dropped = n.saturating_sub(MAX_EVENTS) as u64;
        for i in 0..n.min(MAX_EVENTS) {
            let e = &out[layout.events() + i * EVENT_WORDS..][..EVENT_WORDS];
            let Some(kind) = EventKind::from_code(e[0] & 0xff) else {
                continue;
            };
            r.events.push(Event {
                kind,
                stmt: ((e[0] >> 8) & 0xffff) as u32,
                tid: ((e[0] >> 24) & 0xffff) as u32,
                cta: ((e[0] >> 40) & 0xff) as u32,
                block: e[1],
                a: e[2],
                b: e[3],
                raw: e[4],
            });
        }
        // Events land in whatever order the threads won the slot: sort for determinism.
        r.events
            .sort_by_key(|e| (e.block, e.kind, e.stmt, e.cta, e.tid, e.a, e.b));
        r
    }

    /// Completed barrier phases: for every object slot, arrivals over the arrival count.
    pub fn phases(&self) -> u64 {
        self.arrivals
            .iter()
            .zip(&self.init_counts)
            .map(|(&a, &c)| a.checked_div(c).unwrap_or(0))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_round_trip() {
        // stmt 4 (stored +1), occurrence 7, cta 1, tid 37, busy
        let s = (1u64 << 63) | (5u64 << 48) | (7u64 << 16) | (1u64 << 10) | 37;
        let d = Stamp::decode(s);
        assert_eq!(d.stmt, Some(4));
        assert_eq!(d.occurrence, 7);
        assert_eq!(d.cta, 1);
        assert_eq!(d.tid, 37);
        assert!(d.busy);
        assert!(!d.part);
        assert_eq!(Stamp::decode(0).stmt, None);
        // A part write's stamp: PC_PART is bit 15, above the cta rank.
        let d = Stamp::decode((5u64 << 48) | (1u64 << 15) | (3u64 << 10) | 7);
        assert_eq!((d.stmt, d.cta, d.tid, d.part), (Some(4), 3, 7, true));
    }

    #[test]
    fn header_words_decode() {
        let layout = OutLayout { nobj: 1, nstmt: 1 };
        let mut out = vec![0u64; layout.total_words()];
        out[0] = 64; // threads done
        out[5] = 2; // PC_OUT_APART
        let r = LaunchResult::decode(&layout, &out);
        assert_eq!((r.threads_done, r.apart), (64, 2));
    }

    #[test]
    fn barrier_state_decodes_parity_and_index() {
        let a = (1u64 << 63) | (3u64 << 48);
        let b = BarrierState::decode(a);
        assert_eq!((b.current_parity, b.index), (1, 3));
    }
}
