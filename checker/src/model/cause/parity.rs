//! Causes in a wait's parity: a reader that passed the phase before the first, or threads
//! whose first wait selects a phase one ahead of the one that completed.

use super::walk::{Passed, Walk};
use super::{Cause, few_names};
use crate::model::code::Instr;
use crate::model::exec::peek_bar;
use crate::model::state::*;
use crate::model::{PhaseModel, race};
use crate::report::{Finding, Label};
use crate::rules::Class;
use protocols::Span;
use protocols::ir::Op;

/// A reader whose wait on the barrier its writer completes selected the phase before the
/// first one.
pub(super) fn parity_cause(m: &PhaseModel, w: &Walk, end: &State, f: &Finding) -> Option<Cause> {
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
pub(super) fn early_reader_cause(m: &PhaseModel, w: &Walk) -> Option<Cause> {
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

pub(super) fn parity_text(m: &PhaseModel, p: &Passed, writer: Option<u32>) -> Cause {
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

/// Threads blocked at their first wait on a barrier (one they never passed or tested in the
/// trace), whose parity selects the barrier's current phase `q`: the first such statement for
/// which `keep(q, bar)` holds, and every thread blocked there.
struct FirstWaits {
    thread: u32,
    bar: u32,
    span: Span,
    /// The statement's text.
    op: String,
    ids: Vec<u32>,
}

fn blocked_first_waits(
    m: &PhaseModel,
    w: &Walk,
    end: &State,
    keep: impl Fn(u32, u32) -> bool,
) -> Option<FirstWaits> {
    let mut blocked: Vec<(u32, u32, Span)> = Vec::new();
    for (t, span, b, x) in crate::model::exec::parity_waits(m, end, |_| true) {
        let q = end.bars[b as usize].phase;
        let observed =
            w.passed.iter().any(|p| p.thread == t && p.bar == b) || w.tested.contains(&(t, b));
        if !observed && x.rem_euclid(2) == i64::from(q % 2) && keep(q, b) {
            blocked.push((t, b, span));
        }
    }
    let &(thread, bar, span) = blocked.first()?;
    let (_, _, _, op, _) = crate::model::trace::describe(m, end, thread);
    let ids = blocked
        .iter()
        .filter(|x| x.1 == bar && x.2 == span)
        .map(|x| x.0)
        .collect();
    Some(FirstWaits {
        thread,
        bar,
        span,
        op,
        ids,
    })
}

/// A deadlock: threads blocked at their first wait on a barrier, a wait whose parity `x` means
/// the barrier's first phase of that parity (semantics.md §2.8: the intended phase follows the
/// last one observed, none here), while the barrier is already in phase `q >= x + 2`: the
/// phases up to `q - 1` completed before these threads got there, nothing held the others back
/// for them, and their parity now names the current phase `q`, which nobody completes. The
/// lanes of ThunderKittens' producer warp that wait without loading (issue 23) are the case:
/// lane 0 runs ahead through the pipeline, and by the ISA's letter nothing keeps lanes 1..31
/// within one phase of it. (With `q = x + 1` the parity is one ahead instead: `ahead_cause`.)
pub(super) fn behind_cause(m: &PhaseModel, w: &Walk, end: &State, f: &Finding) -> Option<Cause> {
    if f.rule.class != Class::Deadlock {
        return None;
    }
    // Two or more phases past the first of the parity, which the first wait means.
    let FirstWaits {
        thread: t,
        bar: b,
        span,
        op,
        ids,
    } = blocked_first_waits(m, w, end, |q, _| q >= q % 2 + 2)?;
    let q = end.bars[b as usize].phase;
    // The phase the first wait means: the barrier's first of that parity.
    let x = q % 2;
    let bar_name = &m.bar_names[b as usize];
    let warp_of = |u: u32| {
        let th = &m.threads[u as usize];
        (th.cta, th.tid / 32)
    };
    // Who went on without them: the thread of their warp that observed the latest phase of
    // the barrier, else one that passed this very statement on it.
    let same_warp = w
        .passed
        .iter()
        .filter(|p| p.bar == b && p.phase > x && warp_of(p.thread) == warp_of(t))
        .max_by_key(|p| p.phase);
    let leader = same_warp.or_else(|| {
        w.passed
            .iter()
            .filter(|p| p.bar == b && p.span == span && p.phase > x)
            .max_by_key(|p| p.phase)
    });
    let went_on = match (leader, same_warp.is_some()) {
        (Some(p), true) => format!(
            ": {} of the same warp went on through phase {}, and nothing keeps the lanes of a warp within one phase of each other between `.aligned` instructions (independent thread scheduling)",
            m.threads[p.thread as usize].name,
            p.phase - 1
        ),
        (Some(p), false) => format!(
            ": {} went on through phase {}, and nothing held it back for {}",
            m.threads[p.thread as usize].name,
            p.phase - 1,
            if ids.len() == 1 {
                "this thread"
            } else {
                "these threads"
            }
        ),
        (None, _) => String::new(),
    };
    let completed = if q == x + 2 {
        format!("phases {x} and {}", x + 1)
    } else {
        format!("phases {x} to {}", q - 1)
    };
    Some(Cause {
        headline: format!(
            "{} {} `{op}`, {} first wait on `{bar_name}`, only after {completed} completed{went_on}. Parity {x} now names phase {q}, which is never completed: the ISA defines a parity wait only for \"the current phase or the immediately preceding phase of the mbarrier object\" (PTX ISA, mbarrier.test_wait/try_wait), and phase {x} is {} behind",
            few_names(m, &ids),
            if ids.len() == 1 { "reaches" } else { "reach" },
            if ids.len() == 1 { "its" } else { "their" },
            q - x,
        ),
        labels: vec![Label {
            span,
            message: format!("parity {x}: phase {q} by now, not phase {x}"),
        }],
        help: if same_warp.is_some() {
            "keep the warp's lanes within one phase of each other (`__syncwarp()` after the wait), or let only the lane that uses the phase wait for it".to_string()
        } else {
            "hold the others back for these threads (an arrival of theirs on a barrier the others wait on), or let only the threads that use the phase wait for it".to_string()
        },
    })
}

/// A deadlock: threads blocked at their first wait on a barrier whose parity selects its current
/// phase, while the phase before it (which they never observed) has completed: the parity is
/// one ahead, selecting a phase that is not under way for them.
pub(super) fn ahead_cause(m: &PhaseModel, w: &Walk, end: &State, f: &Finding) -> Option<Cause> {
    if f.rule.class != Class::Deadlock {
        return None;
    }
    let FirstWaits {
        bar: b,
        span,
        op,
        ids,
        ..
    } = blocked_first_waits(m, w, end, |q, b| {
        q > w.tracks.get(&b).map_or(0, |tr| tr.first_phase)
    })?;
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
