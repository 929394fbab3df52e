//! Deadlocks: who waits for whom. A state with live threads and no enabled action is a
//! deadlock; its wait-for graph (petgraph) has an edge from every blocked thread to every
//! thread that was expected to release it (by its code: an arrive on that barrier, a
//! rendezvous it has not reached), with where that thread is now.

use super::code::Instr;
use super::exec::{parity_passes, peek_pipe, pipe_wait, quit_checks, waits_on};
use super::state::*;
use super::trace::fold_names;
use super::{MFinding, PhaseModel};
use crate::report::{Party, PartyStatus, WaitFor};
use crate::rules;
use petgraph::graph::{DiGraph, NodeIndex};
use protocols::Span;
use protocols::ir::{ObjectId, Op};
use std::collections::BTreeMap;

/// Does `op` signal object `obj` (arrive-like, bytes, or a pipeline's other side)?
fn signals(op: &Op, obj: ObjectId, producer_side: Option<bool>) -> bool {
    match op {
        Op::Arrive { bar, .. }
        | Op::ArriveDrop { bar, .. }
        | Op::ArriveExpectTx { bar, .. }
        | Op::CompleteTx { bar, .. }
        | Op::ArriveAndWait { bar }
        | Op::CpAsyncArrive { bar, .. }
        | Op::Tma { bar, .. } => bar.object == obj && producer_side.is_none(),
        Op::ProducerCommit { pipe } => pipe.object == obj && producer_side == Some(false),
        Op::ConsumerRelease { pipe } => pipe.object == obj && producer_side == Some(true),
        Op::StoreRelease { global, .. } => global.object == obj && producer_side.is_none(),
        _ => false,
    }
}

fn status(m: &PhaseModel, s: &State, t: u32) -> (PartyStatus, Option<Span>) {
    let th = &s.threads[t as usize];
    let span = Some(m.code_of(t).instrs[th.pc as usize].span());
    let st = match th.mode {
        Mode::Exited => PartyStatus::Exited,
        Mode::Finished => PartyStatus::Finished,
        _ => PartyStatus::Blocked,
    };
    (st, span)
}

/// Threads that could signal `obj` by their code, other than `t`.
fn providers(m: &PhaseModel, t: u32, obj: ObjectId, producer_side: Option<bool>) -> Vec<u32> {
    let k = m.threads[t as usize].kernel;
    let code = &m.kernels[k as usize].code;
    let sites: Vec<usize> = code
        .instrs
        .iter()
        .enumerate()
        .filter(|(_, i)| matches!(i, Instr::Op { op, .. } if signals(op, obj, producer_side)))
        .map(|(p, _)| p)
        .collect();
    (0..m.nthreads())
        .filter(|&u| m.threads[u as usize].kernel == k)
        .filter(|&u| sites.iter().any(|&p| m.may_reach(u, p)))
        .collect()
}

struct Blocked {
    thread: u32,
    span: Span,
    waits_on: String,
    missing: String,
    from: Vec<u32>,
    /// The root cause, when it is plain: a thread that left while a barrier still counts it
    /// (``t5 exited without `arrive_drop` on `empty[1]`, which still counts it``).
    cause: Option<String>,
    /// Threads whose `quit` left the phase this thread waits for short, with the stage barrier.
    quitters: Vec<(u32, u32)>,
}

/// Threads of `t`'s block that quit pipeline `pipe` (as `t` names it) while they still owed
/// the current phase of stage barrier `bar` an arrival: that phase can never complete.
fn quit_short(
    m: &PhaseModel,
    s: &State,
    t: u32,
    pipe: &protocols::ir::ObjRef,
    bar: u32,
) -> Vec<u32> {
    let Some(pr) = peek_pipe(m, t, pipe, &s.threads[t as usize].locals) else {
        return Vec::new();
    };
    let block = m.block_of(t);
    (0..m.nthreads())
        .filter(|&u| m.block_of(u) == block)
        .filter(|&u| {
            s.threads[u as usize].pipes.iter().any(|(id, ps)| {
                *id == pr.id
                    && ps.quit
                    && quit_checks(s, &pr, ps)
                        .into_iter()
                        .any(|(b, owes)| b == bar && owes)
            })
        })
        .collect()
}

