//! `phasecheck fuzz --app KERNEL.ptx -- ./app ARGS` (issue 27): fuzz the user's real kernel on
//! the GPU, not a model of it. The kernel's PTX is instrumented (crate `instrument`: random
//! delays at each synchronization instruction, mbarrier waits bounded with stuck records),
//! and the application runs with its launches of that kernel swapped for the copy (the
//! injection library's swap mode), so the buffers, tensor maps and launch configuration are
//! the application's own. Reports the threads that stayed stuck, at their source lines, and
//! hangs the bounds cannot see (`bar.sync`, ...), which the watchdog reports.

use crate::args::{Exit, Format, FuzzArgs};
use crate::real_kernel::{RealKernelReport, instrument_real_kernel, verdict};
use clap::Args;
use instrument::PtxVersion;
use instrument::app::{AppPlan, AppSummary, ranges, run_once};
use std::fmt::Write;
use std::time::Duration;

#[derive(Args, Debug, Default)]
pub struct AppArgs {
    /// Fuzz the real kernel: FILE is its PTX (from the same compilation as the application),
    /// and the program after `--` is run with its launches of the kernel swapped for an
    /// instrumented copy (docs/gpu.md, "Real kernels").
    #[arg(long)]
    pub app: bool,
    /// With --app: runs of the application.
    #[arg(long, default_value_t = 1, requires = "app")]
    pub runs: u32,
    /// With --app: launches of the instrumented kernel for each launch the application makes
    /// (the repeats reuse its arguments: the kernel must be safe to run again on them, as a
    /// GEMM writing D from A and B is).
    #[arg(long, default_value_t = 1, requires = "app")]
    pub repeat: u64,
    /// With --app: chance of a delay at each synchronization instruction, in 256ths.
    #[arg(long, default_value_t = 48, requires = "app")]
    pub delay_chance: u32,
    /// With --app: the longest delay, in nanoseconds.
    #[arg(long, default_value_t = 2047, requires = "app")]
    pub delay_max_ns: u32,
    /// With --app: how long a thread may fail one mbarrier wait before it counts as stuck.
    #[arg(long, default_value_t = 200, requires = "app")]
    pub wait_bound_ms: u32,
    /// With --app: how long one batch of launches may take before it counts as a hang.
    #[arg(long, default_value_t = 20.0, requires = "app")]
    pub watchdog: f64,
    /// With --app: how long one run of the application may take in all.
    #[arg(long, default_value_t = 600.0, requires = "app")]
    pub run_timeout: f64,
    /// With --app: keep the instrumented PTX here (default: a temporary file).
    #[arg(long, requires = "app")]
    pub keep_ptx: Option<std::path::PathBuf>,
    /// With --app: lower the PTX's `.version` to this one when it is newer (e.g. `9.0` for a
    /// CUDA 13.0 driver, whose JIT refuses a newer version: Triton stamps its PTX with its own
    /// ptxas's version). The JIT still refuses an instruction the version does not have.
    #[arg(long, value_name = "MAJOR.MINOR", requires = "app")]
    pub max_ptx_version: Option<PtxVersion>,
    /// The program and its arguments, after `--` (with --app).
    #[arg(last = true, value_name = "PROGRAM ARGS")]
    pub command: Vec<String>,
}

pub fn run(args: &FuzzArgs) -> Exit {
    let a = &args.app;
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        Exit::BadInput
    };
    if a.command.is_empty() {
        return fail(
            "--app needs the program to run after `--`: \
                     `phasecheck fuzz --app KERNEL.ptx -- ./app ARGS`"
                .into(),
        );
    }
    let text = match std::fs::read_to_string(&args.file) {
        Ok(t) => t,
        Err(e) => return fail(format!("{}: {e}", args.file.display())),
    };
    let opts = instrument::Options {
        delay_chance: a.delay_chance,
        delay_max_ns: a.delay_max_ns,
        wait_bound_us: a.wait_bound_ms.saturating_mul(1000),
    };
    let real =
        match instrument_real_kernel(&text, &opts, args.ptx.kernel.as_deref(), a.max_ptx_version) {
            Ok(r) => r,
            Err(e) => return fail(format!("{}: {e}", args.file.display())),
        };
    if let Some(was) = real.lowered_from {
        eprintln!(
            "note: the instrumented copy's .version {was} is lowered to {} for the driver's JIT",
            a.max_ptx_version.map(|v| v.to_string()).unwrap_or_default()
        );
    }
    let (inst, kernel) = (real.instrumented, real.kernel);
    let dir = std::env::temp_dir().join(format!("phasecheck-fuzz-app-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return fail(format!("{}: {e}", dir.display()));
    }
    let ptx_path = a
        .keep_ptx
        .clone()
        .unwrap_or_else(|| dir.join("instrumented.ptx"));
    if let Err(e) = std::fs::write(&ptx_path, &inst.ptx) {
        return fail(format!("{}: {e}", ptx_path.display()));
    }
    let plan = AppPlan {
        command: a.command.clone(),
        kernel: kernel.clone(),
        ptx_path,
        runs: a.runs.max(1),
        seed: args.seed.unwrap_or(1) as u32,
        repeat: a.repeat.max(1),
        watchdog: Duration::from_secs_f64(a.watchdog.max(0.1)),
        run_timeout: Duration::from_secs_f64(a.run_timeout.max(1.0)),
    };
    let mut sum = AppSummary::default();
    for r in 0..plan.runs {
        let report = dir.join(format!("report-{r}.jsonl"));
        match run_once(&plan, r, &report) {
            Ok(run) => {
                let stop = run.killed
                    || run.events.iter().any(|e| {
                        matches!(
                            e,
                            capture::fuzz::Event::Hang { .. } | capture::fuzz::Event::Error { .. }
                        )
                    });
                sum.add(run);
                if stop {
                    break;
                }
            }
            Err(e) => return fail(e),
        }
    }
    if a.keep_ptx.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let verdict = verdict(&sum);
    if args.format == Format::Json {
        print_json(args, &inst, &kernel, &sum);
    } else {
        print!("{}", render(args, &inst, &kernel, &sum, verdict, &opts));
    }
    match verdict {
        "clean" => Exit::Clean,
        "not-run" | "error" => Exit::BadInput,
        _ => Exit::Findings,
    }
}

