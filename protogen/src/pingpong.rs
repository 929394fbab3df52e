//! [`PingPong`]: two groups taking turns with named barriers.
//!
//! One shape of the generated protocols; the crate's documentation lists them all.

use super::Src;
use proptest::option;
use proptest::prelude::*;

/// Deliberate bugs in a [`PingPong`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PingPongBug {
    /// Nobody gives the first turn (deadlock).
    NoKickoff,
    /// Both groups give the first turn.
    DoubleKickoff,
    /// Both groups wait on the same barrier id.
    SameBarrier,
    /// The turn is handed over before the shared work.
    HandOverEarly,
}

/// Two groups of `group` threads alternating through named barriers 1 and 2 (FA3 pingpong).
#[derive(Clone, Debug)]
pub struct PingPong {
    pub group: u32,
    pub turns: u32,
    /// Each turn is also gated by a `full` mbarrier filled by a TMA from an extra thread.
    pub with_tma: bool,
    pub bug: Option<PingPongBug>,
}

/// The parameters of a random [`PingPong`].
pub fn pingpong_params() -> impl Strategy<Value = PingPong> {
    (
        1..=2u32,
        1..=3u32,
        any::<bool>(),
        option::weighted(
            0.5,
            prop_oneof![
                Just(PingPongBug::NoKickoff),
                Just(PingPongBug::DoubleKickoff),
                Just(PingPongBug::SameBarrier),
                Just(PingPongBug::HandOverEarly),
            ],
        ),
    )
        .prop_map(|(group, turns, with_tma, bug)| PingPong {
            group,
            turns,
            with_tma,
            bug,
        })
}

/// Named-barrier pingpong between two groups.
pub fn pingpong() -> impl Strategy<Value = String> {
    pingpong_params().prop_map(|p| p.source())
}

impl PingPong {
    /// Render the protocol.
    pub fn source(&self) -> String {
        let mut w = Src::new("gen_pingpong");
        w.param("G", self.group.max(1));
        w.param("N", self.turns.max(1));
        let first = if self.with_tma {
            w.line("block 1 + 2 * G");
            1
        } else {
            w.line("block 2 * G");
            0
        };
        w.blank();
        w.line("buffer acc[G]");
        if self.with_tma {
            w.line("mbarrier full");
            w.line("buffer tile");
            w.blank();
            w.line("if tid == 0 { init full, 1 }");
            w.line("syncthreads");
            w.line("if tid == 0 { arrive_expect_tx full, 1024; tma tile -> full, 1024 }");
        }
        w.blank();
        w.open(format!("role math when tid >= {first}"));
        w.line(format!("let wg = (tid - {first}) / G"));
        w.line(format!("let me = (tid - {first}) % G"));
        match self.bug {
            Some(PingPongBug::NoKickoff) => {}
            Some(PingPongBug::DoubleKickoff) => w.line("bar_arrive 1, 2 * G"),
            _ => w.line("if wg == 1 { bar_arrive 1, 2 * G }"),
        }
        if self.with_tma {
            w.line("wait full parity 0");
        }
        w.open("for n in 0..N");
        if self.with_tma {
            w.line("read tile");
        }
        if self.bug == Some(PingPongBug::SameBarrier) {
            w.line("bar_sync 1, 2 * G");
        } else {
            w.line("bar_sync 1 + wg, 2 * G");
        }
        let hand = "bar_arrive 1 + (1 - wg), 2 * G";
        if self.bug == Some(PingPongBug::HandOverEarly) {
            w.line(hand);
            w.line("write acc[me]");
        } else {
            w.line("write acc[me]");
            w.line(hand);
        }
        w.line("compute");
        w.close();
        w.close();
        w.finish()
    }
}
