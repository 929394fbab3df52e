//! Folding a role's members into lines that are functions of `tid`, and re-rolling unrolled loops
//! (`reroll`, `fit_block`).

use super::*;

pub(super) fn is_access(s: &Stmt) -> bool {
    matches!(s.pieces.first(), Some(Piece::T(t)) if ["read ", "write ", "mma "].iter().any(|w| t.starts_with(w)))
}

pub(super) fn same_shape(a: &[Vec<Stmt>], b: &[Vec<Stmt>]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.len() == y.len()
                && x.iter().zip(y).all(|(s, t)| {
                    s.shape_eq(t) && s.instrs == t.instrs && s.token_use == t.token_use
                })
        })
}

/// Fold the members of exact groups `gs` (same shape) into lines whose integers are functions
/// of `tid` (`x` = the member's tid), then re-roll loops. `None` if some integer does not fit.
pub(super) fn fold_lines(
    exact: &[(Vec<usize>, Vec<Vec<Stmt>>)],
    gs: &[usize],
    traces: &[Trace],
    func: &Function,
) -> Option<Vec<Vec<Line>>> {
    let rep = &exact[gs[0]].1;
    let multi_rank = {
        let ranks: BTreeSet<u32> = gs
            .iter()
            .flat_map(|&g| exact[g].0.iter().map(|&m| traces[m].rank))
            .collect();
        ranks.len() > 1
    };
    let mut segs = Vec::new();
    for (si, seg) in rep.iter().enumerate() {
        let mut lines = Vec::new();
        for (k, st) in seg.iter().enumerate() {
            let mut pieces = Vec::new();
            let mut slot = 0;
            for p in &st.pieces {
                match p {
                    Piece::T(t) => pieces.push(LPiece::T(t.clone())),
                    Piece::I(_) => {
                        // Values per member.
                        let mut pts = Vec::new();
                        for &g in gs {
                            let v = exact[g].1[si][k].ints().nth(slot).expect("same shape");
                            for &m in &exact[g].0 {
                                pts.push((traces[m].tid as i64, v, traces[m].rank));
                            }
                        }
                        pts.sort_unstable();
                        let f = if pts.iter().all(|p| p.1 == pts[0].1) {
                            Fit::Const(pts[0].1)
                        } else {
                            if multi_rank {
                                return None;
                            }
                            let xy: Vec<(i64, i64)> = pts.iter().map(|p| (p.0, p.1)).collect();
                            fit(&xy, false)?
                        };
                        pieces.push(LPiece::E(f));
                        slot += 1;
                    }
                }
            }
            let src = func.instrs[st.instrs[0] as usize].src;
            lines.push(Line {
                pieces,
                instrs: st.instrs.clone(),
                src,
                token_def: st.token_def,
                token_use: st.token_use,
                key: st.key,
                guard: None,
            });
        }
        // Re-rolled after roles sharing a warp are merged (`merge_warp_roles`).
        segs.push(lines);
    }
    Some(segs)
}

/// A statement or a loop.
#[derive(Clone, Debug)]
pub(super) enum Item {
    L(Line),
    Loop {
        trips: usize,
        body: Vec<(Line, Vec<Option<Fit>>)>,
    },
}

/// Re-roll repeated blocks: returns lines where loops are encoded as items. Since `Line` is a
/// flat statement, loops are kept in a side structure: we return them as a list of items in
/// a `Vec<Line>` whose first piece is a marker. To keep things simple, loops are emitted
/// directly by `emit_lines` from the `Item` form stored here.
pub(super) fn reroll(lines: Vec<Line>) -> Vec<Line> {
    // Represent the re-rolled result as lines with a special marker piece for loops.
    let items = reroll_items(&lines);
    let mut out = Vec::new();
    for it in items {
        match it {
            Item::L(l) => out.push(l),
            Item::Loop { trips, body } => {
                let covered = trips * body.len();
                // A loop whose lines are all under one guard is under it as a whole.
                let guard = match body.first() {
                    Some((l, _)) if body.iter().all(|(b, _)| b.guard == l.guard) => l.guard.clone(),
                    _ => None,
                };
                out.push(Line {
                    pieces: vec![LPiece::T(format!("\u{1}for {trips} {covered}"))],
                    instrs: Vec::new(),
                    src: None,
                    token_def: false,
                    token_use: None,
                    key: (None, u32::MAX),
                    guard: guard.clone(),
                });
                for (l, fits) in body {
                    let mut l = l;
                    let mut fi = fits.into_iter();
                    for p in l.pieces.iter_mut() {
                        if let LPiece::E(_) = p
                            && let Some(Some(f)) = fi.next()
                        {
                            *p = LPiece::T(format!("\u{2}{}", f.text("k", None, None)));
                        }
                    }
                    out.push(l);
                }
                out.push(Line {
                    pieces: vec![LPiece::T("\u{1}end".into())],
                    instrs: Vec::new(),
                    src: None,
                    token_def: false,
                    token_use: None,
                    key: (None, u32::MAX),
                    guard,
                });
            }
        }
    }
    out
}

