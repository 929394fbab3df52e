//! Side-effect-free questions about a state: is a thread enabled, what does it wait on, which
//! actions exist, and the state-based wait checks. Used by the explorer, the deadlock
//! explanation and the trace printer.

use super::*;

pub enum TokenWait {
    Pass,
    Block,
    Stale(String),
}

pub fn token_check(tok: i64, bar: u32, phase: u32) -> TokenWait {
    let tb = (tok >> 32) - 1;
    let tp = tok & 0xffff_ffff;
    if tok == 0 {
        return TokenWait::Stale("a token that was never set".into());
    }
    if tb != i64::from(bar) {
        return TokenWait::Stale("a token from another barrier".into());
    }
    let p = i64::from(phase);
    if tp == p {
        TokenWait::Block
    } else if tp == p - 1 {
        TokenWait::Pass
    } else {
        TokenWait::Stale(format!(
            "a token of phase {tp} while the barrier is in phase {p} (two or more phases old)"
        ))
    }
}

/// Operations run eagerly inside the step that reaches them. Named barriers (`bar_sync`,
/// `bar_arrive`) are not: which arrival completes a use, and whether a `bar_arrive` thread
/// (which does not block) arrives again before that (`named-barrier-rearrive`), or a use with
/// another count starts, depends on the order of the arrivals, so each is a step of its own.
/// `syncthreads` is eager: every live thread takes part and each blocks, so no arrival can
/// come from a later use.
pub fn is_eager(op: &Op) -> bool {
    matches!(
        op,
        Op::SyncThreads
            | Op::SyncWarp
            | Op::ClusterSync
            | Op::ClusterArrive
            | Op::Compute
            | Op::FenceMbarrierInit
    )
}

/// Evaluate an object reference without side effects (for enabledness and reports).
pub fn peek_bar(m: &PhaseModel, s: &State, t: u32, r: &ObjRef) -> Option<u32> {
    peek_with(m, t, r, &s.threads[t as usize].locals)
}

/// [`peek_bar`] with the thread's locals given (the footprint simulation runs ahead on a copy).
pub fn peek_with(m: &PhaseModel, t: u32, r: &ObjRef, locals: &[i64]) -> Option<u32> {
    let o = m.program.object(r.object);
    let i = match &r.index {
        None => 0,
        Some(e) => m.eval(e, t, locals).ok()?,
    };
    if i < 0 || i >= i64::from(o.count()) {
        return None;
    }
    let ti = &m.threads[t as usize];
    let k = &m.kernels[ti.kernel as usize];
    let cta = match &r.cta {
        None => i64::from(ti.cta),
        Some(e) => m.eval(e, t, locals).ok()?,
    };
    if cta < 0 || cta >= i64::from(k.cluster) {
        return None;
    }
    let block = k.first_block + cta as u32;
    match m.layouts[r.object.0 as usize] {
        Layout::Bar { base } => Some(base + block * o.count() + i as u32),
        Layout::Buf { base } => Some(if o.kind == ObjectKind::Global {
            base + i as u32
        } else {
            base + block * o.count() + i as u32
        }),
        _ => None,
    }
}

/// The stage barrier a pipeline op of `t` waits on (block pipelines), with its parity.
pub fn pipe_wait(m: &PhaseModel, s: &State, t: u32, op: &Op) -> Option<(u32, i64)> {
    let (pipe, producer) = match op {
        Op::ProducerAcquire { pipe } => (pipe, true),
        Op::ConsumerWait { pipe } | Op::ConsumerWaitPrior { pipe, .. } => (pipe, false),
        _ => return None,
    };
    let th = &s.threads[t as usize];
    let o = m.program.object(pipe.object);
    let (Layout::Pipe { base, bar_base }, ObjectKind::Pipeline(PipelineKind::Block { stages, .. })) =
        (m.layouts[pipe.object.0 as usize], &o.kind)
    else {
        return None;
    };
    let i = match &pipe.index {
        None => 0,
        Some(e) => m.eval(e, t, &th.locals).ok()?,
    };
    if i < 0 || i >= i64::from(o.count()) {
        return None;
    }
    let block = m.block_of(t);
    let inst = base + block * o.count() + i as u32;
    let bars = bar_base + (inst - base) * 2 * stages;
    let ps = th
        .pipes
        .iter()
        .find(|p| p.0 == inst)
        .map(|p| p.1)
        .unwrap_or(PipeThread {
            consumed_parity: 1,
            ..PipeThread::default()
        });
    Some(if producer {
        (bars + ps.head % stages, i64::from(ps.consumed_parity))
    } else {
        (
            bars + stages + ps.tail % stages,
            i64::from(ps.produced_parity),
        )
    })
}

