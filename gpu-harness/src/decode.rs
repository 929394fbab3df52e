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

/// Where one thread was when its launch was given up: its position word (`PC_POS_*` in the
/// prelude).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadAt {
    /// Never started: its block was not resident (the GPU had no room while others hung).
    NotStarted,
    /// Running, and the last hardware collective it entered, as (statement, occurrence), if
    /// any. Every other wait of the kernel is bounded, so a thread still running long after
    /// the launch should have ended is blocked in that collective.
    Running(Option<(u32, u32)>),
    Done,
}

pub const POS_RUN: u64 = 1 << 62;
pub const POS_DONE: u64 = 2 << 62;

impl ThreadAt {
    pub fn decode(w: u64) -> ThreadAt {
        match w >> 62 {
            0 => ThreadAt::NotStarted,
            2 => ThreadAt::Done,
            _ => {
                let stmt = ((w >> 32) & 0x3fff_ffff) as u32;
                ThreadAt::Running(stmt.checked_sub(1).map(|s| (s, w as u32)))
            }
        }
    }

    /// The word a thread at `self` leaves (the inverse of [`ThreadAt::decode`]; for tests).
    pub fn encode(self) -> u64 {
        match self {
            ThreadAt::NotStarted => 0,
            ThreadAt::Done => POS_DONE,
            ThreadAt::Running(None) => POS_RUN,
            ThreadAt::Running(Some((s, occ))) => {
                POS_RUN | (u64::from(s + 1) << 32) | u64::from(occ)
            }
        }
    }
}

/// Threads blocked at one hardware collective of a stuck launch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockedAt {
    pub stmt: u32,
    /// Threads blocked there, over all trials.
    pub threads: u64,
    /// Trials with a thread blocked there.
    pub trials: u64,
    /// The first block (in launch order) of the first such trial.
    pub first_block: u64,
    /// That trial's threads blocked there: (cta rank in the cluster, tid, occurrence).
    pub first_threads: Vec<(u32, u32, u32)>,
}

/// The position words of a stuck launch, summed up per trial and per collective.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Positions {
    pub trials: u64,
    /// Trials whose threads all finished.
    pub trials_done: u64,
    /// Trials with a thread still running (blocked).
    pub trials_stuck: u64,
    /// Trials none of whose threads started (not resident while the others hung).
    pub trials_not_started: u64,
    /// Per collective statement, in statement order.
    pub blocked: Vec<BlockedAt>,
    /// Threads still running that had entered no hardware collective yet.
    pub running_elsewhere: u64,
}

impl Positions {
    /// Sum up the position words of a launch of `blocks` blocks (see `Lowered::pos_words`):
    /// block `b`'s threads of kernel `k` at `b * stride + base_k`; a trial is a cluster of one
    /// kernel's blocks, or block `b` of every kernel.
    pub fn decode(lowered: &Lowered, blocks: u32, words: &[u64]) -> Positions {
        use std::collections::BTreeMap;
        let stride = lowered.pos_stride() as usize;
        let cluster = lowered.cluster.max(1) as u64;
        let trials = u64::from(blocks) / cluster;
        let mut p = Positions {
            trials,
            ..Default::default()
        };
        // Per trial: (any running, any done, any started).
        let mut state = vec![(false, false, false); trials as usize];
        let mut blocked: BTreeMap<u32, BlockedAt> = BTreeMap::new();
        let mut seen_in: BTreeMap<u32, u64> = BTreeMap::new();
        for b in 0..u64::from(blocks) {
            let trial = b / cluster;
            let Some(st) = state.get_mut(trial as usize) else {
                continue;
            };
            let cta = (b % cluster) as u32;
            let mut base = 0usize;
            for k in &lowered.kernels {
                for tid in 0..k.block {
                    let i = b as usize * stride + base + tid as usize;
                    let Some(&w) = words.get(i) else {
                        continue;
                    };
                    match ThreadAt::decode(w) {
                        ThreadAt::NotStarted => {}
                        ThreadAt::Done => {
                            st.1 = true;
                            st.2 = true;
                        }
                        ThreadAt::Running(at) => {
                            st.0 = true;
                            st.2 = true;
                            let Some((stmt, occ)) = at else {
                                p.running_elsewhere += 1;
                                continue;
                            };
                            let e = blocked.entry(stmt).or_insert(BlockedAt {
                                stmt,
                                threads: 0,
                                trials: 0,
                                first_block: trial * cluster,
                                first_threads: Vec::new(),
                            });
                            e.threads += 1;
                            let last = seen_in.entry(stmt).or_insert(u64::MAX);
                            if *last != trial {
                                *last = trial;
                                e.trials += 1;
                            }
                            if e.first_block == trial * cluster {
                                e.first_threads.push((cta, tid, occ));
                            }
                        }
                    }
                }
                base += k.block as usize;
            }
        }
        for (running, _, started) in state {
            if running {
                p.trials_stuck += 1;
            } else if started {
                p.trials_done += 1;
            } else {
                p.trials_not_started += 1;
            }
        }
        p.blocked = blocked.into_values().collect();
        p
    }
}

