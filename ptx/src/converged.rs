//! Warp-converged instructions as `syncwarp` (issue 23 point 7; docs/ptx.md §3, "Warp-converged
//! instructions"; docs/semantics.md W9).
//!
//! A `.sync.aligned` instruction (`wgmma.fence`, `wgmma.mma_async`, `wgmma.wait_group`,
//! `ldmatrix`, `mma.sync`, ...) "causes the executing thread to wait until all threads in the
//! warp execute the same ... instruction before resuming execution", and a `.sync` warp
//! collective (`shfl.sync`, `vote.sync`, ...) waits for every lane of its member mask. The
//! executor marks each lane's run of one with `Ev::Converged` (for a collective only when its
//! mask is every lane of the warp that has not exited). Here, per warp:
//!
//! - when every lane of the warp ran the same warp-converged instructions in the same order
//!   (which `.aligned` promises), each becomes a `syncwarp` at that instruction: an ordering
//!   among the warp's lanes, as `bar.warp.sync` gives. The ISA states that ordering for
//!   `bar.warp.sync` only; for the others it is the reading this front end takes, on the
//!   hardware's evidence (semantics.md W9, gpu.md "Warp-converged instructions");
//! - a run of them with nothing between, or with only reads on both sides (a WGMMA batch:
//!   fence, 16 `mma_async` reading their operands, commit, wait) is one `syncwarp` (every
//!   access before the first is before the last, in each lane's program order; reads need no
//!   order among themselves); one with no event of any lane before it (since the last kept) or
//!   none after it (up to the next) orders nothing and is left out;
//! - when the lanes differ (a lane exited early, lanes at different instructions), the warp's
//!   marks are dropped, with a note: no ordering is assumed, so its accesses may be reported
//!   as races, never the reverse.
//!
//! And per warpgroup (the four warps `4g .. 4g + 3` of a block, which `wgmma` runs over):
//! where all four ran the same marks, all 128 lanes agreeing, the last `wgmma.mma_async` of
//! each batch (the last one before a `wgmma.commit_group`) becomes a rendezvous of the
//! warpgroup, `bar_sync ID, 128` on a named barrier the kernel does not use. The ISA says only
//! that each such instruction waits for the *warp* (`.sync`) and that the warpgroup "must
//! execute the same" one (`.aligned`); an H200 showed that no warp gets past its `mma_async`
//! before every warp of its warpgroup has reached it, that a warp's `wait_group` returns while
//! another warp of the group has not reached its own `wait_group` (so no rendezvous there),
//! and that once one warp's `wait_group` has returned, the group's operand reads are done
//! (gpu.md, "Warpgroup convergence of wgmma"; semantics.md W9). The model takes a `wgmma`'s
//! operand read as complete at its issue (ptx.md §5), so a rendezvous after the batch's last
//! read orders every warp's reads before what any warp does after the batch: ThunderKittens'
//! release of a stage by one thread of the warpgroup after its own `wait_group`. It is placed
//! at the batch's last `mma_async` rather than its first (where the hardware meets), which
//! lets more interleavings through before it, never fewer after it; nothing is placed at
//! `wait_group`, so a warp's access after its wait is still unordered with another warp's.

use crate::events::{Ev, Trace};
use std::collections::{BTreeMap, BTreeSet};

/// What a warp-converged instruction is to the warpgroup rendezvous (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wgmma {
    /// `wgmma.mma_async`.
    MmaAsync,
    /// `wgmma.commit_group`.
    Commit,
    /// Any other warp-converged instruction.
    Other,
}

/// Named barriers of a block (`bar.sync` takes 0..15).
const NAMED_BARRIERS: i64 = 16;
const WARPGROUP: u32 = 128;

