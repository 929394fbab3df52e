//! The GPU fuzz campaign: rounds of many independent trials (one block or cluster each) with
//! fresh seeds, their results accumulated per statement and buffer ([`Accumulator`]) into a
//! [`FuzzSummary`], and the read-back of a launch stuck in a hardware collective. It returns
//! report values and prints nothing; `phasecheck fuzz` (crate `phasecheck-api`) renders them.

use gpu_harness::decode::{
    BarrierState, EventKind, LaunchResult, OutLayout, Positions, Stamp, thread_ranges,
};
use gpu_harness::lower::Lowered;
use gpu_harness::run::{
    Gpu, LaunchParams, LoadedKernel, RunError, StuckLaunch, StuckReadback, Watchdog,
};
use protocols::SourceFile;
use protocols::ir::Program;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

mod program;
pub use program::{
    FuzzError, FuzzObserver, FuzzPlan, WatchdogFallback, fuzz_program, lower_for_fuzz,
};

/// How long the read-back of a stuck launch may take (its copies normally take milliseconds),
/// and how much longer the watchdog gives it before the caller's fallback reports without it.
pub const READBACK_TIMEOUT: Duration = Duration::from_secs(5);
pub const READBACK_GRACE: Duration = Duration::from_secs(10);

/// How the kernels are launched: the knobs of `phasecheck fuzz`'s GPU options (`--device`,
/// `--delay-ns`, `--delay-every`, `--wait-cycles`, `--launch-timeout`), with their defaults.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuOptions {
    /// CUDA device ordinal.
    pub device: usize,
    /// Largest random delay before a statement, in nanoseconds (0: no delays).
    pub delay_ns: u32,
    /// One delay in every N delay points (statements).
    pub delay_every: u32,
    /// Clock cycles a wait may spin before it counts as a hang.
    pub wait_cycles: i64,
    /// Seconds to wait for one launch before it counts as stuck (None: 30 s plus the run).
    pub launch_timeout: Option<f64>,
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions {
            device: 0,
            delay_ns: 200,
            delay_every: 1,
            wait_cycles: 4_000_000,
            launch_timeout: None,
        }
    }
}

