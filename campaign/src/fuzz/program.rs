//! A fuzzing run of a loaded program: its plain rounds and, for a file that bulk-stores, rounds
//! of the proxy-window kernel; a stuck launch read back. Progress goes to the caller's
//! [`FuzzObserver`], the summary comes back as a value.

use super::{
    Accumulator, FuzzSummary, GpuOptions, default_blocks, fuzz_rounds, read_back_stuck,
    seed_from_clock,
};
use gpu_harness::lower::{self, LowerOptions, Lowered, Mode};
use gpu_harness::run::{Gpu, LoadedKernel, RunError};
use protocols::SourceFile;
use protocols::ir::Program;
use std::sync::Arc;
use std::time::Instant;

/// What reports a summary should the read-back of a stuck launch not return in time (the
/// process ends right after): the command line prints it.
pub type WatchdogFallback = Arc<dyn Fn(FuzzSummary) + Send + Sync>;

/// What a fuzzing run tells as it goes (a progress bar, say).
pub trait FuzzObserver {
    /// After each round of the plain kernel: seconds elapsed, what was accumulated.
    fn round(&self, elapsed: f64, acc: &Accumulator<'_>);
    /// A launch got stuck; its read-back follows.
    fn stuck(&self) {}
    /// The proxy-window rounds begin.
    fn window_rounds(&self) {}
}

/// What one fuzzing run of a loaded program needs besides the GPU and the kernel.
pub struct FuzzPlan<'a> {
    /// How the kernels are launched (the proxy-window rounds run without delays).
    pub gpu: GpuOptions,
    /// Blocks per round (default: 8 per multiprocessor).
    pub blocks: Option<u32>,
    /// Seed of the first round (default: from the clock).
    pub seed: Option<u64>,
    pub seconds: f64,
    /// The kernel was lowered for the proxy window (`--proxy-window`).
    pub proxy_window: bool,
    /// A file that bulk-stores also gets rounds of the proxy-window kernel (a quarter of the
    /// time, no delays); not with `--baseline`, whose figure is the plain kernel's throughput.
    pub window_rounds: bool,
    /// The `--param` overrides, for the replay flags.
    pub params: &'a [(String, i64)],
    /// What reports the summary should the read-back of a stuck launch not return in time;
    /// the process then ends with `exit_code` ([`read_back_stuck`]).
    pub watchdog: WatchdogFallback,
    pub exit_code: i32,
}

/// Why a fuzzing run could not give its summary.
pub enum FuzzError {
    /// The proxy-window variant of the kernel cannot be lowered.
    NotLowered(lower::LowerError),
    Run(RunError),
}

/// The plain fuzzing kernel of a loaded program (or its proxy-window variant).
pub fn lower_for_fuzz(
    program: &Program,
    file: &SourceFile,
    proxy_window: bool,
) -> Result<Lowered, lower::LowerError> {
    lower::lower(
        program,
        Some(file),
        &LowerOptions {
            mode: Mode::Fuzz,
            proxy_window,
            ..Default::default()
        },
    )
}