/// Turns the `Ev::Converged` marks of `traces` into `Ev::SyncWarp` events, warpgroup
/// rendezvous (`kind` says which instruction a mark is) or drops them (see the module doc);
/// returns notes naming the warps whose lanes did not agree and the warpgroups left without a
/// rendezvous for want of a free named barrier.
pub fn lower(traces: &mut [Trace], kind: &dyn Fn(u32) -> Wgmma) -> Option<String> {
    let mut warps: BTreeMap<(u32, u32), Vec<usize>> = BTreeMap::new();
    for (i, t) in traces.iter().enumerate() {
        warps.entry((t.rank, t.tid / 32)).or_default().push(i);
    }
    let mut disagree = Vec::new();
    // Warps that run the same marks keep the same ones (the union of what each needs): a mark
    // one warp keeps and another drops would make their lanes' statements differ, and split
    // a role whose warps run one barrier together into two (a false `barrier-divergence`).
    // Keeping more is sound; it only costs states.
    let mut agreed: Vec<(Vec<usize>, Vec<u32>)> = Vec::new();
    let mut by_seq: BTreeMap<Vec<u32>, Vec<bool>> = BTreeMap::new();
    for ((rank, warp), lanes) in warps {
        let seqs: Vec<Vec<u32>> = lanes
            .iter()
            .map(|&i| {
                traces[i]
                    .events
                    .iter()
                    .filter(|e| e.ev == Ev::Converged)
                    .map(|e| e.instr)
                    .collect()
            })
            .collect();
        if seqs.iter().all(Vec::is_empty) {
            continue;
        }
        if seqs.iter().all(|s| *s == seqs[0]) {
            let keep = keep_marks(traces, &lanes, seqs[0].len());
            let all = by_seq
                .entry(seqs[0].clone())
                .or_insert_with(|| vec![false; keep.len()]);
            for (a, k) in all.iter_mut().zip(&keep) {
                *a |= *k;
            }
            agreed.push((lanes, seqs[0].clone()));
        } else {
            disagree.push(if rank == 0 {
                format!("warp {warp}")
            } else {
                format!("warp {warp} of block {rank}")
            });
            for &i in &lanes {
                rewrite(&mut traces[i], &[]);
            }
        }
    }
    let (rendezvous, short) = warpgroup_rendezvous(traces, &agreed, kind);
    for (lanes, seq) in agreed {
        let keep = &by_seq[&seq];
        for &i in &lanes {
            let group = rendezvous.get(&(traces[i].rank, traces[i].tid / WARPGROUP));
            let marks: Vec<Mark> = keep
                .iter()
                .enumerate()
                .map(|(k, &kept)| match group {
                    Some((id, at)) if at.contains(&k) => Mark::Rendezvous(*id),
                    _ if kept => Mark::SyncWarp,
                    _ => Mark::Drop,
                })
                .collect();
            rewrite(&mut traces[i], &marks);
        }
    }
    let mut notes = Vec::new();
    if !disagree.is_empty() {
        notes.push(format!(
            "the lanes of {} did not all run the same warp-converged (`.sync.aligned`, whole-warp \
             `.sync`) instructions: those are not taken as ordering the lanes' accesses there",
            disagree.join(", ")
        ));
    }
    if !short.is_empty() {
        notes.push(format!(
            "the kernel leaves too few named barriers free for a rendezvous of warpgroup{} {} at \
             its `wgmma` batches: its warps' operand reads are not taken as ordered before the \
             other warps' later statements there",
            if short.len() == 1 { "" } else { "s" },
            short.join(", ")
        ));
    }
    (!notes.is_empty()).then(|| notes.join("; "))
}

/// What a mark becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    Drop,
    SyncWarp,
    /// `bar_sync ID, 128`: the warpgroup's rendezvous.
    Rendezvous(i64),
}

