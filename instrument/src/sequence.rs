//! Replaying a counterexample on the instrumented real kernel (`phasecheck confirm --app`,
//! issue 27 point 3): the trace's thread steps as the table the kernel's sequencer reads.
//!
//! Each step of the trace (a thread and the PTX lines of its statement) is mapped to the
//! instrumented points at those lines in the kernel's entry function. Points that one step (or
//! one PTX line) ties together form a *group*; a thread counts, per group, how many times it
//! executed a point of it (a wait: how many times it succeeded), and the host counts the same
//! along the trace. The table lists, per thread of the model, its steps in trace order as
//! `(group, occurrence, turn)`: at a point of group `g`, a thread whose next occurrence of `g`
//! is listed is held until the global ticket reaches `turn`, then runs the instruction, and
//! moves the ticket on (before a blocking `bar.sync`/`barrier.*` instruction, so that the
//! other parties' arrivals can follow it; after any other instruction; after a wait only when
//! it succeeded).
//!
//! Decisions (documented in docs/gpu.md, "Confirm on the real kernel"):
//! - threads the trace does not name, threads past their last step, threads outside the first
//!   cluster (the first block without clusters) and steps at points the table does not list run
//!   free: the order the trace fixes is the order of its listed steps, nothing more;
//! - a step whose PTX lines have no point (a shared-memory access, an instruction the
//!   instrumenter does not touch) is not sequenced, and its turn is not counted;
//! - a thread held past the wait bound gives up: it records the turn it waited for (a stuck
//!   record with [`capture::fuzz::SEQ_HELD`] in its point), sets the ticket past every turn so
//!   that every other held thread runs free, and goes on. The replay then *diverged* at that
//!   step: the real kernel did not follow the trace there. No wait is unbounded, so a
//!   mismatch ends as a divergence, never a hang of the sequencer itself.

use crate::Point;
use std::collections::BTreeMap;

/// One thread step of a counterexample, as the real kernel replays it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceStep {
    /// The block's rank in the cluster (the model's block index).
    pub cta: u32,
    /// The thread's linear index in its block.
    pub tid: u32,
    /// The PTX lines of the statement (several for a loop written once for unrolled copies).
    pub ptx_lines: Vec<u32>,
}

/// One listed step: a thread's `occurrence`-th execution of a point of `group`, at `turn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub cta: u32,
    pub tid: u32,
    pub group: u32,
    pub occurrence: u32,
    /// The turn: the lanes of one warp at the same occurrence of the same group share one
    /// (see [`plan`]).
    pub turn: u32,
    /// Index of the step in the trace given to [`plan`].
    pub step: usize,
}

/// What the sequencer replays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sequence {
    /// The kernel (`.entry` name) whose points hold threads.
    pub kernel: String,
    /// Threads per block in the model (the table's threads are `cta * block + tid`).
    pub block: u32,
    /// Blocks per cluster in the model.
    pub ctas: u32,
    /// Threads that share turns (see [`plan`]).
    pub unit: u32,
    /// The group of each point that a listed step may run at.
    pub group_of_point: BTreeMap<u32, u32>,
    pub groups: u32,
    /// The listed steps, in trace order.
    pub entries: Vec<Entry>,
    /// The trace step that opens each turn.
    pub turn_steps: Vec<usize>,
    /// Steps with no point at their PTX lines (not sequenced).
    pub unmapped: usize,
}

/// Most steps a table holds (its globals grow with it).
pub const MAX_ENTRIES: usize = 1 << 20;
/// Most turns: a give-up record packs two turns into one word.
pub const MAX_TURNS: usize = 1 << 16;

/// The two turns of a give-up record's seed word: (the ticket, the turn that never ended;
/// the recording thread's own turn).
pub fn held_turns(word: u32) -> (u32, u32) {
    (word >> 16, word & 0xffff)
}

