//! The protocol state of one execution as plain data, and the semantics of every primitive
//! on it (docs/semantics.md), written independently of the checker's transition function.
//!
//! Nothing here blocks or knows about loom: [`crate::runtime`] calls these functions while it
//! holds the loom gate of the object they touch, so each call is one atomic step, as each
//! PTX instruction is. A call that finds undefined behaviour which ends the path returns
//! [`Halt`]; findings after which the path goes on (semantics.md §0.1) are only recorded.

use crate::clock::Clock;
use protocols::span::Span;
use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};

/// Counts and transaction bytes live in `0 .. 2^20-1` (tx also negative), semantics.md §1.1.
pub const MAX_COUNT: i64 = (1 << 20) - 1;

/// The classes the comparison is about (error findings only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    Deadlock,
    Ub,
    Race,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Deadlock => "deadlock",
            Class::Ub => "ub",
            Class::Race => "race",
        }
    }
}

/// The oracle's own table of the rules it can raise: class, and whether the path goes on
/// after it (design.md, "Semantics": these continue, every other UB ends the path).
pub fn rule_class(rule: &str) -> (Class, bool) {
    match rule {
        "deadlock" => (Class::Deadlock, false),
        "data-race" | "missing-proxy-fence" | "stale-phase" | "expect-after-completion" => {
            (Class::Race, true)
        }
        "unobserved-phase" | "init-not-visible" | "wait-phase-behind" | "barrier-divergence" => {
            (Class::Ub, true)
        }
        _ => (Class::Ub, false),
    }
}

/// Findings of every execution of one exploration: (class, rule name).
pub type Findings = Arc<Mutex<BTreeSet<(Class, &'static str)>>>;

/// The path ends here (a finding of a rule that does not continue was recorded).
#[derive(Debug)]
pub struct Halt;

pub type Res<T> = Result<T, Halt>;

/// What a blocked actor waits for; [`Data::satisfied`] tells whether it could go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// A parity wait: passes when the barrier's phase parity differs from `parity`.
    Parity { bar: usize, parity: i64 },
    /// A token wait or the second half of `arrive_and_wait`: passes when the phase moved on.
    Phase { bar: usize, phase: i64 },
    /// A named barrier (or `syncthreads`) use: passes when the use completes.
    Named { id: usize, uses: u64 },
    /// `elect` / `syncwarp`: passes when every live lane has come.
    Warp { uses: u64 },
    /// The asynchronous agent, idle: an event to deliver, or every thread done.
    Agent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Running,
    Blocked(Wait),
    Done,
}

/// Per thread and barrier: the ghost phase tracking of semantics.md §2.8 and R-EXPECT.
#[derive(Clone, Copy, Debug)]
pub struct Track {
    /// The last phase this thread saw complete in a successful wait (-1: "phase -1").
    pub last_obs: Option<i64>,
    /// The phase of its latest arrive since its latest wait of any kind.
    pub arrived_in: Option<i64>,
}

