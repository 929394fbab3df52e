//! Instructions: guard, opcode and operands (registers, immediates, addresses, vectors).

use super::*;

pub(super) fn parse_instr(fb: &FnBuilder, text: &str, line: u32) -> Result<Instr, ParseError> {
    let mut t = text.trim();
    let mut guard = None;
    if let Some(rest) = t.strip_prefix('@') {
        let end = rest.find(char::is_whitespace).ok_or_else(|| ParseError {
            line,
            message: format!("a guard without an instruction: `{text}`"),
        })?;
        let g = &rest[..end];
        let (neg, name) = match g.strip_prefix('!') {
            Some(n) => (true, n),
            None => (false, g),
        };
        let id = fb.resolve(name).ok_or_else(|| ParseError {
            line,
            message: format!("undeclared predicate `{name}` in `{text}`"),
        })?;
        guard = Some((id, neg));
        t = rest[end..].trim_start();
    }
    // The opcode is a run of identifier characters, dots and `::` (`shared::cta`); the
    // operands begin at the first other character, as ptxas reads it: inline assembly built
    // by string concatenation writes `wgmma...e4m3.e4m3{%f1, ...}` with no blank before `{`.
    let op_end = t
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == ':'))
        .unwrap_or(t.len());
    let opcode = &t[..op_end];
    if opcode.is_empty() {
        return Err(ParseError {
            line,
            message: format!("an instruction without an opcode: `{text}`"),
        });
    }
    let parts: Vec<String> = opcode.split('.').map(str::to_string).collect();
    let ops_text = t[op_end..].trim();
    let mut operands = Vec::new();
    for o in split_top(ops_text, ',') {
        let o = o.trim();
        if o.is_empty() {
            continue;
        }
        operands.push(parse_operand(fb, o, line)?);
    }
    Ok(Instr {
        line,
        src: None,
        guard,
        parts,
        operands,
        text: t.to_string(),
        target: None,
    })
}

/// Split at `sep` outside brackets, braces and parentheses.
pub(super) fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '{' | '(' => depth += 1,
            ']' | '}' | ')' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

pub(super) fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let s = s.trim_end_matches(['U', 'u']);
    let v: i64 = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()? as i64
    } else if s.len() > 1 && s.starts_with('0') && s.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        u64::from_str_radix(&s[1..], 8).ok()? as i64
    } else {
        s.parse::<u64>().ok()? as i64
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

pub(super) fn parse_operand(fb: &FnBuilder, o: &str, line: u32) -> Result<Operand, ParseError> {
    let o = o.trim();
    if o == "_" {
        return Ok(Operand::Sink);
    }
    if let Some(inner) = o.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        let parts = split_top(inner, ',');
        if parts.len() >= 2 {
            let map = parse_operand(fb, parts[0], line)?;
            let coords = match parse_operand(fb, parts[1], line)? {
                Operand::Vector(v) => v,
                other => vec![other],
            };
            return Ok(Operand::TensorAddr {
                map: Box::new(map),
                coords,
            });
        }
        return parse_address(fb, inner.trim(), line);
    }
    if let Some(inner) = o
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .or_else(|| o.strip_prefix('(').and_then(|r| r.strip_suffix(')')))
    {
        let mut v = Vec::new();
        for p in split_top(inner, ',') {
            if !p.trim().is_empty() {
                v.push(parse_operand(fb, p, line)?);
            }
        }
        return Ok(Operand::Vector(v));
    }
    if let Some((a, b)) = o.split_once('|') {
        return Ok(Operand::Pair(
            Box::new(parse_operand(fb, a, line)?),
            Box::new(parse_operand(fb, b, line)?),
        ));
    }
    if let Some(r) = o.strip_prefix('!') {
        return Ok(Operand::Not(Box::new(parse_operand(fb, r, line)?)));
    }
    if let Some(v) = parse_int(o) {
        return Ok(Operand::Imm(v));
    }
    let lower = o.to_ascii_lowercase();
    // `0f3F800000` (f32 bits), `0d3FF0000000000000` (f64 bits): the bits are the value.
    if (lower.starts_with("0f") && o.len() == 10 || lower.starts_with("0d") && o.len() == 18)
        && o[2..].bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Ok(Operand::Imm(
            u64::from_str_radix(&o[2..], 16).unwrap_or(0) as i64
        ));
    }
    if o.parse::<f64>().is_ok() {
        return Ok(Operand::Float);
    }
    if let Some(id) = fb.resolve(o) {
        return Ok(Operand::Reg(id));
    }
    if o.starts_with('%') {
        return Ok(Operand::Special(o.to_string()));
    }
    Ok(Operand::Sym(o.to_string()))
}

/// Inside `[...]`: `%r5`, `%r5+1024`, `sym`, `sym+8`, `%rd1+-4`, `1024`.
pub(super) fn parse_address(fb: &FnBuilder, s: &str, line: u32) -> Result<Operand, ParseError> {
    if let Some(v) = parse_int(s) {
        return Ok(Operand::Addr {
            base: None,
            offset: v,
        });
    }
    // Split at the first + or - after the base name.
    let cut = s
        .char_indices()
        .skip(1)
        .find(|&(_, c)| c == '+' || c == '-')
        .map(|(i, _)| i);
    let (base, off) = match cut {
        Some(i) => {
            let off_text = s[i..].trim();
            let off_text = off_text.strip_prefix('+').unwrap_or(off_text).trim();
            let off = parse_int(off_text).ok_or_else(|| ParseError {
                line,
                message: format!("cannot read the address `[{s}]`"),
            })?;
            (s[..i].trim(), off)
        }
        None => (s, 0),
    };
    let base = parse_operand(fb, base, line)?;
    Ok(Operand::Addr {
        base: Some(Box::new(base)),
        offset: off,
    })
}