const MAX_PERIOD: usize = 64;

pub(super) fn reroll_items(lines: &[Line]) -> Vec<Item> {
    let n = lines.len();
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        type Best = (usize, usize, Vec<Vec<Option<Fit>>>);
        let mut best: Option<Best> = None;
        for p in 1..=MAX_PERIOD.min((n - i) / 2) {
            // Tokens must be defined inside the block.
            let block_ok = (0..p).all(|q| {
                lines[i + q]
                    .token_use
                    .is_none_or(|d| d >= i && d < i + p && d <= i + q)
            });
            if !block_ok {
                continue;
            }
            let mut r = 1;
            while i + (r + 1) * p <= n
                && (0..p).all(|q| {
                    let a = &lines[i + q];
                    let b = &lines[i + r * p + q];
                    a.shape_eq(b)
                        && match (a.token_use, b.token_use) {
                            (None, None) => true,
                            (Some(x), Some(y)) => y == x + r * p,
                            _ => false,
                        }
                })
            {
                r += 1;
            }
            // Fit every integer over the trips; shrink r until all fit. A token defined in the
            // block must not be used after it.
            while r >= 2
                && lines[i + p * r..]
                    .iter()
                    .any(|l| l.token_use.is_some_and(|d| d >= i && d < i + p * r))
            {
                r -= 1;
            }
            while r >= 2 {
                if let Some(fits) = fit_block(lines, i, p, r) {
                    let good = r >= 3 || p >= 3;
                    let score = p * r;
                    if good && best.as_ref().is_none_or(|b| score > b.0 * b.1) {
                        best = Some((p, r, fits));
                    }
                    break;
                }
                r -= 1;
            }
        }
        match best {
            Some((p, r, fits)) => {
                let body = (0..p)
                    .map(|q| {
                        let mut l = lines[i + q].clone();
                        // Every copy's instructions.
                        let mut instrs: Vec<u32> = (0..r)
                            .flat_map(|j| lines[i + j * p + q].instrs.iter().copied())
                            .collect();
                        instrs.sort_unstable();
                        instrs.dedup();
                        l.instrs = instrs;
                        if let Some(d) = l.token_use {
                            l.token_use = Some(d - i);
                        }
                        (l, fits[q].clone())
                    })
                    .collect();
                out.push(Item::Loop { trips: r, body });
                i += p * r;
            }
            None => {
                out.push(Item::L(lines[i].clone()));
                i += 1;
            }
        }
    }
    out
}

/// For block `[i, i+p)` repeated `r` times: per line, per integer slot, `Some(fit over k)` for
/// slots that vary (constant slots stay as they are: `None`).
pub(super) fn fit_block(
    lines: &[Line],
    i: usize,
    p: usize,
    r: usize,
) -> Option<Vec<Vec<Option<Fit>>>> {
    let mut out = Vec::new();
    for q in 0..p {
        let c0 = lines[i + q].consts();
        let mut fits = Vec::new();
        for (s, v0) in c0.iter().enumerate() {
            match v0 {
                None => fits.push(None), // a tid expression, equal in every copy (shape_eq)
                Some(v0) => {
                    let vals: Vec<(i64, i64)> = (0..r)
                        .map(|j| (j as i64, lines[i + j * p + q].consts()[s].expect("const")))
                        .collect();
                    if vals.iter().all(|&(_, v)| v == *v0) {
                        fits.push(None);
                    } else {
                        fits.push(Some(fit(&vals, true)?));
                    }
                }
            }
        }
        out.push(fits);
    }
    Some(out)
}
