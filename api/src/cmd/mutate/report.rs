//! The result of `mutate`: a table per file for people, or one JSON object (schema 1,
//! docs/ci.md "phasecheck mutate" documents it; tests/cli_mutate.rs pins its shape).

use super::{BadFile, Checked, FileRun, GpuState, MutantResult, Verdict4};
use crate::args::{Exit, MutateArgs};
use serde_json::{Value, json};
use std::fmt::Write;

/// Counts over some mutants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Counts {
    pub(super) mutants: usize,
    pub(super) hazard: usize,
    pub(super) ok: usize,
    pub(super) inconclusive: usize,
    pub(super) error: usize,
    pub(super) not_loading: usize,
    pub(super) duplicates: usize,
}

impl Counts {
    fn of<'a>(runs: impl IntoIterator<Item = &'a FileRun>) -> Counts {
        let mut c = Counts::default();
        for r in runs {
            c.not_loading += r.skipped.len();
            c.duplicates += r.duplicates;
            for m in &r.mutants {
                c.mutants += 1;
                match m.checked.verdict {
                    Verdict4::Hazard => c.hazard += 1,
                    Verdict4::Ok => c.ok += 1,
                    Verdict4::Inconclusive => c.inconclusive += 1,
                    Verdict4::Error => c.error += 1,
                }
            }
        }
        c
    }

    /// The share of mutants the checker flags as a hazard (`None` without mutants).
    fn score(&self) -> Option<f64> {
        (self.mutants > 0).then(|| self.hazard as f64 / self.mutants as f64)
    }

    fn line(&self) -> String {
        let mut s = format!(
            "{}: {} hazard, {} ok, {} inconclusive",
            crate::report::count(self.mutants, "mutant"),
            self.hazard,
            self.ok,
            self.inconclusive
        );
        if self.error > 0 {
            let _ = write!(s, ", {} checker panic(s)", self.error);
        }
        match self.score() {
            Some(score) => {
                let _ = write!(
                    s,
                    "; mutation score {:.1}% ({} of {} flagged)",
                    score * 100.0,
                    self.hazard,
                    self.mutants
                );
            }
            None => s.push_str("; no mutation score"),
        }
        s
    }
}

/// The agreement of checker and GPU: rows checker hazard / ok / inconclusive or error, columns
/// GPU hazard / nothing seen / not run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Matrix {
    pub(super) cells: [[usize; 3]; 3],
}

impl Matrix {
    fn of<'a>(runs: impl IntoIterator<Item = &'a FileRun>) -> Matrix {
        let mut m = Matrix::default();
        for r in runs {
            for x in &r.mutants {
                let Some(g) = &x.gpu else { continue };
                let row = match x.checked.verdict {
                    Verdict4::Hazard => 0,
                    Verdict4::Ok => 1,
                    _ => 2,
                };
                let col = match g.hazard {
                    Some(true) => 0,
                    Some(false) => 1,
                    None => 2,
                };
                m.cells[row][col] += 1;
            }
        }
        m
    }

    fn human(&self, pad: &str) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{pad}{:<22} {:>10} {:>13} {:>8}",
            "checker vs GPU", "GPU hazard", "nothing seen", "not run"
        );
        for (i, name) in ["checker hazard", "checker ok", "checker inconclusive"]
            .iter()
            .enumerate()
        {
            if i == 2 && self.cells[2].iter().all(|&n| n == 0) {
                continue;
            }
            let c = self.cells[i];
            let _ = writeln!(o, "{pad}  {name:<20} {:>10} {:>13} {:>8}", c[0], c[1], c[2]);
        }
        o
    }

    fn json(&self) -> Value {
        let row = |c: [usize; 3]| json!({"gpu_hazard": c[0], "gpu_nothing_seen": c[1], "gpu_not_run": c[2]});
        json!({
            "checker_hazard": row(self.cells[0]),
            "checker_ok": row(self.cells[1]),
            "checker_other": row(self.cells[2]),
        })
    }
}

/// A mutant the GPU shows a hazard in while the checker calls it ok: a checker bug.
fn disagrees(m: &MutantResult) -> bool {
    m.checked.verdict == Verdict4::Ok && m.gpu.as_ref().is_some_and(|g| g.hazard == Some(true))
}

/// `FILE#ID` of every disagreement.
pub(super) fn disagreements(runs: &[FileRun]) -> Vec<String> {
    runs.iter()
        .flat_map(|r| {
            r.mutants
                .iter()
                .filter(|m| disagrees(m))
                .map(move |m| format!("{}#{}", r.name, m.id))
        })
        .collect()
}