/// Providers of mbarrier instance `bar` (object `obj`) that ran `exit` where the code after
/// their `exit` could still arrive on it: the barrier still counts them (an `exit` does not
/// drop the thread from a barrier), so the phase is short. An `exit` right after an
/// `arrive_drop` on the object (same straight-line code) is not one.
fn exited_counted(m: &PhaseModel, s: &State, from: &[u32], obj: ObjectId) -> Vec<u32> {
    from.iter()
        .copied()
        .filter(|&u| {
            let th = &s.threads[u as usize];
            if th.mode != Mode::Exited {
                return false;
            }
            let code = m.code_of(u);
            let dropped = code.instrs[..th.pc as usize]
                .iter()
                .rev()
                .take_while(|i| matches!(i, Instr::Op { .. } | Instr::Set { .. }))
                .any(|i| matches!(i, Instr::Op { op: Op::ArriveDrop { bar, .. }, .. } if bar.object == obj));
            let reach = &m.kernels[m.threads[u as usize].kernel as usize].reach;
            let next = th.pc as usize + 1;
            !dropped
                && next < reach.signals.len()
                && super::code::has(&reach.signals[next], obj.0, true)
        })
        .collect()
}

fn describe(m: &PhaseModel, s: &State, t: u32) -> Blocked {
    let th = &s.threads[t as usize];
    let code = m.code_of(t);
    let span = code.instrs[th.pc as usize].span();
    let block = m.block_of(t);
    let block_threads: Vec<u32> = (0..m.nthreads())
        .filter(|&u| m.block_of(u) == block)
        .collect();
    let mut b = Blocked {
        thread: t,
        span,
        waits_on: String::new(),
        missing: String::new(),
        from: Vec::new(),
        cause: None,
        quitters: Vec::new(),
    };
    match th.mode {
        Mode::Sync(SyncKind::Named { id }) => {
            let named = s.named[block as usize * 16 + id as usize];
            let others: Vec<u32> = block_threads
                .iter()
                .copied()
                .filter(|&u| {
                    let m2 = s.threads[u as usize].mode;
                    m2.live() && m2 != Mode::Sync(SyncKind::Named { id })
                })
                .collect();
            b.waits_on = if id == 0 && named.count == 0 {
                "syncthreads (barrier 0)".into()
            } else {
                format!("named barrier {id}")
            };
            let here = block_threads
                .iter()
                .filter(|&&u| s.threads[u as usize].mode == Mode::Sync(SyncKind::Named { id }))
                .count() as u32
                + u32::from(named.arrived);
            b.missing = if named.count == 0 {
                format!("{} thread(s) have not arrived", others.len())
            } else {
                format!(
                    "{} of {} arrivals missing",
                    u32::from(named.count).saturating_sub(here),
                    named.count
                )
            };
            b.from = others;
        }
        Mode::Sync(SyncKind::Warp) | Mode::Sync(SyncKind::Elect) => {
            let warp = m.threads[t as usize].tid / 32;
            b.waits_on = format!("warp {warp} rendezvous");
            b.from = block_threads
                .iter()
                .copied()
                .filter(|&u| m.threads[u as usize].tid / 32 == warp)
                .filter(|&u| {
                    let md = s.threads[u as usize].mode;
                    md.live()
                        && !matches!(md, Mode::Sync(SyncKind::Warp) | Mode::Sync(SyncKind::Elect))
                })
                .collect();
            b.missing = format!("{} lane(s) have not arrived", b.from.len());
        }
        Mode::Sync(SyncKind::Cluster) | Mode::Ready
            if th.mode == Mode::Sync(SyncKind::Cluster)
                || matches!(
                    &code.instrs[th.pc as usize],
                    Instr::Op {
                        op: Op::ClusterWait,
                        ..
                    }
                ) =>
        {
            let k = m.threads[t as usize].kernel;
            let phase = s.cluster_phase[k as usize];
            b.waits_on = format!("cluster barrier phase {phase}");
            b.from = (0..m.nthreads())
                .filter(|&u| m.threads[u as usize].kernel == k)
                .filter(|&u| {
                    let x = &s.threads[u as usize];
                    x.mode.live() && x.cluster_token != Some(phase)
                })
                .collect();
            b.missing = format!("{} thread(s) of the cluster have not arrived", b.from.len());
        }
        _ => {
            let op = match &code.instrs[th.pc as usize] {
                Instr::Op { op, .. } => Some(op),
                _ => None,
            };
            if let Some(Op::LoadAcquire { global, .. }) = op {
                b.waits_on = format!(
                    "a store_release of `{}`",
                    m.program.object(global.object).name
                );
                b.missing = "the release never happens".into();
                b.from = providers(m, t, global.object, None);
            } else if let Some(bar) = waits_on(m, s, t) {
                let bs = s.bars[bar as usize];
                let parity = match op {
                    Some(Op::WaitParity { parity, .. }) => m
                        .eval(parity, t, &th.locals)
                        .ok()
                        .map(|p| format!(" (parity {})", p & 1)),
                    Some(
                        o @ (Op::ProducerAcquire { .. }
                        | Op::ConsumerWait { .. }
                        | Op::ConsumerWaitPrior { .. }),
                    ) => pipe_wait(m, s, t, o).map(|(_, p)| format!(" (parity {})", p & 1)),
                    _ => None,
                }
                .unwrap_or_default();
                let _ = parity_passes;
                b.waits_on = format!("`{}` phase {}{parity}", m.bar_names[bar as usize], bs.phase);
                let mut miss = Vec::new();
                if bs.pending > 0 {
                    miss.push(format!(
                        "{} arrival{}",
                        bs.pending,
                        if bs.pending == 1 { "" } else { "s" }
                    ));
                }
                if bs.tx > 0 {
                    miss.push(format!("{} bytes", bs.tx));
                }
                if bs.tx < 0 {
                    miss.push(format!("{} bytes over-delivered (tx {})", -bs.tx, bs.tx));
                }
                b.missing = if miss.is_empty() {
                    "nothing: the phase it waits for is not the next one".into()
                } else {
                    format!("{} missing", miss.join(" and "))
                };
                let (obj, side) = match op {
                    Some(Op::ProducerAcquire { pipe }) => (pipe.object, Some(true)),
                    Some(Op::ConsumerWait { pipe } | Op::ConsumerWaitPrior { pipe, .. }) => {
                        (pipe.object, Some(false))
                    }
                    Some(
                        Op::WaitParity { bar, .. }
                        | Op::WaitToken { bar, .. }
                        | Op::ArriveAndWait { bar },
                    ) => (bar.object, None),
                    _ => (ObjectId(u32::MAX), None),
                };
                if obj.0 != u32::MAX {
                    b.from = providers(m, t, obj, side);
                }
                if let Some(
                    Op::ProducerAcquire { pipe }
                    | Op::ConsumerWait { pipe }
                    | Op::ConsumerWaitPrior { pipe, .. },
                ) = op
                    && bs.pending > 0
                {
                    let gone = quit_short(m, s, t, pipe, bar);
                    if !gone.is_empty() {
                        b.cause = Some(format!(
                            "{} quit `{}` while `{}` still counts {} (quit does not arrive_and_drop)",
                            fold_names(m, &gone),
                            m.program.object(pipe.object).name,
                            m.bar_names[bar as usize],
                            if gone.len() == 1 { "it" } else { "them" }
                        ));
                        b.quitters = gone.into_iter().map(|u| (u, bar)).collect();
                    }
                }
                if side.is_none() && obj.0 != u32::MAX && bs.pending > 0 {
                    let gone = exited_counted(m, s, &b.from, obj);
                    if !gone.is_empty() {
                        b.cause = Some(format!(
                            "{} exited without `arrive_drop` on `{}`, which still counts {}",
                            fold_names(m, &gone),
                            m.bar_names[bar as usize],
                            if gone.len() == 1 { "it" } else { "them" }
                        ));
                    }
                }
            } else {
                b.waits_on = "an operation that cannot proceed".into();
                b.missing = "-".into();
            }
        }
    }
    b
}

