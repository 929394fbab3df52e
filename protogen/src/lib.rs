//! Random `.phase` protocols for property tests.
//!
//! Every strategy here produces the SOURCE TEXT of a small, well-formed protocol: it loads
//! without errors (`protocols::load`), but it may contain a synchronization bug on purpose
//! (wrong parity, a count off by one, a missing `arrive_drop`, an early `exit`, a missing wait,
//! an `expect_tx` that does not match the bytes of the TMA, a missing fence or barrier, ...).
//! The property tests that use them compare the checker against itself (for example with and
//! without its state-space reductions), so a protocol does not need to be correct, only
//! meaningful: the shapes follow real kernels so that the interesting parts of the model (phases,
//! tokens, transaction bytes, async proxies, named barriers, clusters) are exercised.
//!
//! Shapes (one parameter struct each, rendered by its `source` method):
//!
//! - [`Ring`]: a warp-specialised producer/consumer ring, one producer thread and `NC`
//!   consumer threads over `STAGES` stages with `full`/`empty` mbarriers and parity waits
//!   (computed from the trip counter or tracked CUTLASS-style with `idx`/`phase`), filled by
//!   plain stores, TMA with transaction bytes or `cp.async` with an mbarrier arrive-on;
//!   released per thread, by a leader after a named barrier, or one stage late.
//! - [`Tokens`]: the split arrive/wait loop of the CUDA guide (`let t = arrive b` /
//!   `wait b token t`, or explicit parity), with an optional neighbour exchange through a
//!   buffer and an early exit with or without `arrive_drop`.
//! - [`Rounds`]: rounds of write / barrier / read / barrier synchronised by `syncthreads` or
//!   named barriers (`bar_sync id, count`, `bar_arrive`).
//! - [`PingPong`]: two groups taking turns with named barriers (FlashAttention-3 style).
//! - [`CpAsync`]: Ampere `cp_async` + `commit_group`/`wait_group` multistage loops, or
//!   `cp_async_arrive` on an mbarrier.
//! - [`Tma`]: a transaction barrier armed by one elected thread (`elect { }` or `tid == 0`)
//!   with `arrive_expect_tx` + `tma`, and an optional TMA-store epilogue with
//!   `fence_proxy_async`.
//! - [`Cluster`]: two-block clusters: the CUTLASS multicast ring with remote releases, or a
//!   remote-signal ping between the two blocks.
//! - [`Pipe`]: `cuda::pipeline` loops, block scope (partitioned with one or two producers, or
//!   unified) or thread scope (`consumer_wait_prior`).
//! - [`Tile`]: a cooperative fill: several producers `write part` one stage, then arrive.
//! - [`Poll`]: consumers that `test_wait` two barriers per stage (each filled by its own loader)
//!   and branch on the results to wait (TensorRT-LLM's tinygemm2).
//! - [`Dispatch`]: Triton's warp-specialization dispatch: every dispatcher thread stores the same
//!   value into a flag (`write flag value N`), workers read it after a whole-block barrier that
//!   the two groups reach at different statements (`bar_sync 1 unaligned`).
//!
//! - [`PerWarp`] (module [`warps`]): per-warp releases: consumer warps meet at `syncwarp` and
//!   one lane (`if lane == L`) or `elect` arrives for the warp, the empty barrier counting
//!   warps; a few live lanes per warp, the rest exit at once.
//!
//! - [`litmus`] (a module of its own): small memory-model programs (flags with scopes, named
//!   barriers, mbarrier phases, cluster barriers, kernels in domains, proxy fences) for the
//!   PTX memory-model oracle (crate `mmodel`); not part of [`protocol`].
//!
//! Every structural choice (roles, counts, parities, which mutation) is a strategy parameter, so
//! proptest shrinks a failing case to a small protocol: numbers shrink toward their low end,
//! enums toward their first (simplest) variant and mutations toward `None`. Thread counts are
//! small (at most 5 threads in total, at most 3 trips, at most 2 stages in rings) so that an
//! exhaustive search without reductions finishes in a fraction of a second: in samples of a few
//! thousand per shape the largest explores under 10 000 states (about 0.1 s in a release
//! build); the bugs that let threads run ahead (surplus arrivals, skipped waits) get fewer trips
//! or threads to stay there.
//!
//! Entry points: [`protocol`] (a union of every shape), [`ring`], [`tokens`], [`rounds`],
//! [`pingpong`], [`cp_async`], [`tma`], [`cluster`], [`pipe`], [`tile`], [`poll`],
//! [`dispatch`]; the `*_params` functions give the
//! parameter structs themselves.

pub mod elements;
pub mod litmus;
pub mod warps;
pub use elements::{Elements, ElementsBug, InitBy, elements, elements_params};
pub use warps::{PerWarp, PerWarpBug, Releaser, per_warp, per_warp_params};

use proptest::option;
use proptest::prelude::*;
use std::fmt::Write as _;

// ---------------------------------------------------------------------------------------------
// Source writer
// ---------------------------------------------------------------------------------------------

/// A tiny indenting writer for `.phase` source.
struct Src {
    text: String,
    depth: usize,
}

impl Src {
    fn new(name: &str) -> Self {
        let mut s = Src {
            text: String::new(),
            depth: 0,
        };
        s.line(format!("protocol {name}"));
        s
    }

    fn line(&mut self, l: impl AsRef<str>) {
        let l = l.as_ref();
        if !l.is_empty() {
            for _ in 0..self.depth {
                self.text.push_str("  ");
            }
            self.text.push_str(l);
        }
        self.text.push('\n');
    }

    fn blank(&mut self) {
        self.text.push('\n');
    }

    fn open(&mut self, header: impl AsRef<str>) {
        self.line(format!("{} {{", header.as_ref()));
        self.depth += 1;
    }

    fn close(&mut self) {
        self.depth -= 1;
        self.line("}");
    }

    fn param(&mut self, name: &str, value: impl std::fmt::Display) {
        self.line(format!("param {name} = {value}"));
    }

    fn finish(self) -> String {
        self.text
    }
}

/// `x % n` for a generated index `x` and a non-zero bound `n`.
fn pick(x: u32, n: u32) -> u32 {
    x % n.max(1)
}

// ---------------------------------------------------------------------------------------------
// Ring: producer / consumer pipeline
// ---------------------------------------------------------------------------------------------

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

fn bytes() -> impl Strategy<Value = u32> {
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

// ---------------------------------------------------------------------------------------------
// Tokens: split arrive / wait loop
// ---------------------------------------------------------------------------------------------

/// Deliberate bugs in a [`Tokens`] loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenBug {
    /// On this round, wait with the token of a phase before the loop (parity waits: the
    /// opposite parity).
    StaleToken(u32),
    /// `init bar, NT + 1`.
    CountOver,
    /// `init bar, NT - 1`.
    CountUnder,
    /// The leaver drops but does not exit (it keeps arriving).
    DropWithoutExit,
    /// The leaver exits without `arrive_drop`.
    ExitWithoutDrop,
    /// No `syncthreads` after the init.
    MissingBootstrap,
    /// The exchange has no second arrive/wait: the next round's write races with the
    /// neighbour's read.
    MissingWarGuard,
}

