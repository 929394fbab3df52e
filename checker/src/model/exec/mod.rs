//! The transition function: what each statement does (semantics.md §1-§7).
//!
//! A step is one visible operation of one thread (or one async event), followed by the local
//! code of every thread it released, run eagerly up to their next visible operation.
//! Rendezvous arrivals (`syncthreads`, `syncwarp`, `elect`,
//! `cluster_sync`, `cluster_arrive`), `compute` and `fence_mbarrier_init` are eager too: they
//! commute with every other thread's step (see docs/design.md, "Eager steps"). Named barriers
//! (`bar_sync`, `bar_arrive`) are steps of their own.

use super::code::{self, Instr};
use super::state::*;
use super::{Layout, MFinding, PhaseModel};
use crate::rules;
use protocols::Span;
use protocols::ir::{MemScope, ObjRef, ObjectKind, Op, PipelineKind};

mod enabled;
mod footprint;
mod order;
mod pipeline;
mod por;
mod rendezvous;
mod touched;
mod walk_index;

pub use enabled::*;
pub use footprint::{RunCache, cross_check};
pub use pipeline::{PipeRef, peek_pipe, quit_checks};
pub use por::ample;
pub use touched::{Before, Touched};
pub use walk_index::WalkIndex;

/// Largest arrival count and |tx| of an mbarrier (PTX, layout V0).
pub const MAX_COUNT: i64 = (1 << 20) - 1;

/// How many local instructions one step may run before the model calls it a runaway.
const LOCAL_FUEL: u32 = 10_000_000;

pub fn scope_level(s: MemScope) -> Level {
    match s {
        MemScope::Cta => LVL_CTA,
        MemScope::Cluster => LVL_CLUSTER,
        MemScope::Gpu => LVL_GPU,
        MemScope::Sys => LVL_SYS,
    }
}

/// Token local encoding: barrier instance + 1 in the high half, phase in the low half.
pub fn encode_token(bar: u32, phase: u32) -> i64 {
    ((i64::from(bar) + 1) << 32) | i64::from(phase)
}

pub fn parity_passes(b: &Bar, parity: i64) -> bool {
    (i64::from(b.phase) & 1) != (parity & 1)
}

/// The phase a parity wait intends, from the phase this thread last observed: the first later
/// phase with that parity.
pub fn intended_phase(last_obs: i64, parity: i64) -> i64 {
    let t = last_obs + 1;
    if (t & 1) == (parity & 1) { t } else { t + 1 }
}

pub struct Exec<'m, 'p> {
    pub m: &'m PhaseModel<'p>,
    pub state: State,
    pub found: Vec<MFinding>,
    pub stop: bool,
    pub bound: Option<String>,
    work: Vec<u32>,
    /// The threads this step changed so far ([`Touched::mark`]).
    pub touched: Touched,
    /// A walk's index of its state (`walk_index.rs`), kept from step to step; `None`: scan.
    walk_index: Option<WalkIndex>,
}

/// Result of an operation.
enum Done {
    /// Move past the statement and run on.
    Next,
    /// Stay at the statement (first half of `arrive_and_wait`).
    Stay,
    /// Already handled (rendezvous, exit) or stopped.
    Handled,
}

impl<'m, 'p> Exec<'m, 'p> {
    pub fn new(m: &'m PhaseModel<'p>, state: State) -> Self {
        Exec {
            m,
            state,
            found: Vec::new(),
            stop: false,
            bound: None,
            work: Vec::new(),
            touched: Touched::default(),
            walk_index: None,
        }
    }

    fn fail(&mut self, rule: &'static rules::Rule, span: Span, msg: impl Into<String>) {
        self.found.push(MFinding::new(rule, span, msg));
        self.stop = true;
    }

    fn flag(&mut self, f: MFinding) {
        self.found.push(f);
    }

    fn name(&self, t: u32) -> &str {
        &self.m.threads[t as usize].name
    }

    fn live_block(&self, block: u32) -> bool {
        let (k, c) = self.m.blocks[block as usize];
        let ki = &self.m.kernels[k as usize];
        let first = ki.first_thread + c * ki.block;
        (first..first + ki.block).any(|t| self.state.threads[t as usize].mode.live())
    }

    // ----- object resolution -----

    fn index(&mut self, t: u32, r: &ObjRef) -> Option<(u32, u32)> {
        let o = self.m.program.object(r.object);
        let i = match &r.index {
            None => 0,
            Some(e) => {
                let v = self.eval(t, e)?;
                if v < 0 || v >= i64::from(o.count()) {
                    self.fail(
                        &rules::model_error::RULE,
                        e.span,
                        format!("index {v} is out of range for `{}[{}]`", o.name, o.count()),
                    );
                    return None;
                }
                v as u32
            }
        };
        let ti = &self.m.threads[t as usize];
        let k = &self.m.kernels[ti.kernel as usize];
        let cta = match &r.cta {
            None => ti.cta,
            Some(e) => {
                let v = self.eval(t, e)?;
                if v < 0 || v >= i64::from(k.cluster) {
                    self.fail(
                        &rules::model_error::RULE,
                        e.span,
                        format!("block rank {v} is outside the cluster of {}", k.cluster),
                    );
                    return None;
                }
                v as u32
            }
        };
        Some((i, k.first_block + cta))
    }

    /// Barrier instance, its block, and whether it is a peer block's.
    fn bar(&mut self, t: u32, r: &ObjRef) -> Option<(u32, bool)> {
        let (i, block) = self.index(t, r)?;
        let o = self.m.program.object(r.object);
        match self.m.layouts[r.object.0 as usize] {
            Layout::Bar { base } => {
                let inst = base + block * o.count() + i;
                let remote = block != self.m.block_of(t);
                let name = &self.m.bar_names[inst as usize];
                if self.peer_exited(t, block, r.span, name) {
                    return None;
                }
                Some((inst, remote))
            }
            _ => {
                self.fail(
                    &rules::model_error::RULE,
                    r.span,
                    format!("`{}` is not a barrier", o.name),
                );
                None
            }
        }
    }

    /// `block` is a peer of `t`'s block whose threads have all finished: `t`'s use of its
    /// object `name` is `remote-cta-exited` (semantics.md §1.2 L7), flagged here.
    fn peer_exited(&mut self, t: u32, block: u32, span: Span, name: &str) -> bool {
        if block == self.m.block_of(t) || self.live_block(block) {
            return false;
        }
        self.fail(
            &rules::remote_cta_exited::RULE,
            span,
            format!(
                "{} touches `{name}` after every thread of that block finished",
                self.name(t)
            ),
        );
        true
    }

    /// A barrier of the thread's own block: `init`, `inval`, waits, `arrive_and_wait` and
    /// `cp_async_arrive` cannot name a peer's barrier (`X @ r`), which is `remote-op`.
    fn local_bar(&mut self, t: u32, r: &ObjRef, span: Span, what: &str) -> Option<u32> {
        let (b, remote) = self.bar(t, r)?;
        if remote {
            self.fail(
                &rules::remote_op::RULE,
                span,
                format!("{what} on a peer block's barrier"),
            );
            return None;
        }
        Some(b)
    }

