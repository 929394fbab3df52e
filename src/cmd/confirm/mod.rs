//! `phasecheck confirm FILE`: check the file, then replay each error-level finding's
//! counterexample on the GPU with the device-side sequencer (the threads of the trace take
//! their steps in the trace's order; everybody else waits until the trace is done, then all
//! run free with bounded waits) and look for the hazard: the wait that hangs, the access that
//! overlaps a conflicting one, the wait that passes on an old phase, the UB as far as the
//! hardware shows it. Files without error-level findings are fuzzed instead.

mod judge;
mod plan;
mod report;

use crate::cli::{ConfirmArgs, Exit, GpuArgs};
use crate::cmd::fuzz::{self, Accumulator};
use crate::cmd::lower::{load, report_lower_error};
use checker::{Class, Finding, Severity};
use gpu_harness::decode::LaunchResult;
use gpu_harness::lower::{self, LowerOptions, Lowered, Mode};
use gpu_harness::run::{Gpu, LaunchParams, LoadedKernel, RunError, end_process};
use judge::judge;
use plan::{ReplayPlan, plan};
use protocols::SourceFile;
use protocols::ir::Program;
use report::{ConfirmReport, print_report};
use report::{FindingResult, Outcome};
use std::time::{Duration, Instant};

struct Replayer<'a> {
    gpu: &'a Gpu,
    kernel: &'a LoadedKernel,
    lowered: &'a Lowered,
    gpu_args: &'a GpuArgs,
}

impl Replayer<'_> {
    /// One launch of the trace `table` in one trial per multiprocessor; `free`: no trace (the
    /// kernel runs unsequenced), as many trials as a fuzz round and no delays.
    fn launch(
        &self,
        table: &[u32],
        seed: u64,
        free: bool,
    ) -> Result<(LaunchResult, u32), RunError> {
        let cluster = self.lowered.cluster.max(1);
        let trials = if free {
            fuzz::default_blocks(self.gpu, cluster) / cluster
        } else {
            self.gpu.multiprocessors.max(1)
        }
        .min(lower::MAX_TRIALS / cluster);
        let blocks = trials * cluster;
        let params = LaunchParams {
            blocks,
            seed,
            delay_max_ns: if free { 0 } else { self.gpu_args.delay_ns },
            delay_every: self.gpu_args.delay_every.max(1),
            budget_cycles: self.gpu_args.wait_cycles,
            timeout: Duration::from_secs(10),
        };
        let (r, _) = self.gpu.launch(self.kernel, self.lowered, &params, table)?;
        Ok((r, trials))
    }
}

/// A UB that the race finding `f`'s interleaving runs into before the race: the checker's
/// replay of `f`'s schedule, which reports every finding it hits on the way. When the hardware
/// faults or hangs at that UB, the race cannot be shown behind it.
struct UbFirst {
    rule: &'static str,
    line: u32,
}

impl std::fmt::Display for UbFirst {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(out, "`{}` (line {})", self.rule, self.line)
    }
}

fn ub_on_trace(program: &Program, f: &Finding, file: &SourceFile) -> Option<UbFirst> {
    if f.class() != Class::Race {
        return None;
    }
    let replay = checker::replay(program, &checker::CheckOptions::default(), &f.schedule).ok()?;
    replay
        .findings
        .iter()
        .find(|u| u.class() == Class::Ub && u.severity == Severity::Error)
        .map(|u| UbFirst {
            rule: u.rule.name,
            line: file.line_of(u.span),
        })
}

/// Add how the replay differed from a plain one to a result's detail.
fn with_note(mut r: FindingResult, note: Option<String>) -> FindingResult {
    if let Some(n) = note {
        r.detail = format!("{} ({n})", r.detail);
    }
    r
}

