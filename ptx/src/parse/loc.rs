//! Line information: `.loc` directives with their `inlined_at` chains, turned into inline
//! stacks, and the `.debug_str` section that names the inlined functions.

use super::*;

/// The inline stacks met so far.
#[derive(Default)]
pub(super) struct Stacks {
    pub(super) list: Vec<Vec<Frame>>,
    pub(super) ids: HashMap<Vec<Frame>, u32>,
    /// A position -> the stack of the last `.loc` at it (whose innermost frame it is).
    pub(super) last_at: HashMap<Pos, u32>,
    /// A position -> every stack a `.loc` at it has had, in order.
    pub(super) all_at: HashMap<Pos, Vec<u32>>,
    pub(super) candidates: Vec<Vec<u32>>,
    /// The `.loc` just before, when no instruction came after it: a `.loc` inlined at its
    /// position is the next link of the chain nvcc writes for one call, not ambiguous.
    pub(super) chain: Option<(Pos, u32)>,
}

impl Stacks {
    fn intern(&mut self, frames: Vec<Frame>) -> u32 {
        if let Some(&id) = self.ids.get(&frames) {
            return id;
        }
        let id = self.list.len() as u32;
        self.list.push(frames.clone());
        self.ids.insert(frames, id);
        id
    }
}

/// `.section .debug_str { $L__info_string0: .b8 95,90,...,0 ... }`: label -> string.
pub(super) fn debug_strings(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let Some(start) = text.find(".debug_str") else {
        return out;
    };
    let body = &text[start..];
    let body = &body[..body.find('}').unwrap_or(body.len())];
    let mut label: Option<String> = None;
    let mut bytes: Vec<u8> = Vec::new();
    let mut flush = |label: &mut Option<String>, bytes: &mut Vec<u8>| {
        if let Some(l) = label.take() {
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            out.insert(l, String::from_utf8_lossy(&bytes[..end]).into_owned());
        }
        bytes.clear();
    };
    for line in body.lines() {
        let line = line.trim();
        if let Some(l) = line.strip_suffix(':') {
            flush(&mut label, &mut bytes);
            label = Some(l.trim().to_string());
        } else if let Some(list) = line.strip_prefix(".b8") {
            bytes.extend(list.split(',').filter_map(|b| b.trim().parse::<u8>().ok()));
        }
    }
    flush(&mut label, &mut bytes);
    out
}

/// `.loc 1 4 3, function_name $L__info_string0, inlined_at 1 27 5`: position 1:4:3 is in the
/// function named by the label, inlined at 1:27:5. The stack of the call site is that of the
/// last `.loc` at 1:27:5 (nvcc writes the chain of call sites before the first instruction of
/// an inlined call; a later `.loc` names only the innermost call site).
pub(super) fn parse_loc(text: &str, stacks: &mut Stacks) -> Option<SrcLoc> {
    let mut parts = text.split(',');
    let head: Vec<u32> = parts
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|w| w.parse().ok())
        .collect();
    if head.len() < 2 {
        return None;
    }
    let inner = Pos {
        file: head[0],
        line: head[1],
        col: head.get(2).copied().unwrap_or(0),
    };
    let mut at = None;
    let mut func = None;
    for p in parts {
        let p = p.trim();
        if let Some(rest) = p.strip_prefix("inlined_at") {
            let v: Vec<u32> = rest
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            if v.len() >= 2 {
                at = Some(Pos {
                    file: v[0],
                    line: v[1],
                    col: v.get(2).copied().unwrap_or(0),
                });
            }
        } else if let Some(rest) = p.strip_prefix("function_name") {
            func = rest.split_whitespace().next().map(str::to_string);
        }
    }
    if inner.line == 0 {
        return None;
    }
    let this = Frame { pos: inner, func };
    let extend = |stacks: &mut Stacks, caller: Option<u32>| {
        let mut frames = match (caller, at) {
            (Some(id), _) => stacks.list[id as usize].clone(),
            // A call site no `.loc` has named: a position of the kernel's own body.
            (None, Some(o)) => vec![Frame { pos: o, func: None }],
            (None, None) => Vec::new(),
        };
        // A recursive helper inlined at itself would grow the stack without end.
        frames.truncate(63);
        frames.push(this.clone());
        stacks.intern(frames)
    };
    let callers: Vec<u32> = at
        .and_then(|o| stacks.all_at.get(&o))
        .cloned()
        .unwrap_or_default();
    let last = at.and_then(|o| stacks.last_at.get(&o)).copied();
    let id = extend(stacks, last);
    // Calls at several places reach the call site (two calls of one helper, each inlining
    // the same inner helper): the `.loc` names the call site's position only, and nvcc
    // writes the chain of a call once, so this may be any of them. The executor's events
    // decide later (`inline::resolve`); the last one is kept meanwhile.
    let mut candidates = NO_CANDIDATES;
    let mut ids = vec![id];
    let chained =
        matches!((stacks.chain, at), (Some((p, c)), Some(o)) if p == o && Some(c) == last);
    if callers.len() > 1 && !chained {
        ids = callers.iter().map(|&c| extend(stacks, Some(c))).collect();
        candidates = stacks.candidates.len() as u32;
        stacks.candidates.push(ids.clone());
    }
    stacks.last_at.insert(inner, id);
    stacks.chain = Some((inner, id));
    let seen = stacks.all_at.entry(inner).or_default();
    for i in ids {
        if !seen.contains(&i) {
            seen.push(i);
        }
    }
    Some(SrcLoc {
        inner,
        outer: None,
        second: None,
        user: None,
        user_in: None,
        stack: id,
        candidates,
    })
}
