//! The footprint rule of the partial-order reduction, operation by operation: given what the
//! other actors can still do while a candidate stands still (`footprint::Frozen`), whether its
//! step (or an in-flight event) commutes with all of it (docs/design.md, "Partial-order
//! reduction").

use super::*;

/// Is `t`'s step independent of everything the other actors can do before `t` moves, given
/// their footprints `f` (docs/design.md, "Partial-order reduction")?
pub(super) fn safe_given(m: &PhaseModel, s: &State, t: u32, f: &footprint::Frozen) -> bool {
    use footprint::*;
    let th = &s.threads[t as usize];
    match &m.code_of(t).instrs[th.pc as usize] {
        // Finishing changes, for the others, only whether the thread's block still runs when
        // they address it from a peer block (`remote-cta-exited`): alone when nobody can, or
        // when another thread of the block outlives every future the footprints cover.
        Instr::Exit { .. } | Instr::End { .. } => {
            let b = m.block_of(t) as usize;
            f.pinned[b] || !f.remote_into[b]
        }
        Instr::Op { op, .. } => match op {
            // An access of a byte range: the others' accesses of the whole instance as before,
            // their ranged ones only where the bytes meet.
            Op::Read { buf } | Op::Write { buf, .. } | Op::Mma { buf } if buf.bytes.is_some() => {
                let Some(x) = peek_bar(m, s, t, buf) else {
                    return false;
                };
                let Some(side) = bytes::enabled_side(m, t, th.pc, &th.locals) else {
                    return false;
                };
                let write = matches!(op, Op::Write { .. });
                let whole = f.buf[x as usize] & !(X_RANGED_READ | X_RANGED_WRITE);
                let flags_ok = if write {
                    whole == 0 && !in_flight_access(s, x)
                } else {
                    whole & X_WRITES == 0 && !in_flight_write(s, x)
                };
                local_buf(m, t, x) && flags_ok && ranged_clear(m, f, x, side, write)
            }
            Op::Read { buf } | Op::Load { global: buf } | Op::Mma { buf } => {
                let Some(x) = peek_bar(m, s, t, buf) else {
                    return false;
                };
                local_buf(m, t, x) && !in_flight_write(s, x) && f.buf[x as usize] & X_WRITES == 0
            }
            Op::Write { buf, part, value } => {
                let Some(x) = peek_bar(m, s, t, buf) else {
                    return false;
                };
                // Part writes of one buffer by different threads do not conflict; writes of one
                // value commute (both orders leave the same state, and whichever comes second
                // meets the first as a kept access: the thread's release that would settle it
                // is not taken alone while others may still write the buffer, `kept_quiet`).
                let allowed = match value {
                    _ if *part => X_PART,
                    Some(v) if f.buf_value[x as usize].is_none_or(|w| w == *v) => X_VALUE,
                    _ => 0,
                };
                local_buf(m, t, x) && !in_flight_access(s, x) && f.buf[x as usize] & !allowed == 0
            }
            Op::Store { global: buf } => {
                let Some(x) = peek_bar(m, s, t, buf) else {
                    return false;
                };
                local_buf(m, t, x) && !in_flight_access(s, x) && f.buf[x as usize] == 0
            }
            Op::WaitParity { bar, .. } | Op::WaitToken { bar, .. } | Op::TestWait { bar, .. } => {
                let Some(b) = peek_bar(m, s, t, bar) else {
                    return false;
                };
                wait_alone(m, s, t, b, f)
            }
            // Its second half: a wait for the phase it arrived in (it marks it observed).
            Op::ArriveAndWait { .. } if th.aw.is_some() => {
                let Some((b, _)) = th.aw else { return false };
                wait_alone(m, s, t, b, f)
            }
            Op::Arrive { bar, .. } | Op::ArriveExpectTx { bar, .. } | Op::ArriveAndWait { bar } => {
                let Some(b) = peek_bar(m, s, t, bar) else {
                    return false;
                };
                arrive_alone(m, s, t, op, b, f)
            }
            Op::BarSync {
                id,
                count: Some(count),
                ..
            }
            | Op::BarArrive {
                id,
                count: Some(count),
                ..
            } => named_alone(m, s, t, id, count, f),
            Op::BarSync {
                id, count: None, ..
            } => match m.eval(id, t, &th.locals) {
                Ok(idv) => whole_block_alone(m, s, t, idv, f),
                Err(_) => false,
            },
            Op::SyncThreads => whole_block_alone(m, s, t, 0, f),
            Op::Tma {
                dst,
                bar,
                bytes,
                multicast: None,
            } => tma_issue_alone(m, s, t, dst, bar, bytes, f),
            Op::Tma {
                dst,
                bar,
                bytes,
                multicast: Some(mask),
            } => multicast_issue_alone(m, s, t, (dst, bar, bytes, mask), f),
            // Group counters are the thread's own.
            Op::CommitGroup | Op::BulkCommit => true,
            // `cp_async_arrive`: raises the pending count now (unless `noinc`) and puts an
            // arrive-on in flight. On a phase nobody else can complete, the raise commutes
            // with their arrivals, and the phase the waits read does not move.
            Op::CpAsyncArrive { bar, .. } => {
                let Some(b) = peek_bar(m, s, t, bar) else {
                    return false;
                };
                raise_alone(m, s, t, b, f)
            }
            // An async copy's write (cp.async) or read (bulk store) in flight from now on.
            Op::CpAsync { dst: buf } | Op::TmaStore { src: buf } => {
                let Some(x) = peek_bar(m, s, t, buf) else {
                    return false;
                };
                copy_alone(m, s, t, x, matches!(op, Op::CpAsync { .. }), f)
            }
            Op::WaitGroup { .. } => own_copies_quiet(s, t, f),
            Op::BulkWaitRead { .. } => own_bulk_reads_quiet(s, t, f),
            Op::FenceProxyAsync => fence_alone(s, t, f),
            Op::ProducerAcquire { pipe }
            | Op::ProducerCommit { pipe }
            | Op::ConsumerWait { pipe }
            | Op::ConsumerWaitPrior { pipe, .. }
            | Op::ConsumerRelease { pipe }
            | Op::MemcpyAsync { pipe, .. }
            | Op::Quit { pipe } => pipe_alone(m, s, t, op, pipe, f),
            _ => false,
        },
        _ => false,
    }
}