/// The barrier instance thread `t` is blocked on, if it is at a wait.
pub fn waits_on(m: &PhaseModel, s: &State, t: u32) -> Option<u32> {
    let th = &s.threads[t as usize];
    if th.mode != Mode::Ready {
        return None;
    }
    if let Some((b, _)) = th.aw {
        return Some(b);
    }
    match &m.code_of(t).instrs[th.pc as usize] {
        Instr::Op { op, .. } => match op {
            Op::WaitParity { bar, .. } | Op::WaitToken { bar, .. } | Op::ArriveAndWait { bar } => {
                peek_bar(m, s, t, bar)
            }
            Op::ProducerAcquire { .. } | Op::ConsumerWait { .. } | Op::ConsumerWaitPrior { .. } => {
                pipe_wait(m, s, t, op).map(|x| x.0)
            }
            _ => None,
        },
        _ => None,
    }
}

/// Is thread `t` able to take a step?
pub fn enabled(m: &PhaseModel, s: &State, t: u32) -> bool {
    let th = &s.threads[t as usize];
    if th.mode != Mode::Ready {
        return false;
    }
    let instr = &m.code_of(t).instrs[th.pc as usize];
    let Instr::Op { op, .. } = instr else {
        return true;
    };
    // Blocking operations on invalid barriers are enabled: the step reports the UB.
    let bar_ready = |b: Option<u32>, f: &dyn Fn(&Bar) -> bool| match b {
        None => true,
        Some(b) => {
            let bs = &s.bars[b as usize];
            !bs.valid || f(bs)
        }
    };
    // Waits on a peer block's barrier are enabled: the step reports `remote-op`.
    if let Op::WaitParity { bar, .. } | Op::WaitToken { bar, .. } = op
        && let Some(b) = peek_bar(m, s, t, bar)
        && m.bar_block[b as usize] != m.block_of(t)
    {
        return true;
    }
    match op {
        Op::WaitParity { bar, parity, .. } => {
            let b = peek_bar(m, s, t, bar);
            let p = m.eval(parity, t, &th.locals).unwrap_or(0);
            bar_ready(b, &|bs| parity_passes(bs, p))
        }
        Op::WaitToken { bar, token, .. } => {
            let b = peek_bar(m, s, t, bar);
            let tok = th.locals[token.0 as usize];
            match b {
                None => true,
                Some(b) => {
                    let bs = &s.bars[b as usize];
                    !bs.valid || !matches!(token_check(tok, b, bs.phase), TokenWait::Block)
                }
            }
        }
        Op::ArriveAndWait { .. } => match th.aw {
            None => true,
            Some((b, phase)) => {
                let bs = &s.bars[b as usize];
                !bs.valid || bs.phase != phase
            }
        },
        Op::ProducerAcquire { .. } | Op::ConsumerWait { .. } | Op::ConsumerWaitPrior { .. } => {
            match pipe_wait(m, s, t, op) {
                None => true,
                Some((b, p)) => {
                    let bs = &s.bars[b as usize];
                    !bs.valid || parity_passes(bs, p) || th.pipes.iter().any(|x| x.1.quit)
                }
            }
        }
        Op::ClusterWait => {
            let k = m.threads[t as usize].kernel;
            th.cluster_token
                .is_some_and(|p| s.cluster_phase[k as usize] > p)
        }
        Op::LoadAcquire { global, .. } => match peek_bar(m, s, t, global) {
            Some(x) => s.released[x as usize],
            None => true,
        },
        _ => true,
    }
}

