//! Which shared accesses keep their bytes: instructions whose per-thread offsets fold into one
//! function of `tid`, part writes, and the value tags of same-value stores.

use super::*;

/// The instructions whose accesses keep their bytes: at every occurrence, the offsets of the
/// threads that run it are one function of `tid` that the role folding can write (`fit`). A
/// swizzled layout (Triton's shared tiles) is not; its accesses fall back to `write part X`
/// (when no other thread ever stores to its bytes: [`part_writes`]) or a whole-region access,
/// rather than splitting the role into one `if` per thread.
pub(super) fn ranged_instrs(inp: &Input, objs: &Objects) -> std::collections::HashSet<u32> {
    if inp.whole_buffers {
        return std::collections::HashSet::new();
    }
    // Per (instruction, occurrence): (tid, offset in its region, length).
    type Points = Vec<(i64, i64, u64)>;
    let mut per: HashMap<(u32, usize), Points> = HashMap::new();
    let mut count: HashMap<(u32, u32, u32), usize> = HashMap::new();
    for t in &inp.traces {
        for e in &t.events {
            let r = match &e.ev {
                Ev::Read(r) | Ev::Write(r, _) | Ev::Mma(r) => *r,
                _ => continue,
            };
            let Some(s) = Objects::sym_of(inp.shared, r.at.off) else {
                continue;
            };
            let Some(&(a, _)) = objs.syms[s]
                .regions
                .iter()
                .find(|&&(a, b)| a <= r.at.off && r.at.off < b)
            else {
                continue;
            };
            let n = count.entry((t.rank, t.tid, e.instr)).or_default();
            per.entry((e.instr, *n)).or_default().push((
                i64::from(t.tid),
                (r.at.off - a) as i64,
                r.len,
            ));
            *n += 1;
        }
    }
    let mut bad = std::collections::HashSet::new();
    let mut all = std::collections::HashSet::new();
    for ((instr, _), mut pts) in per {
        all.insert(instr);
        pts.sort_unstable();
        pts.dedup();
        let xy: Vec<(i64, i64)> = pts.iter().map(|&(x, y, _)| (x, y)).collect();
        let one_len = pts.iter().all(|p| p.2 == pts[0].2);
        // Fitted as the role folding will (thread indices: `periodic` off, swizzles included).
        if !one_len || fit(&xy, false).is_none() {
            bad.insert(instr);
        }
    }
    all.difference(&bad).copied().collect()
}

/// Decide for every shared store whether it is a part write: it covers less than its region
/// and no store of another thread overlaps it.
pub(super) fn part_writes(inp: &Input, objs: &Objects) -> HashMap<(u32, u32, usize), bool> {
    // Per region: (start, end, thread, event) of every store.
    type Store = (u64, u64, (u32, u32), usize);
    let mut per: HashMap<(usize, u64), Vec<Store>> = HashMap::new();
    for t in &inp.traces {
        for (i, e) in t.events.iter().enumerate() {
            if let Ev::Write(r, _) = &e.ev
                && let Some(s) = Objects::sym_of(inp.shared, r.at.off)
                && let Some(&(a, _)) = objs.syms[s]
                    .regions
                    .iter()
                    .find(|&&(a, b)| a <= r.at.off && r.at.off < b)
            {
                per.entry((s, a)).or_default().push((
                    r.at.off,
                    r.at.off + r.len,
                    (t.rank, t.tid),
                    i,
                ));
            }
        }
    }
    let mut out = HashMap::new();
    for ((s, a), mut ws) in per {
        let region = objs.syms[s]
            .regions
            .iter()
            .copied()
            .find(|&(x, _)| x == a)
            .expect("a region");
        ws.sort_unstable_by_key(|w| (w.0, w.1));
        let mut shared_with_other = vec![false; ws.len()];
        for i in 0..ws.len() {
            let mut j = i + 1;
            while j < ws.len() && ws[j].0 < ws[i].1 {
                if ws[j].2 != ws[i].2 {
                    shared_with_other[i] = true;
                    shared_with_other[j] = true;
                }
                j += 1;
            }
        }
        for (k, w) in ws.iter().enumerate() {
            let whole = w.0 <= region.0 && w.1 >= region.1;
            out.insert((w.2.0, w.2.1, w.3), !whole && !shared_with_other[k]);
        }
    }
    out
}

/// The value tags of stores (`write X value N`): a store instruction whose every run, by any
/// thread, stores the same known bytes at the same address gets the tag of that (address,
/// element size, bytes), numbered from 1 in the order the traces first meet them. Equal tags
/// are equal bytes at equal addresses, stored by accesses of equal size (a race between
/// accesses that overlap only partly is one PTX's axioms do not cover), so the checker may
/// take two unordered writes with one tag as the same bytes (`same-value-store`). An instruction some run of which stores unknown bytes, or
/// other bytes, or at another address (a loop over a tile, a per-thread value) gets none: the
/// statements of its threads stay the same, and the checker treats the writes as any write.
pub(super) fn value_tags(inp: &Input, notes: &mut Vec<String>) -> HashMap<(u32, u32, usize), u32> {
    type Content = (SAddr, u32, Vec<u8>);
    // Per store instruction: its one content so far, or `None` once two runs differ.
    let mut per_instr: HashMap<u32, Option<Content>> = HashMap::new();
    for t in &inp.traces {
        for e in &t.events {
            if let Ev::Write(r, bytes) = &e.ev {
                let seen = bytes.as_ref().map(|(e, b)| (r.at, *e, b.clone()));
                per_instr
                    .entry(e.instr)
                    .and_modify(|c| {
                        if c.is_some() && *c != seen {
                            *c = None;
                        }
                    })
                    .or_insert(seen);
            }
        }
    }
    let mut tags: Vec<Content> = Vec::new();
    let mut out = HashMap::new();
    for t in &inp.traces {
        for (i, e) in t.events.iter().enumerate() {
            if !matches!(e.ev, Ev::Write(..)) {
                continue;
            }
            let Some(Some(c)) = per_instr.get(&e.instr) else {
                continue;
            };
            let tag = match tags.iter().position(|x| x == c) {
                Some(k) => k + 1,
                None => {
                    tags.push(c.clone());
                    tags.len()
                }
            };
            out.insert((t.rank, t.tid, i), tag as u32);
        }
    }
    if !tags.is_empty() {
        let what: Vec<String> = tags
            .iter()
            .enumerate()
            .map(|(k, (at, elem, bytes))| {
                let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
                let elems = bytes.len() / (*elem as usize).max(1);
                let shape = if elems > 1 {
                    format!(" ({elems} stores of {elem} bytes)")
                } else {
                    String::new()
                };
                let place = match Objects::sym_of(inp.shared, at.off) {
                    Some(s) => format!("`{}`+{}", inp.shared[s].name, at.off - inp.shared[s].base),
                    None => format!("shared byte {}", at.off),
                };
                let peer = at.rank.map_or(String::new(), |r| format!(" of block {r}"));
                format!("{} = {}{shape} at {place}{peer}", k + 1, hex.join(" "))
            })
            .collect();
        const SHOWN: usize = 8;
        let more = match what.len().saturating_sub(SHOWN) {
            0 => String::new(),
            n => format!("; and {n} more"),
        };
        notes.push(format!(
            "`value N` on a write names the bytes it stores, the same in every run of its \
             instruction (equal numbers: equal bytes at equal addresses): {}{more}",
            what[..what.len().min(SHOWN)].join("; ")
        ));
    }
    out
}