pub struct Thread {
    pub status: Status,
    pub vc: Clock,
    /// Own clock values at each `fence_proxy_async` (semantics.md §6.3).
    pub fences: Vec<u32>,
    /// Named barriers this thread `bar_arrive`d on whose use has not completed.
    pub named_arrived: u16,
    pub tracks: Vec<Track>,
    /// cp.async copies (actors) not yet committed, committed groups, not yet tracked by a
    /// `cp_async_arrive`.
    pub cp_open: Vec<usize>,
    pub cp_groups: VecDeque<Vec<usize>>,
    pub cp_untracked: Vec<usize>,
    /// `tma_store` reads (actors), likewise.
    pub bulk_open: Vec<usize>,
    pub bulk_groups: VecDeque<Vec<usize>>,
    /// Set by the completion of the warp collective this thread waits in.
    pub elected: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Bar {
    pub valid: bool,
    pub phase: i64,
    pub pending: i64,
    pub expected: i64,
    pub tx: i64,
    /// R-CONSUME: the previous phase's completion has been observed by a successful wait.
    pub consumed: bool,
    pub init_by: usize,
    /// A `syncthreads` completed after the init (semantics.md §6.4).
    pub published: bool,
    /// Everything released into the barrier since its init.
    pub acc: Clock,
    /// `acc` as it was at the latest phase completion: what a successful wait acquires.
    pub done: Clock,
}

#[derive(Clone, Debug, Default)]
pub struct Named {
    /// The count of the use in progress (0: every live thread of the block).
    pub count: i64,
    /// `bar_arrive` arrivals of the use in progress.
    pub arrived: u32,
    /// `bar_sync` threads waiting, with the statement each is at and whether it is `.aligned`
    /// (not `unaligned`).
    pub waiting: Vec<(usize, Span, bool)>,
    pub acc: Clock,
    /// Completed uses.
    pub uses: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarpKind {
    Elect,
    SyncWarp,
}

#[derive(Clone, Debug, Default)]
pub struct Warp {
    pub waiting: Vec<(usize, WarpKind, Span)>,
    pub uses: u64,
    /// The lane an `elect` chose, while no lane of the warp has left (semantics.md W3: the
    /// same leader "for the same membermask every time"; a lane leaving changes the mask).
    pub leader: Option<usize>,
    /// Elections so far that had no leader to keep (each a choice, [`Elections`]).
    pub choices: usize,
}

/// Which lane each election picks where the warp has no leader yet: the ISA elects "one
/// predicated active leader thread from among a set of threads specified by membermask"
/// without saying which (semantics.md W3), so every lane at the `elect` is a possible
/// leader. loom enumerates interleavings, not data choices: [`crate::explore`] runs one loom
/// exploration per choice sequence (`script`), and every execution records in `seen` how many
/// candidates each choice had, so that the explorer can enumerate the sequences.
#[derive(Clone, Debug, Default)]
pub struct Elections {
    /// For the `k`-th election without a leader: the candidate it picks, as an index into
    /// the candidates in lane order (modulo their number; 0 past the end).
    pub script: Vec<usize>,
    /// Across the executions of one exploration: for the `k`-th election without a leader,
    /// the most candidates it had.
    pub seen: Arc<Mutex<Vec<usize>>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
    /// `write X value N`: a whole write of the value N. Two of them with the same value store
    /// the same bytes, which PTX defines whatever their order (semantics.md §6.1, "Same-value
    /// stores"): they do not conflict with each other (the checker warns, `same-value-store`).
    ValueWrite(i64),
    PartWrite,
    /// `mma` (by the thread) or a `tma_store` source read (by its copy).
    AsyncRead,
    /// A TMA copy's write of its destination.
    AsyncWrite,
    /// A cp.async copy's write (generic proxy).
    CopyWrite,
}

impl Kind {
    fn writes(self) -> bool {
        matches!(
            self,
            Kind::Write
                | Kind::ValueWrite(_)
                | Kind::PartWrite
                | Kind::AsyncWrite
                | Kind::CopyWrite
        )
    }
    fn is_async(self) -> bool {
        matches!(self, Kind::AsyncRead | Kind::AsyncWrite)
    }
}

/// One access to a buffer instance.
#[derive(Clone, Debug)]
pub struct Access {
    pub actor: usize,
    /// The actor's own clock value at the access.
    pub epoch: u32,
    pub kind: Kind,
    /// The thread whose `fence_proxy_async` can fence this access, and its clock value then.
    pub thread: usize,
    pub thread_epoch: u32,
}

/// An asynchronous completion, delivered by the agent at some later time.
#[derive(Clone, Debug)]
pub enum Event {
    /// A TMA copy lands: `bytes` complete on `bar`, releasing only the copy's write.
    Land {
        bar: usize,
        bytes: i64,
        release: Clock,
    },
    /// A cp.async arrive-on (`cp_async_arrive`): one arrival releasing the tracked copies.
    ArriveOn { bar: usize, release: Clock },
}

pub struct Data {
    pub threads: Vec<Thread>,
    pub agent: Status,
    pub bars: Vec<Bar>,
    pub named: Vec<Named>,
    pub warp: Warp,
    /// The leader each election without one picks ([`Elections`]).
    pub elections: Elections,
    pub bufs: Vec<Vec<Access>>,
    pub queue: VecDeque<Event>,
    /// The next actor number for a copy.
    pub next_actor: usize,
    pub found: Findings,
    /// Per gate ([`crate::runtime`]): closed by a halt, and the actors parked on it (threads
    /// by index, the agent as `threads.len()`).
    pub closed: Vec<bool>,
    pub waiters: Vec<Vec<usize>>,
}

/// A token: the barrier and the phase it was taken in (0 is "never set").
pub fn encode_token(bar: usize, phase: i64) -> i64 {
    ((bar as i64 + 1) << 32) | phase
}

impl Data {
    pub fn new(threads: usize, nbars: usize, nbufs: usize, gates: usize, found: Findings) -> Data {
        Data {
            threads: (0..threads)
                .map(|t| Thread {
                    status: Status::Running,
                    vc: Clock::only(t, 1),
                    fences: Vec::new(),
                    named_arrived: 0,
                    tracks: vec![
                        Track {
                            last_obs: None,
                            arrived_in: None
                        };
                        nbars
                    ],
                    cp_open: Vec::new(),
                    cp_groups: VecDeque::new(),
                    cp_untracked: Vec::new(),
                    bulk_open: Vec::new(),
                    bulk_groups: VecDeque::new(),
                    elected: false,
                })
                .collect(),
            agent: Status::Done,
            bars: vec![Bar::default(); nbars],
            named: vec![Named::default(); 16],
            warp: Warp::default(),
            elections: Elections::default(),
            bufs: vec![Vec::new(); nbufs],
            queue: VecDeque::new(),
            next_actor: threads,
            found,
            closed: vec![false; gates],
            waiters: vec![Vec::new(); gates],
        }
    }

