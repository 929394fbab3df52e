//! One thread's run-ahead for the footprints (the module doc of `footprint.rs` says what a run
//! is, where it stops, and why its result can be trusted): the paths of the run, the
//! decision of a branch on polled results without a fork, and each visible operation's
//! effect on the run's record.

use super::*;

/// One path of a run in progress.
#[derive(Clone)]
struct Path {
    pc: u32,
    locals: Vec<i64>,
    /// Locals whose value depends on a barrier that may still move (bit per slot).
    tainted: u64,
    /// Of those, the ones known to hold 0 or 1 (`test_wait` results).
    tbool: u64,
    arrivals: Vec<(u32, u32)>,
    /// Barriers a wait of this path passed on.
    observed: Vec<u32>,
    /// Barriers a wait of this path passed on since its last arrive on them.
    waits_since_arrive: Vec<u32>,
    /// Arrivals on named-barrier slots.
    named: Vec<(u32, u32)>,
    /// The thread's state of each pipeline instance it has used (as in [`Thread::pipes`]).
    pipes: Vec<(u32, PipeThread)>,
    /// Backward jumps taken (loop trips): with `pc`, how far the path has come.
    back: u32,
    /// Warp rendezvous (`syncwarp`, `elect`) passed, fewest and most of the paths merged.
    rv: (u32, u32),
}

impl Path {
    /// The other side of a fork: the same path, continuing at `pc`.
    fn fork(&self, pc: u32) -> Path {
        Path {
            pc,
            back: self.back + u32::from(pc <= self.pc),
            ..self.clone()
        }
    }

    /// Whether `o` continues exactly as this path does: same pc, taint, pipeline state and
    /// value of every untainted local (a tainted value is never read: every use of it forks or
    /// ends the run).
    fn same_future(&self, o: &Path) -> bool {
        self.pc == o.pc
            && self.tainted == o.tainted
            && self.tbool & self.tainted == o.tbool & o.tainted
            && self.pipes == o.pipes
            && self.locals.len() == o.locals.len()
            && self
                .locals
                .iter()
                .zip(&o.locals)
                .enumerate()
                .all(|(i, (a, b))| a == b || (i < 64 && self.tainted & (1 << i) != 0))
    }

    /// Merge `o`, which has the same future ([`Path::same_future`]), into this path: the most
    /// arrivals of either, the phases both observed, the waits either made since its arrive.
    /// Everything the merged path lists from here on is then at least what either would.
    fn join(&mut self, o: Path) {
        merge_max(&mut self.arrivals, o.arrivals);
        merge_max(&mut self.named, o.named);
        self.observed.retain(|b| o.observed.contains(b));
        for b in o.waits_since_arrive {
            if !self.waits_since_arrive.contains(&b) {
                self.waits_since_arrive.push(b);
            }
        }
        self.back = self.back.min(o.back);
        self.rv = (self.rv.0.min(o.rv.0), self.rv.1.max(o.rv.1));
    }

    fn pipe(&mut self, id: u32) -> &mut PipeThread {
        let pos = match self.pipes.binary_search_by_key(&id, |p| p.0) {
            Ok(p) => p,
            Err(p) => {
                let fresh = PipeThread {
                    consumed_parity: 1,
                    ..PipeThread::default()
                };
                self.pipes.insert(p, (id, fresh));
                p
            }
        };
        &mut self.pipes[pos].1
    }
}

enum Next {
    Go,
    /// The path ends (blocked for good, exit, end).
    End,
    /// The run cannot be followed.
    Unknown,
}

fn mentions(e: &Expr, tainted: u64) -> bool {
    if tainted == 0 {
        return false;
    }
    match &e.kind {
        ExprKind::Local(l) => l.0 >= 64 || tainted & (1 << l.0) != 0,
        ExprKind::Unary(_, a) => mentions(a, tainted),
        ExprKind::Binary(_, a, b) | ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
            mentions(a, tainted) || mentions(b, tainted)
        }
        _ => false,
    }
}

/// A condition that mentions tainted locals, on a path.
enum Decided {
    /// Every value the tainted locals may hold gives this one.
    Value(i64),
    /// It may go either way (or the tainted locals are not all `test_wait` results).
    Either,
    /// Some value the tainted locals may hold makes it fail to evaluate (an error step).
    Error,
}

