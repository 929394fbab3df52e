//! Roles merged across a warp: lanes (and whole warps) that meet at one warp-collective statement
//! or one aligned `bar.sync` instruction become one role there.

use super::*;

/// A warp-collective statement: a named barrier (`.aligned`: every lane of a warp runs the same
/// one) or `syncwarp`.
pub(super) fn is_warp_collective(l: &Line) -> bool {
    matches!(l.pieces.first(), Some(LPiece::T(t))
        if t.starts_with("bar_sync") || t.starts_with("bar_arrive") || t == "syncwarp")
}

/// A `bar_sync` statement of an aligned barrier (not `unaligned`, PTX `barrier.sync`).
pub(super) fn is_aligned_bar_sync(l: &Line) -> bool {
    let text = |t: &LPiece| match t {
        LPiece::T(t) => t.contains("unaligned"),
        LPiece::E(_) => false,
    };
    matches!(l.pieces.first(), Some(LPiece::T(t)) if t.starts_with("bar_sync"))
        && !l.pieces.iter().any(text)
}

/// `members` are whole warps: with each thread, every lane of its warp (of the block's
/// `nthreads`) is there.
pub(super) fn whole_warps(members: &[(u32, u32)], nthreads: u32) -> bool {
    let set: BTreeSet<(u32, u32)> = members.iter().copied().collect();
    members.iter().all(|&(r, t)| {
        let w = t / 32;
        (w * 32..((w + 1) * 32).min(nthreads)).all(|l| set.contains(&(r, l)))
    })
}

/// Two lines of different roles are one statement of a merged role: the same text (operands
/// as the same functions of `tid`) from the same PTX instructions.
pub(super) fn same_line(a: &Line, b: &Line) -> bool {
    a.pieces == b.pieces && a.instrs == b.instrs && a.key == b.key
}

/// Two aligned `bar_sync` lines of one PTX instruction whose operands differ only as functions
/// of `tid` (`a` run by `am`, `b` by `bm`): the one line both sets run, each integer fitted
/// anew over every member of both and checked against every member's value, or `None`. An
/// aligned barrier instruction is one statement for every lane of a warp on the hardware, and
/// two groups may print it differently: CUTLASS's Cooperative 2x1 GEMM gave two threads of
/// CTA 1 (tid 168 and 296, whose per-thread epilogue stores happen to fit one function of `tid`)
/// a group of their own, whose `bar_sync 16 - (tid / 128), 128` at PTX 1898 is the `bar_sync 15`
/// and `bar_sync 14` of their warps: as separate statements, lanes of one warp were at
/// "different" barriers (a false `barrier-divergence`). Each member keeps its own values, so the
/// merged statement does exactly what the two did; lines whose values differ inside one warp
/// are not joined.
pub(super) fn joined_bar_sync(
    a: &Line,
    am: &BTreeSet<(u32, u32)>,
    b: &Line,
    bm: &BTreeSet<(u32, u32)>,
) -> Option<Line> {
    if a.instrs != b.instrs
        || a.key != b.key
        || a.pieces.len() != b.pieces.len()
        || !is_aligned_bar_sync(a)
        || !is_aligned_bar_sync(b)
    {
        return None;
    }
    let mut pieces = Vec::with_capacity(a.pieces.len());
    for (pa, pb) in a.pieces.iter().zip(&b.pieces) {
        match (pa, pb) {
            (LPiece::T(x), LPiece::T(y)) if x == y => pieces.push(pa.clone()),
            (LPiece::E(fa), LPiece::E(fb)) => {
                // One value per tid (members of several blocks with one tid must agree: a fit
                // is a function of `tid` alone), and one per warp: every lane of a warp at one
                // aligned barrier instruction names one barrier, so a value that differs inside
                // a warp stays two statements, which the checker reports (`barrier-divergence`).
                let mut at: BTreeMap<i64, i64> = BTreeMap::new();
                let mut by_warp: BTreeMap<(u32, u32), i64> = BTreeMap::new();
                for (f, members) in [(fa, am), (fb, bm)] {
                    for &(r, t) in members {
                        let v = f.eval(t as i64)?;
                        if *at.entry(t as i64).or_insert(v) != v
                            || *by_warp.entry((r, t / 32)).or_insert(v) != v
                        {
                            return None;
                        }
                    }
                }
                let points: Vec<(i64, i64)> = at.into_iter().collect();
                let f = fit(&points, false)?;
                if points.iter().any(|&(x, v)| f.eval(x) != Some(v)) {
                    return None;
                }
                pieces.push(LPiece::E(f));
            }
            _ => return None,
        }
    }
    Some(Line {
        pieces,
        ..a.clone()
    })
}

