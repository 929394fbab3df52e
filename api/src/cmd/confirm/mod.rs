//! `phasecheck confirm FILE`: check the file, then replay each error-level finding's
//! counterexample on the GPU with the device-side sequencer (the threads of the trace take
//! their steps in the trace's order; everybody else waits until the trace is done, then all
//! run free with bounded waits) and look for the hazard: the wait that hangs, the access that
//! overlaps a conflicting one, the wait that passes on an old phase, the UB as far as the
//! hardware shows it. A replay that does not show its finding says why, by class
//! ([`obstacle`]), and is followed by a bounded fuzz aimed at the finding ([`aim`]). Files
//! without error-level findings are fuzzed instead.

pub use campaign::confirm::replay::*;
pub use campaign::confirm::{aim, judge, obstacle, plan};
pub(crate) mod report;

use crate::args::{ConfirmArgs, Exit, Format, GpuArgs};
use crate::cmd::fuzz::{self, Accumulator};
use crate::cmd::lower::report_lower_error;
use checker::{Finding, Severity};
use gpu_harness::lower::{self, LowerOptions, Mode};
use gpu_harness::run::end_process;
use protocols::SourceFile;
use report::{ConfirmReport, print_report};
use report::{FindingResult, Outcome};
use std::time::Instant;

/// Print the report and end the process: a stuck kernel (or a faulted context) is freed only
/// with the process.
fn report_and_end(format: Format, out: &ConfirmReport) -> ! {
    print_report(format, out);
    eprintln!(
        "note: the GPU context is lost; the remaining findings of {} were not replayed",
        out.file
    );
    end_process(Exit::Findings as i32)
}

