//! Instrumented copies of a real kernel's PTX (issue 27): the user's own kernel, made to run
//! under stress and to say where it is stuck, for `phasecheck fuzz --app`.
//!
//! [`instrument`] rewrites every function of a PTX module, keeping its parameter list (so the
//! application's own arguments and tensor maps still fit):
//!
//! - **Seeded random delays** before and after each synchronization instruction
//!   (`bar.*`/`barrier.*` but `bar.warp.sync`, `mbarrier.*`, `cp.async*`, `cp.reduce.async.bulk*`,
//!   `fence.proxy*`, `fence.mbarrier_init`): a per-thread xorshift32, seeded from the launch's
//!   seed (the `.global` [`capture::fuzz::CFG_SYMBOL`], which the host writes before each launch),
//!   `%tid`, `%ctaid` and the function, decides at each point whether the thread sleeps
//!   (`nanosleep.u32`) and for how long.
//! - **Bounded waits**: after each `mbarrier.try_wait` / `mbarrier.test_wait` that reports the
//!   phase incomplete, the thread measures (`%globaltimer`) how long it has been failing at that
//!   same instruction; past the bound it appends `{%ctaid, %tid, point id, seed}` to the
//!   `.global` stuck records ([`capture::fuzz::STUCK_SYMBOL`]) and exits. A wait that succeeds,
//!   or a failing wait at another instruction, starts the clock anew, so a poll of two barriers
//!   in turn is never reported (the host's watchdog still sees it hang).
//!
//! `bar.sync`, `barrier.cluster.wait` and other waits with no try form cannot be bounded: a
//! thread stuck there is a hang the host's watchdog reports. Each instrumented instruction is a
//! [`Point`] with its PTX line and source position (the `.loc`, with the inline stack), so a
//! stuck record reads as a source line.

pub mod app;
mod rewrite;
mod seq_snippet;
pub mod sequence;
mod snippet;
pub mod version;

pub use seq_snippet::{ENTRIES_SYMBOL, OFFSETS_SYMBOL};
pub use version::{PtxVersion, cap_version};

pub use capture::fuzz::{
    CFG_SYMBOL, RECORD_WORDS, SEQ_HELD, SEQ_STATE_SYMBOL, STUCK_CAPACITY, STUCK_COUNT_SYMBOL,
    STUCK_SYMBOL, StuckThread,
};

/// How much stress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Chance of a delay at each point, in 256ths (0: no delays, 256: always).
    pub delay_chance: u32,
    /// The longest delay, in nanoseconds: rounded up to a power of two minus one (a mask).
    pub delay_max_ns: u32,
    /// How long a thread may keep failing one mbarrier wait before it counts as stuck, in
    /// microseconds.
    pub wait_bound_us: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            delay_chance: 48,
            delay_max_ns: 2047,
            wait_bound_us: 200_000,
        }
    }
}

/// What an instrumented point does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointKind {
    /// Random delays before and after it.
    Delay,
    /// Random delays before it, and the wait bounded after it.
    BoundedWait,
}

/// One instrumented instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// The id in stuck records.
    pub id: u32,
    pub kind: PointKind,
    /// The function (mangled name) it is in.
    pub function: String,
    /// 1-based line in the original PTX.
    pub ptx_line: u32,
    /// The instruction as written.
    pub text: String,
    /// The CUDA source position to show (`file.cu:45`, or with `(via ...)` inside an inlined
    /// helper), from the `.loc`; `None` without line information.
    pub source: Option<String>,
    /// The whole inline stack, outermost first (`file:line`).
    pub stack: Vec<String>,
}

/// The rewritten module.
#[derive(Clone, Debug)]
pub struct Instrumented {
    pub ptx: String,
    /// The kernels (`.entry` names) in it.
    pub kernels: Vec<String>,
    /// Every instrumented point, by id.
    pub points: Vec<Point>,
}

impl Instrumented {
    pub fn point(&self, id: u32) -> Option<&Point> {
        self.points.get(id as usize)
    }

    /// How many wait points are bounded.
    pub fn bounded_waits(&self) -> usize {
        self.points
            .iter()
            .filter(|p| p.kind == PointKind::BoundedWait)
            .count()
    }
}

/// Instrument every function of `ptx` (see the crate's doc).
pub fn instrument(ptx: &str, opts: &Options) -> Result<Instrumented, String> {
    instrument_with(ptx, opts, None)
}

/// Instrument `ptx` as [`instrument`] does, and make the points of `seq`'s kernel that its
/// table lists hold their threads in the trace's order (the sequencer, [`sequence`]): for
/// `phasecheck confirm --app`. `seq` comes from [`sequence::plan`] over the points of
/// [`instrument`]'s result for the same text and options (the point ids are the same).
pub fn instrument_sequenced(
    ptx: &str,
    opts: &Options,
    seq: &sequence::Sequence,
) -> Result<Instrumented, String> {
    instrument_with(ptx, opts, Some(seq))
}

fn instrument_with(
    ptx: &str,
    opts: &Options,
    seq: Option<&sequence::Sequence>,
) -> Result<Instrumented, String> {
    if opts.delay_chance > 256 {
        return Err(format!(
            "the delay chance is in 256ths: {} is more than 256",
            opts.delay_chance
        ));
    }
    if opts.wait_bound_us == 0 {
        return Err("the wait bound must be at least 1 microsecond".into());
    }
    let module = ptx::parse::parse(ptx)
        .map_err(|e| format!("cannot parse the PTX: line {}: {}", e.line, e.message))?;
    if module.functions.iter().all(|f| !f.entry) {
        return Err("the PTX has no kernel (`.entry`)".into());
    }
    rewrite::rewrite(ptx, &module, opts, seq)
}

/// The kernel to swap: `wanted` is its PTX (mangled) name or a part of it that names one
/// kernel only (`device_kernel`); without it, the module's only kernel.
pub fn find_kernel<'a>(inst: &'a Instrumented, wanted: Option<&str>) -> Result<&'a str, String> {
    match wanted {
        Some(w) => {
            if let Some(k) = inst.kernels.iter().find(|k| *k == w) {
                return Ok(k);
            }
            let part: Vec<&String> = inst.kernels.iter().filter(|k| k.contains(w)).collect();
            match part.as_slice() {
                [one] => Ok(one),
                [] => Err(format!(
                    "the PTX has no kernel `{w}`; its kernels are {}",
                    inst.kernels.join(", ")
                )),
                many => Err(format!(
                    "`{w}` is part of {} kernels' names: give more of one ({})",
                    many.len(),
                    inst.kernels.join(", ")
                )),
            }
        }
        None => match inst.kernels.as_slice() {
            [one] => Ok(one),
            many => Err(format!(
                "the PTX has {} kernels: name one with --kernel ({})",
                many.len(),
                many.join(", ")
            )),
        },
    }
}