fn params_text(run: &FileRun) -> String {
    let list: Vec<String> = run
        .params
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    if list.is_empty() {
        return "none".into();
    }
    let mut s = format!("{} (from {}", list.join(", "), run.params_from.describe());
    if !run.from_cli.is_empty() {
        let _ = write!(s, "; {} from --param", run.from_cli.join(", "));
    }
    s.push(')');
    s
}

fn checked_text(c: &Checked) -> String {
    match c.verdict {
        Verdict4::Hazard => format!("hazard ({})", c.rules.join(", ")),
        Verdict4::Ok => format!("ok ({} states)", c.states),
        Verdict4::Inconclusive => format!(
            "inconclusive ({})",
            c.note.as_deref().unwrap_or("stopped at a limit")
        ),
        Verdict4::Error => format!("error ({})", c.note.as_deref().unwrap_or("")),
    }
}

fn shown(line: &str) -> &str {
    if line.is_empty() { "(empty)" } else { line }
}

/// One file's table, score and (with `--gpu`) agreement.
pub(super) fn human_file(run: &FileRun, gpu: &GpuState) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "mutate {} (protocol {})", run.name, run.protocol);
    let _ = writeln!(o, "  parameters: {}", params_text(run));
    let _ = writeln!(o, "  original: {}", checked_text(&run.original));
    if run.original.verdict != Verdict4::Ok {
        let _ = writeln!(
            o,
            "  warning: the original is not ok at these parameters, so its mutants inherit \
             what it has and the score says little; pick parameters where it is ok (-p, or an \
             `expect ok ... with` line)"
        );
    }
    let on = matches!(gpu, GpuState::On { .. });
    if !run.mutants.is_empty() {
        let _ = writeln!(
            o,
            "  {:>3}  {:<21} {:>5}  {:<13}{}rules",
            "id",
            "operator",
            "line",
            "checker",
            if on {
                format!("{:<13}", "gpu")
            } else {
                String::new()
            }
        );
    }
    for m in &run.mutants {
        let gpu_col = match (&m.gpu, on) {
            (_, false) => String::new(),
            (Some(g), true) => format!(
                "{:<13}",
                match g.hazard {
                    Some(true) => "hazard",
                    Some(false) => "nothing seen",
                    None => "not run",
                }
            ),
            (None, true) => format!("{:<13}", "not run"),
        };
        let _ = writeln!(
            o,
            "  {:>3}  {:<21} {:>5}  {:<13}{gpu_col}{}",
            m.id,
            m.operator.name(),
            m.change.line,
            m.checked.verdict.as_str(),
            if m.checked.rules.is_empty() {
                "-".to_string()
            } else {
                m.checked.rules.join(", ")
            }
        );
        for l in &m.change.before {
            let _ = writeln!(o, "         - {}", shown(l));
        }
        for l in &m.change.after {
            let _ = writeln!(o, "         + {}", shown(l));
        }
        match m.checked.verdict {
            Verdict4::Inconclusive => {
                let _ = writeln!(
                    o,
                    "         stopped: {}",
                    m.checked.note.as_deref().unwrap_or("at a limit")
                );
            }
            Verdict4::Error => {
                let _ = writeln!(
                    o,
                    "         CHECKER BUG: {}",
                    m.checked.note.as_deref().unwrap_or("the checker failed")
                );
            }
            _ => {}
        }
        if let Some(g) = &m.gpu {
            let _ = writeln!(o, "         gpu: {}", super::gpu::describe(g));
        }
        if disagrees(m) {
            let _ = writeln!(
                o,
                "         CHECKER BUG: the GPU shows a hazard in this mutant and the checker calls it ok"
            );
        }
    }
    let c = Counts::of([run]);
    let _ = writeln!(o, "  {}", c.line());
    if c.not_loading + c.duplicates > 0 {
        let _ = writeln!(
            o,
            "  not checked: {} that do not load, {} that repeat an earlier mutant",
            c.not_loading, c.duplicates
        );
        for s in &run.skipped {
            let _ = writeln!(
                o,
                "    {} line {}: {}",
                s.operator.name(),
                s.change.line,
                s.reason
            );
        }
    }
    if on {
        o.push_str(&Matrix::of([run]).human("  "));
    }
    o
}