    fn buf(&mut self, t: u32, r: &ObjRef) -> Option<u32> {
        let (i, block) = self.index(t, r)?;
        let o = self.m.program.object(r.object);
        match self.m.layouts[r.object.0 as usize] {
            Layout::Buf { base } if o.kind == ObjectKind::Global => Some(base + i),
            Layout::Buf { base } => {
                let x = base + block * o.count() + i;
                // A peer block's shared memory (`X @ r`: `ld`/`st.shared::cluster` through
                // `mapa`) exists only while that block runs (semantics.md §1.2 L7).
                if self.peer_exited(t, block, r.span, &self.m.buf_names[x as usize]) {
                    return None;
                }
                Some(x)
            }
            _ => {
                self.fail(
                    &rules::model_error::RULE,
                    r.span,
                    format!("`{}` is not a buffer", o.name),
                );
                None
            }
        }
    }

    fn eval(&mut self, t: u32, e: &protocols::ir::Expr) -> Option<i64> {
        match self.m.eval(e, t, &self.state.threads[t as usize].locals) {
            Ok(v) => Some(v),
            Err(err) => {
                self.fail(&rules::model_error::RULE, err.span, err.message);
                None
            }
        }
    }

    // ----- thread bookkeeping -----

    fn track(&mut self, t: u32, bar: u32) -> &mut BarTrack {
        let th = self.touched.mark(&mut self.state.threads, t as usize);
        let pos = match th.tracks.binary_search_by_key(&bar, |x| x.bar) {
            Ok(p) => p,
            Err(p) => {
                th.tracks.insert(
                    p,
                    BarTrack {
                        bar,
                        last_obs: NONE,
                        arrived_in: NONE,
                        fresh: false,
                    },
                );
                p
            }
        };
        &mut th.tracks[pos]
    }

    fn prune_tracks(&mut self, t: u32) {
        self.touched
            .mark(&mut self.state.threads, t as usize)
            .tracks
            .retain(|x| x.last_obs != NONE || x.arrived_in != NONE);
    }

    /// `t` runs an operation that is not a wait or a test: the phases it observed so far are
    /// consumed, and a later wait that returns because of one of them is `stale-phase`.
    fn consume(&mut self, t: u32) {
        if self.state.threads[t as usize]
            .tracks
            .iter()
            .any(|x| x.fresh)
        {
            let th = self.touched.mark(&mut self.state.threads, t as usize);
            for x in th.tracks.iter_mut() {
                x.fresh = false;
            }
        }
    }

    /// A wait of `t` completed: its arrivals are no longer "the latest before a wait".
    fn waited(&mut self, t: u32) {
        let th = self.touched.mark(&mut self.state.threads, t as usize);
        for x in th.tracks.iter_mut() {
            x.arrived_in = NONE;
        }
        self.prune_tracks(t);
    }

    /// `t` executed a release (of any scope): its own generic accesses fenced with
    /// `fence_proxy_async` before it now reach other threads' async accesses through it. Where
    /// the release's kept accesses go, and to whom, is `publish` and `acquire`.
    pub fn release(&mut self, t: u32) {
        let th = self.touched.mark(&mut self.state.threads, t as usize);
        for a in th.acc.iter_mut() {
            if a.fence == FENCE_OWN {
                a.fence = FENCE_RELEASED;
            }
        }
        // A proxy fence of the issuer after a cp.async reaches the copy's readers through the
        // issuer's releases after it (semantics.md §6.3).
        for c in th.cp.iter_mut() {
            if c.fence == FENCE_OWN {
                c.fence = FENCE_RELEASED;
            }
        }
    }

    fn record_access(&mut self, t: u32, buf: u32, kind: AccessKind, pc: u32) {
        self.record_strong_access(t, buf, kind, pc, LVL_NONE);
    }

    /// Keep an access of `t` to the bytes whose key is `bytes` (`bytes.rs`).
    fn record_range_access(
        &mut self,
        t: u32,
        buf: u32,
        kind: AccessKind,
        pc: u32,
        bytes: Option<i64>,
    ) {
        let a = Access {
            buf,
            kind,
            fence: FENCE_NONE,
            strong: LVL_NONE,
            pc,
            bytes,
            seen: ThreadSet::default(),
            fenced_by: ThreadSet::default(),
            pubs: Vec::new(),
        };
        self.keep_access(t, a);
    }

    /// The key of the byte range `r` of `t`'s access at `pc` (`bytes.rs`), or `None` after a
    /// `model-error` (an offset that cannot be computed or is negative).
    fn range_key(&mut self, t: u32, pc: u32, r: &protocols::ir::ByteRange) -> Option<i64> {
        let off = self.eval(t, &r.off)?;
        if off < 0 {
            self.fail(
                &rules::model_error::RULE,
                r.off.span,
                format!("a byte range starts at {off}, before the instance"),
            );
            return None;
        }
        let k = self.m.threads[t as usize].kernel;
        Some(self.m.ranges.key(k, pc, t, off))
    }

    /// Keep an access of `t`; `strong`: the scope of a flag's `store_release` /
    /// `load_acquire` ([`LVL_NONE`] for a weak access).
    fn record_strong_access(&mut self, t: u32, buf: u32, kind: AccessKind, pc: u32, strong: Level) {
        let a = Access {
            buf,
            kind,
            fence: FENCE_NONE,
            strong,
            pc,
            bytes: None,
            seen: ThreadSet::default(),
            fenced_by: ThreadSet::default(),
            pubs: Vec::new(),
        };
        self.keep_access(t, a);
    }

    /// A copy of `t` completed: keep its write with the proxy fence the copy already has,
    /// published where `pubs` says.
    fn keep_copy(&mut self, t: u32, c: &CpWrite, pubs: Vec<Pub>) {
        let a = Access {
            buf: c.buf,
            kind: AccessKind::Write,
            fence: c.fence,
            strong: LVL_NONE,
            pc: c.pc,
            bytes: None,
            seen: ThreadSet::default(),
            fenced_by: ThreadSet::default(),
            pubs,
        };
        self.keep_access(t, a);
    }

    /// Keep an access of `t` (a thread's own access, or a completed copy of its), ordered
    /// before no other thread yet.
    fn keep_access(&mut self, t: u32, a: Access) {
        let th = self.touched.mark(&mut self.state.threads, t as usize);
        // Of two kept accesses of one kind to one buffer, one ordered before, released,
        // fenced and published no further than the other says all that the other does (the
        // newer one wins a tie). Writes of different values (`write X value N`) say different
        // things (`same-value-store`).
        let m = self.m;
        let value = m.write_value(t, a.pc);
        let same_value = |o: &Access| m.write_value(t, o.pc) == value;
        if th
            .acc
            .iter()
            .any(|o| same_value(o) && o.subsumes(&a) && !a.subsumes(o))
        {
            return;
        }
        th.acc.retain(|o| !(same_value(o) && a.subsumes(o)));
        let pos = th.acc.binary_search(&a).unwrap_or_else(|p| p);
        th.acc.insert(pos, a);
    }

    fn check_valid(&mut self, t: Option<u32>, bar: u32, span: Span, what: &str) -> bool {
        let b = self.state.bars[bar as usize];
        if b.valid {
            return true;
        }
        let who = t
            .map(|t| self.name(t).to_string())
            .unwrap_or_else(|| "an async operation".into());
        let name = &self.m.bar_names[bar as usize];
        if b.quit_inval {
            self.fail(
                &rules::after_quit::RULE,
                span,
                format!("{who} {what} `{name}` after the last `quit` destroyed the pipeline"),
            );
        } else {
            self.fail(
                &rules::use_before_init::RULE,
                span,
                format!("{who} {what} `{name}`, which is not initialized"),
            );
        }
        false
    }