fn render(
    args: &FuzzArgs,
    inst: &instrument::Instrumented,
    kernel: &str,
    s: &AppSummary,
    verdict: &str,
    opts: &instrument::Options,
) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "fuzz --app {} (the real kernel, instrumented: {} points, {} bounded waits)",
        args.file.display(),
        inst.points.len(),
        inst.bounded_waits()
    );
    let _ = writeln!(o, "  kernel {kernel}");
    let _ = writeln!(o, "  program: {}", args.app.command.join(" "));
    let _ = writeln!(
        o,
        "  {} run(s), {} launch(es) of the instrumented kernel ({} blocks), delays {}/256 up to {} ns, wait bound {} ms",
        s.runs.len(),
        s.launches,
        s.blocks,
        opts.delay_chance,
        opts.delay_max_ns,
        opts.wait_bound_us / 1000
    );
    for (i, r) in s.runs.iter().enumerate() {
        let how = match (r.killed, r.exit_code) {
            (true, _) => "killed by the watchdog".to_string(),
            (false, Some(c)) => format!("exit {c}"),
            (false, None) => "killed by a signal".to_string(),
        };
        let _ = writeln!(o, "  run {i}: {how} after {:.1} s", r.seconds);
    }
    for e in &s.errors {
        let _ = writeln!(o, "  error: {e}");
    }
    match verdict {
        "clean" => {
            let _ = writeln!(
                o,
                "result: clean: no thread stuck and no hang in {} launches ({} blocks)",
                s.launches, s.blocks
            );
        }
        "not-run" => {
            let _ = writeln!(
                o,
                "result: not run: the program never launched {kernel} (nothing was tested)"
            );
        }
        "error" => {
            let _ = writeln!(o, "result: error (above)");
        }
        "program-failed" => {
            let _ = writeln!(
                o,
                "result: PROGRAM FAILED: no thread stuck and no hang in {} launches, but the \
                 program did not exit 0 while it ran the instrumented kernel (its own check of \
                 the results, or a crash: see its output above)",
                s.launches
            );
        }
        _ => {
            let _ = writeln!(
                o,
                "result: {}: {} launch(es) with stuck threads{}",
                if verdict == "hang" { "HANG" } else { "STUCK" },
                s.stuck_launches,
                if s.hangs > 0 || s.runs.iter().any(|r| r.killed) {
                    ", and a batch that never finished (watchdog)"
                } else {
                    ""
                }
            );
        }
    }
    for at in s.stuck(inst) {
        let blocks: std::collections::BTreeSet<[u32; 3]> =
            at.threads.iter().map(|t| t.block).collect();
        let mut seeds: Vec<u32> = at.threads.iter().map(|t| t.seed).collect();
        seeds.sort_unstable();
        seeds.dedup();
        let tids = ranges(at.threads.iter().map(|t| t.thread[0]).collect());
        match at.point {
            Some(p) => {
                let _ = writeln!(
                    o,
                    "  stuck at {} (PTX line {}: `{}`): {} thread(s) in {} block(s), tid {}",
                    p.source.as_deref().unwrap_or("no line information"),
                    p.ptx_line,
                    p.text,
                    at.threads.len(),
                    blocks.len(),
                    tids
                );
                if p.stack.len() > 1 {
                    let _ = writeln!(o, "    inline stack: {}", p.stack.join(" > "));
                }
            }
            None => {
                let _ = writeln!(o, "  stuck at unknown point {}", at.id);
            }
        }
        let shown: Vec<String> = seeds.iter().take(5).map(u32::to_string).collect();
        let _ = writeln!(
            o,
            "    seeds {}{}",
            shown.join(", "),
            if seeds.len() > 5 { ", ..." } else { "" }
        );
    }
    o
}

fn print_json(args: &FuzzArgs, inst: &instrument::Instrumented, kernel: &str, s: &AppSummary) {
    let r = RealKernelReport::new(
        args.file.display().to_string(),
        kernel,
        args.app.command.clone(),
        inst,
        s,
    );
    println!(
        "{}",
        serde_json::to_string_pretty(&r).expect("the report serializes")
    );
}