    // ----- findings -----

    /// Record a finding; `Err(Halt)` when its rule ends the path.
    pub fn raise(&self, rule: &'static str) -> Res<()> {
        let (class, goes_on) = rule_class(rule);
        self.found.lock().unwrap().insert((class, rule));
        if goes_on { Ok(()) } else { Err(Halt) }
    }

    /// Record a finding whose rule ends the path.
    fn fail(&self, rule: &'static str) -> Halt {
        let _ = self.raise(rule);
        Halt
    }

    /// Record a finding after which the path goes on.
    fn flag(&self, rule: &'static str) {
        let _ = self.raise(rule);
    }

    // ----- threads and clocks -----

    pub fn live(&self, t: usize) -> bool {
        self.threads[t].status != Status::Done
    }

    /// A release by `t`: the clock it publishes; later accesses of `t` are new epochs.
    fn release_of(&mut self, t: usize) -> Clock {
        let c = self.threads[t].vc.clone();
        self.threads[t].vc.tick(t);
        c
    }

    /// A wait of any kind completed for `t`: its arrivals are no longer "the latest before a
    /// wait" (R-EXPECT).
    fn waited(&mut self, t: usize) {
        for tr in &mut self.threads[t].tracks {
            tr.arrived_in = None;
        }
    }

    // ----- mbarrier (semantics.md §1-§2) -----

    fn check_valid(&self, b: usize) -> Res<()> {
        if self.bars[b].valid {
            Ok(())
        } else {
            self.raise("use-before-init")
        }
    }

    fn check_visible(&self, t: usize, b: usize) {
        let bar = &self.bars[b];
        if bar.init_by != t && !bar.published {
            self.flag("init-not-visible");
        }
    }

    pub fn init(&mut self, t: usize, b: usize, count: i64) -> Res<()> {
        if self.bars[b].valid {
            return self.raise("reinit");
        }
        if !(1..=MAX_COUNT).contains(&count) {
            return self.raise("count-range");
        }
        self.bars[b] = Bar {
            valid: true,
            pending: count,
            expected: count,
            consumed: true,
            init_by: t,
            ..Bar::default()
        };
        for th in &mut self.threads {
            th.tracks[b] = Track {
                last_obs: None,
                arrived_in: None,
            };
        }
        Ok(())
    }

    /// §1.3: completes the phase when nothing is pending and no bytes are outstanding.
    /// Returns true when it did (the waiters must be woken).
    fn try_complete(&mut self, b: usize) -> bool {
        let bar = &mut self.bars[b];
        if bar.pending == 0 && bar.tx == 0 {
            bar.phase += 1;
            bar.pending = bar.expected;
            bar.consumed = false;
            bar.done = bar.acc.clone();
            true
        } else {
            false
        }
    }

