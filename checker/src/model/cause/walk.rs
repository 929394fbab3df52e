//! The replay of a trace that the causes are read from: per barrier instance since its init,
//! every arrival (thread, round, phase, statement) and completed phase; every wait that
//! returned, every read and every `test_wait`.

use super::static_runners;
use crate::explore::Step;
use crate::model::PhaseModel;
use crate::model::code::Instr;
use crate::model::exec::peek_bar;
use crate::model::state::*;
use protocols::Span;
use protocols::ir::Op;
use std::collections::BTreeMap;

/// One arrival on a barrier instance.
#[derive(Clone, Debug)]
pub(super) struct Arrival {
    pub(super) thread: u32,
    /// How many arrivals this thread made on the barrier before, since its init.
    pub(super) round: u32,
    /// The phase it counted for.
    pub(super) phase: u32,
    pub(super) span: Span,
    /// The statement as the trace shows it (`arrive empty[0]`).
    pub(super) op: String,
    /// The arrival count it adds (1 unless `arrive B, n`).
    pub(super) weight: i64,
    /// How many threads of the block run this statement on this barrier instance in the same
    /// round (static conditions; the index evaluated with the arriving thread's locals).
    pub(super) runners: usize,
}

/// A barrier instance since its last init.
#[derive(Clone, Debug, Default)]
pub(super) struct Track {
    pub(super) init: Option<(Span, String)>,
    pub(super) count: i64,
    pub(super) first_phase: u32,
    pub(super) rounds: BTreeMap<u32, u32>,
    pub(super) arrivals: Vec<Arrival>,
    /// Phases that completed, in order.
    pub(super) completed: Vec<u32>,
    /// An `arrive_drop` changed the count: the pass says nothing about this barrier.
    pub(super) dropped: bool,
}

/// A wait that returned.
#[derive(Clone, Debug)]
pub(super) struct Passed {
    pub(super) thread: u32,
    pub(super) bar: u32,
    /// The barrier's phase when it returned: the wait selected the phase before it.
    pub(super) phase: u32,
    /// The phase before the barrier's first (counts as complete from init).
    pub(super) before_first: bool,
    pub(super) span: Span,
    pub(super) op: String,
    /// The step at which it returned.
    pub(super) step: usize,
}

/// One completed use of a named barrier (with a thread count) in which some thread counted
/// twice: its `bar_arrive` and then its `bar_sync` (or two arrives) fell into the same use.
#[derive(Clone, Debug)]
pub(super) struct DoubledUse {
    pub(super) id: u8,
    pub(super) count: u32,
    /// Threads that counted twice, with the span and text of their first and second arrival.
    pub(super) doubled: Vec<u32>,
    pub(super) first: (Span, String),
    pub(super) second: (Span, String),
    /// Every thread that counted in the use.
    pub(super) counted: Vec<u32>,
    /// Threads of the block that reach a `bar_arrive`/`bar_sync` on this barrier (statically)
    /// and did not count in the use.
    pub(super) absent: Vec<u32>,
    /// The threads the use released (those waiting in its `bar_sync`).
    pub(super) released: Vec<u32>,
}

/// A named barrier's use in progress: (thread, span, statement text) of each arrival.
type NamedUse = Vec<(u32, Span, String)>;

#[derive(Default)]
pub(super) struct Walk {
    pub(super) tracks: BTreeMap<u32, Track>,
    pub(super) passed: Vec<Passed>,
    /// (thread, step) of every read of a buffer (`read`, `mma`, `load`).
    pub(super) reads: Vec<(u32, usize)>,
    /// (thread, step) of every wait that returned, in order.
    pub(super) syncs: Vec<(u32, usize)>,
    /// (thread, barrier) of every `test_wait`: it observes a phase too.
    pub(super) tested: Vec<(u32, u32)>,
    /// Named barriers' uses in progress, by slot (`block * 16 + id`).
    named: BTreeMap<usize, NamedUse>,
    /// Completed named-barrier uses in which a thread counted twice, in order.
    pub(super) doubled: Vec<DoubledUse>,
}

