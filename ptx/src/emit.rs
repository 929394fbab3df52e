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
mod reroll;
mod stmt;
pub(crate) mod tensor_bytes;
mod warp_roles;

use accesses::*;
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

// ---- objects --------------------------------------------------------------------------------

struct SymObjects {
    name: String,
    /// Barrier offsets in this symbol, in order (index = position).
    bars: Vec<u64>,
    /// Buffer regions `[start, end)`, sorted.
    regions: Vec<(u64, u64)>,
    bar_name: String,
    buf_name: String,
}

struct Objects {
    syms: Vec<SymObjects>,
}

impl Objects {
    fn sym_of(shared: &[Placed], off: u64) -> Option<usize> {
        shared
            .iter()
            .enumerate()
            .filter(|(_, p)| p.base <= off && off < p.base + p.size.max(1))
            .max_by_key(|(_, p)| p.base)
            .map(|(i, _)| i)
    }

    /// `full[0]` / `bar` pieces for a barrier.
    fn bar(&self, shared: &[Placed], a: SAddr) -> Vec<Piece> {
        let s = &self.syms[Self::sym_of(shared, a.off).expect("a known symbol")];
        let idx = s
            .bars
            .iter()
            .position(|&o| o == a.off)
            .expect("a known barrier");
        let mut p = vec![Piece::T(s.bar_name.clone())];
        if s.bars.len() > 1 {
            p.push(Piece::T("[".into()));
            p.push(Piece::I(idx as i64));
            p.push(Piece::T("]".into()));
        }
        if let Some(r) = a.rank {
            p.push(Piece::T(" @ ".into()));
            p.push(Piece::I(r as i64));
        }
        p
    }

    /// ` bytes OFF .. +LEN` for an access of less than its region (language.md, "Byte
    /// ranges"), else nothing. The offset is an integer piece, so that roles and loops fold it
    /// (`4 * tid`, `k % 2 * 256 + ...`); the length is text, so that accesses of different
    /// lengths are different statements (it must be a constant).
    fn bytes(&self, shared: &[Placed], r: Range) -> Vec<Piece> {
        let s = &self.syms[Self::sym_of(shared, r.at.off).expect("a known symbol")];
        let Some(&(a, b)) = s
            .regions
            .iter()
            .find(|&&(a, b)| a <= r.at.off && r.at.off < b)
        else {
            return Vec::new();
        };
        let len = r.len.max(1);
        if r.at.off == a && r.at.off + len >= b {
            return Vec::new();
        }
        vec![
            Piece::T(" bytes ".into()),
            Piece::I((r.at.off - a) as i64),
            Piece::T(format!(" .. +{len}")),
        ]
    }

    fn buf(&self, shared: &[Placed], r: Range) -> Vec<Piece> {
        let s = &self.syms[Self::sym_of(shared, r.at.off).expect("a known symbol")];
        let idx = s
            .regions
            .iter()
            .position(|&(a, b)| a <= r.at.off && r.at.off < b)
            .expect("a known region");
        let mut p = vec![Piece::T(s.buf_name.clone())];
        if s.regions.len() > 1 {
            p.push(Piece::T("[".into()));
            p.push(Piece::I(idx as i64));
            p.push(Piece::T("]".into()));
        }
        if let Some(rank) = r.at.rank {
            p.push(Piece::T(" @ ".into()));
            p.push(Piece::I(rank as i64));
        }
        p
    }
}

