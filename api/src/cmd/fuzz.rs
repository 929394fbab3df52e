//! `phasecheck fuzz FILE`: launch rounds of many independent trials (one block or cluster
//! each) with fresh seeds until the time is up; report hangs per statement, stale reads per
//! buffer and statement, throughput, and the first seed that showed each hazard.

use crate::args::{Exit, Format, FuzzArgs, GpuArgs};
use crate::cmd::lower::report_lower_error;
use gpu_harness::lower::Lowered;
use gpu_harness::run::{Gpu, LaunchParams, LoadedKernel, RunError, StuckLaunch, end_process};
use protocols::SourceFile;
use protocols::ir::Program;
use serde::Serialize;
use std::time::Duration;

mod render;

pub use render::render_human;

/// Open the GPU; a missing GPU or CUDA library is a clear error and exit 2 (with
/// `--format json`, also one JSON object saying so).
pub fn open_gpu(gpu: &GpuArgs, not_run: &NotRun) -> Result<Gpu, Exit> {
    Gpu::open(gpu.device).map_err(|e| fail_as(e, Some(not_run)))
}

/// Print a run error; a stuck kernel cannot be recovered in-process, so the process ends.
pub fn fail(e: RunError) -> Exit {
    fail_as(e, None)
}

/// [`fail`], and with `--format json` the JSON object of a run that did not happen.
pub fn fail_as(e: RunError, not_run: Option<&NotRun>) -> Exit {
    eprintln!("error: {e}");
    let (exit, reason) = match &e {
        RunError::Env(_) => (Exit::BadInput, "no-gpu"),
        RunError::Compile { .. } => (Exit::BadInput, "compile-error"),
        RunError::Driver { .. } => (Exit::Findings, "driver-error"),
        RunError::Stuck(_) => (Exit::Findings, "stuck"),
    };
    if let Some(n) = not_run {
        n.print(reason, &e.to_string(), exit);
    }
    if let RunError::Stuck(_) = e {
        // The kernel still runs; ending the process frees the GPU (`end_process`).
        end_process(Exit::Findings as i32);
    }
    exit
}

/// What `fuzz` and `confirm` print with `--format json` when they cannot give their report
/// (no GPU or CUDA library, a file that does not load or lower, a kernel NVRTC rejects, a
/// driver error or stuck kernel): one object with the reason, the message and the exit code,
/// so that a JSON consumer never gets an empty output (docs/gpu.md).
pub struct NotRun<'a> {
    pub format: Format,
    pub file: &'a str,
}

impl NotRun<'_> {
    pub fn print(&self, reason: &str, error: &str, exit: Exit) -> Exit {
        if self.format == Format::Json {
            let v = serde_json::json!({
                "schema": 1,
                "file": self.file,
                "skipped": true,
                "reason": reason,
                "error": error,
                "exit_code": exit as u8,
            });
            println!(
                "{}",
                serde_json::to_string_pretty(&v).expect("JSON values serialize")
            );
        }
        exit
    }
}

pub use campaign::fuzz::{
    Accumulator, FuzzError, FuzzObserver, FuzzPlan, FuzzSummary, GpuOptions, HangRow, KernelRow,
    READBACK_GRACE, READBACK_TIMEOUT, SeenAt, StaleRow, StuckReport, default_blocks,
    lower_for_fuzz, seed_from_clock, stmt_text,
};

impl From<&GpuArgs> for GpuOptions {
    fn from(a: &GpuArgs) -> Self {
        GpuOptions {
            device: a.device,
            delay_ns: a.delay_ns,
            delay_every: a.delay_every,
            wait_cycles: a.wait_cycles,
            launch_timeout: a.launch_timeout,
        }
    }
}

