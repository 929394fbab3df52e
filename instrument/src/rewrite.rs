//! The rewriting: which instructions are points, and where the snippets go in the text.
//!
//! The text is rewritten line by line (the parser gives each instruction's line), so that
//! everything not instrumented stays byte for byte as written: directives, `.loc`s, inline
//! assembly's scoped blocks and labels.

use crate::sequence::Sequence;
use crate::{Instrumented, Options, Point, PointKind, seq_snippet, snippet};
use ptx::parse::{Instr, Module};
use std::collections::BTreeMap;

/// What to insert around one line.
#[derive(Default)]
struct Edit {
    /// After the function body's `{` on this line: the prologue.
    prologue: Option<String>,
    /// Before the statement (after a label on the same line).
    before: String,
    after: String,
}

fn kind_of(i: &Instr) -> Option<PointKind> {
    let p1 = i.parts.get(1).map(String::as_str).unwrap_or("");
    match i.base() {
        "mbarrier" if p1 == "try_wait" || p1 == "test_wait" => Some(PointKind::BoundedWait),
        "mbarrier" => Some(PointKind::Delay),
        "bar" | "barrier" if p1 != "warp" => Some(PointKind::Delay),
        "cp" if p1 == "async" || p1 == "reduce" => Some(PointKind::Delay),
        "fence" if i.has_prefix("proxy") || i.has("mbarrier_init") => Some(PointKind::Delay),
        _ => None,
    }
}

/// A barrier instruction that blocks until the other parties arrive (`bar.sync`,
/// `barrier.cluster.wait`, ...): a sequenced thread's turn ends before it, so that the
/// parties after it in the trace can arrive.
fn blocks(i: &Instr) -> bool {
    matches!(i.base(), "bar" | "barrier") && !i.text.contains("arrive")
}

/// The part of a line before a `//` comment.
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |c| &line[..c])
}