/// Decide `cond` on path `p` when every tainted local it mentions is a `test_wait` result
/// (0 or 1) and there are at most 6 of them: evaluate it for every combination. A poll such
/// as `if w_ok == 0 || a_ok == 0` with `w_ok` known to be 0 then takes its branch without a
/// fork. (Its condition is only ever 0 or non-zero on the real path too, which is one of the
/// combinations.)
fn decide(m: &PhaseModel, u: u32, cond: &Expr, p: &Path) -> Decided {
    fn slots(e: &Expr, tainted: u64, out: &mut u64) {
        match &e.kind {
            ExprKind::Local(l) if l.0 < 64 && tainted & (1 << l.0) != 0 => *out |= 1 << l.0,
            ExprKind::Unary(_, a) => slots(a, tainted, out),
            ExprKind::Binary(_, a, b) | ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
                slots(a, tainted, out);
                slots(b, tainted, out);
            }
            _ => {}
        }
    }
    let mut used = 0u64;
    slots(cond, p.tainted, &mut used);
    if used & !p.tbool != 0 || used.count_ones() > 6 {
        return Decided::Either;
    }
    let bits: Vec<u32> = (0..64).filter(|i| used & (1 << i) != 0).collect();
    let mut locals = p.locals.clone();
    let mut seen: Option<bool> = None;
    let mut value = 0;
    for combo in 0u32..(1 << bits.len()) {
        for (j, &slot) in bits.iter().enumerate() {
            locals[slot as usize] = i64::from(combo >> j & 1);
        }
        match m.eval(cond, u, &locals) {
            Ok(v) => match seen {
                None => {
                    seen = Some(v != 0);
                    value = v;
                }
                Some(t) if t != (v != 0) => return Decided::Either,
                Some(_) => {}
            },
            Err(_) => return Decided::Error,
        }
    }
    Decided::Value(value)
}

/// How a run takes the `elect`s on its path. A warp whose leader was chosen
/// (`Thread::leads`) keeps it while no lane of the warp leaves (exec `forget_leader`), and
/// every one of its `elect`s fires with it (exec `try_warp`): the leader takes each body,
/// the other lanes skip it. [`super::frozen`] uses that only when no live lane of the warp may
/// leave in its run (`may_finish`) and every run of the warp could be followed; then no lane
/// leaves before the first step outside the footprints (the first leave would be such a step),
/// so up to that step every `elect` of the warp fires with that leader and each lane's run is
/// the path it takes. Otherwise, or without a leader, both outcomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Elect {
    Fork,
    Lead,
    Skip,
}

