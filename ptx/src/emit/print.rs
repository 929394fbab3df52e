//! Printing: lines with their loop markers and guards become `.phase` text, each with the comment
//! that names its CUDA and PTX lines (the same `Origin` goes to the line map).

use super::*;

pub(super) fn comment(
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
pub(super) fn emit_lines(
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
