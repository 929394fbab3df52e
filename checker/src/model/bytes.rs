//! Byte ranges of accesses (`read X bytes OFF .. +LEN`; language.md, "Byte ranges";
//! design.md, "Races").
//!
//! Two accesses of one buffer instance conflict only when their bytes overlap. A range's
//! offset is usually a part that depends on the thread (`16 * tid`, `4 * (tid - 32)`) plus a
//! part that does not (a stage offset `k % 2 * 256`). The part that depends on the thread is
//! left out of the symmetry signature (`symmetry.rs`), so that the threads of a role that
//! each touch their own bytes stay interchangeable. For that to be sound the race check must
//! not depend on which thread of its *range group* an access came from, and it is made so:
//!
//! - an access keeps its **key**, the offset minus the thread's own part `g(t)` (for an
//!   offset that is not split, `g = 0` and the key is the offset);
//! - the bytes of thread `t` are `key + g(t) .. +LEN`;
//! - two accesses of threads `u` and `v` overlap when **some** threads `t`, `t'` of their range
//!   groups (`t != t'` when `u` and `v` are different threads of one group, `t == t'` when they
//!   are one thread) would touch overlapping bytes with those keys.
//!
//! That relation depends on the groups, the statements and the keys only, so a permutation
//! of the threads of a group (what symmetry does) leaves it unchanged; and it holds whenever
//! the accesses really overlap (take `t = u`, `t' = v`): it never hides a race. It is exact
//! when the threads of a group touch disjoint bytes (the usual case: each lane its fragment)
//! and when a group has one thread. Range groups are the symmetry classes the program would
//! have with symmetry on, whatever `--no-symmetry` says, so that reductions on and off judge
//! the same relation.

use super::PhaseModel;
use super::code::{Instr, uses_local, uses_thread_id};
use protocols::ir::{BinaryOp as BinOp, ByteRange, Expr, ExprKind, Op};

/// The byte range of an operation, if it has one.
pub fn op_range(op: &Op) -> Option<&ByteRange> {
    match op {
        Op::Read { buf } | Op::Write { buf, .. } | Op::Mma { buf } => buf.bytes.as_deref(),
        Op::Tma { dst, .. } => dst.bytes.as_deref(),
        _ => None,
    }
}

/// The terms of `off` that depend on the thread, with their signs, when `off` is a sum of
/// terms each of which depends on the thread and on no local, or on no thread: the thread's
/// own part `g(t)`. `None` when some term depends on both (then the offset stays whole in the
/// symmetry signature, as any expression that mentions `tid`).
pub fn thread_terms(off: &Expr) -> Option<Vec<(i64, &Expr)>> {
    fn walk<'a>(e: &'a Expr, sign: i64, out: &mut Vec<(i64, &'a Expr)>) -> bool {
        match &e.kind {
            ExprKind::Binary(BinOp::Add, a, b) => walk(a, sign, out) && walk(b, sign, out),
            ExprKind::Binary(BinOp::Sub, a, b) => walk(a, sign, out) && walk(b, -sign, out),
            _ if uses_thread_id(e) && uses_local(e) => false,
            _ if uses_thread_id(e) => {
                out.push((sign, e));
                true
            }
            _ => true,
        }
    }
    let mut out = Vec::new();
    walk(off, 1, &mut out).then_some(out)
}

/// One statement with a byte range.
#[derive(Clone, Debug, Default)]
struct RangeStmt {
    /// `g(t)` per thread of the program (0 for threads of other kernels).
    g: Vec<i64>,
    /// Per range group: the `g` of its threads, sorted (empty for groups of other kernels).
    sorted: Vec<Vec<i64>>,
    /// Per range group: do its threads' bytes at one key never overlap (each thread its own
    /// bytes)?
    owned: Vec<bool>,
}

/// What an overlap answer depends on: (kernel, statement, group) of each side, the difference
/// of their keys, their lengths, and whether they are one thread.
type OverlapKey = ((u32, u32, u32), (u32, u32, u32), i128, (i64, i64), bool);

/// The range groups and the thread parts of every ranged statement.
pub struct Ranges {
    /// Per kernel, per instruction: its byte range's thread parts.
    stmts: Vec<Vec<Option<RangeStmt>>>,
    /// Per thread: its range group.
    pub group_of: Vec<u32>,
    /// Answers of [`overlap`] (a race check asks the same few questions in every state).
    memo: crate::memo::Memo<OverlapKey, bool>,
}

impl Default for Ranges {
    fn default() -> Self {
        Ranges {
            stmts: Vec::new(),
            group_of: Vec::new(),
            memo: crate::memo::Memo::new(1 << 16),
        }
    }
}

