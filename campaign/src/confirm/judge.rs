//! Whether a replay's events show the finding.

use super::plan::{stmt_of, unsequenced};
use checker::{Class, Finding};
use gpu_harness::decode::{Event, EventKind, LaunchResult, Stamp};
use gpu_harness::lower::Lowered;
use gpu_harness::sequencer::SeqStep;
use protocols::SourceFile;

/// Whether a replay's events show finding `f`: what was seen and in how many trials, or
/// `None`. Deadlocks: a bounded wait expired at the finding's statement or one of its wait-for
/// graph; races: an overlap at either access (for `stale-phase`, the replayed wait passed at its
/// first try); UB: a hang, or an overlap after it.
pub fn judge(
    lowered: &Lowered,
    file: &SourceFile,
    f: &Finding,
    steps: &[SeqStep],
    extra_wanted: Option<u32>,
    r: &LaunchResult,
) -> Option<(String, u64)> {
    let cluster = u64::from(lowered.cluster.max(1));
    let trials_with = |pred: EventFilter<'_>| -> u64 {
        let mut t: Vec<u64> = r
            .events
            .iter()
            .filter(|e| pred(e))
            .map(|e| e.block / cluster)
            .collect();
        t.dedup();
        t.len() as u64
    };
    let line = |stmt: u32| file.line_col(lowered.stmts[stmt as usize].span.start).line;
    let final_stmt = stmt_of(lowered, f.span);
    match f.class() {
        Class::Deadlock => {
            let mut wanted: Vec<u32> = f
                .waits_for
                .iter()
                .filter_map(|w| stmt_of(lowered, w.span))
                .collect();
            wanted.extend(final_stmt);
            let n = trials_with(&|e| e.kind == EventKind::Hang && wanted.contains(&e.stmt));
            if n > 0 {
                let mut lines: Vec<u32> = r
                    .events
                    .iter()
                    .filter(|e| e.kind == EventKind::Hang && wanted.contains(&e.stmt))
                    .map(|e| line(e.stmt))
                    .collect();
                lines.sort_unstable();
                lines.dedup();
                let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                return Some((
                    format!("bounded waits expired at line {}", lines.join(", ")),
                    n,
                ));
            }
            None
        }
        Class::Race => {
            if f.rule.name == "stale-phase" {
                let n = trials_with(&|e| {
                    e.kind == EventKind::StepDone && Some(e.stmt) == final_stmt && e.a == 0
                });
                if n > 0 {
                    return Some((
                        "the wait passed at its first try at the replayed point, on a phase \
                         completion its thread had already observed"
                            .into(),
                        n,
                    ));
                }
                return None;
            }
            let mut wanted: Vec<u32> = f
                .labels
                .iter()
                .filter_map(|l| stmt_of(lowered, l.span))
                .collect();
            wanted.extend(final_stmt);
            wanted.extend(extra_wanted);
            if let Some(s) = steps.last() {
                wanted.push(s.stmt);
            }
            if unsequenced(lowered, f) {
                return proxy_window(lowered, f, final_stmt, &line, &trials_with, r);
            }
            let n = trials_with(&|e| e.kind == EventKind::Race && wanted.contains(&e.stmt));
            if n > 0 {
                let e = r
                    .events
                    .iter()
                    .find(|e| e.kind == EventKind::Race && wanted.contains(&e.stmt))
                    .expect("counted above");
                let other = gpu_harness::decode::Stamp::decode(e.a);
                let other = match other.stmt {
                    Some(s) => format!("line {}", line(s)),
                    None => "no write yet".into(),
                };
                return Some((
                    format!(
                        "the access at line {} overlapped the conflicting one ({other})",
                        line(e.stmt)
                    ),
                    n,
                ));
            }
            None
        }
        Class::Ub | Class::Perf => {
            let n = trials_with(&|e| e.kind == EventKind::Hang && Some(e.stmt) == final_stmt);
            if n > 0 {
                return Some((
                    "the hardware hangs at the statement (its bounded wait expired)".into(),
                    n,
                ));
            }
            let n = trials_with(&|e| e.kind == EventKind::Hang);
            if n > 0 {
                let e = r
                    .events
                    .iter()
                    .find(|e| e.kind == EventKind::Hang)
                    .expect("counted");
                return Some((
                    format!(
                        "after the statement the protocol hangs (line {})",
                        line(e.stmt)
                    ),
                    n,
                ));
            }
            let n = trials_with(&|e| e.kind == EventKind::Race);
            if n > 0 {
                return Some((
                    "a buffer access overlapped a conflicting one after it".into(),
                    n,
                ));
            }
            None
        }
    }
}

/// Which events count (of one launch's).
type EventFilter<'a> = &'a dyn Fn(&Event) -> bool;

/// A `missing-proxy-fence` race replayed unsequenced in the proxy-window kernel: shown by a
/// stale copy at the `tma_store` itself whose landed stamp is that of the racing write (a
/// labelled statement), still busy (the copy missed its last store), or no stamp at all (it
/// missed every store). A landed stamp of any other statement would be a race of its own (a
/// write of the source while the copy reads it) and shows nothing here.
fn proxy_window(
    lowered: &Lowered,
    f: &Finding,
    final_stmt: Option<u32>,
    line: &dyn Fn(u32) -> u32,
    trials_with: &dyn Fn(EventFilter<'_>) -> u64,
    r: &LaunchResult,
) -> Option<(String, u64)> {
    let writes: Vec<u32> = f
        .labels
        .iter()
        .filter_map(|l| stmt_of(lowered, l.span))
        .collect();
    let shows = |e: &Event| {
        e.kind == EventKind::Race
            && Some(e.stmt) == final_stmt
            && Stamp::decode(e.a).stmt.is_none_or(|s| writes.contains(&s))
    };
    let n = trials_with(&shows);
    let e = r.events.iter().find(|e| shows(e))?;
    let landed = Stamp::decode(e.a);
    let what = match landed.stmt {
        Some(s) if landed.busy => format!(
            "the stamp of line {} (t{}) still busy: the copy missed that write's last store",
            line(s),
            landed.tid
        ),
        Some(s) => format!("an older stamp of line {} (t{})", line(s), landed.tid),
        None => "no stamp at all: the copy missed every store of the write".into(),
    };
    Some((
        format!(
            "the bulk copy at line {} stored {what}, although the protocol orders the write \
             before it; the source held the final stamp once the copy had completed (replayed \
             unsequenced, in the kernel that leaves the writers' stores in flight)",
            line(e.stmt)
        ),
        n,
    ))
}
