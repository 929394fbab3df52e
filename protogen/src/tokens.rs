//! [`Tokens`]: split arrive / wait loop.
//!
//! One shape of the generated protocols; the crate's documentation lists them all.

use super::{Src, pick};
use proptest::option;
use proptest::prelude::*;

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