/// Fuzz a loaded program on an open GPU: compile `lowered` (from [`lower_for_fuzz`]) and launch
/// rounds for `plan.seconds`, a quarter of them in the proxy-window kernel when the file has a
/// `tma_store` and `plan.window_rounds` (in the plain kernel the harness's own bookkeeping
/// drains the writers' stores before the copy, so a missing `fence_proxy_async` rarely shows
/// there: docs/gpu.md "Proxy fences"). A launch stuck in a hardware collective ends the run:
/// it is read back ([`read_back_stuck`], guarded by a watchdog that prints `plan.watchdog`'s
/// report and ends the process should the read-back not return) and the summary comes back with
/// its stuck part ([`FuzzSummary::is_stuck`]), with no proxy-window rounds after a stuck plain
/// part. The caller reports it and must then end the process (`end_process`): the stuck kernel
/// is freed only with it. `phasecheck fuzz` and `mutate --gpu` run this (`confirm` runs [`fuzz_rounds`]
/// for files without error-level findings).
pub fn fuzz_program(
    gpu: &Gpu,
    file: &SourceFile,
    program: &Program,
    lowered: &Lowered,
    plan: &FuzzPlan<'_>,
    observer: Option<&dyn FuzzObserver>,
) -> Result<FuzzSummary, FuzzError> {
    let kernel = gpu.load_lowered(lowered).map_err(FuzzError::Run)?;
    let cluster = lowered.cluster.max(1);
    let blocks = plan
        .blocks
        .map(|b| (b.max(cluster) / cluster) * cluster)
        .unwrap_or_else(|| default_blocks(gpu, cluster));
    let first_seed = plan.seed.unwrap_or_else(seed_from_clock);
    let window = (!plan.proxy_window
        && plan.window_rounds
        && lowered.stmts.iter().any(|s| s.keyword == "tma_store"))
    .then(|| lower_for_fuzz(program, file, true))
    .transpose()
    .map_err(FuzzError::NotLowered)?;
    let window_kernel = window
        .as_ref()
        .map(|w| gpu.load_lowered(w))
        .transpose()
        .map_err(FuzzError::Run)?;
    let window_seconds = if window.is_some() {
        plan.seconds / 4.0
    } else {
        0.0
    };
    let device = format!("{} (device {})", gpu.device_name, gpu.ordinal);
    // One part of the run: `seconds` of rounds of one kernel from `seed` on. A stuck launch
    // ends it: it is read back and reported with the part (`outer`: the plain part, when this
    // is the proxy-window part, for the watchdog's report).
    let run_part = |l: &Lowered,
                    k: &LoadedKernel,
                    gpu_options: &GpuOptions,
                    proxy_window: bool,
                    seed: u64,
                    seconds: f64,
                    observer: Option<&dyn FuzzObserver>,
                    outer: Option<FuzzSummary>|
     -> Result<FuzzSummary, RunError> {
        let mut acc = Accumulator::new(file, program, l);
        acc.summary.device = device.clone();
        acc.summary.blocks_per_round = blocks;
        acc.summary.first_seed = seed;
        acc.summary.replay_flags = replay_flags(plan.params, gpu_options, proxy_window);
        let t0 = Instant::now();
        let round = |elapsed: f64, acc: &Accumulator<'_>| {
            if let Some(o) = observer {
                o.round(elapsed, acc);
            }
        };
        let stuck = fuzz_rounds(
            gpu,
            k,
            &mut acc,
            l,
            gpu_options,
            blocks,
            seed,
            seconds,
            Some(&round),
        )?;
        if let Some(stuck) = stuck {
            if let Some(o) = observer {
                o.stuck();
            }
            let wall = t0.elapsed().as_secs_f64();
            let watchdog = plan.watchdog.clone();
            read_back_stuck(gpu, &mut acc, &stuck, wall, plan.exit_code, move |part| {
                watchdog(with_outer(outer, part));
            });
        }
        Ok(acc.finish(t0.elapsed().as_secs_f64()))
    };
    let mut summary = run_part(
        lowered,
        &kernel,
        &plan.gpu,
        plan.proxy_window,
        first_seed,
        plan.seconds - window_seconds,
        observer,
        None,
    )
    .map_err(FuzzError::Run)?;
    // A stuck plain part ends the run: no proxy-window rounds after it (the caller reports it
    // and ends the process, which frees the GPU).
    if let (Some(w), Some(k), false) = (&window, &window_kernel, summary.is_stuck()) {
        if let Some(o) = observer {
            o.window_rounds();
        }
        let gpu_options = GpuOptions {
            delay_ns: 0,
            ..plan.gpu.clone()
        };
        let seed = first_seed.wrapping_add(summary.rounds);
        let part = run_part(
            w,
            k,
            &gpu_options,
            true,
            seed,
            window_seconds,
            None,
            Some(summary.clone()),
        )
        .map_err(FuzzError::Run)?;
        summary.proxy_window = Some(Box::new(part));
    }
    Ok(summary)
}

fn with_outer(outer: Option<FuzzSummary>, part: FuzzSummary) -> FuzzSummary {
    match outer {
        Some(mut o) => {
            o.proxy_window = Some(Box::new(part));
            o
        }
        None => part,
    }
}

/// The options besides the file, `--seed` and `--blocks` that replay a round: parameters,
/// delay and wait settings, the kernel variant.
fn replay_flags(params: &[(String, i64)], gpu: &GpuOptions, proxy_window: bool) -> String {
    let mut f = String::new();
    for (k, v) in params {
        f.push_str(&format!(" --param {k}={v}"));
    }
    if proxy_window {
        f.push_str(" --proxy-window");
    }
    f.push_str(&format!(
        " --delay-ns {} --delay-every {} --wait-cycles {}",
        gpu.delay_ns, gpu.delay_every, gpu.wait_cycles
    ));
    f
}
