//! Partial-order reduction: which enabled thread step may be taken alone (docs/design.md,
//! "Partial-order reduction").

use super::super::code::Instr;
use super::super::{bytes, symmetry};
use super::*;

mod footprint_rule;
use footprint_rule::{arrival_commutes, safe_given, safe_landing};

/// Partial-order reduction: an enabled action that is independent of everything any other
/// actor can do before its thread moves (docs/design.md, "Reductions"), taken alone. First the
/// static rule ([`safe`]: nothing another live thread's code can reach conflicts), then the
/// footprint rule ([`safe_given`] for thread steps, [`safe_landing`] and [`cp_arrive_alone`]
/// for in-flight events: what the others' run-ahead footprints allow).
pub fn ample(
    m: &PhaseModel,
    s: &State,
    actions: &[u32],
    history: crate::explore::ReductionHistory,
) -> crate::explore::Reduction {
    use crate::explore::{Ample, Reduction};
    if !m.por {
        return Reduction::default();
    }
    let n = m.nthreads();
    let threads = || actions.iter().copied().take_while(|&a| a < n);
    if let Some(t) = threads().find(|&t| election_alone(m, s, actions, t)) {
        return Reduction {
            ample: Some(Ample {
                action: t,
                by_analysis: false,
            }),
            analysed: false,
        };
    }
    // The static rule is cheap per candidate but looks at every thread: only the first few,
    // and every enabled `cluster_wait` (a check of its own enabledness only: in a CUTLASS
    // cluster kernel the first threads leave the prologue first, so the waits of the others
    // are never among the first few).
    if let Some(t) = threads()
        .enumerate()
        .find(|&(i, t)| {
            if i < MAX_STATIC_CANDIDATES {
                safe(m, s, t)
            } else {
                cluster_wait_alone(m, s, t)
            }
        })
        .map(|(_, t)| t)
    {
        return Reduction {
            ample: Some(Ample {
                action: t,
                by_analysis: false,
            }),
            analysed: false,
        };
    }
    // Barrier-aware: what the others can still do while the candidate stands still
    // (footprint.rs). Candidates are tried in action order; each costs a run-ahead of every
    // thread, so only the first few that could qualify are tried.
    // Where the rule rarely finds a step (protocols whose runs cannot be followed),
    // each candidate costs a run-ahead of every thread for nothing: after 256 states analysed
    // with under 5% found, one candidate in every eighth state. (Taking fewer steps alone is
    // always sound; the history the explorer passes depends only on the search order, so the
    // search is the same on any number of cores.)
    let (tries, analysed, hits) = (history.tries, history.analysed, history.hits);
    let budget = if analysed <= 256 || hits * 20 >= analysed {
        MAX_DYNAMIC_CANDIDATES
    } else if tries.is_multiple_of(8) {
        1
    } else {
        0
    };
    let found = |a: u32| Reduction {
        ample: Some(Ample {
            action: a,
            by_analysis: true,
        }),
        analysed: true,
    };
    // Threads and in-flight events have a budget each: at the end of ThunderKittens' attention
    // the consumers' arrivals on `compute_done` and the waits on it of the producer warp's
    // other lanes, dependent on each other, took the four tries of every state, and the K and
    // V landings, alone by the rule, were never asked (docs/performance.md, "ThunderKittens
    // at real size").
    let (mut tried_threads, mut tried_events) = (0, 0);
    let mut known = None;
    // Threads about to finish last: their exit is alone only where no peer block addresses
    // theirs (or a thread of it outlives every future), which in a cluster kernel holds only
    // near the end, while the idle threads of a CUTLASS block (warps of the producer warpgroup
    // that only pass the prologue) come first in thread order and would use up the candidates.
    let finishing = |t: u32| {
        matches!(
            m.code_of(t).instrs[s.threads[t as usize].pc as usize],
            Instr::Exit { .. } | Instr::End { .. }
        )
    };
    // In-flight events (a TMA copy landing, a cp.async arrive-on) after the other threads,
    // each one step.
    let events = actions.iter().copied().filter(|&a| a >= n);
    let ordered = threads()
        .filter(|&t| !finishing(t))
        .chain(events)
        .chain(threads().filter(|&t| finishing(t)));
    // Candidates already given the analysis. A thread of the same symmetry class whose state
    // equals one of theirs up to thread names (`symmetry::same_up_to_names`) is skipped: its
    // answer is usually theirs, and the few tries per state go to threads in other situations
    // instead (issue 24: producers that differ only in which of them have acquired each other's
    // kept writes all stood at one arrival, ahead of the writes that are alone, and took every
    // try). Skipping a candidate is always sound: it only takes fewer steps alone.
    let mut seen_candidates: Vec<u32> = Vec::new();
    for a in ordered {
        if tried_threads == budget && tried_events == budget {
            break;
        }
        if a < n && tried_threads == budget || a >= n && tried_events == budget {
            continue;
        }
        if a < n && (!dynamic_candidate(m, s, a) || hopeless(m, s, a)) {
            continue;
        }
        if a < n
            && seen_candidates
                .iter()
                .any(|&u| symmetry::same_up_to_names(m, s, u, a))
        {
            continue;
        }
        if a < n {
            tried_threads += 1;
        } else {
            tried_events += 1;
        }
        if a < n {
            seen_candidates.push(a);
            let known = known.get_or_insert_with(|| footprint::Threads::new(m, s));
            let f = footprint::frozen(m, s, known, a, None);
            if safe_given(m, s, a, &f) {
                return found(a);
            }
            continue;
        }
        let i = (a - n) as usize;
        if let Event::Tma { bar, .. } = s.events[i]
            && threads().any(|u| polls(m, s, u) == Some(bar))
        {
            // A thread that waits on or tests the barrier now is in the footprints
            // (`safe_landing` needs nobody to touch it): not alone, no run needed.
            continue;
        }
        let known = known.get_or_insert_with(|| footprint::Threads::new(m, s));
        let f = footprint::frozen(m, s, known, u32::MAX, Some(i));
        let alone = match s.events[i] {
            Event::Tma {
                buf, bar, issuer, ..
            } => safe_landing(m, s, i, buf, bar, issuer, &f),
            Event::CpArrive {
                thread, bar, upto, ..
            } => cp_arrive_alone(m, s, i, thread, bar, upto, &f),
        };
        if alone {
            return found(a);
        }
    }
    Reduction {
        ample: None,
        analysed: tried_threads + tried_events > 0,
    }
}

