//! Causes in the arrival count: an `init` count lower than the arrivals of one round (a phase
//! completes early), or higher (it never completes); and the wait-for lists of a deadlock
//! narrowed to the threads whose arrivals are missing.

use super::walk::{Arrival, Walk};
use super::{Cause, few_names, plural};
use crate::model::PhaseModel;
use crate::model::code::Instr;
use crate::model::exec::peek_bar;
use crate::model::state::*;
use crate::report::{Finding, Label};
use crate::rules::Class;
use protocols::ir::Op;

/// A phase that completed with only some of the threads that arrive at one statement in that
/// round.
pub(super) fn count_cause(m: &PhaseModel, w: &Walk) -> Option<Cause> {
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

/// A deadlock's wait-for lists name the threads whose arrivals are missing: the providers of
/// the barrier less those that already arrived in the phase waited for (the trace shows
/// them). When none is left although arrivals are missing, the count is higher than the
/// arrivals of one phase: that is the cause.
pub(super) fn refine_waits_for(
    m: &PhaseModel,
    w: &Walk,
    end: &State,
    f: &mut Finding,
) -> Option<Cause> {
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
        wf.expected_from = crate::model::stuck::missing_parties(m, end, &threads, obj, &arrived);
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
