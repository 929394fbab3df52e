//! The verdict of one replay on the real kernel (`confirm --app`, see [`super::real`]): from
//! the run's stuck records and the checker's wait-for report to `confirmed on the real kernel`,
//! `not reproduced on the real kernel (why)`.

use super::real::{ptx_lines_of, source_of};
use campaign::confirm::report::{FindingResult, Outcome};
use capture::fuzz::{Event, SEQ_HELD, StuckThread};
use checker::Finding;
use instrument::app::{AppRun, ranges};
use instrument::sequence::{self, Sequence};
use protocols::SourceFile;
use std::collections::{BTreeMap, BTreeSet};

/// The source line shown for a statement or a point, without the inlined helper's line
/// (`prefill_sm90.cuh:276 (via barrier.h:416)` -> `prefill_sm90.cuh:276`): a wait the front end
/// takes at a first `try_wait` may spin at a second one of the same source line.
fn user_line(source: &str) -> &str {
    source.split(" (via ").next().unwrap_or(source)
}

/// Where the checker says a thread is blocked: the statement's PTX lines and its source line.
#[derive(Clone, Debug)]
struct BlockedAt {
    group: usize,
    ptx_lines: Vec<u32>,
    source: Option<String>,
}

impl BlockedAt {
    fn matches(&self, p: &instrument::Point) -> bool {
        self.ptx_lines.contains(&p.ptx_line)
            || matches!((&self.source, &p.source),
                (Some(a), Some(b)) if user_line(a) == user_line(b))
    }
}

/// Stuck records of one run: the sequencer's (a thread that gave up waiting for its turn) and
/// the kernel's (a bounded wait expired).
fn records(run: &AppRun) -> (Vec<StuckThread>, Vec<StuckThread>) {
    let mut held = Vec::new();
    let mut stuck = Vec::new();
    for e in &run.events {
        if let Event::Batch { stuck: s, .. } | Event::Hang { stuck: s, .. } = e {
            for t in s {
                if t.point & SEQ_HELD != 0 {
                    held.push(t.clone());
                } else {
                    stuck.push(t.clone());
                }
            }
        }
    }
    (held, stuck)
}

/// The replayed block's thread of a record: (rank in the cluster, linear tid), for a 1-D
/// block of a cluster laid out along x (the kernels of docs/gpu.md); `None` for others.
fn replayed_thread(t: &StuckThread, ctas: u32) -> Option<(u32, u32)> {
    let in_first = t.block[0] < ctas && t.block[1] == 0 && t.block[2] == 0;
    (in_first && t.thread[1] == 0 && t.thread[2] == 0).then_some((t.block[0], t.thread[0]))
}

