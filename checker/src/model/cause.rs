//! Root causes: a post-pass over a finding's trace that, where the trace shows it, puts the
//! statement to change in front of the symptom.
//!
//! - **Arrival count.** An mbarrier phase completes when its pending count reaches zero
//!   (PTX ISA, mbarrier: "the current phase is complete when the pending arrival count reaches
//!   zero and the tx-count reaches zero"). When `init` counts fewer arrivals than the threads
//!   that arrive in one round, a phase completes early and the remaining arrivals land in the
//!   next phase: the symptom is an `unobserved-phase`, a `wait-phase-behind`, or a race on the
//!   buffer that the early completion released. The pass numbers each thread's arrivals on a
//!   barrier since its init (its round) and finds a phase that completed with the arrivals of
//!   only some of the threads that arrive at that statement in that round: the ones that came
//!   later landed in the next phase (seen in the trace), or the statement is run by more threads
//!   than the count (counted statically, as `ThreadInfo::warp_gaps` does).
//! - **Wait parity.** "The phase parity ... indicates the phase of the mbarrier object that the
//!   waiting threads are waiting for" (PTX ISA, mbarrier.test_wait/try_wait): a wait returns
//!   once the phase of that parity has completed, and the phase before the first counts as
//!   completed from init. A reader whose wait on the barrier that the racing writer completes
//!   selected the phase before the first one passed at once, so its read is not ordered after
//!   the write: the parity is off by one. (A writer passing such a wait is the usual start of
//!   a producer on empty buffers; it is not reported.) Any finding whose trace shows a thread
//!   pass such a wait, read before its next wait, and the phase it skipped complete later,
//!   says the same.
//! - **Wait parity, one ahead.** A deadlock where threads block at their first wait (or
//!   `test_wait`) on a barrier, with the parity of its current phase, while the phase before
//!   it has completed: they skipped the phase they never observed and wait for one that is not
//!   under way.
//!
//! The pass only adds what the trace shows; it never changes which findings there are.

use super::code::Instr;
use super::exec::peek_bar;
use super::state::*;
use super::{PhaseModel, race};
use crate::explore::Step;
use crate::report::{Finding, Label};
use crate::rules::Class;
use protocols::Span;
use protocols::ir::Op;
use std::collections::BTreeMap;

/// One arrival on a barrier instance.
#[derive(Clone, Debug)]
struct Arrival {
    thread: u32,
    /// How many arrivals this thread made on the barrier before, since its init.
    round: u32,
    /// The phase it counted for.
    phase: u32,
    span: Span,
    /// The statement as the trace shows it (`arrive empty[0]`).
    op: String,
    /// The arrival count it adds (1 unless `arrive B, n`).
    weight: i64,
    /// How many threads of the block run this statement on this barrier instance in the same
    /// round (static conditions; the index evaluated with the arriving thread's locals).
    runners: usize,
}

/// A barrier instance since its last init.
#[derive(Clone, Debug, Default)]
struct Track {
    init: Option<(Span, String)>,
    count: i64,
    first_phase: u32,
    rounds: BTreeMap<u32, u32>,
    arrivals: Vec<Arrival>,
    /// Phases that completed, in order.
    completed: Vec<u32>,
    /// An `arrive_drop` changed the count: the pass says nothing about this barrier.
    dropped: bool,
}

/// A wait that returned.
#[derive(Clone, Debug)]
struct Passed {
    thread: u32,
    bar: u32,
    /// The barrier's phase when it returned: the wait selected the phase before it.
    phase: u32,
    /// The phase before the barrier's first (counts as complete from init).
    before_first: bool,
    span: Span,
    op: String,
    /// The step at which it returned.
    step: usize,
}