    /// An arrive-on of `count` releasing `release` (a thread's, or an async arrive-on's).
    /// Returns whether it completed the phase.
    fn arrive_on(&mut self, b: usize, count: i64, release: &Clock) -> Res<bool> {
        let bar = &self.bars[b];
        if bar.phase > 0 && !bar.consumed {
            self.flag("unobserved-phase");
        }
        if !(1..=MAX_COUNT).contains(&count) {
            return Err(self.fail("count-range"));
        }
        if bar.pending == 0 {
            return Err(self.fail("arrive-on-zero-pending"));
        }
        if bar.pending < count {
            return Err(self.fail("count-range"));
        }
        let bar = &mut self.bars[b];
        bar.acc.join(release);
        bar.pending -= count;
        Ok(self.try_complete(b))
    }

    fn add_tx(&mut self, b: usize, delta: i64) -> Res<()> {
        let tx = self.bars[b].tx + delta;
        if tx.abs() > MAX_COUNT {
            return self.raise("tx-range");
        }
        self.bars[b].tx = tx;
        Ok(())
    }

    fn bytes_in_range(&self, bytes: i64) -> Res<()> {
        if (0..=MAX_COUNT).contains(&bytes) {
            Ok(())
        } else {
            self.raise("tx-range")
        }
    }

    /// `arrive B[, n]`: returns (the token, whether the phase completed).
    pub fn arrive(&mut self, t: usize, b: usize, count: i64) -> Res<(i64, bool)> {
        self.check_valid(b)?;
        self.check_visible(t, b);
        let phase = self.bars[b].phase;
        let rel = self.release_of(t);
        let done = self.arrive_on(b, count, &rel)?;
        self.threads[t].tracks[b].arrived_in = Some(phase);
        Ok((encode_token(b, phase), done))
    }

    pub fn arrive_drop(&mut self, t: usize, b: usize) -> Res<bool> {
        self.check_valid(b)?;
        self.check_visible(t, b);
        if self.bars[b].expected <= 1 {
            return Err(self.fail("drop-to-zero"));
        }
        self.bars[b].expected -= 1;
        let phase = self.bars[b].phase;
        let rel = self.release_of(t);
        let done = self.arrive_on(b, 1, &rel)?;
        self.threads[t].tracks[b].arrived_in = Some(phase);
        Ok(done)
    }

    pub fn arrive_expect_tx(&mut self, t: usize, b: usize, bytes: i64) -> Res<bool> {
        self.check_valid(b)?;
        self.check_visible(t, b);
        self.bytes_in_range(bytes)?;
        self.add_tx(b, bytes)?;
        let phase = self.bars[b].phase;
        let rel = self.release_of(t);
        let done = self.arrive_on(b, 1, &rel)?;
        self.threads[t].tracks[b].arrived_in = Some(phase);
        Ok(done)
    }

    /// `expect_tx`: relaxed, no completion check (§2.6, §1.3).
    pub fn expect_tx(&mut self, t: usize, b: usize, bytes: i64) -> Res<()> {
        self.check_valid(b)?;
        self.check_visible(t, b);
        self.bytes_in_range(bytes)?;
        let bar = &self.bars[b];
        if let Some(a) = self.threads[t].tracks[b].arrived_in
            && a < bar.phase
        {
            self.flag("expect-after-completion");
        }
        if bar.pending == 0 && bar.tx < 0 {
            return self.raise("expect-without-arrival");
        }
        self.add_tx(b, bytes)
    }

    /// `complete_tx`: relaxed (§2.7), checks for completion.
    pub fn complete_tx(&mut self, t: usize, b: usize, bytes: i64) -> Res<bool> {
        self.check_valid(b)?;
        self.check_visible(t, b);
        self.bytes_in_range(bytes)?;
        self.add_tx(b, -bytes)?;
        Ok(self.try_complete(b))
    }

    /// A successful wait of `t` on `b` saw phase `phase - 1` complete: acquire, mark it
    /// observed (R-CONSUME), and (parity waits) check that it is news to this thread.
    fn observe(&mut self, t: usize, b: usize, stale_check: bool) {
        let seen = self.bars[b].phase - 1;
        let tr = &mut self.threads[t].tracks[b];
        let stale = stale_check && tr.last_obs == Some(seen);
        tr.last_obs = Some(seen);
        if stale {
            self.flag("stale-phase");
        }
        if self.bars[b].phase > 0 {
            self.bars[b].consumed = true;
        }
        let done = self.bars[b].done.clone();
        self.threads[t].vc.join(&done);
        self.waited(t);
    }