/// Rewrite `text`; with `seq`, the points of its kernel that the sequence lists hold their
/// threads in the trace's order ([`crate::sequence`]).
pub fn rewrite(
    text: &str,
    module: &Module,
    opts: &Options,
    seq: Option<&Sequence>,
) -> Result<Instrumented, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut edits: BTreeMap<usize, Edit> = BTreeMap::new();
    let mut points = Vec::new();
    let stack_text = |stack: u32| -> Vec<String> {
        module
            .stacks
            .get(stack as usize)
            .map(|frames| {
                frames
                    .iter()
                    .map(|f| {
                        let file = module
                            .files
                            .get(&f.pos.file)
                            .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
                            .unwrap_or_else(|| format!("file{}", f.pos.file));
                        format!("{file}:{}", f.pos.line)
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    for (salt, f) in module.functions.iter().enumerate() {
        if f.instrs.is_empty() {
            continue; // a declaration (`.extern .func`), or an empty body
        }
        // The body's `{`: the first line from the header on that starts with one.
        let open = (f.line.saturating_sub(1) as usize..lines.len())
            .find(|&k| lines[k].trim_start().starts_with('{'))
            .ok_or_else(|| format!("PTX line {}: `{}` has no body", f.line, f.name))?;
        let seq_here = seq.filter(|s| s.kernel == f.name);
        let mut prologue = snippet::prologue(salt as u32);
        if let Some(s) = seq_here {
            prologue += &seq_snippet::prologue(s);
        }
        edits.entry(open).or_default().prologue = Some(prologue);
        // A line every point of the function is inlined into (CUTLASS's `device_kernel` calling
        // the kernel's `operator()`): shown from the frame inside it, as the front end does.
        let outers: std::collections::BTreeSet<Option<(u32, u32, u32)>> = f
            .instrs
            .iter()
            .filter(|i| kind_of(i).is_some())
            .map(|i| i.src.and_then(|s| s.outer).map(|p| (p.file, p.line, p.col)))
            .collect();
        let trampoline = match outers.into_iter().collect::<Vec<_>>().as_slice() {
            [Some((file, line, col))] => Some(ptx::parse::Pos {
                file: *file,
                line: *line,
                col: *col,
            }),
            _ => None,
        };
        for ins in &f.instrs {
            let Some(kind) = kind_of(ins) else { continue };
            let k = ins.line as usize - 1;
            let line = lines
                .get(k)
                .ok_or_else(|| format!("PTX line {} is past the end", ins.line))?;
            if code(line).matches(';').count() != 1 {
                return Err(format!(
                    "PTX line {}: `{}` shares its line with other statements; the instrumenter \
                     needs one statement a line (as nvcc writes it)",
                    ins.line, ins.text
                ));
            }
            let id = points.len() as u32;
            let e = edits.entry(k).or_default();
            e.before += &snippet::delay(id, "before");
            let skip = guard_negation(line);
            let group = seq_here.and_then(|s| s.group_of_point.get(&id).copied());
            if let Some(g) = group {
                e.before += &seq_snippet::hold(id, g, blocks(ins), skip.as_deref());
            }
            match kind {
                PointKind::Delay => {
                    e.after += &snippet::delay(id, "after");
                    if let Some(g) = group {
                        e.after += &seq_snippet::after(id, g, skip.as_deref());
                    }
                }
                PointKind::BoundedWait => {
                    let done = wait_predicate(ins, line)?;
                    // On success only (the guard's skip jumps past both). Every wait of the
                    // sequenced kernel may finish a pending wait (see seq_snippet::wait_failed).
                    let on_ok = seq_here
                        .map(|s| seq_snippet::wait_done(id, group, s.groups))
                        .unwrap_or_default();
                    let on_fail = group.map(seq_snippet::wait_failed).unwrap_or_default();
                    e.after += &snippet::bound(
                        id,
                        &done,
                        skip.as_deref(),
                        &on_ok,
                        &on_fail,
                        seq_here.is_some(),
                    );
                }
            }
            let source = ins
                .src
                .map(|s| ptx::source_text(&s, &module.files, trampoline));
            points.push(Point {
                id,
                kind,
                function: f.name.clone(),
                ptx_line: ins.line,
                text: ins.text.clone(),
                source,
                stack: ins.src.map(|s| stack_text(s.stack)).unwrap_or_default(),
            });
        }
    }
    let mask = opts
        .delay_max_ns
        .checked_next_power_of_two()
        .map_or(u32::MAX, |p| {
            if p == opts.delay_max_ns {
                p.wrapping_mul(2).wrapping_sub(1)
            } else {
                p - 1
            }
        });
    let mut out = String::with_capacity(text.len() * 2);
    let mut globals_done = false;
    for (k, line) in lines.iter().enumerate() {
        let Some(e) = edits.get(&k) else {
            out += line;
            out.push('\n');
            if !globals_done && line.trim_start().starts_with(".address_size") {
                out += &snippet::globals(opts.delay_chance, mask, opts.wait_bound_us);
                if let Some(s) = seq {
                    out += &seq_snippet::globals(s);
                }
                globals_done = true;
            }
            continue;
        };
        let mut rest: &str = line;
        if e.prologue.is_some() {
            let at = rest.find('{').map_or(0, |p| p + 1);
            out += &rest[..at];
            out.push('\n');
            out += e.prologue.as_deref().unwrap_or("");
            rest = &rest[at..];
        }
        if e.before.is_empty() && e.after.is_empty() {
            out += rest;
            out.push('\n');
            continue;
        }
        // The statement starts after a label on the same line (`WAIT: mbarrier...`).
        let start = statement_start(rest);
        out += &rest[..start];
        out.push('\n');
        out += &e.before;
        out += &rest[start..];
        out.push('\n');
        out += &e.after;
    }
    if !globals_done {
        return Err("the PTX has no `.address_size` directive to put the globals after".into());
    }
    Ok(Instrumented {
        ptx: out,
        kernels: module
            .functions
            .iter()
            .filter(|f| f.entry)
            .map(|f| f.name.clone())
            .collect(),
        points,
    })
}

/// Where the statement on `line` starts: after leading blanks and any `label:` before it.
fn statement_start(line: &str) -> usize {
    let mut at = line.len() - line.trim_start().len();
    loop {
        let rest = &line[at..];
        let word_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(rest.len());
        if word_end > 0 && rest[word_end..].starts_with(':') && !rest[word_end..].starts_with("::")
        {
            at += word_end + 1;
            at += line[at..].len() - line[at..].trim_start().len();
        } else {
            return at;
        }
    }
}

/// The completion predicate a wait writes (its first operand), as written.
fn wait_predicate(ins: &Instr, line: &str) -> Result<String, String> {
    let stmt = code(line);
    let stmt = &stmt[statement_start(stmt)..];
    let stmt = stmt.trim().trim_end_matches(';');
    let after_guard = match stmt.strip_prefix('@') {
        Some(r) => r.split_once(char::is_whitespace).map_or("", |(_, b)| b),
        None => stmt,
    };
    let ops = after_guard
        .trim_start()
        .split_once(char::is_whitespace)
        .map_or("", |(_, b)| b);
    let first = ops.split(',').next().unwrap_or("").trim();
    let ok = first.starts_with('%') || first.chars().next().is_some_and(|c| c.is_alphabetic());
    if !ok || first.contains('[') {
        return Err(format!(
            "PTX line {}: `{}`: the wait's first operand is not a predicate register",
            ins.line, ins.text
        ));
    }
    Ok(first.to_string())
}

/// `@!%p` for a statement guarded by `@%p` (and the reverse): when the wait did not run.
fn guard_negation(line: &str) -> Option<String> {
    let stmt = code(line);
    let stmt = stmt[statement_start(stmt)..].trim_start();
    let g = stmt.strip_prefix('@')?.split(char::is_whitespace).next()?;
    Some(match g.strip_prefix('!') {
        Some(p) => format!("@{p}"),
        None => format!("@!{g}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_before_a_statement_are_kept_before_it() {
        assert_eq!(statement_start("\tWAIT: mbarrier.x p;"), 7);
        assert_eq!(statement_start("  @p bra X;"), 2);
        assert_eq!(
            statement_start("mbarrier.try_wait.shared::cta.b64 p;"),
            0,
            "`shared::cta` is no label"
        );
    }

    #[test]
    fn guards_are_negated_as_written() {
        assert_eq!(
            guard_negation("\t@%p3 bar.sync 1;").as_deref(),
            Some("@!%p3")
        );
        assert_eq!(guard_negation("\t@!P1 bar.sync 1;").as_deref(), Some("@P1"));
        assert_eq!(guard_negation("\tbar.sync 1;"), None);
    }
}