fn replay_finding(
    rp: &Replayer<'_>,
    program: &Program,
    file: &SourceFile,
    f: &Finding,
    ub_first: Option<String>,
    seconds: f64,
) -> Result<FindingResult, RunError> {
    let lowered = rp.lowered;
    let line = file.line_col(f.span.start).line;
    let mut res = FindingResult {
        rule: f.rule.name.to_string(),
        code: f.rule.code.to_string(),
        class: f.class().as_str().to_string(),
        line,
        statement: fuzz::stmt_text(file, f.span),
        outcome: Outcome::NotObserved,
        detail: String::new(),
        trials: 0,
        trials_showing: 0,
        seconds: 0.0,
        trace_steps: f.trace.iter().map(|t| t.repeat.max(1) as usize).sum(),
        stuck: false,
    };
    let ReplayPlan {
        steps,
        table,
        extra_wanted,
        unsequenced,
    } = match plan(program, lowered, f) {
        Ok(p) => p,
        Err(e) => {
            res.outcome = Outcome::NotObservable;
            res.detail = format!("the trace cannot be replayed: {e}");
            return Ok(res);
        }
    };
    let t0 = Instant::now();
    let mut seed = 1u64;
    let mut diverged = 0u64;
    loop {
        let (r, trials) = match rp.launch(&table.words, seed, unsequenced) {
            Ok(x) => x,
            Err(RunError::Driver { what, error }) if f.class() == Class::Ub => {
                // A trap poisons the context; it is what the hardware shows for this UB.
                res.outcome = Outcome::Confirmed;
                res.detail = format!("the kernel faulted ({what}: {error})");
                res.seconds = t0.elapsed().as_secs_f64();
                res.stuck = true;
                return Ok(res);
            }
            Err(RunError::Driver { what, error }) if ub_first.is_some() => {
                res.outcome = Outcome::NotObservable;
                res.detail = format!(
                    "the trace passes through {} first, and the kernel faults there ({what}: \
                     {error}) before the racing access",
                    ub_first.as_deref().unwrap_or_default()
                );
                res.seconds = t0.elapsed().as_secs_f64();
                res.stuck = true;
                return Ok(res);
            }
            Err(RunError::Stuck(s)) => {
                let seconds = s.seconds;
                res.outcome = match (&ub_first, f.class()) {
                    (Some(_), _) => Outcome::NotObservable,
                    (None, Class::Race) => Outcome::NotObserved,
                    (None, _) => Outcome::Confirmed,
                };
                res.detail = format!(
                    "the kernel hung in a hardware barrier that cannot be bounded (syncthreads, \
                     bar.sync, barrier.cluster) for {seconds:.0} s; the process ends to free the GPU"
                );
                if let Some(ub) = &ub_first {
                    res.detail = format!(
                        "the trace passes through {ub} first, and the hardware hangs there: {}",
                        res.detail
                    );
                }
                res.seconds = t0.elapsed().as_secs_f64();
                res.stuck = true;
                return Ok(res);
            }
            Err(e) => return Err(e),
        };
        seed += 1;
        res.trials += u64::from(trials);
        diverged += r.seq_diverged;
        if let Some((detail, n)) = judge(lowered, file, f, &steps, extra_wanted, &r) {
            res.outcome = Outcome::Confirmed;
            res.detail = detail;
            res.trials_showing += n;
            res.seconds = t0.elapsed().as_secs_f64();
            return Ok(res);
        }
        if t0.elapsed().as_secs_f64() >= seconds {
            break;
        }
    }
    res.seconds = t0.elapsed().as_secs_f64();
    if f.class() == Class::Ub {
        res.outcome = Outcome::NotObservable;
        res.detail = "the statement completed and nothing after it failed: the hardware \
                      tolerated this UB in the replayed interleaving"
            .into();
    } else {
        res.detail = if unsequenced {
            "replayed unsequenced in the kernel that leaves the writers' stores in flight, no \
             bulk copy stored an older stamp than its source held once it had completed (on \
             an H100 a copy overtakes unfenced generic stores only while they still wait in \
             their warp's queue: docs/gpu.md \"Proxy fences\")"
                .into()
        } else if diverged > 0 {
            format!("the replay left the trace in {diverged} thread(s)")
        } else {
            "the replayed interleaving did not show it".into()
        };
    }
    Ok(res)
}