    /// One evaluation of `wait B parity p`: `Some(())` when it passes (§2.8).
    pub fn wait_parity(&mut self, t: usize, b: usize, parity: i64) -> Res<Option<()>> {
        self.check_valid(b)?;
        self.check_visible(t, b);
        let phase = self.bars[b].phase;
        if let Some(last) = self.threads[t].tracks[b].last_obs {
            // The first later phase with this parity is the one the thread means.
            let mut meant = last + 1;
            if (meant & 1) != (parity & 1) {
                meant += 1;
            }
            if meant <= phase - 2 {
                self.flag("wait-phase-behind");
            }
        }
        if (phase & 1) != (parity & 1) {
            self.observe(t, b, true);
            Ok(Some(()))
        } else {
            Ok(None)
        }
    }

    /// `let x = test_wait B parity p`: never blocks.
    pub fn test_wait(&mut self, t: usize, b: usize, parity: i64) -> Res<bool> {
        self.check_valid(b)?;
        self.check_visible(t, b);
        let pass = (self.bars[b].phase & 1) != (parity & 1);
        if pass {
            self.observe(t, b, false);
        }
        Ok(pass)
    }

    /// One evaluation of `wait B token T`: blocks in the token's phase, passes right after
    /// it, and anything else is a stale token (§2.8, B5).
    pub fn wait_token(&mut self, t: usize, b: usize, token: i64) -> Res<Option<()>> {
        self.check_valid(b)?;
        if token == 0 || (token >> 32) - 1 != b as i64 {
            return Err(self.fail("stale-token"));
        }
        let tp = token & 0xffff_ffff;
        let phase = self.bars[b].phase;
        if tp == phase {
            Ok(None)
        } else if tp == phase - 1 {
            self.pass_phase(t, b);
            Ok(Some(()))
        } else {
            Err(self.fail("stale-token"))
        }
    }

    /// The second half of `arrive_and_wait`: passes once the phase it arrived in is over.
    pub fn wait_past(&mut self, t: usize, b: usize, phase: i64) -> Res<Option<()>> {
        self.check_valid(b)?;
        if self.bars[b].phase == phase {
            return Ok(None);
        }
        self.pass_phase(t, b);
        Ok(Some(()))
    }

    fn pass_phase(&mut self, t: usize, b: usize) {
        self.bars[b].consumed = true;
        let done = self.bars[b].done.clone();
        self.threads[t].vc.join(&done);
        self.waited(t);
    }

    /// The first half of `arrive_and_wait`: an arrive of one; returns its phase.
    pub fn arrive_for_wait(&mut self, t: usize, b: usize) -> Res<(i64, bool)> {
        self.check_valid(b)?;
        self.check_visible(t, b);
        let phase = self.bars[b].phase;
        let rel = self.release_of(t);
        let done = self.arrive_on(b, 1, &rel)?;
        Ok((phase, done))
    }

    // ----- named barriers, syncthreads (§9.1) -----

    /// `bar_sync` (`blocking`) or `bar_arrive` on `id` with `count` (0: whole block), or
    /// `syncthreads` (`check`: false); `aligned`: the `.aligned` form. Returns the use's
    /// generation to wait for. (One argument per operand and modifier of the statement, as
    /// the interpreter has them; a struct would only be built to be taken apart here.)
    #[allow(clippy::too_many_arguments)]
    pub fn named_arrive(
        &mut self,
        t: usize,
        id: i64,
        count: i64,
        blocking: bool,
        check: bool,
        span: Span,
        aligned: bool,
    ) -> Res<u64> {
        if !(0..16).contains(&id) {
            return Err(self.fail("model-error"));
        }
        if !(0..=1024).contains(&count) {
            return Err(self.fail("count-range"));
        }
        let id = id as usize;
        let slot = &self.named[id];
        if check {
            let busy = slot.arrived > 0 || !slot.waiting.is_empty();
            if busy && slot.count != count {
                return Err(self.fail("named-barrier-rearrive"));
            }
            // A second arrival of one thread in one use is counted (semantics.md §9.1,
            // "Arrivals are counted").
        }
        let uses = slot.uses;
        let rel = self.release_of(t);
        let slot = &mut self.named[id];
        slot.count = count;
        slot.acc.join(&rel);
        if blocking {
            slot.waiting.push((t, span, aligned));
        } else {
            slot.arrived += 1;
            self.threads[t].named_arrived |= 1 << id;
        }
        self.try_named(id);
        Ok(uses)
    }

