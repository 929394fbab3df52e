//! The user's real kernel, instrumented (issue 27), and the report of what its instrumented
//! copy showed: shared by `phasecheck fuzz --app` (the injection library swaps the kernel in an
//! application) and the Python package's `phasecheck.triton.fuzz` (Triton's launch hook swaps
//! the compiled kernel), so both read the same stuck records into the same report.

use instrument::app::{AppRun, AppSummary, ranges};
use instrument::{Instrumented, Options, PtxVersion};
use serde::Serialize;

/// The layout an instrumented copy shares with whatever launches it: the globals the host
/// writes (the seed, [`CFG_SYMBOL`]) and reads back (the stuck count and records).
pub use instrument::{CFG_SYMBOL, RECORD_WORDS, STUCK_CAPACITY, STUCK_COUNT_SYMBOL, STUCK_SYMBOL};

/// An instrumented copy of one kernel of a PTX module.
#[derive(Clone, Debug)]
pub struct RealKernel {
    pub instrumented: Instrumented,
    /// The kernel to swap (its `.entry` name).
    pub kernel: String,
    /// The module's `.version` when it was lowered to the driver's ([`instrument::cap_version`]).
    pub lowered_from: Option<PtxVersion>,
    pub options: Options,
}

/// Instrument `ptx` (crate `instrument`), pick the kernel (`wanted`: its name or a part of it;
/// `None`: the module's only kernel) and, with `max_version`, lower the `.version` to it (the
/// PTX lines keep their numbers).
pub fn instrument_real_kernel(
    ptx: &str,
    options: &Options,
    wanted: Option<&str>,
    max_version: Option<PtxVersion>,
) -> Result<RealKernel, String> {
    let (text, lowered_from) = match max_version {
        Some(max) => instrument::cap_version(ptx, max)?,
        None => (ptx.to_string(), None),
    };
    let instrumented = instrument::instrument(&text, options)?;
    let kernel = instrument::find_kernel(&instrumented, wanted)?.to_string();
    Ok(RealKernel {
        instrumented,
        kernel,
        lowered_from,
        options: options.clone(),
    })
}

/// `hang`, `stuck`, `program-failed` (the program's own check failed or it crashed while its
/// kernel was the instrumented copy: a wrong result, never a clean run), `error`, `not-run`,
/// `clean`.
pub fn verdict(s: &AppSummary) -> &'static str {
    let killed = s.runs.iter().any(|r| r.killed);
    if s.hangs > 0 || killed {
        "hang"
    } else if s.stuck_launches > 0 {
        "stuck"
    } else if !s.errors.is_empty() {
        "error"
    } else if !s.loaded() || s.launches == 0 {
        "not-run"
    } else if s.runs.iter().any(|r| r.exit_code != Some(0)) {
        "program-failed"
    } else {
        "clean"
    }
}

/// The report (`phasecheck fuzz --app --format json`, schema 1).
#[derive(Clone, Debug, Serialize)]
pub struct RealKernelReport {
    pub schema: u32,
    /// Always `real-kernel`: the result comes from the user's kernel, not from a model of it.
    pub source: &'static str,
    pub file: String,
    pub kernel: String,
    pub command: Vec<String>,
    pub verdict: &'static str,
    pub runs: usize,
    pub launches: u64,
    pub blocks: u64,
    pub stuck_launches: u64,
    pub hangs: u64,
    pub errors: Vec<String>,
    pub stuck: Vec<StuckReport>,
}

/// The threads stuck at one instrumented point.
#[derive(Clone, Debug, Serialize)]
pub struct StuckReport {
    pub point: u32,
    pub ptx_line: Option<u32>,
    pub instruction: Option<String>,
    /// The kernel's source line (from the PTX's `.loc`).
    pub source: Option<String>,
    pub stack: Vec<String>,
    pub threads: usize,
    pub blocks: usize,
    /// `%tid.x` of the stuck threads, as ranges (`128-255`).
    pub tids: String,
    pub seeds: Vec<u32>,
}

impl RealKernelReport {
    pub fn new(
        file: String,
        kernel: &str,
        command: Vec<String>,
        inst: &Instrumented,
        s: &AppSummary,
    ) -> RealKernelReport {
        let stuck = s
            .stuck(inst)
            .into_iter()
            .map(|at| {
                let blocks: std::collections::BTreeSet<[u32; 3]> =
                    at.threads.iter().map(|t| t.block).collect();
                let mut seeds: Vec<u32> = at.threads.iter().map(|t| t.seed).collect();
                seeds.sort_unstable();
                seeds.dedup();
                StuckReport {
                    point: at.id,
                    ptx_line: at.point.map(|p| p.ptx_line),
                    instruction: at.point.map(|p| p.text.clone()),
                    source: at.point.and_then(|p| p.source.clone()),
                    stack: at.point.map(|p| p.stack.clone()).unwrap_or_default(),
                    threads: at.threads.len(),
                    blocks: blocks.len(),
                    tids: ranges(at.threads.iter().map(|t| t.thread[0]).collect()),
                    seeds,
                }
            })
            .collect();
        RealKernelReport {
            schema: 1,
            source: "real-kernel",
            file,
            kernel: kernel.to_string(),
            command,
            verdict: verdict(s),
            runs: s.runs.len(),
            launches: s.launches,
            blocks: s.blocks,
            stuck_launches: s.stuck_launches,
            hangs: s.hangs,
            errors: s.errors.clone(),
            stuck,
        }
    }
}