/// [`campaign::fuzz::fuzz_rounds`] with the command line's options, its progress on a bar.
#[allow(clippy::too_many_arguments)]
pub fn fuzz_rounds(
    gpu: &Gpu,
    kernel: &LoadedKernel,
    acc: &mut Accumulator<'_>,
    lowered: &Lowered,
    gpu_args: &GpuArgs,
    blocks: u32,
    first_seed: u64,
    seconds: f64,
    progress: Option<&indicatif::ProgressBar>,
) -> Result<Option<Box<StuckLaunch>>, RunError> {
    let show = progress.map(|pb| {
        move |elapsed: f64, acc: &Accumulator<'_>| {
            pb.set_position((elapsed * 10.0).min(seconds * 10.0) as u64);
            pb.set_message(format!(
                "{} trials, {} hang(s), {} stale read(s)",
                acc.summary.trials,
                acc.hangs_seen(),
                acc.stale_seen()
            ));
        }
    });
    campaign::fuzz::fuzz_rounds(
        gpu,
        kernel,
        acc,
        lowered,
        &GpuOptions::from(gpu_args),
        blocks,
        first_seed,
        seconds,
        show.as_ref().map(|f| f as &campaign::fuzz::Progress),
    )
}

/// [`campaign::fuzz::read_back_stuck`]; should the read-back not return, `fallback` prints the
/// report and the process ends with exit 1.
pub fn read_back_stuck(
    gpu: &Gpu,
    acc: &mut Accumulator<'_>,
    stuck: &StuckLaunch,
    wall: f64,
    fallback: impl FnOnce(FuzzSummary) + Send + 'static,
) {
    campaign::fuzz::read_back_stuck(gpu, acc, stuck, wall, Exit::Findings as i32, fallback)
}

#[derive(Serialize)]
struct BaselineReport {
    file: String,
    iters: u32,
    launches: u32,
    seconds: f64,
    phases: u64,
    phases_per_second: f64,
    hangs: u64,
    races: u64,
    /// Generated kernel's phases/s over the baseline's.
    ratio: f64,
}

fn run_baseline(
    gpu: &Gpu,
    args: &FuzzArgs,
    path: &std::path::Path,
    threads: u32,
    blocks: u32,
    summary: &FuzzSummary,
) -> Result<BaselineReport, Exit> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        eprintln!("error: cannot read {}: {e}", path.display());
        Exit::BadInput
    })?;
    let name = text
        .split("__global__ void")
        .nth(1)
        .and_then(|rest| rest.split('(').next())
        .map(|s| s.trim().to_string())
        .ok_or_else(|| {
            eprintln!("error: no __global__ kernel in {}", path.display());
            Exit::BadInput
        })?;
    let kernel = gpu.load(&text, &name).map_err(fail)?;
    let params = LaunchParams {
        blocks,
        seed: summary.first_seed,
        delay_max_ns: args.gpu.delay_ns,
        delay_every: 1,
        budget_cycles: args.gpu.wait_cycles,
        timeout: Duration::from_secs(60),
    };
    // Warm-up, then as many launches as the generated kernel had rounds (at least 3).
    gpu.run_baseline(&kernel, threads, args.baseline_iters, &params)
        .map_err(fail)?;
    let launches = (summary.rounds as u32).clamp(3, 50);
    let (mut secs, mut phases, mut hangs, mut races) = (0.0, 0u64, 0u64, 0u64);
    for _ in 0..launches {
        let r = gpu
            .run_baseline(&kernel, threads, args.baseline_iters, &params)
            .map_err(fail)?;
        secs += r.seconds;
        phases += r.phases;
        hangs += r.hangs;
        races += r.races;
    }
    let pps = phases as f64 / secs.max(1e-12);
    Ok(BaselineReport {
        file: path.display().to_string(),
        iters: args.baseline_iters,
        launches,
        seconds: secs,
        phases,
        phases_per_second: pps,
        hangs,
        races,
        ratio: summary.phases_per_second / pps.max(1e-12),
    })
}

/// What the watchdog of a stuck launch's read-back prints, should the read-back not return in
/// time, before it ends the process with exit 1 ([`read_back_stuck`]): the summary without
/// what could not be read (the proxy-window part inside the plain part it follows).
#[derive(Clone, Copy)]
pub enum WatchdogReport {
    /// The summary as `fuzz` prints it ([`print_summary`]).
    Summary(Format),
    /// The caller's own report of the summary (`mutate --gpu`'s child prints its answer).
    With(fn(FuzzSummary)),
}

impl WatchdogReport {
    /// The [`FuzzPlan`]'s watchdog report.
    pub fn into_watchdog(self) -> campaign::fuzz::WatchdogFallback {
        std::sync::Arc::new(move |summary| match self {
            WatchdogReport::Summary(format) => print_summary(format, &summary),
            WatchdogReport::With(print) => print(summary),
        })
    }
}

