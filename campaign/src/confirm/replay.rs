//! `confirm`'s replay engine: a finding's trace replayed on the GPU with the device-side
//! sequencer ([`replay_one`]), why a replay did not show it ([`super::obstacle`]), the fuzz
//! rounds aimed at it after ([`super::aim`]), the read-back of a stuck launch. Results come
//! back as [`FindingResult`] values; a caller's callback reports what a watchdog must report
//! before the process ends. Nothing here prints.

use super::aim::{self, AimedFuzz};
use super::judge::judge;
use super::obstacle::{self, Obstacle, ObstacleClass};
use super::plan::{self, ReplayPlan, plan};
use super::report::{FindingResult, Outcome};
use crate::fuzz::{self, Accumulator, GpuOptions};
use checker::{Class, Finding, Severity};
use gpu_harness::decode::LaunchResult;
use gpu_harness::lower::{self, LowerOptions, Lowered, Mode};
use gpu_harness::run::{Gpu, LaunchParams, LoadedKernel, RunError, StuckLaunch, Watchdog};
use protocols::SourceFile;
use protocols::ir::Program;
use std::time::{Duration, Instant};

/// The exit code of a process ended by a watchdog while a stuck launch was read back: the
/// command line's "findings" (1).
pub const STUCK_EXIT: i32 = 1;

/// What replays a finding: the open GPU, the compiled replay kernel and the run settings.
pub struct Replayer<'a> {
    pub gpu: &'a Gpu,
    pub kernel: &'a LoadedKernel,
    pub lowered: &'a Lowered,
    pub gpu_args: &'a GpuOptions,
    /// Told when the aimed fuzz's kernel cannot be lowered (the replay's result stands).
    pub on_lower_error: fn(&SourceFile, &lower::LowerError),
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
            timeout: replay_timeout(self.gpu_args),
        };
        let (r, _) = self.gpu.launch(self.kernel, self.lowered, &params, table)?;
        Ok((r, trials))
    }
}

/// How long a replay launch may take before it counts as stuck (`--launch-timeout`, else 10 s).
pub fn replay_timeout(gpu_args: &GpuOptions) -> Duration {
    Duration::from_secs_f64(gpu_args.launch_timeout.unwrap_or(10.0).max(0.001))
}

/// A UB that the race finding `f`'s interleaving runs into before the race: the checker's
/// replay of `f`'s schedule, which reports every finding it hits on the way. When the hardware
/// faults or hangs at that UB, the race cannot be shown behind it.
pub struct UbFirst {
    pub rule: &'static str,
    pub line: u32,
}

impl std::fmt::Display for UbFirst {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(out, "`{}` (line {})", self.rule, self.line)
    }
}