/// Whether thread `u` has a `bar_arrive` or `bar_sync` with a thread count on named barrier
/// `id` (a constant id) that it may reach.
fn reaches_named(m: &PhaseModel, u: u32, id: u8) -> bool {
    m.code_of(u).instrs.iter().enumerate().any(|(pc, ins)| {
        matches!(ins, Instr::Op {
                op: Op::BarSync { id: e, count: Some(_), .. } | Op::BarArrive { id: e, count: Some(_), .. },
                ..
            } if m.eval(e, u, &[]).ok() == Some(i64::from(id)))
            && m.may_reach(u, pc)
    })
}

/// Replay `schedule` (real actors) from `init`, collecting arrivals and passed waits; return
/// them with the last state reached.
pub(super) fn walk(m: &PhaseModel, init: &State, schedule: &[u32]) -> (Walk, State) {
    let mut w = Walk::default();
    let mut s = init.clone();
    let n = m.nthreads();
    for (step, &a) in schedule.iter().enumerate() {
        let (_, _, span, op_text, _) = crate::model::trace::describe(m, &s, a);
        let mut found = Vec::new();
        let Step::Next(next) = m.step_raw(&s, a, &mut found) else {
            break;
        };
        if a >= n {
            if let Some(&Event::CpArrive { thread, bar, .. }) = s.events.get((a - n) as usize) {
                w.arrive(&s, &next, (thread, bar, 1, 0), span, op_text);
            } else if let Some(&Event::Tma { bar, .. }) = s.events.get((a - n) as usize) {
                w.complete(&s, &next, bar);
            }
            s = next;
            continue;
        }
        let th = &s.threads[a as usize];
        if let Instr::Op { op, .. } = &m.code_of(a).instrs[th.pc as usize] {
            let eval = |e: &protocols::ir::Expr| m.eval(e, a, &th.locals).ok();
            match op {
                Op::Init { bar, .. } => {
                    if let Some(b) = peek_bar(m, &s, a, bar) {
                        let nb = &next.bars[b as usize];
                        w.tracks.insert(
                            b,
                            Track {
                                init: Some((span, op_text)),
                                count: i64::from(nb.expected),
                                first_phase: nb.phase,
                                ..Track::default()
                            },
                        );
                    }
                }
                Op::Arrive { bar, count, .. } => {
                    if let Some(b) = peek_bar(m, &s, a, bar) {
                        let weight = count.as_ref().map_or(Some(1), eval).unwrap_or(0);
                        let runners = static_runners(m, a, th.pc, bar, &th.locals, b);
                        w.arrive(&s, &next, (a, b, weight, runners), span, op_text);
                    }
                }
                Op::ArriveExpectTx { bar, .. } | Op::ArriveAndWait { bar } => {
                    if let Some(b) = peek_bar(m, &s, a, bar) {
                        let runners = static_runners(m, a, th.pc, bar, &th.locals, b);
                        w.arrive(&s, &next, (a, b, 1, runners), span, op_text);
                    }
                }
                Op::ArriveDrop { bar, .. } => {
                    if let Some(b) = peek_bar(m, &s, a, bar) {
                        w.tracks.entry(b).or_default().dropped = true;
                    }
                }
                Op::CompleteTx { bar, .. } | Op::ExpectTx { bar, .. } => {
                    if let Some(b) = peek_bar(m, &s, a, bar) {
                        w.complete(&s, &next, b);
                    }
                }
                Op::WaitParity { bar, .. } => {
                    // The step returns when the thread moves past the wait.
                    if let Some(b) = peek_bar(m, &s, a, bar)
                        && next.threads[a as usize].pc != th.pc
                    {
                        let phase = s.bars[b as usize].phase;
                        let first = w.tracks.get(&b).map_or(0, |t| t.first_phase);
                        w.passed.push(Passed {
                            thread: a,
                            bar: b,
                            phase,
                            before_first: phase == first,
                            span,
                            op: op_text,
                            step,
                        });
                        w.syncs.push((a, step));
                    }
                }
                Op::TestWait { bar, .. } => {
                    if let Some(b) = peek_bar(m, &s, a, bar) {
                        w.tested.push((a, b));
                    }
                }
                Op::Read { .. } | Op::Mma { .. } | Op::Load { .. } => w.reads.push((a, step)),
                Op::BarSync {
                    id, count: Some(_), ..
                }
                | Op::BarArrive {
                    id, count: Some(_), ..
                } => {
                    if let Some(idv) = eval(id).filter(|v| (0..16).contains(v)) {
                        w.named_arrive(m, &s, &next, (a, idv as u8), span, op_text);
                    }
                }
                _ => {}
            }
        }
        s = next;
    }
    (w, s)
}

