//! Rendering of counterexample steps: who moved, which statement (with its operands
//! evaluated), and the state of the barrier it touched; folding of runs of identical steps.

use super::PhaseModel;
use super::code::Instr;
use super::exec::{peek_bar, pipe_wait};
use super::state::*;
use crate::report::{Actor, TraceStep};
use protocols::ir::{ObjRef, Op};

/// A thread's name with, when its role index is not its `tid`, where it is in the block:
/// `sync[127] (tid 128: warp 4 lane 0)` (no comma: a comma makes a name a list of several
/// threads in the messages). A role's index counts its own threads, so in a kernel's
/// 512-thread block the index alone does not say which thread it is.
pub fn thread_label(m: &PhaseModel, t: u32) -> String {
    let th = &m.threads[t as usize];
    if th.role.is_some() && th.role_index != th.tid {
        format!(
            "{} (tid {}: warp {} lane {})",
            th.name,
            th.tid,
            th.tid / 32,
            th.tid % 32
        )
    } else {
        th.name.clone()
    }
}

/// ` (tid 128..255)` / ` (tid 4..380 by 4)` for a run of a role's threads whose indices are
/// not their tids; ` (tids 4, 9, ...)` when their tids have no one stride.
fn tid_span(m: &PhaseModel, run: &[u32]) -> String {
    let tids: Vec<u32> = run.iter().map(|&t| m.threads[t as usize].tid).collect();
    let first = &m.threads[run[0] as usize];
    if first.role_index == first.tid || tids.len() < 2 {
        return String::new();
    }
    let step = tids[1].wrapping_sub(tids[0]);
    if tids.windows(2).all(|w| w[1].wrapping_sub(w[0]) == step) {
        let last = tids[tids.len() - 1];
        return if step == 1 {
            format!(" (tid {}..{last})", tids[0])
        } else {
            format!(" (tid {}..{last} by {step})", tids[0])
        };
    }
    let shown: Vec<String> = tids.iter().take(4).map(u32::to_string).collect();
    format!(
        " (tids {}{})",
        shown.join(", "),
        if tids.len() > 4 { ", ..." } else { "" }
    )
}

/// Names of a set of threads, folded: `consumer[0..127]`, `t1..t31`, or a list; a role's
/// threads with their tids when the role index is not the tid (`thread_label`).
pub fn fold_names(m: &PhaseModel, ids: &[u32]) -> String {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() == 1 {
        return thread_label(m, ids[0]);
    }
    // Group by (prefix, role); fold contiguous indices.
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let a = &m.threads[ids[i] as usize];
        let mut j = i;
        while j + 1 < ids.len() {
            let b = &m.threads[ids[j + 1] as usize];
            let c = &m.threads[ids[j] as usize];
            let contiguous = b.kernel == a.kernel
                && b.cta == a.cta
                && b.role == a.role
                && if a.role.is_some() {
                    b.role_index == c.role_index + 1
                } else {
                    b.tid == c.tid + 1
                };
            if !contiguous {
                break;
            }
            j += 1;
        }
        let last = &m.threads[ids[j] as usize];
        if i == j {
            parts.push(thread_label(m, ids[i]));
        } else if let Some(r) = a.role {
            let prefix = a
                .name
                .rsplit_once(&format!("{}[", m.program.role(r).name))
                .map(|x| x.0)
                .unwrap_or("");
            parts.push(format!(
                "{prefix}{}[{}..{}]{}",
                m.program.role(r).name,
                a.role_index,
                last.role_index,
                tid_span(m, &ids[i..=j])
            ));
        } else {
            let prefix = a.name.strip_suffix(&format!("t{}", a.tid)).unwrap_or("");
            parts.push(format!("{prefix}t{}..t{}", a.tid, last.tid));
        }
        i = j + 1;
    }
    parts.join(", ")
}