/// The roles of one segment whose threads share a warp (or wait at one aligned named-barrier
/// instruction), when they run a warp collective: one
/// role whose lines are a common supersequence of theirs (a longest common subsequence, line
/// by line), each line guarded by the members that run it. Every thread still runs exactly its
/// own statements in its own order; what changes is that a collective the lanes of a warp
/// reach at the same PTX instruction is one statement, as it is on the hardware (Triton's
/// elected thread and its warp at one `bar.sync 0, 128`). Lanes that reach *different*
/// instructions keep different (guarded) statements, and the checker reports them. Roles with
/// tokens, roles that exit at different points and roles too long to compare
/// (`MAX_MERGE_CELLS`) are left as they are. Runs before loops are
/// re-rolled (a loop's lines keep their guards).
pub(super) fn merge_warp_roles(groups: Vec<Group>) -> Vec<Group> {
    let n = groups.len();
    let warps_of = |g: &Group| -> BTreeSet<(u32, u32)> {
        g.members.iter().map(|&(r, t)| (r, t / 32)).collect()
    };
    let warps: Vec<BTreeSet<(u32, u32)>> = groups.iter().map(warps_of).collect();
    // The aligned named barriers each group runs, by PTX instruction: groups of different
    // warps that wait at one `bar.sync ID, N` instruction (CUTLASS's consumer warp group, whose
    // first warp issues the epilogue's TMA store and the other three do not) reach it at one
    // statement on the hardware, and `.aligned` asks for exactly that; as two roles they were
    // two statements and a false `barrier-divergence`.
    let bars_of = |g: &Group| -> BTreeSet<u32> {
        g.lines
            .iter()
            .filter(|l| is_aligned_bar_sync(l))
            .flat_map(|l| l.instrs.iter().copied())
            .collect()
    };
    let bars: Vec<BTreeSet<u32>> = groups.iter().map(bars_of).collect();
    // Components of groups that share a warp or an aligned named barrier instruction.
    let mut comp: Vec<usize> = (0..n).collect();
    fn root(c: &mut [usize], i: usize) -> usize {
        let mut i = i;
        while c[i] != i {
            c[i] = c[c[i]];
            i = c[i];
        }
        i
    }
    for i in 0..n {
        for j in i + 1..n {
            if !warps[i].is_disjoint(&warps[j]) || !bars[i].is_disjoint(&bars[j]) {
                let (a, b) = (root(&mut comp, i), root(&mut comp, j));
                comp[b] = a;
            }
        }
    }
    let mut by_comp: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..n {
        let r = root(&mut comp, i);
        by_comp.entry(r).or_default().push(i);
    }
    let mut merged: Vec<Option<Group>> = Vec::new();
    let mut slots: Vec<Option<Group>> = groups.into_iter().map(Some).collect();
    for (_, idx) in by_comp {
        let gs: Vec<&Group> = idx
            .iter()
            .map(|&i| slots[i].as_ref().expect("once"))
            .collect();
        match (idx.len() > 1).then(|| merge_group_lines(&gs)).flatten() {
            Some(g) => {
                for &i in &idx {
                    slots[i] = None;
                }
                merged.push(Some(g));
            }
            None => {
                for &i in &idx {
                    merged.push(slots[i].take());
                }
            }
        }
    }
    let mut out: Vec<Group> = merged.into_iter().flatten().collect();
    out.sort_by_key(|g| g.members[0]);
    out
}