pub fn run(args: &ConfirmArgs) -> Exit {
    let name = args.file.display().to_string();
    let not_run = fuzz::NotRun {
        format: args.format,
        file: &name,
    };
    let (file, program) = match crate::cmd::extract::load_any(&args.file, &args.params, &args.ptx) {
        Ok(x) => x,
        Err((code, msg)) => return not_run.print("bad-input", &msg, code),
    };
    let t_check = Instant::now();
    let options = checker::CheckOptions {
        goal: checker::lints::suppress::goal(&program, &file),
        ..checker::CheckOptions::default()
    };
    let mut report = checker::check(&program, &options);
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
    let lowered = match args.finding.and_then(|i| errors.get(i)) {
        Some(f) => lower_for_replay(&program, &file, f),
        None => lower::lower(
            &program,
            Some(&file),
            &LowerOptions {
                mode,
                ..Default::default()
            },
        )
        .map(|l| (l, false)),
    };
    let (lowered, past_divergence) = match lowered {
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
                    .map(|f| not_lowered(&program, &file, f, &e.message))
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
        let gpu_args = GpuArgs {
            launch_timeout: Some(args.gpu.launch_timeout.unwrap_or(30.0)),
            ..args.gpu.clone()
        };
        match fuzz::fuzz_rounds(
            &gpu,
            &kernel,
            &mut acc,
            &lowered,
            &gpu_args,
            blocks,
            seed,
            args.fuzz_seconds,
            None,
        ) {
            Ok(None) => {}
            Ok(Some(stuck)) => {
                let wall = t0.elapsed().as_secs_f64();
                let (format, mut shell) = (args.format, out.clone());
                fuzz::read_back_stuck(&gpu, &mut acc, &stuck, wall, move |s| {
                    shell.fuzz = Some(s);
                    print_report(format, &shell);
                });
                out.fuzz = Some(acc.finish(wall));
                report_and_end(args.format, &out);
            }
            Err(e) => return fuzz::fail_as(e, Some(&not_run)),
        }
        out.fuzz = Some(acc.finish(t0.elapsed().as_secs_f64()));
    } else {
        let gpu_options = fuzz::GpuOptions::from(&args.gpu);
        let rp = Replayer {
            gpu: &gpu,
            kernel: &kernel,
            lowered: &lowered,
            gpu_args: &gpu_options,
            on_lower_error: report_lower_error,
        };
        let only: Vec<&&Finding> = match args.finding {
            Some(i) => errors.get(i).into_iter().collect(),
            None => errors.iter().collect(),
        };
        for f in only {
            let (format, mut shell) = (args.format, out.clone());
            let fallback = move |r| {
                shell.findings.push(r);
                print_report(format, &shell);
            };
            let replayed = replay_one(
                &rp,
                past_divergence,
                &program,
                &file,
                f,
                args.seconds,
                args.aim_seconds,
                fallback,
            );
            match replayed {
                Ok(r) if r.stuck => {
                    out.findings.push(r);
                    report_and_end(args.format, &out);
                }
                Ok(r) => out.findings.push(r),
                Err(ReplayFailed { result, error }) => {
                    out.findings.extend(result.map(|r| *r));
                    print_report(args.format, &out);
                    return fuzz::fail(error);
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
            .args(["--wait-cycles", &args.gpu.wait_cycles.to_string()])
            .args(["--aim-seconds", &args.aim_seconds.to_string()]);
        if let Some(t) = args.gpu.launch_timeout {
            cmd.args(["--launch-timeout", &t.to_string()]);
        }
        for (k, v) in &args.params {
            cmd.args(["--param", &format!("{k}={v}")]);
        }
        cmd.args(args.ptx.to_args());
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
        out.findings.push(result.unwrap_or_else(|| {
            let mut r = FindingResult::new(f, file);
            r.detail = format!(
                "the replay ended without a result: {}",
                String::from_utf8_lossy(&res.stderr).trim()
            );
            r
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
    use campaign::confirm::judge::judge;
    use campaign::confirm::obstacle::ObstacleClass;
    use campaign::confirm::plan::plan;
    use checker::Actor;
    use checker::{Class, Finding, Severity};
    use gpu_harness::decode::LaunchResult;
    use gpu_harness::lower::{LowerOptions, Lowered, Mode};
    use gpu_harness::sequencer::{self, LANDING, NONE};
    use protocols::ir::Program;

    /// The error-level findings of a corpus file, its program and its confirm-mode lowering.
    pub(super) fn findings(path: &str) -> (Program, Lowered, Vec<Finding>) {
        let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(path);
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

    /// The campaign ends a process whose stuck launch's read-back hung with the command line's
    /// "findings" exit code.
    #[test]
    fn the_stuck_exit_is_the_findings_exit() {
        assert_eq!(STUCK_EXIT, Exit::Findings as i32);
    }

    /// A finding whose file cannot be lowered for its replay says why, by class: a file of
    /// several kernels (what `confirm` and `mutate --gpu` report for it without a GPU).
    #[test]
    fn a_file_of_several_kernels_is_not_lowered_for_its_replay() {
        let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join("corpus/domains/memsync_domains.phase");
        let text = std::fs::read_to_string(&path).expect("corpus file");
        let file = SourceFile::new("memsync_domains.phase", text);
        let program = protocols::load(&file, &[]).expect("loads");
        let report = checker::check(&program, &checker::CheckOptions::default());
        let f = report
            .findings
            .iter()
            .find(|f| f.severity == Severity::Error)
            .expect("an error-level finding");
        let Err(e) = lower_for_replay(&program, &file, f) else {
            panic!("confirm mode runs one kernel");
        };
        let r = not_lowered(&program, &file, f, &e.message);
        assert_eq!(r.outcome, Outcome::NotObservable);
        assert!(
            r.detail.starts_with("the protocol cannot be lowered: "),
            "{}",
            r.detail
        );
        assert_eq!(r.why_not_shown.len(), 1);
        assert_eq!(r.why_not_shown[0].class, ObstacleClass::SeveralKernels);
        assert_eq!(r.why_not_shown[0].detail, e.message);
        assert_eq!((r.trials, r.stuck), (0, false));
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
            // A race is reported once, at the later of its two statements (checker race.rs).
            assert_eq!(races.len(), 3, "{path}");
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
        assert_eq!(races.len(), 1);
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
        // Two races: t1's read and t0's next write both enabled after the divergent use, and
        // t0's write after t1 moved on to the next use, which t0 has not acquired. The first.
        let f = errors
            .iter()
            .find(|f| f.class() == Class::Race && f.message.contains("at the same time"))
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
                    std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(path),
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
            std::fs::read_to_string(
                std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(path),
            )
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

#[cfg(test)]
mod obstacle_tests {
    use super::*;
    use campaign::confirm::aim::AimedFuzz;
    use campaign::confirm::obstacle::{Obstacle, ObstacleClass};
    use campaign::confirm::plan::{ReplayPlan, plan};
    use checker::{Class, Finding, Severity};
    use gpu_harness::decode::LaunchResult;
    use gpu_harness::lower::{LowerOptions, Lowered, Mode};
    use protocols::ir::Program;

    /// Every corpus hazard's error findings with their obstacles, as
    /// `dir: rule -> [classes]`, for the files that lower in confirm mode.
    fn corpus_obstacles() -> Vec<(String, String, Vec<ObstacleClass>, Vec<Obstacle>)> {
        let root =
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("corpus/hazards");
        let mut dirs: Vec<_> = std::fs::read_dir(&root)
            .expect("corpus/hazards")
            .flatten()
            .map(|e| e.path())
            .collect();
        dirs.sort();
        let mut out = Vec::new();
        for dir in dirs {
            let path = dir.join("fail.phase");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let file = SourceFile::new(path.display().to_string(), text);
            let program = protocols::load(&file, &[]).expect("loads");
            let report = checker::check(&program, &checker::CheckOptions::default());
            let options = LowerOptions {
                mode: Mode::Confirm,
                ..Default::default()
            };
            let Ok(lowered) = lower::lower(&program, Some(&file), &options) else {
                continue;
            };
            let name = dir.file_name().unwrap().to_string_lossy().to_string();
            for f in report
                .findings
                .iter()
                .filter(|f| f.severity == Severity::Error)
            {
                let p = plan(&program, &lowered, f);
                let o = obstacle::obstacles(f, p.as_ref().map_err(|e| e.as_str()), &lowered, &file);
                out.push((
                    name.clone(),
                    f.rule.name.to_string(),
                    o.iter().map(|o| o.class).collect(),
                    o,
                ));
            }
        }
        out
    }

    fn classes_of(
        all: &[(String, String, Vec<ObstacleClass>, Vec<Obstacle>)],
        dir: &str,
        rule: &str,
    ) -> Vec<Vec<ObstacleClass>> {
        all.iter()
            .filter(|(d, r, _, _)| d == dir && r == rule)
            .map(|(_, _, c, _)| c.clone())
            .collect()
    }

    /// The classes of the corpus hazards: a finding at a hardware collective, the proxy-fence
    /// race (unsequenced), a multicast copy landed late; lanes of one warp a loop iteration
    /// apart are asked for, not forced (wait-phase-behind's deadlock, which the H100 shows);
    /// plain traces have none.
    #[test]
    fn corpus_hazards_classify_what_cannot_be_forced() {
        use ObstacleClass::*;
        let all = corpus_obstacles();
        assert!(all.len() > 40, "{}", all.len());
        // named-barrier-rearrive's hazard is a scaled-down model (one thread per warp, counts
        // in warps), which `lower` refuses: it has no replay plan.
        assert!(classes_of(&all, "named-barrier-rearrive", "named-barrier-rearrive").is_empty());
        assert_eq!(
            classes_of(&all, "barrier-divergence", "barrier-divergence"),
            [vec![HardwareCollective]]
        );
        // The race of the divergent loop (t1's read against t0's next write; reported once,
        // at the later statement, whichever side the schedule reaches first) is a plain trace.
        assert_eq!(
            classes_of(&all, "barrier-divergence", "data-race"),
            [vec![]]
        );
        assert_eq!(
            classes_of(&all, "missing-proxy-fence", "missing-proxy-fence"),
            [vec![StoreWindow]]
        );
        assert_eq!(
            classes_of(&all, "remote-cta-exited", "remote-cta-exited"),
            [vec![AsyncCopy]]
        );
        assert_eq!(
            classes_of(&all, "wait-phase-behind", "deadlock"),
            [vec![WarpLanes]]
        );
        let lanes = all
            .iter()
            .find(|(d, r, _, _)| d == "wait-phase-behind" && r == "deadlock")
            .expect("the deadlock");
        assert!(
            lanes.3[0].detail.contains("asked for, not forced"),
            "{}",
            lanes.3[0].detail
        );
        assert_eq!(lanes.3[0].laggards, vec![(0, 1)]);
        for (dir, rule) in [
            ("data-race", "data-race"),
            ("deadlock", "deadlock"),
            ("stale-phase", "stale-phase"),
            ("expect-after-completion", "data-race"),
            ("stale-token", "stale-token"),
        ] {
            for c in classes_of(&all, dir, rule) {
                assert!(c.is_empty(), "{dir}: {rule}: {c:?}");
            }
        }
        // No corpus trace has a lane pass a statement its warp runs together while a
        // warp-mate is held (the checker's own `syncwarp`/`elect` wait for the warp).
        for (dir, rule, _, o) in &all {
            for x in o {
                assert!(
                    !x.detail.contains("cannot run ahead"),
                    "{dir}: {rule}: {}",
                    x.detail
                );
            }
        }
    }

    /// A lone leader lane: lane 0 of the consumer warp arrives on `empty` alone, so the
    /// producer runs two phases ahead of lanes 1-31, still waiting on `ready`.
    const LONE_LEADER: &str = "protocol lone_leader\nparam N = 3\nblock 64\nmbarrier ready\n\
        mbarrier empty\nif tid == 0 {\n  init ready, 1\n  init empty, 1\n}\nsyncthreads\n\
        role producer when tid == 32 {\n  for i in 0..N {\n    wait empty parity (i % 2) ^ 1\n    \
        arrive ready\n  }\n}\nrole consumer when tid < 32 {\n  for i in 0..N {\n    \
        wait ready parity i % 2\n    if lane == 0 { arrive empty }\n  }\n}\n";

    fn lone_leader() -> (SourceFile, Program, Lowered, Finding) {
        lone_leader_with(LONE_LEADER)
    }

    fn lone_leader_with(text: &str) -> (SourceFile, Program, Lowered, Finding) {
        let file = SourceFile::new("lone_leader.phase", text);
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
        let f = report
            .findings
            .into_iter()
            .find(|f| f.class() == Class::Deadlock)
            .expect("a deadlock");
        (file, program, lowered, f)
    }

    #[test]
    fn a_lone_leader_lane_running_ahead_holds_its_warp_mates_apart() {
        let (file, program, lowered, f) = lone_leader();
        let p = plan(&program, &lowered, &f).expect("a plan");
        let o = obstacle::obstacles(&f, Ok(&p), &lowered, &file);
        let classes: Vec<ObstacleClass> = o.iter().map(|o| o.class).collect();
        assert_eq!(classes, [ObstacleClass::WarpLanes], "{o:?}");
        let w = &o[0];
        let wait = plan::stmt_of(&lowered, f.span).expect("the wait");
        assert_eq!(lowered.stmts[wait as usize].keyword, "wait");
        assert_eq!(w.stmts, vec![wait]);
        let held: Vec<(u32, u32)> = (1..32).map(|t| (0, t)).collect();
        assert_eq!(w.laggards, held, "the warp-mates still waiting on `ready`");
        assert!(
            w.detail.contains("the trace runs t0 through line 19"),
            "{}",
            w.detail
        );
        assert!(w.detail.contains("(held: t1-t31)"), "{}", w.detail);
        assert!(w.detail.contains("asked for, not forced"), "{}", w.detail);
        // The aimed fuzz delays the held lanes before the wait, and the statements of the
        // finding's wait-for graph.
        let a = aim::aim_of(&f, &lowered, &o);
        assert!(a.stmts.contains(&wait));
        assert_eq!(a.laggards, held);
        // Had t0 passed a statement its warp runs together (a `syncwarp`) on its way around
        // the loop, the order could not be forced at all.
        let (file, _, lowered, f) = lone_leader_with(
            &LONE_LEADER.replace("arrive empty }\n", "arrive empty }\n    syncwarp\n"),
        );
        let wait = plan::stmt_of(&lowered, f.span).expect("the wait");
        let sync = lowered
            .stmts
            .iter()
            .find(|s| s.keyword == "syncwarp")
            .expect("a syncwarp")
            .id;
        assert!(lowered.stmts[sync as usize].warp_sync);
        let st = |tid, stmt| gpu_harness::sequencer::SeqStep { cta: 0, tid, stmt };
        let steps = vec![st(0, wait), st(0, sync), st(0, wait), st(1, wait)];
        let plan2 = ReplayPlan {
            steps,
            table: Default::default(),
            extra_wanted: None,
            unsequenced: false,
        };
        let o = obstacle::obstacles(&f, Ok(&plan2), &lowered, &file);
        let lanes = o
            .iter()
            .find(|o| o.class == ObstacleClass::WarpLanes)
            .expect("warp lanes");
        assert!(
            lanes.detail.contains("passes line 21 (`syncwarp`)"),
            "{}",
            lanes.detail
        );
        assert!(
            lanes.detail.contains("cannot run ahead"),
            "{}",
            lanes.detail
        );
        assert!(lanes.stmts.contains(&sync));
    }

    /// What the run adds: UB the hardware tolerated, the UB a race passes first, threads that
    /// left the trace, and "forced" only when nothing else explains it.
    #[test]
    fn after_the_run_the_reasons_say_what_the_hardware_did() {
        let (program, lowered, errors) =
            super::tests::findings("corpus/hazards/drop-to-zero/fail.phase");
        let _ = (&program, &lowered);
        let ub = errors.iter().find(|f| f.class() == Class::Ub).expect("UB");
        let o = obstacle::after_run(ub, &[], None, 0, 1320);
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].class, ObstacleClass::UbTolerated);
        assert!(
            o[0].detail.contains("1320 replayed trials"),
            "{}",
            o[0].detail
        );
        let (_, _, errors) = super::tests::findings("corpus/hazards/data-race/fail.phase");
        let race = &errors[0];
        let o = obstacle::after_run(race, &[], None, 0, 1320);
        assert_eq!(o[0].class, ObstacleClass::Forced);
        let o = obstacle::after_run(race, &[], Some("`barrier-divergence` (line 22)"), 3, 1320);
        let classes: Vec<ObstacleClass> = o.iter().map(|o| o.class).collect();
        assert_eq!(classes, [ObstacleClass::UbOnTrace, ObstacleClass::Diverged]);
        // A static reason already explains it: no "forced".
        let stat = [Obstacle::new(ObstacleClass::HardwareCollective, "x")];
        assert!(obstacle::after_run(race, &stat, None, 0, 1320).is_empty());
        // Nothing ran (the replay got stuck): no claim about trials.
        assert!(obstacle::after_run(race, &[], None, 0, 0).is_empty());
    }

    /// The aim table the fuzz-mode kernel reads (`PC_AIM_MAGIC`): header, statement bits,
    /// thread bits of one trial; the rounds cycle through the targets and delay bounds.
    #[test]
    fn aim_tables_mark_the_aimed_statements_and_threads() {
        let (_, _, lowered, _) = lone_leader();
        let a = aim::Aim {
            stmts: vec![1, 33],
            laggards: vec![(0, 1), (0, 2), (0, 40)],
        };
        let nstmt = lowered.stmts.len();
        assert!(nstmt < 32);
        let t = aim::table(&lowered, &a, aim::Targets::Laggards, 2000, 1);
        assert_eq!(&t[..4], &[aim::AIM_MAGIC, 2000, 1, 2]);
        assert_eq!(t[4], 1 << 1, "statement 33 is past the table");
        assert_eq!(&t[5..], &[0b110, 1 << 8]);
        let t = aim::table(&lowered, &a, aim::Targets::HalfOfTheWarps, 20000, 3);
        for w in &t[5..] {
            assert!(*w == 0 || *w == u32::MAX, "whole warps: {w:x}");
        }
        let t = aim::table(&lowered, &a, aim::Targets::HalfOfEachWarp, 20000, 3);
        let ones: u32 = t[5..].iter().map(|w| w.count_ones()).sum();
        assert!((10..54).contains(&ones), "about half of 64: {ones}");
        // Rounds: targets first, then the longer delays.
        let plans: Vec<(aim::Targets, u32)> = (0..6).map(|r| aim::round_plan(&a, r)).collect();
        assert_eq!(plans[0], (aim::Targets::Laggards, aim::AIM_NS[0]));
        assert_eq!(plans[1].0, aim::Targets::HalfOfEachWarp);
        assert_eq!(plans[3], (aim::Targets::Laggards, aim::AIM_NS[1]));
        let none = aim::Aim {
            stmts: vec![1],
            laggards: Vec::new(),
        };
        assert_eq!(aim::round_plan(&none, 0).0, aim::Targets::HalfOfEachWarp);
    }

    /// An aimed round shows a deadlock by expired waits at the finding's statements only;
    /// what it saw elsewhere is listed, not counted.
    #[test]
    fn aimed_rounds_are_judged_at_the_findings_statements() {
        let (file, _, lowered, f) = lone_leader();
        let wait = plan::stmt_of(&lowered, f.span).expect("the wait");
        let other = lowered
            .stmts
            .iter()
            .find(|s| s.keyword == "arrive")
            .expect("an arrive")
            .id;
        let ev = |stmt, block| gpu_harness::decode::Event {
            kind: gpu_harness::decode::EventKind::Hang,
            stmt,
            tid: 1,
            cta: 0,
            block,
            a: 0,
            b: 0,
            raw: 0,
        };
        let r = LaunchResult {
            events: vec![ev(other, 0)],
            ..Default::default()
        };
        assert!(aim::judge_round(&lowered, &file, &f, &r).is_none());
        assert_eq!(
            aim::seen_elsewhere(&lowered, &file, &r),
            vec![format!(
                "1 hang(s) at line {}",
                file.line_of(lowered.stmts[other as usize].span)
            )]
        );
        let r = LaunchResult {
            events: vec![ev(wait, 3), ev(wait, 3), ev(wait, 9)],
            ..Default::default()
        };
        let (detail, n) = aim::judge_round(&lowered, &file, &f, &r).expect("shown");
        assert_eq!(n, 2);
        assert_eq!(detail, "bounded waits expired at line 19");
    }

    /// The report: why the replay cannot show a finding and what the aimed fuzz did, in both
    /// outputs; the parent reads a child's JSON back.
    #[test]
    fn reasons_and_the_aimed_fuzz_are_reported() {
        let (file, _, _, f) = lone_leader();
        let mut r = FindingResult::new(&f, &file);
        r.detail = "the replayed interleaving did not show it".into();
        r.trials = 1320;
        r.why_not_shown = vec![Obstacle::new(ObstacleClass::WarpLanes, "lanes apart")];
        r.aimed_fuzz = Some(AimedFuzz {
            seconds: 5.0,
            rounds: 12,
            trials: 12672,
            lines: vec![19, 22],
            delay_ns: vec![2000, 20000],
            targets: vec![aim::Targets::Laggards, aim::Targets::HalfOfEachWarp],
            shown: false,
            trials_showing: 0,
            stuck: false,
            detail: "nothing seen".into(),
            seed: None,
        });
        let out = ConfirmReport {
            file: "lone_leader.phase".into(),
            device: "test".into(),
            check_seconds: 0.1,
            findings: vec![r],
            fuzz: None,
        };
        let text = report::render(&out);
        assert!(
            text.contains("why not shown (warp-lanes): lanes apart"),
            "{text}"
        );
        assert!(
            text.contains(
                "aimed fuzz (12 round(s), 12672 trials, 5.00 s; delays of up to 2 us / 20 us \
                 before line 19, 22 in the threads the trace holds back; a random half of each \
                 warp's lanes): nothing seen"
            ),
            "{text}"
        );
        let json = serde_json::to_value(&out).expect("serializes");
        let row = &json["findings"][0];
        assert_eq!(row["why_not_shown"][0]["class"], "warp-lanes");
        assert_eq!(row["aimed_fuzz"]["targets"][1], "half-of-each-warp");
        assert!(row["aimed_fuzz"].get("stuck").is_none());
        let back: FindingResult = serde_json::from_value(row.clone()).expect("reads back");
        assert_eq!(back.why_not_shown[0].class, ObstacleClass::WarpLanes);
        assert_eq!(back.aimed_fuzz.expect("aimed").trials, 12672);
    }
}