pub fn ub_on_trace(program: &Program, f: &Finding, file: &SourceFile) -> Option<UbFirst> {
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
pub fn with_note(mut r: FindingResult, note: Option<String>) -> FindingResult {
    if let Some(n) = note {
        r.detail = format!("{} ({n})", r.detail);
    }
    r
}

/// A replay's result, with what the rest of `confirm` needs of it.
pub struct Replayed {
    res: FindingResult,
    /// The replay plan, or why there is none.
    plan: Result<ReplayPlan, String>,
    /// Threads that left the trace, over all launches.
    diverged: u64,
    /// The launch that got stuck in a hardware collective (the process must end).
    stuck: Option<Box<StuckLaunch>>,
}

pub fn replay_finding(
    rp: &Replayer<'_>,
    program: &Program,
    file: &SourceFile,
    f: &Finding,
    ub_first: Option<String>,
    seconds: f64,
) -> Result<Replayed, RunError> {
    let lowered = rp.lowered;
    let mut res = FindingResult::new(f, file);
    let planned = plan(program, lowered, f);
    let (steps, table, extra_wanted, unsequenced) = match &planned {
        Ok(p) => (&p.steps, &p.table, p.extra_wanted, p.unsequenced),
        Err(e) => {
            res.outcome = Outcome::NotObservable;
            res.detail = format!("the trace cannot be replayed: {e}");
            return Ok(Replayed {
                res,
                plan: planned,
                diverged: 0,
                stuck: None,
            });
        }
    };
    let t0 = Instant::now();
    let mut seed = 1u64;
    let mut diverged = 0u64;
    let mut stuck = None;
    loop {
        let (r, trials) = match rp.launch(&table.words, seed, unsequenced) {
            Ok(x) => x,
            Err(RunError::Driver { what, error }) if f.class() == Class::Ub => {
                // A trap poisons the context; it is what the hardware shows for this UB.
                res.outcome = Outcome::Confirmed;
                res.detail = format!("the kernel faulted ({what}: {error})");
                res.stuck = true;
                break;
            }
            Err(RunError::Driver { what, error }) if ub_first.is_some() => {
                res.outcome = Outcome::NotObservable;
                res.detail = format!(
                    "the trace passes through {} first, and the kernel faults there ({what}: \
                     {error}) before the racing access",
                    ub_first.as_deref().unwrap_or_default()
                );
                res.stuck = true;
                break;
            }
            Err(RunError::Stuck(s)) => {
                res.outcome = match (&ub_first, f.class()) {
                    (Some(_), _) => Outcome::NotObservable,
                    (None, Class::Race) => Outcome::NotObserved,
                    (None, _) => Outcome::Confirmed,
                };
                res.detail = format!(
                    "the kernel hung in a hardware barrier that cannot be bounded (syncthreads, \
                     bar.sync, barrier.cluster) for {:.0} s; the process ends to free the GPU",
                    s.seconds
                );
                if let Some(ub) = &ub_first {
                    res.detail = format!(
                        "the trace passes through {ub} first, and the hardware hangs there: {}",
                        res.detail
                    );
                }
                res.stuck = true;
                stuck = Some(s);
                break;
            }
            Err(e) => return Err(e),
        };
        seed += 1;
        res.trials += u64::from(trials);
        diverged += r.seq_diverged;
        if let Some((detail, n)) = judge(lowered, file, f, steps, extra_wanted, &r) {
            res.outcome = Outcome::Confirmed;
            res.detail = detail;
            res.trials_showing += n;
            break;
        }
        if t0.elapsed().as_secs_f64() >= seconds {
            if f.class() == Class::Ub {
                res.outcome = Outcome::NotObservable;
                res.detail = "the statement completed and nothing after it failed: the \
                              hardware tolerated this UB in the replayed interleaving"
                    .into();
            } else {
                res.detail = if unsequenced {
                    "replayed unsequenced in the kernel that leaves the writers' stores in \
                     flight, no bulk copy stored an older stamp than its source held once it \
                     had completed (on an H100 a copy overtakes unfenced generic stores only \
                     while they still wait in their warp's queue: docs/gpu.md \"Proxy fences\")"
                        .into()
                } else if diverged > 0 {
                    format!("the replay left the trace in {diverged} thread(s)")
                } else {
                    "the replayed interleaving did not show it".into()
                };
            }
            break;
        }
    }
    res.seconds = t0.elapsed().as_secs_f64();
    Ok(Replayed {
        res,
        plan: planned,
        diverged,
        stuck,
    })
}

/// Where the threads of a stuck launch were blocked, read back while it still ran, as text for
/// a detail (`Accumulator::add_stuck` rows). Guarded by a watchdog: should the read-back not
/// return, `fallback` prints the report without it and the process ends.
pub fn where_stuck(
    gpu: &Gpu,
    file: &SourceFile,
    program: &Program,
    lowered: &Lowered,
    stuck: &StuckLaunch,
    fallback: impl FnOnce() + Send + 'static,
) -> (String, Vec<u32>) {
    let dog = Watchdog::arm(
        fuzz::READBACK_TIMEOUT + fuzz::READBACK_GRACE,
        STUCK_EXIT,
        fallback,
    );
    let read = gpu.read_stuck(stuck, fuzz::READBACK_TIMEOUT);
    dog.claim();
    let mut acc = Accumulator::new(file, program, lowered);
    acc.add_stuck(stuck, read.as_ref().map_err(|e| e.clone()));
    let s = acc.finish(0.0);
    let rows: Vec<&fuzz::HangRow> = s.hangs.iter().filter(|h| h.stuck).collect();
    let lines = rows.iter().map(|h| h.line).collect();
    let text = match (&s.stuck, rows.is_empty()) {
        (Some(st), _) if !st.positions_read => format!(
            "where the threads were is not known ({})",
            st.read_error.as_deref().unwrap_or("not read")
        ),
        (_, true) => "no thread was inside a hardware collective".into(),
        (_, false) => rows
            .iter()
            .map(|h| {
                format!(
                    "at line {} (`{}`): {} thread(s) in {} trial(s), e.g. {}",
                    h.line,
                    h.statement,
                    h.count,
                    h.trials.unwrap_or(0),
                    h.observed
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
    };
    (text, lines)
}

/// The aimed fuzz of one finding: rounds of the fuzz-mode kernel `kernel` (many trials, the
/// ordinary delays) with long delays aimed at the finding's statements and threads
/// ([`aim`]), until it shows the finding or `seconds` have passed. A stuck launch ends it.
#[allow(clippy::too_many_arguments)]
pub fn aimed_fuzz(
    gpu: &Gpu,
    file: &SourceFile,
    f: &Finding,
    lowered: &Lowered,
    kernel: &LoadedKernel,
    gpu_args: &GpuOptions,
    aim: &aim::Aim,
    seconds: f64,
) -> Result<(AimedFuzz, Option<Box<StuckLaunch>>), RunError> {
    let cluster = lowered.cluster.max(1);
    let blocks = fuzz::default_blocks(gpu, cluster).min(lower::MAX_TRIALS / cluster * cluster);
    let lines: Vec<u32> = {
        let mut l: Vec<u32> = aim
            .stmts
            .iter()
            .filter_map(|&s| lowered.stmts.get(s as usize))
            .map(|s| file.line_of(s.span))
            .collect();
        l.sort_unstable();
        l.dedup();
        l
    };
    let mut a = AimedFuzz {
        seconds: 0.0,
        rounds: 0,
        trials: 0,
        lines,
        delay_ns: Vec::new(),
        targets: Vec::new(),
        shown: false,
        trials_showing: 0,
        stuck: false,
        detail: String::new(),
        seed: None,
    };
    let t0 = Instant::now();
    let mut elsewhere: std::collections::BTreeSet<String> = Default::default();
    let mut round = 0u64;
    let mut stuck = None;
    loop {
        let (targets, ns) = aim::round_plan(aim, round);
        if !a.targets.contains(&targets) {
            a.targets.push(targets);
        }
        if !a.delay_ns.contains(&ns) {
            a.delay_ns.push(ns);
        }
        let seed = round + 1;
        let table = aim::table(lowered, aim, targets, ns, seed);
        // A bounded wait must outlast the partner's aimed sleeps (about 2 cycles per ns).
        let budget = gpu_args.wait_cycles.max(400 * i64::from(ns));
        let params = LaunchParams {
            blocks,
            seed,
            delay_max_ns: gpu_args.delay_ns,
            delay_every: gpu_args.delay_every.max(1),
            budget_cycles: budget,
            timeout: replay_timeout(gpu_args),
        };
        let r = match gpu.launch(kernel, lowered, &params, &table) {
            Ok((r, _)) => r,
            Err(RunError::Stuck(s)) => {
                a.stuck = true;
                a.seed = Some(seed);
                stuck = Some(s);
                break;
            }
            Err(e) => return Err(e),
        };
        round += 1;
        a.rounds = round;
        a.trials += u64::from(blocks / cluster);
        if let Some((detail, n)) = aim::judge_round(lowered, file, f, &r) {
            a.shown = true;
            a.trials_showing = n;
            a.seed = Some(seed);
            a.detail = format!(
                "{detail} in {n} trial(s) of the round of seed {seed} (delays of up to {} us \
                 in {})",
                f64::from(ns) / 1e3,
                targets.as_str()
            );
            break;
        }
        elsewhere.extend(aim::seen_elsewhere(lowered, file, &r));
        if t0.elapsed().as_secs_f64() >= seconds {
            break;
        }
    }
    a.seconds = t0.elapsed().as_secs_f64();
    if !a.shown && !a.stuck {
        a.detail = if elsewhere.is_empty() {
            "nothing seen".into()
        } else {
            format!(
                "not at the finding's statements; elsewhere: {}",
                elsewhere.into_iter().take(6).collect::<Vec<_>>().join(", ")
            )
        };
    }
    Ok((a, stuck))
}

/// The kernel that replays finding `f` (an error-level finding of `program`), as `confirm`
/// does: in confirm mode, with the non-aligned `barrier.sync 0` for `syncthreads` when the trace
/// runs through a divergent one first (the compiled `__syncthreads` hangs there, which confirms
/// the UB finding, so the race behind it is replayed as the checker models past that UB: the
/// second value is true then), or in the proxy-window fuzz kernel for a proxy-fence race, which
/// runs unsequenced (plan::unsequenced) with the writers' stores left in flight for the copy.
pub fn lower_for_replay(
    program: &Program,
    file: &SourceFile,
    f: &Finding,
) -> Result<(Lowered, bool), lower::LowerError> {
    let past_divergence =
        ub_on_trace(program, f, file).is_some_and(|u| u.rule == "barrier-divergence");
    let options = LowerOptions {
        mode: Mode::Confirm,
        non_aligned_syncthreads: past_divergence,
        proxy_window: false,
    };
    let plain = lower::lower(program, Some(file), &options)?;
    let lowered = if plan::unsequenced(&plain, f) {
        let window = LowerOptions {
            mode: Mode::Fuzz,
            non_aligned_syncthreads: past_divergence,
            proxy_window: true,
        };
        lower::lower(program, Some(file), &window)?
    } else {
        plain
    };
    Ok((lowered, past_divergence))
}

/// The result of a finding whose protocol cannot be lowered: nothing to run. Why it cannot be
/// shown: the file has several kernels (a replay runs one), or it does not lower at all.
pub fn not_lowered(program: &Program, file: &SourceFile, f: &Finding, why: &str) -> FindingResult {
    let class = if program.kernels.len() > 1 {
        ObstacleClass::SeveralKernels
    } else {
        ObstacleClass::NotLowered
    };
    let mut r = FindingResult::new(f, file);
    r.outcome = Outcome::NotObservable;
    r.detail = format!("the protocol cannot be lowered: {why}");
    r.why_not_shown = vec![Obstacle::new(class, why)];
    r
}

/// A replay that could not finish: the error, and the finding's result when the replay itself
/// ran (the aimed fuzz after it failed).
pub struct ReplayFailed {
    pub result: Option<Box<FindingResult>>,
    pub error: RunError,
}

impl From<RunError> for ReplayFailed {
    fn from(error: RunError) -> ReplayFailed {
        ReplayFailed {
            result: None,
            error,
        }
    }
}

/// Replay finding `f` on the GPU for up to `seconds`, in the kernel [`lower_for_replay`] gave
/// (`past_divergence` is its second value). A replay that does not show the finding says why,
/// by class (`why_not_shown`: [`obstacle`]), and is followed by `aim_seconds` of fuzzing aimed
/// at the finding ([`aim`]; 0: none). A result with `stuck` set lost the GPU context (a
/// launch stuck in a hardware collective, read back for where its threads were blocked, or a
/// faulted kernel): the caller reports it and must end the process (`end_process`) without
/// running anything else. Should the read-back of a stuck launch not return, its watchdog calls
/// `fallback` with the result so far (to print the caller's report) and ends the process, exit
/// 1. `confirm` and `mutate --gpu` run this.
#[allow(clippy::too_many_arguments)]
pub fn replay_one(
    rp: &Replayer<'_>,
    past_divergence: bool,
    program: &Program,
    file: &SourceFile,
    f: &Finding,
    seconds: f64,
    aim_seconds: f64,
    fallback: impl FnOnce(FindingResult) + Send + 'static,
) -> Result<FindingResult, ReplayFailed> {
    let (ub_first, past_ub) = match ub_on_trace(program, f, file) {
        Some(u) if past_divergence => (
            None,
            Some(format!(
                "replayed past the divergent syncthreads of {u} with the non-aligned \
                 `barrier.sync 0`; as `__syncthreads` the compiled kernel hangs there"
            )),
        ),
        u => (u.map(|u| u.to_string()), None),
    };
    let Replayed {
        res,
        plan: planned,
        diverged,
        stuck,
    } = replay_finding(rp, program, file, f, ub_first.clone(), seconds)?;
    let mut r = with_note(res, past_ub);
    let statics = obstacle::obstacles(
        f,
        planned.as_ref().map_err(|e| e.as_str()),
        rp.lowered,
        file,
    );
    if r.outcome != Outcome::Confirmed {
        r.why_not_shown = statics.clone();
        r.why_not_shown.extend(obstacle::after_run(
            f,
            &statics,
            ub_first.as_deref(),
            diverged,
            if r.stuck { 0 } else { r.trials },
        ));
    }
    if let Some(s) = stuck {
        let fallback_result = r.clone();
        let (where_, _) = where_stuck(rp.gpu, file, program, rp.lowered, &s, move || {
            fallback(fallback_result)
        });
        r.detail = format!("{}; {where_}", r.detail);
        return Ok(r);
    }
    if r.stuck {
        return Ok(r);
    }
    let aimable = r.outcome != Outcome::Confirmed
        && aim_seconds > 0.0
        && !planned.as_ref().is_ok_and(|p| p.unsequenced);
    if !aimable {
        return Ok(r);
    }
    let aim = aim::aim_of(f, rp.lowered, &statics);
    let fuzz_options = LowerOptions {
        mode: Mode::Fuzz,
        non_aligned_syncthreads: past_divergence,
        proxy_window: false,
    };
    let fuzz_lowered = match lower::lower(program, Some(file), &fuzz_options) {
        Ok(l) => l,
        Err(e) => {
            (rp.on_lower_error)(file, &e);
            return Ok(r);
        }
    };
    let fuzz_kernel = match rp.gpu.load_lowered(&fuzz_lowered) {
        Ok(k) => k,
        Err(error) => {
            return Err(ReplayFailed {
                result: Some(Box::new(r)),
                error,
            });
        }
    };
    let aimed = aimed_fuzz(
        rp.gpu,
        file,
        f,
        &fuzz_lowered,
        &fuzz_kernel,
        rp.gpu_args,
        &aim,
        aim_seconds,
    );
    let (mut a, stuck) = match aimed {
        Ok(x) => x,
        Err(error) => {
            return Err(ReplayFailed {
                result: Some(Box::new(r)),
                error,
            });
        }
    };
    if a.shown {
        r.outcome = Outcome::Confirmed;
        r.trials_showing = a.trials_showing;
    }
    if let Some(s) = stuck {
        let mut fallback_result = r.clone();
        a.detail = "a launch hung in a hardware collective".into();
        fallback_result.aimed_fuzz = Some(a.clone());
        let (where_, lines) = where_stuck(rp.gpu, file, program, &fuzz_lowered, &s, move || {
            fallback(fallback_result)
        });
        let wanted: Vec<u32> = aim
            .stmts
            .iter()
            .filter_map(|&s| fuzz_lowered.stmts.get(s as usize))
            .map(|s| file.line_of(s.span))
            .collect();
        // A stuck collective shows UB (as in the replay) and a deadlock whose statements it is
        // at; a race, nothing.
        let shows = match f.class() {
            Class::Ub | Class::Perf => true,
            Class::Deadlock => lines.iter().any(|l| wanted.contains(l)),
            Class::Race => false,
        };
        a.detail = format!(
            "the launch of seed {} hung in a hardware collective for {:.0} s: {where_}; the \
             process ends to free the GPU",
            a.seed.unwrap_or(0),
            s.seconds
        );
        a.shown = shows;
        if shows {
            r.outcome = Outcome::Confirmed;
        }
        r.stuck = true;
    }
    r.aimed_fuzz = Some(a);
    Ok(r)
}
