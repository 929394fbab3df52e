//! [`CpAsync`]: Ampere cp.async groups and mbarrier arrive-on.
//!
//! One shape of the generated protocols; the crate's documentation lists them all.

use super::Src;
use proptest::option;
use proptest::prelude::*;

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