/// The arrive-on of in-flight `cp_async_arrive` `i` (of `thread`, on `b`, after the thread's
/// copies before `upto`): those copies complete (their writes leave the in-flight set), then
/// one arrival on `b`, as an arrive of a thread with nothing kept (see [`arrive_alone`]).
fn cp_arrive_alone(
    m: &PhaseModel,
    s: &State,
    i: usize,
    thread: u32,
    b: u32,
    upto: u32,
    f: &footprint::Frozen,
) -> bool {
    let bs = &s.bars[b as usize];
    let copies_quiet = s.threads[thread as usize]
        .cp
        .iter()
        .filter(|c| c.seq < upto)
        .all(|c| quiet(s, f, thread, c.buf));
    // Other arrive-ons are in the footprints; TMA landings on the barrier are not.
    let others_on_bar = s
        .events
        .iter()
        .enumerate()
        .any(|(j, e)| j != i && matches!(*e, Event::Tma { bar, .. } if bar == b));
    m.bar_block[b as usize] == m.block_of(thread)
        && bs.valid
        && bs.pending >= 1
        && copies_quiet
        && !others_on_bar
        && arrival_commutes(bs, 1, None, f, b)
}

/// How many candidates per state get the static rule.
const MAX_STATIC_CANDIDATES: usize = 4;

/// How many candidates per state get the footprint analysis.
const MAX_DYNAMIC_CANDIDATES: usize = 4;