pub(super) fn simulate(
    m: &PhaseModel,
    s: &State,
    u: u32,
    assumed: Assumption,
    elect: Elect,
) -> Run {
    let (stuck, _, _) = assumed;
    let th = &s.threads[u as usize];
    let code = m.code_of(u);
    let mut run = Run::default();
    let mut start = vec![];
    let path = |pc: u32| Path {
        pc,
        locals: th.locals.to_vec(),
        tainted: 0,
        tbool: 0,
        arrivals: Vec::new(),
        observed: Vec::new(),
        waits_since_arrive: Vec::new(),
        named: Vec::new(),
        pipes: th.pipes.clone(),
        back: 0,
        rv: (0, 0),
    };
    match th.mode {
        Mode::Ready => match th.aw {
            // The second half of `arrive_and_wait` (its arrival is made): it blocks for good on
            // a stuck phase that has not completed, else it passes.
            Some((b, phase)) => {
                let bs = &s.bars[b as usize];
                if bs.valid && bs.phase == phase && stuck[b as usize] {
                    return run;
                }
                flag(&mut run.bars, b, B_WAIT);
                let mut p = path(th.pc + 1);
                p.observed.push(b);
                p.waits_since_arrive.push(b);
                start.push(p);
            }
            None => start.push(path(th.pc)),
        },
        // Arrived at a warp rendezvous of the warp of the thread standing still: frozen.
        Mode::Sync(SyncKind::Warp | SyncKind::Elect) if assumed.2.holds_warp(m, u) => {
            return run;
        }
        Mode::Sync(_) => match code.instrs[th.pc as usize] {
            // Arrived at an `elect`: either lane of the outcome, or as the leader decides.
            Instr::Elect { skip, .. } => {
                let passed = |pc| Path {
                    rv: (1, 1),
                    ..path(pc)
                };
                if elect != Elect::Skip {
                    start.push(passed(th.pc + 1));
                }
                if elect != Elect::Lead {
                    start.push(passed(skip));
                }
            }
            // Arrived at a rendezvous: assume it completes (an upper bound).
            _ => start.push(Path {
                rv: if th.mode == Mode::Sync(SyncKind::Warp) {
                    (1, 1)
                } else {
                    (0, 0)
                },
                ..path(th.pc + 1)
            }),
        },
        Mode::Exited | Mode::Finished => return run,
    }
    // The paths still running. The least advanced one moves next ((back-edges taken, pc) grows
    // with every step), after every other path at the same point with the same future (same
    // pc, untainted locals, taint and pipeline state) is merged into it: what the merged path
    // records (arrivals, observed phases, waits since an arrive) is an upper bound of both, so
    // the branches of a fork on a polled barrier join again where they meet instead of
    // doubling at every fork.
    let mut live = start;
    let mut steps = 0u32;
    while !live.is_empty() {
        let i = (0..live.len())
            .min_by_key(|&i| (live[i].back, live[i].pc))
            .unwrap_or(0);
        let mut p = live.swap_remove(i);
        let mut j = 0;
        while j < live.len() {
            if p.same_future(&live[j]) {
                let q = live.swap_remove(j);
                p.join(q);
            } else {
                j += 1;
            }
        }
        steps += 1;
        if steps > MAX_STEPS {
            run.unknown = true;
            return run;
        }
        let from = p.pc;
        let next = match &code.instrs[p.pc as usize] {
            Instr::Set { slot, value } => {
                if mentions(value, p.tainted) {
                    Next::Unknown
                } else {
                    match m.eval(value, u, &p.locals) {
                        Ok(v) => {
                            p.locals[*slot as usize] = v;
                            if *slot < 64 {
                                p.tainted &= !(1 << slot);
                            }
                            p.pc += 1;
                            Next::Go
                        }
                        Err(_) => Next::Unknown,
                    }
                }
            }
            Instr::Jump(to) => {
                p.pc = *to;
                Next::Go
            }
            Instr::JumpIfZero { cond, target } => {
                if mentions(cond, p.tainted) {
                    match decide(m, u, cond, &p) {
                        Decided::Value(v) => {
                            p.pc = if v == 0 { *target } else { p.pc + 1 };
                            Next::Go
                        }
                        Decided::Error => Next::Unknown,
                        Decided::Either => {
                            live.push(p.fork(*target));
                            p.pc += 1;
                            Next::Go
                        }
                    }
                } else {
                    match m.eval(cond, u, &p.locals) {
                        Ok(v) => {
                            p.pc = if v == 0 { *target } else { p.pc + 1 };
                            Next::Go
                        }
                        Err(_) => Next::Unknown,
                    }
                }
            }
            Instr::ForTest { var, end, exit } => {
                let t = p.tainted;
                if (*var < 64 && t & (1 << var) != 0) || (*end < 64 && t & (1 << end) != 0) {
                    Next::Unknown
                } else {
                    p.pc = if p.locals[*var as usize] < p.locals[*end as usize] {
                        p.pc + 1
                    } else {
                        *exit
                    };
                    Next::Go
                }
            }
            Instr::ForNext { var, test } => {
                p.locals[*var as usize] += 1;
                p.pc = *test;
                Next::Go
            }
            Instr::WhileTest {
                cond, trips, exit, ..
            } => {
                let value = if mentions(cond, p.tainted) {
                    match decide(m, u, cond, &p) {
                        Decided::Value(v) => Ok(v),
                        Decided::Error | Decided::Either => Err(()),
                    }
                } else {
                    m.eval(cond, u, &p.locals).map_err(|_| ())
                };
                {
                    match value {
                        Ok(0) => {
                            p.pc = *exit;
                            Next::Go
                        }
                        Ok(_) => {
                            p.locals[*trips as usize] += 1;
                            if p.locals[*trips as usize] > i64::from(m.max_loop_trips) {
                                // The real step reports the bound; stay conservative.
                                Next::Unknown
                            } else {
                                p.pc += 1;
                                Next::Go
                            }
                        }
                        Err(_) => Next::Unknown,
                    }
                }
            }
            // An `elect` of the warp of the thread standing still never fires.
            Instr::Elect { .. } if assumed.2.holds_warp(m, u) => Next::End,
            Instr::Elect { skip, .. } => {
                p.rv = (p.rv.0 + 1, p.rv.1 + 1);
                match elect {
                    Elect::Fork => {
                        live.push(p.fork(*skip));
                        p.pc += 1;
                    }
                    Elect::Lead => p.pc += 1,
                    Elect::Skip => p.pc = *skip,
                }
                Next::Go
            }
            Instr::Exit { .. } | Instr::End { .. } => {
                run.may_finish = true;
                run.leave_rv = Some(match run.leave_rv {
                    None => p.rv,
                    Some(r) => (r.0.min(p.rv.0), r.1.max(p.rv.1)),
                });
                Next::End
            }
            Instr::Op { op, .. } => {
                if matches!(op, Op::SyncWarp) && !assumed.2.holds_warp(m, u) {
                    p.rv = (p.rv.0 + 1, p.rv.1 + 1);
                }
                op_step(m, s, u, op, assumed, &mut p, &mut run)
            }
        };
        match next {
            Next::Go => {
                if p.pc <= from {
                    p.back += 1;
                }
                live.push(p);
                if live.len() > MAX_PATHS {
                    run.unknown = true;
                    return run;
                }
            }
            Next::End => {
                run.max_rv = run.max_rv.max(p.rv.1);
                finish(p, &mut run)
            }
            Next::Unknown => {
                run.unknown = true;
                return run;
            }
        }
    }
    run
}

