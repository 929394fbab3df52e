//! `fuzz` as a function that returns a report value: [`fuzz_text`] / [`fuzz`] run the GPU
//! fuzz campaign ([`campaign::fuzz::fuzz_program`]) and return its [`FuzzSummary`];
//! [`fuzz_kernel`] is the CUDA kernel that campaign launches, made without a GPU.

use crate::checks::Error;
use campaign::fuzz::{FuzzError, FuzzPlan, FuzzSummary, GpuOptions, fuzz_program, lower_for_fuzz};
use gpu_harness::lower::Lowered;
use gpu_harness::run::Gpu;
use protocols::SourceFile;
use protocols::ir::Program;
use std::path::Path;

/// The options of [`fuzz`]: those of `phasecheck fuzz` (same defaults).
#[derive(Clone, Debug)]
pub struct FuzzOptions {
    /// Parameter overrides, `("K", 64)` for `--param K=64`.
    pub params: Vec<(String, i64)>,
    /// How long to keep launching rounds, in seconds.
    pub seconds: f64,
    /// Blocks (trials) per round (None: 8 per multiprocessor).
    pub blocks: Option<u32>,
    /// Seed of the first round (None: from the clock).
    pub seed: Option<u64>,
    /// Device, delays, wait budget, launch timeout.
    pub gpu: GpuOptions,
    /// Lower the kernel for the proxy window (`--proxy-window`).
    pub proxy_window: bool,
}

impl Default for FuzzOptions {
    fn default() -> Self {
        FuzzOptions {
            params: Vec::new(),
            seconds: 10.0,
            blocks: None,
            seed: None,
            gpu: GpuOptions::default(),
            proxy_window: false,
        }
    }
}

fn load(name: &str, text: &str, params: &[(String, i64)]) -> Result<(SourceFile, Program), Error> {
    let file = SourceFile::new(name, text);
    let program = protocols::load(&file, params).map_err(|errors| Error {
        message: protocols::render::render(&errors, false, 100),
    })?;
    Ok((file, program))
}

fn lowered(file: &SourceFile, program: &Program, proxy_window: bool) -> Result<Lowered, Error> {
    lower_for_fuzz(program, file, proxy_window).map_err(|e| Error {
        message: format!(
            "{}: cannot be lowered to a fuzzing kernel: {}",
            file.name, e.message
        ),
    })
}

/// The CUDA stress kernel `fuzz` launches for the protocol `text` (no GPU needed): its
/// source, block and cluster size, and the statements its counters are indexed by.
///
/// ```
/// use phasecheck_api::{FuzzOptions, fuzz_kernel};
/// let text = "protocol p\nblock 2\nmbarrier bar\nif tid == 0 { init bar, 2 }\nsyncthreads\n\
///             arrive bar\nwait bar parity 0\n";
/// let kernel = fuzz_kernel("p.phase", text, &FuzzOptions::default()).unwrap();
/// assert_eq!(kernel.block, 2);
/// assert!(kernel.source.contains("__global__"));
/// assert!(kernel.stmts.iter().any(|s| s.keyword == "wait"));
/// assert!(fuzz_kernel("bad.phase", "protocol p\nblock 0\n", &FuzzOptions::default()).is_err());
/// ```
pub fn fuzz_kernel(name: &str, text: &str, options: &FuzzOptions) -> Result<Lowered, Error> {
    let (file, program) = load(name, text, &options.params)?;
    lowered(&file, &program, options.proxy_window)
}

/// Fuzz the protocol `text` on the GPU for `options.seconds` and return the summary: hangs per
/// statement, stale reads per buffer and statement, throughput, the first seed of each.
/// A missing GPU or CUDA library, or a kernel NVRTC rejects, is an [`Error`].
///
/// A launch stuck in a hardware collective ends the run: the summary comes back with it
/// ([`FuzzSummary::is_stuck`]), and the stuck kernel holds the GPU until the process ends
/// (`gpu_harness::run::end_process`); should its read-back not return, the summary is
/// printed (JSON, to standard error) and the process ends with exit 1.
///
/// ```no_run
/// use phasecheck_api::{FuzzOptions, fuzz};
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/hazards/data-race/fail.phase");
/// let summary = fuzz(path.as_ref(), &FuzzOptions { seconds: 1.0, ..Default::default() }).unwrap();
/// assert!(!summary.clean());
/// ```
pub fn fuzz_text(name: &str, text: &str, options: &FuzzOptions) -> Result<FuzzSummary, Error> {
    if !(options.seconds.is_finite() && options.seconds >= 0.0) {
        return Err(Error {
            message: format!("seconds must be 0 or more, not {}", options.seconds),
        });
    }
    let (file, program) = load(name, text, &options.params)?;
    let lowered = lowered(&file, &program, options.proxy_window)?;
    let run_error = |e: gpu_harness::run::RunError| Error {
        message: e.to_string(),
    };
    let gpu = Gpu::open(options.gpu.device).map_err(run_error)?;
    let plan = FuzzPlan {
        gpu: options.gpu.clone(),
        blocks: options.blocks,
        seed: options.seed,
        seconds: options.seconds,
        proxy_window: options.proxy_window,
        window_rounds: true,
        params: &options.params,
        watchdog: std::sync::Arc::new(|summary: FuzzSummary| {
            if let Ok(json) = serde_json::to_string(&summary) {
                eprintln!("{json}");
            }
        }),
        exit_code: crate::args::Exit::Findings as i32,
    };
    fuzz_program(&gpu, &file, &program, &lowered, &plan, None).map_err(|e| match e {
        FuzzError::NotLowered(e) => Error {
            message: format!(
                "{name}: the proxy-window kernel cannot be lowered: {}",
                e.message
            ),
        },
        FuzzError::Run(e) => run_error(e),
    })
}

/// [`fuzz_text`] of a `.phase` file.
pub fn fuzz(path: &Path, options: &FuzzOptions) -> Result<FuzzSummary, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error {
        message: format!("cannot read {}: {e}", path.display()),
    })?;
    fuzz_text(&path.display().to_string(), &text, options)
}