/// Operations the footprint rule can take alone.
fn dynamic_candidate(m: &PhaseModel, s: &State, t: u32) -> bool {
    let th = &s.threads[t as usize];
    if th.mode != Mode::Ready {
        return false;
    }
    matches!(
        &m.code_of(t).instrs[th.pc as usize],
        Instr::Exit { .. }
            | Instr::End { .. }
            | Instr::Op {
                op: Op::Read { .. }
                    | Op::Load { .. }
                    | Op::Mma { .. }
                    | Op::Write { .. }
                    | Op::Store { .. }
                    | Op::WaitParity { .. }
                    | Op::WaitToken { .. }
                    | Op::TestWait { .. }
                    | Op::Arrive { .. }
                    | Op::ArriveExpectTx { .. }
                    | Op::ArriveAndWait { .. }
                    | Op::BarSync { .. }
                    | Op::SyncThreads
                    | Op::BarArrive { .. }
                    | Op::CpAsync { .. }
                    | Op::Tma { .. }
                    | Op::CommitGroup
                    | Op::WaitGroup { .. }
                    | Op::TmaStore { .. }
                    | Op::BulkCommit
                    | Op::BulkWaitRead { .. }
                    | Op::FenceProxyAsync
                    | Op::CpAsyncArrive { .. }
                    | Op::ProducerAcquire { .. }
                    | Op::ProducerCommit { .. }
                    | Op::ConsumerWait { .. }
                    | Op::ConsumerWaitPrior { .. }
                    | Op::ConsumerRelease { .. }
                    | Op::MemcpyAsync { .. }
                    | Op::Quit { .. },
                ..
            }
    )
}

/// A wait, token wait or `test_wait` of enabled thread `u` (not the second half of an
/// `arrive_and_wait`) and the barrier it reads: its run starts with that read.
fn polls(m: &PhaseModel, s: &State, u: u32) -> Option<u32> {
    let th = &s.threads[u as usize];
    if th.mode != Mode::Ready || th.aw.is_some() {
        return None;
    }
    match &m.code_of(u).instrs[th.pc as usize] {
        Instr::Op {
            op: Op::WaitParity { bar, .. } | Op::WaitToken { bar, .. } | Op::TestWait { bar, .. },
            ..
        } => peek_bar(m, s, u, bar),
        _ => None,
    }
}

/// A candidate the footprint rule would reject whatever the footprints: a wait, test or arrive
/// on a barrier that a copy in flight signals (`wait_alone` and `arrive_n_alone` need
/// `!targeted`). Checked first, so that no run-ahead is made for it.
fn hopeless(m: &PhaseModel, s: &State, t: u32) -> bool {
    let th = &s.threads[t as usize];
    if th.aw.is_some() {
        return false;
    }
    let Instr::Op { op, .. } = &m.code_of(t).instrs[th.pc as usize] else {
        return false;
    };
    match op {
        Op::WaitParity { bar, .. }
        | Op::WaitToken { bar, .. }
        | Op::TestWait { bar, .. }
        | Op::Arrive { bar, .. }
        | Op::ArriveExpectTx { bar, .. } => peek_bar(m, s, t, bar).is_some_and(|b| targeted(s, b)),
        _ => false,
    }
}

/// Buffer instance `x` is in `t`'s own block or global (a peer block's buffer also depends on
/// whether that block still runs).
fn local_buf(m: &PhaseModel, t: u32, x: u32) -> bool {
    let b = m.buf_block[x as usize];
    b == u32::MAX || b == m.block_of(t)
}

/// `check_vis` would accept a use of `b` by `t` now (and so at any later point: visibility
/// only grows until the barrier is re-initialized).
fn vis_ok(b: &Bar, t: u32, remote: bool) -> bool {
    b.init_by == t || b.vis >= 3 || (!remote && b.vis >= 2)
}

