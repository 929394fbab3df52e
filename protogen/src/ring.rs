//! [`Ring`]: producer / consumer pipeline.
//!
//! One shape of the generated protocols; the crate's documentation lists them all.

use super::{Src, pick};
use proptest::option;
use proptest::prelude::*;

/// How the producer fills a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// `write slot[s]` then `arrive full[s]`.
    Write,
    /// `arrive_expect_tx full[s], BYTES` + `tma slot[s] -> full[s], BYTES` (`split`: a second
    /// TMA into `slot_b` with the same bytes; `tma_first`: the copies are issued before the
    /// arrive, so the transaction count may go negative).
    Tma { split: bool, tma_first: bool },
    /// `cp_async slot[s]` + `cp_async_arrive full[s]` (with `noinc` the async arrive-on is the
    /// stage's arrival; without it the producer arrives as well).
    CpAsync { noinc: bool },
}

/// How the consumers track the stage and phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tracking {
    /// `let s = k % STAGES`, parity `(k / STAGES) % 2`.
    Computed,
    /// CUTLASS `PipelineState`: `idx` and `phase` locals, advanced at the end of each trip.
    Explicit,
}

/// How the consumers release a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// Every consumer thread arrives on `empty[s]` (count `NC`).
    PerThread,
    /// The consumers meet at named barrier 1, then the first one arrives (count 1).
    Leader,
    /// CUTLASS mainloop: release the previous stage after reading the current one, and the
    /// last stage after the loop (count `NC`; always two stages, one would deadlock).
    Lagged,
}

/// Deliberate bugs in a [`Ring`]. Trip and thread numbers are taken modulo `K` and `NC`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingBug {
    /// The producer starts with parity 0 instead of 1 (waits for a release that never comes).
    ProducerParity,
    /// The consumers start with parity 1 (pass the first wait at once).
    ConsumerParity,
    /// `init empty[s], count + 1`.
    EmptyCountOver,
    /// `init empty[s], count - 1`.
    EmptyCountUnder,
    /// `init full[s], 2`.
    FullCountOver,
    /// The armed bytes are 16 more than the TMA delivers.
    BytesOver,
    /// The armed bytes are 16 fewer than the TMA delivers.
    BytesUnder,
    /// The consumers skip the `full` wait on this trip.
    MissingConsumerWait(u32),
    /// The producer skips the `empty` wait on this trip.
    MissingProducerWait(u32),
    /// The consumers release before they read.
    ReleaseBeforeRead,
    /// No `syncthreads` after the init.
    MissingBootstrap,
    /// No `fence_proxy_async` between the producer's stores (or cp.async copies) and the
    /// consumers' `mma`, or between the consumers' reads and their release of a stage that a
    /// TMA refills.
    MissingProxyFence,
    /// The consumers release twice on this trip.
    DoubleRelease(u32),
    /// Consumer `.0` exits at trip `.1` without `arrive_drop`.
    EarlyExit(u32, u32),
    /// Consumer `.0` leaves at trip `.1` with `arrive_drop` on every `empty` barrier.
    EarlyExitDrop(u32, u32),
    /// The consumers read the other stage.
    WrongStage,
    /// The leader does not wait at the named barrier of its group ([`Release::Leader`]).
    MissingConsumerSync,
}

/// A producer/consumer ring: 1 producer thread (tid 0) and `consumers` consumer threads.
#[derive(Clone, Debug)]
pub struct Ring {
    pub consumers: u32,
    pub stages: u32,
    pub trips: u32,
    pub bytes: u32,
    pub fill: Fill,
    /// The consumers read with `mma` (async proxy) instead of `read`.
    pub mma: bool,
    pub tracking: Tracking,
    pub release: Release,
    /// `producer_tail`: the producer waits for the release of every stage before it leaves.
    pub tail: bool,
    /// `fence_mbarrier_init` after the init.
    pub init_fence: bool,
    pub bug: Option<RingBug>,
}

