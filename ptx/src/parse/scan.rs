//! Scanner: PTX text -> items (statements, braces, labels, line directives), the way ptxas
//! splits it: a statement ends at `;` outside brackets, whatever the blanks around it.

use super::*;

// Scanner: text -> items.

#[derive(Debug)]
pub(super) enum Item {
    Stmt {
        text: String,
        line: u32,
    },
    Open {
        line: u32,
    },
    Close {
        line: u32,
    },
    Label {
        name: String,
        line: u32,
    },
    /// A directive that ends at the end of its line (`.loc`, `.file`, `.version`, ...).
    LineDir {
        text: String,
        line: u32,
    },
}

pub(super) const LINE_DIRECTIVES: [&str; 5] =
    [".version", ".target", ".address_size", ".loc", ".file"];
pub(super) const HEADER_WORDS: [&str; 5] = [".visible", ".entry", ".func", ".weak", ".extern"];

pub(super) fn scan(text: &str) -> Result<Vec<Item>, ParseError> {
    let b = text.as_bytes();
    let mut items = Vec::new();
    let mut i = 0usize;
    let mut line = 1u32;
    let mut cur = String::new();
    let mut cur_line = 1u32;
    // Nesting of `[ ( {` inside the current statement.
    let mut depth = 0i32;
    while i < b.len() {
        let c = b[i];
        // Comments.
        if c == b'/' && i + 1 < b.len() && b[i + 1] == b'/' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && i + 1 < b.len() && b[i + 1] == b'*' {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                if b[i] == b'\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 2;
            continue;
        }
        if c == b'"' {
            // A string (in `.file` or `.pragma`): copy as is.
            if cur.trim().is_empty() {
                cur_line = line;
            }
            cur.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\n' {
                    line += 1;
                }
                cur.push(b[i] as char);
                i += 1;
            }
            cur.push('"');
            i += 1;
            continue;
        }
        if c == b'\n' {
            line += 1;
            if !cur.is_empty() {
                cur.push(' ');
            }
            i += 1;
            continue;
        }
        let empty = cur.trim().is_empty();
        if empty {
            cur.clear();
            if c.is_ascii_whitespace() {
                i += 1;
                continue;
            }
            cur_line = line;
            // Directives that end with their line.
            if c == b'.' {
                let rest = &text[i..];
                if let Some(d) = LINE_DIRECTIVES.iter().find(|d| {
                    rest.starts_with(**d)
                        && rest[d.len()..]
                            .chars()
                            .next()
                            .is_none_or(|ch| ch.is_whitespace())
                }) {
                    let _ = d;
                    let end = rest.find('\n').unwrap_or(rest.len());
                    let mut t = rest[..end].to_string();
                    if let Some(p) = t.find("//") {
                        t.truncate(p);
                    }
                    let t = t.trim().trim_end_matches(';').trim().to_string();
                    items.push(Item::LineDir { text: t, line });
                    i += end;
                    continue;
                }
                if rest.starts_with(".section") {
                    // Skip the section and its `{ ... }` block.
                    let open = rest.find('{');
                    let semi = rest.find(';');
                    match (open, semi) {
                        (Some(o), s) if s.is_none_or(|s| o < s) => {
                            let mut j = i + o + 1;
                            let mut d = 1;
                            while j < b.len() && d > 0 {
                                match b[j] {
                                    b'{' => d += 1,
                                    b'}' => d -= 1,
                                    b'\n' => line += 1,
                                    _ => {}
                                }
                                j += 1;
                            }
                            // Count the newlines between i and the brace.
                            line += text[i..i + o].matches('\n').count() as u32;
                            i = j;
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            if c == b'{' {
                items.push(Item::Open { line });
                i += 1;
                continue;
            }
            if c == b'}' {
                items.push(Item::Close { line });
                i += 1;
                continue;
            }
        }
        match c {
            b'{' if depth == 0 && is_header(&cur) => {
                items.push(Item::Stmt {
                    text: cur.trim().to_string(),
                    line: cur_line,
                });
                cur.clear();
                items.push(Item::Open { line });
                i += 1;
            }
            b'[' | b'(' | b'{' => {
                depth += 1;
                cur.push(c as char);
                i += 1;
            }
            b']' | b')' | b'}' => {
                depth -= 1;
                cur.push(c as char);
                i += 1;
            }
            b';' if depth <= 0 => {
                depth = 0;
                items.push(Item::Stmt {
                    text: cur.trim().to_string(),
                    line: cur_line,
                });
                cur.clear();
                i += 1;
            }
            b':' if depth == 0
                && b.get(i + 1) != Some(&b':')
                && !cur.ends_with(':')
                && is_label_name(cur.trim()) =>
            {
                items.push(Item::Label {
                    name: cur.trim().to_string(),
                    line: cur_line,
                });
                cur.clear();
                i += 1;
            }
            _ => {
                cur.push(c as char);
                i += 1;
            }
        }
    }
    if !cur.trim().is_empty() {
        return Err(ParseError {
            line: cur_line,
            message: format!("unterminated statement `{}`", cur.trim()),
        });
    }
    Ok(items)
}

pub(super) fn is_header(cur: &str) -> bool {
    let t = cur.trim_start();
    HEADER_WORDS.iter().any(|w| t.starts_with(w)) && (t.contains(".entry") || t.contains(".func"))
}

pub(super) fn is_label_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$' || c == '%')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}