/// A readable name for a (maybe mangled) PTX symbol: `_ZZ13double_bufferE4full` -> `full`.
pub fn demangle_local(name: &str) -> String {
    let mut out = name.to_string();
    if let Some(rest) = name.strip_prefix("_ZZ") {
        // _ZZ <function encoding> E <len><name> [_<discriminator>]
        if let Some(e) = rest.rfind('E') {
            let tail = &rest[e + 1..];
            let digits: String = tail.chars().take_while(|c| c.is_ascii_digit()).collect();
            if let Ok(n) = digits.parse::<usize>() {
                let start = digits.len();
                if tail.len() >= start + n {
                    out = tail[start..start + n].to_string();
                }
            }
        }
    } else if let Some(rest) = name.strip_prefix("_ZN") {
        // A nested name: <len><name>... up to its template arguments or end; keep the last.
        let mut r = rest;
        while let Some(d) = r.find(|c: char| !c.is_ascii_digit()).filter(|&d| d > 0) {
            let n: usize = r[..d].parse().unwrap_or(0);
            if r.len() < d + n || n == 0 {
                break;
            }
            out = r[d..d + n].to_string();
            r = &r[d + n..];
        }
    } else if let Some(rest) = name.strip_prefix("_Z") {
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if let Ok(n) = digits.parse::<usize>()
            && rest.len() >= digits.len() + n
        {
            out = rest[digits.len()..digits.len() + n].to_string();
        }
    }
    let mut clean: String = out
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() || clean.starts_with(|c: char| c.is_ascii_digit()) {
        clean.insert(0, 's');
    }
    if protocols::BUILTIN_NAMES.contains(&clean.as_str()) {
        clean.push('_');
    }
    clean
}

fn collect_objects(inp: &Input, notes: &mut Vec<String>) -> Result<Objects, Error> {
    let shared = inp.shared;
    let mut bars: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); shared.len()];
    // (start, end, a plain load or store).
    let mut ranges: Vec<Vec<(u64, u64, bool)>> = vec![Vec::new(); shared.len()];
    let sym = |off: u64, ev: &Event| -> Result<usize, Error> {
        Objects::sym_of(shared, off).ok_or_else(|| Error {
            message: format!("shared address {off:#x} is in no shared symbol"),
            line: Some(inp.func.instrs[ev.instr as usize].line),
            src: inp.func.instrs[ev.instr as usize].src.map(Box::new),
            help: None,
        })
    };
    for t in &inp.traces {
        for e in &t.events {
            for b in e.ev.barriers() {
                bars[sym(b.off, e)?].insert(b.off);
            }
            if let Some(r) = access_range(&e.ev) {
                let s = sym(r.at.off, e)?;
                let plain = matches!(e.ev, Ev::Read(_) | Ev::Write(..));
                ranges[s].push((r.at.off, r.at.off + r.len.max(1), plain));
            }
        }
    }
    let mut syms = Vec::new();
    let mut used_names: BTreeSet<String> = BTreeSet::new();
    for (i, p) in shared.iter().enumerate() {
        let mut rs = std::mem::take(&mut ranges[i]);
        // Accesses to a barrier's own bytes (reading the mbarrier word) are not buffer accesses.
        let before = rs.len();
        rs.retain(|&(a, b, _)| !bars[i].iter().any(|&o| a < o + 8 && o < b));
        if rs.len() != before {
            notes.push(format!(
                "{} plain loads or stores of mbarrier words in `{}` are not modelled",
                before - rs.len(),
                demangle_local(&p.name)
            ));
        }
        rs.sort_unstable();
        // Overlapping ranges are one region. Plain loads and stores keep their bytes
        // (`read X bytes ...`), so neighbouring ranges that only they touch are one region too
        // (the elements of a stage that threads fill one each); a copy, a TMA store or a
        // WGMMA operand accesses its whole region, which stays as small as its bytes.
        let mut regions: Vec<(u64, u64)> = Vec::new();
        let mut plain_only: Vec<bool> = Vec::new();
        for (a, b, plain) in rs {
            // Without byte ranges an element is a region of its own, as before them.
            let plain = plain && !inp.whole_buffers;
            match (regions.last_mut(), plain_only.last_mut()) {
                (Some(last), Some(p)) if a < last.1 || (a == last.1 && plain && *p) => {
                    last.1 = last.1.max(b);
                    *p &= plain;
                }
                _ => {
                    regions.push((a, b));
                    plain_only.push(plain);
                }
            }
        }
        let base = demangle_local(&p.name);
        let both = !bars[i].is_empty() && !regions.is_empty();
        let mut unique = |n: String| -> String {
            let mut cand = n.clone();
            let mut k = 2;
            while used_names.contains(&cand) {
                cand = format!("{n}_{k}");
                k += 1;
            }
            used_names.insert(cand.clone());
            cand
        };
        let bar_name = if bars[i].is_empty() {
            String::new()
        } else if both {
            unique(format!("{base}_bar"))
        } else {
            unique(base.clone())
        };
        let buf_name = if regions.is_empty() {
            String::new()
        } else {
            unique(base.clone())
        };
        syms.push(SymObjects {
            name: p.name.clone(),
            bars: bars[i].iter().copied().collect(),
            regions,
            bar_name,
            buf_name,
        });
    }
    Ok(Objects { syms })
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

