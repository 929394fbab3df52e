//! Warnings about the values the user gave (`--arg`, `--launch`): values that make the kernel
//! do nothing, and copies they make run past their buffer into another (issue 23 point 3: a
//! kernel whose parameters were all answered with 0 verified `ok` in 33 states without a word).

use crate::events::{CopyBytes, Ev, Trace};
use crate::exec::Placed;
use crate::parse::Function;
use std::collections::{BTreeSet, HashMap};

/// The warnings for the threads' runs `traces` under the given values.
pub(crate) fn warnings(
    traces: &[Trace],
    shared: &[Placed],
    func: &Function,
    map_bytes: &HashMap<(u32, u64), i64>,
) -> Vec<String> {
    let mut out = Vec::new();
    let work = traces.iter().flat_map(|t| &t.events).any(|e| {
        matches!(
            e.ev,
            Ev::Copy { .. }
                | Ev::TmaStore { .. }
                | Ev::CpAsync { .. }
                | Ev::WaitParity { .. }
                | Ev::Poll { .. }
                | Ev::WaitToken { .. }
                | Ev::Read(_)
                | Ev::Write(..)
                | Ev::Mma(_)
        )
    });
    if !work {
        out.push(format!(
            "with the given values kernel `{}` does no work: no thread copies, waits on an \
             mbarrier or touches shared memory (a trip count or size read from a parameter may \
             be 0: check the --arg values or the launch), so `ok` says nothing about it",
            func.name
        ));
    }
    let mut seen = BTreeSet::new();
    for t in traces {
        for e in &t.events {
            let (dst, len) = match &e.ev {
                Ev::Copy {
                    dst,
                    bytes: CopyBytes::Known(n),
                    ..
                } => (*dst, *n as u64),
                Ev::Copy {
                    dst,
                    bytes: CopyBytes::TensorMap { param: Some(p) },
                    ..
                } => match map_bytes.get(p) {
                    Some(&n) => (*dst, n as u64),
                    None => continue,
                },
                _ => continue,
            };
            let Some(sym) = shared
                .iter()
                .find(|s| s.base <= dst.off && dst.off < s.base + s.size)
            else {
                continue;
            };
            let end = dst.off + len;
            if end <= sym.base + sym.size {
                continue;
            }
            let line = func.instrs[e.instr as usize].line;
            if !seen.insert(line) {
                continue;
            }
            let into: Vec<&str> = shared
                .iter()
                .filter(|s| s.base < end && dst.off < s.base + s.size && s.name != sym.name)
                .map(|s| s.name.as_str())
                .collect();
            out.push(format!(
                "with the given values the copy at PTX line {line} writes {len} bytes at byte {} \
                 of `{}` ({} bytes): it runs past its end{}",
                dst.off - sym.base,
                sym.name,
                sym.size,
                if into.is_empty() {
                    String::new()
                } else {
                    format!(" into `{}`", into.join("`, `"))
                }
            ));
        }
    }
    out
}