/// Map `steps` onto the points of `kernel` in `points`.
///
/// Turns are per `unit` threads (a warp, 32, or a warpgroup, 128): the model runs the lanes of
/// a warp as independent threads, the hardware runs lanes that are converged as one
/// instruction, and the four warps of a warpgroup meet at every `wgmma` (`.sync.aligned` over
/// the warpgroup), so the steps of the threads of one unit at the same occurrence of the same
/// group are one turn, taken where the first of them is in the trace (a thread whose step comes
/// later in the trace runs it with the first: the order within a unit cannot be replayed).
/// [`unit_of`] picks the unit for a kernel.
pub fn plan(
    points: &[Point],
    kernel: &str,
    block: u32,
    ctas: u32,
    unit: u32,
    steps: &[TraceStep],
) -> Result<Sequence, String> {
    let unit = unit.max(1);
    if block == 0 || ctas == 0 {
        return Err("the model has no threads".into());
    }
    let in_kernel: Vec<&Point> = points.iter().filter(|p| p.function == kernel).collect();
    let mut by_line: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for p in &in_kernel {
        by_line.entry(p.ptx_line).or_default().push(p.id);
    }
    // Union-find over point ids: one step ties all its points together.
    let mut parent: BTreeMap<u32, u32> = BTreeMap::new();
    fn find(parent: &mut BTreeMap<u32, u32>, x: u32) -> u32 {
        let p = *parent.entry(x).or_insert(x);
        if p == x {
            return x;
        }
        let r = find(parent, p);
        parent.insert(x, r);
        r
    }
    let step_points: Vec<Vec<u32>> = steps
        .iter()
        .map(|s| {
            let mut v: Vec<u32> = s
                .ptx_lines
                .iter()
                .flat_map(|l| by_line.get(l).cloned().unwrap_or_default())
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect();
    for pts in &step_points {
        for &p in pts {
            find(&mut parent, p);
        }
        for w in pts.windows(2) {
            let (a, b) = (find(&mut parent, w[0]), find(&mut parent, w[1]));
            if a != b {
                // The smaller id is the root: group numbers do not depend on the order.
                parent.insert(a.max(b), a.min(b));
            }
        }
    }
    // Groups numbered by their smallest point.
    let ids: Vec<u32> = parent.keys().copied().collect();
    let mut root_group: BTreeMap<u32, u32> = BTreeMap::new();
    let mut group_of_point = BTreeMap::new();
    for id in ids {
        let r = find(&mut parent, id);
        let n = root_group.len() as u32;
        let g = *root_group.entry(r).or_insert(n);
        group_of_point.insert(id, g);
    }
    let mut entries = Vec::new();
    let mut turn_steps = Vec::new();
    let mut turn_of: BTreeMap<(u32, u32, u32, u32), u32> = BTreeMap::new();
    let mut unmapped = 0;
    let mut occ: BTreeMap<(u32, u32, u32), u32> = BTreeMap::new();
    for (i, (s, pts)) in steps.iter().zip(&step_points).enumerate() {
        let Some(first) = pts.first() else {
            unmapped += 1;
            continue;
        };
        if s.cta >= ctas || s.tid >= block {
            return Err(format!(
                "step {} names thread {} of block {}, outside the model's {ctas} x {block} threads",
                i + 1,
                s.tid,
                s.cta
            ));
        }
        let group = group_of_point[first];
        let n = occ.entry((s.cta, s.tid, group)).or_insert(0);
        let turn = *turn_of
            .entry((s.cta, s.tid / unit, group, *n))
            .or_insert_with(|| {
                turn_steps.push(i);
                turn_steps.len() as u32 - 1
            });
        entries.push(Entry {
            cta: s.cta,
            tid: s.tid,
            group,
            occurrence: *n,
            turn,
            step: i,
        });
        *n += 1;
    }
    if turn_steps.len() > MAX_TURNS {
        return Err(format!(
            "the trace has {} turns, more than the {MAX_TURNS} a replay holds",
            turn_steps.len()
        ));
    }
    if entries.len() > MAX_ENTRIES {
        return Err(format!(
            "the trace has {} sequenced steps, more than the {MAX_ENTRIES} a table holds",
            entries.len()
        ));
    }
    Ok(Sequence {
        kernel: kernel.to_string(),
        block,
        ctas,
        unit,
        groups: root_group.len() as u32,
        group_of_point,
        entries,
        turn_steps,
        unmapped,
    })
}

/// The threads that share turns in `ptx`: a warpgroup (128) in a kernel with `wgmma`
/// instructions (its warps meet at each), else a warp (32).
pub fn unit_of(ptx: &str) -> u32 {
    if ptx.contains("wgmma.") { 128 } else { 32 }
}

impl Sequence {
    /// Threads of the table: `cta * block + tid`.
    pub fn actors(&self) -> u32 {
        self.block * self.ctas
    }

    /// The table as the kernel reads it: per thread, where its entries start
    /// (`offsets[a]..offsets[a + 1]`), and the entries `(group, occurrence, turn)` grouped by
    /// thread, each thread's in turn order.
    pub fn tables(&self) -> (Vec<u32>, Vec<u32>) {
        let n = self.actors() as usize;
        let mut per: Vec<Vec<(u32, u32, u32)>> = vec![Vec::new(); n];
        for e in &self.entries {
            per[(e.cta * self.block + e.tid) as usize].push((e.group, e.occurrence, e.turn));
        }
        let mut offsets = Vec::with_capacity(n + 1);
        let mut words = Vec::new();
        for list in &per {
            offsets.push((words.len() / 3) as u32);
            for &(g, o, t) in list {
                words.extend([g, o, t]);
            }
        }
        offsets.push((words.len() / 3) as u32);
        (offsets, words)
    }

    /// The trace step that opens turn `turn` (what "diverged at step N" names, 0-based).
    pub fn step_of_turn(&self, turn: u32) -> Option<usize> {
        self.turn_steps.get(turn as usize).copied()
    }

    /// How many turns there are.
    pub fn turns(&self) -> usize {
        self.turn_steps.len()
    }

    /// The threads whose steps are turn `turn`.
    pub fn threads_of_turn(&self, turn: u32) -> Vec<(u32, u32)> {
        self.entries
            .iter()
            .filter(|e| e.turn == turn)
            .map(|e| (e.cta, e.tid))
            .collect()
    }

    /// The points of group `group`.
    pub fn points_of_group(&self, group: u32) -> Vec<u32> {
        self.group_of_point
            .iter()
            .filter(|(_, g)| **g == group)
            .map(|(p, _)| *p)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PointKind;

    fn pt(id: u32, line: u32, function: &str) -> Point {
        Point {
            id,
            kind: PointKind::Delay,
            function: function.into(),
            ptx_line: line,
            text: String::new(),
            source: None,
            stack: Vec::new(),
        }
    }

    fn step(tid: u32, lines: &[u32]) -> TraceStep {
        TraceStep {
            cta: 0,
            tid,
            ptx_lines: lines.to_vec(),
        }
    }

    #[test]
    fn steps_become_turns_with_occurrences_per_thread_and_group() {
        let points = [
            pt(0, 10, "k"),
            pt(1, 20, "k"),
            pt(2, 30, "k"),
            pt(3, 20, "f"),
        ];
        let s = plan(
            &points,
            "k",
            64,
            1,
            32,
            &[
                step(0, &[10]),
                step(32, &[20]),
                step(0, &[10]),
                step(32, &[99]), // no point: not sequenced
                step(0, &[20, 30]),
                step(32, &[30]),
            ],
        )
        .expect("plans");
        // 20 and 30 are one group (one step names both); the `.func`'s point is not listed.
        assert_eq!(s.groups, 2);
        assert_eq!(
            s.group_of_point
                .iter()
                .map(|(a, b)| (*a, *b))
                .collect::<Vec<_>>(),
            [(0, 0), (1, 1), (2, 1)]
        );
        assert_eq!(s.unmapped, 1);
        let got: Vec<(u32, u32, u32, usize)> = s
            .entries
            .iter()
            .map(|e| (e.tid, e.group, e.occurrence, e.step))
            .collect();
        assert_eq!(
            got,
            [
                (0, 0, 0, 0),
                (32, 1, 0, 1),
                (0, 0, 1, 2),
                (0, 1, 0, 4),
                (32, 1, 1, 5)
            ]
        );
        let (offsets, words) = s.tables();
        assert_eq!(offsets.len(), 65);
        assert_eq!(offsets[..2], [0, 3]);
        assert_eq!(offsets[32..34], [3, 5]);
        assert_eq!(offsets[64], 5);
        // Thread 0: turns 0, 2, 3; thread 32: turns 1, 4.
        assert_eq!(words, [0, 0, 0, 0, 1, 2, 1, 0, 3, 1, 0, 1, 1, 1, 4]);
        assert_eq!(s.step_of_turn(3), Some(4));
        assert_eq!(s.step_of_turn(5), None);
        assert_eq!(s.threads_of_turn(1), [(0, 32)]);
        assert_eq!(s.points_of_group(1), [1, 2]);
        assert_eq!(held_turns((7 << 16) | 9), (7, 9));
    }

    /// The trace runs thread 0 through two statements, then thread 1 (its warp's lane 1)
    /// through the same two: the hardware runs the two lanes together, so each statement is
    /// one turn of the warp, where lane 0 took it. Thread 32 (another warp) keeps its own turn.
    #[test]
    fn lanes_of_one_warp_share_a_turn_per_occurrence() {
        let points = [pt(0, 10, "k"), pt(1, 20, "k")];
        let s = plan(
            &points,
            "k",
            64,
            1,
            32,
            &[
                step(0, &[10]),
                step(0, &[20]),
                step(32, &[10]),
                step(1, &[10]),
                step(1, &[20]),
            ],
        )
        .expect("plans");
        let turns: Vec<(u32, u32)> = s.entries.iter().map(|e| (e.tid, e.turn)).collect();
        assert_eq!(turns, [(0, 0), (0, 1), (32, 2), (1, 0), (1, 1)]);
        assert_eq!(s.turns(), 3);
        assert_eq!(s.step_of_turn(2), Some(2));
        // By warpgroups (a `wgmma` kernel), thread 32 shares thread 0's turn too.
        let wg = plan(
            &points,
            "k",
            64,
            1,
            128,
            &[step(0, &[10]), step(0, &[20]), step(32, &[10])],
        )
        .expect("plans");
        let turns: Vec<u32> = wg.entries.iter().map(|e| e.turn).collect();
        assert_eq!(turns, [0, 1, 0]);
        assert_eq!(unit_of("\twgmma.fence.sync.aligned;"), 128);
        assert_eq!(unit_of("\tbar.sync 0;"), 32);
    }

    #[test]
    fn a_thread_outside_the_model_is_an_error() {
        let points = [pt(0, 10, "k")];
        let e = plan(&points, "k", 2, 1, 32, &[step(5, &[10])]).unwrap_err();
        assert!(e.contains("outside the model's 1 x 2 threads"), "{e}");
    }
}