/// The part of the shared state that [`enabled`] (and [`check_waits`]) reads for thread `t`,
/// besides `t`'s own state: a walk examines a thread again when its own state or this part
/// changed (`crate::model::walk`). It follows `enabled` case by case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Nothing shared: the thread is not at a blocking statement, or not ready.
    Nothing,
    /// A barrier instance (its validity, phase, pending count).
    Bar(u32),
    /// The cluster barrier's phase of a kernel.
    Cluster(u32),
    /// Whether a global was released (`State::released`).
    Released(u32),
}

/// What [`enabled`] reads of the shared state for thread `t` (see [`Needs`]).
pub fn needs(m: &PhaseModel, s: &State, t: u32) -> Needs {
    let th = &s.threads[t as usize];
    if th.mode != Mode::Ready {
        return Needs::Nothing;
    }
    let Instr::Op { op, .. } = &m.code_of(t).instrs[th.pc as usize] else {
        return Needs::Nothing;
    };
    let bar = |b: Option<u32>| b.map_or(Needs::Nothing, Needs::Bar);
    match op {
        Op::WaitParity { bar: r, .. } | Op::WaitToken { bar: r, .. } => bar(peek_bar(m, s, t, r)),
        Op::ArriveAndWait { .. } => bar(th.aw.map(|(b, _)| b)),
        Op::ProducerAcquire { .. } | Op::ConsumerWait { .. } | Op::ConsumerWaitPrior { .. } => {
            bar(pipe_wait(m, s, t, op).map(|(b, _)| b))
        }
        Op::ClusterWait => Needs::Cluster(m.threads[t as usize].kernel),
        Op::LoadAcquire { global, .. } => {
            peek_bar(m, s, t, global).map_or(Needs::Nothing, Needs::Released)
        }
        _ => Needs::Nothing,
    }
}

/// The enabled actions: thread steps (thread index), then in-flight events (thread count +
/// event index).
///
/// With symmetry, a thread is left out when an earlier thread of its class is in an equal
/// state and neither is named in the shared part (a barrier's initializer, an async event):
/// the state is then unchanged by swapping the two, so the step of the later one leads to the
/// swap's image of the earlier one's successor, which canonicalizes to the same state
/// (docs/design.md, "Symmetry"). With 128 consumers at the same statement this turns 128
/// successors, each cloned and canonicalized before being found a duplicate, into one.
pub fn actions(m: &PhaseModel, s: &State, out: &mut Vec<u32>) {
    // Per class, the enabled threads taken so far (only with symmetry).
    let mut taken: Vec<(u32, u32)> = Vec::new();
    let mut named: Option<Vec<u32>> = None;
    let mut kept_sets: Option<Vec<&ThreadSet>> = None;
    for t in 0..m.nthreads() {
        if !enabled(m, s, t) {
            continue;
        }
        if m.symmetry && m.classes.len() < m.nthreads() as usize {
            let class = m.threads[t as usize].class;
            let twin = taken.iter().any(|&(c, u)| {
                c == class
                    && s.threads[u as usize] == s.threads[t as usize]
                    && {
                        let named = named.get_or_insert_with(|| named_threads(s));
                        named.binary_search(&u).is_err() && named.binary_search(&t).is_err()
                    }
                    && {
                        // Swapping the two must leave the state as it is: every set of threads
                        // ordered after a kept access holds both or neither (one that acquired
                        // a release the other did not is not its twin).
                        let sets = kept_sets.get_or_insert_with(|| distinct_kept_sets(s));
                        sets.iter().all(|x| x.contains(u) == x.contains(t))
                    }
            });
            if twin {
                continue;
            }
            taken.push((class, t));
        }
        out.push(t);
    }
    for i in 0..s.events.len() {
        out.push(m.nthreads() + i as u32);
    }
}