fn objref(m: &PhaseModel, s: &State, t: u32, r: &ObjRef) -> String {
    let o = m.program.object(r.object);
    let th = &s.threads[t as usize];
    let mut out = o.name.clone();
    if let Some(i) = &r.index {
        match m.eval(i, t, &th.locals) {
            Ok(v) => out.push_str(&format!("[{v}]")),
            Err(_) => out.push_str("[?]"),
        }
    }
    if let Some(c) = &r.cta {
        match m.eval(c, t, &th.locals) {
            Ok(v) => out.push_str(&format!(" @ {v}")),
            Err(_) => out.push_str(" @ ?"),
        }
    }
    out
}

pub fn bar_state(m: &PhaseModel, s: &State, b: u32) -> String {
    bar_text(m, b, &s.bars[b as usize])
}

/// [`bar_state`] of barrier instance `b` in state `bs`.
pub fn bar_text(m: &PhaseModel, b: u32, bs: &Bar) -> String {
    if !bs.valid {
        return format!("{}: not initialized", m.bar_names[b as usize]);
    }
    format!(
        "{}: phase {}, pending {}, tx {}",
        m.bar_names[b as usize], bs.phase, bs.pending, bs.tx
    )
}

/// What an action is about to do, described on the state before it: (actor, name, span, op
/// text, touched barrier).
pub fn describe(
    m: &PhaseModel,
    s: &State,
    action: u32,
) -> (Actor, String, protocols::Span, String, Option<u32>) {
    let n = m.nthreads();
    if action >= n {
        let ev = s.events[(action - n) as usize];
        return match ev {
            Event::Tma {
                buf,
                bar,
                bytes,
                issuer,
                pc,
                ..
            } => {
                let ti = &m.threads[issuer as usize];
                (
                    Actor::Async {
                        kernel: ti.kernel,
                        cta: ti.cta,
                        tid: ti.tid,
                        what: "tma".into(),
                    },
                    format!("tma({})", ti.name),
                    m.code_of(issuer).instrs[pc as usize].span(),
                    format!(
                        "lands {bytes} bytes in {} and completes tx on {}",
                        m.buf_names[buf as usize], m.bar_names[bar as usize]
                    ),
                    Some(bar),
                )
            }
            Event::CpArrive {
                thread, bar, pc, ..
            } => {
                let ti = &m.threads[thread as usize];
                (
                    Actor::Async {
                        kernel: ti.kernel,
                        cta: ti.cta,
                        tid: ti.tid,
                        what: "cp.async arrive-on".into(),
                    },
                    format!("cp.async({})", ti.name),
                    m.code_of(thread).instrs[pc as usize].span(),
                    format!("copies done, arrive-on {}", m.bar_names[bar as usize]),
                    Some(bar),
                )
            }
        };
    }
    let ti = &m.threads[action as usize];
    let th = &s.threads[action as usize];
    let actor = Actor::Thread {
        kernel: ti.kernel,
        cta: ti.cta,
        tid: ti.tid,
    };
    let instr = &m.code_of(action).instrs[th.pc as usize];
    let span = instr.span();
    let (text, bar) = match instr {
        Instr::Exit { .. } => ("exit".to_string(), None),
        Instr::End { .. } => ("finish".to_string(), None),
        // A candidate's step (exec `try_warp`): the ISA does not say which lane leads.
        Instr::Elect { .. } => (
            "is elected by `elect` (any live lane of the warp may be)".to_string(),
            None,
        ),
        Instr::Op { op, .. } => {
            let ev = |e: &protocols::ir::Expr| {
                m.eval(e, action, &th.locals)
                    .map(|v| v.to_string())
                    .unwrap_or_else(|_| "?".into())
            };
            let kw = op.keyword();
            match op {
                Op::Init { bar, count } => (
                    format!("init {}, {}", objref(m, s, action, bar), ev(count)),
                    peek_bar(m, s, action, bar),
                ),
                Op::Arrive { bar, count, .. } => (
                    match count {
                        Some(c) => format!("arrive {}, {}", objref(m, s, action, bar), ev(c)),
                        None => format!("arrive {}", objref(m, s, action, bar)),
                    },
                    peek_bar(m, s, action, bar),
                ),
                Op::ArriveExpectTx { bar, bytes, .. }
                | Op::ExpectTx { bar, bytes }
                | Op::CompleteTx { bar, bytes } => (
                    format!("{kw} {}, {}", objref(m, s, action, bar), ev(bytes)),
                    peek_bar(m, s, action, bar),
                ),
                Op::WaitParity { bar, parity, .. } => (
                    format!("wait {} parity {}", objref(m, s, action, bar), ev(parity)),
                    peek_bar(m, s, action, bar),
                ),
                Op::TestWait { bar, parity, .. } => (
                    format!(
                        "test_wait {} parity {}",
                        objref(m, s, action, bar),
                        ev(parity)
                    ),
                    peek_bar(m, s, action, bar),
                ),
                Op::Inval { bar }
                | Op::ArriveDrop { bar, .. }
                | Op::WaitToken { bar, .. }
                | Op::ArriveAndWait { bar }
                | Op::CpAsyncArrive { bar, .. } => (
                    format!("{kw} {}", objref(m, s, action, bar)),
                    peek_bar(m, s, action, bar),
                ),
                Op::Read { buf }
                | Op::Write { buf, .. }
                | Op::Mma { buf }
                | Op::TmaStore { src: buf }
                | Op::CpAsync { dst: buf } => (format!("{kw} {}", objref(m, s, action, buf)), None),
                Op::Store { global }
                | Op::Load { global }
                | Op::StoreRelease { global, .. }
                | Op::LoadAcquire { global, .. } => {
                    (format!("{kw} {}", objref(m, s, action, global)), None)
                }
                Op::Tma {
                    dst,
                    bar,
                    bytes,
                    multicast,
                } => (
                    format!(
                        "tma {} -> {}, {}{}",
                        objref(m, s, action, dst),
                        objref(m, s, action, bar),
                        ev(bytes),
                        multicast
                            .as_ref()
                            .map(|e| format!(" multicast {}", ev(e)))
                            .unwrap_or_default()
                    ),
                    peek_bar(m, s, action, bar),
                ),
                Op::ProducerAcquire { pipe }
                | Op::ConsumerWait { pipe }
                | Op::ConsumerWaitPrior { pipe, .. } => (
                    format!("{kw} {}", objref(m, s, action, pipe)),
                    pipe_wait(m, s, action, op).map(|x| x.0),
                ),
                Op::ProducerCommit { pipe } | Op::ConsumerRelease { pipe } | Op::Quit { pipe } => {
                    (format!("{kw} {}", objref(m, s, action, pipe)), None)
                }
                Op::MemcpyAsync { dst, pipe } => (
                    format!(
                        "memcpy_async {} -> {}",
                        objref(m, s, action, dst),
                        objref(m, s, action, pipe)
                    ),
                    None,
                ),
                Op::WaitGroup { n } | Op::BulkWaitRead { n } => (format!("{kw} {}", ev(n)), None),
                _ => (kw.to_string(), None),
            }
        }
        _ => ("?".to_string(), None),
    };
    (actor, ti.name.clone(), span, text, bar)
}

/// Fold runs of consecutive steps by threads of one role at one statement with the same text.
pub fn fold(m: &PhaseModel, steps: Vec<(TraceStep, Option<u32>)>) -> Vec<TraceStep> {
    let mut out: Vec<(TraceStep, Vec<u32>)> = Vec::new();
    for (step, thread) in steps {
        if let (Some(t), Some((last, ids))) = (thread, out.last_mut()) {
            let role = m.threads[t as usize].role;
            let same = ids.first().is_some_and(|&u| {
                m.threads[u as usize].role == role
                    && m.threads[u as usize].kernel == m.threads[t as usize].kernel
            }) && last.span == step.span
                && last.op == step.op
                && !ids.contains(&t);
            if same {
                ids.push(t);
                last.repeat += 1;
                last.state = step.state;
                continue;
            }
        }
        out.push((step, thread.into_iter().collect()));
    }
    // A folded step names its threads once, when it is complete (naming it again at each
    // thread that joined was quadratic in a wave: 256 consumers at one statement).
    out.into_iter()
        .map(|(mut step, ids)| {
            if ids.len() > 1 {
                step.thread = fold_names(m, &ids);
            }
            step
        })
        .collect()
}