/// How a [`Tokens`] loop waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitBy {
    /// `let t = arrive bar` / `wait bar token t`.
    Token,
    /// `arrive bar` / `wait bar parity ph` with a tracked phase bit.
    Parity,
}

/// The split arrive/wait loop of the CUDA programming guide, `threads` threads, `rounds` trips.
#[derive(Clone, Debug)]
pub struct Tokens {
    pub threads: u32,
    pub rounds: u32,
    /// `barrier` (cuda::barrier) instead of `mbarrier`.
    pub cxx_barrier: bool,
    /// The barrier is initialised inside `elect { }` instead of `if tid == 0`.
    pub elect_init: bool,
    pub wait: WaitBy,
    /// Each thread writes `data[tid]` before its arrive and reads its neighbour's after the
    /// wait; a second arrive/wait per round keeps the next write after the neighbour's read.
    pub exchange: bool,
    /// (thread, round) of a thread that leaves the loop early with `arrive_drop` + `exit`.
    pub leaver: Option<(u32, u32)>,
    pub bug: Option<TokenBug>,
}

fn token_bug() -> impl Strategy<Value = TokenBug> {
    prop_oneof![
        (0..3u32).prop_map(TokenBug::StaleToken),
        Just(TokenBug::CountOver),
        Just(TokenBug::CountUnder),
        Just(TokenBug::DropWithoutExit),
        Just(TokenBug::ExitWithoutDrop),
        Just(TokenBug::MissingBootstrap),
        Just(TokenBug::MissingWarGuard),
    ]
}

/// The parameters of a random [`Tokens`] loop.
pub fn tokens_params() -> impl Strategy<Value = Tokens> {
    (
        (2..=4u32, 1..=3u32, any::<bool>(), any::<bool>()),
        (
            prop_oneof![Just(WaitBy::Token), Just(WaitBy::Parity)],
            any::<bool>(),
            option::of((0..4u32, 0..3u32)),
        ),
        option::weighted(0.5, token_bug()),
    )
        .prop_map(
            |((threads, rounds, cxx_barrier, elect_init), (wait, exchange, leaver), bug)| Tokens {
                threads,
                rounds,
                cxx_barrier,
                elect_init,
                wait,
                exchange,
                leaver,
                bug,
            },
        )
}

/// Split arrive/wait loops with tokens or parities, early exits and buffer exchanges.
pub fn tokens() -> impl Strategy<Value = String> {
    tokens_params().prop_map(|t| t.source())
}

impl Tokens {
    fn has(&self, b: TokenBug) -> bool {
        self.bug == Some(b)
    }

    /// One arrive/wait pair; `stale` waits on the pre-loop phase instead.
    fn phase(&self, w: &mut Src, tok: &str, stale: bool) {
        match self.wait {
            WaitBy::Token => {
                w.line(format!("let {tok} = arrive bar"));
                w.line("compute");
                let t = if stale { "first" } else { tok };
                w.line(format!("wait bar token {t}"));
            }
            WaitBy::Parity => {
                w.line("arrive bar");
                w.line("compute");
                let p = if stale { "ph ^ 1" } else { "ph" };
                w.line(format!("wait bar parity {p}"));
                w.line("ph = ph ^ 1");
            }
        }
    }

    /// Render the protocol.
    pub fn source(&self) -> String {
        // Surplus arrivals (a count too low, a drop without exit) complete phases early and let
        // the threads drift apart: the state space grows fast with the rounds and the exchange,
        // so those bugs get at most 2 rounds and no exchange (a stale token: at most 2 rounds).
        let surplus = matches!(
            self.bug,
            Some(TokenBug::CountUnder | TokenBug::DropWithoutExit)
        );
        let nt = self.threads.max(1);
        let rounds = if surplus || matches!(self.bug, Some(TokenBug::StaleToken(_))) {
            self.rounds.clamp(1, 2)
        } else {
            self.rounds.max(1)
        };
        let exchange = self.exchange && !surplus;
        let mut w = Src::new("gen_tokens");
        w.param("NT", nt);
        w.param("N", rounds);
        w.line("block NT");
        w.blank();
        w.line(if self.cxx_barrier {
            "barrier bar"
        } else {
            "mbarrier bar"
        });
        if exchange {
            w.line("buffer data[NT]");
        }
        w.blank();
        let count = match self.bug {
            Some(TokenBug::CountOver) => "NT + 1",
            Some(TokenBug::CountUnder) => "NT - 1",
            _ => "NT",
        };
        if self.elect_init {
            w.line(format!("elect {{ init bar, {count} }}"));
        } else {
            w.line(format!("if tid == 0 {{ init bar, {count} }}"));
        }
        if !self.has(TokenBug::MissingBootstrap) {
            w.line("syncthreads");
        }
        let stale_round = match self.bug {
            Some(TokenBug::StaleToken(r)) => Some(pick(r, rounds)),
            _ => None,
        };
        if self.wait == WaitBy::Parity {
            w.line("let ph = 0");
        }
        if stale_round.is_some() && self.wait == WaitBy::Token {
            w.line("let first = arrive bar");
            w.line("wait bar token first");
        }
        w.blank();
        w.open("for i in 0..N");
        let leaver = match (self.leaver, self.bug) {
            (Some(l), _) => Some(l),
            (None, Some(TokenBug::DropWithoutExit | TokenBug::ExitWithoutDrop)) => Some((0, 0)),
            _ => None,
        };
        if let Some((who, at)) = leaver {
            w.open(format!(
                "if tid == {} && i == {}",
                pick(who, nt),
                pick(at, rounds)
            ));
            if !self.has(TokenBug::ExitWithoutDrop) {
                w.line("arrive_drop bar");
            }
            if !self.has(TokenBug::DropWithoutExit) {
                w.line("exit");
            }
            w.close();
        }
        if exchange {
            w.line("write data[tid]");
        }
        match stale_round {
            Some(r) => {
                w.open(format!("if i == {r}"));
                self.phase(&mut w, "t", true);
                w.close();
                w.open("else");
                self.phase(&mut w, "t", false);
                w.close();
            }
            None => self.phase(&mut w, "t", false),
        }
        if exchange {
            w.line("read data[(tid + 1) % NT]");
        }
        if exchange && !self.has(TokenBug::MissingWarGuard) {
            self.phase(&mut w, "u", false);
        }
        w.close();
        w.finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Rounds: syncthreads and named barriers
// ---------------------------------------------------------------------------------------------

/// A block-level barrier of a [`Rounds`] protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sync {
    /// `syncthreads`.
    Syncthreads,
    /// `bar_sync ID, NT` (`counted`) or `bar_sync ID`.
    Named { id: u32, counted: bool },
}

/// Who writes and who reads in a [`Rounds`] protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exchange {
    /// Every thread writes `data[tid]` and reads its neighbour's slot.
    AllToAll,
    /// Thread 0 writes `data[0]`, the others read it; the writer only `bar_arrive`s on the
    /// first barrier and the readers only `bar_arrive` on the second (when it is named).
    Broadcast,
}