/// Raising the pending count of `b` by one (a `cp_async_arrive` or a pipeline commit) with an
/// arrive-on put in flight: on a phase nobody else can complete, the raise commutes with their
/// arrivals, and the phase the waits read does not move.
fn raise_alone(m: &PhaseModel, s: &State, t: u32, b: u32, f: &footprint::Frozen) -> bool {
    let bs = &s.bars[b as usize];
    m.bar_block[b as usize] == m.block_of(t)
        && bs.valid
        && vis_ok(bs, t, false)
        && f.stuck[b as usize]
        && f.bar[b as usize] & footprint::B_INIT == 0
        && i64::from(bs.pending) + 1 < super::MAX_COUNT
}

/// An async copy of `t` that writes (`write`: cp.async, memcpy_async) or reads (a bulk store)
/// buffer `x` from now on.
fn copy_alone(
    m: &PhaseModel,
    s: &State,
    t: u32,
    x: u32,
    write: bool,
    f: &footprint::Frozen,
) -> bool {
    let others = f.buf[x as usize];
    let conflict = if write {
        others != 0 || in_flight_access(s, x)
    } else {
        others & footprint::X_WRITES != 0 || in_flight_write(s, x)
    };
    local_buf(m, t, x) && !conflict
}

/// Completing the thread's own cp.async copies makes their writes kept accesses of the thread
/// (merged with its kept accesses to the same buffers): nobody else may touch those buffers.
/// An arrive-on of this thread in flight also completes its copies, and which barriers a
/// completed copy is published into depends on which arrive-ons are still in flight: not
/// alone then. The thread's other kept accesses do not change.
fn own_copies_quiet(s: &State, t: u32, f: &footprint::Frozen) -> bool {
    let th = &s.threads[t as usize];
    let own_arrive_on = s
        .events
        .iter()
        .any(|e| matches!(*e, Event::CpArrive { thread, .. } if thread == t));
    !own_arrive_on && th.cp.iter().all(|c| quiet(s, f, t, c.buf))
}

