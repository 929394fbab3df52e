//! Traces -> `.phase` text.
//!
//! 1. **Objects.** Every shared address an mbarrier operation uses is an mbarrier; they are
//!    grouped by the shared symbol they lie in (`mbarrier full[2]`). Every other shared access
//!    (loads, stores, copies, wgmma operands) is a byte range; overlapping ranges of one symbol
//!    are merged into regions, and each region is one buffer instance (`buffer buf[2]`).
//! 2. **Segments.** When every thread meets its `k`-th `__syncthreads` (`bar.sync 0` for the
//!    whole block) at the same instruction, the body is cut there and each cut becomes one
//!    top-level `syncthreads` statement (the model requires one statement for all threads).
//! 3. **Roles.** Threads with the same events (the same instructions with the same operands)
//!    form a role, `role NAME when COND`; threads whose events differ only in integer operands
//!    that are functions of `tid` (an index `tid % 64`, a barrier `bar[warp]`) are folded into
//!    one role with those expressions.
//! 4. **Loops.** A block of statements repeated with operands that are functions of the trip
//!    number (ring position `k % 2`, parity `k / 2 % 2`) is written as `for k in 0..N`.
//!
//! Each statement carries a comment with its CUDA source line and PTX line, and the line map
//! records the same for every generated line.

use crate::events::{CopyBytes, Ev, Event, Range, SAddr, Trace};
use crate::exec::Placed;
use crate::fit::{Fit, fit};
use crate::parse::{Function, Module, SrcLoc};
use crate::{Error, Origin};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;

mod accesses;
mod condition;
mod lines;
mod objects;
mod print;
mod reroll;
mod stmt;
pub(crate) mod tensor_bytes;
mod warp_roles;

use accesses::*;
use condition::*;
use lines::*;
pub(crate) use objects::demangle_local;
use objects::*;
use print::*;
use reroll::*;
use tensor_bytes::*;
use warp_roles::*;

pub struct Input<'a> {
    pub module: &'a Module,
    pub func: &'a Function,
    pub traces: Vec<Trace>,
    pub shared: &'a [Placed],
    pub nthreads: u32,
    pub cluster: u32,
    /// Kernel parameter values (for tensor-map byte counts).
    pub params: &'a HashMap<(u32, u64), i64>,
    /// No byte ranges ([`crate::Options::whole_buffers`]).
    pub whole_buffers: bool,
}

pub struct Output {
    /// The line every instruction is inlined into, if there is one.
    pub trampoline: Option<crate::parse::Pos>,
    pub text: String,
    /// Per generated line (0-based), where it came from.
    pub lines: Vec<Option<Origin>>,
    pub notes: Vec<String>,
}

/// A barrier that every thread of the block meets: `__syncthreads` (`bar.sync 0`,
/// `barrier.sync 0`), or (`named`) an aligned named barrier of the whole block (`bar.sync 1,
/// 128` in a 128-thread block). When every thread meets its k-th one at the same instruction,
/// it is a top-level statement (a segment boundary).
fn block_barrier(ev: &Ev, nthreads: u32, named: bool) -> bool {
    match ev {
        Ev::BarSync {
            id: 0, count: None, ..
        } => true,
        Ev::BarSync { count, aligned, .. } => {
            named && *aligned && count.is_none_or(|c| c == nthreads as i64)
        }
        _ => false,
    }
}

/// The top-level statement of a block barrier.
fn block_barrier_text(ev: &Ev) -> String {
    match ev {
        Ev::BarSync {
            id: 0, count: None, ..
        } => "syncthreads".into(),
        Ev::BarSync { id, count, .. } => match count {
            Some(c) => format!("bar_sync {id}, {c}"),
            None => format!("bar_sync {id}"),
        },
        _ => String::new(),
    }
}