fn ring_bug() -> impl Strategy<Value = RingBug> {
    prop_oneof![
        Just(RingBug::ProducerParity),
        Just(RingBug::ConsumerParity),
        Just(RingBug::EmptyCountOver),
        Just(RingBug::EmptyCountUnder),
        Just(RingBug::FullCountOver),
        Just(RingBug::BytesOver),
        Just(RingBug::BytesUnder),
        (0..3u32).prop_map(RingBug::MissingConsumerWait),
        (0..3u32).prop_map(RingBug::MissingProducerWait),
        Just(RingBug::ReleaseBeforeRead),
        Just(RingBug::MissingBootstrap),
        Just(RingBug::MissingProxyFence),
        (0..3u32).prop_map(RingBug::DoubleRelease),
        (0..3u32, 0..3u32).prop_map(|(w, t)| RingBug::EarlyExit(w, t)),
        (0..3u32, 0..3u32).prop_map(|(w, t)| RingBug::EarlyExitDrop(w, t)),
        Just(RingBug::WrongStage),
        Just(RingBug::MissingConsumerSync),
    ]
}

fn fill() -> impl Strategy<Value = Fill> {
    prop_oneof![
        Just(Fill::Write),
        (any::<bool>(), any::<bool>())
            .prop_map(|(split, tma_first)| Fill::Tma { split, tma_first }),
        any::<bool>().prop_map(|noinc| Fill::CpAsync { noinc }),
    ]
}

pub(crate) fn bytes() -> impl Strategy<Value = u32> {
    prop_oneof![Just(1024u32), Just(64), Just(16_384)]
}

/// The parameters of a random [`Ring`].
pub fn ring_params() -> impl Strategy<Value = Ring> {
    (
        (1..=3u32, 1..=2u32, 1..=3u32, bytes()),
        (
            fill(),
            any::<bool>(),
            prop_oneof![Just(Tracking::Computed), Just(Tracking::Explicit)],
            prop_oneof![
                Just(Release::PerThread),
                Just(Release::Leader),
                Just(Release::Lagged)
            ],
            any::<bool>(),
            any::<bool>(),
        ),
        option::weighted(0.5, ring_bug()),
    )
        .prop_map(
            |(
                (consumers, stages, trips, bytes),
                (fill, mma, tracking, release, tail, init_fence),
                bug,
            )| Ring {
                consumers,
                stages,
                trips,
                bytes,
                fill,
                mma,
                tracking,
                release,
                tail,
                init_fence,
                bug,
            },
        )
}

/// Producer/consumer rings (with a mutation half of the time).
pub fn ring() -> impl Strategy<Value = String> {
    ring_params().prop_map(|r| r.source())
}

impl Ring {
    fn has(&self, b: RingBug) -> bool {
        self.bug == Some(b)
    }

    /// Emit the head of a trip: returns (stage expression, parity expression).
    fn head(&self, w: &mut Src, producer: bool) -> (&'static str, String) {
        match self.tracking {
            Tracking::Computed => {
                w.line("let s = k % STAGES");
                let flip = if producer {
                    !self.has(RingBug::ProducerParity)
                } else {
                    self.has(RingBug::ConsumerParity)
                };
                let p = if flip {
                    "((k / STAGES) % 2) ^ 1"
                } else {
                    "(k / STAGES) % 2"
                };
                ("s", p.to_string())
            }
            Tracking::Explicit => ("idx", "phase".to_string()),
        }
    }

    fn advance(&self, w: &mut Src) {
        if self.tracking == Tracking::Explicit {
            w.line("idx = idx + 1");
            w.open("if idx == STAGES");
            w.line("idx = 0");
            w.line("phase = phase ^ 1");
            w.close();
        }
    }