/// `bulk_wait_read` turns the thread's bulk-store source reads in flight into kept async reads
/// (merged with its kept accesses to the same buffers): nobody else may write those buffers.
/// Others' reads of them, in flight or to come, do not conflict with a read either way (the
/// issue of a bulk store asks the same, `copy_alone`): CUTLASS's epilogue has every lane of
/// one warp issue the TMA store of one buffer, and each lane's wait met the 31 other reads in
/// flight. The thread's other kept accesses do not change.
fn own_bulk_reads_quiet(s: &State, t: u32, f: &footprint::Frozen) -> bool {
    s.threads[t as usize]
        .bulk
        .iter()
        .all(|b| f.buf[b.0 as usize] & footprint::X_WRITES == 0 && !in_flight_write(s, b.0))
}

/// A `fence_proxy_async` of `t` marks the thread's kept generic accesses and cp.async copies
/// as fenced for its own later async accesses ([`FENCE_OWN`]). Nothing another thread does
/// reads that mark: another thread's async access needs [`FENCE_RELEASED`], which only `t`'s
/// own next release makes (race.rs `fenced_for`), and dropping a kept access weighs only
/// `FENCE_RELEASED` too (order.rs `prune_kept`). So the fence commutes with every other
/// thread's step. What would see its order are `t`'s own asynchronous operations still in
/// flight: a TMA copy it issued lands as its async access (checked against its kept accesses
/// with the fence mark as it is then), an arrive-on completes its copies, a bulk store reads.
/// Requiring all of `t`'s kept accesses quiet, as for a wait, kept a 384-thread kernel's
/// fences from ever being taken alone once kept accesses lived until every conflicting thread
/// was ordered after them.
fn fence_alone(s: &State, t: u32, f: &footprint::Frozen) -> bool {
    let own_in_flight = s.events.iter().any(|e| match *e {
        Event::Tma { issuer, .. } => issuer == t,
        Event::CpArrive { thread, .. } => thread == t,
    });
    !own_in_flight && own_bulk_reads_quiet(s, t, f)
}

/// A `cuda::pipeline` operation of `t` (model/exec/mod.rs has the step): block pipelines wait
/// on and arrive at stage barriers, thread-scope ones only move the thread's own counters and
/// copies. Steps that report an error (after `quit`, a role switch) are not taken alone.
fn pipe_alone(
    m: &PhaseModel,
    s: &State,
    t: u32,
    op: &Op,
    pipe: &protocols::ir::ObjRef,
    f: &footprint::Frozen,
) -> bool {
    let th = &s.threads[t as usize];
    let Some(pr) = super::pipeline::peek_pipe(m, t, pipe, &th.locals) else {
        return false;
    };
    if th.pipes.iter().any(|p| p.1.quit) {
        return false;
    }
    let ps = th
        .pipes
        .iter()
        .find(|p| p.0 == pr.id)
        .map(|p| p.1)
        .unwrap_or(PipeThread {
            consumed_parity: 1,
            ..PipeThread::default()
        });
    let producer = matches!(
        op,
        Op::ProducerAcquire { .. } | Op::ProducerCommit { .. } | Op::MemcpyAsync { .. }
    );
    let quit = matches!(op, Op::Quit { .. });
    if !quit
        && pr.block.is_some()
        && !pr.unified
        && ps.role != 0
        && ps.role != if producer { 1 } else { 2 }
    {
        return false;
    }
    let kept_quiet = || kept_quiet(m, s, t, f);
    match (op, pr.block) {
        // A quit reads nothing of the stage barriers (the phases it leaves short are judged
        // at a deadlock, from the thread's own ring state, which the order of the others'
        // arrivals does not change: `quit_checks`). Quits commute with each other (the last
        // one invalidates the stage barriers in either order); this one must not be the last.
        (Op::Quit { .. }, Some((bars, stages))) => {
            s.pipe_refs[pr.id as usize] >= 2
                && (bars..bars + 2 * stages).all(|b| f.bar[b as usize] & footprint::B_INIT == 0)
        }
        (Op::Quit { .. }, None) => true,
        (Op::MemcpyAsync { dst, .. }, _) => {
            peek_bar(m, s, t, dst).is_some_and(|x| copy_alone(m, s, t, x, true, f))
        }
        (Op::ProducerAcquire { .. }, Some((bars, stages))) => {
            wait_alone(m, s, t, bars + ps.head % stages, f)
        }
        (Op::ConsumerWait { .. } | Op::ConsumerWaitPrior { .. }, Some((bars, stages))) => {
            wait_alone(m, s, t, bars + stages + ps.tail % stages, f)
        }
        // A raise and an arrival: the pending count ends where it was, and an arrive-on is in
        // flight. The arrival's release settles the thread's kept accesses.
        (Op::ProducerCommit { .. }, Some((bars, stages))) => {
            raise_alone(m, s, t, bars + stages + ps.head % stages, f) && kept_quiet()
        }
        (Op::ConsumerRelease { .. }, Some((bars, stages))) => {
            arrive_n_alone(m, s, t, bars + ps.tail % stages, 1, None, f)
        }
        (Op::ConsumerWait { .. } | Op::ConsumerWaitPrior { .. }, None) => own_copies_quiet(s, t, f),
        // The thread's own counters (a commit closes its own copy group).
        (
            Op::ProducerAcquire { .. } | Op::ProducerCommit { .. } | Op::ConsumerRelease { .. },
            None,
        ) => true,
        _ => false,
    }
}