/// Add `from`'s counts to `into`, key by key, keeping the larger count of a key in both (the
/// most arrivals or named-barrier uses of any one path).
fn merge_max<K: PartialEq, N: Ord>(into: &mut Vec<(K, N)>, from: Vec<(K, N)>) {
    for (k, n) in from {
        match into.iter_mut().find(|e| e.0 == k) {
            Some(e) => {
                if n > e.1 {
                    e.1 = n;
                }
            }
            None => into.push((k, n)),
        }
    }
}

/// A path that ended: what it leaves in the run.
fn finish(p: Path, run: &mut Run) {
    for &b in &p.waits_since_arrive {
        flag(&mut run.bars, b, B_WAIT_LATE);
    }
    merge_max(&mut run.named, p.named);
    // A thread follows one path: its arrivals are bounded by the largest path's.
    merge_max(&mut run.arrivals, p.arrivals);
}

/// One visible operation of a run.
fn op_step(
    m: &PhaseModel,
    s: &State,
    u: u32,
    op: &Op,
    (stuck, named_stuck, still): Assumption,
    p: &mut Path,
    run: &mut Run,
) -> Next {
    // Resolve every object the operation names; any doubt ends the run.
    let own = m.block_of(u);
    let mut ids = [0u32; 2];
    let mut pipe = None;
    for (i, r) in op.object_refs().into_iter().enumerate() {
        let exprs = r.index.iter().chain(r.cta.iter());
        if exprs.into_iter().any(|e| mentions(e, p.tainted)) {
            return Next::Unknown;
        }
        if let Layout::Pipe { .. } | Layout::ThreadPipe { .. } = m.layouts[r.object.0 as usize] {
            match peek_pipe(m, u, r, &p.locals) {
                Some(x) => pipe = Some(x),
                None => return Next::Unknown,
            }
            continue;
        }
        let Some(id) = peek_with(m, u, r, &p.locals) else {
            return Next::Unknown;
        };
        let block = match m.layouts[r.object.0 as usize] {
            Layout::Bar { .. } => m.bar_block[id as usize],
            Layout::Buf { .. } => m.buf_block[id as usize],
            Layout::Pipe { .. } | Layout::ThreadPipe { .. } => return Next::Unknown,
        };
        if block != u32::MAX && block != own {
            run.remote = true;
            if !run.remote_into.contains(&block) {
                run.remote_into.push(block);
            }
        }
        ids[i.min(1)] = id;
    }
    let eval = |e: &Expr, p: &Path| -> Option<i64> {
        if mentions(e, p.tainted) {
            return None;
        }
        m.eval(e, u, &p.locals).ok()
    };
    let taint = |p: &mut Path, slot: u32| {
        if slot < 64 {
            p.tainted |= 1 << slot;
            p.tbool &= !(1 << slot);
            true
        } else {
            false
        }
    };
    let arrive = |p: &mut Path, run: &mut Run, b: u32, n: u32, f: u8| {
        bump(&mut p.arrivals, b, n);
        p.waits_since_arrive.retain(|&x| x != b);
        let first = if p.observed.contains(&b) {
            0
        } else {
            B_ARRIVE_FIRST
        };
        flag(&mut run.bars, b, B_ARRIVE | first | f);
    };
    match op {
        Op::Arrive { count, token, .. } => {
            let b = ids[0];
            let n = match count {
                Some(c) => match eval(c, p) {
                    Some(v) => v.clamp(0, i64::from(u32::MAX)) as u32,
                    None => return Next::Unknown,
                },
                None => 1,
            };
            arrive(p, run, b, n, 0);
            if let Some(l) = token {
                if stuck[b as usize] {
                    p.locals[l.0 as usize] = encode_token(b, s.bars[b as usize].phase);
                    if l.0 < 64 {
                        p.tainted &= !(1 << l.0);
                    }
                } else if !taint(p, l.0) {
                    return Next::Unknown;
                }
            }
        }
        Op::ArriveDrop { .. } | Op::CpAsyncArrive { noinc: true, .. } => {
            arrive(p, run, ids[0], 1, 0)
        }
        // Raises the pending count now, with the in-flight arrive-on that lowers it again
        // later: pending never ends up lower than before, so it counts as no arrival.
        Op::CpAsyncArrive { noinc: false, .. } => arrive(p, run, ids[0], 0, 0),
        Op::ArriveExpectTx { .. } => arrive(p, run, ids[0], 1, B_TX | B_TX_UP),
        Op::ExpectTx { .. } | Op::CompleteTx { .. } => flag(&mut run.bars, ids[0], B_TX | B_TX_UP),
        Op::Init { .. } | Op::Inval { .. } => flag(&mut run.bars, ids[0], B_INIT),
        // A wait that blocks for good ends the path and is no step of the run: it reads
        // nothing before the candidate moves. One that passes is a step (it reads the phase
        // and marks it observed).
        Op::WaitParity { parity, .. } => {
            let b = ids[0];
            let bs = &s.bars[b as usize];
            if m.bar_block[b as usize] == own && bs.valid && stuck[b as usize] {
                let Some(par) = eval(parity, p) else {
                    return Next::Unknown;
                };
                if !parity_passes(bs, par) {
                    return Next::End;
                }
            }
            flag(&mut run.bars, b, B_WAIT);
            p.observed.push(b);
            p.waits_since_arrive.push(b);
        }
        Op::WaitToken { token, .. } => {
            let b = ids[0];
            let bs = &s.bars[b as usize];
            let known = token.0 < 64 && p.tainted & (1 << token.0) == 0;
            if m.bar_block[b as usize] == own
                && bs.valid
                && stuck[b as usize]
                && known
                && matches!(
                    token_check(p.locals[token.0 as usize], b, bs.phase),
                    TokenWait::Block
                )
            {
                return Next::End;
            }
            flag(&mut run.bars, b, B_WAIT);
            p.observed.push(b);
            p.waits_since_arrive.push(b);
        }
        Op::ArriveAndWait { .. } => {
            let b = ids[0];
            arrive(p, run, b, 1, 0);
            let bs = &s.bars[b as usize];
            // It waits for the phase it arrived in, which a stuck barrier never completes.
            if bs.valid && stuck[b as usize] {
                return Next::End;
            }
            flag(&mut run.bars, b, B_WAIT);
            p.observed.push(b);
            p.waits_since_arrive.push(b);
        }
        Op::TestWait { parity, result, .. } => {
            let b = ids[0];
            flag(&mut run.bars, b, B_WAIT);
            p.waits_since_arrive.push(b);
            let bs = &s.bars[b as usize];
            if bs.valid && stuck[b as usize] {
                let Some(par) = eval(parity, p) else {
                    return Next::Unknown;
                };
                p.locals[result.0 as usize] = i64::from(parity_passes(bs, par));
                if result.0 < 64 {
                    p.tainted &= !(1 << result.0);
                }
            } else if taint(p, result.0) {
                // Its value is 0 or 1: a branch on it may still be decided ([`decide`]).
                p.tbool |= 1 << result.0;
            } else {
                return Next::Unknown;
            }
        }
        Op::Tma {
            multicast: None,
            bytes,
            ..
        } => {
            flag(&mut run.bufs, ids[0], X_WRITE);
            flag(&mut run.bars, ids[1], B_TX);
            lower_tx(run, ids[1], eval(bytes, p));
        }
        // A multicast copy writes the same CTA-relative buffer and signals the same
        // CTA-relative barrier in every block of its mask, as the transition does
        // (`Exec::step`, `Op::Tma`): follow it there instead of giving up the whole run (a
        // CUTLASS cluster producer multicasts every k-tile; issue 24 point 3).
        Op::Tma {
            dst,
            bar,
            bytes,
            multicast: Some(e),
        } => {
            let bytes = eval(bytes, p);
            let Some(mask) = eval(e, p) else {
                return Next::Unknown;
            };
            let ti = &m.threads[u as usize];
            let k = &m.kernels[ti.kernel as usize];
            if mask <= 0 || mask >= (1i64 << k.cluster) {
                // The transition reports it as a model error: no footprint to promise.
                return Next::Unknown;
            }
            let bar_o = i64::from(m.program.object(bar.object).count());
            let buf_o = i64::from(m.program.object(dst.object).count());
            for c in 0..k.cluster {
                if mask & (1 << c) == 0 {
                    continue;
                }
                let delta = i64::from(k.first_block + c) - i64::from(own);
                let b = i64::from(ids[1]) + delta * bar_o;
                let x = i64::from(ids[0]) + delta * buf_o;
                if b < 0 || x < 0 || b as usize >= s.bars.len() || x as usize >= m.buf_block.len() {
                    return Next::Unknown;
                }
                if delta != 0 {
                    run.remote = true;
                    let block = k.first_block + c;
                    if !run.remote_into.contains(&block) {
                        run.remote_into.push(block);
                    }
                }
                flag(&mut run.bufs, x as u32, X_WRITE);
                flag(&mut run.bars, b as u32, B_TX);
                lower_tx(run, b as u32, bytes);
            }
        }
        // A byte range whose key this path knows: listed, so that accesses of other bytes
        // may commute with it (`por::ranged_clear`).
        Op::Read { buf } | Op::Write { buf, .. } | Op::Mma { buf }
            if buf
                .bytes
                .as_ref()
                .is_some_and(|r| eval(&r.off, p).is_some_and(|off| off >= 0)) =>
        {
            let r = buf.bytes.as_ref().expect("a byte range");
            let off = eval(&r.off, p).expect("evaluated above");
            let key = m.ranges.key(m.threads[u as usize].kernel, p.pc, u, off);
            let write = matches!(op, Op::Write { .. });
            let entry = (ids[0], p.pc, key, write);
            if !run.ranged.contains(&entry) {
                run.ranged.push(entry);
            }
            flag(
                &mut run.bufs,
                ids[0],
                if write { X_RANGED_WRITE } else { X_RANGED_READ },
            );
        }
        Op::Read { .. }
        | Op::Load { .. }
        | Op::LoadAcquire { .. }
        | Op::Mma { .. }
        | Op::TmaStore { .. } => flag(&mut run.bufs, ids[0], X_READ),
        Op::Write { part: true, .. } => flag(&mut run.bufs, ids[0], X_PART),
        Op::Write { value: Some(v), .. } => {
            let x = ids[0];
            match run.values.iter().find(|e| e.0 == x) {
                Some(&(_, w)) if w != *v => flag(&mut run.bufs, x, X_WRITE),
                Some(_) => {}
                None => run.values.push((x, *v)),
            }
            flag(&mut run.bufs, x, X_VALUE);
        }
        Op::Write { .. } | Op::Store { .. } | Op::StoreRelease { .. } | Op::CpAsync { .. } => {
            flag(&mut run.bufs, ids[0], X_WRITE)
        }
        Op::ProducerAcquire { .. }
        | Op::ProducerCommit { .. }
        | Op::ConsumerWait { .. }
        | Op::ConsumerRelease { .. }
        | Op::ConsumerWaitPrior { .. }
        | Op::MemcpyAsync { .. }
        | Op::Quit { .. } => {
            let Some(pr) = pipe else {
                return Next::Unknown;
            };
            return pipe_step(m, s, u, op, &pr, ids[0], stuck, p, run);
        }
        // Named barriers: an arrival on the slot; a `bar_sync` on a stuck use blocks for good.
        // `syncthreads` is `bar_sync 0` with the whole-block count: an arrival on the block's
        // barrier 0 too. (It used to add none, so a use that some thread of the block was still
        // on its way to stayed stuck, the threads already waiting at it stayed frozen, and
        // their futures were left out of the footprints: a TMA copy one of them issues after
        // the barrier, into a buffer with another copy still in flight, was a missed data race
        // when the copy in flight landed alone. Found by the memory-model oracle's long run.)
        Op::BarSync { .. } | Op::BarArrive { .. } | Op::SyncThreads => {
            let (idv, c) = match op {
                Op::BarSync { id, count, .. } | Op::BarArrive { id, count, .. } => {
                    let Some(idv) = eval(id, p) else {
                        return Next::Unknown;
                    };
                    let c = match count {
                        Some(c) => match eval(c, p) {
                            Some(v) => v,
                            None => return Next::Unknown,
                        },
                        None => 0,
                    };
                    (idv, c)
                }
                _ => (0, 0),
            };
            if !(0..i64::from(NAMED)).contains(&idv) {
                return Next::Unknown;
            }
            let slot = own * NAMED + idv as u32;
            match p.named.iter_mut().find(|e| e.0 == slot) {
                Some(e) => e.1 = e.1.saturating_add(1),
                None => p.named.push((slot, 1)),
            }
            if !run.named_counts.contains(&(slot, c)) {
                run.named_counts.push((slot, c));
            }
            if matches!(op, Op::BarArrive { .. }) && !run.named_nonblocking.contains(&slot) {
                run.named_nonblocking.push(slot);
            }
            // A `bar_sync` on a stuck use, or on a whole-block use of the block of the thread
            // standing still, blocks for good.
            if matches!(op, Op::BarSync { .. } | Op::SyncThreads)
                && (named_stuck[slot as usize] || (c == 0 && still.holds(own, idv as u32)))
            {
                return Next::End;
            }
        }
        // Completing the thread's copies in flight turns them into kept accesses (race
        // flags), which an arrive-on in flight that completes them first would not: list them.
        Op::WaitGroup { .. } => {
            for c in &s.threads[u as usize].cp {
                flag(&mut run.bufs, c.buf, X_WRITE);
            }
        }
        Op::BulkWaitRead { .. } => {
            for c in &s.threads[u as usize].bulk {
                flag(&mut run.bufs, c.0, X_READ);
            }
        }
        // A `syncwarp` of the warp of the thread standing still never fires
        // (`Still::holds_warp`). (A `syncthreads` of its block never completes: the
        // whole-block case of the named-barrier arm above.)
        Op::SyncWarp if still.holds_warp(m, u) => return Next::End,
        // Other rendezvous, fences, groups, compute: assumed to pass (an upper bound); they
        // touch no barrier object or buffer that the reduction asks about.
        Op::SyncWarp
        | Op::ClusterSync
        | Op::ClusterArrive
        | Op::ClusterWait
        | Op::FenceMbarrierInit
        | Op::FenceProxyAsync
        | Op::Fence { .. }
        | Op::Compute
        | Op::CommitGroup
        | Op::BulkCommit => {}
    }
    p.pc += 1;
    Next::Go
}

