//! Running the application with its kernel swapped for the instrumented copy
//! (`phasecheck fuzz --app`), and what the runs showed, per instrumented point.
//!
//! Each run starts the application with the injection library (`capture-inject`, through
//! `CUDA_INJECTION64_PATH`) in its swap mode; the library writes a report file
//! ([`capture::fuzz::Event`]). An outer watchdog kills an application that outlives its time
//! (the library's own watchdog ends the process when one batch of launches hangs).

use crate::{Instrumented, Point};
use capture::fuzz::{Event, StuckThread, parse_report};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One `fuzz --app` campaign.
#[derive(Clone, Debug)]
pub struct AppPlan {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The kernel to swap (mangled name, as in the PTX).
    pub kernel: String,
    /// Where the instrumented PTX is written for the library to load.
    pub ptx_path: PathBuf,
    /// Runs of the application.
    pub runs: u32,
    /// Seed of the first launch (later launches and runs follow on).
    pub seed: u32,
    /// Launches of the instrumented kernel per launch the application makes.
    pub repeat: u64,
    /// How long one batch of launches may take before it counts as a hang.
    pub watchdog: Duration,
    /// How long one run of the application may take in all.
    pub run_timeout: Duration,
}

/// What one run left.
#[derive(Clone, Debug)]
pub struct AppRun {
    pub exit_code: Option<i32>,
    /// Killed by the outer watchdog.
    pub killed: bool,
    pub events: Vec<Event>,
    pub seconds: f64,
}

/// Stuck threads at one point, over all runs.
#[derive(Clone, Debug)]
pub struct StuckAt<'a> {
    pub point: Option<&'a Point>,
    pub id: u32,
    pub threads: Vec<StuckThread>,
}

/// The campaign's result.
#[derive(Clone, Debug, Default)]
pub struct AppSummary {
    pub runs: Vec<AppRun>,
    /// Launches of the instrumented kernel that completed.
    pub launches: u64,
    /// Blocks those launches ran.
    pub blocks: u64,
    /// Launches with at least one stuck thread (completed or hung).
    pub stuck_launches: u64,
    pub hangs: u64,
    pub errors: Vec<String>,
}

impl AppSummary {
    pub fn add(&mut self, run: AppRun) {
        let mut seeds_stuck: BTreeMap<u32, ()> = BTreeMap::new();
        for e in &run.events {
            match e {
                Event::Batch {
                    launches,
                    blocks,
                    stuck,
                    ..
                } => {
                    self.launches += launches;
                    self.blocks += launches * blocks;
                    for s in stuck {
                        seeds_stuck.insert(s.seed, ());
                    }
                }
                Event::Hang { stuck, .. } => {
                    self.hangs += 1;
                    for s in stuck {
                        seeds_stuck.insert(s.seed, ());
                    }
                }
                Event::Error { message } => self.errors.push(message.clone()),
                Event::Loaded { .. } => {}
            }
        }
        self.stuck_launches += seeds_stuck.len() as u64;
        self.runs.push(run);
    }

    /// Every stuck thread (from batches and hangs), grouped by point, in point order.
    pub fn stuck<'a>(&self, inst: &'a Instrumented) -> Vec<StuckAt<'a>> {
        let mut by: BTreeMap<u32, Vec<StuckThread>> = BTreeMap::new();
        for r in &self.runs {
            for e in &r.events {
                let list = match e {
                    Event::Batch { stuck, .. } | Event::Hang { stuck, .. } => stuck,
                    _ => continue,
                };
                for s in list {
                    by.entry(s.point).or_default().push(s.clone());
                }
            }
        }
        by.into_iter()
            .map(|(id, threads)| StuckAt {
                point: inst.point(id),
                id,
                threads,
            })
            .collect()
    }

    /// Whether any run loaded the copy (else nothing was tested).
    pub fn loaded(&self) -> bool {
        self.runs
            .iter()
            .any(|r| r.events.iter().any(|e| matches!(e, Event::Loaded { .. })))
    }
}

/// Run the application once with the swap on; `report` is the report file to use.
pub fn run_once(plan: &AppPlan, run: u32, report: &Path) -> Result<AppRun, String> {
    let (program, args) = plan
        .command
        .split_first()
        .ok_or("no program to run: `phasecheck fuzz --app KERNEL.ptx -- ./app ARGS`")?;
    let inject = capture::record::find_inject()?;
    let inject = inject
        .canonicalize()
        .map_err(|e| format!("{}: {e}", inject.display()))?;
    std::fs::write(report, "").map_err(|e| format!("cannot write {}: {e}", report.display()))?;
    let abs = |p: &Path| {
        p.canonicalize()
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    let seed = plan.seed.wrapping_add(run.wrapping_mul(0x632B_E5AB)).max(1);
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("CUDA_INJECTION64_PATH", &inject)
        .env("PHASECHECK_FUZZ_PTX", abs(&plan.ptx_path)?)
        .env("PHASECHECK_FUZZ_KERNEL", &plan.kernel)
        .env("PHASECHECK_FUZZ_FILE", abs(report)?)
        .env("PHASECHECK_FUZZ_SEED", seed.to_string())
        .env("PHASECHECK_FUZZ_REPEAT", plan.repeat.to_string())
        .env(
            "PHASECHECK_FUZZ_WATCHDOG_MS",
            plan.watchdog.as_millis().to_string(),
        )
        .env_remove("PHASECHECK_CAPTURE_FILE")
        .stdin(Stdio::null());
    if let Some(c) = capture::record::find_cupti() {
        cmd.env("PHASECHECK_CUPTI", c);
    }
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let mut killed = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for {program}: {e}")),
        }
        if start.elapsed() > plan.run_timeout {
            let _ = child.kill();
            killed = true;
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(report)
        .map_err(|e| format!("cannot read {}: {e}", report.display()))?;
    Ok(AppRun {
        exit_code: status.and_then(|s| s.code()),
        killed,
        events: parse_report(&text)?,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// `0-127`, `128-255, 300`: thread indices as ranges.
pub fn ranges(mut v: Vec<u32>) -> String {
    v.sort_unstable();
    v.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_join_runs_of_indices() {
        assert_eq!(ranges(vec![3, 0, 1, 2, 7, 9, 8, 20]), "0-3, 7-9, 20");
        assert_eq!(ranges(vec![]), "");
    }

    #[test]
    fn a_summary_counts_launches_blocks_and_stuck_launches() {
        let st = |seed, point| StuckThread {
            block: [0, 0, 0],
            thread: [128, 0, 0],
            point,
            seed,
        };
        let mut s = AppSummary::default();
        s.add(AppRun {
            exit_code: Some(0),
            killed: false,
            seconds: 1.0,
            events: vec![
                Event::Loaded { kernel: "k".into() },
                Event::Batch {
                    first: 0,
                    launches: 10,
                    blocks: 4,
                    stuck_total: 3,
                    stuck: vec![st(5, 2), st(5, 2), st(6, 1)],
                    seconds: 0.1,
                },
            ],
        });
        assert!(s.loaded());
        assert_eq!((s.launches, s.blocks, s.stuck_launches), (10, 40, 2));
        let inst = Instrumented {
            ptx: String::new(),
            kernels: vec![],
            points: vec![],
        };
        let by = s.stuck(&inst);
        assert_eq!(
            by.iter()
                .map(|b| (b.id, b.threads.len()))
                .collect::<Vec<_>>(),
            [(1, 1), (2, 2)]
        );
    }
}
