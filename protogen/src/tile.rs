//! [`Tile`]: a cooperative fill with `write part`.
//!
//! One shape of the generated protocols; the crate's documentation lists them all.

use super::{Src, pick};
use proptest::option;
use proptest::prelude::*;

/// Deliberate bugs in a [`Tile`] protocol (trip numbers are taken modulo the trips).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileBug {
    /// Producer lane 0 writes the whole stage instead of its part.
    WholeWrite,
    /// The consumers skip the `full` wait on this trip.
    MissingConsumerWait(u32),
    /// The producers skip the `empty` wait on this trip.
    MissingProducerWait(u32),
    /// A consumer also writes its part of the stage it reads.
    ConsumerPartWrite,
    /// The producers arrive before they write.
    ArriveBeforeWrite,
}

/// `producers` threads fill each stage together (`write part`, then each arrives on `full`),
/// `consumers` threads wait, read the stage and free it on `empty`.
#[derive(Clone, Debug)]
pub struct Tile {
    pub producers: u32,
    pub consumers: u32,
    pub stages: u32,
    pub trips: u32,
    pub bug: Option<TileBug>,
}

/// The parameters of a random [`Tile`].
pub fn tile_params() -> impl Strategy<Value = Tile> {
    (
        2..=3u32,
        1..=2u32,
        1..=2u32,
        1..=3u32,
        option::weighted(
            0.5,
            prop_oneof![
                Just(TileBug::WholeWrite),
                (0..3u32).prop_map(TileBug::MissingConsumerWait),
                (0..3u32).prop_map(TileBug::MissingProducerWait),
                Just(TileBug::ConsumerPartWrite),
                Just(TileBug::ArriveBeforeWrite),
            ],
        ),
    )
        .prop_map(|(producers, consumers, stages, trips, bug)| Tile {
            producers,
            consumers,
            stages,
            trips,
            bug,
        })
}

/// Cooperative tile fills.
pub fn tile() -> impl Strategy<Value = String> {
    tile_params().prop_map(|t| t.source())
}

impl Tile {
    /// Render the protocol.
    pub fn source(&self) -> String {
        let k = self.trips.max(1);
        let mut w = Src::new("gen_tile");
        w.param("STAGES", self.stages.clamp(1, 2));
        w.param("K", k);
        w.param("NP", self.producers.clamp(1, 3));
        w.param("NC", self.consumers.clamp(1, 2));
        w.line("block NP + NC");
        w.blank();
        w.line("mbarrier full[STAGES]");
        w.line("mbarrier empty[STAGES]");
        w.line("buffer tile[STAGES]");
        w.blank();
        w.open("if tid == 0");
        w.open("for s in 0..STAGES");
        w.line("init full[s], NP");
        w.line("init empty[s], NC");
        w.close();
        w.close();
        w.line("syncthreads");
        w.blank();
        w.open("role producer when tid < NP");
        w.open("for k in 0..K");
        w.line("let s = k % STAGES");
        let pwait = "wait empty[s] parity ((k / STAGES) % 2) ^ 1";
        match self.bug {
            Some(TileBug::MissingProducerWait(x)) => {
                w.line(format!("if k != {} {{ {pwait} }}", pick(x, k)))
            }
            _ => w.line(pwait),
        }
        let write = if self.bug == Some(TileBug::WholeWrite) {
            "if tid == 0 { write tile[s] } else { write part tile[s] }"
        } else {
            "write part tile[s]"
        };
        if self.bug == Some(TileBug::ArriveBeforeWrite) {
            w.line("arrive full[s]");
            w.line(write);
        } else {
            w.line(write);
            w.line("arrive full[s]");
        }
        w.close();
        w.close();
        w.open("role consumer when tid >= NP");
        w.open("for k in 0..K");
        w.line("let s = k % STAGES");
        let cwait = "wait full[s] parity (k / STAGES) % 2";
        match self.bug {
            Some(TileBug::MissingConsumerWait(x)) => {
                w.line(format!("if k != {} {{ {cwait} }}", pick(x, k)))
            }
            _ => w.line(cwait),
        }
        w.line("read tile[s]");
        if self.bug == Some(TileBug::ConsumerPartWrite) {
            w.line("write part tile[s]");
        }
        w.line("arrive empty[s]");
        w.close();
        w.close();
        w.finish()
    }
}
