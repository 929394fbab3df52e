//! The aimed fuzz: when the replay cannot show a finding, `confirm` fuzzes the file for a
//! bounded time with long delays aimed at the finding's statements and at the threads its
//! trace holds back, and looks for the hazard in what the rounds record.
//!
//! The kernel is the fuzz-mode kernel; its `seq` argument carries the aim (`PC_AIM_MAGIC` in
//! the prelude): `[magic, delay bound ns, S, W]`, S words of statement bits, W words of thread
//! bits (bit `cta * block + tid` of every trial). An aimed thread sleeps up to the bound before
//! each aimed statement, besides the ordinary delays.

use super::obstacle::Obstacle;
use super::plan::stmt_of;
use checker::{Class, Finding};
use gpu_harness::decode::{EventKind, LaunchResult};
use gpu_harness::lower::Lowered;
use protocols::SourceFile;
use serde::{Deserialize, Serialize};

/// `PC_AIM_MAGIC` of the prelude.
pub const AIM_MAGIC: u32 = 0x4149_4d31;

/// Aimed delay bounds the rounds cycle through, in ns: well above the ordinary 200 ns, well
/// below the wait budget (a thread that sleeps must not make a waiter's bounded wait expire).
pub const AIM_NS: [u32; 2] = [2_000, 20_000];

/// Which statements and which threads to delay.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Aim {
    /// Statement ids (the finding's statement, its labels and wait-for graph, where the
    /// obstacles lie).
    pub stmts: Vec<u32>,
    /// Threads the trace holds back, as (cta, tid).
    pub laggards: Vec<(u32, u32)>,
}

/// Which threads a round delays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Targets {
    /// The threads the trace holds back.
    Laggards,
    /// A random half of the lanes of every warp (splits warps).
    HalfOfEachWarp,
    /// A random half of the warps.
    HalfOfTheWarps,
}

impl Targets {
    pub fn as_str(self) -> &'static str {
        match self {
            Targets::Laggards => "the threads the trace holds back",
            Targets::HalfOfEachWarp => "a random half of each warp's lanes",
            Targets::HalfOfTheWarps => "a random half of the warps",
        }
    }
}

/// The aim of finding `f`: its statements and those of its obstacles, and the threads the
/// obstacles say the trace holds back.
pub fn aim_of(f: &Finding, lowered: &Lowered, obstacles: &[Obstacle]) -> Aim {
    let mut stmts: Vec<u32> = stmt_of(lowered, f.span).into_iter().collect();
    stmts.extend(f.labels.iter().filter_map(|l| stmt_of(lowered, l.span)));
    stmts.extend(f.waits_for.iter().filter_map(|w| stmt_of(lowered, w.span)));
    let mut laggards = Vec::new();
    for o in obstacles {
        stmts.extend(&o.stmts);
        laggards.extend(&o.laggards);
    }
    stmts.sort_unstable();
    stmts.dedup();
    laggards.sort_unstable();
    laggards.dedup();
    Aim { stmts, laggards }
}

/// Round `round`'s targets and delay bound.
pub fn round_plan(aim: &Aim, round: u64) -> (Targets, u32) {
    let kinds: &[Targets] = if aim.laggards.is_empty() {
        &[Targets::HalfOfEachWarp, Targets::HalfOfTheWarps]
    } else {
        &[
            Targets::Laggards,
            Targets::HalfOfEachWarp,
            Targets::HalfOfTheWarps,
        ]
    };
    let k = kinds[(round % kinds.len() as u64) as usize];
    let ns = AIM_NS[((round / kinds.len() as u64) % AIM_NS.len() as u64) as usize];
    (k, ns)
}

/// The aim table of one launch (the kernel's `seq` argument in fuzz mode).
pub fn table(lowered: &Lowered, aim: &Aim, targets: Targets, ns: u32, seed: u64) -> Vec<u32> {
    let nstmt = lowered.stmts.len().max(1);
    let s_words = nstmt.div_ceil(32);
    let block = lowered.block.max(1);
    let threads = (block * lowered.cluster.max(1)) as usize;
    let t_words = threads.div_ceil(32);
    let mut v = vec![AIM_MAGIC, ns, s_words as u32, t_words as u32];
    let mut stmt_bits = vec![0u32; s_words];
    for &s in &aim.stmts {
        if (s as usize) < nstmt {
            stmt_bits[s as usize / 32] |= 1 << (s % 32);
        }
    }
    v.extend(stmt_bits);
    let mut thread_bits = vec![0u32; t_words];
    let mut set = |bit: usize| {
        if bit < threads {
            thread_bits[bit / 32] |= 1 << (bit % 32);
        }
    };
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut coin = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng & 1 == 1
    };
    match targets {
        Targets::Laggards => {
            for &(cta, tid) in &aim.laggards {
                set((cta * block + tid) as usize);
            }
        }
        Targets::HalfOfEachWarp => {
            for bit in 0..threads {
                if coin() {
                    set(bit);
                }
            }
        }
        Targets::HalfOfTheWarps => {
            let mut warp_on = false;
            for bit in 0..threads {
                if (bit as u32 % block) % 32 == 0 {
                    warp_on = coin();
                }
                if warp_on {
                    set(bit);
                }
            }
        }
    }
    v.extend(thread_bits);
    v
}

