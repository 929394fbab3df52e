//! [`Rounds`]: syncthreads and named barriers.
//!
//! One shape of the generated protocols; the crate's documentation lists them all.

use super::{Src, pick};
use proptest::option;
use proptest::prelude::*;

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