pub fn run(args: &ConfirmArgs) -> Exit {
    let name = args.file.display().to_string();
    let not_run = fuzz::NotRun {
        format: args.format,
        file: &name,
    };
    let (file, program) = match load(&args.file, &args.params) {
        Ok(x) => x,
        Err((code, msg)) => return not_run.print("bad-input", &msg, code),
    };
    let t_check = Instant::now();
    let mut report = checker::check(&program, &checker::CheckOptions::default());
    checker::lints::suppress::apply_to_report(&program, &file, &mut report);
    let check_seconds = t_check.elapsed().as_secs_f64();
    let errors: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    let mode = if errors.is_empty() {
        Mode::Fuzz
    } else {
        Mode::Confirm
    };
    if !errors.is_empty() && args.finding.is_none() {
        return run_children(args, &file, &errors, check_seconds, &not_run);
    }
    // A race behind a divergent `syncthreads`: the compiled `__syncthreads` hangs there (which
    // confirms the UB finding), so the race is replayed with the non-aligned barrier, whose
    // arrivals count wherever each thread is, as the checker models past that UB.
    let past_divergence = args
        .finding
        .and_then(|i| errors.get(i))
        .and_then(|f| ub_on_trace(&program, f, &file))
        .is_some_and(|u| u.rule == "barrier-divergence");
    let options = LowerOptions {
        mode,
        non_aligned_syncthreads: past_divergence,
        proxy_window: false,
    };
    let lowered = lower::lower(&program, Some(&file), &options).and_then(|plain| {
        // A proxy-fence race runs unsequenced (plan::unsequenced), in a kernel that leaves
        // the writers' stores in flight for the copy (LowerOptions::proxy_window).
        match args.finding.and_then(|i| errors.get(i)) {
            Some(f) if plan::unsequenced(&plain, f) => {
                let window = LowerOptions {
                    mode: Mode::Fuzz,
                    non_aligned_syncthreads: past_divergence,
                    proxy_window: true,
                };
                lower::lower(&program, Some(&file), &window)
            }
            _ => Ok(plain),
        }
    });
    let lowered = match lowered {
        Ok(l) => l,
        Err(e) if !errors.is_empty() => {
            // Nothing to run: every finding is "not observable" for the same reason.
            report_lower_error(&file, &e);
            let out = ConfirmReport {
                file: file.name.clone(),
                device: "none (not lowered)".into(),
                check_seconds,
                findings: errors
                    .iter()
                    .map(|f| FindingResult {
                        rule: f.rule.name.to_string(),
                        code: f.rule.code.to_string(),
                        class: f.class().as_str().to_string(),
                        line: file.line_col(f.span.start).line,
                        statement: fuzz::stmt_text(&file, f.span),
                        outcome: Outcome::NotObservable,
                        detail: format!("the protocol cannot be lowered: {}", e.message),
                        trials: 0,
                        trials_showing: 0,
                        seconds: 0.0,
                        trace_steps: f.trace.iter().map(|t| t.repeat.max(1) as usize).sum(),
                        stuck: false,
                    })
                    .collect(),
                fuzz: None,
            };
            print_report(args.format, &out);
            return Exit::Clean;
        }
        Err(e) => {
            report_lower_error(&file, &e);
            return not_run.print("not-lowered", &e.message, Exit::BadInput);
        }
    };
    let gpu = match fuzz::open_gpu(&args.gpu, &not_run) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let kernel = match gpu.load(&lowered.source, &lowered.kernel_name) {
        Ok(k) => k,
        Err(e) => return fuzz::fail_as(e, Some(&not_run)),
    };
    let mut out = ConfirmReport {
        file: file.name.clone(),
        device: format!("{} (device {})", gpu.device_name, gpu.ordinal),
        check_seconds,
        findings: Vec::new(),
        fuzz: None,
    };
    if errors.is_empty() {
        let mut acc = Accumulator::new(&file, &program, &lowered);
        let blocks = fuzz::default_blocks(&gpu, lowered.cluster.max(1));
        let seed = fuzz::seed_from_clock();
        acc.summary.device = out.device.clone();
        acc.summary.blocks_per_round = blocks;
        acc.summary.first_seed = seed;
        let t0 = Instant::now();
        match fuzz::fuzz_rounds(
            &gpu,
            &kernel,
            &mut acc,
            &lowered,
            &args.gpu,
            blocks,
            seed,
            args.fuzz_seconds,
            None,
        ) {
            Ok(None) => {}
            Ok(Some(stuck)) => return fuzz::fail_as(RunError::Stuck(stuck), Some(&not_run)),
            Err(e) => return fuzz::fail_as(e, Some(&not_run)),
        }
        out.fuzz = Some(acc.finish(t0.elapsed().as_secs_f64()));
    } else {
        let rp = Replayer {
            gpu: &gpu,
            kernel: &kernel,
            lowered: &lowered,
            gpu_args: &args.gpu,
        };
        let only: Vec<&&Finding> = match args.finding {
            Some(i) => errors.get(i).into_iter().collect(),
            None => errors.iter().collect(),
        };
        for f in only {
            let (ub_first, past_ub) = match ub_on_trace(&program, f, &file) {
                Some(u) if past_divergence => (
                    None,
                    Some(format!(
                        "replayed past the divergent syncthreads of {u} with the non-aligned \
                         `barrier.sync 0`; as `__syncthreads` the compiled kernel hangs there"
                    )),
                ),
                u => (u.map(|u| u.to_string()), None),
            };
            match replay_finding(&rp, &program, &file, f, ub_first, args.seconds)
                .map(|r| with_note(r, past_ub))
            {
                Ok(r) if r.stuck => {
                    out.findings.push(r);
                    print_report(args.format, &out);
                    eprintln!(
                        "note: the GPU context is lost; the remaining findings of {} were not replayed",
                        file.name
                    );
                    // The kernel may still run: ending the process tears its context down.
                    end_process(Exit::Findings as i32);
                }
                Ok(r) => out.findings.push(r),
                Err(e) => {
                    print_report(args.format, &out);
                    return fuzz::fail(e);
                }
            }
        }
    }
    print_report(args.format, &out);
    let seen = out.findings.iter().any(|f| f.outcome == Outcome::Confirmed)
        || out.fuzz.as_ref().is_some_and(|f| !f.clean());
    if seen { Exit::Findings } else { Exit::Clean }
}