#[derive(Default)]
struct Walk {
    tracks: BTreeMap<u32, Track>,
    passed: Vec<Passed>,
    /// (thread, step) of every read of a buffer (`read`, `mma`, `load`).
    reads: Vec<(u32, usize)>,
    /// (thread, step) of every wait that returned, in order.
    syncs: Vec<(u32, usize)>,
    /// (thread, barrier) of every `test_wait`: it observes a phase too.
    tested: Vec<(u32, u32)>,
}

/// Replay `schedule` (real actors) from `init`, collecting arrivals and passed waits; return
/// them with the last state reached.
fn walk(m: &PhaseModel, init: &State, schedule: &[u32]) -> (Walk, State) {
    let mut w = Walk::default();
    let mut s = init.clone();
    let n = m.nthreads();
    for (step, &a) in schedule.iter().enumerate() {
        let (_, _, span, op_text, _) = super::trace::describe(m, &s, a);
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
                _ => {}
            }
        }
        s = next;
    }
    (w, s)
}

impl Walk {
    /// `who`: (thread, barrier instance, arrival count, threads that run the statement).
    fn arrive(
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

    fn complete(&mut self, s: &State, next: &State, bar: u32) {
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

/// Up to four names, then how many more: `consumer[0], consumer[32], consumer[64] and 5 more`.
fn few_names(m: &PhaseModel, ids: &[u32]) -> String {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let folded = super::trace::fold_names(m, &ids);
    if folded.matches(", ").count() < 4 {
        return folded;
    }
    let head: Vec<&str> = folded.split(", ").take(3).collect();
    format!(
        "{} and {} more",
        head.join(", "),
        folded.split(", ").count() - 3
    )
}

/// How many threads of `t`'s block run the arrive at `pc` of its kernel on barrier instance
/// `b` in the round that `t` is in (one per warp inside `elect`): their `role`/`if` conditions
/// that use no locals let them reach it, and the barrier's index, evaluated with `t`'s locals
/// (the round's), is `b` for them too.
fn static_runners(
    m: &PhaseModel,
    t: u32,
    pc: u32,
    bar: &protocols::ir::ObjRef,
    locals: &[i64],
    b: u32,
) -> usize {
    let ti = &m.threads[t as usize];
    let mates = (0..m.nthreads()).filter(|&u| {
        let x = &m.threads[u as usize];
        x.kernel == ti.kernel
            && x.cta == ti.cta
            && m.may_reach(u, pc as usize)
            && super::exec::peek_with(m, u, bar, locals) == Some(b)
    });
    if m.in_elect(t, pc) {
        let mut warps: Vec<u32> = mates.map(|u| m.threads[u as usize].tid / 32).collect();
        warps.dedup();
        warps.len()
    } else {
        mates.count()
    }
}

/// `1 arrival`, `2 arrivals`.
fn plural(n: i64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

struct Cause {
    headline: String,
    labels: Vec<Label>,
    help: String,
}

/// A phase that completed with only some of the threads that arrive at one statement in that
/// round.
fn count_cause(m: &PhaseModel, w: &Walk) -> Option<Cause> {
    for (&b, t) in &w.tracks {
        let Some((init_span, init_op)) = &t.init else {
            continue;
        };
        if t.dropped || t.arrivals.iter().any(|a| a.weight != 1) {
            continue;
        }
        for &q in &t.completed {
            let Some(round) = q.checked_sub(t.first_phase) else {
                continue;
            };
            let completers: Vec<&Arrival> = t.arrivals.iter().filter(|a| a.phase == q).collect();
            let Some(first) = completers.first() else {
                continue;
            };
            // One statement, the round's own arrivals: the phase was meant for that round.
            if completers
                .iter()
                .any(|a| a.span != first.span || a.round != round)
            {
                continue;
            }
            let late: Vec<u32> = t
                .arrivals
                .iter()
                .filter(|a| a.span == first.span && a.round == round && a.phase > q)
                .map(|a| a.thread)
                .collect();
            let runners = first.runners;
            let counted = completers.len();
            if late.is_empty() && runners <= counted {
                continue;
            }
            let bar = &m.bar_names[b as usize];
            let who: Vec<u32> = completers.iter().map(|a| a.thread).collect();
            let per_phase = if runners > counted {
                format!("{runners} threads run `{}` in each round", first.op)
            } else {
                format!("more threads than that run `{}` in each round", first.op)
            };
            let mut headline = format!(
                "`{init_op}` makes each phase of `{bar}` complete after {}, but {per_phase}: phase {q} completed with the arrivals of {} alone",
                plural(t.count, "arrival"),
                few_names(m, &who)
            );
            if !late.is_empty() {
                headline.push_str(&format!(
                    ", and {} then arrived for that round in phase {}",
                    few_names(m, &late),
                    q + 1
                ));
            }
            let fix = if runners > counted {
                format!("`init {bar}, {runners}`")
            } else {
                "a count of every arrival of one round".to_string()
            };
            return Some(Cause {
                headline,
                labels: vec![
                    Label {
                        span: *init_span,
                        message: format!("counts {} per phase", plural(t.count, "arrival")),
                    },
                    Label {
                        span: first.span,
                        message: if runners > counted {
                            format!("{runners} threads arrive here per round")
                        } else {
                            "more threads arrive here per round".to_string()
                        },
                    },
                ],
                help: format!(
                    "initialize `{bar}` with the number of arrivals of one phase ({fix}), or let fewer threads arrive (one elected thread per warp group, with the count to match)"
                ),
            });
        }
    }
    None
}

/// A reader whose wait on the barrier its writer completes selected the phase before the
/// first one.
fn parity_cause(m: &PhaseModel, w: &Walk, end: &State, f: &Finding) -> Option<Cause> {
    if f.rule.class != Class::Race {
        return None;
    }
    let here = race::sides_at(m, end, f.span);
    let there: Vec<race::RaceSide> = f
        .labels
        .iter()
        .flat_map(|l| race::sides_at(m, end, l.span))
        .collect();
    let pairs = here
        .iter()
        .flat_map(|a| there.iter().map(move |b| (a, b)))
        .chain(there.iter().flat_map(|b| here.iter().map(move |a| (b, a))));
    for (reader, writer) in pairs {
        if !reader.reads || !writer.writes || reader.thread == writer.thread {
            continue;
        }
        // The barrier the write is published through: a TMA copy's own barrier, else the
        // writer's next arrive after the write.
        let bar = writer
            .tma_bar
            .or_else(|| next_arrive(m, end, writer.thread, writer.pc));
        let Some(bar) = bar else {
            continue;
        };
        let Some(p) = w
            .passed
            .iter()
            .rev()
            .find(|p| p.thread == reader.thread && p.bar == bar)
        else {
            continue;
        };
        if !p.before_first {
            continue;
        }
        return Some(parity_text(m, p, Some(writer.thread)));
    }
    None
}

/// Any finding: a thread passed a wait that selected the phase before the first, read a buffer
/// before its next wait, and the phase that wait should have waited for completed later in the
/// trace. (A producer passing its first wait on an empty barrier writes, and is not named.)
fn early_reader_cause(m: &PhaseModel, w: &Walk) -> Option<Cause> {
    for p in w.passed.iter().filter(|p| p.before_first) {
        let next_wait = w
            .syncs
            .iter()
            .find(|&&(t, i)| t == p.thread && i > p.step)
            .map_or(usize::MAX, |x| x.1);
        let read = w
            .reads
            .iter()
            .any(|&(t, i)| t == p.thread && i > p.step && i < next_wait);
        let completed_later = w
            .tracks
            .get(&p.bar)
            .is_some_and(|t| t.completed.contains(&p.phase));
        if read && completed_later {
            return Some(parity_text(m, p, None));
        }
    }
    None
}

fn parity_text(m: &PhaseModel, p: &Passed, writer: Option<u32>) -> Cause {
    let bar_name = &m.bar_names[p.bar as usize];
    let reader_name = &m.threads[p.thread as usize].name;
    let parity = p.phase % 2;
    let what = match writer {
        Some(w) => format!("{}'s write completes", m.threads[w as usize].name),
        None => "carries the data it then reads".to_string(),
    };
    Cause {
        headline: format!(
            "`{}` selects the phase before the first of `{bar_name}`, which counts as complete from init: {reader_name} passed it at once, before the phase {} that {what}",
            p.op, p.phase
        ),
        labels: vec![Label {
            span: p.span,
            message: format!(
                "parity {}: the phase before phase {}, complete from init",
                1 - parity,
                p.phase
            ),
        }],
        help: format!(
            "wait with the parity of the phase the data arrives in (parity {parity} for phase {}; flip it after each completed wait)",
            p.phase
        ),
    }
}

/// A deadlock: threads blocked at their first wait on a barrier whose parity selects its current
/// phase, while the phase before it (which they never observed) has completed: the parity is
/// one ahead, selecting a phase that is not under way for them.
fn ahead_cause(m: &PhaseModel, w: &Walk, end: &State, f: &Finding) -> Option<Cause> {
    if f.rule.class != Class::Deadlock {
        return None;
    }
    let mut blocked: Vec<(u32, u32, Span, String)> = Vec::new();
    for t in 0..m.nthreads() {
        let th = &end.threads[t as usize];
        if th.mode != Mode::Ready {
            continue;
        }
        let Instr::Op {
            op: Op::WaitParity { bar, parity, .. },
            span,
        } = &m.code_of(t).instrs[th.pc as usize]
        else {
            continue;
        };
        let (Some(b), Ok(x)) = (peek_bar(m, end, t, bar), m.eval(parity, t, &th.locals)) else {
            continue;
        };
        let q = end.bars[b as usize].phase;
        let first = w.tracks.get(&b).map_or(0, |tr| tr.first_phase);
        let observed =
            w.passed.iter().any(|p| p.thread == t && p.bar == b) || w.tested.contains(&(t, b));
        if q > first && x.rem_euclid(2) == i64::from(q % 2) && !observed {
            let (_, _, _, text, _) = super::trace::describe(m, end, t);
            blocked.push((t, b, *span, text));
        }
    }
    let (_, b, span, op) = blocked.first()?.clone();
    let ids: Vec<u32> = blocked
        .iter()
        .filter(|x| x.1 == b && x.2 == span)
        .map(|x| x.0)
        .collect();
    let q = end.bars[b as usize].phase;
    let bar_name = &m.bar_names[b as usize];
    Some(Cause {
        headline: format!(
            "`{op}` selects phase {q} of `{bar_name}`, one ahead: phase {} completed, and {} never observed it (this is their first wait on `{bar_name}`), so they wait for a phase that is not yet under way",
            q - 1,
            few_names(m, &ids)
        ),
        labels: vec![Label {
            span,
            message: format!("parity {}: phase {q}, not phase {}", q % 2, q - 1),
        }],
        help: format!(
            "wait with the parity of the phase the data arrives in (parity {} for phase {}; flip it after each completed wait)",
            (q - 1) % 2,
            q - 1
        ),
    })
}

/// A deadlock's wait-for lists name the threads whose arrivals are missing: the providers of
/// the barrier less those that already arrived in the phase waited for (the trace shows
/// them). When none is left although arrivals are missing, the count is higher than the
/// arrivals of one phase: that is the cause.
fn refine_waits_for(m: &PhaseModel, w: &Walk, end: &State, f: &mut Finding) -> Option<Cause> {
    if f.rule.class != Class::Deadlock {
        return None;
    }
    let mut cause = None;
    for wf in f.waits_for.iter_mut() {
        let mut threads = Vec::new();
        let mut target = None;
        for t in 0..m.nthreads() {
            let th = &end.threads[t as usize];
            if th.mode != Mode::Ready {
                continue;
            }
            let Instr::Op {
                op:
                    Op::WaitParity { bar, .. } | Op::WaitToken { bar, .. } | Op::ArriveAndWait { bar },
                span,
            } = &m.code_of(t).instrs[th.pc as usize]
            else {
                continue;
            };
            let Some(b) = peek_bar(m, end, t, bar) else {
                continue;
            };
            let prefix = format!(
                "`{}` phase {}",
                m.bar_names[b as usize], end.bars[b as usize].phase
            );
            if *span == wf.span
                && wf.waits_on.starts_with(&prefix)
                && target.is_none_or(|(x, _)| x == b)
            {
                threads.push(t);
                target = Some((b, bar.object));
            }
        }
        let Some((b, obj)) = target else {
            continue;
        };
        let Some(track) = w.tracks.get(&b) else {
            continue;
        };
        let q = end.bars[b as usize].phase;
        let arrived: Vec<u32> = track
            .arrivals
            .iter()
            .filter(|a| a.phase == q)
            .map(|a| a.thread)
            .collect();
        if arrived.is_empty() || track.dropped {
            continue;
        }
        wf.expected_from = super::stuck::missing_parties(m, end, &threads, obj, &arrived);
        let pending = end.bars[b as usize].pending;
        if wf.expected_from.is_empty()
            && pending > 0
            && cause.is_none()
            && let Some((init_span, init_op)) = &track.init
        {
            let bar_name = &m.bar_names[b as usize];
            cause = Some(Cause {
                headline: format!(
                    "`{init_op}` makes each phase of `{bar_name}` wait for {}, but only {} ({}) arrive on it, and all of them arrived in phase {q}: it never completes",
                    plural(track.count, "arrival"),
                    plural(arrived.len() as i64, "thread"),
                    few_names(m, &arrived)
                ),
                labels: vec![Label {
                    span: *init_span,
                    message: format!("counts {} per phase", plural(track.count, "arrival")),
                }],
                help: format!(
                    "initialize `{bar_name}` with the number of arrivals of one phase ({}), or let more threads arrive",
                    arrived.len()
                ),
            });
        }
    }
    cause
}

/// The barrier of the first arrive statement at or after `pc` in `t`'s code, by `t`'s locals in
/// `s` (what its write is published through).
fn next_arrive(m: &PhaseModel, s: &State, t: u32, pc: u32) -> Option<u32> {
    m.code_of(t).instrs[pc as usize..]
        .iter()
        .find_map(|i| match i {
            Instr::Op {
                op:
                    Op::Arrive { bar, .. }
                    | Op::ArriveExpectTx { bar, .. }
                    | Op::ArriveAndWait { bar }
                    | Op::ArriveDrop { bar, .. },
                ..
            } => Some(peek_bar(m, s, t, bar)),
            _ => None,
        })?
}

/// Put the root cause that the trace of `f` (the real `schedule` from `init`) shows in front of
/// its symptom: the headline first, the symptom on the next line, the cause's labels added and
/// its help in place of the generic one.
pub fn explain(m: &PhaseModel, init: &State, schedule: &[u32], f: &mut Finding) {
    if schedule.is_empty() {
        return;
    }
    let (w, end) = walk(m, init, schedule);
    let too_high = refine_waits_for(m, &w, &end, f);
    let Some(cause) = count_cause(m, &w)
        .or(too_high)
        .or_else(|| parity_cause(m, &w, &end, f))
        .or_else(|| early_reader_cause(m, &w))
        .or_else(|| ahead_cause(m, &w, &end, f))
    else {
        return;
    };
    f.message = format!("{}\n{}", cause.headline, f.message);
    for l in cause.labels {
        if l.span != f.span && !f.labels.iter().any(|x| x.span == l.span) {
            f.labels.push(l);
        }
    }
    f.help = Some(cause.help);
}