/// Deliberate bugs in a [`Rounds`] protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundsBug {
    /// The second barrier is missing (write-after-read race with the next round).
    MissingSecond,
    /// The first barrier is missing.
    MissingFirst,
    /// Thread `.0` reaches the first barrier at a different statement.
    Divergent(u32),
    /// The named barrier counts one thread more than the block.
    CountOver,
    /// The named barrier counts one thread fewer than the block.
    CountUnder,
    /// Thread `.0` exits after the first round.
    EarlyExit(u32),
}

/// Rounds of write / barrier / read / barrier.
#[derive(Clone, Debug)]
pub struct Rounds {
    pub threads: u32,
    pub rounds: u32,
    pub exchange: Exchange,
    pub first: Sync,
    pub second: Sync,
    pub bug: Option<RoundsBug>,
}

fn sync() -> impl Strategy<Value = Sync> {
    prop_oneof![
        Just(Sync::Syncthreads),
        (1..=2u32, any::<bool>()).prop_map(|(id, counted)| Sync::Named { id, counted }),
    ]
}

fn rounds_bug() -> impl Strategy<Value = RoundsBug> {
    prop_oneof![
        Just(RoundsBug::MissingSecond),
        Just(RoundsBug::MissingFirst),
        (0..4u32).prop_map(RoundsBug::Divergent),
        Just(RoundsBug::CountOver),
        Just(RoundsBug::CountUnder),
        (0..4u32).prop_map(RoundsBug::EarlyExit),
    ]
}

/// The parameters of random [`Rounds`].
pub fn rounds_params() -> impl Strategy<Value = Rounds> {
    (
        2..=4u32,
        1..=3u32,
        prop_oneof![Just(Exchange::AllToAll), Just(Exchange::Broadcast)],
        sync(),
        sync(),
        option::weighted(0.5, rounds_bug()),
    )
        .prop_map(|(threads, rounds, exchange, first, second, bug)| Rounds {
            threads,
            rounds,
            exchange,
            first,
            second,
            bug,
        })
}

/// Rounds synchronised by `syncthreads` and named barriers.
pub fn rounds() -> impl Strategy<Value = String> {
    rounds_params().prop_map(|r| r.source())
}

impl Rounds {
    fn count(&self) -> &'static str {
        match self.bug {
            Some(RoundsBug::CountOver) => "NT + 1",
            Some(RoundsBug::CountUnder) => "NT - 1",
            _ => "NT",
        }
    }

    /// A barrier; `arrive_only` threads (given as a condition) use `bar_arrive` instead.
    fn barrier(&self, w: &mut Src, s: Sync, arrive_only: Option<&str>) {
        match s {
            Sync::Syncthreads => w.line("syncthreads"),
            Sync::Named { id, counted } => {
                let count = if counted {
                    format!(", {}", self.count())
                } else {
                    String::new()
                };
                match arrive_only {
                    Some(cond) => {
                        w.open(format!("if {cond}"));
                        w.line(format!("bar_arrive {id}{count}"));
                        w.close();
                        w.open("else");
                        w.line(format!("bar_sync {id}{count}"));
                        w.close();
                    }
                    None => w.line(format!("bar_sync {id}{count}")),
                }
            }
        }
    }

    /// Render the protocol.
    pub fn source(&self) -> String {
        let nt = self.threads.max(2);
        let mut w = Src::new("gen_rounds");
        w.param("NT", nt);
        w.param("K", self.rounds.max(1));
        w.line("block NT");
        w.blank();
        w.line("buffer data[NT]");
        w.blank();
        w.open("for k in 0..K");
        if let Some(RoundsBug::EarlyExit(who)) = self.bug {
            w.line(format!("if k == 1 && tid == {} {{ exit }}", pick(who, nt)));
        }
        let (writer, reader) = match self.exchange {
            Exchange::AllToAll => (None, None),
            Exchange::Broadcast => (Some("tid == 0"), Some("tid != 0")),
        };
        match writer {
            None => w.line("write data[tid]"),
            Some(c) => w.line(format!("if {c} {{ write data[0] }}")),
        }
        if !matches!(self.bug, Some(RoundsBug::MissingFirst)) {
            if let Some(RoundsBug::Divergent(who)) = self.bug {
                w.open(format!("if tid == {}", pick(who, nt)));
                self.barrier(&mut w, self.first, writer);
                w.close();
                w.open("else");
                self.barrier(&mut w, self.first, writer);
                w.close();
            } else {
                self.barrier(&mut w, self.first, writer);
            }
        }
        match reader {
            None => w.line("read data[(tid + 1) % NT]"),
            Some(c) => w.line(format!("if {c} {{ read data[0] }}")),
        }
        if !matches!(self.bug, Some(RoundsBug::MissingSecond)) {
            // A named second barrier must not reuse the id of a named first one while the
            // writer may still be arriving on it: keep them apart.
            let second = match (self.first, self.second) {
                (Sync::Named { id: a, .. }, Sync::Named { id: b, counted }) if a == b => {
                    Sync::Named { id: 3 - a, counted }
                }
                (_, s) => s,
            };
            self.barrier(&mut w, second, reader);
        }
        w.close();
        w.finish()
    }
}

// ---------------------------------------------------------------------------------------------
// PingPong: two groups taking turns with named barriers
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// CpAsync: Ampere cp.async groups and mbarrier arrive-on
// ---------------------------------------------------------------------------------------------

/// Deliberate bugs in a [`CpAsync`] protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpAsyncBug {
    /// `wait_group` allows one group too many in flight.
    WaitTooLax,
    /// The `syncthreads` of the main loop is missing.
    MissingSync,
    /// The thread reads before it waits.
    ReadBeforeWait,
    /// One arrival too many per phase (mbarrier mode).
    ExtraArrive,
    /// The thread's own arrive is missing (mbarrier mode without `noinc`).
    MissingArrive,
}

/// How a [`CpAsync`] protocol waits for its copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpWait {
    /// `commit_group` / `wait_group STAGES - 2` multistage loop.
    Groups,
    /// `cp_async_arrive bar [noinc]` + `wait bar parity`.
    Mbarrier { noinc: bool },
}

/// `cp.async` copies of `threads` threads over `tiles` tiles.
#[derive(Clone, Debug)]
pub struct CpAsync {
    pub threads: u32,
    pub stages: u32,
    pub tiles: u32,
    pub mode: CpWait,
    pub bug: Option<CpAsyncBug>,
}

/// The parameters of a random [`CpAsync`].
pub fn cp_async_params() -> impl Strategy<Value = CpAsync> {
    (
        2..=3u32,
        2..=3u32,
        1..=3u32,
        prop_oneof![
            Just(CpWait::Groups),
            any::<bool>().prop_map(|noinc| CpWait::Mbarrier { noinc })
        ],
        option::weighted(
            0.5,
            prop_oneof![
                Just(CpAsyncBug::WaitTooLax),
                Just(CpAsyncBug::MissingSync),
                Just(CpAsyncBug::ReadBeforeWait),
                Just(CpAsyncBug::ExtraArrive),
                Just(CpAsyncBug::MissingArrive),
            ],
        ),
    )
        .prop_map(|(threads, stages, tiles, mode, bug)| CpAsync {
            threads,
            stages,
            tiles,
            mode,
            bug,
        })
}