fn access_range(ev: &Ev) -> Option<Range> {
    match ev {
        Ev::Read(r) | Ev::Write(r, _) | Ev::Mma(r) => Some(*r),
        Ev::CpAsync { dst } => Some(*dst),
        Ev::Copy {
            dst,
            bytes: CopyBytes::Known(n) | CopyBytes::Share(n),
            ..
        } => Some(Range {
            at: *dst,
            len: (*n).max(1) as u64,
        }),
        Ev::TmaStore { src, len, .. } => Some(Range {
            at: *src,
            len: len.unwrap_or(1),
        }),
        _ => None,
    }
}

struct Ctx<'a> {
    inp: &'a Input<'a>,
    objs: &'a Objects,
    /// Per (rank, tid) key: is the write a part write (for instructions not in `ranged`).
    part: HashMap<(u32, u32, usize), bool>,
    /// Instructions whose accesses keep their bytes ([`ranged_instrs`]).
    ranged: std::collections::HashSet<u32>,
    /// Per (rank, tid) key: the value tag of a store whose bytes are known (`value_tags`).
    values: HashMap<(u32, u32, usize), u32>,
    syncthreads_segments: bool,
    /// Named block barriers are segment boundaries too (`block_barrier`).
    named_segments: bool,
    trampoline: Option<crate::parse::Pos>,
}

fn role_name(lines: &[Line]) -> &'static str {
    let text: Vec<String> = lines
        .iter()
        .map(|l| match &l.pieces[0] {
            LPiece::T(t) => t.clone(),
            _ => String::new(),
        })
        .collect();
    let has = |w: &str| {
        text.iter()
            .any(|t| t.starts_with(w) || t.contains(&format!(" {w}")))
    };
    if has("tma ") || has("expect_tx") || has("arrive_expect_tx") || has("cp_async ") {
        "producer"
    } else if has("mma ") || ((has("wait ") || has("test_wait ")) && has("read ")) {
        "consumer"
    } else if has("write") || has("read ") {
        "worker"
    } else if has("init ") {
        "setup"
    } else if text.is_empty() {
        "idle"
    } else {
        "sync"
    }
}

// ---- the builder ---------------------------------------------------------------------------