impl Ranges {
    /// Build the table for `m`, whose range groups are `groups`.
    pub fn new(m: &PhaseModel, groups: &[Vec<u32>]) -> Ranges {
        let n = m.threads.len();
        let mut group_of = vec![0u32; n];
        for (gi, g) in groups.iter().enumerate() {
            for &t in g {
                group_of[t as usize] = gi as u32;
            }
        }
        let mut stmts: Vec<Vec<Option<RangeStmt>>> = m
            .kernels
            .iter()
            .map(|k| vec![None; k.code.instrs.len()])
            .collect();
        for (k, kinfo) in m.kernels.iter().enumerate() {
            for (pc, i) in kinfo.code.instrs.iter().enumerate() {
                let Instr::Op { op, .. } = i else { continue };
                let Some(r) = op_range(op) else { continue };
                let terms = thread_terms(&r.off).unwrap_or_default();
                let mut g = vec![0i64; n];
                for (t, ti) in m.threads.iter().enumerate() {
                    if ti.kernel as usize != k {
                        continue;
                    }
                    let mut v = Some(0i64);
                    for (sign, e) in &terms {
                        v = v.and_then(|acc| {
                            let x = m.eval_static(e, ti.kernel, ti.cta, ti.tid).ok()?;
                            acc.checked_add(x.checked_mul(*sign)?)
                        });
                    }
                    // A part that cannot be computed (an overflow in one thread) makes the
                    // thread's accesses there a `model-error` when it runs; 0 is then never
                    // used for a verdict.
                    g[t] = v.unwrap_or(0);
                }
                let mut sorted: Vec<Vec<i64>> = vec![Vec::new(); groups.len()];
                for (t, ti) in m.threads.iter().enumerate() {
                    if ti.kernel as usize == k {
                        sorted[group_of[t] as usize].push(g[t]);
                    }
                }
                for v in sorted.iter_mut() {
                    v.sort_unstable();
                }
                let owned = sorted
                    .iter()
                    .map(|v| {
                        v.windows(2)
                            .all(|w| i128::from(w[1]) - i128::from(w[0]) >= i128::from(r.len))
                    })
                    .collect();
                stmts[k][pc] = Some(RangeStmt { g, sorted, owned });
            }
        }
        Ranges {
            stmts,
            group_of,
            memo: crate::memo::Memo::new(1 << 16),
        }
    }

    /// The key an access of thread `t` at `pc` with offset `off` keeps: `off - g(t)`.
    pub fn key(&self, kernel: u32, pc: u32, t: u32, off: i64) -> i64 {
        let g = self.stmt(kernel, pc).map_or(0, |s| s.g[t as usize]);
        off.saturating_sub(g)
    }

    fn stmt(&self, kernel: u32, pc: u32) -> Option<&RangeStmt> {
        self.stmts.get(kernel as usize)?.get(pc as usize)?.as_ref()
    }
}

/// One side of an overlap question: the thread, its statement, the key and the length.
#[derive(Clone, Copy, Debug)]
pub struct Side {
    pub thread: u32,
    pub pc: u32,
    pub key: i64,
    pub len: i64,
}

/// Do the bytes of `a` and `b` (accesses of one buffer instance) overlap, for some threads of
/// their range groups (module doc)? `None` is the whole instance.
pub fn overlap(m: &PhaseModel, a: Option<Side>, b: Option<Side>) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return true;
    };
    let r = &m.ranges;
    let ka = m.threads[a.thread as usize].kernel;
    let kb = m.threads[b.thread as usize].kernel;
    let (Some(sa), Some(sb)) = (r.stmt(ka, a.pc), r.stmt(kb, b.pc)) else {
        return true;
    };
    let ga = r.group_of[a.thread as usize];
    let gb = r.group_of[b.thread as usize];
    // The usual question, answered without a search: one statement, one key, two threads of a
    // group whose threads each touch their own bytes.
    if a.thread != b.thread
        && ga == gb
        && ka == kb
        && a.pc == b.pc
        && a.key == b.key
        && sa.owned[ga as usize]
    {
        return false;
    }
    // Hulls apart (every thread's bytes of one side against every thread's of the other): no
    // pair meets, and no search is needed either.
    let (xs, ys) = (&sa.sorted[ga as usize], &sb.sorted[gb as usize]);
    if let (Some(&x0), Some(&x1), Some(&y0), Some(&y1)) =
        (xs.first(), xs.last(), ys.first(), ys.last())
    {
        let d = i128::from(b.key) - i128::from(a.key);
        let (lo, hi) = (d - i128::from(a.len), d + i128::from(b.len));
        if i128::from(x1) - i128::from(y0) <= lo || i128::from(x0) - i128::from(y1) >= hi {
            return false;
        }
    }
    let key: OverlapKey = (
        (ka, a.pc, ga),
        (kb, b.pc, gb),
        i128::from(b.key) - i128::from(a.key),
        (a.len, b.len),
        a.thread == b.thread,
    );
    r.memo.get_or_compute(key, || {
        overlap_in_groups(m, sa, sb, a, b, (ka, ga), (kb, gb))
    })
}

