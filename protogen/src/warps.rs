//! [`PerWarp`]: the per-warp release of issue 24 ("One arrive per warp"): a producer thread
//! fills a ring, consumer warps read a stage, meet at `syncwarp`, and one lane per warp
//! releases it (`if lane == L { arrive empty[s] }` or `elect { arrive empty[s] }`), the empty
//! barrier counting warps.
//!
//! Warps are 32 lanes in the model, so a small protocol keeps a few lanes per warp alive and
//! lets the rest `exit` at once (an exited lane no longer takes part in `syncwarp` or
//! `elect`): with 2 consumer warps of up to 3 live lanes, or 3 warps of one, the unreduced
//! search stays small, and the reductions are compared on the shape whose warps' relative
//! progress and lane interleavings they reduce (a lane's steps taken alone while its warp's
//! releaser waits at the `syncwarp`; lanes interchangeable within their warp).

use super::{Src, pick};
use proptest::option;
use proptest::prelude::*;

/// Who releases a stage for its warp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Releaser {
    /// `if lane == L { arrive empty[s] }` after the `syncwarp` (L a live lane).
    Lane(u32),
    /// `elect { arrive empty[s] }`: any live lane of the warp may be the one elected, and
    /// later `elect`s of the warp pick it again while no lane of the warp has exited.
    Elect,
}

/// A defect of a [`PerWarp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerWarpBug {
    /// `init empty[s], NW - 1`: the producer overwrites a stage a warp still reads.
    CountShort,
    /// `init empty[s], NW + 1`: the producer waits for good.
    CountOver,
    /// The consumers' parity is flipped: they read a stage before it is filled.
    ParityFlip,
    /// No `syncwarp` before the release: the other lanes' reads race with the next fill.
    NoSyncWarp,
    /// The release comes before the `syncwarp`.
    ReleaseBeforeSync,
    /// The last consumer warp leaves at its second trip: its stage is never released again.
    EarlyExit,
    /// Every live lane releases (the count is per warp): arrivals overrun the phase.
    EveryLane,
}

#[derive(Clone, Debug)]
pub struct PerWarp {
    /// Consumer warps (warp 0 holds the producer, lane 0, and nothing else live).
    pub warps: u32,
    /// Live lanes per consumer warp; the last warp is cut to them (`block` ends there), the
    /// others' remaining lanes exit at once.
    pub lanes: u32,
    pub stages: u32,
    pub trips: u32,
    /// Filled by TMA (consumers `mma`, an async-proxy read) or by the producer's `write`
    /// (consumers `read`).
    pub tma: bool,
    pub releaser: Releaser,
    /// Only the elected lane reads the stage (`elect { mma stage[s] }`, as one lane issues a
    /// warp's copy or store), instead of every lane. Whether the release is then ordered after
    /// the read without a `syncwarp` depends on which lane leads: with `elect` releasing too,
    /// the same one (the ISA's determinism), with `if lane == L`, lane L only if it was elected.
    pub elected_reader: bool,
    pub bug: Option<PerWarpBug>,
}

/// The parameters of a random [`PerWarp`].
pub fn per_warp_params() -> impl Strategy<Value = PerWarp> {
    (
        (2..=3u32, 1..=3u32, 1..=2u32, 1..=3u32),
        (
            any::<bool>(),
            prop_oneof![(0..3u32).prop_map(Releaser::Lane), Just(Releaser::Elect)],
            proptest::bool::weighted(0.3),
        ),
        option::weighted(
            0.5,
            prop_oneof![
                Just(PerWarpBug::CountShort),
                Just(PerWarpBug::CountOver),
                Just(PerWarpBug::ParityFlip),
                Just(PerWarpBug::NoSyncWarp),
                Just(PerWarpBug::ReleaseBeforeSync),
                Just(PerWarpBug::EarlyExit),
                Just(PerWarpBug::EveryLane),
            ],
        ),
    )
        .prop_map(
            |((warps, lanes, stages, trips), (tma, releaser, elected_reader), bug)| {
                // The unreduced search grows fast with live lanes and stages in flight (3 warps
                // of 3 lanes, 2 stages: over 200 000 states; 3 warps of 2 lanes with a bug: 30 s
                // a case in a debug build): three warps get one live lane each, two warps up to
                // three, and one stage and two trips above 4 live lanes.
                let lanes = if warps == 3 { 1 } else { lanes };
                let stages = if warps * lanes > 4 { 1 } else { stages };
                // Two warps of three lanes over three trips with a bug: 100 s in a debug build.
                let trips = if warps * lanes > 4 {
                    trips.min(2)
                } else {
                    trips
                };
                let releaser = match releaser {
                    Releaser::Lane(l) => Releaser::Lane(pick(l, lanes)),
                    Releaser::Elect => Releaser::Elect,
                };
                PerWarp {
                    warps,
                    lanes,
                    stages,
                    trips,
                    tma,
                    releaser,
                    elected_reader,
                    bug,
                }
            },
        )
}