/// One `cuda::pipeline` operation of a run (model/exec/mod.rs has the real step): waits on the
/// stage barriers like `wait`, commits and releases arrive like `arrive`, `memcpy_async` is a
/// cp.async. A step that would report an error (a role switch, an operation after `quit`, an
/// invalid stage barrier) cannot be followed.
#[allow(clippy::too_many_arguments)]
fn pipe_step(
    m: &PhaseModel,
    s: &State,
    u: u32,
    op: &Op,
    pr: &PipeRef,
    dst: u32,
    stuck: &[bool],
    p: &mut Path,
    run: &mut Run,
) -> Next {
    let producer = matches!(
        op,
        Op::ProducerAcquire { .. } | Op::ProducerCommit { .. } | Op::MemcpyAsync { .. }
    );
    let ps = *p.pipe(pr.id);
    if ps.quit {
        return Next::Unknown;
    }
    if pr.block.is_some() && !pr.unified && !matches!(op, Op::Quit { .. }) {
        let want = if producer { 1 } else { 2 };
        match ps.role {
            0 => p.pipe(pr.id).role = want,
            r if r != want => return Next::Unknown,
            _ => {}
        }
    }
    // A wait on a stage barrier: it ends the path where it blocks for good; otherwise it is a
    // step that reads the phase. (`enabled` lets it go once the thread has quit any pipeline:
    // then it reports an error.)
    let stage_wait = |b: u32, parity: u8, p: &mut Path, run: &mut Run| -> Next {
        let bs = &s.bars[b as usize];
        if !bs.valid || p.pipes.iter().any(|x| x.1.quit) {
            return Next::Unknown;
        }
        if stuck[b as usize] && !parity_passes(bs, i64::from(parity)) {
            return Next::End;
        }
        flag(&mut run.bars, b, B_WAIT);
        p.observed.push(b);
        p.waits_since_arrive.push(b);
        Next::Go
    };
    let arrive = |p: &mut Path, run: &mut Run, b: u32| -> Next {
        if !s.bars[b as usize].valid {
            return Next::Unknown;
        }
        bump(&mut p.arrivals, b, 1);
        p.waits_since_arrive.retain(|&x| x != b);
        let first = if p.observed.contains(&b) {
            0
        } else {
            B_ARRIVE_FIRST
        };
        flag(&mut run.bars, b, B_ARRIVE | first);
        Next::Go
    };
    let next = match (op, pr.block) {
        (Op::ProducerAcquire { .. }, Some((bars, stages))) => {
            stage_wait(bars + ps.head % stages, ps.consumed_parity, p, run)
        }
        (Op::ConsumerWait { .. } | Op::ConsumerWaitPrior { .. }, Some((bars, stages))) => {
            stage_wait(bars + stages + ps.tail % stages, ps.produced_parity, p, run)
        }
        // A commit raises the pending count and puts an arrive-on in flight (no arrival, as
        // for `cp_async_arrive`), then arrives once.
        (Op::ProducerCommit { .. }, Some((bars, stages))) => {
            let next = arrive(p, run, bars + stages + ps.head % stages);
            let ps = p.pipe(pr.id);
            ps.head += 1;
            if ps.head == stages {
                ps.head = 0;
                ps.consumed_parity ^= 1;
            }
            next
        }
        (Op::ConsumerRelease { .. }, Some((bars, stages))) => {
            let next = arrive(p, run, bars + ps.tail % stages);
            let ps = p.pipe(pr.id);
            ps.tail += 1;
            if ps.tail == stages {
                ps.tail = 0;
                ps.produced_parity ^= 1;
            }
            next
        }
        // Quit reads nothing of the stage barriers (what it leaves short is judged at a
        // deadlock, from the thread's own ring state: `quit_checks`). The last quit
        // invalidates the barriers ([`frozen`] counts the quits).
        (Op::Quit { .. }, Some((bars, stages))) => {
            if !run.quits.iter().any(|q| q.0 == pr.id) {
                run.quits.push((pr.id, bars, stages));
            }
            p.pipe(pr.id).quit = true;
            Next::Go
        }
        (Op::Quit { .. }, None) => {
            p.pipe(pr.id).quit = true;
            Next::Go
        }
        (Op::MemcpyAsync { .. }, _) => {
            flag(&mut run.bufs, dst, X_WRITE);
            Next::Go
        }
        // A thread-scope pipeline is the thread's own: its waits complete its own copies
        // (kept accesses, as for `wait_group`).
        (Op::ConsumerWait { .. } | Op::ConsumerWaitPrior { .. }, None) => {
            for c in &s.threads[u as usize].cp {
                flag(&mut run.bufs, c.buf, X_WRITE);
            }
            let ps = p.pipe(pr.id);
            if let Op::ConsumerWaitPrior { n, .. } = op {
                let Some(n) = (!mentions(n, p.tainted))
                    .then(|| m.eval(n, u, &p.locals).ok())
                    .flatten()
                else {
                    return Next::Unknown;
                };
                let ps = p.pipe(pr.id);
                ps.tail = (i64::from(ps.head) - n.max(0)).max(0) as u32;
            } else if ps.head > ps.tail {
                ps.tail += 1;
            }
            Next::Go
        }
        (Op::ProducerCommit { .. }, None) => {
            p.pipe(pr.id).head += 1;
            Next::Go
        }
        (Op::ProducerAcquire { .. } | Op::ConsumerRelease { .. }, None) => Next::Go,
        _ => Next::Unknown,
    };
    if let Next::Go = next {
        p.pc += 1;
    }
    next
}