/// [`overlap`], computed.
fn overlap_in_groups(
    m: &PhaseModel,
    sa: &RangeStmt,
    sb: &RangeStmt,
    a: Side,
    b: Side,
    (ka, ga): (u32, u32),
    (kb, gb): (u32, u32),
) -> bool {
    let r = &m.ranges;
    // Bytes [a.key + x, +a.len) and [b.key + y, +b.len) overlap iff
    // a.key + x < b.key + y + b.len and b.key + y < a.key + x + a.len, that is
    // x - y in (d - a.len, d + b.len) with d = b.key - a.key.
    let d = i128::from(b.key) - i128::from(a.key);
    let (lo, hi) = (d - i128::from(a.len), d + i128::from(b.len));
    let hit = |x: i64, y: i64| {
        let diff = i128::from(x) - i128::from(y);
        lo < diff && diff < hi
    };
    if a.thread == b.thread {
        // One thread: its own two accesses, with the part of any thread of its group.
        return r
            .group_members(m, ga)
            .any(|t| hit(sa.g[t as usize], sb.g[t as usize]));
    }
    let same_group = ga == gb && ka == kb;
    let (xs, ys) = (&sa.sorted[ga as usize], &sb.sorted[gb as usize]);
    if xs.is_empty() || ys.is_empty() {
        return true;
    }
    for t in r.group_members(m, ga) {
        let x = sa.g[t as usize];
        // y in (x - hi, x - lo): the threads t' of b's group whose bytes meet t's.
        let from = ys.partition_point(|&y| i128::from(y) <= i128::from(x) - hi);
        let to = ys.partition_point(|&y| i128::from(y) < i128::from(x) - lo);
        let mut n = to.saturating_sub(from);
        // In one group, t itself does not count as the other thread.
        if same_group && n > 0 && hit(x, sb.g[t as usize]) {
            n -= 1;
        }
        if n > 0 {
            return true;
        }
    }
    false
}

impl Ranges {
    fn group_members<'a>(&'a self, m: &'a PhaseModel, g: u32) -> impl Iterator<Item = u32> + 'a {
        m.range_groups[g as usize].iter().copied()
    }
}

/// The statement's byte range at `pc` of thread `t`'s kernel.
fn range_at<'a>(m: &'a PhaseModel, t: u32, pc: u32) -> Option<&'a ByteRange> {
    match m.code_of(t).instrs.get(pc as usize)? {
        Instr::Op { op, .. } => op_range(op),
        _ => None,
    }
}

/// The side of a kept access of thread `t` (`None`: the whole instance).
pub fn kept_side(m: &PhaseModel, t: u32, a: &super::state::Access) -> Option<Side> {
    let key = a.bytes?;
    let r = range_at(m, t, a.pc)?;
    Some(Side {
        thread: t,
        pc: a.pc,
        key,
        len: r.len,
    })
}

/// The side of the access thread `t` is about to make at `pc` with its current `locals`
/// (`None`: the whole instance, also when the offset cannot be computed: the step then
/// reports a `model-error`).
pub fn enabled_side(m: &PhaseModel, t: u32, pc: u32, locals: &[i64]) -> Option<Side> {
    let r = range_at(m, t, pc)?;
    let off = m.eval(&r.off, t, locals).ok().filter(|&o| o >= 0)?;
    let k = m.threads[t as usize].kernel;
    Some(Side {
        thread: t,
        pc,
        key: m.ranges.key(k, pc, t, off),
        len: r.len,
    })
}

/// The side of thread `t`'s access at `pc` with key `key` (a footprint's ranged access).
pub fn kept_side_at(m: &PhaseModel, t: u32, pc: u32, key: i64) -> Option<Side> {
    let r = range_at(m, t, pc)?;
    Some(Side {
        thread: t,
        pc,
        key,
        len: r.len,
    })
}

/// Accesses of one statement with one key by different threads of one range group whose
/// threads each touch their own bytes never overlap: this class (kernel, statement, group,
/// key), compared before anything else in the race check (128 lanes storing their fragments
/// are 8 128 pairs in every state).
pub fn owned_class(m: &PhaseModel, s: Option<Side>) -> Option<(u32, u32, u32, i64)> {
    let s = s?;
    let k = m.threads[s.thread as usize].kernel;
    let g = m.ranges.group_of[s.thread as usize];
    let st = m.ranges.stmt(k, s.pc)?;
    st.owned[g as usize].then_some((k, s.pc, g, s.key))
}