/// Some in-flight TMA copy signals barrier `b` (in-flight cp.async arrive-ons are in the
/// footprints, as arrivals).
fn targeted(s: &State, b: u32) -> bool {
    s.events
        .iter()
        .any(|e| matches!(*e, Event::Tma { bar, .. } if bar == b))
}

/// An in-flight TMA or cp.async writes buffer `x`.
fn in_flight_write(s: &State, x: u32) -> bool {
    s.events
        .iter()
        .any(|e| matches!(*e, Event::Tma { buf, .. } if buf == x))
        || s.threads.iter().any(|th| th.cp.iter().any(|c| c.buf == x))
}

/// Some TMA copy in flight lands in another block than its issuer's.
fn copy_crosses_blocks(m: &PhaseModel, s: &State) -> bool {
    s.events.iter().any(|e| match *e {
        Event::Tma { bar, issuer, .. } => m.bar_block[bar as usize] != m.block_of(issuer),
        Event::CpArrive { .. } => false,
    })
}

/// Nobody but thread `t` may touch buffer `x` before `t` moves: no footprint, nothing in flight
/// but `t`'s own copies.
fn quiet(s: &State, f: &footprint::Frozen, t: u32, x: u32) -> bool {
    f.buf[x as usize] == 0 && !in_flight_access_by_others(s, t, x)
}

/// An in-flight TMA, or another thread's cp.async or bulk store, touches buffer `x`.
fn in_flight_access_by_others(s: &State, t: u32, x: u32) -> bool {
    s.events
        .iter()
        .any(|e| matches!(*e, Event::Tma { buf, .. } if buf == x))
        || s.threads.iter().enumerate().any(|(u, th)| {
            u as u32 != t && (th.cp.iter().any(|c| c.buf == x) || th.bulk.iter().any(|b| b.0 == x))
        })
}

/// An in-flight TMA, cp.async or bulk store touches buffer `x`.
fn in_flight_access(s: &State, x: u32) -> bool {
    in_flight_write(s, x) || s.threads.iter().any(|th| th.bulk.iter().any(|b| b.0 == x))
}

/// Can a live thread other than `t` still do `f` (given its reach at its pc and whether
/// `block` is its own block)?
fn others_reach(
    m: &PhaseModel,
    s: &State,
    t: u32,
    block: u32,
    f: impl Fn(&super::super::code::Reach, usize, bool) -> bool,
) -> bool {
    (0..m.nthreads()).any(|u| {
        if u == t {
            return false;
        }
        let th = &s.threads[u as usize];
        th.mode.live()
            && f(
                &m.kernels[m.threads[u as usize].kernel as usize].reach,
                th.pc as usize,
                block == u32::MAX || m.block_of(u) == block,
            )
    })
}

