//! Which inlined call an instruction belongs to, when its `.loc` does not say.
//!
//! A `.loc` names its position, its function and the position it is inlined at; the stack of
//! that call site comes from the `.loc` before it that was at that position. nvcc writes the
//! chain of call sites once per call, before the call's first instruction, and later `.loc`s
//! name only the innermost call site. When one helper is called on two neighbouring lines and
//! both calls inline the same inner helper (ThunderKittens' `tma::expect_bytes` for K on one
//! line and for V on the next, both calling the arrive), the unrolled copies of the loop say
//! `inlined_at` the inner call's position, which both calls share: the text does not tell
//! which call the instruction is in. The last one written is not an answer (it put K's
//! `expect_bytes` at V's line). The executor's events are: the instruction of K's call
//! arrives on K's barrier, as the instructions whose `.loc` named K's whole chain do.

use crate::events::{Ev, Trace};
use crate::exec::Placed;
use crate::parse::{Function, Module, NO_CANDIDATES};
use std::collections::{BTreeSet, HashMap};

/// What an event does, for matching: its kind and the shared symbol it acts on.
type Signature = (&'static str, Option<usize>);

fn signature(ev: &Ev, shared: &[Placed]) -> Signature {
    let kind = match ev {
        Ev::Init { .. } => "init",
        Ev::Inval { .. } => "inval",
        Ev::Arrive { .. } => "arrive",
        Ev::ExpectTx { .. } => "expect_tx",
        Ev::CompleteTx { .. } => "complete_tx",
        Ev::WaitParity { .. } | Ev::WaitToken { .. } | Ev::Poll { .. } => "wait",
        Ev::Copy { .. } => "copy",
        Ev::TmaStore { .. } => "tma_store",
        Ev::CpAsync { .. } => "cp_async",
        Ev::CpAsyncArrive { .. } => "cp_async_arrive",
        Ev::Read(_) => "read",
        Ev::Write(..) => "write",
        Ev::Mma(_) => "mma",
        _ => "other",
    };
    let at = match ev {
        Ev::Read(r) | Ev::Write(r, _) | Ev::Mma(r) | Ev::CpAsync { dst: r } => Some(r.at),
        Ev::Copy { dst, .. } => Some(*dst),
        Ev::TmaStore { src, .. } => Some(*src),
        _ => ev.barriers().first().copied(),
    };
    let sym = at.and_then(|a| {
        shared
            .iter()
            .enumerate()
            .filter(|(_, p)| p.base <= a.off && a.off < p.base + p.size.max(1))
            .max_by_key(|(_, p)| p.base)
            .map(|(i, _)| i)
    });
    (kind, sym)
}

/// `func` with every instruction of an ambiguous `.loc` placed in the one call whose
/// unambiguous instructions at the same position did what it does (the same kind of event
/// on the same shared symbol). Returns the PTX lines left ambiguous (no call, or several,
/// match), with the CUDA lines they may be at, for a note.
pub fn resolve(
    module: &Module,
    func: &Function,
    traces: &[Trace],
    shared: &[Placed],
) -> (Function, Vec<(u32, Vec<u32>)>) {
    let mut sigs: HashMap<u32, BTreeSet<Signature>> = HashMap::new();
    for t in traces {
        for e in &t.events {
            sigs.entry(e.instr)
                .or_default()
                .insert(signature(&e.ev, shared));
        }
    }
    // What the instructions whose stack is known did, per stack.
    let mut by_stack: HashMap<u32, BTreeSet<Signature>> = HashMap::new();
    for (i, ins) in func.instrs.iter().enumerate() {
        if let (Some(s), Some(g)) = (&ins.src, sigs.get(&(i as u32)))
            && s.candidates == NO_CANDIDATES
        {
            by_stack
                .entry(s.stack)
                .or_default()
                .extend(g.iter().copied());
        }
    }
    let mut out = func.clone();
    let mut left = Vec::new();
    for (i, ins) in out.instrs.iter_mut().enumerate() {
        let Some(s) = ins.src else { continue };
        if s.candidates == NO_CANDIDATES {
            continue;
        }
        let Some(g) = sigs.get(&(i as u32)) else {
            continue; // no event: nothing is reported at it
        };
        let cands = &module.candidates[s.candidates as usize];
        let fits: Vec<u32> = cands
            .iter()
            .copied()
            .filter(|c| by_stack.get(c).is_some_and(|k| g.is_subset(k)))
            .collect();
        if let [one] = fits.as_slice() {
            ins.src = Some(module.loc_of_stack(*one, NO_CANDIDATES));
        } else {
            let mut lines: Vec<u32> = cands
                .iter()
                .map(|&c| module.loc_of_stack(c, NO_CANDIDATES).user().line)
                .collect();
            lines.sort_unstable();
            lines.dedup();
            if lines.len() > 1 {
                left.push((ins.line, lines));
            }
        }
    }
    (out, left)
}