/// The progress bar of `fuzz`'s plain rounds.
struct Bar<'a> {
    pb: &'a indicatif::ProgressBar,
    seconds: f64,
}

impl FuzzObserver for Bar<'_> {
    fn round(&self, elapsed: f64, acc: &Accumulator<'_>) {
        self.pb
            .set_position((elapsed * 10.0).min(self.seconds * 10.0) as u64);
        self.pb.set_message(format!(
            "{} trials, {} hang(s), {} stale read(s)",
            acc.summary.trials,
            acc.hangs_seen(),
            acc.stale_seen()
        ));
    }

    fn stuck(&self) {
        self.pb.finish_and_clear();
    }

    fn window_rounds(&self) {
        self.pb.set_message("proxy-window rounds (no delays)");
    }
}

/// [`campaign::fuzz::fuzz_program`] with its progress on a bar.
pub fn fuzz_program(
    gpu: &Gpu,
    file: &SourceFile,
    program: &Program,
    lowered: &Lowered,
    plan: &FuzzPlan<'_>,
    pb: Option<&indicatif::ProgressBar>,
) -> Result<FuzzSummary, FuzzError> {
    let bar = pb.map(|pb| Bar {
        pb,
        seconds: plan.seconds,
    });
    campaign::fuzz::fuzz_program(
        gpu,
        file,
        program,
        lowered,
        plan,
        bar.as_ref().map(|b| b as &dyn FuzzObserver),
    )
}

pub fn run(args: &FuzzArgs) -> Exit {
    if args.app.app {
        return crate::cmd::fuzz_app::run(args);
    }
    if !args.app.command.is_empty() {
        eprintln!("error: a program after `--` is run only with --app");
        return Exit::BadInput;
    }
    let name = args.file.display().to_string();
    let not_run = NotRun {
        format: args.format,
        file: &name,
    };
    let (file, program) = match crate::cmd::extract::load_any(&args.file, &args.params, &args.ptx) {
        Ok(x) => x,
        Err((code, msg)) => return not_run.print("bad-input", &msg, code),
    };
    let lowered = match lower_for_fuzz(&program, &file, args.proxy_window) {
        Ok(l) => l,
        Err(e) => {
            report_lower_error(&file, &e);
            return not_run.print("not-lowered", &e.message, Exit::BadInput);
        }
    };
    let gpu = match open_gpu(&args.gpu, &not_run) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let show = !args.quiet && args.format == Format::Human;
    let pb = show.then(|| {
        let pb = indicatif::ProgressBar::new((args.seconds * 10.0).max(1.0) as u64);
        pb.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{bar:30}] {elapsed} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        pb
    });
    let plan = FuzzPlan {
        gpu: GpuOptions::from(&args.gpu),
        blocks: args.blocks,
        seed: args.seed,
        seconds: args.seconds,
        proxy_window: args.proxy_window,
        window_rounds: args.baseline.is_none(),
        params: &args.params,
        watchdog: WatchdogReport::Summary(args.format).into_watchdog(),
        exit_code: Exit::Findings as i32,
    };
    let summary = fuzz_program(&gpu, &file, &program, &lowered, &plan, pb.as_ref());
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    let mut summary = match summary {
        Ok(s) => s,
        Err(FuzzError::NotLowered(e)) => {
            report_lower_error(&file, &e);
            return not_run.print("not-lowered", &e.message, Exit::BadInput);
        }
        Err(FuzzError::Run(e)) => return fail_as(e, Some(&not_run)),
    };
    if crate::cmd::extract::is_ptx(&args.file) {
        // A replay extracts the `.ptx` again: with the same options, or it asks for them.
        let flags: String = args.ptx.to_args().iter().map(|a| format!(" {a}")).collect();
        summary.replay_flags.push_str(&flags);
        if let Some(w) = summary.proxy_window.as_mut() {
            w.replay_flags.push_str(&flags);
        }
    }
    if summary.is_stuck() {
        // No baseline after a stuck launch: the report, then the end of the process, which
        // is what frees the GPU of the stuck kernel.
        print_summary(args.format, &summary);
        end_process(Exit::Findings as i32);
    }
    let blocks = summary.blocks_per_round;
    let baseline = match &args.baseline {
        Some(path) => match run_baseline(&gpu, args, path, lowered.block, blocks, &summary) {
            Ok(b) => Some(b),
            Err(code) => return code,
        },
        None => None,
    };
    match args.format {
        Format::Human => {
            print!("{}", render_human(&summary));
            if let Some(b) = &baseline {
                println!(
                    "  baseline {}: {} launches x {} blocks, {} trips: {:.3e} barrier phases/s ({} hangs, {} races)",
                    b.file, b.launches, blocks, b.iters, b.phases_per_second, b.hangs, b.races
                );
                println!("  generated / baseline throughput: {:.2}", b.ratio);
            }
        }
        Format::Json => {
            let mut v = serde_json::to_value(&summary).expect("summary serializes");
            if let Some(b) = &baseline {
                v["baseline"] = serde_json::to_value(b).expect("baseline serializes");
            }
            println!(
                "{}",
                serde_json::to_string_pretty(&v).expect("JSON values serialize")
            );
        }
    }
    if summary.clean() {
        Exit::Clean
    } else {
        Exit::Findings
    }
}