/// The threads `from` that `threads` wait for (not themselves, unless that is all there is),
/// grouped by status and place.
fn group_parties(
    m: &PhaseModel,
    s: &State,
    threads: &[u32],
    from: &[u32],
) -> BTreeMap<(u8, Option<Span>), (PartyStatus, Vec<u32>)> {
    let mut parties: BTreeMap<(u8, Option<Span>), (PartyStatus, Vec<u32>)> = BTreeMap::new();
    for u in from
        .iter()
        .copied()
        .filter(|u| !threads.contains(u) || from.len() == 1)
    {
        let (st, sp) = status(m, s, u);
        let key = (st as u8, sp);
        parties.entry(key).or_insert((st, Vec::new())).1.push(u);
    }
    parties
}

fn folded_parties(
    m: &PhaseModel,
    s: &State,
    parties: BTreeMap<(u8, Option<Span>), (PartyStatus, Vec<u32>)>,
) -> Vec<Party> {
    parties
        .into_values()
        .map(|(st, us)| Party {
            thread: fold_names(m, &us),
            status: st,
            span: status(m, s, us[0]).1,
        })
        .collect()
}

/// The parties of a wait on mbarrier object `obj` by `threads` (blocked in `s`), less the
/// threads in `arrived` (they already arrived in the phase waited for): the threads whose
/// arrivals are missing. For the root-cause pass, which knows the arrivals of each phase.
pub(crate) fn missing_parties(
    m: &PhaseModel,
    s: &State,
    threads: &[u32],
    obj: ObjectId,
    arrived: &[u32],
) -> Vec<Party> {
    let mut from: Vec<u32> = Vec::new();
    for &t in threads {
        for u in providers(m, t, obj, None) {
            if u != t && !from.contains(&u) && !arrived.contains(&u) {
                from.push(u);
            }
        }
    }
    folded_parties(m, s, group_parties(m, s, threads, &from))
}