    /// Complete the use of named barrier `id` if enough threads have arrived. Returns true
    /// when it completed.
    pub fn try_named(&mut self, id: usize) -> bool {
        let slot = &self.named[id];
        let arrived = slot.waiting.len() as i64 + i64::from(slot.arrived);
        if arrived == 0 {
            return false;
        }
        let needed = if slot.count == 0 {
            (0..self.threads.len()).filter(|&u| self.live(u)).count() as i64
        } else {
            slot.count
        };
        if arrived < needed {
            return false;
        }
        // Threads blocking in one use at different statements, one of them `.aligned`
        // (§9.1): with or without a count.
        if slot.waiting.iter().any(|w| w.1 != slot.waiting[0].1) && slot.waiting.iter().any(|w| w.2)
        {
            self.flag("barrier-divergence");
        }
        let slot = std::mem::take(&mut self.named[id]);
        self.named[id].uses = slot.uses + 1;
        for th in &mut self.threads {
            th.named_arrived &= !(1 << id);
        }
        for &(u, _, _) in &slot.waiting {
            self.threads[u].vc.join(&slot.acc);
            self.threads[u].status = Status::Running;
            self.waited(u);
        }
        if slot.count == 0 {
            // §6.4: a whole-block barrier (any id) after the init publishes it to the block.
            for bar in &mut self.bars {
                if bar.valid {
                    bar.published = true;
                }
            }
        }
        true
    }

    // ----- warp collectives: elect, syncwarp (§7, §9.2) -----

    pub fn warp_arrive(&mut self, t: usize, kind: WarpKind, span: Span) -> u64 {
        self.threads[t].elected = false;
        self.warp.waiting.push((t, kind, span));
        let uses = self.warp.uses;
        self.try_warp();
        uses
    }

    /// Every live lane of the (only) warp has come: elect a lane ([`Data::leader_of`]), and
    /// order every lane after every other (the model's `syncwarp` is a CTA-scope barrier).
    pub fn try_warp(&mut self) -> bool {
        let w = &self.warp;
        if w.waiting.is_empty() {
            return false;
        }
        let lanes = (0..self.threads.len()).filter(|&u| self.live(u));
        if lanes.clone().any(|u| !w.waiting.iter().any(|x| x.0 == u)) {
            return false;
        }
        let first = w.waiting[0];
        if w.waiting.iter().any(|x| x.1 != first.1 || x.2 != first.2) {
            self.flag("barrier-divergence");
        }
        let waiting = std::mem::take(&mut self.warp.waiting);
        self.warp.uses += 1;
        let mut acc = Clock::default();
        for &(u, _, _) in &waiting {
            let rel = self.release_of(u);
            acc.join(&rel);
        }
        let leader = self.leader_of(&waiting);
        for &(u, _, _) in &waiting {
            self.threads[u].vc.join(&acc);
            self.threads[u].elected = Some(u) == leader;
            self.threads[u].status = Status::Running;
            self.waited(u);
        }
        true
    }

    /// The lane that leads the rendezvous of `waiting`: the warp's leader wherever it stands
    /// (at a `syncwarp` met by lanes at an `elect`, already `barrier-divergence`, no lane
    /// takes the body), else, if some lane is at an `elect`, the one the script picks among
    /// those lanes, which then leads the warp's later `elect`s ([`Elections`]).
    fn leader_of(&mut self, waiting: &[(usize, WarpKind, Span)]) -> Option<usize> {
        if let Some(l) = self.warp.leader
            && waiting.iter().any(|x| x.0 == l)
        {
            return Some(l);
        }
        let mut candidates: Vec<usize> = waiting
            .iter()
            .filter(|x| x.1 == WarpKind::Elect)
            .map(|x| x.0)
            .collect();
        if candidates.is_empty() {
            return None;
        }
        candidates.sort_unstable();
        let k = self.warp.choices;
        self.warp.choices += 1;
        {
            let mut seen = self
                .elections
                .seen
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if seen.len() <= k {
                seen.resize(k + 1, 0);
            }
            seen[k] = seen[k].max(candidates.len());
        }
        let pick = self.elections.script.get(k).copied().unwrap_or(0) % candidates.len();
        self.warp.leader = Some(candidates[pick]);
        self.warp.leader
    }