    fn state_init(&self, w: &mut Src, producer: bool) {
        if self.tracking == Tracking::Explicit {
            let start = if producer {
                !self.has(RingBug::ProducerParity)
            } else {
                self.has(RingBug::ConsumerParity)
            };
            w.line("let idx = 0");
            w.line(format!("let phase = {}", u32::from(start)));
        }
    }

    fn fill_stage(&self, w: &mut Src, x: &str) {
        match self.fill {
            Fill::Write => {
                w.line(format!("write slot[{x}]"));
                if self.mma && !self.has(RingBug::MissingProxyFence) {
                    w.line("fence_proxy_async");
                }
                w.line(format!("arrive full[{x}]"));
            }
            Fill::Tma { split, tma_first } => {
                let mut expect = if split { "2 * BYTES" } else { "BYTES" }.to_string();
                if self.has(RingBug::BytesOver) {
                    expect.push_str(" + 16");
                } else if self.has(RingBug::BytesUnder) {
                    expect.push_str(" - 16");
                }
                let arm = format!("arrive_expect_tx full[{x}], {expect}");
                if !tma_first {
                    w.line(&arm);
                }
                w.line(format!("tma slot[{x}] -> full[{x}], BYTES"));
                if split {
                    w.line(format!("tma slot_b[{x}] -> full[{x}], BYTES"));
                }
                if tma_first {
                    w.line(&arm);
                }
            }
            Fill::CpAsync { noinc } => {
                w.line(format!("cp_async slot[{x}]"));
                // cp.async writes through the generic proxy: an `mma` reader needs the issuer's
                // fence, released to it by the `arrive` below. (With `noinc` nothing releases
                // the fence: a `missing-proxy-fence` either way, semantics.md §6.3.)
                if self.mma && !self.has(RingBug::MissingProxyFence) {
                    w.line("fence_proxy_async");
                }
                if noinc {
                    w.line(format!("cp_async_arrive full[{x}] noinc"));
                } else {
                    w.line(format!("cp_async_arrive full[{x}]"));
                    w.line(format!("arrive full[{x}]"));
                }
            }
        }
    }

    fn release_stage(&self, w: &mut Src, x: &str) {
        match self.release {
            Release::PerThread => w.line(format!("arrive empty[{x}]")),
            Release::Leader => {
                if !self.has(RingBug::MissingConsumerSync) {
                    w.line("bar_sync 1, NC");
                }
                w.line(format!("if tid == 1 {{ arrive empty[{x}] }}"));
            }
            Release::Lagged => {
                w.open("if k > 0");
                w.line("arrive empty[rel]");
                w.line("rel = (rel + 1) % STAGES");
                w.close();
            }
        }
    }