/// Report the deadlock of a state with live threads and no enabled action.
pub fn deadlock(m: &PhaseModel, s: &State, found: &mut Vec<MFinding>) {
    let blocked: Vec<Blocked> = (0..m.nthreads())
        .filter(|&t| s.threads[t as usize].mode.live())
        .map(|t| describe(m, s, t))
        .collect();
    if blocked.is_empty() {
        return;
    }
    // The wait-for graph.
    let mut g: DiGraph<u32, ()> = DiGraph::new();
    let mut nodes: BTreeMap<u32, NodeIndex> = BTreeMap::new();
    let mut node =
        |g: &mut DiGraph<u32, ()>, t: u32| *nodes.entry(t).or_insert_with(|| g.add_node(t));
    for b in &blocked {
        let a = node(&mut g, b.thread);
        for &u in &b.from {
            if u != b.thread {
                let c = node(&mut g, u);
                g.update_edge(a, c, ());
            }
        }
    }
    let cyclic = petgraph::algo::is_cyclic_directed(&g);
    // Fold threads blocked at the same statement on the same thing.
    #[allow(clippy::type_complexity)]
    let mut groups: BTreeMap<(Span, String, String), (Vec<u32>, Vec<u32>, Option<String>)> =
        BTreeMap::new();
    for b in &blocked {
        let e = groups
            .entry((b.span, b.waits_on.clone(), b.missing.clone()))
            .or_default();
        e.0.push(b.thread);
        for &u in &b.from {
            if !e.1.contains(&u) && u != b.thread {
                e.1.push(u);
            }
        }
        if e.2.is_none() {
            e.2.clone_from(&b.cause);
        }
    }
    let mut waits_for = Vec::new();
    let mut causes = Vec::new();
    for ((span, on, missing), (threads, from, cause)) in groups {
        causes.push(cause);
        let parties = group_parties(m, s, &threads, &from);
        let blocked_threads = threads
            .iter()
            .map(|&t| (m.threads[t as usize].cta, m.threads[t as usize].tid))
            .collect();
        waits_for.push(WaitFor {
            blocked: blocked_threads,
            thread: fold_names(m, &threads),
            span,
            waits_on: on,
            missing,
            expected_from: folded_parties(m, s, parties),
        });
    }
    // The headline: the root cause first where it is plain (a thread that left while a barrier
    // still counts it), else who waits on what.
    let cause = causes.iter().position(|c| c.is_some());
    if let Some(i) = cause {
        let w = waits_for.remove(i);
        waits_for.insert(0, w);
        let c = causes.remove(i);
        causes.insert(0, c);
    }
    let first = &waits_for[0];
    let plural = first.thread.contains("..") || first.thread.contains(',');
    let message = match &causes[0] {
        Some(cause) => format!(
            "{cause}: {} wait{} on {} forever ({})",
            first.thread,
            if plural { "" } else { "s" },
            first.waits_on,
            first.missing,
        ),
        None => format!(
            "{} can never finish: {} wait{} on {} ({}){}",
            if blocked.len() == 1 {
                "a thread".to_string()
            } else {
                format!("{} threads", blocked.len())
            },
            first.thread,
            if plural { "" } else { "s" },
            first.waits_on,
            first.missing,
            if cyclic {
                "; the threads wait for each other in a cycle"
            } else {
                ""
            }
        ),
    };
    let mut f = MFinding::new(&rules::deadlock::RULE, first.span, message);
    for w in waits_for.iter().skip(1) {
        f = f.label(w.span, format!("{} blocked on {}", w.thread, w.waits_on));
    }
    f.waits_for = waits_for;
    found.push(f);

    // A quit that left a phase short which some thread waits for: `after-quit` at the quit.
    let mut short: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
    for b in &blocked {
        for &(u, bar) in &b.quitters {
            short.entry((u, bar)).or_default().push(b.thread);
        }
    }
    for ((u, bar), waiters) in short {
        let ps = s.threads[u as usize]
            .pipes
            .iter()
            .find(|p| p.1.quit)
            .map(|p| p.1)
            .unwrap_or_default();
        let quit_span = m.code_of(u).instrs[ps.quit_pc as usize].span();
        let bs = s.bars[bar as usize];
        let consumed_side = bar_is_consumed(m, bar);
        found.push(
            MFinding::new(
                &rules::after_quit::RULE,
                quit_span,
                format!(
                    "{} quits while `{}` phase {} still counts its `{}` ({} of {} arrivals in): quit does not arrive_and_drop, so that phase can never complete, and {} {} for it",
                    m.threads[u as usize].name,
                    m.bar_names[bar as usize],
                    bs.phase,
                    if consumed_side { "consumer_release" } else { "producer_commit" },
                    bs.expected - bs.pending,
                    bs.expected,
                    fold_names(m, &waiters),
                    if waiters.len() == 1 { "waits" } else { "wait" }
                ),
            )
            .label(
                m.code_of(waiters[0]).instrs[s.threads[waiters[0] as usize].pc as usize].span(),
                "waits here forever",
            )
            .help("quit only once no later phase counts this thread, or keep arriving until then"),
        );
    }

    // A syncthreads reached by some live threads while others are stuck elsewhere.
    for blk in 0..m.nblocks {
        let ts: Vec<u32> = (0..m.nthreads())
            .filter(|&u| m.block_of(u) == blk)
            .collect();
        let at_sync: Vec<u32> = ts
            .iter()
            .copied()
            .filter(|&u| s.threads[u as usize].mode == Mode::Sync(SyncKind::Named { id: 0 }))
            .collect();
        let elsewhere: Vec<u32> = ts
            .iter()
            .copied()
            .filter(|&u| {
                let md = s.threads[u as usize].mode;
                md.live() && md != Mode::Sync(SyncKind::Named { id: 0 })
            })
            .collect();
        if at_sync.is_empty() || elsewhere.is_empty() || s.named[blk as usize * 16].count != 0 {
            continue;
        }
        let code = m.code_of(at_sync[0]);
        let sync_span = code.instrs[s.threads[at_sync[0] as usize].pc as usize].span();
        let other_span =
            m.code_of(elsewhere[0]).instrs[s.threads[elsewhere[0] as usize].pc as usize].span();
        found.push(
            MFinding::new(
                &rules::barrier_divergence::RULE,
                sync_span,
                format!(
                    "syncthreads is reached by {} but not by {}, which {} blocked elsewhere",
                    fold_names(m, &at_sync),
                    fold_names(m, &elsewhere),
                    if elsewhere.len() == 1 { "is" } else { "are" }
                ),
            )
            .label(other_span, "blocked here instead"),
        );
    }
}