impl Walk {
    /// Thread `t` arrives (`bar_arrive` or `bar_sync`) on named barrier `id` of its block; if the
    /// step completes the use, keep it when a thread counted twice in it.
    fn named_arrive(
        &mut self,
        m: &PhaseModel,
        s: &State,
        next: &State,
        (t, id): (u32, u8),
        span: Span,
        op: String,
    ) {
        let block = m.block_of(t);
        let slot = block as usize * 16 + id as usize;
        let count = u32::from(s.named[slot].count.max(next.named[slot].count));
        let arrivals = self.named.entry(slot).or_default();
        arrivals.push((t, span, op));
        let threads = || (0..m.nthreads()).filter(move |&u| m.block_of(u) == block);
        let waiting =
            |st: &State, u: u32| st.threads[u as usize].mode == Mode::Sync(SyncKind::Named { id });
        let done = next.named[slot].arrived == 0 && !threads().any(|u| waiting(next, u));
        if !done {
            return;
        }
        let arrivals = std::mem::take(arrivals);
        let mut doubled: Vec<u32> = Vec::new();
        let mut pair = None;
        for (i, (u, sp, text)) in arrivals.iter().enumerate() {
            if let Some((_, sp0, text0)) = arrivals[..i].iter().find(|(v, ..)| v == u) {
                if !doubled.contains(u) {
                    doubled.push(*u);
                }
                pair.get_or_insert(((*sp0, text0.clone()), (*sp, text.clone())));
            }
        }
        let Some((first, second)) = pair else {
            return;
        };
        let mut counted: Vec<u32> = arrivals.iter().map(|(u, ..)| *u).collect();
        counted.sort_unstable();
        counted.dedup();
        let absent = threads()
            .filter(|u| counted.binary_search(u).is_err() && reaches_named(m, *u, id))
            .collect();
        // Those waiting before the step, and the completing thread if its step is a `bar_sync`
        // (it returns at once).
        let mut released: Vec<u32> = threads().filter(|&u| waiting(s, u)).collect();
        let syncs = matches!(
            m.code_of(t).instrs[s.threads[t as usize].pc as usize],
            Instr::Op {
                op: Op::BarSync { .. },
                ..
            }
        );
        if syncs && !released.contains(&t) {
            released.push(t);
        }
        self.doubled.push(DoubledUse {
            id,
            count,
            doubled,
            first,
            second,
            counted,
            absent,
            released,
        });
    }

    /// `who`: (thread, barrier instance, arrival count, threads that run the statement).
    pub(super) fn arrive(
        &mut self,
        s: &State,
        next: &State,
        who: (u32, u32, i64, usize),
        span: Span,
        op: String,
    ) {
        let (thread, bar, weight, runners) = who;
        let t = self.tracks.entry(bar).or_default();
        let round = t.rounds.entry(thread).or_insert(0);
        t.arrivals.push(Arrival {
            thread,
            round: *round,
            phase: s.bars[bar as usize].phase,
            span,
            op,
            weight,
            runners,
        });
        *round += 1;
        self.complete(s, next, bar);
    }

    pub(super) fn complete(&mut self, s: &State, next: &State, bar: u32) {
        let (before, after) = (s.bars[bar as usize].phase, next.bars[bar as usize].phase);
        if after > before {
            self.tracks
                .entry(bar)
                .or_default()
                .completed
                .extend(before..after);
        }
    }
}