/// The issue of a TMA copy into `t`'s own block (no multicast): it checks the barrier's
/// validity and visibility and puts the copy in flight, and changes nothing else. It commutes
/// with the others' steps when nobody may re-initialize the barrier (the checks then give the
/// same answer in any order), and nobody else touches the destination, nor does anything in
/// flight (the copy's write is an access that races with theirs). The byte count must be in
/// range (else the step reports an error).
fn tma_issue_alone(
    m: &PhaseModel,
    s: &State,
    t: u32,
    dst: &protocols::ir::ObjRef,
    bar: &protocols::ir::ObjRef,
    bytes: &protocols::ir::Expr,
    f: &footprint::Frozen,
) -> bool {
    let th = &s.threads[t as usize];
    let (Some(b), Some(x)) = (peek_bar(m, s, t, bar), peek_bar(m, s, t, dst)) else {
        return false;
    };
    let bs = &s.bars[b as usize];
    m.bar_block[b as usize] == m.block_of(t)
        && local_buf(m, t, x)
        && m.eval(bytes, t, &th.locals)
            .is_ok_and(|v| (0..=super::MAX_COUNT).contains(&v))
        && bs.valid
        && vis_ok(bs, t, false)
        && f.bar[b as usize] & footprint::B_INIT == 0
        && f.buf[x as usize] == 0
        && !in_flight_access(s, x)
}