/// First line of a statement's source text.
pub fn stmt_text(file: &SourceFile, span: protocols::Span) -> String {
    file.text
        .get(span.start as usize..span.end as usize)
        .unwrap_or("")
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Where a hazard was first seen: the round's seed and the block (trial) in it.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct SeenAt {
    pub seed: u64,
    pub block: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct HangRow {
    pub statement: String,
    pub line: u32,
    pub count: u64,
    pub first: SeenAt,
    /// Observed state at the first recorded expiry, e.g. `current parity 1, waited parity 1`.
    pub observed: String,
    /// The kernel the statement is in (files with several `kernel` blocks only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// A hardware collective (`syncthreads`, `bar_sync`, `cluster_sync`, ...) in which threads
    /// were still blocked when their launch was given up (it cannot be bounded): `count` is
    /// the threads blocked there, `trials` the trials with one. Absent for expired bounded
    /// waits.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stuck: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trials: Option<u64>,
}

/// A launch that did not finish: a hardware collective was stuck. The run ends with it (the
/// GPU is freed by ending the process); the rounds before it are reported as usual, the
/// threads still blocked as `stuck` rows of `hangs`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StuckReport {
    /// The round that got stuck (replay it with `--seed SEED --blocks BLOCKS --seconds 0`).
    pub seed: u64,
    pub blocks: u32,
    /// How long the host waited for it.
    pub seconds: f64,
    /// Whether the position words (where each thread was) could be read back.
    pub positions_read: bool,
    /// Why they could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_error: Option<String>,
    /// That round's trials by outcome (when the positions were read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trials_done: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trials_stuck: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trials_not_started: Option<u64>,
    /// Threads still running that had entered no hardware collective.
    #[serde(skip_serializing_if = "is_zero")]
    pub running_elsewhere: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct StaleRow {
    pub buffer: String,
    pub statement: String,
    pub line: u32,
    pub count: u64,
    pub first: SeenAt,
    /// The other access, from the stamp it left (statement line, thread).
    pub other: String,
    /// The kernel the statement is in (files with several `kernel` blocks only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

/// One of several concurrently launched kernels (language.md §6).
#[derive(Clone, Debug, Serialize)]
pub struct KernelRow {
    pub name: String,
    pub domain: gpu_harness::lower::MemSyncDomain,
    pub threads_per_block: u32,
}

/// Totals of a fuzzing run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FuzzSummary {
    pub file: String,
    pub device: String,
    pub rounds: u64,
    pub trials: u64,
    pub blocks_per_round: u32,
    pub threads_per_block: u32,
    pub first_seed: u64,
    pub kernel_seconds: f64,
    pub wall_seconds: f64,
    pub barrier_phases: u64,
    pub phases_per_second: f64,
    pub hangs: Vec<HangRow>,
    pub stale_reads: Vec<StaleRow>,
    pub runaway_loops: u64,
    /// Trials where some thread did not reach the end (hangs make threads zombies; they still
    /// finish, so this counts threads missing for other reasons).
    pub threads_missing: u64,
    /// Several kernels: each launched concurrently, block i of each forming trial i.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<KernelRow>,
    /// Several kernels: blocks that stopped waiting for their trial's partner blocks and ran
    /// alone (the kernels were not co-resident; their waits may have expired for that reason).
    #[serde(skip_serializing_if = "is_zero")]
    pub blocks_apart: u64,
    /// What `phasecheck fuzz FILE` needs besides `--seed`/`--blocks` to replay a round of this
    /// run (parameters, delay and wait settings, the kernel variant).
    #[serde(skip)]
    pub replay_flags: String,
    /// Rounds of the proxy-window kernel (files with a `tma_store`): what they saw.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_window: Option<Box<FuzzSummary>>,
    /// The launch that got stuck in a hardware collective, which ended the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stuck: Option<StuckReport>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl FuzzSummary {
    /// Nothing seen, in this part and in the proxy-window rounds.
    pub fn clean(&self) -> bool {
        self.part_clean() && self.proxy_window.as_ref().is_none_or(|w| w.clean())
    }

    /// Nothing seen in this part's own rounds.
    pub fn part_clean(&self) -> bool {
        self.hangs.is_empty()
            && self.stale_reads.is_empty()
            && self.runaway_loops == 0
            && self.stuck.is_none()
    }

    /// The run, or its proxy-window part, ended with a stuck launch.
    pub fn is_stuck(&self) -> bool {
        self.stuck.is_some() || self.proxy_window.as_ref().is_some_and(|w| w.is_stuck())
    }
}

/// Accumulates launches.
#[derive(Clone)]
pub struct Accumulator<'a> {
    file: &'a SourceFile,
    program: &'a Program,
    lowered: &'a Lowered,
    hang: BTreeMap<u32, (u64, SeenAt, String)>,
    stale: BTreeMap<(u32, u32), (u64, SeenAt, String)>,
    stuck_rows: Vec<HangRow>,
    pub summary: FuzzSummary,
}

impl<'a> Accumulator<'a> {
    pub fn new(file: &'a SourceFile, program: &'a Program, lowered: &'a Lowered) -> Self {
        Accumulator {
            file,
            program,
            lowered,
            hang: BTreeMap::new(),
            stale: BTreeMap::new(),
            stuck_rows: Vec::new(),
            summary: FuzzSummary {
                file: file.name.clone(),
                threads_per_block: lowered.block,
                kernels: if lowered.kernels.len() > 1 {
                    lowered
                        .kernels
                        .iter()
                        .map(|k| KernelRow {
                            name: k.name.clone(),
                            domain: k.domain,
                            threads_per_block: k.block,
                        })
                        .collect()
                } else {
                    Vec::new()
                },
                ..Default::default()
            },
        }
    }

    fn line_of(&self, stmt: u32) -> u32 {
        self.lowered
            .stmts
            .get(stmt as usize)
            .map(|s| self.file.line_col(s.span.start).line)
            .unwrap_or(0)
    }

    /// The kernel of a statement, when the file has several.
    fn kernel_of(&self, stmt: u32) -> Option<String> {
        if self.lowered.kernels.len() < 2 {
            return None;
        }
        self.lowered
            .kernels
            .iter()
            .find(|k| k.stmts.contains(&stmt))
            .map(|k| k.name.clone())
    }

