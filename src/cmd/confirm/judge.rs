//! Whether a replay's events show the finding.

use super::plan::{stmt_of, unsequenced};
use checker::{Class, Finding};
use gpu_harness::decode::{EventKind, LaunchResult};
use gpu_harness::lower::Lowered;
use gpu_harness::sequencer::SeqStep;
use protocols::SourceFile;

/// Whether a replay's events show finding `f`: what was seen and in how many trials, or
/// `None`. Deadlocks: a bounded wait expired at the finding's statement or one of its wait-for
/// graph; races: an overlap at either access (for `stale-phase`, the replayed wait passed at its
/// first try); UB: a hang, or an overlap after it.
pub(super) fn judge(
    lowered: &Lowered,
    file: &SourceFile,
    f: &Finding,
    steps: &[SeqStep],
    extra_wanted: Option<u32>,
    r: &LaunchResult,
) -> Option<(String, u64)> {
    let cluster = u64::from(lowered.cluster.max(1));
    let trials_with = |pred: &dyn Fn(&gpu_harness::decode::Event) -> bool| -> u64 {
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
                // Free running: only the stale read at the `tma_store` itself shows it.
                wanted = final_stmt.into_iter().collect();
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