/// The issue of a multicast TMA copy (`tma X -> B, N multicast MASK`): for every block of the
/// mask it checks the barrier's validity and visibility (remote for a peer) and puts a copy in
/// flight that writes the same CTA-relative buffer and signals the same CTA-relative barrier
/// there (`Exec::op`, `Op::Tma`); a peer block that no longer runs makes it
/// `remote-cta-exited`. So it is [`tma_issue_alone`] per destination, and a peer destination
/// also needs a thread of that block that outlives every future the footprints cover
/// (`Frozen::pinned`), so that the block runs whenever the issue comes. Byte ranges and
/// `@ r` operands are left to the full expansion.
fn multicast_issue_alone(
    m: &PhaseModel,
    s: &State,
    t: u32,
    (dst, bar, bytes, mask): (
        &protocols::ir::ObjRef,
        &protocols::ir::ObjRef,
        &protocols::ir::Expr,
        &protocols::ir::Expr,
    ),
    f: &footprint::Frozen,
) -> bool {
    if dst.bytes.is_some() || dst.cta.is_some() || bar.cta.is_some() {
        return false;
    }
    let th = &s.threads[t as usize];
    let (Some(b_own), Some(x_own)) = (peek_bar(m, s, t, bar), peek_bar(m, s, t, dst)) else {
        return false;
    };
    let (Ok(mask), Ok(n)) = (m.eval(mask, t, &th.locals), m.eval(bytes, t, &th.locals)) else {
        return false;
    };
    let ti = &m.threads[t as usize];
    let k = &m.kernels[ti.kernel as usize];
    let own = m.block_of(t);
    if mask <= 0
        || mask >= (1i64 << k.cluster)
        || !(0..=super::MAX_COUNT).contains(&n)
        || m.bar_block[b_own as usize] != own
        || !local_buf(m, t, x_own)
        || m.buf_block[x_own as usize] == u32::MAX
    {
        return false;
    }
    let bar_o = i64::from(m.program.object(bar.object).count());
    let buf_o = i64::from(m.program.object(dst.object).count());
    (0..k.cluster).filter(|c| mask & (1 << c) != 0).all(|c| {
        let block = k.first_block + c;
        let delta = i64::from(block) - i64::from(own);
        let b = i64::from(b_own) + delta * bar_o;
        let x = i64::from(x_own) + delta * buf_o;
        if b < 0 || x < 0 || b as usize >= s.bars.len() || x as usize >= m.buf_block.len() {
            return false;
        }
        let (b, x) = (b as usize, x as u32);
        let remote = block != own;
        let bs = &s.bars[b];
        bs.valid
            && vis_ok(bs, t, remote)
            && (!remote || f.pinned[block as usize])
            && f.bar[b] & footprint::B_INIT == 0
            && f.buf[x as usize] == 0
            && !in_flight_access(s, x)
    })
}

/// A wait of `t` on `b` that passes now (see [`safe_given`]).
fn wait_alone(m: &PhaseModel, s: &State, t: u32, b: u32, f: &footprint::Frozen) -> bool {
    use footprint::*;
    let bs = &s.bars[b as usize];
    let others = f.bar[b as usize];
    // The wait reads the phase (fixed while the barrier is stuck) and marks the previous phase
    // observed, which an arrive of another thread reads unless that thread's own wait on the
    // (stuck, so unchanged) phase comes first.
    m.bar_block[b as usize] == m.block_of(t)
        && bs.valid
        && vis_ok(bs, t, false)
        && !targeted(s, b)
        && others & B_INIT == 0
        && (f.stuck[b as usize] || others & (B_ARRIVE | B_TX) == 0)
        && (bs.consumed || bs.phase == 0 || others & B_ARRIVE_FIRST == 0)
}

/// An arrive of `t` on `b` (`arrive`, `arrive_expect_tx`, the first half of
/// `arrive_and_wait`; see [`safe_given`]).
fn arrive_alone(m: &PhaseModel, s: &State, t: u32, op: &Op, b: u32, f: &footprint::Frozen) -> bool {
    let th = &s.threads[t as usize];
    let n = match op {
        Op::Arrive { count: Some(c), .. } => match m.eval(c, t, &th.locals) {
            Ok(v) => v,
            Err(_) => return false,
        },
        _ => 1,
    };
    let tx = match op {
        Op::ArriveExpectTx { bytes, .. } => match m.eval(bytes, t, &th.locals) {
            Ok(v) if (0..=super::MAX_COUNT).contains(&v) => Some(v),
            _ => return false,
        },
        _ => None,
    };
    arrive_n_alone(m, s, t, b, n, tx, f)
}

/// An arrival of `n` by `t` on `b` (with transaction bytes when `tx`): see [`arrive_alone`].
fn arrive_n_alone(
    m: &PhaseModel,
    s: &State,
    t: u32,
    b: u32,
    n: i64,
    tx: Option<i64>,
    f: &footprint::Frozen,
) -> bool {
    // An arrive into a peer block also depends on whether that block still runs
    // (remote-cta-exited): alone only while a thread of that block outlives every future the
    // footprints cover (`Frozen::pinned`); then it finds the block running in any order.
    let block = m.bar_block[b as usize];
    let remote = block != m.block_of(t);
    if remote && !f.pinned[block as usize] {
        return false;
    }
    let bs = &s.bars[b as usize];
    // The release of the arrive settles this thread's kept accesses: nobody may still access
    // those buffers (else the race flags would depend on the order).
    let kept_quiet = kept_quiet(m, s, t, f);
    let base = bs.valid
        && vis_ok(bs, t, remote)
        && !targeted(s, b)
        && n >= 1
        && i64::from(bs.pending) >= n
        && kept_quiet;
    if !base {
        return false;
    }
    arrival_commutes(bs, n, tx, f, b)
}

