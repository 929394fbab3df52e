//! [`Tma`]: transaction barrier with an elected issuer, optional TMA-store epilogue.
//!
//! One shape of the generated protocols; the crate's documentation lists them all.

use super::Src;
use crate::ring::bytes;
use proptest::option;
use proptest::prelude::*;

/// How the issuer arms the transaction barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arm {
    /// `arrive_expect_tx bar, BYTES` then `tma`.
    ArriveExpect,
    /// `tma` then `arrive_expect_tx` (the transaction count goes negative first).
    TmaFirst,
    /// `expect_tx bar, BYTES`, `tma`, then a plain `arrive bar`.
    ExpectThenArrive,
}

/// Deliberate bugs in a [`Tma`] protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmaBug {
    BytesOver,
    BytesUnder,
    /// Waits for the wrong phase.
    ParityFlip,
    /// The `syncthreads` that keeps the next TMA after every read is missing.
    MissingWarSync,
    /// No `fence_proxy_async` between the reads of the tile and its refill by the next TMA,
    /// nor in the epilogue before the TMA store.
    MissingProxyFence,
    /// `init bar, 2` (only one arrival per phase comes).
    CountOver,
    /// Every thread arms the barrier (arrivals beyond the count).
    AllArm,
    /// No `syncthreads` after the init.
    MissingBootstrap,
}

/// A TMA transaction barrier reused for `rounds` loads by `threads` threads.
#[derive(Clone, Debug)]
pub struct Tma {
    pub threads: u32,
    pub rounds: u32,
    pub bytes: u32,
    /// The issuer is chosen by `elect { }` instead of `if tid == 0`.
    pub elect: bool,
    pub arm: Arm,
    /// TMA-store epilogue: every thread writes its slot, fences, syncs; thread 0 stores.
    pub epilogue: bool,
    pub bug: Option<TmaBug>,
}

/// The parameters of a random [`Tma`].
pub fn tma_params() -> impl Strategy<Value = Tma> {
    (
        1..=3u32,
        1..=3u32,
        bytes(),
        any::<bool>(),
        prop_oneof![
            Just(Arm::ArriveExpect),
            Just(Arm::TmaFirst),
            Just(Arm::ExpectThenArrive)
        ],
        any::<bool>(),
        option::weighted(
            0.5,
            prop_oneof![
                Just(TmaBug::BytesOver),
                Just(TmaBug::BytesUnder),
                Just(TmaBug::ParityFlip),
                Just(TmaBug::MissingWarSync),
                Just(TmaBug::MissingProxyFence),
                Just(TmaBug::CountOver),
                Just(TmaBug::AllArm),
                Just(TmaBug::MissingBootstrap),
            ],
        ),
    )
        .prop_map(|(threads, rounds, bytes, elect, arm, epilogue, bug)| Tma {
            threads,
            rounds,
            bytes,
            elect,
            arm,
            epilogue,
            bug,
        })
}

/// Transaction barriers with `arrive_expect_tx` + `tma`, `elect`, TMA stores.
pub fn tma() -> impl Strategy<Value = String> {
    tma_params().prop_map(|t| t.source())
}

impl Tma {
    fn has(&self, b: TmaBug) -> bool {
        self.bug == Some(b)
    }

    /// Render the protocol.
    pub fn source(&self) -> String {
        // Every thread arming the barrier completes phases early and lets the threads run
        // apart: at most 2 rounds for that bug.
        let rounds = if self.has(TmaBug::AllArm) {
            self.rounds.clamp(1, 2)
        } else {
            self.rounds.max(1)
        };
        let mut w = Src::new("gen_tma");
        w.param("NT", self.threads.max(1));
        w.param("K", rounds);
        w.param("BYTES", self.bytes.max(32));
        w.line("block NT");
        w.blank();
        w.line("mbarrier bar");
        w.line("buffer tile");
        if self.epilogue {
            w.line("buffer c_smem[NT]");
        }
        w.blank();
        let count = if self.has(TmaBug::CountOver) { 2 } else { 1 };
        w.open("if tid == 0");
        w.line(format!("init bar, {count}"));
        w.line("fence_mbarrier_init");
        w.close();
        if !self.has(TmaBug::MissingBootstrap) {
            w.line("syncthreads");
        }
        w.blank();
        w.open("for k in 0..K");
        if self.has(TmaBug::AllArm) {
            w.open("if 1");
        } else if self.elect {
            w.open("elect");
        } else {
            w.open("if tid == 0");
        }
        let expect = match self.bug {
            Some(TmaBug::BytesOver) => "BYTES + 16",
            Some(TmaBug::BytesUnder) => "BYTES - 16",
            _ => "BYTES",
        };
        let tma = "tma tile -> bar, BYTES";
        match self.arm {
            Arm::ArriveExpect => {
                w.line(format!("arrive_expect_tx bar, {expect}"));
                w.line(tma);
            }
            Arm::TmaFirst => {
                w.line(tma);
                w.line(format!("arrive_expect_tx bar, {expect}"));
            }
            Arm::ExpectThenArrive => {
                w.line(format!("expect_tx bar, {expect}"));
                w.line(tma);
                w.line("arrive bar");
            }
        }
        w.close();
        let parity = if self.has(TmaBug::ParityFlip) {
            "(k + 1) % 2"
        } else {
            "k % 2"
        };
        w.line(format!("wait bar parity {parity}"));
        w.line("read tile");
        if !self.has(TmaBug::MissingProxyFence) {
            w.line("fence_proxy_async");
        }
        if !self.has(TmaBug::MissingWarSync) {
            w.line("syncthreads");
        }
        w.close();
        if self.epilogue {
            w.blank();
            w.line("write c_smem[tid]");
            if !self.has(TmaBug::MissingProxyFence) {
                w.line("fence_proxy_async");
            }
            w.line("syncthreads");
            w.open("if tid == 0");
            w.line("for j in 0..NT { tma_store c_smem[j] }");
            w.line("bulk_commit");
            w.line("bulk_wait_read 0");
            w.close();
        }
        w.finish()
    }
}
