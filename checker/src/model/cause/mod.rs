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
//! - **Named barrier, counted twice.** A use of a named barrier with a thread count completed
//!   with a thread's `bar_arrive` and its later `bar_sync` both counted, while other threads
//!   that use the barrier had not arrived (`named.rs`).
//!
//! The pass only adds what the trace shows; it never changes which findings there are.

mod count;
mod named;
mod parity;
mod walk;

use super::PhaseModel;
use super::state::State;
use crate::report::{Finding, Label};

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

/// Put the root cause that the trace of `f` (the real `schedule` from `init`) shows in front of
/// its symptom: the headline first, the symptom on the next line, the cause's labels added and
/// its help in place of the generic one.
pub fn explain(m: &PhaseModel, init: &State, schedule: &[u32], f: &mut Finding) {
    if schedule.is_empty() {
        return;
    }
    let (w, end) = walk::walk(m, init, schedule);
    let too_high = count::refine_waits_for(m, &w, &end, f);
    let Some(cause) = count::count_cause(m, &w)
        .or(too_high)
        .or_else(|| parity::parity_cause(m, &w, &end, f))
        .or_else(|| parity::early_reader_cause(m, &w))
        .or_else(|| parity::behind_cause(m, &w, &end, f))
        .or_else(|| parity::ahead_cause(m, &w, &end, f))
        .or_else(|| {
            matches!(f.rule.name, "data-race" | "deadlock")
                .then(|| named::doubled_use_cause(m, &w))
                .flatten()
        })
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