/// An arrival of `n` on `b` (with `tx` transaction bytes for `arrive_expect_tx`) commutes with
/// everything the others can still do to `b` (their footprints `f`).
pub(super) fn arrival_commutes(
    bs: &Bar,
    n: i64,
    tx: Option<i64>,
    f: &footprint::Frozen,
    b: u32,
) -> bool {
    use footprint::*;
    let others = f.bar[b as usize];
    if others == 0 {
        // Nobody else can touch the barrier before this arrival.
        return true;
    }
    let total = i64::from(f.arrivals[b as usize]) + n;
    let pending = i64::from(bs.pending);
    // The others change the transaction count only by TMA copies they issue, which lower it
    // by at most `tx_lower` bytes (no copy is in flight on it: `arrive_n_alone`), and after
    // this `arrive_expect_tx` of `y` bytes it stays above zero whatever they do, and every
    // value it passes through in any order stays in range: then the phase cannot complete
    // before a later step of this thread's (its own copy landing), and the additions
    // commute. (The CUTLASS cluster producer expects both halves of a stage, and the peer's
    // multicast half may land before or after.)
    let lower = f.tx_lower[b as usize];
    let lowered_only = |y: i64| {
        let after = i64::from(bs.tx) + y;
        others & B_TX_UP == 0
            && after - lower > 0
            && after <= super::MAX_COUNT
            && i64::from(bs.tx) - lower >= -super::MAX_COUNT
    };
    // An `arrive_expect_tx` that leaves the transaction count non-zero, on a barrier whose
    // count nobody else may change (and no copy in flight signals: `arrive_n_alone`), cannot
    // complete the phase in any order with the others' arrivals, even the last of them: the
    // count only returns to zero by a later step of this thread's (its own copy landing).
    let tx_holds =
        tx.is_some_and(|y| (i64::from(bs.tx) + y != 0 && others & B_TX == 0) || lowered_only(y));
    let tx_commutes = tx.is_none_or(|y| others & B_TX == 0 || lowered_only(y));
    // No order of this arrive and the others' arrives lands one in the next phase (no
    // over-arrival: every arrive sees the same phase and returns the same token)...
    others & B_INIT == 0
        && total <= pending
        && if total < pending || tx_holds {
            // ...and the phase completes in no order, so nothing the others read changes:
            // the observed flag only if nobody can observe the phase now.
            (bs.consumed || bs.phase == 0 || others & B_WAIT == 0) && tx_commutes
        } else {
            // ...or it completes with the last arrive, whichever that is: then nobody else may
            // wait on it after the completion (which flips the parity their waits read) or
            // change its transaction count (the completing step). A wait that comes before the
            // same thread's own arrive on it precedes the completion, which needs every
            // arrive counted here.
            others & (B_WAIT_LATE | B_TX) == 0
        }
}

/// An arrival of `t` on a named barrier with a thread count: the arrivals on the slot commute
/// when they all name the same count, and either none completes the use in any order, or the
/// use completes exactly with the last of them (every arrival counted is needed): then the
/// same threads are released whichever arrives last, and no arrival can belong to the next
/// use, so nobody's re-arrival check depends on the order.
fn named_alone(
    m: &PhaseModel,
    s: &State,
    t: u32,
    id: &protocols::ir::Expr,
    count: &protocols::ir::Expr,
    f: &footprint::Frozen,
) -> bool {
    let th = &s.threads[t as usize];
    let (Ok(idv), Ok(c)) = (m.eval(id, t, &th.locals), m.eval(count, t, &th.locals)) else {
        return false;
    };
    if !(0..16).contains(&idv) || !(1..=1024).contains(&c) {
        return false;
    }
    let slot = m.block_of(t) * 16 + idv as u32;
    let cur = s.named[slot as usize];
    let present = f.named_present[slot as usize];
    // The same count as the use in progress and as every other arrival; no arrival of this
    // thread pending on it (a re-arrival, whose verdict depends on the completion).
    let same_count = (cur.count == 0 && present == 0 || i64::from(cur.count) == c)
        && f.named_count[slot as usize].is_none_or(|x| x == c);
    let kept_quiet = kept_quiet(m, s, t, f);
    let total = i64::from(present) + 1 + i64::from(f.named_arrivals[slot as usize]);
    same_count && th.named_arrived & (1 << idv) == 0 && kept_quiet && total <= c
}