    /// `t` exits or finishes: it no longer counts for whole-block barriers and the warp, and
    /// the warp's next `elect` chooses again (its membermask changed, semantics.md W3).
    /// Returns true when that completed a rendezvous.
    pub fn leave(&mut self, t: usize) -> bool {
        self.threads[t].status = Status::Done;
        self.warp.leader = None;
        let mut any = false;
        for id in 0..16 {
            if self.named[id].count == 0 {
                any |= self.try_named(id);
            }
        }
        any | self.try_warp()
    }

    // ----- buffers: races and proxies (§6) -----

    /// Record an access and check it against every earlier access of the instance: a
    /// conflicting access not ordered before it is a data race; a generic access ordered
    /// before an async one needs a `fence_proxy_async` of its thread ordered before it too.
    fn access(&mut self, buf: usize, a: Access, clock: &Clock) {
        let mut race = false;
        let mut fence = false;
        for e in &self.bufs[buf] {
            if e.actor == a.actor {
                continue;
            }
            let conflict = (e.kind.writes() || a.kind.writes())
                && !(e.kind == Kind::PartWrite && a.kind == Kind::PartWrite)
                && !matches!((e.kind, a.kind), (Kind::ValueWrite(x), Kind::ValueWrite(y)) if x == y);
            if !conflict {
                continue;
            }
            if e.epoch > clock.get(e.actor) {
                race = true;
            } else if !e.kind.is_async() && a.kind.is_async() {
                let fenced = self.threads[e.thread]
                    .fences
                    .iter()
                    .find(|&&m| m >= e.thread_epoch)
                    .is_some_and(|&m| m <= clock.get(e.thread));
                if !fenced {
                    fence = true;
                }
            }
        }
        if race {
            self.flag("data-race");
        }
        if fence {
            self.flag("missing-proxy-fence");
        }
        self.bufs[buf].push(a);
    }

    /// `read`, `write`, `write part`, `mma` by thread `t`.
    pub fn thread_access(&mut self, t: usize, buf: usize, kind: Kind) {
        let epoch = self.threads[t].vc.get(t);
        let clock = self.threads[t].vc.clone();
        self.access(
            buf,
            Access {
                actor: t,
                epoch,
                kind,
                thread: t,
                thread_epoch: epoch,
            },
            &clock,
        );
    }

    /// An asynchronous copy issued by `t`: a new actor that starts from `t`'s clock.
    fn copy(&mut self, t: usize, buf: usize, kind: Kind) -> usize {
        let c = self.next_actor;
        self.next_actor += 1;
        let mut clock = self.threads[t].vc.clone();
        clock.set(c, 1);
        let thread_epoch = self.threads[t].vc.get(t);
        self.access(
            buf,
            Access {
                actor: c,
                epoch: 1,
                kind,
                thread: t,
                thread_epoch,
            },
            &clock,
        );
        c
    }

    pub fn fence_proxy_async(&mut self, t: usize) {
        let th = &mut self.threads[t];
        th.fences.push(th.vc.get(t));
        th.vc.tick(t);
    }

    /// `tma X -> B, bytes`: the copy's landing is an event for the agent.
    pub fn tma(&mut self, t: usize, buf: usize, b: usize, bytes: i64) -> Res<Event> {
        self.bytes_in_range(bytes)?;
        self.check_valid(b)?;
        self.check_visible(t, b);
        let c = self.copy(t, buf, Kind::AsyncWrite);
        Ok(Event::Land {
            bar: b,
            bytes,
            release: Clock::only(c, 1),
        })
    }

    /// The agent delivers a TMA landing (§2.11): relaxed except for the copy's own bytes.
    pub fn land(&mut self, b: usize, bytes: i64, release: &Clock) -> Res<bool> {
        self.check_valid(b)?;
        self.add_tx(b, -bytes)?;
        self.bars[b].acc.join(release);
        Ok(self.try_complete(b))
    }

    pub fn tma_store(&mut self, t: usize, buf: usize) {
        let c = self.copy(t, buf, Kind::AsyncRead);
        self.threads[t].bulk_open.push(c);
    }