    /// Render the protocol.
    pub fn source(&self) -> String {
        let k = self.trips.max(1);
        // Consumers that do not wait run ahead of the producer and of each other: the state
        // space grows fast with their number, so those bugs get at most 2 consumers.
        let nc = match self.bug {
            Some(RingBug::ConsumerParity | RingBug::MissingConsumerWait(_)) => {
                self.consumers.clamp(1, 2)
            }
            _ => self.consumers.max(1),
        };
        let split = matches!(self.fill, Fill::Tma { split: true, .. });
        let stages = if self.release == Release::Lagged {
            2
        } else {
            self.stages.clamp(1, 2)
        };
        let mut w = Src::new("gen_ring");
        w.param("STAGES", stages);
        w.param("K", k);
        w.param("NC", nc);
        w.param("BYTES", self.bytes.max(32));
        w.line("block 1 + NC");
        w.blank();
        w.line("mbarrier full[STAGES]");
        w.line("mbarrier empty[STAGES]");
        w.line("buffer slot[STAGES]");
        if split {
            w.line("buffer slot_b[STAGES]");
        }
        w.blank();

        let empty_count = match self.release {
            Release::Leader => "1",
            _ => "NC",
        };
        let empty_count = match self.bug {
            Some(RingBug::EmptyCountOver) => format!("{empty_count} + 1"),
            Some(RingBug::EmptyCountUnder) => format!("{empty_count} - 1"),
            _ => empty_count.to_string(),
        };
        let full_count = if self.has(RingBug::FullCountOver) {
            2
        } else {
            1
        };
        w.open("if tid == 0");
        w.open("for s in 0..STAGES");
        w.line(format!("init full[s], {full_count}"));
        w.line(format!("init empty[s], {empty_count}"));
        w.close();
        if self.init_fence {
            w.line("fence_mbarrier_init");
        }
        w.close();
        if !self.has(RingBug::MissingBootstrap) {
            w.line("syncthreads");
        }
        w.blank();

        // Producer.
        w.open("role producer when tid == 0");
        self.state_init(&mut w, true);
        w.open("for k in 0..K");
        let (x, p) = self.head(&mut w, true);
        let wait = format!("wait empty[{x}] parity {p}");
        match self.bug {
            Some(RingBug::MissingProducerWait(t)) => {
                w.line(format!("if k != {} {{ {wait} }}", pick(t, k)))
            }
            _ => w.line(&wait),
        }
        self.fill_stage(&mut w, x);
        self.advance(&mut w);
        w.close();
        if self.tail {
            match self.tracking {
                Tracking::Computed => {
                    w.open("for k in K..K + STAGES");
                    let (x, p) = self.head(&mut w, true);
                    w.line(format!("wait empty[{x}] parity {p}"));
                    w.close();
                }
                Tracking::Explicit => {
                    w.open("for j in 0..STAGES");
                    w.line("wait empty[idx] parity phase");
                    self.advance(&mut w);
                    w.close();
                }
            }
        }
        w.close();
        w.blank();

        // Consumers.
        w.open("role consumer when tid >= 1");
        self.state_init(&mut w, false);
        if self.release == Release::Lagged {
            w.line("let rel = 0");
        }
        w.open("for k in 0..K");
        let (x, p) = self.head(&mut w, false);
        match self.bug {
            Some(RingBug::EarlyExit(who, t)) => {
                w.line(format!(
                    "if tid == {} && k == {} {{ exit }}",
                    1 + pick(who, nc),
                    pick(t, k)
                ));
            }
            Some(RingBug::EarlyExitDrop(who, t)) => {
                w.open(format!(
                    "if tid == {} && k == {}",
                    1 + pick(who, nc),
                    pick(t, k)
                ));
                w.line("for j in 0..STAGES { arrive_drop empty[j] }");
                w.line("exit");
                w.close();
            }
            _ => {}
        }
        let wait = format!("wait full[{x}] parity {p}");
        match self.bug {
            Some(RingBug::MissingConsumerWait(t)) => {
                w.line(format!("if k != {} {{ {wait} }}", pick(t, k)))
            }
            _ => w.line(&wait),
        }
        if self.has(RingBug::ReleaseBeforeRead) {
            self.release_stage(&mut w, x);
        }
        let stage = if self.has(RingBug::WrongStage) {
            format!("({x} + 1) % STAGES")
        } else {
            x.to_string()
        };
        let access = if self.mma { "mma" } else { "read" };
        w.line(format!("{access} slot[{stage}]"));
        if split {
            w.line(format!("{access} slot_b[{stage}]"));
        }
        // Generic reads of a stage that the async proxy refills: fence before the release.
        if matches!(self.fill, Fill::Tma { .. })
            && !self.mma
            && !self.has(RingBug::MissingProxyFence)
        {
            w.line("fence_proxy_async");
        }
        if !self.has(RingBug::ReleaseBeforeRead) {
            self.release_stage(&mut w, x);
        }
        if let Some(RingBug::DoubleRelease(t)) = self.bug {
            w.open(format!("if k == {}", pick(t, k)));
            self.release_stage(&mut w, x);
            w.close();
        }
        self.advance(&mut w);
        w.close();
        if self.release == Release::Lagged {
            w.line("arrive empty[rel]");
        }
        w.close();
        w.finish()
    }
}