/// An arrival of `t` on a whole-block use of named barrier `idv` (`syncthreads`, `bar_sync id`
/// without a count), which needs every live thread of the block. It is not the last one (some
/// other live thread of the block has not arrived), so it completes nothing: it only releases
/// the thread's kept accesses (nobody may still touch their buffers) and parks the thread. The
/// others' arrivals on the use commute with it (the last of them completes it, whichever that
/// is: the same threads, at the same statements, are released), and so do their exits (an exit
/// that completes the use after this arrival leaves the state this arrival leaves when it
/// completes the use after the exit). Every arrival on the slot waits (no `bar_arrive` now or
/// in a run: one that arrives again before the use completes is `named-barrier-rearrive`,
/// whether it does depends on when this arrival comes), they cannot exceed the block, nobody
/// names a count on the slot (a use with a count in progress, or arriving, makes the order
/// decide `named-barrier-rearrive`), and the thread has no arrival of its own pending on it.
fn whole_block_alone(m: &PhaseModel, s: &State, t: u32, idv: i64, f: &footprint::Frozen) -> bool {
    if !(0..16).contains(&idv) {
        return false;
    }
    let th = &s.threads[t as usize];
    let block = m.block_of(t);
    let slot = (block * 16 + idv as u32) as usize;
    let live = s
        .threads
        .iter()
        .enumerate()
        .filter(|&(u, x)| x.mode.live() && m.block_of(u as u32) == block)
        .count();
    let present = f.named_present[slot] as usize;
    s.named[slot].count == 0
        && s.named[slot].arrived == 0
        && !f.named_nonblocking[slot]
        && f.named_count[slot].is_none_or(|c| c == 0)
        && th.named_arrived & (1 << idv) == 0
        && present + 1 < live
        && present + 1 + f.named_arrivals[slot] as usize <= live
        && kept_quiet(m, s, t, f)
}

/// Is the landing of in-flight TMA copy `i` (async write of `x`, transaction bytes on `b`)
/// independent of everything the threads and the other events can do before it?
pub(super) fn safe_landing(
    m: &PhaseModel,
    s: &State,
    i: usize,
    x: u32,
    b: u32,
    issuer: u32,
    f: &footprint::Frozen,
) -> bool {
    let bs = &s.bars[b as usize];
    // A copy into a peer block also depends on whether that block still runs: alone only
    // while a thread of that block outlives every future the footprints cover.
    let block = m.bar_block[b as usize];
    if (block != m.block_of(issuer) && !f.pinned[block as usize]) || !bs.valid {
        return false;
    }
    // The buffer: nobody else may touch it, and nothing else in flight does. The threads'
    // kept accesses of it do not stand in the way: the race checks weigh the copy's write,
    // while it is in flight, against every kept access in every state the search visits
    // (`race::check`, from `check_state`), this one included, and the landing itself reads no
    // kept access. While the copy stands still, the others add no kept access of `x` (that
    // takes an access of `x`, a copy into it completing or a bulk read of it: the footprints
    // and the checks here), and what their steps do to one that is kept only orders or fences
    // it further (`seen` grows, the fence mark rises, a prune drops it), so a pair that is
    // clean here stays clean in every state a later landing would have been weighed in, and
    // a pair that is not is reported here. Requiring no kept access (until 2026-11-28) kept
    // every K/V landing of ThunderKittens' attention from being taken alone: the 384
    // consumers keep their WGMMA reads of the stage the copy refills (docs/performance.md,
    // "ThunderKittens at real size").
    let others_on_buf = s
        .events
        .iter()
        .enumerate()
        .any(|(j, e)| j != i && matches!(*e, Event::Tma { buf, .. } if buf == x))
        || s.threads
            .iter()
            .any(|th| th.cp.iter().any(|c| c.buf == x) || th.bulk.iter().any(|c| c.0 == x));
    if others_on_buf || f.buf[x as usize] != 0 {
        return false;
    }
    // The barrier: the other events may only lower its transaction count too (then every
    // order completes the phase at the last landing, if at all); no thread may touch it.
    let other_arrivals = s
        .events
        .iter()
        .enumerate()
        .any(|(j, e)| j != i && matches!(*e, Event::CpArrive { bar, .. } if bar == b));
    f.bar[b as usize] == 0 && !other_arrivals
}