    fn text_of(&self, stmt: u32) -> String {
        self.lowered
            .stmts
            .get(stmt as usize)
            .map(|s| stmt_text(self.file, s.span))
            .unwrap_or_else(|| format!("statement #{stmt}"))
    }

    pub fn add(&mut self, r: &LaunchResult, seed: u64, blocks: u32, seconds: f64) {
        self.summary.rounds += 1;
        self.summary.trials += u64::from(blocks / self.lowered.cluster.max(1));
        self.summary.kernel_seconds += seconds;
        self.summary.barrier_phases += r.phases();
        self.summary.runaway_loops += r.runaway;
        self.summary.blocks_apart += r.apart;
        let expected = u64::from(blocks / self.lowered.cluster.max(1))
            * u64::from(self.lowered.threads_per_trial());
        self.summary.threads_missing += expected.saturating_sub(r.threads_done);
        self.add_events(r, seed);
    }

    /// The hangs and stale reads of a launch (also of a stuck one, read back while it ran).
    fn add_events(&mut self, r: &LaunchResult, seed: u64) {
        let kind_hang = 0;
        for (stmt, &n) in r.counts[kind_hang].iter().enumerate() {
            if n == 0 {
                continue;
            }
            let stmt = stmt as u32;
            let first = SeenAt {
                seed,
                block: r.first_block[kind_hang][stmt as usize].unwrap_or(0),
            };
            let observed = r
                .events
                .iter()
                .find(|e| e.kind == EventKind::Hang && e.stmt == stmt)
                .map(|e| self.describe_hang(e))
                .unwrap_or_default();
            let entry = self.hang.entry(stmt).or_insert((0, first, observed));
            entry.0 += n;
        }
        for e in r.events.iter().filter(|e| e.kind == EventKind::Race) {
            let other = Stamp::decode(e.a);
            let other_text = match other.stmt {
                Some(s) => format!(
                    "line {} (`{}`) by t{}{}{}",
                    self.line_of(s),
                    self.text_of(s),
                    other.tid,
                    if other.cta > 0 {
                        format!(" of cta {}", other.cta)
                    } else {
                        String::new()
                    },
                    if other.busy { ", still writing" } else { "" }
                ),
                // `pc_load` detector 3: a global read as never written after an acquire that
                // synchronized with a release published after a store of it.
                None if e.b & 0xffff_ffff == 3 => "none visible: the global still reads as never \
                     written, although this thread's acquire saw a release made after a store of it"
                    .into(),
                None => "an unwritten buffer".into(),
            };
            let entry = self
                .stale
                .entry((self.buffer_of(e.stmt), e.stmt))
                .or_insert((
                    0,
                    SeenAt {
                        seed,
                        block: e.block,
                    },
                    other_text,
                ));
            entry.0 += 1;
        }
        // Events beyond the buffer were counted on the device: use the exact counts.
        let _ = r.events_dropped;
    }

