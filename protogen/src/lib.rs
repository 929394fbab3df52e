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

mod cluster;
mod cp_async;
mod dispatch;
pub mod elements;
pub mod litmus;
mod pingpong;
mod pipe;
mod poll;
mod ring;
mod rounds;
mod tile;
mod tma;
mod tokens;
pub mod warps;
pub use cluster::*;
pub use cp_async::*;
pub use dispatch::*;
pub use elements::{Elements, ElementsBug, InitBy, elements, elements_params};
pub use pingpong::*;
pub use pipe::*;
pub use poll::*;
pub use ring::*;
pub use rounds::*;
pub use tile::*;
pub use tma::*;
pub use tokens::*;
pub use warps::{PerWarp, PerWarpBug, Releaser, per_warp, per_warp_params};

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