/// The release of an arrive settles what it changes in the thread's kept accesses: nobody
/// else may still touch those buffers in a way that conflicts with them (else the race
/// verdicts would depend on the order). Another thread's part write conflicts with everything
/// but a part write; a kept read conflicts only with writes (the others' reads of it, generic
/// or async, are no conflict, and the proxy-fence check pairs a kept generic access only with
/// async ones, which for a read are writes: TMA landings). A release changes only the
/// thread's own proxy fences (own → released); its publications, its own and those of the
/// accesses of other threads that it happens after, change no verdict until another thread
/// acquires them, which depends on the barrier, not on this step's order. The proxy fence of a
/// kept *async* access (a WGMMA's operand, a bulk store's source) is read nowhere: the proxy
/// check pairs kept generic accesses with async ones (race.rs `fenced_for`), and `prune_kept`
/// owes a fence only for generic ones; so such an access is settled whoever touches its
/// buffer (CUTLASS's epilogue releases with the bulk store's read of the buffer kept while
/// the other warps write their next fragments into it).
fn kept_quiet(m: &PhaseModel, s: &State, t: u32, f: &footprint::Frozen) -> bool {
    let th = &s.threads[t as usize];
    let settled = |a: &Access| {
        if a.kind.is_async() {
            return true;
        }
        let others = f.buf[a.buf as usize];
        if a.fence == FENCE_OWN
            && let Some(side) = bytes::kept_side(m, t, a)
        {
            // A kept access of a byte range: the others' whole accesses as for any kept
            // access, their ranged ones only where the bytes meet.
            use footprint::{X_RANGED_READ, X_RANGED_WRITE, X_WRITES};
            let whole = others & !(X_RANGED_READ | X_RANGED_WRITE);
            let write = a.kind.is_write();
            let flags_ok = match a.kind {
                AccessKind::Read | AccessKind::AsyncRead => whole & X_WRITES == 0,
                _ => whole == 0,
            };
            return flags_ok && ranged_clear(m, f, a.buf, side, write);
        }
        a.fence != FENCE_OWN
            || match a.kind {
                AccessKind::Read | AccessKind::AsyncRead => others & footprint::X_WRITES == 0,
                AccessKind::PartWrite => others & !footprint::X_PART == 0,
                _ => others == 0,
            }
    };
    th.acc.iter().all(settled)
        && th
            .cp
            .iter()
            // The release also carries a proxy fence of the thread to its in-flight copies.
            .all(|c| c.fence != FENCE_OWN || f.buf[c.buf as usize] == 0)
}

/// None of the others' ranged accesses of instance `x` ([`footprint::Frozen::ranged`])
/// conflicts with an access of `side`'s bytes (a write when `write`): each is a read against
/// a read, or its bytes do not meet `side`'s (`bytes::overlap`).
fn ranged_clear(
    m: &PhaseModel,
    f: &footprint::Frozen,
    x: u32,
    side: bytes::Side,
    write: bool,
) -> bool {
    f.ranged_of(x).all(|&(u, _, pc, key, w)| {
        !(write || w)
            || bytes::kept_side_at(m, u, pc, key)
                .is_some_and(|o| !bytes::overlap(m, Some(side), Some(o)))
    })
}