/// `cp_async` with `commit_group`/`wait_group` or an mbarrier arrive-on.
pub fn cp_async() -> impl Strategy<Value = String> {
    cp_async_params().prop_map(|c| c.source())
}

impl CpAsync {
    fn has(&self, b: CpAsyncBug) -> bool {
        self.bug == Some(b)
    }

    /// Render the protocol.
    pub fn source(&self) -> String {
        // A count one too low lets the threads drift a phase apart; the state space grows fast
        // with the tiles, so that bug gets at most 2.
        let tiles = if self.has(CpAsyncBug::ExtraArrive) {
            self.tiles.clamp(1, 2)
        } else {
            self.tiles.max(1)
        };
        let mut w = Src::new("gen_cp_async");
        w.param("NT", self.threads.max(1));
        w.param("STAGES", self.stages.max(2));
        w.param("K", tiles);
        w.line("block NT");
        w.blank();
        match self.mode {
            CpWait::Groups => {
                w.line("buffer tile[STAGES * NT]");
                w.blank();
                w.open("for s in 0..STAGES - 1");
                w.line("cp_async tile[s * NT + tid]");
                w.line("commit_group");
                w.close();
                w.line("wait_group STAGES - 2");
                w.line("syncthreads");
                w.open("for k in 0..K");
                w.line("let w = k + STAGES - 1");
                w.line("if w < K { cp_async tile[(w % STAGES) * NT + tid] }");
                w.line("commit_group");
                let read = "read tile[(k % STAGES) * NT + (tid + 1) % NT]";
                let lax = if self.has(CpAsyncBug::WaitTooLax) {
                    "STAGES - 1"
                } else {
                    "STAGES - 2"
                };
                if self.has(CpAsyncBug::ReadBeforeWait) {
                    w.line(format!("wait_group {lax}"));
                    w.line(read);
                } else {
                    w.line(read);
                    w.line(format!("wait_group {lax}"));
                }
                if !self.has(CpAsyncBug::MissingSync) {
                    w.line("syncthreads");
                }
                w.close();
            }
            CpWait::Mbarrier { noinc } => {
                w.line("mbarrier bar");
                w.line("buffer part[NT]");
                w.blank();
                let mut count = if noinc { "2 * NT" } else { "NT" }.to_string();
                if self.has(CpAsyncBug::ExtraArrive) {
                    count.push_str(" - 1");
                }
                w.line(format!("if tid == 0 {{ init bar, {count} }}"));
                w.line("syncthreads");
                w.open("for k in 0..K");
                w.line("cp_async part[tid]");
                w.line(format!(
                    "cp_async_arrive bar{}",
                    if noinc { " noinc" } else { "" }
                ));
                if !self.has(CpAsyncBug::MissingArrive) {
                    w.line("arrive bar");
                }
                let read = "read part[(tid + 1) % NT]";
                if self.has(CpAsyncBug::ReadBeforeWait) {
                    w.line(read);
                    w.line("wait bar parity k % 2");
                } else {
                    w.line("wait bar parity k % 2");
                    w.line(read);
                }
                if !self.has(CpAsyncBug::MissingSync) {
                    w.line("syncthreads");
                }
                w.close();
            }
        }
        w.finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Tma: transaction barrier with an elected issuer, optional TMA-store epilogue
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Cluster: two blocks
// ---------------------------------------------------------------------------------------------

/// What the two blocks of a [`Cluster`] do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterShape {
    /// Each block signals the peer's barrier `b` with a remote arrive every round and waits on
    /// its own; before the next round the blocks meet again, with a `cluster_sync` or (`ack`)
    /// a second remote-arrive handshake on `ack`, so no arrive runs ahead of the peer's wait.
    Signal { ack: bool },
    /// The CUTLASS multicast ring: each block's producer multicasts half of a tile to both
    /// blocks (`a_tile`: and loads a tile of its own); consumers release the stage to both
    /// blocks with remote arrives. The async copies make this the most expensive shape to
    /// explore, so two stages run one trip (without `a_tile`) and one stage runs at most 3
    /// trips (2 with `a_tile`).
    Multicast { stages: u32, a_tile: bool },
    /// Distributed shared memory: every round thread 0 of each block writes the block's buffer
    /// `x`, the blocks meet (`cluster_sync`), every thread reads the peer's copy
    /// `x @ (1 - cta)` (`ld.shared::cluster`), and the blocks meet again before the next write
    /// and before they exit (a block must outlive its peers' reads of its shared memory).
    Exchange,
    /// The CUTLASS sm90 cluster mainloop at its real shape (issue 24 point 3,
    /// `bench/cluster_prologue_384.phase`): thread 0 produces (multicast halves), `idle`
    /// threads only pass the prologue and finish, and consumer groups of `group` threads (two
    /// groups of one, or one of two) each meet at a named barrier (with `group` > 1) after
    /// their reads, then one signalling
    /// thread per destination block releases the stage there (CUTLASS `is_signalling_thread`;
    /// with `group` = 1 one thread signals both). There is no cluster barrier at the end: the
    /// producer's tail (its waits on every stage's last release) keeps its block running until
    /// the peer's remote arrives have landed, so the exits of the other threads, the remote
    /// arrives and the peer's multicast landings are steps the partial-order reduction may
    /// take alone only while a thread of the block they address cannot finish
    /// (`footprint::Frozen::pinned`).
    Signalling { idle: bool, group: u32 },
}

/// Deliberate bugs in a [`Cluster`] protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterBug {
    /// No `cluster_sync` before the exit: a peer may arrive on a barrier of an exited block.
    MissingFinalSync,
    /// No `fence_mbarrier_init` after the init.
    MissingInitFence,
    /// No cluster barrier after the init.
    MissingInitSync,
    /// The barrier counts one arrival fewer than arrive.
    CountUnder,
    /// The barrier counts one arrival more than arrive.
    CountOver,
    /// The consumers release only their own block's stage (multicast) / signal their own
    /// block (signal).
    LocalOnly,
    /// The producer leaves without waiting for the last releases (multicast).
    MissingTail,
    /// No handshake between rounds (signal): an arrive may run a phase ahead of the peer.
    MissingRoundSync,
    /// The producer expects the bytes of one half only (signalling): a stage completes before
    /// the peer's half lands.
    ShortBytes,
    /// The consumers wait for the wrong parity (signalling).
    FlippedParity,
    /// The last consumer group does not release the stage in block 1 (signalling).
    MissingArrive,
}