/// Print a fuzz summary (no baseline) as `format` asks.
pub fn print_summary(format: Format, summary: &FuzzSummary) {
    match format {
        Format::Human => print!("{}", render_human(summary)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(summary).expect("JSON values serialize")
        ),
    }
}

/// A proxy-window part inside the plain part it follows (`outer`), or the part alone.
#[cfg(test)]
mod tests {
    use super::*;
    use gpu_harness::decode::{Event, EventKind, LaunchResult, OutLayout};
    use gpu_harness::lower::{self, LowerOptions, Mode};
    use gpu_harness::run::StuckReadback;

    /// Results of several kernels decode to rows that name the statement and its kernel
    /// (statement ids run across kernels), without a GPU.
    #[test]
    fn several_kernels_decode_per_kernel_statement() {
        let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join("corpus/domains/memsync_domains.phase");
        let file = SourceFile::new(
            "memsync_domains.phase",
            std::fs::read_to_string(path).expect("corpus file"),
        );
        let program = protocols::load(&file, &[]).expect("loads");
        let lowered = lower::lower(
            &program,
            Some(&file),
            &LowerOptions {
                mode: Mode::Fuzz,
                ..Default::default()
            },
        )
        .expect("lowers");
        let nstmt = lowered.stmts.len();
        // Statement 3 = `load_acquire flag scope gpu`, 4 = `load data`, both in kernel `comm`
        // (0-1 `compute`'s statements, 2 its `finish`).
        let mut r = LaunchResult {
            threads_done: 4 * 64,
            apart: 1,
            counts: vec![vec![0; nstmt]; 4],
            first_block: vec![vec![None; nstmt]; 4],
            ..Default::default()
        };
        r.counts[0][3] = 1;
        r.first_block[0][3] = Some(3);
        let event = |kind, stmt, block, b| Event {
            kind,
            stmt,
            tid: 0,
            cta: 0,
            block,
            a: 0,
            b,
            raw: 0,
        };
        r.events = vec![
            event(EventKind::Hang, 3, 3, 0),
            // `pc_load` detector 3: never written although published.
            event(EventKind::Race, 4, 1, 3),
        ];
        let mut acc = Accumulator::new(&file, &program, &lowered);
        acc.add(&r, 7, 4, 0.5);
        let s = acc.finish(1.0);
        assert_eq!(s.trials, 4);
        assert_eq!(
            s.threads_missing, 0,
            "64 threads per trial: one block of each kernel"
        );
        assert_eq!(s.blocks_apart, 1);
        assert_eq!(s.hangs.len(), 1);
        assert_eq!(s.hangs[0].statement, "load_acquire flag scope gpu");
        assert_eq!(s.hangs[0].line, 17);
        assert_eq!(s.hangs[0].kernel.as_deref(), Some("comm"));
        assert!(s.hangs[0].observed.contains("no release seen"));
        assert_eq!(s.stale_reads.len(), 1);
        let row = &s.stale_reads[0];
        assert_eq!(
            (row.buffer.as_str(), row.statement.as_str()),
            ("data", "load data")
        );
        assert_eq!(row.kernel.as_deref(), Some("comm"));
        assert_eq!(row.first, SeenAt { seed: 7, block: 1 });
        assert!(row.other.contains("never written"), "{}", row.other);
        let text = render_human(&s);
        assert!(
            text.contains("throughput: no barrier-object phases completed"),
            "{text}"
        );
        assert!(text.contains("kernels launched concurrently"), "{text}");
        assert!(text.contains("comm (domain remote, 32 threads)"), "{text}");
        assert!(text.contains("kernel: comm"), "{text}");
        assert!(text.contains("1 block(s) ran without"), "{text}");
        let json = serde_json::to_value(&s).expect("serializes");
        assert_eq!(json["stale_reads"][0]["kernel"], "comm");
        assert_eq!(json["kernels"][1]["domain"], "remote");
    }