/// The warpgroups that get a rendezvous: `(rank, group) -> (named barrier, mark indices)`, and
/// the ones that would but found no free named barrier. A warpgroup qualifies when its four
/// warps each agreed (all 32 lanes there) on one and the same sequence of marks; its
/// rendezvous are at the last `mma_async` mark before each `commit_group` mark.
type Rendezvous = BTreeMap<(u32, u32), (i64, BTreeSet<usize>)>;
fn warpgroup_rendezvous(
    traces: &[Trace],
    agreed: &[(Vec<usize>, Vec<u32>)],
    kind: &dyn Fn(u32) -> Wgmma,
) -> (Rendezvous, Vec<String>) {
    let mut warps: BTreeMap<(u32, u32), Vec<&Vec<u32>>> = BTreeMap::new();
    for (lanes, seq) in agreed {
        let t = &traces[lanes[0]];
        if lanes.len() == 32 {
            warps
                .entry((t.rank, t.tid / WARPGROUP))
                .or_default()
                .push(seq);
        }
    }
    let mut wanted: Vec<((u32, u32), BTreeSet<usize>)> = Vec::new();
    for (group, seqs) in warps {
        if seqs.len() != (WARPGROUP / 32) as usize || seqs.iter().any(|s| *s != seqs[0]) {
            continue;
        }
        let mut at = BTreeSet::new();
        let mut last_mma = None;
        for (k, &instr) in seqs[0].iter().enumerate() {
            match kind(instr) {
                Wgmma::MmaAsync => last_mma = Some(k),
                Wgmma::Commit => at.extend(last_mma.take()),
                Wgmma::Other => {}
            }
        }
        if !at.is_empty() {
            wanted.push((group, at));
        }
    }
    // Named barriers the kernel uses stay its own; each warpgroup of a block takes its own
    // free one, the highest first (the same one in every block).
    let used: BTreeSet<i64> = traces
        .iter()
        .flat_map(|t| &t.events)
        .filter_map(|e| match e.ev {
            Ev::BarSync { id, .. } | Ev::BarArrive { id, .. } => Some(id),
            _ => None,
        })
        .collect();
    let free: Vec<i64> = (0..NAMED_BARRIERS)
        .rev()
        .filter(|id| !used.contains(id))
        .collect();
    let groups: BTreeSet<u32> = wanted.iter().map(|((_, g), _)| *g).collect();
    let mut out = Rendezvous::new();
    let mut short = Vec::new();
    for ((rank, g), at) in wanted {
        match groups
            .iter()
            .position(|x| *x == g)
            .and_then(|i| free.get(i))
        {
            Some(&id) => {
                out.insert((rank, g), (id, at));
            }
            None if rank == 0 => short.push(format!("{g}")),
            None => short.push(format!("{g} of block {rank}")),
        }
    }
    (out, short)
}

/// The `k`-th mark of `t` becomes what `marks[k]` says (missing: it goes); a token wait names
/// its arrive by event index, which is moved along.
fn rewrite(t: &mut Trace, marks: &[Mark]) {
    let mut new_index = Vec::with_capacity(t.events.len());
    let mut events = Vec::with_capacity(t.events.len());
    let mut k = 0;
    for mut e in std::mem::take(&mut t.events) {
        new_index.push(events.len());
        if e.ev == Ev::Converged {
            let mark = marks.get(k).copied().unwrap_or(Mark::Drop);
            k += 1;
            e.ev = match mark {
                Mark::Drop => continue,
                Mark::SyncWarp => Ev::SyncWarp,
                Mark::Rendezvous(id) => Ev::BarSync {
                    id,
                    count: Some(WARPGROUP as i64),
                    aligned: true,
                },
            };
        }
        events.push(e);
    }
    for e in &mut events {
        if let Ev::WaitToken { arrive, .. } = &mut e.ev {
            *arrive = new_index[*arrive];
        }
    }
    t.events = events;
}