/// Decide one finding from its replay (see the module's doc).
pub(super) fn judge(
    r: &mut FindingResult,
    f: &Finding,
    file: &SourceFile,
    ex: &ptx::Extracted,
    inst: &instrument::Instrumented,
    seq: &Sequence,
    run: &AppRun,
) {
    let total = f
        .trace
        .iter()
        .map(|t| t.repeat.max(1) as usize)
        .sum::<usize>();
    let turns = format!(
        "{} of the trace's {total} steps held in order at the kernel's instructions ({} turns \
         of {})",
        seq.entries.len(),
        seq.turns(),
        if seq.unit == 128 {
            "warpgroups"
        } else {
            "warps"
        }
    );
    let errors: Vec<&str> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Error { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    let loaded = run.events.iter().any(|e| matches!(e, Event::Loaded { .. }));
    let hung = run.killed || run.events.iter().any(|e| matches!(e, Event::Hang { .. }));
    r.outcome = Outcome::NotReproduced;
    if !errors.is_empty() || !loaded {
        r.reason = Some(if loaded { "error" } else { "not run" }.into());
        r.detail = if loaded {
            format!("the replay failed: {}", errors.join("; "))
        } else {
            format!(
                "the program never launched {} (nothing was replayed)",
                seq.kernel
            )
        };
        return;
    }
    let (held, stuck) = records(run);
    if let Some(first) = held.iter().min_by_key(|t| sequence::held_turns(t.seed)) {
        // The turn the ticket stopped at is the trace's step the real kernel did not take.
        let (stopped, own) = sequence::held_turns(first.seed);
        let step = seq.step_of_turn(stopped).map_or(0, |s| s + 1);
        let waiter = inst.point(first.point & !SEQ_HELD);
        let owners: Vec<u32> = seq
            .threads_of_turn(stopped)
            .into_iter()
            .map(|(_, tid)| tid)
            .collect();
        let group = seq
            .entries
            .iter()
            .find(|e| e.turn == stopped)
            .map(|e| e.group);
        let at = group
            .and_then(|g| seq.points_of_group(g).first().copied())
            .and_then(|p| inst.point(p));
        let place = |p: Option<&instrument::Point>| {
            p.map_or("an unknown point".to_string(), |p| {
                format!(
                    "{} (PTX line {})",
                    p.source.as_deref().unwrap_or("no line information"),
                    p.ptx_line
                )
            })
        };
        // Threads of the replayed block stuck at the kernel's own waits meanwhile (or after
        // the sequencer let everyone go): where the real kernel went instead.
        let mut meanwhile: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for t in &stuck {
            if let Some((_, tid)) = replayed_thread(t, seq.ctas) {
                meanwhile.entry(t.point).or_default().push(tid);
            }
        }
        let meanwhile = if meanwhile.is_empty() {
            String::new()
        } else {
            let parts: Vec<String> = meanwhile
                .into_iter()
                .map(|(p, tids)| format!("tid {} at {}", ranges(tids), place(inst.point(p))))
                .collect();
            format!("; stuck at the kernel's own waits: {}", parts.join("; "))
        };
        r.reason = Some(format!("diverged at step {step}"));
        r.detail = format!(
            "the real kernel left the trace at step {step} (turn {stopped} of {}: tid {} at {}), \
             which never ended; thread {} of block {} waited for its turn {own} at {} past the \
             wait bound, and the rest ran free{meanwhile}; {turns}",
            seq.turns(),
            ranges(owners),
            place(at),
            first.thread[0],
            first.block[0],
            place(waiter),
        );
        return;
    }
    // What the checker says: each blocked thread and where it is blocked.
    let mut expected: BTreeMap<(u32, u32), BlockedAt> = BTreeMap::new();
    for (group, w) in f.waits_for.iter().enumerate() {
        let at = BlockedAt {
            group,
            ptx_lines: ptx_lines_of(file, ex, w.span),
            source: source_of(file, ex, w.span),
        };
        for &t in &w.blocked {
            expected.insert(t, at.clone());
        }
    }
    let mut matched_groups: BTreeSet<usize> = BTreeSet::new();
    let mut matched: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut elsewhere: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut other_blocks = 0usize;
    for t in &stuck {
        let Some(thread) = replayed_thread(t, seq.ctas) else {
            other_blocks += 1;
            continue;
        };
        // A thread stuck finishing a pending wait (a second `try_wait` after a failed first
        // one, the record's last word is the pending wait's group) is at that wait's points.
        let pending: Vec<&instrument::Point> = if t.seed == u32::MAX {
            Vec::new()
        } else {
            seq.points_of_group(t.seed)
                .into_iter()
                .filter_map(|q| inst.point(q))
                .collect()
        };
        match (expected.get(&thread), inst.point(t.point)) {
            (Some(b), Some(p)) if b.matches(p) || pending.iter().any(|q| b.matches(q)) => {
                matched_groups.insert(b.group);
                matched.entry(t.point).or_default().push(thread.1);
            }
            _ => elsewhere.entry(t.point).or_default().push(thread.1),
        }
    }
    let at = |by: &BTreeMap<u32, Vec<u32>>| -> String {
        by.iter()
            .map(|(p, tids)| {
                let point = inst.point(*p);
                format!(
                    "tid {} at {} (PTX line {})",
                    ranges(tids.clone()),
                    point
                        .and_then(|p| p.source.as_deref())
                        .unwrap_or("no line information"),
                    point.map_or(0, |p| p.ptx_line)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let unrecorded: Vec<String> = f
        .waits_for
        .iter()
        .enumerate()
        .filter(|(g, _)| !matched_groups.contains(g))
        .map(|(_, w)| w.thread.clone())
        .collect();
    let others = if other_blocks > 0 {
        format!(
            "; {other_blocks} stuck thread(s) of blocks the trace does not replay, not compared"
        )
    } else {
        String::new()
    };
    // A replay's bounded waits record once and wait on, so a deadlock ends as a hang (the
    // watchdog); a kernel that finished had only slow waits, whatever they recorded.
    if !hung && !stuck.is_empty() {
        r.reason = Some("ran clean".into());
        r.detail = format!(
            "the real kernel followed the trace and then ran to its end (program exit {}); \
             waits that took longer than the bound on the way: {}{others}; {turns}",
            run.exit_code.map_or("none".to_string(), |c| c.to_string()),
            at(&matched.into_iter().chain(elsewhere).collect())
        );
        return;
    }
    if !matched.is_empty() && elsewhere.is_empty() {
        r.outcome = Outcome::Confirmed;
        r.detail = format!(
            "after the trace the real kernel got stuck where the checker's wait-for report \
             says: {}{}{}; {turns}",
            at(&matched),
            if unrecorded.is_empty() {
                String::new()
            } else {
                format!(
                    "; not recorded (no bounded wait there: a `syncwarp`, a `bar.sync`, a poll of \
                     several barriers): {}",
                    unrecorded.join(", ")
                )
            },
            others
        );
        return;
    }
    if matched.is_empty() && elsewhere.is_empty() {
        if hung {
            r.reason = Some("hung, no thread recorded".into());
            r.detail = format!(
                "the real kernel hung after the trace with no thread stuck at a bounded wait \
                 of the replayed block (a wait with no try form, or a poll of several \
                 barriers): not the checker's wait-for report{others}; {turns}"
            );
        } else {
            r.reason = Some("ran clean".into());
            r.detail = format!(
                "the real kernel followed the trace and then ran to its end (program exit {}){others}; {turns}",
                run.exit_code.map_or("none".to_string(), |c| c.to_string())
            );
        }
        return;
    }
    r.reason = Some("stuck elsewhere".into());
    r.detail = format!(
        "the real kernel got stuck, not as the checker says: {}{}{others}; {turns}",
        at(&elsewhere),
        if matched.is_empty() {
            String::new()
        } else {
            format!("; as the checker says: {}", at(&matched))
        }
    );
}