    /// Rounds of the proxy-window kernel are a part of their own: counted in `clean`, rendered
    /// after the plain rounds, with the flags that replay them.
    #[test]
    fn proxy_window_rounds_render_as_their_own_part() {
        let window = FuzzSummary {
            rounds: 2,
            trials: 2112,
            first_seed: 42,
            blocks_per_round: 1056,
            replay_flags: " --proxy-window --delay-ns 0 --delay-every 1 --wait-cycles 4000000"
                .into(),
            stale_reads: vec![StaleRow {
                buffer: "c_smem".into(),
                line: 20,
                statement: "tma_store c_smem[j]".into(),
                count: 3,
                first: SeenAt { seed: 43, block: 7 },
                other: "line 16 (`write c_smem[tid]`) by t0, still writing".into(),
                kernel: None,
            }],
            ..Default::default()
        };
        let mut s = FuzzSummary {
            file: "fail.phase".into(),
            trials: 6336,
            blocks_per_round: 1056,
            replay_flags: " --delay-ns 200 --delay-every 1 --wait-cycles 4000000".into(),
            ..Default::default()
        };
        assert!(s.clean());
        s.proxy_window = Some(Box::new(window));
        assert!(!s.clean());
        let text = render_human(&s);
        assert!(text.contains("  stale reads: none"), "{text}");
        assert!(text.contains("proxy-window rounds"), "{text}");
        assert!(text.contains("    stale reads (accesses"), "{text}");
        assert!(
            text.contains(
                "replay a round: phasecheck fuzz fail.phase --proxy-window --delay-ns 0 \
                 --delay-every 1 --wait-cycles 4000000 --seed SEED --blocks 1056 --seconds 0"
            ),
            "{text}"
        );
        assert!(
            !text.contains("--delay-ns 200"),
            "the clean part has no replay line: {text}"
        );
        let json = serde_json::to_value(&s).expect("serializes");
        assert_eq!(json["proxy_window"]["stale_reads"][0]["line"], 20);
        assert!(json.get("replay_flags").is_none());
    }

