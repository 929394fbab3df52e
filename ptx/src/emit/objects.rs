//! The protocol's objects, found from the traces before any statement is written: each statement
//! names a barrier or buffer by its place in these lists, so they must be complete first.

use super::*;

pub(super) struct SymObjects {
    pub(super) name: String,
    /// Barrier offsets in this symbol, in order (index = position).
    pub(super) bars: Vec<u64>,
    /// Buffer regions `[start, end)`, sorted.
    pub(super) regions: Vec<(u64, u64)>,
    pub(super) bar_name: String,
    pub(super) buf_name: String,
}

pub(super) struct Objects {
    pub(super) syms: Vec<SymObjects>,
}

impl Objects {
    pub(super) fn sym_of(shared: &[Placed], off: u64) -> Option<usize> {
        shared
            .iter()
            .enumerate()
            .filter(|(_, p)| p.base <= off && off < p.base + p.size.max(1))
            .max_by_key(|(_, p)| p.base)
            .map(|(i, _)| i)
    }

    /// `full[0]` / `bar` pieces for a barrier.
    pub(super) fn bar(&self, shared: &[Placed], a: SAddr) -> Vec<Piece> {
        let s = &self.syms[Self::sym_of(shared, a.off).expect("a known symbol")];
        let idx = s
            .bars
            .iter()
            .position(|&o| o == a.off)
            .expect("a known barrier");
        object_pieces(&s.bar_name, s.bars.len(), idx, a.rank)
    }

    /// ` bytes OFF .. +LEN` for an access of less than its region (language.md, "Byte
    /// ranges"), else nothing. The offset is an integer piece, so that roles and loops fold it
    /// (`4 * tid`, `k % 2 * 256 + ...`); the length is text, so that accesses of different
    /// lengths are different statements (it must be a constant).
    pub(super) fn bytes(&self, shared: &[Placed], r: Range) -> Vec<Piece> {
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

    pub(super) fn buf(&self, shared: &[Placed], r: Range) -> Vec<Piece> {
        let s = &self.syms[Self::sym_of(shared, r.at.off).expect("a known symbol")];
        let idx = s
            .regions
            .iter()
            .position(|&(a, b)| a <= r.at.off && r.at.off < b)
            .expect("a known region");
        object_pieces(&s.buf_name, s.regions.len(), idx, r.at.rank)
    }
}

/// `name`, `name[idx]` when the symbol holds several, and ` @ rank` when the address names a
/// block. The index and rank are integer pieces, so that roles and loops fold them (`full[k % 2]`).
fn object_pieces(name: &str, count: usize, idx: usize, rank: Option<u32>) -> Vec<Piece> {
    let mut p = vec![Piece::T(name.to_string())];
    if count > 1 {
        p.push(Piece::T("[".into()));
        p.push(Piece::I(idx as i64));
        p.push(Piece::T("]".into()));
    }
    if let Some(r) = rank {
        p.push(Piece::T(" @ ".into()));
        p.push(Piece::I(r as i64));
    }
    p
}

/// A readable name for a (maybe mangled) PTX symbol: `_ZZ13double_bufferE4full` -> `full`.
pub(crate) fn demangle_local(name: &str) -> String {
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

pub(super) fn collect_objects(inp: &Input, notes: &mut Vec<String>) -> Result<Objects, Error> {
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
        let mut unique = |n: String| fresh_name(&mut used_names, &n, "_");
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

/// `base`, or `base{sep}2`, `base{sep}3`, ... : the first not `taken`, which it joins.
pub(super) fn fresh_name(taken: &mut BTreeSet<String>, base: &str, sep: &str) -> String {
    let mut name = base.to_string();
    let mut k = 2;
    while taken.contains(&name) {
        name = format!("{base}{sep}{k}");
        k += 1;
    }
    taken.insert(name.clone());
    name
}