impl RealKernel {
    /// The report of one run whose events (the report file's JSON Lines,
    /// [`capture::fuzz::Event`]) another launcher wrote: Python's Triton hook writes the same
    /// `loaded` / `batch` / `hang` / `error` events as the injection library.
    pub fn report_from_events(
        &self,
        file: String,
        command: Vec<String>,
        events: &str,
        seconds: f64,
    ) -> Result<RealKernelReport, String> {
        let mut sum = AppSummary::default();
        sum.add(AppRun {
            exit_code: Some(0),
            killed: false,
            events: capture::fuzz::parse_report(events)?,
            seconds,
        });
        Ok(RealKernelReport::new(
            file,
            &self.kernel,
            command,
            &self.instrumented,
            &sum,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel whose one mbarrier wait is bounded (the instrumenter's smallest input).
    const PTX: &str = r#".version 9.4
.target sm_90a
.address_size 64
.visible .entry k()
{
	.reg .pred %p<2>;
	.reg .b64 %rd<2>;
	.shared .align 8 .b64 bar;
	.file 1 "kernel.py"
	.loc 1 7 0
	mbarrier.init.shared.b64 [bar], 1;
	mov.b64 %rd1, 0;
LOOP:
	.loc 1 9 0
	mbarrier.try_wait.parity.shared.b64 %p1, [bar], 0;
	@!%p1 bra LOOP;
	ret;
}
"#;

    fn kernel() -> RealKernel {
        instrument_real_kernel(PTX, &Options::default(), None, Some("9.0".parse().unwrap()))
            .unwrap()
    }

    #[test]
    fn the_copy_is_lowered_to_the_driver_version_and_names_its_kernel() {
        let rk = kernel();
        assert_eq!(rk.kernel, "k");
        assert_eq!(
            rk.lowered_from.map(|v| v.to_string()).as_deref(),
            Some("9.4")
        );
        assert!(rk.instrumented.ptx.contains(".version 9.0"));
        assert!(!rk.instrumented.ptx.contains(".version 9.4"));
        assert_eq!(rk.instrumented.bounded_waits(), 1);
        let unlowered = instrument_real_kernel(PTX, &Options::default(), None, None).unwrap();
        assert!(unlowered.lowered_from.is_none());
        assert!(unlowered.instrumented.ptx.contains(".version 9.4"));
    }

    #[test]
    fn events_of_another_launcher_report_stuck_threads_at_their_source_line() {
        let rk = kernel();
        let wait = rk
            .instrumented
            .points
            .iter()
            .find(|p| p.kind == instrument::PointKind::BoundedWait)
            .unwrap();
        let events = format!(
            "{{\"event\":\"loaded\",\"kernel\":\"k\"}}\n\
             {{\"event\":\"batch\",\"first\":0,\"launches\":4,\"blocks\":2,\"stuck_total\":2,\
             \"stuck\":[{{\"block\":[1,0,0],\"thread\":[0,0,0],\"point\":{id},\"seed\":9}},\
             {{\"block\":[1,0,0],\"thread\":[1,0,0],\"point\":{id},\"seed\":9}}],\"seconds\":0.1}}\n",
            id = wait.id
        );
        let r = rk
            .report_from_events("k.ptx".into(), vec![], &events, 0.2)
            .unwrap();
        assert_eq!(r.verdict, "stuck");
        assert_eq!((r.launches, r.blocks, r.stuck_launches), (4, 8, 1));
        assert_eq!(r.stuck.len(), 1);
        assert_eq!(r.stuck[0].source.as_deref(), Some("kernel.py:9"));
        assert_eq!((r.stuck[0].tids.as_str(), r.stuck[0].blocks), ("0-1", 1));
        let clean = rk
            .report_from_events(
                "k.ptx".into(),
                vec![],
                "{\"event\":\"loaded\",\"kernel\":\"k\"}\n{\"event\":\"batch\",\"first\":0,\
                 \"launches\":4,\"blocks\":2,\"stuck_total\":0,\"stuck\":[],\"seconds\":0.1}\n",
                0.2,
            )
            .unwrap();
        assert_eq!(clean.verdict, "clean");
        let none = rk
            .report_from_events("k.ptx".into(), vec![], "", 0.0)
            .unwrap();
        assert_eq!(none.verdict, "not-run");
        assert!(
            rk.report_from_events("k.ptx".into(), vec![], "{\"event\":\"x\"}", 0.0)
                .is_err()
        );
    }
}