/// Which of the `n` marks every lane of the warp shares become `syncwarp`: the last of each run
/// with some lane's event before it (since the last one kept) and some lane's event after it
/// (before the next mark), except where all it would order is reads before reads. Dropping a
/// mark loses only the orderings from the events before it (since the last kept one) to other
/// lanes' events up to the next kept one (a later kept one orders everything after it); when
/// those are all reads (`read`, `mma`), no two of them conflict, so nothing is lost. That
/// keeps one `syncwarp` per WGMMA batch (at its `wgmma.fence` after the wait, and at its
/// `wait_group` before the release) instead of one between every two WGMMAs.
fn keep_marks(traces: &[Trace], lanes: &[usize], n: usize) -> Vec<bool> {
    // For each gap g (before mark 0, between marks g-1 and g, after the last) and each lane:
    // `before[g]` what a mark ending the gap would order (the lane's events after its last
    // barrier of the whole warp in the gap: `syncthreads`, an aligned named barrier,
    // `syncwarp`, which order the warp's lanes themselves), `after[g]` what a mark starting
    // the gap would order things before (its events up to its first such barrier); each as
    // (some event, some event that is not a read). `fenced[g]`: every lane has such a barrier
    // in gap g, which orders what came before the gap.
    let mut before = vec![(false, false); n + 1];
    let mut after = vec![(false, false); n + 1];
    let mut fenced = vec![true; n + 1];
    for &i in lanes {
        let mut g = 0;
        let mut seen_barrier = false;
        let mut lane_fenced = vec![false; n + 1];
        let mut cur = (false, false);
        let close = |g: usize, cur: (bool, bool), before: &mut Vec<(bool, bool)>| {
            before[g].0 |= cur.0;
            before[g].1 |= cur.1;
        };
        for e in &traces[i].events {
            let is_read = matches!(e.ev, Ev::Read(_) | Ev::Mma(_));
            match e.ev {
                Ev::Converged => {
                    close(g, cur, &mut before);
                    cur = (false, false);
                    g += 1;
                    seen_barrier = false;
                }
                Ev::SyncWarp | Ev::BarSync { aligned: true, .. } => {
                    cur = (false, false);
                    seen_barrier = true;
                    lane_fenced[g] = true;
                }
                _ => {
                    cur.0 = true;
                    cur.1 |= !is_read;
                    if !seen_barrier {
                        after[g].0 = true;
                        after[g].1 |= !is_read;
                    }
                }
            }
        }
        close(g, cur, &mut before);
        for (f, l) in fenced.iter_mut().zip(lane_fenced) {
            *f &= l;
        }
    }
    let mut keep = vec![false; n];
    let (mut pending, mut pending_other) = (false, false);
    for k in 0..n {
        if fenced[k] {
            pending = false;
            pending_other = false;
        }
        pending |= before[k].0;
        pending_other |= before[k].1;
        let next = after[k + 1];
        if pending && next.0 && (pending_other || next.1) {
            keep[k] = true;
            pending = false;
            pending_other = false;
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Event, Range, SAddr};

    fn read() -> Ev {
        Ev::Read(Range {
            at: SAddr { rank: None, off: 0 },
            len: 4,
        })
    }

    fn trace(tid: u32, evs: &[(Ev, u32)]) -> Trace {
        Trace {
            rank: 0,
            tid,
            events: evs
                .iter()
                .map(|(ev, instr)| Event {
                    ev: ev.clone(),
                    instr: *instr,
                })
                .collect(),
        }
    }

    fn plain(_: u32) -> Wgmma {
        Wgmma::Other
    }

    fn kinds(t: &Trace) -> Vec<(&'static str, u32)> {
        t.events
            .iter()
            .map(|e| {
                let k = match e.ev {
                    Ev::SyncWarp => "syncwarp",
                    Ev::BarSync {
                        count: Some(128), ..
                    } => "rendezvous",
                    Ev::Converged => "converged",
                    Ev::Read(_) => "read",
                    _ => "other",
                };
                (k, e.instr)
            })
            .collect()
    }

    #[test]
    fn a_run_of_marks_between_accesses_is_one_syncwarp_at_its_last() {
        // Lane 0 reads, three marks (fence, mma, wait), then fences; lane 1 only the marks.
        let c = Ev::Converged;
        let mut ts = vec![
            trace(
                0,
                &[
                    (read(), 1),
                    (c.clone(), 2),
                    (c.clone(), 3),
                    (c.clone(), 4),
                    (Ev::FenceProxyAsync, 5),
                ],
            ),
            trace(1, &[(c.clone(), 2), (c.clone(), 3), (c.clone(), 4)]),
        ];
        assert_eq!(lower(&mut ts, &plain), None);
        assert_eq!(kinds(&ts[0]), [("read", 1), ("syncwarp", 4), ("other", 5)]);
        assert_eq!(kinds(&ts[1]), [("syncwarp", 4)]);
    }

    #[test]
    fn marks_between_reads_only_are_one_syncwarp_before_the_release() {
        // A WGMMA batch: each lane's operand reads between the marks, lane 0 arrives after
        // the last (any event that is not a read stands for the release here).
        let c = Ev::Converged;
        let other = Ev::FenceProxyAsync;
        let lane = |tid: u32, last: &[(Ev, u32)]| {
            let mut v = vec![
                (read(), 1),
                (c.clone(), 2),
                (read(), 3),
                (c.clone(), 4),
                (read(), 5),
                (c.clone(), 6),
            ];
            v.extend_from_slice(last);
            trace(tid, &v)
        };
        let mut ts = vec![lane(0, &[(other, 7)]), lane(1, &[])];
        assert_eq!(lower(&mut ts, &plain), None);
        assert_eq!(
            kinds(&ts[1]),
            [("read", 1), ("read", 3), ("read", 5), ("syncwarp", 6)]
        );
        // A write before the marks is ordered before the other lanes' reads at once.
        let w = Ev::Write(
            Range {
                at: SAddr { rank: None, off: 0 },
                len: 4,
            },
            None,
        );
        let mut ts = vec![
            trace(0, &[(w, 1), (c.clone(), 2), (c.clone(), 4)]),
            trace(1, &[(c.clone(), 2), (read(), 3), (c.clone(), 4)]),
        ];
        assert_eq!(lower(&mut ts, &plain), None);
        assert_eq!(kinds(&ts[1]), [("syncwarp", 2), ("read", 3)]);
    }

    #[test]
    fn a_mark_after_a_barrier_of_the_whole_warp_orders_nothing_more() {
        // Lane 0 initializes, `__syncthreads`, the warp's `elect.sync`, lane 0 arrives: the
        // barrier already orders the init before everything after it.
        let c = Ev::Converged;
        let bar = || Ev::BarSync {
            id: 0,
            count: None,
            aligned: true,
        };
        let mut ts = vec![
            trace(
                0,
                &[
                    (Ev::FenceMbarrierInit, 1),
                    (bar(), 2),
                    (c.clone(), 3),
                    (Ev::FenceProxyAsync, 4),
                ],
            ),
            trace(1, &[(bar(), 2), (c.clone(), 3)]),
        ];
        assert_eq!(lower(&mut ts, &plain), None);
        assert_eq!(kinds(&ts[1]), [("other", 2)]);
    }

    #[test]
    fn marks_with_nothing_on_one_side_are_dropped() {
        let c = Ev::Converged;
        let mut ts = vec![
            trace(0, &[(c.clone(), 1), (read(), 2), (c.clone(), 3)]),
            trace(1, &[(c.clone(), 1), (c.clone(), 3)]),
        ];
        assert_eq!(lower(&mut ts, &plain), None);
        assert_eq!(kinds(&ts[0]), [("read", 2)]);
        assert_eq!(kinds(&ts[1]), []);
    }

    #[test]
    fn a_token_wait_still_names_its_arrive() {
        let c = Ev::Converged;
        let bar = SAddr { rank: None, off: 8 };
        let arrive = Ev::Arrive {
            bar,
            count: 1,
            drop: false,
            tx: None,
            cluster_scope: false,
        };
        let wait = Ev::WaitToken {
            bar,
            arrive: 3,
            cluster_scope: false,
        };
        let mut ts = vec![trace(
            0,
            &[
                (c.clone(), 1),
                (c.clone(), 2),
                (read(), 3),
                (arrive, 4),
                (wait, 5),
            ],
        )];
        assert_eq!(lower(&mut ts, &plain), None);
        assert!(matches!(ts[0].events[1].ev, Ev::Arrive { .. }));
        assert!(matches!(
            ts[0].events[2].ev,
            Ev::WaitToken { arrive: 1, .. }
        ));
    }

    #[test]
    fn lanes_that_disagree_get_no_ordering_and_a_note() {
        // Lane 1 exited before the second mark: no syncwarp at all in the warp.
        let c = Ev::Converged;
        let mut ts = vec![
            trace(
                0,
                &[
                    (read(), 1),
                    (c.clone(), 2),
                    (read(), 3),
                    (c.clone(), 4),
                    (read(), 5),
                ],
            ),
            trace(1, &[(read(), 1), (c.clone(), 2)]),
            trace(32, &[(read(), 1), (c.clone(), 2), (Ev::FenceProxyAsync, 3)]),
        ];
        let note = lower(&mut ts, &plain).expect("a note");
        assert!(
            note.contains("warp 0") && !note.contains("warp 1"),
            "{note}"
        );
        assert_eq!(kinds(&ts[0]), [("read", 1), ("read", 3), ("read", 5)]);
        assert_eq!(kinds(&ts[1]), [("read", 1)]);
        // Warp 1 (one lane here) agrees with itself.
        assert_eq!(kinds(&ts[2]), [("read", 1), ("syncwarp", 2), ("other", 3)]);
    }

    /// Instructions 2, 4: `mma_async`; 5: `commit_group`; 6: `wait_group` (3: `wgmma.fence`).
    fn wgmma(instr: u32) -> Wgmma {
        match instr {
            2 | 4 => Wgmma::MmaAsync,
            5 => Wgmma::Commit,
            _ => Wgmma::Other,
        }
    }

    /// One thread's batch: fence (3), two `mma_async` reading (2, 4), commit (5), wait (6),
    /// then `last` (thread 0's release in ThunderKittens' shape).
    fn batch(tid: u32, last: &[(Ev, u32)]) -> Trace {
        let c = Ev::Converged;
        let mut v = vec![
            (c.clone(), 3),
            (
                Ev::Mma(Range {
                    at: SAddr { rank: None, off: 0 },
                    len: 64,
                }),
                2,
            ),
            (c.clone(), 2),
            (
                Ev::Mma(Range {
                    at: SAddr {
                        rank: None,
                        off: 64,
                    },
                    len: 64,
                }),
                4,
            ),
            (c.clone(), 4),
            (c.clone(), 5),
            (c.clone(), 6),
        ];
        v.extend_from_slice(last);
        trace(tid, &v)
    }

    #[test]
    fn a_whole_warpgroup_meets_after_its_batch_s_last_mma() {
        let release = (Ev::FenceProxyAsync, 7);
        let mut ts: Vec<Trace> = (0..128)
            .map(|t| {
                batch(
                    t,
                    if t == 0 {
                        std::slice::from_ref(&release)
                    } else {
                        &[]
                    },
                )
            })
            .collect();
        // A named barrier of the kernel's own (15) is not taken.
        ts[5].events.insert(
            0,
            Event {
                ev: Ev::BarSync {
                    id: 15,
                    count: Some(64),
                    aligned: true,
                },
                instr: 1,
            },
        );
        assert_eq!(lower(&mut ts, &wgmma), None);
        let rendezvous: Vec<_> = ts[1]
            .events
            .iter()
            .filter_map(|e| match e.ev {
                Ev::BarSync {
                    id,
                    count: Some(128),
                    aligned: true,
                } => Some((id, e.instr)),
                _ => None,
            })
            .collect();
        assert_eq!(rendezvous, [(14, 4)], "{:?}", kinds(&ts[1]));
        // Every thread of the group meets there, on the same barrier.
        assert!(ts.iter().all(|t| t.events.iter().any(
            |e| matches!(e.ev, Ev::BarSync { id: 14, count: Some(128), .. } if e.instr == 4)
        )));
    }

    #[test]
    fn no_rendezvous_without_the_whole_warpgroup() {
        // Three warps only (96 threads): no warpgroup; the warps keep their own `syncwarp`.
        let release = (Ev::FenceProxyAsync, 7);
        let mut ts: Vec<Trace> = (0..96)
            .map(|t| {
                batch(
                    t,
                    if t % 32 == 0 {
                        std::slice::from_ref(&release)
                    } else {
                        &[]
                    },
                )
            })
            .collect();
        assert_eq!(lower(&mut ts, &wgmma), None);
        assert!(
            ts.iter()
                .all(|t| !t.events.iter().any(|e| matches!(e.ev, Ev::BarSync { .. })))
        );
        assert!(
            kinds(&ts[1]).contains(&("syncwarp", 6)),
            "{:?}",
            kinds(&ts[1])
        );
        // Four warps, but one lane of warp 2 ran another sequence: that warp gets nothing, and
        // the group no rendezvous.
        let mut ts: Vec<Trace> = (0..128).map(|t| batch(t, &[])).collect();
        ts[70].events.pop();
        let note = lower(&mut ts, &wgmma).expect("a note");
        assert!(note.contains("warp 2"), "{note}");
        assert!(
            ts.iter()
                .all(|t| !t.events.iter().any(|e| matches!(e.ev, Ev::BarSync { .. })))
        );
    }

    #[test]
    fn a_warpgroup_with_no_free_named_barrier_gets_a_note() {
        let mut ts: Vec<Trace> = (0..128).map(|t| batch(t, &[])).collect();
        for id in 0..16 {
            ts[0].events.insert(
                0,
                Event {
                    ev: Ev::BarArrive {
                        id,
                        count: Some(32),
                        aligned: true,
                    },
                    instr: 1,
                },
            );
        }
        let note = lower(&mut ts, &wgmma).expect("a note");
        assert!(note.contains("warpgroup 0"), "{note}");
    }
}