    fn check_vis(&mut self, t: u32, bar: u32, remote: bool, span: Span) {
        if let Some(f) = init_not_visible(self.m, &self.state, t, bar, remote, span) {
            self.flag(f);
        }
    }

    // ----- mbarrier core (§1.3, §2.3) -----

    fn try_complete(&mut self, bar: u32) {
        let b = &mut self.state.bars[bar as usize];
        if b.pending == 0 && b.tx == 0 {
            b.phase = b.phase.wrapping_add(1);
            b.pending = b.expected;
            b.consumed = false;
            self.complete_pubs(SyncObj::Bar(bar));
        }
    }

    /// An arrive-on of `count` (thread `t`, or an async arrive-on when `t` is None).
    fn arrive_on(&mut self, t: Option<u32>, bar: u32, count: i64, span: Span) -> bool {
        let b = self.state.bars[bar as usize];
        let name = self.m.bar_names[bar as usize].clone();
        let who = t
            .map(|t| self.name(t).to_string())
            .unwrap_or_else(|| "an async arrive-on".into());
        if b.phase > 0 && !b.consumed {
            self.flag(
                MFinding::new(
                    &rules::unobserved_phase::RULE,
                    span,
                    format!(
                        "{who} arrives on `{name}` in phase {} before any wait observed phase {} complete",
                        b.phase,
                        b.phase - 1
                    ),
                )
                .help("wait for the previous phase (or a back-pressure barrier) before arriving again"),
            );
        }
        if !(1..=MAX_COUNT).contains(&count) {
            self.fail(
                &rules::count_range::RULE,
                span,
                format!("arrive count {count} on `{name}` is outside 1..2^20-1"),
            );
            return false;
        }
        if b.pending == 0 {
            self.fail(
                &rules::arrive_on_zero_pending::RULE,
                span,
                format!(
                    "{who} arrives on `{name}` while its phase {} has no pending arrivals (only {} tx bytes)",
                    b.phase, b.tx
                ),
            );
            return false;
        }
        if i64::from(b.pending) < count {
            self.fail(
                &rules::count_range::RULE,
                span,
                format!(
                    "{who} arrives {count} times on `{name}` with only {} pending: the count would go negative",
                    b.pending
                ),
            );
            return false;
        }
        self.state.bars[bar as usize].pending -= count as i32;
        self.try_complete(bar);
        true
    }

    fn add_tx(&mut self, bar: u32, delta: i64, span: Span) -> bool {
        let b = &mut self.state.bars[bar as usize];
        let tx = i64::from(b.tx) + delta;
        if tx.abs() > MAX_COUNT {
            let name = self.m.bar_names[bar as usize].clone();
            self.fail(
                &rules::tx_range::RULE,
                span,
                format!("the tx-count of `{name}` would become {tx}, outside ±(2^20-1)"),
            );
            return false;
        }
        b.tx = tx as i32;
        true
    }

    fn bytes_in_range(&mut self, bytes: i64, span: Span) -> bool {
        if !(0..=MAX_COUNT).contains(&bytes) {
            self.fail(
                &rules::tx_range::RULE,
                span,
                format!("transaction count {bytes} is outside 0..2^20-1"),
            );
            return false;
        }
        true
    }

    // ----- steps -----

    pub fn event_step(&mut self, index: usize) {
        let ev = self.state.events.remove(index);
        self.touched.event_removed = true;
        match ev {
            Event::Tma {
                bar,
                bytes,
                issuer,
                pc,
                ..
            } => {
                let span = self.m.code_of(issuer).instrs[pc as usize].span();
                let block = self.m.bar_block[bar as usize];
                if block != self.m.block_of(issuer) && !self.live_block(block) {
                    self.fail(
                        &rules::remote_cta_exited::RULE,
                        span,
                        format!(
                            "a TMA copy issued by {} lands in a block whose threads all finished",
                            self.name(issuer)
                        ),
                    );
                    return;
                }
                if !self.check_valid(None, bar, span, "(a TMA completion) signals") {
                    return;
                }
                if !self.add_tx(bar, -i64::from(bytes), span) {
                    return;
                }
                self.try_complete(bar);
            }
            Event::CpArrive {
                thread,
                bar,
                upto,
                pc,
            } => {
                let span = self.m.code_of(thread).instrs[pc as usize].span();
                let th = self.touched.mark(&mut self.state.threads, thread as usize);
                let done: Vec<CpWrite> = th.cp.iter().filter(|c| c.seq < upto).copied().collect();
                th.cp.retain(|c| c.seq >= upto);
                // The completed copies are published to the barrier's waiters (the in-flight
                // copy was the access the race checks weighed so far): the threads that acquire
                // the phase this arrive-on completes happen after them, the others do not. They
                // went through the generic proxy: an async-proxy reader still needs the
                // issuer's proxy fence (semantics.md §6.3).
                for c in done {
                    let mut pubs = self.cp_pubs(thread, c.seq);
                    let own = self.cp_arrive_pub(thread, bar);
                    if let Err(i) = pubs.binary_search(&own) {
                        pubs.insert(i, own);
                    }
                    self.keep_copy(thread, &c, pubs);
                }
                if !self.check_valid(None, bar, span, "(a cp.async arrive-on) arrives on") {
                    return;
                }
                self.arrive_on(None, bar, 1, span);
            }
        }
    }

    pub fn thread_step(&mut self, t: u32) {
        let m = self.m;
        let code = m.code_of(t);
        let pc = self.state.threads[t as usize].pc;
        match &code.instrs[pc as usize] {
            Instr::Op { op, span } => match self.op(t, op, *span) {
                Done::Next => {
                    if !self.stop {
                        self.touched.mark(&mut self.state.threads, t as usize).pc += 1;
                        self.advance(t);
                    }
                }
                Done::Stay | Done::Handled => {}
            },
            Instr::Exit { .. } => self.finish(t, Mode::Exited),
            Instr::End { .. } => self.finish(t, Mode::Finished),
            // A candidate of an election (`Exec::try_warp`): it leads.
            Instr::Elect { .. } => self.elect(t),
            other => unreachable!("thread stopped at a local instruction {other:?}"),
        }
    }

    pub fn run_worklist(&mut self) {
        while let Some(t) = self.work.pop() {
            if self.stop || self.bound.is_some() {
                return;
            }
            self.advance(t);
        }
    }

    /// Run `t`'s local code (and eager operations) up to its next visible operation, then
    /// forget the locals that are dead there.
    pub fn advance(&mut self, t: u32) {
        self.advance_local(t);
        self.drop_dead_locals(t);
    }

    /// Zero the locals of `t` that no later step reads ([`code::live_locals`]): states that
    /// differ only in such values (a `test_wait` result after its branch, a loop variable after
    /// its loop) behave the same, and are then one state. Part of the reductions: off with
    /// `--no-por`.
    fn drop_dead_locals(&mut self, t: u32) {
        let m = self.m;
        let th = &self.state.threads[t as usize];
        if !m.por || !matches!(th.mode, Mode::Ready | Mode::Sync(_)) {
            return;
        }
        let ti = &m.threads[t as usize];
        let live = m.kernels[ti.kernel as usize].live[th.pc as usize];
        let dead = |i: usize, v: i64| i < 64 && v != 0 && live & (1 << i) == 0;
        if th.locals.iter().enumerate().any(|(i, &v)| dead(i, v)) {
            let th = self.touched.mark(&mut self.state.threads, t as usize);
            for (i, v) in th.locals.iter_mut().enumerate() {
                if dead(i, *v) {
                    *v = 0;
                }
            }
        }
    }