/// `t0-t31, t40` (or `cta1.t3`): a list of threads, consecutive ones as ranges.
pub fn thread_ranges(threads: &[(u32, u32)], cluster: u32) -> String {
    let mut sorted = threads.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let name = |cta: u32, tid: u32| {
        if cluster > 1 {
            format!("cta{cta}.t{tid}")
        } else {
            format!("t{tid}")
        }
    };
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let (cta, start) = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == (cta, end + 1) {
            end += 1;
            i += 1;
        }
        parts.push(if end == start {
            name(cta, start)
        } else {
            format!("{}-t{end}", name(cta, start))
        });
        i += 1;
    }
    parts.join(", ")
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

    #[test]
    fn position_words_round_trip() {
        for at in [
            ThreadAt::NotStarted,
            ThreadAt::Done,
            ThreadAt::Running(None),
            ThreadAt::Running(Some((0, 0))),
            ThreadAt::Running(Some((17, 3))),
        ] {
            assert_eq!(ThreadAt::decode(at.encode()), at);
        }
        // The prelude's words: PC_POS_RUN | (stmt + 1) << 32 | occurrence.
        assert_eq!(
            ThreadAt::decode((1u64 << 62) | (5u64 << 32) | 2),
            ThreadAt::Running(Some((4, 2)))
        );
        assert_eq!(ThreadAt::decode(2u64 << 62), ThreadAt::Done);
    }

    /// A stuck launch of a kernel whose warp 0 waits at a named barrier that warp 1 never
    /// reaches: per trial and per collective, from the position words alone.
    #[test]
    fn positions_of_a_stuck_launch_sum_up_per_trial_and_collective() {
        let text = "protocol stuck\nblock 64\nsyncthreads\nif tid < 32 {\n  bar_sync 1, 64\n}\n";
        let file = protocols::SourceFile::new("stuck.phase", text);
        let program = protocols::load(&file, &[]).expect("loads");
        let lowered =
            crate::lower::lower(&program, Some(&file), &Default::default()).expect("lowers");
        let bar = lowered
            .stmts
            .iter()
            .find(|s| s.keyword == "bar_sync")
            .expect("a bar_sync")
            .id;
        let sync = lowered
            .stmts
            .iter()
            .find(|s| s.keyword == "syncthreads")
            .expect("a syncthreads")
            .id;
        assert_eq!(lowered.pos_words(4), 4 * 64);
        // 4 blocks: 0 done, 1 and 2 stuck (warp 0 at the bar_sync, warp 1 done), 3 never
        // started; in block 2 one thread still at (or past) the syncthreads, one with no
        // collective yet.
        let mut w = vec![0u64; lowered.pos_words(4)];
        for t in 0..64 {
            w[t] = ThreadAt::Done.encode();
            for b in [1, 2] {
                w[b * 64 + t] = if t < 32 {
                    ThreadAt::Running(Some((bar, 0))).encode()
                } else {
                    ThreadAt::Done.encode()
                };
            }
        }
        w[2 * 64 + 5] = ThreadAt::Running(Some((sync, 0))).encode();
        w[2 * 64 + 6] = ThreadAt::Running(None).encode();
        let p = Positions::decode(&lowered, 4, &w);
        assert_eq!(
            (
                p.trials,
                p.trials_done,
                p.trials_stuck,
                p.trials_not_started
            ),
            (4, 1, 2, 1)
        );
        assert_eq!(p.running_elsewhere, 1);
        assert_eq!(p.blocked.len(), 2);
        let at_bar = p
            .blocked
            .iter()
            .find(|b| b.stmt == bar)
            .expect("at the bar_sync");
        assert_eq!(
            (at_bar.threads, at_bar.trials, at_bar.first_block),
            (62, 2, 1)
        );
        assert_eq!(at_bar.first_threads.len(), 32);
        let firsts: Vec<(u32, u32)> = at_bar.first_threads.iter().map(|t| (t.0, t.1)).collect();
        assert_eq!(thread_ranges(&firsts, 1), "t0-t31");
        let at_sync = p
            .blocked
            .iter()
            .find(|b| b.stmt == sync)
            .expect("at the syncthreads");
        assert_eq!((at_sync.threads, at_sync.first_block), (1, 2));
        // A short read (the words of a smaller launch) is no panic.
        let p = Positions::decode(&lowered, 4, &w[..10]);
        assert_eq!(p.trials_not_started, 3);
    }

    #[test]
    fn thread_lists_fold_into_ranges() {
        let t: Vec<(u32, u32)> = (0..32).map(|i| (0, i)).chain([(0, 40), (0, 42)]).collect();
        assert_eq!(thread_ranges(&t, 1), "t0-t31, t40, t42");
        assert_eq!(
            thread_ranges(&[(1, 3), (0, 3), (1, 4)], 2),
            "cta0.t3, cta1.t3-t4"
        );
    }
}