/// A two-block cluster.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub shape: ClusterShape,
    /// Threads per block in the signal shape (1 or 2).
    pub threads: u32,
    pub rounds: u32,
    /// `cluster_arrive` + `cluster_wait` instead of `cluster_sync` after the init.
    pub split_sync: bool,
    /// Remote arrives carry `scope cluster`.
    pub cluster_scope: bool,
    pub bug: Option<ClusterBug>,
}

/// The parameters of a random [`Cluster`].
pub fn cluster_params() -> impl Strategy<Value = Cluster> {
    (
        prop_oneof![
            any::<bool>().prop_map(|ack| ClusterShape::Signal { ack }),
            (1..=2u32, any::<bool>())
                .prop_map(|(stages, a_tile)| ClusterShape::Multicast { stages, a_tile }),
            Just(ClusterShape::Exchange),
            (any::<bool>(), 1..=2u32)
                .prop_map(|(idle, group)| ClusterShape::Signalling { idle, group }),
        ],
        1..=2u32,
        1..=3u32,
        any::<bool>(),
        any::<bool>(),
        option::weighted(
            0.5,
            prop_oneof![
                Just(ClusterBug::MissingFinalSync),
                Just(ClusterBug::MissingInitFence),
                Just(ClusterBug::MissingInitSync),
                Just(ClusterBug::CountUnder),
                Just(ClusterBug::CountOver),
                Just(ClusterBug::LocalOnly),
                Just(ClusterBug::MissingTail),
                Just(ClusterBug::MissingRoundSync),
                Just(ClusterBug::ShortBytes),
                Just(ClusterBug::FlippedParity),
                Just(ClusterBug::MissingArrive),
            ],
        ),
    )
        .prop_map(
            |(shape, threads, rounds, split_sync, cluster_scope, bug)| Cluster {
                shape,
                threads,
                rounds,
                split_sync,
                cluster_scope,
                bug,
            },
        )
}

/// Two-block clusters with remote arrives and multicast TMA.
pub fn cluster() -> impl Strategy<Value = String> {
    cluster_params().prop_map(|c| c.source())
}

impl Cluster {
    fn has(&self, b: ClusterBug) -> bool {
        self.bug == Some(b)
    }

    fn bootstrap(&self, w: &mut Src, inits: &[(&str, String)]) {
        w.open("if tid == 0");
        for (bar, count) in inits {
            w.line(format!("init {bar}, {count}"));
        }
        if !self.has(ClusterBug::MissingInitFence) {
            w.line("fence_mbarrier_init");
        }
        w.close();
        if !self.has(ClusterBug::MissingInitSync) {
            if self.split_sync {
                w.line("cluster_arrive");
                w.line("cluster_wait");
            } else {
                w.line("cluster_sync");
            }
        }
    }

    fn count(&self, base: &str) -> String {
        match self.bug {
            Some(ClusterBug::CountUnder) => format!("{base} - 1"),
            Some(ClusterBug::CountOver) => format!("{base} + 1"),
            _ => base.to_string(),
        }
    }