/// The largest table `merge_group_lines` builds (lines of one role times lines of the other):
/// beyond it the roles stay apart (16 MB).
const MAX_MERGE_CELLS: usize = 4 << 20;

pub(super) fn merge_group_lines(gs: &[&Group]) -> Option<Group> {
    let exit_here = gs[0].exit_here;
    let plain = gs.iter().all(|g| {
        g.exit_here == exit_here
            && g.lines
                .iter()
                .all(|l| !l.token_def && l.token_use.is_none())
    });
    let collective = gs.iter().any(|g| g.lines.iter().any(is_warp_collective));
    if !plain || !collective {
        return None;
    }
    // Start from the role with the most lines, then fold the others in.
    let mut order: Vec<&Group> = gs.to_vec();
    order.sort_by_key(|g| (std::cmp::Reverse(g.lines.len()), g.members[0]));
    let mut acc: Vec<(Line, BTreeSet<(u32, u32)>)> = order[0]
        .lines
        .iter()
        .map(|l| (l.clone(), order[0].members.iter().copied().collect()))
        .collect();
    for g in &order[1..] {
        let (a, b) = (&acc, &g.lines);
        let (na, nb) = (a.len(), b.len());
        if na.saturating_mul(nb) > MAX_MERGE_CELLS {
            return None;
        }
        let mine: BTreeSet<(u32, u32)> = g.members.iter().copied().collect();
        // Lines that are one statement: the same text, or one aligned barrier instruction
        // whose operands refit over both sides (`joined_bar_sync`).
        let joined = |i: usize, j: usize| -> Option<Line> {
            if same_line(&a[i].0, &b[j]) {
                Some(a[i].0.clone())
            } else {
                joined_bar_sync(&a[i].0, &a[i].1, &b[j], &mine)
            }
        };
        let matches = |i: usize, j: usize| {
            same_line(&a[i].0, &b[j])
                || (is_aligned_bar_sync(&a[i].0)
                    && is_aligned_bar_sync(&b[j])
                    && joined(i, j).is_some())
        };
        // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
        let mut lcs = vec![vec![0u32; nb + 1]; na + 1];
        for i in (0..na).rev() {
            for j in (0..nb).rev() {
                lcs[i][j] = if matches(i, j) {
                    lcs[i + 1][j + 1] + 1
                } else {
                    lcs[i + 1][j].max(lcs[i][j + 1])
                };
            }
        }
        let mut next = Vec::with_capacity(na + nb);
        let (mut i, mut j) = (0, 0);
        while i < na || j < nb {
            if i < na && j < nb && matches(i, j) && lcs[i][j] == lcs[i + 1][j + 1] + 1 {
                let mut set = a[i].1.clone();
                set.extend(mine.iter().copied());
                let line = joined(i, j).expect("matched lines join");
                next.push((line, set));
                i += 1;
                j += 1;
            } else if j >= nb || (i < na && lcs[i + 1][j] >= lcs[i][j + 1]) {
                next.push(a[i].clone());
                i += 1;
            } else {
                next.push((b[j].clone(), mine.clone()));
                j += 1;
            }
        }
        acc = next;
    }
    let mut members: Vec<(u32, u32)> = gs.iter().flat_map(|g| g.members.iter().copied()).collect();
    members.sort_unstable();
    let all: BTreeSet<(u32, u32)> = members.iter().copied().collect();
    let lines = acc
        .into_iter()
        .map(|(mut l, set)| {
            l.guard = (set != all).then(|| set.into_iter().collect());
            l
        })
        .collect();
    Some(Group {
        members,
        lines,
        exit_here,
        name: String::new(),
    })
}
