//! The human report of a fuzz run: per-statement hangs, stale reads per buffer and statement,
//! throughput, and what a stuck launch's read-back showed.

use super::*;

pub fn render_human(s: &FuzzSummary) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "fuzz {} on {}", s.file, s.device);
    let _ = writeln!(
        o,
        "  {} round(s) x {} blocks of {} threads: {} trials in {:.1} s (kernel time {:.2} s), seeds {}..{}",
        s.rounds,
        s.blocks_per_round,
        s.threads_per_block,
        s.trials,
        s.wall_seconds,
        s.kernel_seconds,
        s.first_seed,
        s.first_seed + s.rounds.saturating_sub(1)
    );
    if !s.kernels.is_empty() {
        let ks: Vec<String> = s
            .kernels
            .iter()
            .map(|k| {
                let d = match k.domain {
                    gpu_harness::lower::MemSyncDomain::Default => "default",
                    gpu_harness::lower::MemSyncDomain::Remote => "remote",
                };
                format!("{} (domain {d}, {} threads)", k.name, k.threads_per_block)
            })
            .collect();
        let _ = writeln!(
            o,
            "  kernels launched concurrently, block i of each = trial i: {}",
            ks.join(", ")
        );
    }
    if s.blocks_apart > 0 {
        let _ = writeln!(
            o,
            "  warning: {} block(s) ran without their trial's partner kernel (not co-resident); \
             pass fewer --blocks",
            s.blocks_apart
        );
    }
    if s.barrier_phases == 0 {
        // Files that synchronise only through `syncthreads`, named barriers or bulk groups have
        // no barrier object whose phases could be counted.
        let _ = writeln!(o, "  throughput: no barrier-object phases completed");
    } else {
        let _ = writeln!(
            o,
            "  throughput: {:.3e} barrier phases/s ({} phases)",
            s.phases_per_second, s.barrier_phases
        );
    }
    render_rows(&mut o, s, "  ");
    let mut trials = s.trials;
    if let Some(w) = &s.proxy_window {
        trials += w.trials;
        let _ = writeln!(
            o,
            "  proxy-window rounds (writes leave their stores in flight for the bulk copies; no \
             delays): {} round(s), {} trials in {:.1} s, seeds {}..{}",
            w.rounds,
            w.trials,
            w.wall_seconds,
            w.first_seed,
            w.first_seed + w.rounds.saturating_sub(1)
        );
        render_rows(&mut o, w, "    ");
    }
    if s.clean() {
        let _ = writeln!(
            o,
            "  nothing seen: no hang and no stale read in {trials} trials"
        );
    } else {
        for part in std::iter::once(s).chain(s.proxy_window.as_deref()) {
            if part.part_clean() {
                continue;
            }
            match &part.stuck {
                Some(st) => {
                    let _ = writeln!(
                        o,
                        "  replay the stuck round: phasecheck fuzz {}{} --seed {} --blocks {} --seconds 0",
                        s.file, part.replay_flags, st.seed, st.blocks
                    );
                }
                None => {
                    let _ = writeln!(
                        o,
                        "  replay a round: phasecheck fuzz {}{} --seed SEED --blocks {} --seconds 0",
                        s.file, part.replay_flags, part.blocks_per_round
                    );
                }
            }
        }
    }
    o
}