pub fn build(mut inp: Input) -> Result<Output, Error> {
    let mut notes = Vec::new();
    resolve_tensor_bytes(&mut inp, &mut notes)?;
    let objs = collect_objects(&inp, &mut notes)?;
    let values = value_tags(&inp, &mut notes);
    let part = part_writes(&inp, &objs);
    let ranged = ranged_instrs(&inp, &objs);

    // Segments at __syncthreads.
    // Named block barriers too, when every thread meets all of them at the same instructions
    // and none of their ids has a `bar.arrive` (a producer that arrives without waiting).
    let anchors_of = |named: bool| -> Vec<Vec<u32>> {
        inp.traces
            .iter()
            .map(|t| {
                t.events
                    .iter()
                    .filter(|e| block_barrier(&e.ev, inp.nthreads, named))
                    .map(|e| e.instr)
                    .collect()
            })
            .collect()
    };
    let arrive_ids: BTreeSet<i64> = inp
        .traces
        .iter()
        .flat_map(|t| t.events.iter())
        .filter_map(|e| match e.ev {
            Ev::BarArrive { id, .. } => Some(id),
            _ => None,
        })
        .collect();
    let named_anchors = anchors_of(true);
    let named = named_anchors.windows(2).all(|w| w[0] == w[1])
        && inp.traces.iter().flat_map(|t| t.events.iter()).all(|e| {
            !block_barrier(&e.ev, inp.nthreads, true)
                || !matches!(e.ev, Ev::BarSync { id, .. } if arrive_ids.contains(&id))
        });
    let anchors = if named {
        named_anchors
    } else {
        anchors_of(false)
    };
    let longest = anchors
        .iter()
        .max_by_key(|a| a.len())
        .cloned()
        .unwrap_or_default();
    let segments_ok = anchors.iter().all(|a| longest.starts_with(a));
    if !segments_ok {
        notes.push(
            "the threads reach their __syncthreads at different instructions: each is kept in \
             its role (the checker reports it as barrier divergence)"
                .into(),
        );
    }
    let nseg = if segments_ok { longest.len() + 1 } else { 1 };
    // A line every event's instruction is inlined into (CUTLASS's `device_kernel`).
    let outers: BTreeSet<Option<(u32, u32, u32)>> = inp
        .traces
        .iter()
        .flat_map(|t| t.events.iter())
        .map(|e| {
            inp.func.instrs[e.instr as usize]
                .src
                .and_then(|s| s.outer)
                .map(|p| (p.file, p.line, p.col))
        })
        .collect();
    let trampoline = match outers.into_iter().collect::<Vec<_>>().as_slice() {
        [Some((file, line, col))] => Some(crate::parse::Pos {
            file: *file,
            line: *line,
            col: *col,
        }),
        _ => None,
    };
    let ctx = Ctx {
        inp: &inp,
        objs: &objs,
        part,
        ranged,
        values,
        syncthreads_segments: segments_ok,
        named_segments: named,
        trampoline,
    };

    // Per thread: statements per segment.
    let mut per_thread: Vec<(usize, Vec<Vec<Stmt>>)> = Vec::new();
    for t in &inp.traces {
        let uses: BTreeSet<usize> = t
            .events
            .iter()
            .filter_map(|e| match e.ev {
                Ev::WaitToken { arrive, .. } => Some(arrive),
                _ => None,
            })
            .collect();
        let mut segs: Vec<Vec<Stmt>> = vec![Vec::new()];
        // Event index -> (segment, statement index) for token references.
        let mut pos: HashMap<usize, (usize, usize)> = HashMap::new();
        let mut run_start = 0usize;
        for (i, e) in t.events.iter().enumerate() {
            if segments_ok && block_barrier(&e.ev, inp.nthreads, named) {
                segs.push(Vec::new());
                run_start = 0;
                continue;
            }
            if let Some(mut s) = ctx.stmt(t, i, &uses) {
                if let Some(a) = s.token_use {
                    match pos.get(&a) {
                        Some(&(seg, idx)) if seg == segs.len() - 1 => s.token_use = Some(idx),
                        _ => {
                            let ins = &inp.func.instrs[e.instr as usize];
                            return Err(Error {
                                message: "a wait on a token taken before a __syncthreads is not \
                                          supported"
                                    .into(),
                                line: Some(ins.line),
                                src: ins.src.map(Box::new),
                                help: None,
                            });
                        }
                    }
                }
                // In a run of plain accesses (no synchronization between them), an access
                // the run already has (the same operation on the same object: an unrolled
                // loop over a tile, the wgmmas of one k-tile) is the same statement: every
                // ordering that holds for the later one holds for the earlier one, so the
                // model could not tell them apart.
                let seg_no = segs.len() - 1;
                let cur = segs.last_mut().expect("a segment");
                if is_access(&s) {
                    let from = run_start.min(cur.len());
                    if let Some(same) = cur[from..].iter_mut().find(|x| x.pieces == s.pieces) {
                        for x in s.instrs {
                            if !same.instrs.contains(&x) {
                                same.instrs.push(x);
                            }
                        }
                        continue;
                    }
                } else {
                    run_start = cur.len() + 1;
                }
                pos.insert(i, (seg_no, cur.len()));
                cur.push(s);
            }
        }
        let reached = segs.len();
        segs.resize_with(nseg, Vec::new);
        per_thread.push((reached, segs));
    }

    // Roles, per segment: exact equality of statements (shape and integers), then folding over
    // tid. A thread whose run ends in a segment before the last one exits there.
    let traces = &inp.traces;
    let mut seg_groups: Vec<Vec<Group>> = Vec::new();
    for seg in 0..nseg {
        type Sig = (bool, Vec<(Vec<Piece>, Vec<u32>, Option<usize>)>);
        let mut exact: Vec<(Vec<usize>, Vec<Vec<Stmt>>)> = Vec::new();
        let mut exit_of: Vec<bool> = Vec::new();
        let mut index: HashMap<Sig, usize> = HashMap::new();
        for (ti, (reached, segs)) in per_thread.iter().enumerate() {
            let exits = segments_ok && *reached == seg + 1 && seg + 1 < nseg;
            if seg >= *reached {
                continue; // exited before this segment
            }
            let stmts = &segs[seg];
            let sig: Sig = (
                exits,
                stmts
                    .iter()
                    .map(|x| (x.pieces.clone(), x.instrs.clone(), x.token_use))
                    .collect(),
            );
            match index.get(&sig) {
                Some(&g) => exact[g].0.push(ti),
                None => {
                    index.insert(sig, exact.len());
                    exact.push((vec![ti], vec![stmts.clone()]));
                    exit_of.push(exits);
                }
            }
        }
        let mut groups: Vec<Group> = Vec::new();
        let mut folded: Vec<bool> = vec![false; exact.len()];
        for gi in 0..exact.len() {
            if folded[gi] {
                continue;
            }
            let mut cand = vec![gi];
            for gj in gi + 1..exact.len() {
                if !folded[gj]
                    && exit_of[gi] == exit_of[gj]
                    && same_shape(&exact[gi].1, &exact[gj].1)
                {
                    cand.push(gj);
                }
            }
            let members_of = |gs: &[usize]| -> Vec<usize> {
                let mut m: Vec<usize> = gs
                    .iter()
                    .flat_map(|&g| exact[g].0.iter().copied())
                    .collect();
                m.sort_unstable();
                m
            };
            let fold = |gs: &[usize]| -> Option<Vec<Vec<Line>>> {
                fold_lines(&exact, gs, traces, inp.func)
            };
            let (used, segs) = match (cand.len() > 1).then(|| fold(&cand)).flatten() {
                Some(segs) => (cand, segs),
                None => (vec![gi], fold(&[gi]).expect("one exact group folds")),
            };
            for &g in &used {
                folded[g] = true;
            }
            let members: Vec<(u32, u32)> = members_of(&used)
                .into_iter()
                .map(|t| (traces[t].rank, traces[t].tid))
                .collect();
            let lines = segs.into_iter().next().expect("one segment");
            groups.push(Group {
                members,
                lines,
                exit_here: exit_of[gi],
                name: String::new(),
            });
        }
        groups.sort_by_key(|g| g.members[0]);
        let mut groups = merge_warp_roles(groups);
        for g in &mut groups {
            g.lines = reroll(std::mem::take(&mut g.lines));
        }
        seg_groups.push(groups);
    }
    // Names: one per set of threads (the same set in several segments keeps its name), from
    // what the set does in all its segments.
    let total = inp.nthreads as usize * inp.cluster as usize;
    type Members = Vec<(u32, u32)>;
    let mut sets: Vec<(Members, Vec<Line>)> = Vec::new();
    for g in seg_groups.iter().flatten() {
        if g.lines.is_empty() && !g.exit_here {
            continue;
        }
        match sets.iter_mut().find(|(m, _)| *m == g.members) {
            Some((_, lines)) => lines.extend(g.lines.iter().cloned()),
            None => sets.push((g.members.clone(), g.lines.clone())),
        }
    }
    let mut by_set: HashMap<Vec<(u32, u32)>, String> = HashMap::new();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    for (members, lines) in &sets {
        let base = if members.len() == total {
            "all"
        } else {
            role_name(lines)
        };
        by_set.insert(members.clone(), fresh_name(&mut taken, base, ""));
    }
    for g in seg_groups.iter_mut().flatten() {
        if let Some(n) = by_set.get(&g.members) {
            g.name = n.clone();
        }
    }
    // syncwarp is one statement for a warp only when all its lanes are in one role.
    let warp_ok = |g: &Group| whole_warps(&g.members, inp.nthreads);

    // ---- text ----
    let mut out = Vec::<(String, Option<Origin>)>::new();
    out.push((format!("protocol {}", demangle_local(&inp.func.name)), None));
    out.push((String::new(), None));
    out.push((format!("block {}", inp.nthreads), None));
    if inp.cluster > 1 {
        out.push((format!("cluster {}", inp.cluster), None));
    }
    for s in &objs.syms {
        let place = inp
            .shared
            .iter()
            .find(|p| p.name == s.name)
            .map(|p| p.line)
            .unwrap_or(0);
        if !s.bars.is_empty() {
            let len = if s.bars.len() > 1 {
                format!("[{}]", s.bars.len())
            } else {
                String::new()
            };
            out.push((
                format!(
                    "mbarrier {}{len}    # PTX `{}` (line {place})",
                    s.bar_name, s.name
                ),
                None,
            ));
        }
        if !s.regions.is_empty() {
            let len = if s.regions.len() > 1 {
                format!("[{}]", s.regions.len())
            } else {
                String::new()
            };
            let sizes: BTreeSet<u64> = s.regions.iter().map(|(a, b)| b - a).collect();
            let size = if sizes.len() == 1 {
                format!("{} bytes", sizes.iter().next().expect("one"))
            } else {
                "regions of different sizes".into()
            };
            out.push((
                format!(
                    "buffer   {}{len}    # PTX `{}` (line {place}): {size}",
                    s.buf_name, s.name
                ),
                None,
            ));
        }
    }
    let file_names = &inp.module.files;
    for (seg, groups) in seg_groups.iter().enumerate() {
        for g in groups {
            let lines = &g.lines;
            let exit_here = g.exit_here;
            if lines.is_empty() && !exit_here {
                continue;
            }
            out.push((String::new(), None));
            out.push((
                format!(
                    "role {} when {} {{",
                    g.name,
                    condition(&g.members, inp.nthreads, inp.cluster)
                ),
                None,
            ));
            let ok_warp = warp_ok(g);
            let guards: Vec<Option<String>> = g
                .lines
                .iter()
                .map(|l| {
                    l.guard
                        .as_ref()
                        .map(|m| condition(m, inp.nthreads, inp.cluster))
                })
                .collect();
            // A guard of whole warps (roles of different warps merged at a named barrier,
            // `merge_warp_roles`): every lane of such a warp runs the guarded lines, so a
            // `syncwarp` among them is still one statement for the warp.
            let whole_warps: Vec<bool> = g
                .lines
                .iter()
                .map(|l| {
                    l.guard
                        .as_ref()
                        .is_none_or(|m| whole_warps(m, inp.nthreads))
                })
                .collect();
            emit_lines(
                &mut out,
                (lines, &guards, &whole_warps),
                1,
                inp.func,
                (file_names, trampoline),
                ok_warp,
                &mut notes,
            );
            if exit_here {
                out.push(("  exit".into(), None));
            }
            out.push(("}".into(), None));
        }
        if seg + 1 < nseg {
            let instr = longest[seg];
            let ins = &inp.func.instrs[instr as usize];
            out.push((String::new(), None));
            let origin = Origin {
                ptx_lines: vec![ins.line],
                src: ins.src,
            };
            let what = inp
                .traces
                .iter()
                .flat_map(|t| t.events.iter())
                .find(|e| e.instr == instr && block_barrier(&e.ev, inp.nthreads, named))
                .map_or_else(|| "syncthreads".to_string(), |e| block_barrier_text(&e.ev));
            out.push((
                format!("{what}{}", comment(&origin, file_names, trampoline)),
                Some(origin),
            ));
        }
    }
    let mut text = String::new();
    let mut lines = Vec::new();
    for (l, o) in out {
        let _ = writeln!(text, "{l}");
        lines.push(o);
    }
    Ok(Output {
        trampoline,
        text,
        lines,
        notes,
    })
}
