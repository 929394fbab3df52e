//! Thread symmetry: threads whose behaviour cannot depend on their identity are
//! interchangeable, and states that differ only by a permutation of them are one state.
//!
//! Two threads of one kernel and block are interchangeable when every expression of the
//! kernel that mentions `tid`, `lane` or `warp` evaluates the same for both, and no such
//! expression also mentions a local (then its value could differ per thread at run time).
//! Kernels with `syncwarp` or `elect` get symmetry within each warp only (a permutation of
//! lanes inside a warp keeps warp membership). An `elect` does not tell lanes apart: the model
//! lets each live lane of the warp lead (a step of each candidate) and keeps the one chosen in
//! the lane's own state (`Thread::leads`), which a permutation moves with the lane, so the
//! permuted state's elections are the permuted elections. A thread's warp gaps (named-barrier statements that some lanes of
//! its warp never run with it: `ThreadInfo::warp_gaps`) are part of its signature, since that
//! step's verdict depends on them. The canonical state sorts each class's thread states and renames
//! thread ids in the shared part (initializer of a barrier, async events).
//!
//! **Prologues.** A kernel whose first statements tell threads apart only until a
//! `syncthreads` that nothing after it can go back before (the Programming Guide's
//! `if (rank < 4) init(bar + rank, ...)`; [`Prologue`]) has two symmetries: while some of
//! its threads may still run the prologue, the classes above; once every thread of the kernel
//! is past it (at or after the `syncthreads`, or exited), the *late* classes, whose signature
//! leaves out the prologue's expressions. Each late class is a union of classes. In such a
//! state every thread's future runs only code after the cut, where the threads of a late
//! class evaluate every identity-dependent expression alike, so a permutation of a late class
//! maps the state's whole future onto the permuted state's (what the threads did in the
//! prologue stays in their states and moves with them; the barrier's initializer is renamed).
//! Being past the prologue is a property of the state that a permutation keeps and that no
//! step undoes, so canonicalizing by the late classes there and by the classes elsewhere
//! still maps each state to one representative of its orbit under a symmetry of the
//! transition system. Byte-range groups (`bytes.rs`) are the late classes: a coarser group
//! only makes the overlap relation coarser (never hides a race), and every permutation that
//! canonicalization applies keeps it.

use super::code::{Code, Instr, instr_exprs, successors, uses_local, uses_thread_id};
use super::state::*;
use super::{PhaseModel, bytes};
use protocols::ir::Op;
use std::collections::BTreeMap;

/// A kernel's prologue: the statements before a `syncthreads` (the *cut*) that no statement
/// at or after the cut can reach again. `after[pc]`: `pc` is reachable from the cut.
#[derive(Clone, Debug)]
pub struct Prologue {
    pub after: Vec<bool>,
}

impl Prologue {
    /// The first `syncthreads` of `code` that cuts it in two: nothing reachable from it is
    /// reachable from the start without passing it. `None` when there is no such statement,
    /// or nothing precedes it.
    pub fn of(code: &Code) -> Option<Prologue> {
        let n = code.instrs.len();
        let closure = |from: usize, stop: Option<usize>| {
            let mut seen = vec![false; n];
            let mut todo = vec![from];
            while let Some(pc) = todo.pop() {
                if pc >= n || seen[pc] {
                    continue;
                }
                seen[pc] = true;
                if Some(pc) == stop {
                    continue;
                }
                todo.extend(successors(&code.instrs[pc], pc));
            }
            seen
        };
        for (cut, i) in code.instrs.iter().enumerate() {
            if cut == 0
                || !matches!(
                    i,
                    Instr::Op {
                        op: Op::SyncThreads,
                        ..
                    }
                )
            {
                continue;
            }
            let before = closure(0, Some(cut));
            let after = closure(cut, None);
            if (0..n).any(|pc| pc != cut && before[pc] && after[pc]) {
                continue;
            }
            return Some(Prologue { after });
        }
        None
    }
}

/// The symmetry classes of `m` (with `--no-symmetry`, one per thread), recorded in each
/// thread's `class`; also the late classes (`late_class`, `m.late_classes`).
pub fn classes(m: &mut PhaseModel) -> Vec<Vec<u32>> {
    let classes = signature_classes(m, m.symmetry, false);
    for (ci, c) in classes.iter().enumerate() {
        for &t in c {
            m.threads[t as usize].class = ci as u32;
        }
    }
    let late = if m.symmetry {
        signature_classes(m, true, true)
    } else {
        Vec::new()
    };
    for (ci, c) in late.iter().enumerate() {
        for &t in c {
            m.threads[t as usize].late_class = ci as u32;
        }
    }
    m.late_classes = late;
    classes
}