    fn scope(&self) -> &'static str {
        if self.cluster_scope {
            " scope cluster"
        } else {
            ""
        }
    }

    /// The [`ClusterShape::Signalling`] protocol: one stage, so that every trip after the first
    /// refills a stage the peer's consumers may still read. Sizes stay where the unreduced
    /// search finishes (two groups of two threads did not, in 200 000 states): a group of two
    /// threads is the only one, and has no idle thread beside it.
    fn signalling(&self, rounds: u32, idle: bool, group: u32) -> String {
        let group = group.clamp(1, 2);
        let idle = idle && group == 1;
        let first = 1 + u32::from(idle);
        let groups = if group == 1 { 2 } else { 1 };
        let mut w = Src::new("gen_cluster_signalling");
        w.param("K", rounds.min(2));
        w.param("G", group);
        w.param("NG", groups);
        w.param("F", first);
        w.param("HALF", 1024);
        w.line("block F + NG * G");
        w.line("cluster 2");
        w.blank();
        w.line("mbarrier full");
        w.line("mbarrier empty");
        w.line("buffer half[2]");
        w.blank();
        self.bootstrap(
            &mut w,
            &[("full", "1".to_string()), ("empty", self.count("2 * NG"))],
        );
        w.blank();
        let bytes = if self.has(ClusterBug::ShortBytes) {
            "HALF"
        } else {
            "2 * HALF"
        };
        w.open("role producer when tid == 0");
        w.open("for k in 0..K");
        w.line("wait empty parity (k + 1) % 2");
        w.line(format!("arrive_expect_tx full, {bytes}"));
        w.line("tma half[cta] -> full, HALF multicast 0b11");
        w.close();
        if !self.has(ClusterBug::MissingTail) {
            w.line("wait empty parity (K + 1) % 2");
        }
        w.close();
        let parity = if self.has(ClusterBug::FlippedParity) {
            "(k + 1) % 2"
        } else {
            "k % 2"
        };
        w.open("role consumer when tid >= F");
        w.open("for k in 0..K");
        w.line(format!("wait full parity {parity}"));
        w.line("mma half[0]");
        w.line("mma half[1]");
        if group > 1 {
            w.line("bar_sync 1 + (tid - F) / G, G");
        }
        let (to0, to1) = if self.has(ClusterBug::LocalOnly) {
            ("cta", "cta")
        } else {
            ("0", "1")
        };
        w.line(format!(
            "if (tid - F) % G == 0 {{ arrive empty @ {to0}{} }}",
            self.scope()
        ));
        let last = if self.has(ClusterBug::MissingArrive) {
            "(tid - F) % G == G - 1 && tid < F + (NG - 1) * G"
        } else {
            "(tid - F) % G == G - 1"
        };
        w.line(format!(
            "if {last} {{ arrive empty @ {to1}{} }}",
            self.scope()
        ));
        w.close();
        w.close();
        if self.has(ClusterBug::MissingFinalSync) {
            // Here the final barrier is the producer's tail; without a bug the shape has no
            // `cluster_sync` at the end, so this one adds nothing to find.
            w.line("cluster_sync");
        }
        w.finish()
    }

    /// The [`ClusterShape::Exchange`] protocol. Of the bugs, `MissingFinalSync` lets a block
    /// exit while its peer still reads its buffer (`remote-cta-exited`), `MissingRoundSync`
    /// lets the next round's write race with the peer's read, and `LocalOnly` reads the block's
    /// own buffer (no bug); the others concern barriers, which this shape has none of.
    fn exchange(&self, rounds: u32) -> String {
        let mut w = Src::new("gen_cluster_exchange");
        w.param("NT", self.threads.clamp(1, 2));
        w.param("K", rounds.min(2));
        w.line("block NT");
        w.line("cluster 2");
        w.blank();
        w.line("buffer x");
        w.blank();
        let peer = if self.has(ClusterBug::LocalOnly) {
            "cta"
        } else {
            "1 - cta"
        };
        w.open("for k in 0..K");
        w.open("if tid == 0");
        w.line("write x");
        w.close();
        if self.split_sync {
            w.line("cluster_arrive");
            w.line("cluster_wait");
        } else {
            w.line("cluster_sync");
        }
        w.line(format!("read x @ ({peer})"));
        if !self.has(ClusterBug::MissingRoundSync) {
            w.open("if k + 1 < K");
            w.line("cluster_sync");
            w.close();
        }
        w.close();
        if !self.has(ClusterBug::MissingFinalSync) {
            w.line("cluster_sync");
        }
        w.finish()
    }

    /// Render the protocol.
    pub fn source(&self) -> String {
        // A count one too low lets a block run a phase ahead: at most 2 rounds for that bug.
        let rounds = if self.has(ClusterBug::CountUnder) {
            self.rounds.clamp(1, 2)
        } else {
            self.rounds.max(1)
        };
        match self.shape {
            ClusterShape::Signal { ack } => {
                let mut w = Src::new("gen_cluster_signal");
                w.param("NT", self.threads.clamp(1, 2));
                w.param("K", rounds);
                w.line("block NT");
                w.line("cluster 2");
                w.blank();
                w.line("mbarrier b");
                if ack {
                    w.line("mbarrier ack");
                }
                w.blank();
                let mut inits = vec![("b", self.count("NT"))];
                if ack {
                    inits.push(("ack", "NT".to_string()));
                }
                self.bootstrap(&mut w, &inits);
                w.open("for k in 0..K");
                let peer = if self.has(ClusterBug::LocalOnly) {
                    "cta"
                } else {
                    "1 - cta"
                };
                w.line(format!("arrive b @ ({peer}){}", self.scope()));
                w.line("wait b parity k % 2");
                if !self.has(ClusterBug::MissingRoundSync) {
                    if ack {
                        w.line(format!("arrive ack @ (1 - cta){}", self.scope()));
                        w.line("wait ack parity k % 2");
                    } else {
                        w.line("cluster_sync");
                    }
                }
                w.close();
                if !self.has(ClusterBug::MissingFinalSync) {
                    w.line("cluster_sync");
                }
                w.finish()
            }
            ClusterShape::Exchange => self.exchange(rounds),
            ClusterShape::Signalling { idle, group } => self.signalling(rounds, idle, group),
            ClusterShape::Multicast { stages, a_tile } => {
                let stages = stages.clamp(1, 2);
                let a_tile = a_tile && stages == 1;
                let cap = match (stages, a_tile) {
                    (2, _) => 1,
                    (_, true) => 2,
                    _ => 3,
                };
                let mut w = Src::new("gen_cluster_multicast");
                w.param("STAGES", stages);
                w.param("K", rounds.min(cap));
                if a_tile {
                    w.param("A_BYTES", 1024);
                }
                w.param("B_BYTES", 2048);
                w.line("block 2");
                w.line("cluster 2");
                w.blank();
                w.line("mbarrier full[STAGES]");
                w.line("mbarrier empty[STAGES]");
                if a_tile {
                    w.line("buffer smem_a[STAGES]");
                }
                w.line("buffer smem_b[STAGES * 2]");
                w.blank();
                w.open("if tid == 0");
                w.open("for s in 0..STAGES");
                w.line("init full[s], 1");
                w.line(format!("init empty[s], {}", self.count("2")));
                w.close();
                if !self.has(ClusterBug::MissingInitFence) {
                    w.line("fence_mbarrier_init");
                }
                w.close();
                if !self.has(ClusterBug::MissingInitSync) {
                    if self.split_sync {
                        w.line("cluster_arrive");
                        w.line("cluster_wait");
                    } else {
                        w.line("cluster_sync");
                    }
                }
                w.blank();
                w.open("role producer when tid == 0");
                w.line("let idx = 0");
                w.line("let phase = 1");
                let advance = |w: &mut Src| {
                    w.line("idx = idx + 1");
                    w.open("if idx == STAGES");
                    w.line("idx = 0");
                    w.line("phase = phase ^ 1");
                    w.close();
                };
                w.open("for k in 0..K");
                w.line("wait empty[idx] parity phase");
                if a_tile {
                    w.line("arrive_expect_tx full[idx], A_BYTES + B_BYTES");
                    w.line("tma smem_a[idx] -> full[idx], A_BYTES");
                } else {
                    w.line("arrive_expect_tx full[idx], B_BYTES");
                }
                w.line("tma smem_b[idx * 2 + cta] -> full[idx], B_BYTES / 2 multicast 0b11");
                advance(&mut w);
                w.close();
                if !self.has(ClusterBug::MissingTail) {
                    w.open("for s in 0..STAGES");
                    w.line("wait empty[idx] parity phase");
                    advance(&mut w);
                    w.close();
                }
                w.close();
                w.open("role consumer when tid == 1");
                w.line("let idx = 0");
                w.line("let phase = 0");
                w.open("for k in 0..K");
                w.line("wait full[idx] parity phase");
                if a_tile {
                    w.line("mma smem_a[idx]");
                }
                w.line("mma smem_b[idx * 2]");
                w.line("mma smem_b[idx * 2 + 1]");
                if self.has(ClusterBug::LocalOnly) {
                    w.line(format!("arrive empty[idx] @ cta{}", self.scope()));
                } else {
                    w.line(format!(
                        "for dst in 0..ncta {{ arrive empty[idx] @ dst{} }}",
                        self.scope()
                    ));
                }
                advance(&mut w);
                w.close();
                w.close();
                if !self.has(ClusterBug::MissingFinalSync) {
                    w.line("cluster_sync");
                }
                w.finish()
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pipe: cuda::pipeline, block scope (partitioned) and thread scope
// ---------------------------------------------------------------------------------------------

/// Deliberate bugs in a [`Pipe`] protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeBug {
    /// The consumer releases the stage before it reads it.
    ReleaseBeforeRead,
    /// The consumer skips `consumer_wait` on this batch.
    MissingWait(u32),
    /// A consumer calls `producer_acquire` (role misuse of a partitioned pipeline).
    ConsumerAcquires,
    /// Consumer `.0` quits (and exits) at batch `.1`.
    EarlyQuit(u32, u32),
    /// Thread scope: `consumer_wait_prior` allows one batch too many in flight.
    WaitPriorTooLax,
}

/// A `cuda::pipeline`: block scope with `producers` producer threads and `consumers` consumer
/// threads (partitioned) or every thread both (`unified`), or (`thread_scope`) a per-thread
/// pipeline of `batches` batches drained with `consumer_wait_prior`.
#[derive(Clone, Debug)]
pub struct Pipe {
    pub thread_scope: bool,
    /// Block scope: 1 or 2 producer threads.
    pub producers: u32,
    /// Block scope: every thread produces and consumes (the producer and consumer counts are
    /// the block size).
    pub unified: bool,
    pub consumers: u32,
    pub stages: u32,
    pub batches: u32,
    /// Every role ends with `quit`.
    pub quit: bool,
    pub bug: Option<PipeBug>,
}

/// The parameters of a random [`Pipe`].
pub fn pipe_params() -> impl Strategy<Value = Pipe> {
    (
        (any::<bool>(), 1..=2u32, any::<bool>()),
        1..=2u32,
        1..=2u32,
        1..=3u32,
        any::<bool>(),
        option::weighted(
            0.5,
            prop_oneof![
                Just(PipeBug::ReleaseBeforeRead),
                (0..3u32).prop_map(PipeBug::MissingWait),
                Just(PipeBug::ConsumerAcquires),
                (0..2u32, 0..3u32).prop_map(|(w, b)| PipeBug::EarlyQuit(w, b)),
                Just(PipeBug::WaitPriorTooLax),
            ],
        ),
    )
        .prop_map(
            |((thread_scope, producers, unified), consumers, stages, batches, quit, bug)| Pipe {
                thread_scope,
                producers,
                unified,
                consumers,
                stages,
                batches,
                quit,
                bug,
            },
        )
}

/// `cuda::pipeline` producer/consumer loops.
pub fn pipe() -> impl Strategy<Value = String> {
    pipe_params().prop_map(|p| p.source())
}

impl Pipe {
    /// Render the protocol.
    pub fn source(&self) -> String {
        let nb = self.batches.max(1);
        if self.thread_scope {
            let mut w = Src::new("gen_pipeline_thread");
            w.param("NT", self.consumers.clamp(1, 2) + 1);
            w.param("NB", nb);
            w.line("block NT");
            w.blank();
            w.line("pipeline tp thread");
            w.line("buffer buf[NB * NT]");
            w.blank();
            w.open("for b in 0..NB");
            w.line("memcpy_async buf[b * NT + tid] -> tp");
            w.line("producer_commit tp");
            w.close();
            w.open("for b in 0..NB");
            let prior = if self.bug == Some(PipeBug::WaitPriorTooLax) {
                "NB - b"
            } else {
                "NB - 1 - b"
            };
            match self.bug {
                Some(PipeBug::MissingWait(x)) => w.line(format!(
                    "if b != {} {{ consumer_wait_prior tp, {prior} }}",
                    pick(x, nb)
                )),
                _ => w.line(format!("consumer_wait_prior tp, {prior}")),
            }
            w.line("read buf[b * NT + tid]");
            w.close();
            if self.quit {
                w.line("quit tp");
            }
            return w.finish();
        }
        if self.unified {
            return self.unified_source(nb);
        }
        let nc = self.consumers.clamp(1, 2);
        let np = self.producers.clamp(1, 2);
        let mut w = Src::new("gen_pipeline_block");
        w.param("STAGES", self.stages.clamp(1, 2));
        w.param("NB", nb);
        w.param("NP", np);
        w.param("NC", nc);
        w.line("block NP + NC");
        w.blank();
        w.line("pipeline pipe stages STAGES producers NP consumers NC");
        w.line("buffer chunk[STAGES * NP]");
        w.blank();
        w.open("role producer when tid < NP");
        w.open("for b in 0..NB");
        w.line("producer_acquire pipe");
        w.line("memcpy_async chunk[(b % STAGES) * NP + tid] -> pipe");
        w.line("producer_commit pipe");
        w.close();
        if self.quit {
            w.line("quit pipe");
        }
        w.close();
        w.open("role consumer when tid >= NP");
        w.open("for b in 0..NB");
        if let Some(PipeBug::EarlyQuit(who, at)) = self.bug {
            w.open(format!(
                "if tid == NP + {} && b == {}",
                pick(who, nc),
                pick(at, nb)
            ));
            w.line("quit pipe");
            w.line("exit");
            w.close();
        }
        match self.bug {
            Some(PipeBug::MissingWait(x)) => {
                w.line(format!("if b != {} {{ consumer_wait pipe }}", pick(x, nb)))
            }
            _ => w.line("consumer_wait pipe"),
        }
        // Each consumer reads the part of one producer.
        let read = "read chunk[(b % STAGES) * NP + (tid - NP) % NP]";
        if self.bug == Some(PipeBug::ReleaseBeforeRead) {
            w.line("consumer_release pipe");
            w.line(read);
        } else {
            w.line(read);
            w.line("consumer_release pipe");
        }
        if self.bug == Some(PipeBug::ConsumerAcquires) {
            w.line("if b == 0 { producer_acquire pipe }");
        }
        w.close();
        if self.quit {
            w.line("quit pipe");
        }
        w.close();
        w.finish()
    }

    /// A unified block pipeline: every thread fills its part of a stage, then reads a
    /// neighbour's part of it.
    fn unified_source(&self, nb: u32) -> String {
        let nt = self.consumers.clamp(1, 2) + 1;
        let mut w = Src::new("gen_pipeline_unified");
        w.param("STAGES", self.stages.clamp(1, 2));
        w.param("NB", nb);
        w.param("NT", nt);
        w.line("block NT");
        w.blank();
        w.line("pipeline pipe stages STAGES producers NT consumers NT");
        w.line("buffer chunk[STAGES * NT]");
        w.blank();
        w.open("for b in 0..NB");
        if let Some(PipeBug::EarlyQuit(who, at)) = self.bug {
            w.open(format!(
                "if tid == {} && b == {}",
                pick(who, nt),
                pick(at, nb)
            ));
            w.line("quit pipe");
            w.line("exit");
            w.close();
        }
        w.line("producer_acquire pipe");
        w.line("memcpy_async chunk[(b % STAGES) * NT + tid] -> pipe");
        w.line("producer_commit pipe");
        match self.bug {
            Some(PipeBug::MissingWait(x)) => {
                w.line(format!("if b != {} {{ consumer_wait pipe }}", pick(x, nb)))
            }
            _ => w.line("consumer_wait pipe"),
        }
        let read = "read chunk[(b % STAGES) * NT + (tid + 1) % NT]";
        if self.bug == Some(PipeBug::ReleaseBeforeRead) {
            w.line("consumer_release pipe");
            w.line(read);
        } else {
            w.line(read);
            w.line("consumer_release pipe");
        }
        w.close();
        if self.quit {
            w.line("quit pipe");
        }
        w.finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Tile: a cooperative fill with `write part`
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Poll: consumers that test two barriers and branch on the results (tinygemm2)
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Dispatch: same-value stores and a whole-block barrier without `.aligned` (Triton)
// ---------------------------------------------------------------------------------------------

/// Deliberate bugs in a [`Dispatch`] protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DispatchBug {
    /// Dispatcher 0 stores another value (`data-race`).
    OtherValue,
    /// Dispatcher 0 stores bytes the protocol does not know (`write flag`: `data-race`).
    NoValue,
    /// The workers read the flag before the barrier (`data-race`).
    EarlyRead,
    /// The dispatchers store the second value before the barrier that follows the workers'
    /// reads (`data-race`).
    EarlyRewrite,
    /// The dispatchers' barriers are the `.aligned` form, reached at other statements than
    /// the workers' (`barrier-divergence`).
    Aligned,
}

/// `dispatchers` threads store the same value into `flag`, then the whole block meets at
/// named barrier 1 (the dispatchers and the workers at different statements, which the
/// `unaligned` form allows), the workers read the flag, the block meets again, and the
/// dispatchers store the second value (`rounds` times in all).
#[derive(Clone, Debug)]
pub struct Dispatch {
    pub dispatchers: u32,
    pub workers: u32,
    pub rounds: u32,
    pub bug: Option<DispatchBug>,
}

/// The parameters of a random [`Dispatch`].
pub fn dispatch_params() -> impl Strategy<Value = Dispatch> {
    (
        2..=3u32,
        1..=2u32,
        1..=2u32,
        option::weighted(
            0.5,
            prop_oneof![
                Just(DispatchBug::OtherValue),
                Just(DispatchBug::NoValue),
                Just(DispatchBug::EarlyRead),
                Just(DispatchBug::EarlyRewrite),
                Just(DispatchBug::Aligned),
            ],
        ),
    )
        .prop_map(|(dispatchers, workers, rounds, bug)| Dispatch {
            dispatchers,
            workers,
            rounds,
            bug,
        })
}

/// Dispatch flags stored by several threads.
pub fn dispatch() -> impl Strategy<Value = String> {
    dispatch_params().prop_map(|d| d.source())
}

impl Dispatch {
    /// Render the protocol.
    pub fn source(&self) -> String {
        let mut w = Src::new("gen_dispatch");
        w.param("ND", self.dispatchers.clamp(1, 3));
        w.param("NW", self.workers.clamp(1, 2));
        w.line("block ND + NW");
        w.blank();
        w.line("buffer flag");
        w.blank();
        let sync = if self.bug == Some(DispatchBug::Aligned) {
            "bar_sync 1"
        } else {
            "bar_sync 1 unaligned"
        };
        let rounds = self.rounds.clamp(1, 2);
        w.open("role dispatcher when tid < ND");
        for r in 1..=rounds {
            let store = format!("write flag value {r}");
            let first = match self.bug {
                Some(DispatchBug::OtherValue) if r == 1 => {
                    format!("if tid == 0 {{ write flag value 9 }} else {{ {store} }}")
                }
                Some(DispatchBug::NoValue) if r == 1 => {
                    format!("if tid == 0 {{ write flag }} else {{ {store} }}")
                }
                _ => store,
            };
            if r > 1 && self.bug == Some(DispatchBug::EarlyRewrite) {
                w.line(&first);
                w.line(sync);
            } else {
                if r > 1 {
                    w.line(sync);
                }
                w.line(&first);
            }
            w.line(sync);
        }
        w.line(sync);
        w.close();
        w.open("role worker when tid >= ND");
        for _ in 1..=rounds {
            if self.bug == Some(DispatchBug::EarlyRead) {
                w.line("read flag");
                w.line("bar_sync 1 unaligned");
            } else {
                w.line("bar_sync 1 unaligned");
                w.line("read flag");
            }
            w.line("bar_sync 1 unaligned");
        }
        w.close();
        w.finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Union
// ---------------------------------------------------------------------------------------------

/// Any generated protocol: rings (weighted up, the most common real shape) and every other shape.
pub fn protocol() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => ring(),
        2 => tokens(),
        2 => rounds(),
        1 => pingpong(),
        1 => cp_async(),
        2 => tma(),
        2 => cluster(),
        1 => pipe(),
        1 => tile(),
        1 => poll(),
        1 => dispatch(),
    ]
}

/// A one-line summary of a generated source (its protocol name and size), for test logs.
pub fn summary(src: &str) -> String {
    let name = src
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("protocol "))
        .unwrap_or("?");
    let mut s = String::new();
    let _ = write!(s, "{name} ({} lines)", src.lines().count());
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

    fn load(src: &str) -> Result<(), String> {
        let f = protocols::SourceFile::new("gen.phase", src);
        protocols::load(&f, &[]).map(|_| ()).map_err(|e| {
            let msgs: Vec<_> = e.errors.iter().map(|x| x.message.clone()).collect();
            format!("{msgs:?}\n{src}")
        })
    }

    fn runner() -> TestRunner {
        TestRunner::new_with_rng(
            Config::default(),
            TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
        )
    }

    fn all_load<S: Strategy<Value = String>>(s: S, n: usize) {
        let mut r = runner();
        for _ in 0..n {
            let src = s.new_tree(&mut r).unwrap().current();
            if let Err(e) = load(&src) {
                panic!("generated protocol does not load: {e}");
            }
        }
    }

    #[test]
    fn generated_protocols_load() {
        all_load(protocol(), 2000);
    }

    #[test]
    fn every_shape_loads() {
        all_load(ring(), 300);
        all_load(tokens(), 300);
        all_load(rounds(), 300);
        all_load(pingpong(), 200);
        all_load(cp_async(), 200);
        all_load(tma(), 300);
        all_load(cluster(), 300);
        all_load(pipe(), 200);
        all_load(tile(), 200);
        all_load(poll(), 200);
        all_load(dispatch(), 200);
    }

    /// Shrinking never leaves the well-formed space: walk a few trees all the way down.
    #[test]
    fn shrunk_protocols_load() {
        let mut r = runner();
        let s = protocol();
        for _ in 0..50 {
            let mut tree = s.new_tree(&mut r).unwrap();
            for _ in 0..200 {
                load(&tree.current()).unwrap();
                if !tree.simplify() {
                    break;
                }
            }
        }
    }

    #[test]
    fn every_mutation_is_rendered() {
        // Each bug variant changes the text of at least one base protocol.
        let base = Ring {
            consumers: 2,
            stages: 2,
            trips: 3,
            bytes: 1024,
            fill: Fill::Write,
            mma: true,
            tracking: Tracking::Computed,
            release: Release::Leader,
            tail: true,
            init_fence: false,
            bug: None,
        };
        let plain = base.source();
        for bug in [
            RingBug::ProducerParity,
            RingBug::ConsumerParity,
            RingBug::EmptyCountOver,
            RingBug::EmptyCountUnder,
            RingBug::FullCountOver,
            RingBug::MissingConsumerWait(1),
            RingBug::MissingProducerWait(1),
            RingBug::ReleaseBeforeRead,
            RingBug::MissingBootstrap,
            RingBug::MissingProxyFence,
            RingBug::DoubleRelease(1),
            RingBug::EarlyExit(1, 1),
            RingBug::EarlyExitDrop(1, 1),
            RingBug::WrongStage,
            RingBug::MissingConsumerSync,
        ] {
            let src = Ring {
                bug: Some(bug),
                ..base.clone()
            }
            .source();
            assert_ne!(src, plain, "{bug:?} changes nothing");
            load(&src).unwrap();
        }
        let tma = Ring {
            fill: Fill::Tma {
                split: true,
                tma_first: false,
            },
            ..base.clone()
        };
        for bug in [RingBug::BytesOver, RingBug::BytesUnder] {
            let src = Ring {
                bug: Some(bug),
                ..tma.clone()
            }
            .source();
            assert_ne!(src, tma.source());
            load(&src).unwrap();
        }
    }

    #[test]
    fn summary_names_the_protocol() {
        assert_eq!(summary("protocol x\nblock 1\n"), "x (2 lines)");
    }
}
