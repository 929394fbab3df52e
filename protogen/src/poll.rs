//! [`Poll`]: consumers that test two barriers and branch on the results (tinygemm2).
//!
//! One shape of the generated protocols; the crate's documentation lists them all.

use super::{Src, pick};
use proptest::option;
use proptest::prelude::*;

/// Deliberate bugs in a [`Poll`] protocol (trip numbers are taken modulo the trips).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollBug {
    /// The consumers' phase bit never flips (`stale-phase` from the second lap on).
    StaleParity,
    /// The branch waits only on the first barrier when a test failed.
    MissingSecondWait,
    /// The branch is taken only when both tests failed (`&&` for `||`).
    AndForOr,
    /// The consumers skip the tests and the waits on this trip.
    MissingPoll(u32),
    /// `consumed` is initialized one too many (the loaders wait for good).
    ConsumedCountOver,
    /// A consumer whose first test passed also releases the stage right away (a second
    /// arrive on `consumed` at the end: over-arrival, depending on the test's outcome).
    ReleaseIfReady,
}

/// How a loader fills its buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollFill {
    /// `write` then `arrive`.
    Write,
    /// `arrive_expect_tx` then `tma`.
    Tma,
}

/// Two loaders fill two buffers per stage, each signalling its own barrier; `consumers`
/// threads `test_wait` both barriers, wait on both when either test failed (or on each that
/// failed), read both buffers and release the stage on `consumed`.
#[derive(Clone, Debug)]
pub struct Poll {
    pub consumers: u32,
    pub stages: u32,
    pub trips: u32,
    pub fill: PollFill,
    /// Wait only on the barriers whose own test failed (else on both when either failed).
    pub each: bool,
    pub bug: Option<PollBug>,
}

/// The parameters of a random [`Poll`].
pub fn poll_params() -> impl Strategy<Value = Poll> {
    (
        1..=2u32,
        1..=2u32,
        1..=3u32,
        prop_oneof![Just(PollFill::Write), Just(PollFill::Tma)],
        any::<bool>(),
        option::weighted(
            0.5,
            prop_oneof![
                Just(PollBug::StaleParity),
                Just(PollBug::MissingSecondWait),
                Just(PollBug::AndForOr),
                (0..3u32).prop_map(PollBug::MissingPoll),
                Just(PollBug::ConsumedCountOver),
                Just(PollBug::ReleaseIfReady),
            ],
        ),
    )
        .prop_map(|(consumers, stages, trips, fill, each, bug)| Poll {
            consumers,
            stages,
            // Two consumers racing two loaders interleave a lot: at most two trips then.
            trips: if consumers > 1 { trips.min(2) } else { trips },
            fill,
            each,
            bug,
        })
}

/// Poll-both consumers.
pub fn poll() -> impl Strategy<Value = String> {
    poll_params().prop_map(|p| p.source())
}

impl Poll {
    /// Render the protocol.
    pub fn source(&self) -> String {
        let k = self.trips.max(1);
        let mut w = Src::new("gen_poll");
        w.param("STAGES", self.stages.clamp(1, 2));
        w.param("K", k);
        w.param("NC", self.consumers.clamp(1, 2));
        w.line("block NC + 2");
        w.blank();
        w.line("mbarrier a_ready[STAGES]");
        w.line("mbarrier b_ready[STAGES]");
        w.line("mbarrier consumed[STAGES]");
        w.line("buffer a_buf[STAGES]");
        w.line("buffer b_buf[STAGES]");
        w.blank();
        w.open("if tid == 0");
        w.open("for s in 0..STAGES");
        w.line("init a_ready[s], 1");
        w.line("init b_ready[s], 1");
        if self.bug == Some(PollBug::ConsumedCountOver) {
            w.line("init consumed[s], NC + 1");
        } else {
            w.line("init consumed[s], NC");
        }
        w.close();
        w.close();
        w.line("syncthreads");
        w.blank();
        for (role, who, bar, buf, bytes) in [
            ("aload", "NC", "a_ready", "a_buf", 4096),
            ("bload", "NC + 1", "b_ready", "b_buf", 1024),
        ] {
            w.open(format!("role {role} when tid == {who}"));
            w.open("for k in 0..K");
            w.line("let s = k % STAGES");
            w.line("wait consumed[s] parity ((k / STAGES) % 2) ^ 1");
            match self.fill {
                PollFill::Write => {
                    w.line(format!("write {buf}[s]"));
                    w.line(format!("arrive {bar}[s]"));
                }
                PollFill::Tma => {
                    w.line(format!("arrive_expect_tx {bar}[s], {bytes}"));
                    w.line(format!("tma {buf}[s] -> {bar}[s], {bytes}"));
                }
            }
            w.close();
            w.close();
        }
        w.open("role compute when tid < NC");
        w.open("for k in 0..K");
        w.line("let s = k % STAGES");
        if self.bug == Some(PollBug::StaleParity) {
            w.line("let ph = 0");
        } else {
            w.line("let ph = (k / STAGES) % 2");
        }
        let skip = match self.bug {
            Some(PollBug::MissingPoll(x)) => Some(pick(x, k)),
            _ => None,
        };
        if let Some(x) = skip {
            w.open(format!("if k != {x}"));
        }
        w.line("let a_ok = test_wait a_ready[s] parity ph");
        w.line("let b_ok = test_wait b_ready[s] parity ph");
        if self.bug == Some(PollBug::ReleaseIfReady) {
            w.line("if a_ok != 0 { arrive consumed[s] }");
        }
        if self.each {
            w.line("if a_ok == 0 { wait a_ready[s] parity ph }");
            if self.bug != Some(PollBug::MissingSecondWait) {
                w.line("if b_ok == 0 { wait b_ready[s] parity ph }");
            }
        } else {
            let cond = if self.bug == Some(PollBug::AndForOr) {
                "a_ok == 0 && b_ok == 0"
            } else {
                "a_ok == 0 || b_ok == 0"
            };
            w.open(format!("if {cond}"));
            w.line("wait a_ready[s] parity ph");
            if self.bug != Some(PollBug::MissingSecondWait) {
                w.line("wait b_ready[s] parity ph");
            }
            w.close();
        }
        if skip.is_some() {
            w.close();
        }
        w.line("read a_buf[s]");
        w.line("read b_buf[s]");
        if self.fill == PollFill::Tma {
            w.line("fence_proxy_async");
        }
        w.line("arrive consumed[s]");
        w.close();
        w.close();
        w.finish()
    }
}