/// The static rule: nothing another live thread's code can still reach conflicts with `t`'s
/// step. An access to a peer block's buffer (`X @ r`) is never taken alone here: whether it is
/// `remote-cta-exited` depends on that block's threads finishing, which no reach set says.
fn safe(m: &PhaseModel, s: &State, t: u32) -> bool {
    use super::super::code::has;
    let th = &s.threads[t as usize];
    match &m.code_of(t).instrs[th.pc as usize] {
        Instr::Exit { .. } | Instr::End { .. } => {
            !copy_crosses_blocks(m, s) && !others_reach(m, s, t, u32::MAX, |r, pc, _| r.remote[pc])
        }
        Instr::Op { op, .. } => match op {
            Op::Read { buf } | Op::Load { global: buf } | Op::Mma { buf } => {
                let obj = buf.object.0;
                let Some(x) = peek_bar(m, s, t, buf) else {
                    return false;
                };
                let block = buf_block(m, x);
                local_buf(m, t, x)
                    && !in_flight_write(s, x)
                    && !others_reach(m, s, t, block, |r, pc, own| has(&r.writes[pc], obj, own))
            }
            Op::Write { buf, .. } | Op::Store { global: buf } => {
                let obj = buf.object.0;
                let Some(x) = peek_bar(m, s, t, buf) else {
                    return false;
                };
                let block = buf_block(m, x);
                local_buf(m, t, x)
                    && !in_flight_access(s, x)
                    && !others_reach(m, s, t, block, |r, pc, own| {
                        has(&r.writes[pc], obj, own) || has(&r.reads[pc], obj, own)
                    })
            }
            Op::WaitParity { bar, .. } | Op::WaitToken { bar, .. } | Op::TestWait { bar, .. } => {
                let obj = bar.object.0;
                let Some(b) = peek_bar(m, s, t, bar) else {
                    return false;
                };
                let targeted = s.events.iter().any(|e| match *e {
                    Event::Tma { bar, .. } | Event::CpArrive { bar, .. } => bar == b,
                });
                let block = m.bar_block[b as usize];
                !targeted
                    && !others_reach(m, s, t, block, |r, pc, own| has(&r.signals[pc], obj, own))
            }
            // An enabled `cluster_wait` (its arrival's phase has completed) reads only the
            // publications of that completed phase, which nothing changes while the thread
            // stands still: the next phase completes only when every live thread of the
            // cluster has arrived in it (`Exec::try_cluster`), and this one, live, still holds
            // the token of the completed phase. So the wait commutes with every other step:
            // 768 threads leaving the CUTLASS cluster prologue no longer interleave.
            Op::ClusterWait => enabled(m, s, t),
            _ => false,
        },
        _ => false,
    }
}

/// The election of `t` (a candidate: `Ready` at an `elect` whose warp has arrived and has no
/// leader, exec `try_warp`), when every other candidate of its warp among `actions` leads to
/// the same state up to symmetry (with symmetry, the candidates in equal states are left out
/// of `actions` as twins; lanes whose kept accesses name each other are not twins but are
/// still each other's images, which the successors show). Then `t`'s election stands for
/// every election of the warp, which are every step its lanes can take, and an election
/// commutes with every other thread's step as a warp rendezvous that an arrival completes
/// does (docs/design.md, "Eager steps"): it moves only the warp's lanes, which nothing else can
/// move while they wait, and orders them after each other (exec `fire_warp`). Without
/// symmetry several candidates stay, and none is taken alone.
fn election_alone(m: &PhaseModel, s: &State, actions: &[u32], t: u32) -> bool {
    let n = m.nthreads();
    let candidate = |u: u32| {
        let th = &s.threads[u as usize];
        th.mode == Mode::Ready && matches!(m.code_of(u).instrs[th.pc as usize], Instr::Elect { .. })
    };
    if !candidate(t) {
        return false;
    }
    let warp = |u: u32| (m.block_of(u), m.threads[u as usize].tid / 32);
    let others: Vec<u32> = actions
        .iter()
        .copied()
        .filter(|&u| u < n && u != t && candidate(u) && warp(u) == warp(t))
        .collect();
    if others.is_empty() {
        return true;
    }
    if !m.symmetry {
        return false;
    }
    let successor = |a: u32| match m.step_raw(s, a, &mut Vec::new()) {
        crate::explore::Step::Next(mut next) => {
            m.canon(&mut next);
            Some(next)
        }
        _ => None,
    };
    let Some(first) = successor(t) else {
        return false;
    };
    others
        .iter()
        .all(|&u| successor(u).is_some_and(|x| x == first))
}

/// An enabled `cluster_wait` of `t` (the static rule's case for it, [`safe`]): cheap, so every
/// thread is asked, not only the first few.
fn cluster_wait_alone(m: &PhaseModel, s: &State, t: u32) -> bool {
    let th = &s.threads[t as usize];
    matches!(
        &m.code_of(t).instrs[th.pc as usize],
        Instr::Op {
            op: Op::ClusterWait,
            ..
        }
    ) && safe(m, s, t)
}

/// Block of a buffer instance (`u32::MAX` for globals, which every thread may touch).
fn buf_block(m: &PhaseModel, x: u32) -> u32 {
    m.buf_block[x as usize]
}