/// Replay each finding in a child process (`--finding N`): a kernel stuck in a hardware
/// barrier can only be ended with its process, and must not take the other findings with it.
fn run_children(
    args: &ConfirmArgs,
    file: &SourceFile,
    errors: &[&Finding],
    check_seconds: f64,
    not_run: &fuzz::NotRun,
) -> Exit {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot find the phasecheck executable: {e}");
            return Exit::BadInput;
        }
    };
    let mut out = ConfirmReport {
        file: file.name.clone(),
        device: String::new(),
        check_seconds,
        findings: Vec::new(),
        fuzz: None,
    };
    for (i, f) in errors.iter().enumerate() {
        let mut cmd = std::process::Command::new(&exe);
        cmd.arg("confirm")
            .arg(&args.file)
            .args(["--format", "json", "--finding", &i.to_string()])
            .args(["--seconds", &args.seconds.to_string()])
            .args(["--device", &args.gpu.device.to_string()])
            .args(["--delay-ns", &args.gpu.delay_ns.to_string()])
            .args(["--delay-every", &args.gpu.delay_every.to_string()])
            .args(["--wait-cycles", &args.gpu.wait_cycles.to_string()]);
        for (k, v) in &args.params {
            cmd.args(["--param", &format!("{k}={v}")]);
        }
        let res = match cmd.output() {
            Ok(o) => o,
            Err(e) => {
                eprintln!("error: cannot run {}: {e}", exe.display());
                return Exit::BadInput;
            }
        };
        if res.status.code() == Some(2) {
            // The child could not use the GPU (or CUDA is missing): say why, once.
            eprint!("{}", String::from_utf8_lossy(&res.stderr));
            let child: Option<serde_json::Value> = serde_json::from_slice(&res.stdout).ok();
            let field = |k: &str| {
                child
                    .as_ref()
                    .and_then(|v| v[k].as_str())
                    .map(str::to_string)
            };
            return not_run.print(
                &field("reason").unwrap_or_else(|| "no-gpu".into()),
                &field("error").unwrap_or_else(|| "the replay could not run".into()),
                Exit::BadInput,
            );
        }
        let parsed: Option<serde_json::Value> = serde_json::from_slice(&res.stdout).ok();
        let device = parsed
            .as_ref()
            .and_then(|v| v["device"].as_str())
            .map(str::to_string);
        let result = parsed
            .as_ref()
            .and_then(|v| v["findings"].get(0).cloned())
            .and_then(|v| serde_json::from_value::<FindingResult>(v).ok());
        if let Some(d) = device {
            out.device = d;
        }
        out.findings.push(result.unwrap_or_else(|| FindingResult {
            rule: f.rule.name.to_string(),
            code: f.rule.code.to_string(),
            class: f.class().as_str().to_string(),
            line: file.line_col(f.span.start).line,
            statement: fuzz::stmt_text(file, f.span),
            outcome: Outcome::NotObserved,
            detail: format!(
                "the replay ended without a result: {}",
                String::from_utf8_lossy(&res.stderr).trim()
            ),
            trials: 0,
            trials_showing: 0,
            seconds: 0.0,
            trace_steps: f.trace.iter().map(|t| t.repeat.max(1) as usize).sum(),
            stuck: false,
        }));
    }
    print_report(args.format, &out);
    if out.findings.iter().any(|f| f.outcome == Outcome::Confirmed) {
        Exit::Findings
    } else {
        Exit::Clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::Actor;
    use gpu_harness::sequencer::{self, LANDING, NONE};

    /// The error-level findings of a corpus file, its program and its confirm-mode lowering.
    fn findings(path: &str) -> (Program, Lowered, Vec<Finding>) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        let text = std::fs::read_to_string(&path).expect("corpus file");
        findings_of(SourceFile::new(path.display().to_string(), text))
    }

    fn findings_of(file: SourceFile) -> (Program, Lowered, Vec<Finding>) {
        let program = protocols::load(&file, &[]).expect("loads");
        let report = checker::check(&program, &checker::CheckOptions::default());
        let lowered = lower::lower(
            &program,
            Some(&file),
            &LowerOptions {
                mode: Mode::Confirm,
                ..Default::default()
            },
        )
        .expect("lowers");
        let errors = report
            .findings
            .into_iter()
            .filter(|f| f.severity == Severity::Error)
            .collect();
        (program, lowered, errors)
    }

    /// The table's entries, as (cta, tid, stmt-or-issue, occurrence-or-slot).
    fn entries(t: &sequencer::SeqTable) -> Vec<[u32; 4]> {
        t.words[4..]
            .chunks(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect()
    }

    #[test]
    fn races_against_a_tma_in_flight_defer_its_landing_past_the_held_access() {
        for path in [
            "corpus/hazards/expect-after-completion/fail.phase",
            "corpus/hazards/expect-without-arrival/fail.phase",
        ] {
            let (program, lowered, errors) = findings(path);
            let races: Vec<&Finding> = errors.iter().filter(|f| f.class() == Class::Race).collect();
            assert_eq!(races.len(), 4, "{path}");
            for f in races {
                let p = plan(&program, &lowered, f).expect("plan");
                let e = entries(&p.table);
                let what = format!("{path}: {} {:?}\n{e:?}", f.rule.name, p.table.words);
                let landing = e.iter().position(|x| x[1] == LANDING).expect(&what);
                let held = p.table.words[1] as usize;
                // The held access is a read of the TMA's buffer, before the landing; the
                // landing is what it waits for; the landing names the `tma` step.
                assert_eq!(p.table.words[2] as usize, landing, "{what}");
                assert!(held < landing, "{what}");
                assert_eq!(lowered.stmts[e[held][2] as usize].keyword, "read", "{what}");
                let issue = e[landing][2] as usize;
                assert!(issue < held, "{what}");
                assert_eq!(lowered.stmts[e[issue][2] as usize].keyword, "tma", "{what}");
            }
        }
    }

    /// pipeline-role: the races against t0's `memcpy_async` still in flight (t1's copy has
    /// completed: its arrive-on event is in the trace) defer t0's copy, not t1's, past the
    /// held read, and the replay stops after the trace.
    #[test]
    fn races_against_a_memcpy_in_flight_defer_that_copy() {
        let (program, lowered, errors) = findings("corpus/hazards/pipeline-role/fail.phase");
        let races: Vec<&Finding> = errors.iter().filter(|f| f.class() == Class::Race).collect();
        assert_eq!(races.len(), 2);
        for f in races {
            let p = plan(&program, &lowered, f).expect("plan");
            let e = entries(&p.table);
            let what = format!("{} {:?}\n{e:?}", f.rule.name, p.table.words);
            assert_ne!(p.table.words[0] & sequencer::STOP, 0, "{what}");
            let held = p.table.words[1] as usize;
            assert_eq!(lowered.stmts[e[held][2] as usize].keyword, "read", "{what}");
            assert_eq!(e[held][1], 2, "t2 reads: {what}");
            // Either t0's copy was issued before the read and its landing is deferred past
            // it, or (the trace the reduced search finds) t0 issues it as the trace's last
            // step, after the read: then the landing follows at once (dropped from the table)
            // and the read is held open for the fixed window across it.
            let issue = match e.iter().position(|x| x[1] == LANDING) {
                Some(landing) => {
                    assert_eq!(p.table.words[2] as usize, landing, "{what}");
                    e[landing][2] as usize
                }
                None => {
                    assert_eq!(p.table.words[2], NONE, "{what}");
                    let last = p.table.words[3] as usize;
                    assert!(held < last, "{what}");
                    last
                }
            };
            assert_eq!(
                lowered.stmts[e[issue][2] as usize].keyword, "memcpy_async",
                "{what}"
            );
            assert_eq!(e[issue][1], 0, "t0's copy is the one in flight: {what}");
        }
    }

    /// barrier-divergence: the trace ends with t0's own read; the race is t1's read (enabled
    /// once the divergent barrier completes) against t0's next write, so both are replayed
    /// after the trace, t1's read held open across t0's write.
    #[test]
    fn a_race_the_trace_has_not_run_yet_is_replayed_after_it() {
        let (program, lowered, errors) = findings("corpus/hazards/barrier-divergence/fail.phase");
        let f = errors
            .iter()
            .find(|f| f.class() == Class::Race)
            .expect("a race");
        let p = plan(&program, &lowered, f).expect("plan");
        let e = entries(&p.table);
        let what = format!("{:?}\n{e:?}", p.table.words);
        let held = p.table.words[1] as usize;
        let partner = p.table.words[2] as usize;
        assert_eq!(
            (e[held][1], lowered.stmts[e[held][2] as usize].keyword),
            (1, "read"),
            "{what}"
        );
        assert_eq!(
            (e[partner][1], lowered.stmts[e[partner][2] as usize].keyword),
            (0, "write"),
            "{what}"
        );
        assert!(held < partner, "{what}");
    }

    #[test]
    fn a_landing_right_after_its_issue_is_left_to_the_hardware() {
        let (program, lowered, errors) =
            findings("corpus/hazards/expect-without-arrival/fail.phase");
        let ub = errors
            .iter()
            .find(|f| f.rule.name == "expect-without-arrival")
            .expect("the UB finding");
        // Its trace lands the copy at once (tma, lands, arrive, expect_tx).
        assert!(
            ub.trace
                .iter()
                .any(|t| matches!(t.actor, Actor::Async { .. }))
        );
        let p = plan(&program, &lowered, ub).expect("plan");
        assert!(entries(&p.table).iter().all(|x| x[1] != LANDING));
        assert_eq!(p.table.words[1], NONE);
        assert_eq!(p.steps.len(), 4);
    }

    /// A race whose interleaving runs into a UB first names it (the hardware may fault or hang
    /// there); one whose interleaving hits no UB does not, even when a UB statement of the same
    /// file lies on it (pipeline-role: t1's commit is UB only once a phase went unobserved).
    #[test]
    fn races_behind_a_ub_name_it() {
        for (path, ub) in [
            (
                "corpus/hazards/barrier-divergence/fail.phase",
                Some("barrier-divergence"),
            ),
            ("corpus/hazards/pipeline-role/fail.phase", None),
            ("corpus/hazards/data-race/fail.phase", None),
        ] {
            let (program, _, errors) = findings(path);
            let file = SourceFile::new(
                path,
                std::fs::read_to_string(
                    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path),
                )
                .unwrap(),
            );
            let races: Vec<&Finding> = errors.iter().filter(|f| f.class() == Class::Race).collect();
            assert!(!races.is_empty(), "{path}");
            for f in races {
                let first = ub_on_trace(&program, f, &file);
                assert_eq!(
                    first.as_ref().map(|u| u.rule),
                    ub,
                    "{path}: {}",
                    f.rule.name
                );
            }
        }
    }

    /// The proxy-fence race is judged on what its `tma_store` landed: the racing write's stamp
    /// still busy (the copy missed its last store) or no stamp confirms it; a stamp of another
    /// statement (a write of the source while the copy reads it: a race of its own) does not.
    #[test]
    fn a_proxy_fence_race_is_judged_on_the_landed_stamp() {
        let path = "corpus/hazards/missing-proxy-fence/fail.phase";
        let (program, lowered, errors) = findings(path);
        let file = SourceFile::new(
            path,
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
                .unwrap(),
        );
        let f = errors
            .iter()
            .find(|f| f.rule.name == "missing-proxy-fence")
            .expect("the race");
        assert!(plan::unsequenced(&lowered, f));
        let p = plan(&program, &lowered, f).expect("a plan");
        assert!(p.unsequenced && p.steps.is_empty());
        let id = |kw: &str| {
            lowered
                .stmts
                .iter()
                .find(|s| s.keyword == kw)
                .map(|s| s.id)
                .unwrap_or_else(|| panic!("a `{kw}`"))
        };
        let (write, store, sync) = (id("write"), id("tma_store"), id("syncthreads"));
        // pc_stamp's layout: statement + 1, occurrence, cta, thread; bit 63 = busy.
        let stamp =
            |stmt: u32, busy: bool| (u64::from(stmt + 1) << 48) | (u64::from(busy) << 63) | 1;
        let judged = |at: u32, landed: u64| {
            let r = LaunchResult {
                events: vec![gpu_harness::decode::Event {
                    kind: gpu_harness::decode::EventKind::Race,
                    stmt: at,
                    tid: 0,
                    cta: 0,
                    block: 5,
                    a: landed,
                    b: 3,
                    raw: 0,
                }],
                ..Default::default()
            };
            judge(&lowered, &file, f, &p.steps, None, &r)
        };
        let (detail, n) = judged(store, stamp(write, true)).expect("confirmed");
        assert_eq!(n, 1);
        assert!(detail.contains("still busy"), "{detail}");
        assert!(judged(store, 0).is_some(), "no stamp: every store missed");
        assert!(judged(store, stamp(sync, false)).is_none());
        assert!(
            judged(write, stamp(write, true)).is_none(),
            "not at the tma_store"
        );
    }

    #[test]
    fn a_trace_that_orders_a_thread_exit_sequences_it() {
        let (program, lowered, errors) = findings("corpus/hazards/remote-cta-exited/fail.phase");
        let f = errors
            .iter()
            .find(|f| f.rule.name == "remote-cta-exited")
            .expect("the UB finding");
        let p = plan(&program, &lowered, f).expect("a plan");
        let e = entries(&p.table);
        let finish = lowered
            .stmts
            .iter()
            .find(|s| s.keyword == "finish")
            .expect("a finish statement")
            .id;
        // Block 0's thread leaves at its turn, before block 1's remote arrive (the last step).
        let leaves = e
            .iter()
            .position(|x| x[0] == 0 && x[2] == finish)
            .unwrap_or_else(|| panic!("cta 0 finishes: {e:?}"));
        let arrive = e
            .iter()
            .rposition(|x| x[0] == 1 && x[1] != LANDING)
            .unwrap_or_else(|| panic!("cta 1 steps: {e:?}"));
        assert!(leaves < arrive, "{e:?}");
        assert_eq!(
            lowered.stmts[e[arrive][2] as usize].keyword, "arrive",
            "{e:?}"
        );
    }

    #[test]
    fn an_explicit_exit_on_the_trace_is_sequenced_too() {
        // remote-cta-exited with block 0 leaving through `exit` instead of its end.
        let text = "protocol exit_early\nblock 1\ncluster 2\nmbarrier full\nmbarrier empty\n\
                    buffer tile\nif tid == 0 {\n  init full, 1\n  init empty, 2\n  \
                    fence_mbarrier_init\n}\ncluster_sync\narrive_expect_tx full, 1024\n\
                    if cta == 0 {\n  tma tile -> full, 1024 multicast 0b11\n}\n\
                    wait full parity 0\nread tile\nif cta == 0 {\n  exit\n}\n\
                    arrive empty @ 0\n";
        let (program, lowered, errors) = findings_of(SourceFile::new("exit_early.phase", text));
        let f = errors
            .iter()
            .find(|f| f.rule.name == "remote-cta-exited")
            .expect("the UB finding");
        let exit = lowered
            .stmts
            .iter()
            .find(|s| s.keyword == "exit")
            .expect("an exit statement")
            .id;
        let p = plan(&program, &lowered, f).expect("a plan");
        let e = entries(&p.table);
        assert!(
            e.iter().any(|x| x[0] == 0 && x[2] == exit),
            "block 0 leaves through its exit at its turn: {e:?}"
        );
    }
}
