//! Thread symmetry: threads whose behaviour cannot depend on their identity are
//! interchangeable, and states that differ only by a permutation of them are one state.
//!
//! Two threads of one kernel and block are interchangeable when every expression of the
//! kernel that mentions `tid`, `lane` or `warp` evaluates the same for both, and no such
//! expression also mentions a local (then its value could differ per thread at run time).
//! Kernels with `syncwarp` or `elect` (warp membership and the elected lane depend on
//! identity) get no symmetry. A thread's warp gaps (named-barrier statements that some lanes of
//! its warp never run with it: `ThreadInfo::warp_gaps`) are part of its signature, since that
//! step's verdict depends on them. The canonical state sorts each class's thread states and renames
//! thread ids in the shared part (initializer of a barrier, async events).

use super::PhaseModel;
use super::code::{Instr, instr_exprs, uses_local, uses_thread_id};
use super::state::*;
use protocols::ir::Op;
use std::collections::BTreeMap;

pub fn classes(m: &mut PhaseModel) -> Vec<Vec<u32>> {
    let mut sym_kernel = Vec::new();
    let mut exprs_of = Vec::new();
    for k in &m.kernels {
        let mut ok = m.symmetry;
        let mut exprs = Vec::new();
        for i in &k.code.instrs {
            if matches!(
                i,
                Instr::Elect { .. }
                    | Instr::Op {
                        op: Op::SyncWarp,
                        ..
                    }
            ) {
                ok = false;
            }
            for e in instr_exprs(i) {
                if uses_thread_id(e) {
                    if uses_local(e) {
                        ok = false;
                    }
                    exprs.push(e.clone());
                }
            }
        }
        sym_kernel.push(ok);
        exprs_of.push(exprs);
    }
    #[allow(clippy::type_complexity)]
    let mut by_sig: BTreeMap<(u32, u32, Vec<Option<i64>>, u32), Vec<u32>> = BTreeMap::new();
    for t in 0..m.threads.len() as u32 {
        let ti = &m.threads[t as usize];
        let k = ti.kernel as usize;
        let sig = if sym_kernel[k] {
            let mut vals: Vec<Option<i64>> = exprs_of[k]
                .iter()
                .map(|e| m.eval_static(e, ti.kernel, ti.cta, ti.tid).ok())
                .collect();
            vals.extend(ti.warp_gaps.iter().map(|g| Some(-1 - i64::from(g.0))));
            (ti.kernel, ti.cta, vals, 0)
        } else {
            (ti.kernel, ti.cta, Vec::new(), t + 1)
        };
        by_sig.entry(sig).or_default().push(t);
    }
    let mut classes: Vec<Vec<u32>> = by_sig.into_values().collect();
    classes.sort();
    for (ci, c) in classes.iter().enumerate() {
        for &t in c {
            m.threads[t as usize].class = ci as u32;
        }
    }
    classes
}

/// Put `s` in canonical form; returns `perm` with `perm[new] = old`.
pub fn canonicalize(m: &PhaseModel, s: &mut State) -> Vec<u32> {
    let n = s.threads.len();
    let mut perm: Vec<u32> = (0..n as u32).collect();
    let mut moved = false;
    for class in &m.classes {
        if class.len() < 2 {
            continue;
        }
        let mut order: Vec<u32> = class.clone();
        order.sort_by(|&a, &b| {
            // `Shared`'s `Ord` answers Equal for a shared thread without comparing fields.
            s.threads[a as usize]
                .cmp(&s.threads[b as usize])
                .then(a.cmp(&b))
        });
        if order != *class {
            moved = true;
            for (slot, &old) in class.iter().zip(order.iter()) {
                perm[*slot as usize] = old;
            }
        }
    }
    if !moved {
        return perm;
    }
    let mut inv = vec![0u32; n];
    for (new, &old) in perm.iter().enumerate() {
        inv[old as usize] = new as u32;
    }
    let old_threads = std::mem::take(&mut s.threads);
    let mut slots: Vec<Option<Shared<Thread>>> = old_threads.into_iter().map(Some).collect();
    s.threads = perm
        .iter()
        .map(|&old| slots[old as usize].take().expect("a permutation"))
        .collect();
    for b in s.bars.iter_mut() {
        if b.init_by != u32::MAX {
            b.init_by = inv[b.init_by as usize];
        }
    }
    // Kept accesses name the threads ordered after them.
    for th in s.threads.iter_mut() {
        if th.acc.iter().any(|a| !a.seen.is_empty()) {
            let th = Shared::make_mut(th);
            for a in th.acc.iter_mut() {
                a.seen = a.seen.renamed(&inv);
            }
            th.acc.sort();
        }
    }
    for e in s.events.iter_mut() {
        match e {
            Event::Tma { issuer, .. } => *issuer = inv[*issuer as usize],
            Event::CpArrive { thread, .. } => *thread = inv[*thread as usize],
        }
    }
    s.events.sort_unstable();
    perm
}

/// An event with its thread ids renamed by `inv` (`inv[old] = new`).
pub fn rename_event(e: Event, inv: &[u32]) -> Event {
    match e {
        Event::Tma {
            buf,
            bar,
            bytes,
            issuer,
            pc,
        } => Event::Tma {
            buf,
            bar,
            bytes,
            issuer: inv[issuer as usize],
            pc,
        },
        Event::CpArrive {
            thread,
            bar,
            upto,
            pc,
        } => Event::CpArrive {
            thread: inv[thread as usize],
            bar,
            upto,
            pc,
        },
    }
}