/// What the aimed fuzz did for a finding.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AimedFuzz {
    pub seconds: f64,
    pub rounds: u64,
    pub trials: u64,
    /// Lines of the aimed statements.
    pub lines: Vec<u32>,
    /// Delay bounds used, in ns.
    pub delay_ns: Vec<u32>,
    /// Which threads were delayed, per kind of round.
    pub targets: Vec<Targets>,
    /// Whether it showed the finding.
    pub shown: bool,
    /// Trials that showed it.
    pub trials_showing: u64,
    /// A launch got stuck in a hardware collective (the process ended after it).
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub stuck: bool,
    /// What it saw (or that it saw nothing).
    pub detail: String,
    /// The seed of the round that showed it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub seed: Option<u64>,
}

/// Whether one aimed round shows finding `f`, and in how many trials: a deadlock by bounded
/// waits that expired at its statements (the finding's, its labels', its wait-for graph's); a
/// race by a stale read at its statements (`stale-phase`: anywhere, the stale phase's
/// consequence); UB by a hang or a stale read anywhere, as the replay's judge.
pub fn judge_round(
    lowered: &Lowered,
    file: &SourceFile,
    f: &Finding,
    r: &LaunchResult,
) -> Option<(String, u64)> {
    let cluster = u64::from(lowered.cluster.max(1));
    let line = |stmt: u32| {
        lowered
            .stmts
            .get(stmt as usize)
            .map(|s| file.line_of(s.span))
            .unwrap_or(0)
    };
    let mut wanted: Vec<u32> = stmt_of(lowered, f.span).into_iter().collect();
    wanted.extend(f.labels.iter().filter_map(|l| stmt_of(lowered, l.span)));
    wanted.extend(f.waits_for.iter().filter_map(|w| stmt_of(lowered, w.span)));
    let shows = |kind: EventKind, anywhere: bool| {
        let mut trials: Vec<u64> = Vec::new();
        let mut lines: Vec<u32> = Vec::new();
        for e in &r.events {
            if e.kind == kind && (anywhere || wanted.contains(&e.stmt)) {
                trials.push(e.block / cluster);
                lines.push(line(e.stmt));
            }
        }
        trials.sort_unstable();
        trials.dedup();
        lines.sort_unstable();
        lines.dedup();
        let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        (!trials.is_empty()).then(|| (lines.join(", "), trials.len() as u64))
    };
    match f.class() {
        Class::Deadlock => shows(EventKind::Hang, false)
            .map(|(l, n)| (format!("bounded waits expired at line {l}"), n)),
        Class::Race => shows(EventKind::Race, f.rule.name == "stale-phase").map(|(l, n)| {
            (
                format!("a buffer access at line {l} overlapped a conflicting one"),
                n,
            )
        }),
        Class::Ub | Class::Perf => shows(EventKind::Hang, false)
            .map(|(l, n)| {
                (
                    format!("the hardware hangs at line {l} (a bounded wait expired)"),
                    n,
                )
            })
            .or_else(|| {
                shows(EventKind::Race, false).map(|(l, n)| {
                    (
                        format!("a buffer access at line {l} overlapped a conflicting one"),
                        n,
                    )
                })
            }),
    }
}

/// What a round saw elsewhere than `judge_round` looks (for the detail of a round that did not
/// show the finding): hangs and stale reads per line.
pub fn seen_elsewhere(lowered: &Lowered, file: &SourceFile, r: &LaunchResult) -> Vec<String> {
    let mut seen: std::collections::BTreeMap<(u32, &'static str), u64> = Default::default();
    for e in &r.events {
        let what = match e.kind {
            EventKind::Hang => "hang",
            EventKind::Race => "stale read",
            _ => continue,
        };
        let line = lowered
            .stmts
            .get(e.stmt as usize)
            .map(|s| file.line_of(s.span))
            .unwrap_or(0);
        *seen.entry((line, what)).or_insert(0) += 1;
    }
    seen.into_iter()
        .map(|((line, what), n)| format!("{n} {what}(s) at line {line}"))
        .collect()
}