/// The hang and stale-read rows of one part of a run, indented by `pad`.
pub(super) fn render_rows(o: &mut String, s: &FuzzSummary, pad: &str) {
    use std::fmt::Write;
    let bounded: Vec<&HangRow> = s.hangs.iter().filter(|h| !h.stuck).collect();
    if bounded.is_empty() && s.stuck.is_some() {
        let _ = writeln!(o, "{pad}hangs (expired bounded waits): none");
    } else if bounded.is_empty() {
        let _ = writeln!(o, "{pad}hangs: none");
    } else {
        let _ = writeln!(o, "{pad}hangs (expired bounded waits):");
        let _ = writeln!(
            o,
            "{pad}  {:<5} {:<44} {:>10}  first seen",
            "line", "statement", "count"
        );
        for h in bounded {
            let _ = writeln!(
                o,
                "{pad}  {:<5} {:<44} {:>10}  seed {} block {}",
                h.line, h.statement, h.count, h.first.seed, h.first.block
            );
            if let Some(k) = &h.kernel {
                let _ = writeln!(o, "{pad}        kernel: {k}");
            }
            if !h.observed.is_empty() {
                let _ = writeln!(o, "{pad}        observed: {}", h.observed);
            }
        }
    }
    if s.stale_reads.is_empty() {
        let _ = writeln!(o, "{pad}stale reads: none");
    } else {
        let _ = writeln!(
            o,
            "{pad}stale reads (accesses that overlapped a conflicting one):"
        );
        let _ = writeln!(
            o,
            "{pad}  {:<10} {:<5} {:<34} {:>10}  first seen",
            "buffer", "line", "statement", "count"
        );
        for r in &s.stale_reads {
            let _ = writeln!(
                o,
                "{pad}  {:<10} {:<5} {:<34} {:>10}  seed {} block {}",
                r.buffer, r.line, r.statement, r.count, r.first.seed, r.first.block
            );
            if let Some(k) = &r.kernel {
                let _ = writeln!(o, "{pad}        kernel: {k}");
            }
            let _ = writeln!(o, "{pad}        other access: {}", r.other);
        }
    }
    if s.runaway_loops > 0 {
        let _ = writeln!(o, "{pad}runaway while loops: {}", s.runaway_loops);
    }
    if let Some(st) = &s.stuck {
        render_stuck(o, s, st, pad);
    }
}

/// The stuck launch of a part: where its threads were blocked.
pub(super) fn render_stuck(o: &mut String, s: &FuzzSummary, st: &StuckReport, pad: &str) {
    use std::fmt::Write;
    let _ = writeln!(
        o,
        "{pad}hang in a hardware collective: the round of seed {} ({} blocks) did not finish \
         within {:.1} s; the process ended to free the GPU",
        st.seed, st.blocks, st.seconds
    );
    let rows: Vec<&HangRow> = s.hangs.iter().filter(|h| h.stuck).collect();
    if !rows.is_empty() {
        let _ = writeln!(
            o,
            "{pad}  {:<5} {:<40} {:>8} {:>7}  first seen",
            "line", "statement (threads blocked in it)", "threads", "trials"
        );
        for h in rows {
            let _ = writeln!(
                o,
                "{pad}  {:<5} {:<40} {:>8} {:>7}  seed {} block {}",
                h.line,
                h.statement,
                h.count,
                h.trials.unwrap_or(0),
                h.first.seed,
                h.first.block
            );
            if let Some(k) = &h.kernel {
                let _ = writeln!(o, "{pad}        kernel: {k}");
            }
            let _ = writeln!(o, "{pad}        observed: {}", h.observed);
        }
    } else if st.positions_read {
        let _ = writeln!(
            o,
            "{pad}  no thread was inside a hardware collective ({} still running elsewhere)",
            st.running_elsewhere
        );
    }
    match (&st.read_error, st.trials_done) {
        (Some(e), _) => {
            let _ = writeln!(o, "{pad}  where the threads were is not known: {e}");
        }
        (None, Some(done)) => {
            let _ = writeln!(
                o,
                "{pad}  that round: {done} of {} trials finished, {} stuck, {} never started{}",
                done + st.trials_stuck.unwrap_or(0) + st.trials_not_started.unwrap_or(0),
                st.trials_stuck.unwrap_or(0),
                st.trials_not_started.unwrap_or(0),
                if st.running_elsewhere > 0 {
                    format!(
                        "; {} running thread(s) had entered no hardware collective",
                        st.running_elsewhere
                    )
                } else {
                    String::new()
                }
            );
        }
        (None, None) => {}
    }
}