/// The range groups of `m` (`bytes.rs`): its late symmetry classes with symmetry on,
/// whatever `--no-symmetry` says.
pub fn range_groups(m: &PhaseModel) -> Vec<Vec<u32>> {
    signature_classes(m, true, true)
}

/// Threads with equal signatures, when `symmetric`; else one class per thread. With `late`,
/// the signature leaves out the expressions of each kernel's prologue.
fn signature_classes(m: &PhaseModel, symmetric: bool, late: bool) -> Vec<Vec<u32>> {
    let mut sym_kernel = Vec::new();
    let mut exprs_of = Vec::new();
    // Kernels with `syncwarp` or `elect`: lanes are interchangeable only within their warp (a
    // permutation inside a warp keeps every warp's membership, so `syncwarp` and `elect` still
    // wait for the same lanes, and an `elect` still chooses among them); the warp is part of
    // the signature.
    let mut per_warp = Vec::new();
    for (ki, k) in m.kernels.iter().enumerate() {
        let mut ok = symmetric;
        let mut warp_bound = false;
        let mut exprs = Vec::new();
        let after = match m.prologues.get(ki) {
            Some(Some(p)) if late => Some(&p.after),
            _ => None,
        };
        for (pc, i) in k.code.instrs.iter().enumerate() {
            match i {
                // An `elect` waits for its warp like a `syncwarp`, and the lane it picks is
                // part of the state (`Thread::leads`, chosen by a step of each candidate), so
                // a permutation of lanes inside a warp maps the choices onto each other.
                Instr::Elect { .. }
                | Instr::Op {
                    op: Op::SyncWarp, ..
                } => warp_bound = true,
                _ => {}
            }
            // The prologue's expressions tell threads apart only until every thread is past it.
            if after.is_some_and(|a| !a[pc]) {
                continue;
            }
            // A byte range's offset whose thread part is a term of its own (`k * 256 + 16 *
            // tid`) is left out: the race check judges it by range group (`bytes.rs`).
            let split_off = match i {
                Instr::Op { op, .. } => bytes::op_range(op)
                    .filter(|r| bytes::thread_terms(&r.off).is_some())
                    .map(|r| &r.off),
                _ => None,
            };
            for e in instr_exprs(i) {
                if split_off.is_some_and(|o| std::ptr::eq(o, e)) {
                    continue;
                }
                if uses_thread_id(e) {
                    if uses_local(e) {
                        ok = false;
                    }
                    exprs.push(e.clone());
                }
            }
        }
        sym_kernel.push(ok);
        per_warp.push(warp_bound);
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
            let warp = if per_warp[k] { ti.tid / 32 + 1 } else { 0 };
            (ti.kernel, ti.cta, vals, warp)
        } else {
            (ti.kernel, ti.cta, Vec::new(), u32::MAX - t)
        };
        by_sig.entry(sig).or_default().push(t);
    }
    let mut classes: Vec<Vec<u32>> = by_sig.into_values().collect();
    classes.sort();
    classes
}