    fn advance_local(&mut self, t: u32) {
        let m = self.m;
        let code = m.code_of(t);
        let mut fuel = LOCAL_FUEL;
        loop {
            if self.stop || self.bound.is_some() {
                return;
            }
            fuel -= 1;
            if fuel == 0 {
                let span = code.instrs[self.state.threads[t as usize].pc as usize].span();
                self.bound = Some(format!(
                    "{} ran {LOCAL_FUEL} local instructions without a visible step (line of span {}..{})",
                    self.name(t),
                    span.start,
                    span.end
                ));
                return;
            }
            let th = &self.state.threads[t as usize];
            if th.mode != Mode::Ready {
                return;
            }
            let pc = th.pc;
            match &code.instrs[pc as usize] {
                Instr::Set { slot, value } => {
                    let Some(v) = self.eval(t, value) else { return };
                    let th = self.touched.mark(&mut self.state.threads, t as usize);
                    th.locals[*slot as usize] = v;
                    th.pc += 1;
                }
                Instr::Jump(to) => self.touched.mark(&mut self.state.threads, t as usize).pc = *to,
                Instr::JumpIfZero { cond, target } => {
                    let Some(v) = self.eval(t, cond) else { return };
                    let th = self.touched.mark(&mut self.state.threads, t as usize);
                    th.pc = if v == 0 { *target } else { pc + 1 };
                }
                Instr::ForTest { var, end, exit } => {
                    let th = self.touched.mark(&mut self.state.threads, t as usize);
                    th.pc = if th.locals[*var as usize] < th.locals[*end as usize] {
                        pc + 1
                    } else {
                        *exit
                    };
                }
                Instr::ForNext { var, test } => {
                    let th = self.touched.mark(&mut self.state.threads, t as usize);
                    th.locals[*var as usize] += 1;
                    th.pc = *test;
                }
                Instr::WhileTest {
                    cond,
                    trips,
                    exit,
                    span,
                } => {
                    let Some(v) = self.eval(t, cond) else { return };
                    if v == 0 {
                        self.touched.mark(&mut self.state.threads, t as usize).pc = *exit;
                    } else {
                        let th = self.touched.mark(&mut self.state.threads, t as usize);
                        th.locals[*trips as usize] += 1;
                        if th.locals[*trips as usize] > i64::from(m.max_loop_trips) {
                            self.bound = Some(format!(
                                "{} ran a `while` loop (bytes {}..{}) more than {} times; raise --max-loop-trips",
                                self.name(t),
                                span.start,
                                span.end,
                                m.max_loop_trips
                            ));
                            return;
                        }
                        th.pc = pc + 1;
                    }
                }
                Instr::Elect { .. } => {
                    self.touched.mark(&mut self.state.threads, t as usize).mode =
                        Mode::Sync(SyncKind::Elect);
                    self.try_warp(t);
                    return;
                }
                Instr::Exit { .. } | Instr::End { .. } => {
                    let ti = &m.threads[t as usize];
                    if m.kernels[ti.kernel as usize].exit_visible {
                        return;
                    }
                    let mode = if matches!(code.instrs[pc as usize], Instr::Exit { .. }) {
                        Mode::Exited
                    } else {
                        Mode::Finished
                    };
                    self.finish(t, mode);
                    return;
                }
                Instr::Op { op, span } => {
                    if !is_eager(op) {
                        return;
                    }
                    match self.op(t, op, *span) {
                        Done::Next => {
                            self.touched.mark(&mut self.state.threads, t as usize).pc += 1
                        }
                        Done::Stay | Done::Handled => return,
                    }
                }
            }
        }
    }

    fn finish(&mut self, t: u32, mode: Mode) {
        let th = self.touched.mark(&mut self.state.threads, t as usize);
        th.mode = mode;
        th.locals.iter_mut().for_each(|x| *x = 0);
        th.tracks.clear();
        // What a quit left short stays known (stuck.rs); the rest goes.
        th.pipes.retain(|p| p.1.quit);
        th.named_arrived = 0;
        th.cluster_token = None;
        th.aw = None;
        let block = self.m.block_of(t);
        self.forget_leader(t);
        // One fewer live thread: a use of a whole-block barrier (`count` 0) may now be
        // complete. A use with nobody arrived or waiting returns at once in `try_named`; which
        // uses have someone is found in one scan of the block instead of one per barrier id (16
        // scans of the block per finishing thread were a fifth of a walk at 288 threads). Firing
        // one use only releases its own waiters, so the others' are as scanned.
        let mut busy = 0u16;
        for u in self.block_threads(block) {
            if let Mode::Sync(SyncKind::Named { id }) = self.state.threads[u as usize].mode {
                busy |= 1 << id;
            }
        }
        for id in 0..16u8 {
            let named = self.state.named[block as usize * 16 + id as usize];
            if (id == 0 || named.count == 0) && (busy & (1 << id) != 0 || named.arrived != 0) {
                self.try_named(block, id);
            }
        }
        self.try_warp(t);
        self.try_cluster(self.m.threads[t as usize].kernel);
    }

    // ----- rendezvous -----

    fn block_threads(&self, block: u32) -> std::ops::Range<u32> {
        let (k, c) = self.m.blocks[block as usize];
        let ki = &self.m.kernels[k as usize];
        let first = ki.first_thread + c * ki.block;
        first..first + ki.block
    }

    fn push_event(&mut self, ev: Event) {
        let pos = self.state.events.binary_search(&ev).unwrap_or_else(|p| p);
        self.state.events.insert(pos, ev);
    }

    /// A successful parity observation of `bar` by `t`. A wait (`stale_check`) that returns
    /// because of a completion this thread already observed is `stale-phase`, unless the thread
    /// did nothing but waits and tests since then (polling two barriers, then waiting on each,
    /// re-confirms a phase: semantics.md §2.8).
    /// `scope`: the wait's `.acquire` scope.
    fn observe(&mut self, t: u32, bar: u32, span: Span, stale_check: bool, scope: Level) {
        let b = self.state.bars[bar as usize];
        let observed = i64::from(b.phase) - 1;
        let tr = *self.track(t, bar);
        if stale_check && tr.last_obs == observed && !tr.fresh {
            self.flag(
                MFinding::new(
                    &rules::stale_phase::RULE,
                    span,
                    format!(
                        "{} returns from a wait on `{}` because phase {observed} completed, which it already observed with an earlier wait",
                        self.name(t),
                        self.m.bar_names[bar as usize]
                    ),
                )
                .help("flip the parity once per completed phase (track the phase per stage)"),
            );
        }
        // Seeing again a phase it consumed (a `test_wait` that passes on it) does not make
        // it fresh.
        let tr = self.track(t, bar);
        tr.fresh = tr.fresh || tr.last_obs != observed;
        tr.last_obs = observed;
        if b.phase > 0 {
            self.state.bars[bar as usize].consumed = true;
        }
        self.acquire(t, SyncObj::Bar(bar), scope);
        self.waited(t);
    }