// ---- tensor copy sizes ----------------------------------------------------------------------
// ---- statements -------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Piece {
    T(String),
    I(i64),
}

#[derive(Clone, Debug)]
struct Stmt {
    pieces: Vec<Piece>,
    /// Instructions it came from (one per unrolled copy).
    instrs: Vec<u32>,
    /// What makes two statements "the same statement" for folding and re-rolling: the CUDA
    /// source position when known, else the instruction.
    key: (Option<(u32, u32, u32)>, u32),
    /// `let tN = arrive ...`: the token it defines (printed name is by position).
    token_def: bool,
    /// `wait ... token tN`: the statement (index in the list) whose token it waits on.
    token_use: Option<usize>,
}

impl Stmt {
    fn shape_eq(&self, other: &Stmt) -> bool {
        self.key == other.key
            && self.token_def == other.token_def
            && self.pieces.len() == other.pieces.len()
            && self
                .pieces
                .iter()
                .zip(&other.pieces)
                .all(|(a, b)| match (a, b) {
                    (Piece::T(x), Piece::T(y)) => x == y,
                    (Piece::I(_), Piece::I(_)) => true,
                    _ => false,
                })
    }
    fn ints(&self) -> impl Iterator<Item = i64> + '_ {
        self.pieces.iter().filter_map(|p| match p {
            Piece::I(v) => Some(*v),
            _ => None,
        })
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

// ---- roles ---------------------------------------------------------------------------------

/// The threads of one role in one segment, with their statements.
struct Group {
    members: Vec<(u32, u32)>,
    /// Statements as expressions (after folding across members and re-rolling).
    lines: Vec<Line>,
    /// The members' runs end in this segment, and later segments exist: they exit here.
    exit_here: bool,
    name: String,
}

/// A statement with every integer either constant or an expression.
#[derive(Clone, Debug)]
struct Line {
    pieces: Vec<LPiece>,
    instrs: Vec<u32>,
    src: Option<SrcLoc>,
    token_def: bool,
    token_use: Option<usize>,
    key: (Option<(u32, u32, u32)>, u32),
    /// The members that run it, when not all of the role's members do (a role merged across a
    /// warp, `merge_warp_roles`): printed as `if COND { ... }` around it.
    guard: Option<Vec<(u32, u32)>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum LPiece {
    T(String),
    /// An integer as a function of `tid` (members) — constant for most.
    E(Fit),
}

impl Line {
    fn shape_eq(&self, o: &Line) -> bool {
        self.key == o.key
            && self.guard == o.guard
            && self.token_def == o.token_def
            && self.pieces.len() == o.pieces.len()
            && self
                .pieces
                .iter()
                .zip(&o.pieces)
                .all(|(a, b)| match (a, b) {
                    (LPiece::T(x), LPiece::T(y)) => x == y,
                    (LPiece::E(Fit::Const(_)), LPiece::E(Fit::Const(_))) => true,
                    (LPiece::E(x), LPiece::E(y)) => x == y,
                    _ => false,
                })
    }
    fn consts(&self) -> Vec<Option<i64>> {
        self.pieces
            .iter()
            .filter_map(|p| match p {
                LPiece::E(Fit::Const(c)) => Some(Some(*c)),
                LPiece::E(_) => Some(None),
                _ => None,
            })
            .collect()
    }
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

/// The condition selecting exactly `members` (pairs of block rank and tid).
fn condition(members: &[(u32, u32)], nthreads: u32, cluster: u32) -> String {
    let mut by_rank: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &(r, t) in members {
        by_rank.entry(r).or_default().push(t);
    }
    let sets: Vec<&Vec<u32>> = by_rank.values().collect();
    let same = sets.windows(2).all(|w| w[0] == w[1]);
    if same {
        let tc = tid_condition(sets[0], nthreads);
        if by_rank.len() as u32 == cluster {
            return tc;
        }
        let ranks: Vec<String> = by_rank.keys().map(|r| format!("cta == {r}")).collect();
        let rc = if ranks.len() == 1 {
            ranks[0].clone()
        } else {
            format!("({})", ranks.join(" || "))
        };
        return if tc == "tid >= 0" {
            rc
        } else {
            format!("{rc} && {}", paren_or(&tc))
        };
    }
    by_rank
        .iter()
        .map(|(r, ts)| {
            let tc = tid_condition(ts, nthreads);
            if tc == "tid >= 0" {
                format!("cta == {r}")
            } else {
                format!("(cta == {r} && {})", paren_or(&tc))
            }
        })
        .collect::<Vec<_>>()
        .join(" || ")
}

fn paren_or(s: &str) -> String {
    if s.contains("||") {
        format!("({s})")
    } else {
        s.to_string()
    }
}

fn tid_condition(tids: &[u32], n: u32) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &t in tids {
        match runs.last_mut() {
            Some(r) if r.1 + 1 == t => r.1 = t,
            _ => runs.push((t, t)),
        }
    }
    let run = |(a, b): (u32, u32)| -> String {
        if a == 0 && b + 1 == n {
            "tid >= 0".into()
        } else if a == b {
            format!("tid == {a}")
        } else if a % 32 == 0 && (b + 1) % 32 == 0 {
            let (w1, w2) = (a / 32, b / 32);
            if w1 == w2 {
                format!("warp == {w1}")
            } else if b + 1 == n {
                format!("warp >= {w1}")
            } else {
                format!("warp >= {w1} && warp <= {w2}")
            }
        } else if b + 1 == n {
            format!("tid >= {a}")
        } else if a == 0 {
            format!("tid <= {b}")
        } else {
            format!("tid >= {a} && tid <= {b}")
        }
    };
    if runs.len() == 1 {
        return run(runs[0]);
    }
    // One lane of several consecutive warps: `lane == l && warp >= a && warp <= b`.
    if runs.iter().all(|r| r.0 == r.1) {
        let l = tids[0] % 32;
        let warps: Vec<u32> = tids.iter().map(|t| t / 32).collect();
        if tids.iter().all(|t| t % 32 == l) && warps.windows(2).all(|w| w[1] == w[0] + 1) {
            let (w1, w2) = (warps[0], *warps.last().expect("non-empty"));
            let last_warp = (n - 1) / 32;
            let lane_ok_in_last = l <= (n - 1) % 32 || w2 < last_warp;
            return if w1 == 0 && w2 == last_warp && lane_ok_in_last {
                format!("lane == {l}")
            } else {
                format!("lane == {l} && warp >= {w1} && warp <= {w2}")
            };
        }
    }
    if let Some(c) = warp_lane_product(tids, n) {
        return c;
    }
    or_tree(runs.into_iter().map(run).collect())
}

/// `terms` joined with `||` as a balanced tree: a long chain `a || b || c || ...` nests one
/// level per term, and the loader refuses an expression nested more than 64 deep (E0103),
/// so a role of many thread ranges (ThunderKittens' 512-thread attention kernel had 72)
/// must not be written as one.
fn or_tree(terms: Vec<String>) -> String {
    const FLAT: usize = 8;
    if terms.len() <= FLAT {
        return terms.join(" || ");
    }
    let right = terms[terms.len() / 2..].to_vec();
    let mut left = terms;
    left.truncate(left.len() - right.len());
    format!("({}) || ({})", or_tree(left), or_tree(right))
}

/// Ranges of `values` (sorted, distinct) as conditions on `var`, `||`-joined as a tree.
fn value_runs(var: &str, values: &[u32], top: u32) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &v in values {
        match runs.last_mut() {
            Some(r) if r.1 + 1 == v => r.1 = v,
            _ => runs.push((v, v)),
        }
    }
    or_tree(
        runs.into_iter()
            .map(|(a, b)| match (a == b, a == 0, b == top) {
                (true, _, _) => format!("{var} == {a}"),
                (false, _, true) => format!("{var} >= {a}"),
                (false, true, false) => format!("{var} <= {b}"),
                _ => format!("{var} >= {a} && {var} <= {b}"),
            })
            .collect(),
    )
}

/// The threads as a set of warps times a set of lanes (`warp <= 11 && lane % 4 == 0`), when
/// they are one: every listed warp has the same lanes (the last warp of a block that is no
/// multiple of 32 those of them it has).
fn warp_lane_product(tids: &[u32], n: u32) -> Option<String> {
    let mut by_warp: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &t in tids {
        by_warp.entry(t / 32).or_default().push(t % 32);
    }
    let lanes = by_warp.values().next()?.clone();
    let last_warp = (n - 1) / 32;
    for (&w, ls) in &by_warp {
        let expect: Vec<u32> = lanes.iter().copied().filter(|&l| w * 32 + l < n).collect();
        if *ls != expect {
            return None;
        }
    }
    let warps: Vec<u32> = by_warp.keys().copied().collect();
    if warps.len() < 2 || lanes.len() < 2 {
        return None;
    }
    let warp_c =
        (warps.len() as u32 != last_warp + 1).then(|| value_runs("warp", &warps, last_warp));
    // Every `step`-th lane from `first`: `lane % step == first`.
    let progression = |ls: &[u32]| -> Option<(u32, u32)> {
        let step = ls.get(1)? - ls[0];
        (32 % step == 0
            && ls[0] < step
            && ls.len() as u32 == 32 / step
            && ls.windows(2).all(|p| p[1] - p[0] == step))
        .then_some((step, ls[0]))
    };
    let others: Vec<u32> = (0..32).filter(|l| !lanes.contains(l)).collect();
    let lane_c = if lanes.len() == 32 {
        None
    } else if let Some((step, first)) = progression(&lanes) {
        Some(format!("lane % {step} == {first}"))
    } else if let Some((step, first)) = progression(&others) {
        Some(format!("lane % {step} != {first}"))
    } else {
        Some(value_runs("lane", &lanes, 31))
    };
    let paren = |c: String| {
        if c.contains("||") {
            format!("({c})")
        } else {
            c
        }
    };
    Some(match (warp_c, lane_c) {
        (Some(w), Some(l)) => format!("{} && {}", paren(w), paren(l)),
        (Some(w), None) => w,
        (None, Some(l)) => l,
        (None, None) => "tid >= 0".into(),
    })
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
        let mut name = base.to_string();
        let mut k = 2;
        while taken.contains(&name) {
            name = format!("{base}{k}");
            k += 1;
        }
        taken.insert(name.clone());
        by_set.insert(members.clone(), name);
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

pub fn comment(
    o: &Origin,
    files: &HashMap<u32, String>,
    trampoline: Option<crate::parse::Pos>,
) -> String {
    let ptx = match o.ptx_lines.as_slice() {
        [] => String::new(),
        [one] => format!("PTX {one}"),
        [a, b] => format!("PTX {a}, {b}"),
        [a, rest @ ..] => format!("PTX {a} +{}", rest.len()),
    };
    match &o.src {
        Some(s) => format!("    # {}  {ptx}", crate::source_text(s, files, trampoline)),
        None => format!("    # {ptx}"),
    }
}

/// Print lines (with the loop markers of `reroll`) at `depth`.
fn emit_lines(
    out: &mut Vec<(String, Option<Origin>)>,
    (lines, guards, whole_warps): (&[Line], &[Option<String>], &[bool]),
    depth: usize,
    func: &Function,
    (files, trampoline): (&HashMap<u32, String>, Option<crate::parse::Pos>),
    warp_ok: bool,
    notes: &mut Vec<String>,
) {
    let mut indent = depth;
    // Token names by position in the list (loop bodies count from the loop start).
    let mut loop_start: Option<usize> = None;
    let mut body_pos = 0usize;
    let mut token_names: HashMap<usize, String> = HashMap::new();
    let mut next_token = 0;
    // The results of a poll's tests (`Ev::Poll`): `ok0`, `ok1`, ... in the order printed.
    let mut next_ok = 0usize;
    let mut line_no = 0usize; // position of a statement outside loops
    let mut covered = 0usize;
    // The condition of the `if` block open around the current lines (a merged role's lines
    // that only some members run).
    let mut open: Option<&str> = None;
    for (li, l) in lines.iter().enumerate() {
        let guard = guards.get(li).and_then(|g| g.as_deref());
        if open != guard {
            if open.is_some() {
                indent -= 1;
                out.push((format!("{}}}", "  ".repeat(indent)), None));
            }
            if let Some(c) = guard {
                out.push((format!("{}if {c} {{", "  ".repeat(indent)), None));
                indent += 1;
            }
            open = guard;
        }
        if let Some(LPiece::T(t)) = l.pieces.first()
            && let Some(m) = t.strip_prefix('\u{1}')
        {
            if let Some(rest) = m.strip_prefix("for ") {
                let (n, c) = rest.split_once(' ').expect("trips and covered");
                out.push((format!("{}for k in 0..{n} {{", "  ".repeat(indent)), None));
                indent += 1;
                loop_start = Some(line_no);
                covered = c.parse().expect("a count");
                body_pos = 0;
            } else {
                indent -= 1;
                out.push((format!("{}}}", "  ".repeat(indent)), None));
                line_no += covered;
                loop_start = None;
            }
            continue;
        }
        let me = match loop_start {
            Some(s) => s + body_pos,
            None => line_no,
        };
        let mut s = String::new();
        let mut oks = 0usize;
        for p in &l.pieces {
            match p {
                LPiece::T(t) if t.contains('\u{3}') => {
                    for (i, part) in t.split('\u{3}').enumerate() {
                        if i % 2 == 0 {
                            s.push_str(part);
                        } else {
                            let j: usize = part.parse().expect("a poll test's index");
                            oks = oks.max(j + 1);
                            s.push_str(&format!("ok{}", next_ok + j));
                        }
                    }
                }
                LPiece::T(t) => {
                    if let Some(e) = t.strip_prefix('\u{2}') {
                        s.push_str(e);
                    } else if t == "let tok = " {
                        let name = format!("t{next_token}");
                        next_token += 1;
                        token_names.insert(me, name.clone());
                        s.push_str(&format!("let {name} = "));
                    } else {
                        s.push_str(t);
                    }
                }
                LPiece::E(f) => {
                    let e = f.text("tid", Some("warp"), Some("lane"));
                    // A parity folded over the role's threads is 0 or 1 for each of them (the
                    // event keeps the low bit), but as a function of `tid` (`2 - tid / 128`:
                    // CUTLASS Pingpong's order barrier, 1 for the first consumer warp group
                    // and 0 for the second) the lint cannot see that and warned
                    // `parity-not-bit`. `% 2` says it, and is the same value for every member.
                    if s.ends_with(" parity ") && !matches!(f, Fit::Const(_)) && !e.ends_with("% 2")
                    {
                        s.push_str(&format!("({e}) % 2"));
                    } else {
                        s.push_str(&e);
                    }
                }
            }
        }
        next_ok += oks;
        if let Some(d) = l.token_use {
            let def = match loop_start {
                Some(st) => st + d,
                None => d,
            };
            s.push_str(token_names.get(&def).map_or("t?", String::as_str));
        }
        let origin = Origin {
            ptx_lines: {
                let mut v: Vec<u32> = l
                    .instrs
                    .iter()
                    .map(|&i| func.instrs[i as usize].line)
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            },
            src: l.src,
        };
        let whole = whole_warps.get(li).copied().unwrap_or(false);
        if s == "syncwarp" && (!warp_ok || !whole) {
            out.push((
                format!(
                    "{}# __syncwarp: not modelled (the lanes of this warp are in different roles)",
                    "  ".repeat(indent)
                ),
                None,
            ));
            let n = "__syncwarp between lanes of different roles is not modelled: accesses it \
                     orders may be reported as races"
                .to_string();
            if !notes.contains(&n) {
                notes.push(n);
            }
        } else {
            let c = comment(&origin, files, trampoline);
            out.push((format!("{}{s}{c}", "  ".repeat(indent)), Some(origin)));
        }
        if loop_start.is_some() {
            body_pos += 1;
        } else {
            line_no += 1;
        }
    }
    if open.is_some() {
        out.push((format!("{}}}", "  ".repeat(indent - 1)), None));
    }
}

// ---- roles merged across a warp ------------------------------------------------------------
#[cfg(test)]
mod tests {
    use super::*;

    /// How deep the loader's parser nests `c`: one level per operator of a left-leaning
    /// chain, one per parenthesis.
    fn nesting(c: &str) -> usize {
        let (mut depth, mut max, mut chain) = (0usize, 0usize, vec![0usize]);
        for tok in c.split_whitespace() {
            for ch in tok.chars() {
                match ch {
                    '(' => {
                        depth += 1;
                        chain.push(0);
                    }
                    ')' => {
                        depth -= 1;
                        chain.pop();
                    }
                    _ => {}
                }
            }
            if tok == "||" || tok == "&&" {
                *chain.last_mut().expect("a level") += 1;
            }
            max = max.max(depth + chain.iter().sum::<usize>());
        }
        max
    }

    #[test]
    fn many_thread_ranges_are_a_balanced_condition() {
        // Every third thread of 1024: 342 ranges of one thread, no warp-lane product.
        let tids: Vec<u32> = (0..1024).filter(|t| t % 3 == 0).collect();
        let c = tid_condition(&tids, 1024);
        assert_eq!(c.matches("tid ==").count(), 342, "{c}");
        assert!(nesting(&c) < 40, "nested {} deep: {c}", nesting(&c));
        // The chain it replaces nests once per range.
        assert!(nesting(&c.replace(['(', ')'], "")) > 300);
    }

    #[test]
    fn lanes_of_warps_are_a_product() {
        let every_fourth: Vec<u32> = (0..384).filter(|t| t % 4 == 0).collect();
        assert_eq!(
            tid_condition(&every_fourth, 512),
            "warp <= 11 && lane % 4 == 0"
        );
        let the_others: Vec<u32> = (0..384).filter(|t| t % 4 != 0).collect();
        assert_eq!(tid_condition(&the_others, 384), "lane % 4 != 0");
        let two_lanes: Vec<u32> = (0..512).filter(|t| t % 32 == 3 || t % 32 == 4).collect();
        assert_eq!(tid_condition(&two_lanes, 512), "lane >= 3 && lane <= 4");
    }
}