    pub fn bulk_commit(&mut self, t: usize) {
        let g = std::mem::take(&mut self.threads[t].bulk_open);
        self.threads[t].bulk_groups.push_back(g);
    }

    /// `bulk_wait_read n` / `wait_group n`: all but the `n` newest committed groups are
    /// complete, and this thread (only) is ordered after their copies.
    fn wait_groups(&mut self, t: usize, n: i64, bulk: bool) {
        let th = &mut self.threads[t];
        let groups = if bulk {
            &mut th.bulk_groups
        } else {
            &mut th.cp_groups
        };
        while groups.len() as i64 > n.max(0) {
            for c in groups.pop_front().unwrap() {
                th.vc.set(c, th.vc.get(c).max(1));
            }
        }
    }

    pub fn bulk_wait_read(&mut self, t: usize, n: i64) {
        self.wait_groups(t, n, true);
    }

    pub fn cp_async(&mut self, t: usize, buf: usize) {
        let c = self.copy(t, buf, Kind::CopyWrite);
        self.threads[t].cp_open.push(c);
        self.threads[t].cp_untracked.push(c);
    }

    pub fn commit_group(&mut self, t: usize) {
        let g = std::mem::take(&mut self.threads[t].cp_open);
        self.threads[t].cp_groups.push_back(g);
    }

    pub fn wait_group(&mut self, t: usize, n: i64) {
        self.wait_groups(t, n, false);
    }

    /// `cp_async_arrive B [noinc]` (§2.10): without `noinc` one more pending arrival now;
    /// an async arrive-on releasing the thread's copies later.
    pub fn cp_async_arrive(&mut self, t: usize, b: usize, noinc: bool) -> Res<Event> {
        self.check_valid(b)?;
        self.check_visible(t, b);
        if !noinc {
            if self.bars[b].pending + 1 > MAX_COUNT {
                return Err(self.fail("count-range"));
            }
            self.bars[b].pending += 1;
        }
        let mut release = Clock::default();
        for c in std::mem::take(&mut self.threads[t].cp_untracked) {
            release.join(&Clock::only(c, 1));
        }
        Ok(Event::ArriveOn { bar: b, release })
    }

    /// The agent delivers a cp.async arrive-on.
    pub fn arrive_on_async(&mut self, b: usize, release: &Clock) -> Res<bool> {
        self.check_valid(b)?;
        self.arrive_on(b, 1, release)
    }

    // ----- deadlock -----

    /// Could an actor blocked on `w` go on now?
    pub fn satisfied(&self, w: Wait) -> bool {
        match w {
            Wait::Parity { bar, parity } => {
                let b = &self.bars[bar];
                !b.valid || (b.phase & 1) != (parity & 1)
            }
            Wait::Phase { bar, phase } => {
                let b = &self.bars[bar];
                !b.valid || b.phase != phase
            }
            Wait::Named { id, uses } => self.named[id].uses != uses,
            Wait::Warp { uses } => self.warp.uses != uses,
            Wait::Agent => {
                !self.queue.is_empty() || self.threads.iter().all(|t| t.status == Status::Done)
            }
        }
    }

    /// Record a deadlock (the caller found [`Data::deadlocked`]). A `syncthreads` that some
    /// threads wait at while other live threads are blocked elsewhere is also
    /// `barrier-divergence` (semantics.md §9.1: a thread never coming while others wait at a
    /// `__syncthreads` is UB, and the hang a deadlock).
    pub fn record_deadlock(&self) -> Halt {
        let slot = &self.named[0];
        if slot.count == 0
            && !slot.waiting.is_empty()
            && (0..self.threads.len())
                .any(|u| self.live(u) && !slot.waiting.iter().any(|w| w.0 == u))
        {
            self.flag("barrier-divergence");
        }
        self.fail("deadlock")
    }

    /// Semantics.md §8.5: some thread is live and no actor can move.
    pub fn deadlocked(&self) -> bool {
        let mut live = false;
        for th in &self.threads {
            match th.status {
                Status::Done => {}
                Status::Running => return false,
                Status::Blocked(w) => {
                    if self.satisfied(w) {
                        return false;
                    }
                    live = true;
                }
            }
        }
        match self.agent {
            Status::Running => return false,
            Status::Blocked(w) if self.satisfied(w) => return false,
            _ => {}
        }
        live && self.queue.is_empty()
    }
}