    fn op(&mut self, t: u32, op: &Op, span: Span) -> Done {
        let pc = self.state.threads[t as usize].pc;
        macro_rules! tryo {
            ($e:expr) => {
                match $e {
                    Some(v) => v,
                    None => return Done::Handled,
                }
            };
        }
        macro_rules! ensure {
            ($e:expr) => {
                if !$e {
                    return Done::Handled;
                }
            };
        }
        if !matches!(
            op,
            Op::WaitParity { .. } | Op::TestWait { .. } | Op::WaitToken { .. } | Op::Compute
        ) {
            self.consume(t);
        }
        match op {
            Op::Compute | Op::FenceMbarrierInit => Done::Next,
            Op::Init { bar, count } => {
                let b = tryo!(self.local_bar(t, bar, span, "init"));
                let count = tryo!(self.eval(t, count));
                if self.state.bars[b as usize].valid {
                    self.fail(
                        &rules::reinit::RULE,
                        span,
                        format!(
                            "{} initializes `{}` again while it is valid",
                            self.name(t),
                            self.m.bar_names[b as usize]
                        ),
                    );
                    return Done::Handled;
                }
                if !(1..=MAX_COUNT).contains(&count) {
                    self.fail(
                        &rules::count_range::RULE,
                        span,
                        format!("init count {count} is outside 1..2^20-1"),
                    );
                    return Done::Handled;
                }
                self.state.bars[b as usize] = Bar {
                    valid: true,
                    phase: 0,
                    pending: count as i32,
                    expected: count as i32,
                    tx: 0,
                    consumed: true,
                    vis: 1,
                    init_by: t,
                    quit_inval: false,
                };
                // A new life of the barrier: phases observed in the old one do not count.
                for u in 0..self.state.threads.len() {
                    // Only threads that tracked this barrier are copied (copy on write).
                    if self.state.threads[u].tracks.iter().any(|x| x.bar == b) {
                        self.touched
                            .mark(&mut self.state.threads, u)
                            .tracks
                            .retain(|x| x.bar != b);
                    }
                }
                Done::Next
            }
            Op::Inval { bar } => {
                let b = tryo!(self.local_bar(t, bar, span, "inval"));
                ensure!(self.check_valid(Some(t), b, span, "invalidates"));
                self.check_vis(t, b, false, span);
                let in_flight = self.state.events.iter().any(|e| match e {
                    Event::Tma { bar, .. } | Event::CpArrive { bar, .. } => *bar == b,
                });
                let waiter = (0..self.m.nthreads())
                    .find(|&u| u != t && waits_on(self.m, &self.state, u) == Some(b));
                if in_flight || waiter.is_some() {
                    let why = match waiter {
                        Some(u) => format!("{} still waits on it", self.name(u)),
                        None => "an async operation will still signal it".into(),
                    };
                    self.fail(
                        &rules::inval_in_use::RULE,
                        span,
                        format!("inval of `{}` while {why}", self.m.bar_names[b as usize]),
                    );
                    return Done::Handled;
                }
                self.state.bars[b as usize].valid = false;
                Done::Next
            }
            Op::Arrive {
                bar,
                count,
                token,
                scope,
            } => {
                let (b, remote) = tryo!(self.bar(t, bar));
                let count = match count {
                    Some(c) => tryo!(self.eval(t, c)),
                    None => 1,
                };
                ensure!(self.check_valid(Some(t), b, span, "arrives on"));
                self.check_vis(t, b, remote, span);
                if token.is_some() && remote {
                    self.fail(
                        &rules::remote_op::RULE,
                        span,
                        "a remote arrive returns no token",
                    );
                    return Done::Handled;
                }
                let phase = self.state.bars[b as usize].phase;
                self.arrive_release(t, b, remote, *scope);
                ensure!(self.arrive_on(Some(t), b, count, span));
                self.note_arrive(t, b, phase);
                if let Some(l) = token {
                    self.touched
                        .mark(&mut self.state.threads, t as usize)
                        .locals[l.0 as usize] = encode_token(b, phase);
                }
                Done::Next
            }
            Op::ArriveDrop { bar, scope } => {
                let (b, remote) = tryo!(self.bar(t, bar));
                ensure!(self.check_valid(Some(t), b, span, "drops from"));
                self.check_vis(t, b, remote, span);
                if self.state.bars[b as usize].expected <= 1 {
                    self.fail(
                        &rules::drop_to_zero::RULE,
                        span,
                        format!(
                            "arrive_drop makes the expected count of `{}` 0",
                            self.m.bar_names[b as usize]
                        ),
                    );
                    return Done::Handled;
                }
                self.state.bars[b as usize].expected -= 1;
                let phase = self.state.bars[b as usize].phase;
                self.arrive_release(t, b, remote, *scope);
                ensure!(self.arrive_on(Some(t), b, 1, span));
                self.note_arrive(t, b, phase);
                Done::Next
            }
            Op::ArriveExpectTx { bar, bytes, scope } => {
                let (b, remote) = tryo!(self.bar(t, bar));
                let bytes = tryo!(self.eval(t, bytes));
                ensure!(self.check_valid(Some(t), b, span, "arrives on"));
                self.check_vis(t, b, remote, span);
                ensure!(self.bytes_in_range(bytes, span));
                ensure!(self.add_tx(b, bytes, span));
                let phase = self.state.bars[b as usize].phase;
                self.arrive_release(t, b, remote, *scope);
                ensure!(self.arrive_on(Some(t), b, 1, span));
                self.note_arrive(t, b, phase);
                Done::Next
            }
            Op::ExpectTx { bar, bytes } => {
                let (b, remote) = tryo!(self.bar(t, bar));
                let bytes = tryo!(self.eval(t, bytes));
                ensure!(self.check_valid(Some(t), b, span, "expects bytes on"));
                self.check_vis(t, b, remote, span);
                ensure!(self.bytes_in_range(bytes, span));
                let bs = self.state.bars[b as usize];
                let tr = *self.track(t, b);
                self.prune_tracks(t);
                if tr.arrived_in != NONE && tr.arrived_in < i64::from(bs.phase) {
                    self.flag(
                        MFinding::new(
                            &rules::expect_after_completion::RULE,
                            span,
                            format!(
                                "{} expects {bytes} bytes on `{}` after its arrival completed phase {}: the bytes charge phase {}",
                                self.name(t),
                                self.m.bar_names[b as usize],
                                tr.arrived_in,
                                bs.phase
                            ),
                        )
                        .help("expect the bytes before your own arrive (or use arrive_expect_tx)"),
                    );
                }
                if bs.pending == 0 && bs.tx < 0 {
                    self.fail(
                        &rules::expect_without_arrival::RULE,
                        span,
                        format!(
                            "expect_tx on `{}` whose phase {} has no pending arrivals and tx {}: completion is unspecified",
                            self.m.bar_names[b as usize], bs.phase, bs.tx
                        ),
                    );
                    return Done::Handled;
                }
                ensure!(self.add_tx(b, bytes, span));
                Done::Next
            }
            Op::CompleteTx { bar, bytes } => {
                let (b, remote) = tryo!(self.bar(t, bar));
                let bytes = tryo!(self.eval(t, bytes));
                ensure!(self.check_valid(Some(t), b, span, "completes bytes on"));
                self.check_vis(t, b, remote, span);
                ensure!(self.bytes_in_range(bytes, span));
                ensure!(self.add_tx(b, -bytes, span));
                self.try_complete(b);
                Done::Next
            }
            Op::WaitParity { bar, parity, scope } => {
                let b = tryo!(self.local_bar(t, bar, span, "wait"));
                let p = tryo!(self.eval(t, parity));
                ensure!(self.check_valid(Some(t), b, span, "waits on"));
                self.check_vis(t, b, false, span);
                debug_assert!(parity_passes(&self.state.bars[b as usize], p));
                self.observe(t, b, span, true, scope_level(*scope));
                Done::Next
            }
            Op::TestWait {
                bar,
                parity,
                result,
            } => {
                let b = tryo!(self.local_bar(t, bar, span, "test_wait"));
                let p = tryo!(self.eval(t, parity));
                ensure!(self.check_valid(Some(t), b, span, "tests"));
                self.check_vis(t, b, false, span);
                let pass = parity_passes(&self.state.bars[b as usize], p);
                if pass {
                    self.observe(t, b, span, false, LVL_CTA);
                }
                self.touched
                    .mark(&mut self.state.threads, t as usize)
                    .locals[result.0 as usize] = i64::from(pass);
                Done::Next
            }
            Op::WaitToken { bar, token, scope } => {
                let b = tryo!(self.local_bar(t, bar, span, "wait"));
                ensure!(self.check_valid(Some(t), b, span, "waits on"));
                let tok = self.state.threads[t as usize].locals[token.0 as usize];
                let phase = self.state.bars[b as usize].phase;
                match token_check(tok, b, phase) {
                    TokenWait::Pass => {
                        let bs = &mut self.state.bars[b as usize];
                        bs.consumed = true;
                        self.acquire(t, SyncObj::Bar(b), scope_level(*scope));
                        self.waited(t);
                        Done::Next
                    }
                    TokenWait::Block => unreachable!("a blocked wait was scheduled"),
                    TokenWait::Stale(why) => {
                        self.fail(
                            &rules::stale_token::RULE,
                            span,
                            format!(
                                "{} waits on `{}` with {why}",
                                self.name(t),
                                self.m.bar_names[b as usize]
                            ),
                        );
                        Done::Handled
                    }
                }
            }
            Op::ArriveAndWait { bar } => {
                let b = tryo!(self.local_bar(t, bar, span, "arrive_and_wait"));
                ensure!(self.check_valid(Some(t), b, span, "arrives on"));
                if let Some((_, _)) = self.state.threads[t as usize].aw {
                    // Second half: the phase completed.
                    self.touched.mark(&mut self.state.threads, t as usize).aw = None;
                    self.state.bars[b as usize].consumed = true;
                    self.acquire(t, SyncObj::Bar(b), LVL_CTA);
                    self.waited(t);
                    return Done::Next;
                }
                self.check_vis(t, b, false, span);
                let phase = self.state.bars[b as usize].phase;
                self.release(t);
                self.publish(t, SyncObj::Bar(b), LVL_CTA, false);
                ensure!(self.arrive_on(Some(t), b, 1, span));
                self.touched.mark(&mut self.state.threads, t as usize).aw = Some((b, phase));
                Done::Stay
            }
            Op::SyncThreads => {
                self.release(t);
                let slot = self.m.block_of(t) * 16;
                self.publish(t, SyncObj::Named(slot), LVL_CTA, false);
                self.touched.mark(&mut self.state.threads, t as usize).mode =
                    Mode::Sync(SyncKind::Named { id: 0 });
                let block = self.m.block_of(t);
                self.try_named(block, 0);
                Done::Handled
            }
            Op::BarSync { id, count, .. } | Op::BarArrive { id, count, .. } => {
                let blocking = matches!(op, Op::BarSync { .. });
                let idv = tryo!(self.eval(t, id));
                if !(0..16).contains(&idv) {
                    self.fail(
                        &rules::model_error::RULE,
                        id.span,
                        format!("named barrier id {idv} is outside 0..15"),
                    );
                    return Done::Handled;
                }
                let idv = idv as u8;
                let block = self.m.block_of(t);
                let c = match count {
                    Some(c) => tryo!(self.eval(t, c)),
                    None => 0,
                };
                if !(0..=1024).contains(&c) {
                    self.fail(
                        &rules::count_range::RULE,
                        span,
                        format!("named barrier count {c} is outside 0..1024"),
                    );
                    return Done::Handled;
                }
                // Whole warps (semantics.md §9.1): in a block of a warp or more, the count is in
                // threads of whole warps, and every lane of the warp executes the statement.
                if c != 0 && self.m.warp_rules(t) {
                    if c % 32 != 0 {
                        let kw = if blocking { "bar_sync" } else { "bar_arrive" };
                        self.fail(
                            &rules::named_barrier_count::RULE,
                            span,
                            format!(
                                "`{kw} {idv}, {c}`: the count {c} is not a multiple of the warp size; bar.sync and bar.arrive count whole warps, so the hardware never counts {c} arrivals"
                            ),
                        );
                        return Done::Handled;
                    }
                    if let Some(gone) = self.m.warp_gap(t, pc) {
                        let warp = self.m.threads[t as usize].tid / 32;
                        let names = crate::model::trace::fold_names(self.m, gone);
                        let msg = format!(
                            "named barrier {idv} is run by only some lanes of warp {warp}: {} {} it, but {names} never {} this statement ({}); bar.sync and bar.arrive are `.aligned`, so every lane of a warp runs the same statement",
                            self.name(t),
                            if blocking { "syncs on" } else { "arrives on" },
                            if gone.len() == 1 { "reaches" } else { "reach" },
                            if self.m.in_elect(t, pc) {
                                "only one lane runs an `elect` body"
                            } else {
                                "their `if`/`role` conditions exclude them"
                            },
                        );
                        self.found.push(
                            MFinding::new(&rules::barrier_divergence::RULE, span, msg).help(
                                "run the named barrier with the whole warp (outside `elect` and lane conditions)",
                            ),
                        );
                        self.stop = true;
                        return Done::Handled;
                    }
                }
                let slot = block as usize * 16 + idv as usize;
                let cur = self.state.named[slot];
                let busy = cur.arrived > 0
                    || self.block_threads(block).any(|u| {
                        self.state.threads[u as usize].mode
                            == Mode::Sync(SyncKind::Named { id: idv })
                    });
                if busy && cur.count != c as u16 {
                    self.fail(
                        &rules::named_barrier_rearrive::RULE,
                        span,
                        format!("named barrier {idv} used with count {c} while a use with count {} is in progress", cur.count),
                    );
                    return Done::Handled;
                }
                // A thread that arrives again before the use completed is counted again: each
                // barrier instruction marks one arrival of the executing warp (semantics.md
                // §9.1, "Arrivals are counted"). FlashAttention-3's epilogue relies on it; an
                // unintended extra arrival shows as what it causes (a use that completes
                // without someone, whose later sync then starves: `deadlock`).
                self.state.named[slot].count = c as u16;
                self.release(t);
                self.publish(t, SyncObj::Named(slot as u32), LVL_CTA, false);
                if blocking {
                    self.touched.mark(&mut self.state.threads, t as usize).mode =
                        Mode::Sync(SyncKind::Named { id: idv });
                    self.try_named(block, idv);
                    Done::Handled
                } else {
                    self.state.named[slot].arrived += 1;
                    self.touched
                        .mark(&mut self.state.threads, t as usize)
                        .named_arrived |= 1 << idv;
                    self.try_named(block, idv);
                    Done::Next
                }
            }
            Op::SyncWarp => {
                self.touched.mark(&mut self.state.threads, t as usize).mode =
                    Mode::Sync(SyncKind::Warp);
                self.try_warp(t);
                Done::Handled
            }
            Op::ClusterSync | Op::ClusterArrive => {
                let k = self.m.threads[t as usize].kernel;
                let phase = self.state.cluster_phase[k as usize];
                self.release(t);
                self.publish(t, SyncObj::Cluster(k), LVL_CLUSTER, false);
                let th = self.touched.mark(&mut self.state.threads, t as usize);
                th.cluster_token = Some(phase);
                if matches!(op, Op::ClusterSync) {
                    th.mode = Mode::Sync(SyncKind::Cluster);
                    self.try_cluster(k);
                    Done::Handled
                } else {
                    self.try_cluster(k);
                    Done::Next
                }
            }
            Op::ClusterWait => {
                self.touched
                    .mark(&mut self.state.threads, t as usize)
                    .cluster_token = None;
                let k = self.m.threads[t as usize].kernel;
                self.acquire(t, SyncObj::Cluster(k), LVL_CLUSTER);
                self.waited(t);
                Done::Next
            }
            Op::Read { buf } | Op::Write { buf, .. } | Op::Mma { buf } => {
                let x = tryo!(self.buf(t, buf));
                let kind = match op {
                    Op::Read { .. } => AccessKind::Read,
                    Op::Write { part: false, .. } => AccessKind::Write,
                    Op::Write { part: true, .. } => AccessKind::PartWrite,
                    _ => AccessKind::AsyncRead,
                };
                let bytes = match super::bytes::op_range(op) {
                    Some(r) => Some(tryo!(self.range_key(t, pc, r))),
                    None => None,
                };
                self.record_range_access(t, x, kind, pc, bytes);
                Done::Next
            }
            Op::Store { global } | Op::Load { global } => {
                let x = tryo!(self.buf(t, global));
                let kind = if matches!(op, Op::Store { .. }) {
                    AccessKind::Write
                } else {
                    AccessKind::Read
                };
                self.record_access(t, x, kind, pc);
                Done::Next
            }
            Op::StoreRelease { global, scope } => {
                let x = tryo!(self.buf(t, global));
                // The flag's own accesses race unless morally strong (`flag_strong`: every
                // access of it is, and then none is kept).
                if !self.m.flag_strong[x as usize] {
                    self.record_strong_access(t, x, AccessKind::Write, pc, scope_level(*scope));
                }
                self.release(t);
                self.publish_flag(t, SyncObj::Flag(x), scope_level(*scope));
                self.state.released[x as usize] = true;
                Done::Next
            }
            Op::LoadAcquire { global, scope } => {
                let x = tryo!(self.buf(t, global));
                self.acquire(t, SyncObj::Flag(x), scope_level(*scope));
                if !self.m.flag_strong[x as usize] {
                    self.record_strong_access(t, x, AccessKind::Read, pc, scope_level(*scope));
                }
                self.waited(t);
                Done::Next
            }
            Op::Fence { .. } => {
                // `fence.acq_rel` synchronizes only as the head of a release pattern or the
                // tail of an acquire pattern, whose write and read must be morally strong
                // anyway (PTX "Release and Acquire Patterns"); `store_release` and
                // `load_acquire` are themselves such patterns, so a fence adds no
                // synchronization here (as in the memory-model oracle). It still carries the
                // thread's proxy fences.
                self.release(t);
                Done::Next
            }
            Op::FenceProxyAsync => {
                self.fence_observed(t);
                let th = self.touched.mark(&mut self.state.threads, t as usize);
                for a in th.acc.iter_mut() {
                    a.fence = a.fence.max(FENCE_OWN);
                }
                // The thread's cp.async copies issued before the fence (the oracle's reading:
                // a fence after the issue covers the copy, §6.3).
                for c in th.cp.iter_mut() {
                    c.fence = c.fence.max(FENCE_OWN);
                }
                Done::Next
            }
            Op::Tma {
                dst,
                bar,
                bytes,
                multicast,
            } => {
                let bytes = tryo!(self.eval(t, bytes));
                ensure!(self.bytes_in_range(bytes, span));
                let ti = &self.m.threads[t as usize];
                let k = &self.m.kernels[ti.kernel as usize];
                let own = ti.cta;
                let mask = match multicast {
                    Some(e) => tryo!(self.eval(t, e)),
                    None => 1 << own,
                };
                if mask <= 0 || mask >= (1i64 << k.cluster) {
                    self.fail(
                        &rules::model_error::RULE,
                        span,
                        format!("multicast mask {mask:#b} names no block or a block outside the cluster of {}", k.cluster),
                    );
                    return Done::Handled;
                }
                let (b_own, _) = tryo!(self.bar(t, bar));
                let x_own = tryo!(self.buf(t, dst));
                // The bytes it writes: the same CTA-relative range in every block it lands in.
                let key = match super::bytes::op_range(op) {
                    Some(r) => Some(tryo!(self.range_key(t, pc, r))),
                    None => None,
                };
                ensure!(self.check_valid(Some(t), b_own, span, "issues a TMA copy signalling"));
                self.check_vis(t, b_own, false, span);
                let own_block = self.m.block_of(t);
                for c in 0..k.cluster {
                    if mask & (1 << c) == 0 {
                        continue;
                    }
                    let block = k.first_block + c;
                    // Same CTA-relative offset in block c (signed: c may precede this block).
                    let bar_o = i64::from(self.m.program.object(bar.object).count());
                    let buf_o = i64::from(self.m.program.object(dst.object).count());
                    let delta = i64::from(block) - i64::from(own_block);
                    let b = (i64::from(b_own) + delta * bar_o) as u32;
                    let x = (i64::from(x_own) + delta * buf_o) as u32;
                    if block != own_block {
                        if !self.live_block(block) {
                            self.fail(
                                &rules::remote_cta_exited::RULE,
                                span,
                                format!(
                                    "{} multicasts into block {c}, whose threads all finished",
                                    self.name(t)
                                ),
                            );
                            return Done::Handled;
                        }
                        self.check_vis(t, b, true, span);
                    }
                    self.push_event(Event::Tma {
                        buf: x,
                        bar: b,
                        bytes: bytes as i32,
                        issuer: t,
                        pc,
                        key,
                    });
                }
                Done::Next
            }
            Op::TmaStore { src } => {
                let x = tryo!(self.buf(t, src));
                let th = self.touched.mark(&mut self.state.threads, t as usize);
                let g = th.bulk_committed;
                th.bulk.push((x, g, pc));
                th.bulk.sort_unstable();
                Done::Next
            }
            Op::BulkCommit => {
                self.touched
                    .mark(&mut self.state.threads, t as usize)
                    .bulk_committed += 1;
                Done::Next
            }
            Op::BulkWaitRead { n } => {
                let n = tryo!(self.eval(t, n)).max(0);
                let th = &self.state.threads[t as usize];
                let committed = i64::from(th.bulk_committed);
                let done: Vec<(u32, u32, u32)> = th
                    .bulk
                    .iter()
                    .filter(|b| i64::from(b.1) + n < committed)
                    .copied()
                    .collect();
                self.touched
                    .mark(&mut self.state.threads, t as usize)
                    .bulk
                    .retain(|b| i64::from(b.1) + n >= committed);
                for (x, _, p) in done {
                    self.record_access(t, x, AccessKind::AsyncRead, p);
                }
                Done::Next
            }
            Op::CpAsync { dst } => {
                let x = tryo!(self.buf(t, dst));
                self.cp_async(t, x);
                Done::Next
            }
            Op::CommitGroup => {
                self.touched
                    .mark(&mut self.state.threads, t as usize)
                    .cp_committed += 1;
                Done::Next
            }
            Op::WaitGroup { n } => {
                let n = tryo!(self.eval(t, n));
                self.wait_group(t, n);
                Done::Next
            }
            Op::CpAsyncArrive { bar, noinc } => {
                let b = tryo!(self.local_bar(t, bar, span, "cp_async_arrive"));
                ensure!(self.check_valid(Some(t), b, span, "tracks copies on"));
                self.check_vis(t, b, false, span);
                ensure!(self.cp_arrive(t, b, *noinc, span));
                Done::Next
            }
            Op::ProducerAcquire { pipe } => {
                let p = tryo!(self.pipe(t, pipe));
                ensure!(self.pipe_check(t, &p, true, span, "producer_acquire"));
                if let Some((bars, stages)) = p.block {
                    let ps = *self.pipe_state(t, p.id);
                    let b = bars + ps.head % stages;
                    ensure!(self.check_valid(Some(t), b, span, "acquires"));
                    self.observe(t, b, span, false, LVL_CTA);
                }
                Done::Next
            }
            Op::ProducerCommit { pipe } => {
                let p = tryo!(self.pipe(t, pipe));
                ensure!(self.pipe_check(t, &p, true, span, "producer_commit"));
                match p.block {
                    Some((bars, stages)) => {
                        let ps = *self.pipe_state(t, p.id);
                        let b = bars + stages + ps.head % stages;
                        ensure!(self.check_valid(Some(t), b, span, "commits to"));
                        ensure!(self.cp_arrive(t, b, false, span));
                        let phase = self.state.bars[b as usize].phase;
                        self.release(t);
                        self.publish(t, SyncObj::Bar(b), LVL_CTA, false);
                        ensure!(self.arrive_on(Some(t), b, 1, span));
                        self.note_arrive(t, b, phase);
                        let ps = self.pipe_state(t, p.id);
                        ps.head += 1;
                        if ps.head == stages {
                            ps.head = 0;
                            ps.consumed_parity ^= 1;
                        }
                    }
                    None => {
                        self.touched
                            .mark(&mut self.state.threads, t as usize)
                            .cp_committed += 1;
                        self.pipe_state(t, p.id).head += 1;
                    }
                }
                Done::Next
            }
            Op::ConsumerWait { pipe } | Op::ConsumerWaitPrior { pipe, .. } => {
                let p = tryo!(self.pipe(t, pipe));
                ensure!(self.pipe_check(t, &p, false, span, op.keyword()));
                match p.block {
                    Some((bars, stages)) => {
                        let ps = *self.pipe_state(t, p.id);
                        let b = bars + stages + ps.tail % stages;
                        ensure!(self.check_valid(Some(t), b, span, "waits on"));
                        self.observe(t, b, span, false, LVL_CTA);
                    }
                    None => {
                        let ps = *self.pipe_state(t, p.id);
                        if let Op::ConsumerWaitPrior { n, .. } = op {
                            let n = tryo!(self.eval(t, n)).max(0);
                            self.wait_group(t, n.min(8));
                            self.pipe_state(t, p.id).tail = (i64::from(ps.head) - n).max(0) as u32;
                        } else if ps.head > ps.tail {
                            self.wait_group(t, i64::from(ps.head - ps.tail - 1));
                            self.pipe_state(t, p.id).tail += 1;
                        }
                    }
                }
                Done::Next
            }
            Op::ConsumerRelease { pipe } => {
                let p = tryo!(self.pipe(t, pipe));
                ensure!(self.pipe_check(t, &p, false, span, "consumer_release"));
                if let Some((bars, stages)) = p.block {
                    let ps = *self.pipe_state(t, p.id);
                    let b = bars + ps.tail % stages;
                    ensure!(self.check_valid(Some(t), b, span, "releases"));
                    let phase = self.state.bars[b as usize].phase;
                    self.release(t);
                    self.publish(t, SyncObj::Bar(b), LVL_CTA, false);
                    ensure!(self.arrive_on(Some(t), b, 1, span));
                    self.note_arrive(t, b, phase);
                    let ps = self.pipe_state(t, p.id);
                    ps.tail += 1;
                    if ps.tail == stages {
                        ps.tail = 0;
                        ps.produced_parity ^= 1;
                    }
                }
                Done::Next
            }
            Op::MemcpyAsync { dst, pipe } => {
                let x = tryo!(self.buf(t, dst));
                let p = tryo!(self.pipe(t, pipe));
                ensure!(self.pipe_check(t, &p, true, span, "memcpy_async"));
                self.cp_async(t, x);
                Done::Next
            }
            Op::Quit { pipe } => {
                let p = tryo!(self.pipe(t, pipe));
                if self.pipe_state(t, p.id).quit {
                    self.fail(
                        &rules::after_quit::RULE,
                        span,
                        format!("{} calls `quit` twice", self.name(t)),
                    );
                    return Done::Handled;
                }
                // A quit that leaves a stage barrier one arrival short is an error only where
                // some thread still needs that phase: the deadlock analysis reports it
                // (semantics.md §4.2 P6).
                let ps = self.pipe_state(t, p.id);
                ps.quit = true;
                ps.quit_pc = pc;
                if let Some((bars, stages)) = p.block {
                    let r = &mut self.state.pipe_refs[p.id as usize];
                    *r = r.saturating_sub(1);
                    if *r == 0 {
                        for b in bars..bars + 2 * stages {
                            let bs = &mut self.state.bars[b as usize];
                            bs.valid = false;
                            bs.quit_inval = true;
                        }
                    }
                }
                Done::Next
            }
        }
    }