    /// The launch of `stuck` did not finish: add what could be read back of it (`read`: its
    /// result buffer and where each thread was) and say so. Its trials are not counted as a
    /// round; its expired bounded waits and stale reads are, and every hardware collective
    /// with threads still blocked in it becomes a `stuck` hang row.
    pub fn add_stuck(&mut self, stuck: &StuckLaunch, read: Result<&StuckReadback, String>) {
        let mut report = StuckReport {
            seed: stuck.seed,
            blocks: stuck.blocks,
            seconds: stuck.seconds,
            positions_read: false,
            read_error: None,
            trials_done: None,
            trials_stuck: None,
            trials_not_started: None,
            running_elsewhere: 0,
        };
        match read {
            Ok(rb) => {
                let layout = OutLayout::new(self.lowered);
                if rb.out.len() >= layout.total_words() {
                    let r = LaunchResult::decode(&layout, &rb.out);
                    self.summary.runaway_loops += r.runaway;
                    self.add_events(&r, stuck.seed);
                }
                let p = Positions::decode(self.lowered, stuck.blocks, &rb.positions);
                report.positions_read = true;
                report.trials_done = Some(p.trials_done);
                report.trials_stuck = Some(p.trials_stuck);
                report.trials_not_started = Some(p.trials_not_started);
                report.running_elsewhere = p.running_elsewhere;
                for b in &p.blocked {
                    let threads: Vec<(u32, u32)> =
                        b.first_threads.iter().map(|&(c, t, _)| (c, t)).collect();
                    let mut occs: Vec<u32> = b.first_threads.iter().map(|t| t.2).collect();
                    occs.sort_unstable();
                    occs.dedup();
                    let occ = match occs.as_slice() {
                        [one] => format!("its execution #{} of the statement", one + 1),
                        _ => format!(
                            "executions #{} of the statement",
                            occs.iter()
                                .map(|o| (o + 1).to_string())
                                .collect::<Vec<_>>()
                                .join(", #")
                        ),
                    };
                    self.stuck_rows.push(HangRow {
                        statement: self.text_of(b.stmt),
                        line: self.line_of(b.stmt),
                        count: b.threads,
                        first: SeenAt {
                            seed: stuck.seed,
                            block: b.first_block,
                        },
                        observed: format!(
                            "{} of block {} blocked here ({occ}) after {:.1} s",
                            thread_ranges(&threads, self.lowered.cluster.max(1)),
                            b.first_block,
                            stuck.seconds
                        ),
                        kernel: self.kernel_of(b.stmt),
                        stuck: true,
                        trials: Some(b.trials),
                    });
                }
            }
            Err(e) => report.read_error = Some(e),
        }
        self.summary.stuck = Some(report);
    }

    fn buffer_of(&self, stmt: u32) -> u32 {
        self.lowered
            .stmts
            .get(stmt as usize)
            .and_then(|s| s.object)
            .unwrap_or(u32::MAX)
    }

    fn describe_hang(&self, e: &gpu_harness::decode::Event) -> String {
        let (stmt, a, b, tid, cta, raw) = (e.stmt, e.a, e.b, e.tid, e.cta, e.raw);
        let info = &self.lowered.stmts[stmt as usize];
        let who = if cta > 0 {
            format!("cta{cta}.t{tid}")
        } else {
            format!("t{tid}")
        };
        match info.keyword {
            "wait" | "arrive_and_wait" | "producer_acquire" | "consumer_wait" => {
                let st = BarrierState::decode(a);
                let text = self.text_of(stmt);
                if text.contains(" token ") || info.keyword == "arrive_and_wait" {
                    format!(
                        "{who}: barrier instance {} in a phase of parity {}, token 0x{b:x} (raw mbarrier word 0x{raw:x})",
                        st.index, st.current_parity
                    )
                } else {
                    format!(
                        "{who}: barrier instance {} in a phase of parity {}, waiting for parity {} to complete (raw mbarrier word 0x{raw:x})",
                        st.index,
                        st.current_parity,
                        b & 1
                    )
                }
            }
            "load_acquire" => format!("{who}: the global still read 0 (no release seen)"),
            _ => who,
        }
    }

    pub fn finish(mut self, wall: f64) -> FuzzSummary {
        self.summary.wall_seconds = wall;
        self.summary.phases_per_second = if self.summary.kernel_seconds > 0.0 {
            self.summary.barrier_phases as f64 / self.summary.kernel_seconds
        } else {
            0.0
        };
        let hang = std::mem::take(&mut self.hang);
        for (stmt, (count, first, observed)) in hang {
            self.summary.hangs.push(HangRow {
                statement: self.text_of(stmt),
                line: self.line_of(stmt),
                count,
                first,
                observed,
                kernel: self.kernel_of(stmt),
                stuck: false,
                trials: None,
            });
        }
        self.summary.hangs.append(&mut self.stuck_rows);
        let stale = std::mem::take(&mut self.stale);
        for ((buf, stmt), (count, first, other)) in stale {
            let buffer = self
                .program
                .objects
                .get(buf as usize)
                .map(|o| o.name.clone())
                .unwrap_or_default();
            self.summary.stale_reads.push(StaleRow {
                buffer,
                statement: self.text_of(stmt),
                line: self.line_of(stmt),
                count,
                first,
                other,
                kernel: self.kernel_of(stmt),
            });
        }
        self.summary
    }
}