    /// A launch stuck in a hardware collective is a finding: the rounds before it, and where
    /// its threads were blocked (read back from their position words), in both outputs.
    #[test]
    fn a_stuck_launch_reports_where_its_threads_were_blocked() {
        use gpu_harness::decode::ThreadAt;
        let text = "protocol stuck\nparam N = 1\nblock 64\nsyncthreads\nif tid < 32 {\n  \
                    bar_sync 1, 64\n}\n";
        let file = SourceFile::new("stuck.phase", text);
        let program = protocols::load(&file, &[]).expect("loads");
        let lowered =
            lower::lower(&program, Some(&file), &LowerOptions::default()).expect("lowers");
        let bar = lowered
            .stmts
            .iter()
            .find(|s| s.keyword == "bar_sync")
            .expect("a bar_sync")
            .id;
        let nstmt = lowered.stmts.len();
        let mut acc = Accumulator::new(&file, &program, &lowered);
        acc.summary.file = "stuck.phase".into();
        acc.summary.blocks_per_round = 4;
        acc.summary.first_seed = 7;
        acc.summary.replay_flags = " --delay-ns 200 --delay-every 1 --wait-cycles 4000000".into();
        // One round that finished (4 trials), then the round of seed 8 stuck: blocks 1 and 2
        // with warp 0 at the bar_sync, block 3 never started.
        let done = LaunchResult {
            threads_done: 4 * 64,
            counts: vec![vec![0; nstmt]; 4],
            first_block: vec![vec![None; nstmt]; 4],
            ..Default::default()
        };
        acc.add(&done, 7, 4, 0.01);
        let mut positions = vec![ThreadAt::Done.encode(); lowered.pos_words(4)];
        for b in [1usize, 2] {
            for t in 0..32 {
                positions[b * 64 + t] = ThreadAt::Running(Some((bar, 0))).encode();
            }
        }
        for w in &mut positions[3 * 64..] {
            *w = ThreadAt::NotStarted.encode();
        }
        let stuck = StuckLaunch::bare(35.0, 4, 8);
        let mut failed = acc.clone();
        let read = StuckReadback {
            out: OutLayout::new(&lowered).initial(&lowered),
            positions,
        };
        acc.add_stuck(&stuck, Ok(&read));
        let s = acc.finish(36.0);
        assert!(!s.clean());
        assert!(s.is_stuck());
        assert_eq!((s.rounds, s.trials), (1, 4), "the trials before it");
        assert_eq!(s.hangs.len(), 1);
        let row = &s.hangs[0];
        assert!(row.stuck);
        assert_eq!((row.line, row.count, row.trials), (6, 64, Some(2)));
        assert_eq!(row.first, SeenAt { seed: 8, block: 1 });
        assert_eq!(row.statement, "bar_sync 1, 64");
        let text = render_human(&s);
        assert!(
            text.contains("hangs (expired bounded waits): none"),
            "{text}"
        );
        assert!(
            text.contains("hang in a hardware collective: the round of seed 8 (4 blocks) did not finish within 35.0 s"),
            "{text}"
        );
        assert!(
            text.contains(
                "observed: t0-t31 of block 1 blocked here (its execution #1 of the statement)"
            ),
            "{text}"
        );
        assert!(
            text.contains("that round: 1 of 4 trials finished, 2 stuck, 1 never started"),
            "{text}"
        );
        assert!(
            text.contains("replay the stuck round: phasecheck fuzz stuck.phase --delay-ns 200 --delay-every 1 --wait-cycles 4000000 --seed 8 --blocks 4 --seconds 0"),
            "{text}"
        );
        assert!(!text.contains("nothing seen"), "{text}");
        let json = serde_json::to_value(&s).expect("serializes");
        assert_eq!(json["hangs"][0]["stuck"], true);
        assert_eq!(json["hangs"][0]["trials"], 2);
        assert_eq!(json["stuck"]["seed"], 8);
        assert_eq!(json["stuck"]["positions_read"], true);
        assert_eq!(json["stuck"]["trials_stuck"], 2);
        assert_eq!(json["trials"], 4);
        // Nothing read back: the launch is still reported, saying why nothing more is known.
        failed.add_stuck(&stuck, Err("the copy did not complete within 5.0 s".into()));
        let s = failed.finish(36.0);
        assert!(!s.clean() && s.hangs.is_empty());
        let text = render_human(&s);
        assert!(
            text.contains("where the threads were is not known: the copy did not complete"),
            "{text}"
        );
        let json = serde_json::to_value(&s).expect("serializes");
        assert_eq!(json["stuck"]["positions_read"], false);
        assert!(json["stuck"].get("trials_done").is_none());
    }

    /// One kernel: the JSON keeps its former shape (no `kernels`, `blocks_apart` or `kernel`).
    #[test]
    fn one_kernel_keeps_the_json_shape() {
        let s = FuzzSummary {
            hangs: vec![HangRow {
                statement: "wait full parity 0".into(),
                line: 3,
                count: 1,
                first: SeenAt { seed: 1, block: 0 },
                observed: String::new(),
                kernel: None,
                stuck: false,
                trials: None,
            }],
            ..Default::default()
        };
        let json = serde_json::to_value(&s).expect("serializes");
        assert!(json["hangs"][0].get("stuck").is_none());
        assert!(json["hangs"][0].get("trials").is_none());
        assert!(json.get("stuck").is_none());
        assert!(json.get("kernels").is_none());
        assert!(json.get("blocks_apart").is_none());
        assert!(json["hangs"][0].get("kernel").is_none());
    }
}
