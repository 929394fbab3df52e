//! [`Dispatch`]: same-value stores and a whole-block barrier without `.aligned` (Triton).
//!
//! One shape of the generated protocols; the crate's documentation lists them all.

use super::Src;
use proptest::option;
use proptest::prelude::*;

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
