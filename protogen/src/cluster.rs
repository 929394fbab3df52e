//! [`Cluster`]: two blocks.
//!
//! One shape of the generated protocols; the crate's documentation lists them all.

use super::Src;
use proptest::option;
use proptest::prelude::*;

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