/// Per-warp releases (`syncwarp` then one lane or `elect` arrives for the warp).
pub fn per_warp() -> impl Strategy<Value = String> {
    per_warp_params().prop_map(|p| p.source())
}

impl PerWarp {
    pub fn source(&self) -> String {
        let bug = self.bug;
        let nw = self.warps;
        let mut w = Src::new("per_warp");
        w.param("STAGES", self.stages);
        w.param("TRIPS", self.trips);
        // Warp 0: the producer; warps 1..NW: consumers; the last one has only its live lanes.
        w.line(format!("block {}", 32 * nw + self.lanes));
        w.line("mbarrier full[STAGES]");
        w.line("mbarrier empty[STAGES]");
        w.line("buffer stage[STAGES]");
        w.line("if warp == 0 && lane > 0 { exit }");
        w.line(format!(
            "if warp >= 1 && warp < {nw} && lane >= {} {{ exit }}",
            self.lanes
        ));
        let count = match bug {
            Some(PerWarpBug::CountShort) => nw - 1,
            Some(PerWarpBug::CountOver) => nw + 1,
            _ => nw,
        };
        w.open("if tid == 0");
        w.open("for s in 0..STAGES");
        w.line("init full[s], 1");
        w.line(format!("init empty[s], {count}"));
        w.close();
        w.close();
        w.line("syncthreads");
        w.open("role producer when tid == 0");
        w.open("for k in 0..TRIPS");
        w.line("let s = k % STAGES");
        w.line("wait empty[s] parity ((k / STAGES) & 1) ^ 1");
        if self.tma {
            w.line("arrive_expect_tx full[s], 64");
            w.line("tma stage[s] -> full[s], 64");
        } else {
            w.line("write stage[s]");
            w.line("arrive full[s]");
        }
        w.close();
        w.close();
        w.open("role consumer when warp >= 1");
        w.open("for k in 0..TRIPS");
        if bug == Some(PerWarpBug::EarlyExit) {
            w.line(format!("if warp == {nw} && k == 1 {{ exit }}"));
        }
        w.line("let s = k % STAGES");
        let flip = u32::from(bug == Some(PerWarpBug::ParityFlip));
        w.line(format!("wait full[s] parity ((k / STAGES) + {flip}) % 2"));
        let read = if self.tma {
            "mma stage[s]"
        } else {
            "read stage[s]"
        };
        if self.elected_reader {
            w.line(format!("elect {{ {read} }}"));
        } else {
            w.line(read);
        }
        let release = match (bug, self.releaser) {
            (Some(PerWarpBug::EveryLane), _) => "arrive empty[s]".to_string(),
            (_, Releaser::Lane(l)) => format!("if lane == {l} {{ arrive empty[s] }}"),
            (_, Releaser::Elect) => "elect { arrive empty[s] }".to_string(),
        };
        match bug {
            Some(PerWarpBug::NoSyncWarp) => w.line(release),
            Some(PerWarpBug::ReleaseBeforeSync) => {
                w.line(release);
                w.line("syncwarp");
            }
            _ => {
                w.line("syncwarp");
                w.line(release);
            }
        }
        w.close();
        w.close();
        w.finish()
    }
}