/// Totals over every file (when there are several, or with `--gpu`), and the GPU's state.
pub(super) fn human_totals(runs: &[FileRun], bad: &[BadFile], gpu: &GpuState) -> String {
    let mut o = String::new();
    if runs.len() > 1 || !bad.is_empty() {
        let c = Counts::of(runs);
        let _ = writeln!(
            o,
            "total: {}, {}",
            crate::report::count(runs.len(), "file"),
            c.line()
        );
        if c.not_loading + c.duplicates > 0 {
            let _ = writeln!(
                o,
                "  not checked: {} that do not load, {} that repeat an earlier mutant",
                c.not_loading, c.duplicates
            );
        }
        if !bad.is_empty() {
            let _ = writeln!(
                o,
                "  {} could not be mutated: {}",
                crate::report::count(bad.len(), "file"),
                bad.iter()
                    .map(|b| b.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    match gpu {
        GpuState::Off => {}
        GpuState::Skipped { reason, error } => {
            // The whole message (every folder looked in) is on stderr.
            let first = error.lines().next().unwrap_or("");
            let _ = writeln!(o, "gpu: skipped ({reason}): {first}");
        }
        GpuState::On { device } => {
            if runs.len() > 1 {
                let _ = writeln!(o, "gpu: {device}, all files");
                o.push_str(&Matrix::of(runs).human("  "));
            } else {
                let _ = writeln!(o, "gpu: {device}");
            }
            let d = disagreements(runs);
            if d.is_empty() {
                let _ = writeln!(
                    o,
                    "  no mutant shows a hazard on the GPU that the checker calls ok"
                );
            } else {
                let _ = writeln!(
                    o,
                    "  CHECKER BUG: the GPU shows a hazard the checker calls ok in {}",
                    d.join(", ")
                );
            }
        }
    }
    o
}

fn checked_json(c: &Checked) -> Value {
    json!({
        "verdict": c.verdict.as_str(),
        "rules": c.rules,
        "note": c.note,
        "states": c.states,
        "elapsed_ms": c.elapsed_ms,
    })
}

fn counts_json(c: &Counts) -> Value {
    json!({
        "mutants": c.mutants,
        "hazard": c.hazard,
        "ok": c.ok,
        "inconclusive": c.inconclusive,
        "error": c.error,
        "not_loading": c.not_loading,
        "duplicates": c.duplicates,
        "score": c.score(),
    })
}

/// The `--format json` object.
pub(super) fn json(
    args: &MutateArgs,
    runs: &[FileRun],
    bad: &[BadFile],
    gpu: &GpuState,
    exit: Exit,
) -> Value {
    let on = matches!(gpu, GpuState::On { .. });
    let mut files: Vec<Value> = runs
        .iter()
        .map(|r| {
            let params: serde_json::Map<String, Value> = r
                .params
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            json!({
                "file": r.name,
                "protocol": r.protocol,
                "params": params,
                "params_from": r.params_from.key(),
                "original": checked_json(&r.original),
                "mutants": r.mutants.iter().map(|m| {
                    let mut v = json!({
                        "id": m.id,
                        "operator": m.operator.name(),
                        "line": m.change.line,
                        "before": m.change.before,
                        "after": m.change.after,
                        "checker": checked_json(&m.checked),
                        "gpu": m.gpu.as_ref().map(|g| serde_json::to_value(g).expect("serializes")),
                    });
                    v["disagreement"] = json!(disagrees(m));
                    v
                }).collect::<Vec<_>>(),
                "not_loading": r.skipped.iter().map(|s| json!({
                    "operator": s.operator.name(),
                    "line": s.change.line,
                    "before": s.change.before,
                    "after": s.change.after,
                    "error": s.reason,
                })).collect::<Vec<_>>(),
                "summary": counts_json(&Counts::of([r])),
                "matrix": on.then(|| Matrix::of([r]).json()),
            })
        })
        .collect();
    files.extend(
        bad.iter()
            .map(|b| json!({"file": b.name, "error": b.error})),
    );
    let gpu_json = match gpu {
        GpuState::Off => Value::Null,
        GpuState::Skipped { reason, error } => {
            json!({"skipped": true, "reason": reason, "error": error})
        }
        GpuState::On { device } => json!({
            "device": device,
            "gpu_seconds": args.gpu_seconds,
            "confirm_seconds": args.confirm_seconds,
            "aim_seconds": args.aim_seconds,
            "gpu_hazards": args.gpu_hazards,
            "matrix": Matrix::of(runs).json(),
            "disagreements": disagreements(runs),
        }),
    };
    json!({
        "schema": 1,
        "tool": "phasecheck",
        "command": "mutate",
        "version": env!("CARGO_PKG_VERSION"),
        "options": {
            "max_time_ms": args.max_time.0.map(|d| d.as_millis() as u64),
            "max_states": args.max_states,
            "max_loop_trips": args.max_loop_trips,
        },
        "files": files,
        "summary": {
            "files": runs.len(),
            "bad_input": bad.len(),
            "counts": counts_json(&Counts::of(runs)),
        },
        "gpu": gpu_json,
        "exit_code": exit as u8,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::cmd::mutate::gpu::GpuOutcome;
    use crate::cmd::mutate::operators::{Change, Operator};
    use crate::cmd::mutate::{ParamsFrom, Verdict4};

    fn mutant(id: usize, verdict: Verdict4, gpu: Option<bool>) -> MutantResult {
        MutantResult {
            id,
            operator: Operator::RemoveWait,
            change: Change {
                line: 3,
                before: vec!["wait b parity 0".into()],
                after: vec![String::new()],
            },
            checked: Checked {
                verdict,
                rules: if verdict == Verdict4::Hazard {
                    vec!["data-race"]
                } else {
                    Vec::new()
                },
                note: None,
                states: 9,
                elapsed_ms: 1,
            },
            gpu: Some(GpuOutcome {
                hazard: gpu,
                ..Default::default()
            }),
        }
    }

    /// `--gpu-hazards N` keeps every unflagged mutant and N flagged ones, spread out.
    #[test]
    fn gpu_sample_keeps_every_unflagged_mutant() {
        use crate::cmd::mutate::gpu_sample;
        let verdicts = [
            Verdict4::Hazard,
            Verdict4::Ok,
            Verdict4::Hazard,
            Verdict4::Hazard,
            Verdict4::Inconclusive,
            Verdict4::Hazard,
            Verdict4::Hazard,
        ];
        let ms: Vec<MutantResult> = verdicts
            .iter()
            .enumerate()
            .map(|(i, v)| mutant(i + 1, *v, None))
            .collect();
        assert_eq!(gpu_sample(&ms, None), vec![true; 7]);
        assert_eq!(
            gpu_sample(&ms, Some(0)),
            vec![false, true, false, false, true, false, false]
        );
        // Flagged at 0, 2, 3, 5, 6: two of them, positions 0 and 5 / 2 = 2 -> indices 0 and 3.
        assert_eq!(
            gpu_sample(&ms, Some(2)),
            vec![true, true, false, true, true, false, false]
        );
        assert_eq!(gpu_sample(&ms, Some(99)), vec![true; 7]);
    }

    /// The matrix counts each mutant once; a GPU hazard in a mutant the checker calls ok is
    /// the one disagreement, printed loudly and listed in the JSON.
    #[test]
    fn agreement_matrix_and_disagreements() {
        let run = FileRun {
            name: "f.phase".into(),
            protocol: "f".into(),
            params: vec![("K".into(), 1)],
            params_from: ParamsFrom::Declared,
            from_cli: Vec::new(),
            original: mutant(0, Verdict4::Ok, None).checked,
            mutants: vec![
                mutant(1, Verdict4::Hazard, Some(true)),
                mutant(2, Verdict4::Hazard, Some(false)),
                mutant(3, Verdict4::Ok, Some(false)),
                mutant(4, Verdict4::Ok, Some(true)),
                mutant(5, Verdict4::Inconclusive, None),
            ],
            skipped: Vec::new(),
            duplicates: 0,
        };
        let m = Matrix::of([&run]);
        assert_eq!(m.cells, [[1, 1, 0], [1, 1, 0], [0, 0, 1]]);
        assert_eq!(disagreements(std::slice::from_ref(&run)), vec!["f.phase#4"]);
        let gpu = GpuState::On {
            device: "GPU (device 0)".into(),
        };
        let text = human_file(&run, &gpu);
        assert!(text.contains("checker inconclusive"), "{text}");
        assert_eq!(
            text.matches("CHECKER BUG: the GPU shows a hazard").count(),
            1,
            "{text}"
        );
        let totals = human_totals(std::slice::from_ref(&run), &[], &gpu);
        assert!(
            totals.contains("CHECKER BUG") && totals.contains("f.phase#4"),
            "{totals}"
        );
        let json = m.json();
        assert_eq!(json["checker_ok"]["gpu_hazard"], 1);
        assert_eq!(json["checker_other"]["gpu_not_run"], 1);
    }

    #[test]
    fn the_score_is_the_share_flagged() {
        let c = Counts {
            mutants: 8,
            hazard: 6,
            ok: 1,
            inconclusive: 1,
            ..Counts::default()
        };
        assert_eq!(c.score(), Some(0.75));
        assert!(c.line().contains("mutation score 75.0% (6 of 8 flagged)"));
        assert_eq!(Counts::default().score(), None);
    }
}