impl Accumulator<'_> {
    /// Hangs (expired bounded waits) counted so far, over all statements.
    pub fn hangs_seen(&self) -> u64 {
        self.hang.values().map(|v| v.0).sum()
    }

    /// Stale reads counted so far, over all buffers and statements.
    pub fn stale_seen(&self) -> u64 {
        self.stale.values().map(|v| v.0).sum()
    }
}

/// What [`fuzz_rounds`] calls after each round: the seconds elapsed and the accumulator.
pub type Progress<'p> = dyn Fn(f64, &Accumulator<'_>) + 'p;

/// How long `fuzz` waits for one launch before it counts as stuck: `launch_timeout`, or
/// 30 s plus the run's length.
pub fn launch_timeout(gpu: &GpuOptions, seconds: f64) -> Duration {
    Duration::from_secs_f64(gpu.launch_timeout.unwrap_or(30.0 + seconds).max(0.001))
}

/// Launch rounds until `seconds` have passed (at least one round). A launch that does not
/// finish (a stuck hardware collective) ends the rounds: it is returned, to be read back
/// ([`read_back_stuck`]) and reported; the process must end afterwards to free the GPU.
/// `progress`, called after each round, gets the seconds elapsed and the accumulator.
#[allow(clippy::too_many_arguments)]
pub fn fuzz_rounds(
    gpu: &Gpu,
    kernel: &LoadedKernel,
    acc: &mut Accumulator<'_>,
    lowered: &Lowered,
    options: &GpuOptions,
    blocks: u32,
    first_seed: u64,
    seconds: f64,
    progress: Option<&Progress>,
) -> Result<Option<Box<StuckLaunch>>, RunError> {
    let t0 = Instant::now();
    let mut seed = first_seed;
    loop {
        let params = LaunchParams {
            blocks,
            seed,
            delay_max_ns: options.delay_ns,
            delay_every: options.delay_every.max(1),
            budget_cycles: options.wait_cycles,
            timeout: launch_timeout(options, seconds),
        };
        let (r, secs) = match gpu.launch(kernel, lowered, &params, &[]) {
            Ok(x) => x,
            Err(RunError::Stuck(s)) => return Ok(Some(s)),
            Err(e) => return Err(e),
        };
        acc.add(&r, seed, blocks, secs);
        seed = seed.wrapping_add(1);
        let elapsed = t0.elapsed().as_secs_f64();
        if let Some(progress) = progress {
            progress(elapsed, acc);
        }
        if elapsed >= seconds {
            return Ok(None);
        }
    }
}

/// Read a stuck launch back and add it to `acc` ([`Accumulator::add_stuck`]). A watchdog
/// guards the read-back (whose driver calls do not block, but a stuck context is no place to
/// rely on that): should it not return in time, `fallback` gets the summary without it (with
/// `wall` seconds) to report, and the process ends with `exit_code`.
pub fn read_back_stuck(
    gpu: &Gpu,
    acc: &mut Accumulator<'_>,
    stuck: &StuckLaunch,
    wall: f64,
    exit_code: i32,
    fallback: impl FnOnce(FuzzSummary) + Send + 'static,
) {
    let mut preview = acc.clone();
    preview.add_stuck(
        stuck,
        Err(format!(
            "the read-back did not return within {:.0} s",
            (READBACK_TIMEOUT + READBACK_GRACE).as_secs_f64()
        )),
    );
    let preview = preview.finish(wall);
    let dog = Watchdog::arm(READBACK_TIMEOUT + READBACK_GRACE, exit_code, move || {
        fallback(preview)
    });
    let read = gpu.read_stuck(stuck, READBACK_TIMEOUT);
    dog.claim();
    acc.add_stuck(stuck, read.as_ref().map_err(|e| e.clone()));
}

/// Blocks (trials) per round by default: 8 per multiprocessor, whole clusters.
pub fn default_blocks(gpu: &Gpu, cluster: u32) -> u32 {
    let b = (gpu.multiprocessors.max(1) * 8).max(cluster);
    b / cluster * cluster
}

/// A seed from the clock, for runs not given one.
pub fn seed_from_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        & 0xffff_ffff
}