/// The wait-for graph of a deadlock finding as Graphviz.
pub fn wait_for_dot(waits_for: &[WaitFor]) -> String {
    let mut g: DiGraph<String, String> = DiGraph::new();
    let mut nodes: BTreeMap<String, NodeIndex> = BTreeMap::new();
    let mut node = |g: &mut DiGraph<String, String>, name: &str, label: String| {
        *nodes
            .entry(name.to_string())
            .or_insert_with(|| g.add_node(label))
    };
    for w in waits_for {
        let a = node(&mut g, &w.thread, format!("{} (blocked)", w.thread));
        for p in &w.expected_from {
            let st = match p.status {
                PartyStatus::Blocked => "blocked",
                PartyStatus::Exited => "exited",
                PartyStatus::Finished => "finished",
                PartyStatus::Running => "running",
            };
            let b = node(&mut g, &p.thread, format!("{} ({st})", p.thread));
            g.add_edge(a, b, format!("{}: {}", w.waits_on, w.missing));
        }
    }
    format!("{}", petgraph::dot::Dot::new(&g))
}

/// Is stage barrier `bar` one of a block pipeline's `consumed` barriers (released by the
/// consumers, acquired by the producers)? Else it is a `produced` one. Per pipeline instance
/// the layout holds `stages` consumed barriers, then `stages` produced ones.
fn bar_is_consumed(m: &PhaseModel, bar: u32) -> bool {
    for (oi, l) in m.layouts.iter().enumerate() {
        if let super::Layout::Pipe { bar_base, .. } = *l
            && let protocols::ir::ObjectKind::Pipeline(protocols::ir::PipelineKind::Block {
                stages,
                ..
            }) = m.program.objects[oi].kind
        {
            let n = m.program.objects[oi].count() * m.nblocks;
            if bar >= bar_base && bar < bar_base + n * 2 * stages {
                return (bar - bar_base) % (2 * stages) < stages;
            }
        }
    }
    false
}
