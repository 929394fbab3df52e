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

use crate::events::{Ev, Trace};
use std::collections::BTreeMap;

/// Turns the `Ev::Converged` marks of `traces` into `Ev::SyncWarp` events or drops them (see
/// the module doc); returns a note naming the warps whose lanes did not agree.
pub fn lower(traces: &mut [Trace]) -> Option<String> {
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
            let none = vec![false; seqs.iter().map(Vec::len).max().unwrap_or(0)];
            for &i in &lanes {
                rewrite(&mut traces[i], &none);
            }
        }
    }
    for (lanes, seq) in agreed {
        let keep = &by_seq[&seq];
        for &i in &lanes {
            rewrite(&mut traces[i], keep);
        }
    }
    (!disagree.is_empty()).then(|| {
        format!(
            "the lanes of {} did not all run the same warp-converged (`.sync.aligned`, whole-warp \
             `.sync`) instructions: those are not taken as ordering the lanes' accesses there",
            disagree.join(", ")
        )
    })
}

/// The `k`-th mark of `t` becomes a `syncwarp` where `keep[k]`, else it goes; a token wait
/// names its arrive by event index, which is moved along.
fn rewrite(t: &mut Trace, keep: &[bool]) {
    let mut new_index = Vec::with_capacity(t.events.len());
    let mut events = Vec::with_capacity(t.events.len());
    let mut k = 0;
    for mut e in std::mem::take(&mut t.events) {
        new_index.push(events.len());
        if e.ev == Ev::Converged {
            let kept = keep.get(k).copied().unwrap_or(false);
            k += 1;
            if !kept {
                continue;
            }
            e.ev = Ev::SyncWarp;
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

    fn kinds(t: &Trace) -> Vec<(&'static str, u32)> {
        t.events
            .iter()
            .map(|e| {
                let k = match e.ev {
                    Ev::SyncWarp => "syncwarp",
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
        assert_eq!(lower(&mut ts), None);
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
        assert_eq!(lower(&mut ts), None);
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
        assert_eq!(lower(&mut ts), None);
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
        assert_eq!(lower(&mut ts), None);
        assert_eq!(kinds(&ts[1]), [("other", 2)]);
    }

    #[test]
    fn marks_with_nothing_on_one_side_are_dropped() {
        let c = Ev::Converged;
        let mut ts = vec![
            trace(0, &[(c.clone(), 1), (read(), 2), (c.clone(), 3)]),
            trace(1, &[(c.clone(), 1), (c.clone(), 3)]),
        ];
        assert_eq!(lower(&mut ts), None);
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
        assert_eq!(lower(&mut ts), None);
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
        let note = lower(&mut ts).expect("a note");
        assert!(
            note.contains("warp 0") && !note.contains("warp 1"),
            "{note}"
        );
        assert_eq!(kinds(&ts[0]), [("read", 1), ("read", 3), ("read", 5)]);
        assert_eq!(kinds(&ts[1]), [("read", 1)]);
        // Warp 1 (one lane here) agrees with itself.
        assert_eq!(kinds(&ts[2]), [("read", 1), ("syncwarp", 2), ("other", 3)]);
    }
}
