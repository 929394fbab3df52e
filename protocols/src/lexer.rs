//! Source text -> tokens.
//!
//! Newlines are tokens (they end statements) except where a line continues: inside `()` or
//! `[]`, and after a binary operator, `,`, `->`, `..`, `=` or `@`. Comments are not tokens but
//! are kept in [`Lexed::comments`] because `# phasecheck: allow(...)` comments mean something.

use crate::diagnostics::LoadError;
use crate::parser::starts_statement;
use crate::span::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tok {
    Ident,
    /// An integer literal with its value (0 after a reported lexical error).
    Int(i64),
    Newline,
    Semi,
    Comma,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    At,
    Arrow,
    DotDot,
    Assign,
    OrOr,
    AndAnd,
    EqEq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Pipe,
    Caret,
    Amp,
    Shl,
    Shr,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Bang,
    Eof,
}

impl Tok {
    /// How the token is described in "expected X, found Y" messages.
    pub fn describe(self) -> &'static str {
        match self {
            Tok::Ident => "a name",
            Tok::Int(_) => "an integer",
            Tok::Newline => "end of line",
            Tok::Semi => "`;`",
            Tok::Comma => "`,`",
            Tok::LParen => "`(`",
            Tok::RParen => "`)`",
            Tok::LBracket => "`[`",
            Tok::RBracket => "`]`",
            Tok::LBrace => "`{`",
            Tok::RBrace => "`}`",
            Tok::At => "`@`",
            Tok::Arrow => "`->`",
            Tok::DotDot => "`..`",
            Tok::Assign => "`=`",
            Tok::OrOr => "`||`",
            Tok::AndAnd => "`&&`",
            Tok::EqEq => "`==`",
            Tok::Ne => "`!=`",
            Tok::Lt => "`<`",
            Tok::Le => "`<=`",
            Tok::Gt => "`>`",
            Tok::Ge => "`>=`",
            Tok::Pipe => "`|`",
            Tok::Caret => "`^`",
            Tok::Amp => "`&`",
            Tok::Shl => "`<<`",
            Tok::Shr => "`>>`",
            Tok::Plus => "`+`",
            Tok::Minus => "`-`",
            Tok::Star => "`*`",
            Tok::Slash => "`/`",
            Tok::Percent => "`%`",
            Tok::Bang => "`!`",
            Tok::Eof => "end of file",
        }
    }

    /// A newline right after this token does not end the statement.
    fn continues_line(self) -> bool {
        matches!(
            self,
            Tok::Comma
                | Tok::Arrow
                | Tok::DotDot
                | Tok::Assign
                | Tok::At
                | Tok::OrOr
                | Tok::AndAnd
                | Tok::EqEq
                | Tok::Ne
                | Tok::Lt
                | Tok::Le
                | Tok::Gt
                | Tok::Ge
                | Tok::Pipe
                | Tok::Caret
                | Tok::Amp
                | Tok::Shl
                | Tok::Shr
                | Tok::Plus
                | Tok::Minus
                | Tok::Star
                | Tok::Slash
                | Tok::Percent
                | Tok::Bang
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: Tok,
    pub span: Span,
}

/// A `#` or `//` comment: `span` covers the comment, `text` is what follows the marker.
#[derive(Clone, Debug)]
pub struct Comment {
    pub span: Span,
    pub text_start: u32,
}

pub struct Lexed {
    pub tokens: Vec<Token>,
    pub comments: Vec<Comment>,
    pub errors: Vec<LoadError>,
}

pub fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

pub fn is_ident_continue(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

pub fn lex(text: &str) -> Lexed {
    let bytes = text.as_bytes();
    let mut tokens: Vec<Token> = Vec::new();
    let mut comments = Vec::new();
    let mut errors = Vec::new();
    // Open `(` and `[`: newlines inside them are not statement ends.
    let mut nesting: Vec<Tok> = Vec::new();
    let mut i = 0usize;
    let sp = |a: usize, b: usize| Span::new(a as u32, b as u32);
    while i < bytes.len() {
        let b = bytes[i];
        let start = i;
        let two = |c0: u8, c1: u8| b == c0 && bytes.get(i + 1) == Some(&c1);
        let push = |kind: Tok, len: usize, tokens: &mut Vec<Token>| {
            tokens.push(Token {
                kind,
                span: sp(start, start + len),
            });
            len
        };
        match b {
            b'\n' => {
                let in_parens = matches!(nesting.last(), Some(Tok::LParen | Tok::LBracket));
                let after_operator = tokens.last().is_some_and(|t| t.kind.continues_line());
                // A continuation line never starts with a statement: if one does, the `(`/`[`
                // or operator before it is the mistake. Ending the statement here keeps one
                // unclosed `(` from swallowing the rest of the file. A statement word followed
                // by what only continues an expression (`load * 2`, `wait)`) is a name there.
                let next_is_statement =
                    (in_parens || after_operator) && starts_statement_line(&text[i + 1..]);
                if next_is_statement {
                    nesting.retain(|t| *t == Tok::LBrace);
                }
                let continued = ((in_parens || after_operator) && !next_is_statement)
                    || tokens.last().is_none_or(|t| t.kind == Tok::Newline);
                if !continued {
                    push(Tok::Newline, 1, &mut tokens);
                }
                i += 1;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'#' => {
                let end = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                comments.push(Comment {
                    span: sp(i, end),
                    text_start: (i + 1) as u32,
                });
                i = end;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                comments.push(Comment {
                    span: sp(i, end),
                    text_start: (i + 2) as u32,
                });
                i = end;
            }
            b'0'..=b'9' => {
                let mut end = i;
                while end < bytes.len()
                    && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_')
                {
                    end += 1;
                }
                let word = &text[i..end];
                let value = match parse_int(word) {
                    Ok(v) => v,
                    Err(e) => {
                        errors.push(e.into_error(sp(i, end), word));
                        0
                    }
                };
                tokens.push(Token {
                    kind: Tok::Int(value),
                    span: sp(i, end),
                });
                i = end;
            }
            _ if is_ident_start(b as char) => {
                let mut end = i;
                while end < bytes.len() && is_ident_continue(bytes[end] as char) {
                    end += 1;
                }
                tokens.push(Token {
                    kind: Tok::Ident,
                    span: sp(i, end),
                });
                i = end;
            }
            _ => {
                let (kind, len) = if two(b'-', b'>') {
                    (Tok::Arrow, 2)
                } else if two(b'.', b'.') {
                    (Tok::DotDot, 2)
                } else if two(b'|', b'|') {
                    (Tok::OrOr, 2)
                } else if two(b'&', b'&') {
                    (Tok::AndAnd, 2)
                } else if two(b'=', b'=') {
                    (Tok::EqEq, 2)
                } else if two(b'!', b'=') {
                    (Tok::Ne, 2)
                } else if two(b'<', b'=') {
                    (Tok::Le, 2)
                } else if two(b'>', b'=') {
                    (Tok::Ge, 2)
                } else if two(b'<', b'<') {
                    (Tok::Shl, 2)
                } else if two(b'>', b'>') {
                    (Tok::Shr, 2)
                } else {
                    let k = match b {
                        b';' => Tok::Semi,
                        b',' => Tok::Comma,
                        b'(' => Tok::LParen,
                        b')' => Tok::RParen,
                        b'[' => Tok::LBracket,
                        b']' => Tok::RBracket,
                        b'{' => Tok::LBrace,
                        b'}' => Tok::RBrace,
                        b'@' => Tok::At,
                        b'=' => Tok::Assign,
                        b'<' => Tok::Lt,
                        b'>' => Tok::Gt,
                        b'|' => Tok::Pipe,
                        b'^' => Tok::Caret,
                        b'&' => Tok::Amp,
                        b'+' => Tok::Plus,
                        b'-' => Tok::Minus,
                        b'*' => Tok::Star,
                        b'/' => Tok::Slash,
                        b'%' => Tok::Percent,
                        b'!' => Tok::Bang,
                        _ => {
                            // Unknown character (possibly multi-byte): report it whole.
                            let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
                            let len = ch.len_utf8().max(1);
                            errors.push(unexpected_char(ch, sp(i, i + len)));
                            i += len;
                            continue;
                        }
                    };
                    (k, 1)
                };
                match kind {
                    Tok::LParen | Tok::LBracket | Tok::LBrace => nesting.push(kind),
                    Tok::RParen | Tok::RBracket | Tok::RBrace => {
                        let open = match kind {
                            Tok::RParen => Tok::LParen,
                            Tok::RBracket => Tok::LBracket,
                            _ => Tok::LBrace,
                        };
                        // Pop up to the matching opener; a stray closer changes nothing.
                        if let Some(pos) = nesting.iter().rposition(|&t| t == open) {
                            nesting.truncate(pos);
                        }
                    }
                    _ => {}
                }
                i += push(kind, len, &mut tokens);
            }
        }
    }
    tokens.push(Token {
        kind: Tok::Eof,
        span: sp(bytes.len(), bytes.len()),
    });
    Lexed {
        tokens,
        comments,
        errors,
    }
}

/// Whether a line (`rest`, from its start) starts a statement: its first word is a statement
/// word and what follows the word does not make it part of an expression (a binary operator
/// other than `-`, `)`, `]`, `,`, `..`, `->` or `@`; no statement word is followed by one).
fn starts_statement_line(rest: &str) -> bool {
    let rest = rest.trim_start_matches([' ', '\t', '\r']);
    let end = rest
        .find(|c: char| !is_ident_continue(c))
        .unwrap_or(rest.len());
    if !starts_statement(&rest[..end]) {
        return false;
    }
    let after = rest[end..].trim_start_matches([' ', '\t', '\r']);
    let continues = ["==", "!=", "..", "->"]
        .iter()
        .any(|op| after.starts_with(op))
        || (after.starts_with('/') && !after.starts_with("//"))
        || after.starts_with(['+', '*', '%', '|', '^', '&', '<', '>', ')', ']', ',', '@']);
    !continues
}

fn unexpected_char(ch: char, span: Span) -> LoadError {
    let help = match ch {
        '\'' | '"' => Some("`.phase` files have no strings".to_string()),
        '.' => Some("ranges are written `a..b`".to_string()),
        '~' => Some("use `!` for logical not; there is no bitwise not".to_string()),
        _ => None,
    };
    LoadError {
        code: "E0001",
        message: format!("unexpected character `{}`", ch.escape_debug()),
        span: Some(span),
        label: "not part of the language".into(),
        help,
    }
}

pub enum IntError {
    Digits,
    Overflow,
}

impl IntError {
    fn into_error(self, span: Span, word: &str) -> LoadError {
        match self {
            IntError::Digits => LoadError {
                code: "E0002",
                message: format!("invalid integer literal `{word}`"),
                span: Some(span),
                label: "not a number".into(),
                help: Some(
                    "integers are decimal, `0x` hex or `0b` binary, with optional `_` separators"
                        .into(),
                ),
            },
            IntError::Overflow => LoadError {
                code: "E0003",
                message: format!("integer literal `{word}` does not fit in 64 bits"),
                span: Some(span),
                label: "out of range".into(),
                help: Some(format!("the largest value is {}", i64::MAX)),
            },
        }
    }
}

/// Decimal, `0x` hex or `0b` binary with `_` separators; overflow is an error, not a wrap.
pub fn parse_int(word: &str) -> Result<i64, IntError> {
    let (digits, radix) = if let Some(h) = word.strip_prefix("0x").or(word.strip_prefix("0X")) {
        (h, 16)
    } else if let Some(b) = word.strip_prefix("0b").or(word.strip_prefix("0B")) {
        (b, 2)
    } else {
        (word, 10)
    };
    let mut value: i64 = 0;
    let mut any = false;
    for c in digits.chars() {
        if c == '_' {
            continue;
        }
        let d = c.to_digit(radix).ok_or(IntError::Digits)?;
        any = true;
        value = value
            .checked_mul(radix as i64)
            .and_then(|v| v.checked_add(d as i64))
            .ok_or(IntError::Overflow)?;
    }
    if !any {
        return Err(IntError::Digits);
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<Tok> {
        lex(s).tokens.into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn integers() {
        assert_eq!(parse_int("16_384").ok(), Some(16384));
        assert_eq!(parse_int("0x1F").ok(), Some(31));
        assert_eq!(parse_int("0b11").ok(), Some(3));
        assert!(matches!(parse_int("0x"), Err(IntError::Digits)));
        assert!(matches!(parse_int("12ab"), Err(IntError::Digits)));
        assert!(matches!(
            parse_int("9223372036854775808"),
            Err(IntError::Overflow)
        ));
        assert_eq!(parse_int("9223372036854775807").ok(), Some(i64::MAX));
    }

    #[test]
    fn lines_continue_after_operators_and_inside_parens() {
        assert_eq!(
            kinds("a +\n b\nc"),
            vec![
                Tok::Ident,
                Tok::Plus,
                Tok::Ident,
                Tok::Newline,
                Tok::Ident,
                Tok::Eof
            ]
        );
        assert_eq!(
            kinds("f(a\n, b)\n"),
            vec![
                Tok::Ident,
                Tok::LParen,
                Tok::Ident,
                Tok::Comma,
                Tok::Ident,
                Tok::RParen,
                Tok::Newline,
                Tok::Eof
            ]
        );
        // Inside braces newlines still end statements.
        assert_eq!(
            kinds("{\na\n}"),
            vec![
                Tok::LBrace,
                Tok::Newline,
                Tok::Ident,
                Tok::Newline,
                Tok::RBrace,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn an_unclosed_paren_does_not_swallow_the_next_statement() {
        assert_eq!(
            kinds("f(a\nwait"),
            vec![
                Tok::Ident,
                Tok::LParen,
                Tok::Ident,
                Tok::Newline,
                Tok::Ident,
                Tok::Eof
            ]
        );
        assert_eq!(
            kinds("a +\n  read"),
            vec![Tok::Ident, Tok::Plus, Tok::Newline, Tok::Ident, Tok::Eof]
        );
        // Inside braces, an open `(` of an outer level does not continue lines.
        assert_eq!(
            kinds("({\na"),
            vec![Tok::LParen, Tok::LBrace, Tok::Newline, Tok::Ident, Tok::Eof]
        );
    }

    #[test]
    fn comments_are_kept_and_range_is_not_a_number() {
        let l = lex("for s in 0..N # hi\n// there");
        assert_eq!(l.comments.len(), 2);
        assert!(l.tokens.iter().any(|t| t.kind == Tok::DotDot));
        assert!(l.errors.is_empty());
    }

    #[test]
    fn unknown_characters_are_errors() {
        let l = lex("a $ é");
        assert_eq!(l.errors.len(), 2);
        assert_eq!(l.errors[1].span, Some(Span::new(4, 6)));
    }
}
