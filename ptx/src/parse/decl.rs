//! Declarations: function headers and their parameters, module-scope symbols, and the
//! directives of a function body (`.reg`, `.shared`, `.local`, ...).

use super::*;

pub(super) fn type_size(ty: &str) -> u64 {
    match ty.trim_start_matches('.') {
        "b8" | "u8" | "s8" | "pred" => 1,
        "b16" | "u16" | "s16" | "f16" | "bf16" => 2,
        "b32" | "u32" | "s32" | "f32" | "f16x2" | "bf16x2" => 4,
        "b64" | "u64" | "s64" | "f64" => 8,
        "b128" => 16,
        _ => 0,
    }
}

/// `.visible .entry name( .param .u64 name_param_0, ... ) .maxntid 160, 1, 1`
pub(super) fn parse_header(text: &str, line: u32) -> Result<Function, ParseError> {
    let entry = text.contains(".entry");
    // Return parameters of a `.func`: `.func (.param .b32 retval) name (...)`.
    let kw = if entry { ".entry" } else { ".func" };
    let after = &text[text.find(kw).expect("checked") + kw.len()..];
    let mut rest = after.trim_start();
    if rest.starts_with('(') {
        // Skip the return parameter list.
        let close = rest.find(')').ok_or_else(|| ParseError {
            line,
            message: "unclosed return parameter list".into(),
        })?;
        rest = rest[close + 1..].trim_start();
    }
    let name_end = rest
        .find(|c: char| c == '(' || c.is_whitespace())
        .unwrap_or(rest.len());
    let name = rest[..name_end].to_string();
    rest = rest[name_end..].trim_start();
    let mut params = Vec::new();
    if rest.starts_with('(') {
        let close = rest.find(')').ok_or_else(|| ParseError {
            line,
            message: format!("unclosed parameter list of `{name}`"),
        })?;
        for p in rest[1..close].split(',') {
            let p = p.trim();
            if p.is_empty() {
                continue;
            }
            params.push(parse_param_decl(p));
        }
        rest = &rest[close + 1..];
    }
    let dims = |key: &str| -> Option<[u32; 3]> {
        let pos = rest.find(key)?;
        let tail = &rest[pos + key.len()..];
        let mut v = [1u32; 3];
        let mut n = 0;
        for w in tail.split(',') {
            let w = w.trim();
            let num: String = w.chars().take_while(|c| c.is_ascii_digit()).collect();
            if num.is_empty() || n == 3 {
                break;
            }
            v[n] = num.parse().ok()?;
            n += 1;
            if num.len() != w.len() {
                break;
            }
        }
        (n > 0).then_some(v)
    };
    Ok(Function {
        name,
        entry,
        params,
        symbols: Vec::new(),
        instrs: Vec::new(),
        labels: HashMap::new(),
        regs: Vec::new(),
        reqntid: dims(".reqntid"),
        maxntid: dims(".maxntid"),
        reqnctapercluster: dims(".reqnctapercluster"),
        line,
    })
}

/// `.param .u64 name` / `.param .align 64 .b8 name[128]` / `.param .u64 .ptr .global .align 1 name`
pub(super) fn parse_param_decl(p: &str) -> ParamDecl {
    let words: Vec<&str> = p.split_whitespace().collect();
    let mut align = 0;
    let mut ty = String::new();
    let mut name = String::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if w == ".align" {
            align = words.get(i + 1).and_then(|a| a.parse().ok()).unwrap_or(0);
            i += 2;
            continue;
        }
        if w.starts_with('.') {
            if type_size(w) > 0 {
                ty = w.to_string();
            }
        } else {
            name = w.to_string();
        }
        i += 1;
    }
    let mut size = type_size(&ty);
    if let Some(open) = name.find('[') {
        let n: u64 = name[open + 1..].trim_end_matches(']').parse().unwrap_or(0);
        size *= n;
        name.truncate(open);
    }
    if align == 0 {
        align = type_size(&ty).max(1);
    }
    ParamDecl {
        name,
        size,
        align,
        ty,
    }
}

/// `.shared .align 8 .b8 name[16]` (also `.global`, `.const`, `.local`, `.extern .shared`).
pub(super) fn parse_symbol(text: &str, line: u32) -> Result<Option<Symbol>, ParseError> {
    let decl = text.split('=').next().unwrap_or(text);
    let words: Vec<&str> = decl.split_whitespace().collect();
    let space = if words.contains(&".shared") {
        Space::Shared
    } else if words.contains(&".global") {
        Space::Global
    } else if words.contains(&".const") {
        Space::Const
    } else if words.contains(&".local") {
        Space::Local
    } else {
        return Ok(None);
    };
    let mut align = 1;
    let mut elem = 0;
    let mut name = String::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if w == ".align" {
            align = words.get(i + 1).and_then(|a| a.parse().ok()).unwrap_or(1);
            i += 2;
            continue;
        }
        if w.starts_with('.') {
            if type_size(w) > 0 {
                elem = type_size(w);
            }
        } else {
            name = w.to_string();
        }
        i += 1;
    }
    if name.is_empty() {
        return Err(ParseError {
            line,
            message: format!("cannot read the declaration `{text}`"),
        });
    }
    let mut size = Some(elem.max(1));
    // Names may carry several dimensions: `x[2][16]`.
    if let Some(open) = name.find('[') {
        let dims = name[open..].to_string();
        name.truncate(open);
        let mut total = elem.max(1);
        for d in dims.split('[').skip(1) {
            let d = d.trim_end_matches(']').trim();
            if d.is_empty() {
                size = None;
                break;
            }
            total *= d.parse::<u64>().unwrap_or(1);
        }
        if size.is_some() {
            size = Some(total);
        }
    }
    Ok(Some(Symbol {
        name,
        space,
        size,
        align,
        line,
    }))
}

pub(super) fn body_directive(fb: &mut FnBuilder, text: &str, line: u32) -> Result<(), ParseError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    match words[0] {
        ".reg" => {
            // `.reg .b32 %r<124>;` or `.reg .pred p, q;` (maybe `.reg .v2 .b32 ...`).
            let names: String = words
                .iter()
                .skip(1)
                .filter(|w| !w.starts_with('.'))
                .copied()
                .collect::<Vec<_>>()
                .join(" ");
            for n in names.split(',') {
                let n = n.trim();
                if n.is_empty() {
                    continue;
                }
                if let Some(open) = n.find('<') {
                    let count: u32 =
                        n[open + 1..]
                            .trim_end_matches('>')
                            .trim()
                            .parse()
                            .map_err(|_| ParseError {
                                line,
                                message: format!("bad register range `{n}`"),
                            })?;
                    fb.declare_range(&n[..open], count);
                } else {
                    fb.declare(n);
                }
            }
        }
        ".shared" | ".local" | ".global" | ".const" | ".extern" => {
            if let Some(sym) = parse_symbol(text, line)? {
                fb.f.symbols.push(sym);
            }
        }
        // `.param` inside a call sequence declares a parameter buffer; others are hints.
        ".param" => {
            let p = parse_param_decl(text);
            fb.f.symbols.push(Symbol {
                name: p.name,
                space: Space::Local,
                size: Some(p.size.max(8)),
                align: p.align,
                line,
            });
        }
        _ => {}
    }
    Ok(())
}