    /// Release effect of an arrive: `.release` at its scope; a `.cta`-scope arrive into a peer
    /// block publishes nothing (semantics.md §6.2).
    fn arrive_release(&mut self, t: u32, bar: u32, remote: bool, scope: MemScope) {
        let level = scope_level(scope);
        if remote && level < LVL_CLUSTER {
            return;
        }
        self.release(t);
        self.publish(t, SyncObj::Bar(bar), level, false);
    }

    fn note_arrive(&mut self, t: u32, bar: u32, phase: u32) {
        let obj_tracked = {
            // Find the object of this barrier instance.
            let mut tracked = false;
            for (oi, l) in self.m.layouts.iter().enumerate() {
                if let Layout::Bar { base } = l {
                    let n = self.m.program.objects[oi].count() * self.m.nblocks;
                    if bar >= *base && bar < base + n {
                        tracked = self.m.tracks_arrive[oi];
                    }
                }
            }
            tracked
        };
        if obj_tracked {
            self.track(t, bar).arrived_in = i64::from(phase);
        }
    }
}

/// `init-not-visible` for a use of barrier instance `bar` by thread `t` (`remote`: from a peer
/// block) at `span`, unless `t` initialized it or is ordered after its init (semantics.md §6.4):
/// a block barrier after the init publishes it to the block, a cluster barrier to the cluster.
pub(crate) fn init_not_visible(
    m: &PhaseModel,
    s: &State,
    t: u32,
    bar: u32,
    remote: bool,
    span: Span,
) -> Option<MFinding> {
    let b = s.bars[bar as usize];
    if b.init_by == t || b.vis >= 3 || (!remote && b.vis >= 2) {
        return None;
    }
    let init_by = if b.init_by == u32::MAX {
        "its initializer".to_string()
    } else {
        m.threads[b.init_by as usize].name.clone()
    };
    Some(
        MFinding::new(
            &rules::init_not_visible::RULE,
            span,
            format!(
                "{} uses `{}` before it is ordered after the init by {init_by}",
                m.threads[t as usize].name, m.bar_names[bar as usize]
            ),
        )
        .help(if remote {
            "after the init: fence_mbarrier_init, then cluster_sync before peers use it"
        } else {
            "put a syncthreads between the init and the other threads' first use"
        }),
    )
}