/// The distinct sets of threads ordered after a kept access, over all threads of `s`.
fn distinct_kept_sets(s: &State) -> Vec<&ThreadSet> {
    let mut v: Vec<&ThreadSet> = s
        .threads
        .iter()
        .flat_map(|th| th.acc.iter().flat_map(|a| [&a.seen, &a.fenced_by]))
        .filter(|x| !x.is_empty())
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Threads named in the shared part of `s` (what canonicalization renames), sorted.
fn named_threads(s: &State) -> Vec<u32> {
    let mut v: Vec<u32> = s
        .bars
        .iter()
        .map(|b| b.init_by)
        .filter(|&t| t != u32::MAX)
        .chain(s.events.iter().map(|e| match *e {
            Event::Tma { issuer, .. } => issuer,
            Event::CpArrive { thread, .. } => thread,
        }))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The threads of `s` that stand at a parity wait (not the second half of an
/// `arrive_and_wait`), each with the wait's span, its barrier instance and its parity value.
pub fn parity_waits<'a>(
    m: &'a PhaseModel,
    s: &'a State,
    which: impl Fn(u32) -> bool + 'a,
) -> impl Iterator<Item = (u32, Span, u32, i64)> + 'a {
    (0..m.nthreads())
        .filter(move |&t| which(t))
        .filter_map(move |t| {
            let th = &s.threads[t as usize];
            if th.mode != Mode::Ready {
                return None;
            }
            let Instr::Op {
                op: Op::WaitParity { bar, parity, .. },
                span,
            } = &m.code_of(t).instrs[th.pc as usize]
            else {
                return None;
            };
            let b = peek_bar(m, s, t, bar)?;
            let p = m.eval(parity, t, &th.locals).ok()?;
            Some((t, *span, b, p))
        })
}

/// State-based wait checks: a thread at a parity wait on a barrier whose init it is not
/// ordered after, and a thread blocked at a parity wait two or more phases behind.
///
/// The first is checked in the state, not only at the step that passes the wait, because
/// the wait uses the barrier before it passes: `wait` is a `try_wait` loop, and "performing
/// any mbarrier operation except `mbarrier.init` on an uninitialized mbarrier object results
/// in undefined behavior" ([PTX] 9.1 §9.7.13.15 *mbarrier*, semantics.md §6.4). A wait that
/// never passes (a deadlock) still reads a barrier it may see uninitialized, and so does one
/// reached before its thread is ordered after the init that passes only after a publication
/// (a whole-block use the waiter joined by `bar_arrive` before it): the waiter tries the wait
/// as soon as it stands there. The step that passes a wait checks again (`Exec::check_vis`),
/// at the same statement.
pub fn check_waits(m: &PhaseModel, s: &State, found: &mut Vec<MFinding>) {
    check_waits_of(m, s, |_| true, found);
}

/// [`check_waits`] of the threads that `which` selects (a walk: those whose own state or
/// [`needs`] changed).
pub fn check_waits_of(
    m: &PhaseModel,
    s: &State,
    which: impl Fn(u32) -> bool,
    found: &mut Vec<MFinding>,
) {
    for (t, span, b, p) in parity_waits(m, s, which) {
        let th = &s.threads[t as usize];
        let bs = &s.bars[b as usize];
        if !bs.valid {
            continue;
        }
        // A wait on a peer block's barrier is `remote-op` at its step.
        if m.bar_block[b as usize] == m.block_of(t)
            && let Some(f) = init_not_visible(m, s, t, b, false, span)
        {
            found.push(f);
        }
        let Some(tr) = th.tracks.iter().find(|x| x.bar == b) else {
            continue;
        };
        if tr.last_obs == NONE {
            continue;
        }
        // A re-wait on the phase it just observed (nothing done since) means that phase.
        let target = if tr.fresh && (tr.last_obs & 1) == (p & 1) {
            tr.last_obs
        } else {
            intended_phase(tr.last_obs, p)
        };
        let cur = i64::from(bs.phase);
        if target <= cur - 2 {
            found.push(
                MFinding::new(
                    &rules::wait_phase_behind::RULE,
                    span,
                    format!(
                        "{} waits on `{}` for phase {target} (parity {}) but the barrier is already in phase {cur}: it {}",
                        m.threads[t as usize].name,
                        m.bar_names[b as usize],
                        p & 1,
                        if parity_passes(bs, p) {
                            "passes by luck"
                        } else {
                            "waits for phase {cur} instead (over-wait)"
                        }
                        .replace("{cur}", &cur.to_string())
                    ),
                )
                .help("the barrier advanced twice without this thread: add back-pressure (an empty barrier) or wait every phase"),
            );
        }
    }
}