/// Put `s` in canonical form; returns `perm` with `perm[new] = old`.
pub fn canonicalize(m: &PhaseModel, s: &mut State) -> Vec<u32> {
    let n = s.threads.len();
    let mut perm: Vec<u32> = (0..n as u32).collect();
    let mut moved = false;
    let past = past_prologue(m, s);
    let late = m
        .late_classes
        .iter()
        .filter(|c| past[m.threads[c[0] as usize].kernel as usize]);
    let early = m
        .classes
        .iter()
        .filter(|c| !past[m.threads[c[0] as usize].kernel as usize]);
    // How many barriers each thread initialized (`Bar::init_by`, renamed below): a tie-break
    // that does not depend on names, so that threads whose own states tie but of which one
    // initialized a barrier sort the same way however they were numbered (a trace maps the
    // search's actions onto real threads by canonicalizing the real states,
    // `checker::real_action`; with the tie left in place the initializer kept its number in
    // one and not in the other: an `elect` after an `init` named the wrong lane).
    let mut inits: Vec<(u32, u32)> = Vec::new();
    for b in &s.bars {
        if b.init_by != u32::MAX {
            match inits.iter_mut().find(|e| e.0 == b.init_by) {
                Some(e) => e.1 += 1,
                None => inits.push((b.init_by, 1)),
            }
        }
    }
    let inits_of = |t: u32| inits.iter().find(|e| e.0 == t).map_or(0, |e| e.1);
    for class in late.chain(early) {
        if class.len() < 2 {
            continue;
        }
        let mut order: Vec<u32> = class.clone();
        order.sort_by(|&a, &b| {
            let (ta, tb) = (&s.threads[a as usize], &s.threads[b as usize]);
            // Furthest along first: the reductions step the first thread of a group of equal
            // ones, which then still sorts first, so nobody moves (sorting the other way round
            // rotated the whole group at every step, and renamed every set naming it).
            // A shared thread state equals itself without comparing fields.
            let same = Shared::ptr_eq(ta, tb);
            let by_state = if same {
                std::cmp::Ordering::Equal
            } else {
                cmp_up_to_names(tb, ta)
            };
            by_state
                .then_with(|| inits_of(b).cmp(&inits_of(a)))
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
    // Kept accesses name the threads ordered after them. A permutation usually moves a few
    // threads of one class, and most sets hold all of them or none: those sets stay as they
    // are, and so does the thread, which keeps sharing its state with the parent (copying
    // every thread with a kept access made a 384-thread kernel spend most of its time here).
    let moved = ThreadSet::moved_by(&inv);
    // Many accesses share one set (every thread that passed the same barrier): rename each
    // distinct set once.
    let mut renamed: BTreeMap<ThreadSet, Option<ThreadSet>> = BTreeMap::new();
    let mut rename = |set: &ThreadSet| -> Option<ThreadSet> {
        if !set.intersects(&moved) {
            return None;
        }
        if let Some(known) = renamed.get(set) {
            return known.clone();
        }
        let new = set.renamed_within(&moved, &inv);
        renamed.insert(set.clone(), new.clone());
        new
    };
    for th in s.threads.iter_mut() {
        if th
            .acc
            .iter()
            .all(|a| rename(&a.seen).is_none() && rename(&a.fenced_by).is_none())
        {
            continue;
        }
        let th = Shared::make_mut(th);
        for a in th.acc.iter_mut() {
            if let Some(seen) = rename(&a.seen) {
                a.seen = seen;
            }
            if let Some(fenced_by) = rename(&a.fenced_by) {
                a.fenced_by = fenced_by;
            }
        }
        th.acc.sort();
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

/// Per kernel: it has a prologue whose statements tell threads apart (its late classes
/// differ from its classes), and every thread of it is past the prologue (at or after the cut,
/// or exited, or finished). Then its late classes are a symmetry of the state (module doc).
fn past_prologue(m: &PhaseModel, s: &State) -> Vec<bool> {
    let mut past: Vec<bool> = m
        .prologues
        .iter()
        .map(|p| p.is_some() && m.symmetry)
        .collect();
    if !past.iter().any(|&p| p) || m.late_classes.len() == m.classes.len() {
        return vec![false; m.kernels.len()];
    }
    for (t, th) in s.threads.iter().enumerate() {
        let k = m.threads[t].kernel as usize;
        if !past[k] || !th.mode.live() {
            continue;
        }
        if let Some(p) = &m.prologues[k]
            && !p.after.get(th.pc as usize).copied().unwrap_or(false)
        {
            past[k] = false;
        }
    }
    past
}

/// The order of threads in a class: by everything in their states except the thread names in
/// them (the sets of threads ordered after a kept access count only by size), with ties left in
/// place. Sorting by names too would make the order depend on the very names the sort hands
/// out: renaming after the sort would reorder the class again at the next step, so nearly every
/// thread moved at every step and states that differ only in names were not recognised as one.
/// Leaving ties in place makes canonical form a fixed point (a second pass moves nothing); it
/// may keep two states apart that a full graph canonization would merge, which costs states,
/// never soundness.
fn cmp_up_to_names(a: &Thread, b: &Thread) -> std::cmp::Ordering {
    #[allow(clippy::type_complexity)]
    fn key(
        t: &Thread,
    ) -> (
        (u32, Mode, &[i64], &[BarTrack], &[CpWrite]),
        (u32, u32, &[(u32, u32, u32)], u32),
        (
            &[(u32, PipeThread)],
            u16,
            Option<u32>,
            Option<(u32, u32)>,
            bool,
        ),
    ) {
        // Every field is named so that a new one is a compile error here, not a silent miss.
        let Thread {
            pc,
            mode,
            locals,
            tracks,
            acc: _,
            cp,
            cp_seq,
            cp_committed,
            bulk,
            bulk_committed,
            pipes,
            named_arrived,
            cluster_token,
            aw,
            leads,
        } = t;
        (
            (*pc, *mode, locals, tracks, cp),
            (*cp_seq, *cp_committed, bulk, *bulk_committed),
            (pipes, *named_arrived, *cluster_token, *aw, *leads),
        )
    }
    key(a).cmp(&key(b)).then_with(|| {
        a.acc
            .iter()
            .map(Access::name_free)
            .cmp(b.acc.iter().map(Access::name_free))
    })
}

/// Threads `a` and `b` of `s` are in one late symmetry class and their states are equal up
/// to the thread names in them (as the canonical order compares them). A hint for the
/// partial-order reduction only (which candidates it tries), never a symmetry claim.
pub fn same_up_to_names(m: &PhaseModel, s: &State, a: u32, b: u32) -> bool {
    let (ta, tb) = (&s.threads[a as usize], &s.threads[b as usize]);
    m.symmetry
        && m.threads[a as usize].late_class == m.threads[b as usize].late_class
        && (Shared::ptr_eq(ta, tb) || cmp_up_to_names(ta, tb).is_eq())
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
            key,
        } => Event::Tma {
            buf,
            bar,
            bytes,
            issuer: inv[issuer as usize],
            pc,
            key,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::exec;

    /// Three threads that run the same code: one symmetry class, all at the `read`.
    fn model_source() -> protocols::ir::Program {
        let f = protocols::SourceFile::new("t.phase", "protocol p\nblock 3\nbuffer x\nread x\n");
        protocols::load(&f, &[]).unwrap_or_else(|_| panic!("loads"))
    }

    fn kept_write(x: u32, seen: &[u32]) -> Access {
        let mut set = ThreadSet::default();
        for &t in seen {
            set.insert(t);
        }
        Access {
            buf: x,
            kind: AccessKind::Write,
            fence: FENCE_NONE,
            strong: LVL_NONE,
            pc: 0,
            bytes: None,
            seen: set,
            fenced_by: ThreadSet::default(),
            pubs: Vec::new(),
        }
    }

    #[test]
    fn canonical_form_renames_kept_sets_and_is_a_fixed_point() {
        let p = model_source();
        let m = PhaseModel::new(&p, 8, true);
        assert_eq!(m.classes, vec![vec![0, 1, 2]]);
        let (mut s, ..) = m.initial();
        // Thread 2 keeps a write that thread 0 is ordered after: it sorts first (furthest
        // along), so 2 -> 0, 0 -> 1, 1 -> 2, and the set {0} becomes {1}.
        Shared::make_mut(&mut s.threads[2])
            .acc
            .push(kept_write(0, &[0]));
        let perm = canonicalize(&m, &mut s);
        assert_eq!(perm, vec![2, 0, 1]);
        assert_eq!(s.threads[0].acc, vec![kept_write(0, &[1])]);
        assert!(s.threads[1].acc.is_empty() && s.threads[2].acc.is_empty());
        // Sorting again moves nobody: the order does not depend on the names it hands out.
        let again = s.clone();
        assert_eq!(canonicalize(&m, &mut s), vec![0, 1, 2]);
        assert_eq!(s, again);
    }

    #[test]
    fn equal_threads_apart_in_a_kept_set_are_not_twins() {
        let p = model_source();
        let m = PhaseModel::new(&p, 8, true);
        let (mut s, ..) = m.initial();
        let mut actions = Vec::new();
        exec::actions(&m, &s, &mut actions);
        // Three equal threads: one stands for all.
        assert_eq!(actions, vec![0]);
        // Thread 0 keeps a write that thread 1 is ordered after and thread 2 is not: threads 1
        // and 2 have equal states, but swapping them changes the state (thread 1's read is
        // ordered after the write, thread 2's races with it), so both are stepped.
        Shared::make_mut(&mut s.threads[0])
            .acc
            .push(kept_write(0, &[1]));
        actions.clear();
        exec::actions(&m, &s, &mut actions);
        assert_eq!(actions, vec![0, 1, 2]);
    }
}
