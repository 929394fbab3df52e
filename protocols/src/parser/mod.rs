//! Tokens -> syntax tree, recovering at statement level.
//!
//! A statement that does not parse is reported and skipped up to the next `;`, newline or the
//! `}` that closes its block, so one run reports every independent syntax error. Nesting is
//! bounded ([`MAX_BLOCK_DEPTH`], [`MAX_EXPR_DEPTH`]) so that no input can exhaust the stack.

mod exprs;
mod keywords;
mod stmts;

use keywords::is_builtin;
pub(crate) use keywords::starts_statement;
pub use keywords::{BUILTIN_NAMES, KEYWORDS};

use crate::ast::*;
use crate::diagnostics::LoadError;
use crate::lexer::{Tok, Token};
use crate::span::Span;

/// Deepest nesting of `{ }` blocks.
pub const MAX_BLOCK_DEPTH: u32 = 64;
/// Deepest expression tree (parentheses, operators, unary chains).
pub const MAX_EXPR_DEPTH: u32 = 64;
/// The error has been recorded; the caller recovers.
#[derive(Debug)]
pub struct Fail;
type R<T> = Result<T, Fail>;

/// What a declared name names: a value (parameter, local, loop variable; the builtins are
/// reserved there) or anything else (object, role, protocol), where every word may be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NameKind {
    Value,
    Other,
}

pub struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    pos: usize,
    pub errors: Vec<LoadError>,
    block_depth: u32,
    expr_depth: u32,
}

pub fn parse(src: &str, toks: Vec<Token>) -> (File, Vec<LoadError>) {
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        errors: Vec::new(),
        block_depth: 0,
        expr_depth: 0,
    };
    let file = p.file();
    (file, p.errors)
}

impl<'a> Parser<'a> {
    // ---- token helpers ----

    fn peek(&self) -> Token {
        self.toks[self.pos.min(self.toks.len() - 1)]
    }

    fn peek_at(&self, n: usize) -> Token {
        self.toks[(self.pos + n).min(self.toks.len() - 1)]
    }

    fn kind(&self) -> Tok {
        self.peek().kind
    }

    fn text(&self, t: Token) -> &'a str {
        self.src
            .get(t.span.start as usize..t.span.end as usize)
            .unwrap_or("")
    }

    fn bump(&mut self) -> Token {
        let t = self.peek();
        if t.kind != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    /// Span of the last consumed token.
    fn prev_span(&self) -> Span {
        if self.pos == 0 {
            Span::new(0, 0)
        } else {
            self.toks[self.pos - 1].span
        }
    }

    fn at_word(&self, w: &str) -> bool {
        let t = self.peek();
        t.kind == Tok::Ident && self.text(t) == w
    }

    fn eat(&mut self, k: Tok) -> Option<Span> {
        if self.kind() == k {
            Some(self.bump().span)
        } else {
            None
        }
    }

    fn eat_word(&mut self, w: &str) -> Option<Span> {
        if self.at_word(w) {
            Some(self.bump().span)
        } else {
            None
        }
    }

    fn found(&self) -> String {
        let t = self.peek();
        match t.kind {
            Tok::Ident => format!("`{}`", self.text(t)),
            Tok::Int(_) => format!("`{}`", self.text(t)),
            k => k.describe().to_string(),
        }
    }

    fn error_here(&mut self, expected: &str) -> Fail {
        let t = self.peek();
        let message = format!("expected {expected}, found {}", self.found());
        self.errors.push(LoadError {
            code: "E0101",
            message,
            span: Some(t.span),
            label: format!("expected {expected}"),
            help: None,
        });
        Fail
    }

    fn push(&mut self, code: &'static str, message: String, span: Span, label: &str) {
        self.errors.push(LoadError {
            code,
            message,
            span: Some(span),
            label: label.into(),
            help: None,
        });
    }

    fn expect(&mut self, k: Tok) -> R<Span> {
        match self.eat(k) {
            Some(s) => Ok(s),
            None => Err(self.error_here(k.describe())),
        }
    }

    fn expect_word(&mut self, w: &str) -> R<Span> {
        match self.eat_word(w) {
            Some(s) => Ok(s),
            None => Err(self.error_here(&format!("`{w}`"))),
        }
    }

    /// A name. Every word can be one (statement words are contextual), but a builtin
    /// (`tid`, `min`, ...) cannot name a value: see [`NameKind`].
    fn name(&mut self, what: &str, kind: NameKind) -> R<Name> {
        let t = self.peek();
        if t.kind != Tok::Ident {
            return Err(self.error_here(what));
        }
        let text = self.text(t);
        self.bump();
        if kind == NameKind::Value && is_builtin(text) {
            self.errors.push(LoadError {
                code: "E0102",
                message: format!("`{text}` is a builtin and cannot be used as a name"),
                span: Some(t.span),
                label: "builtin".into(),
                help: Some(format!(
                    "parameters, locals and loop variables share one namespace with the builtins \
                     ({}); choose another name, e.g. `{text}_`",
                    BUILTIN_NAMES.join(", ")
                )),
            });
            return Err(Fail);
        }
        Ok(Name {
            text: text.to_string(),
            span: t.span,
        })
    }

    /// At the start of a statement: `NAME = ...` is an assignment whatever the word (no
    /// statement keyword is followed by `=`).
    fn at_assignment(&self) -> bool {
        self.kind() == Tok::Ident && self.peek_at(1).kind == Tok::Assign
    }

    fn skip_separators(&mut self) {
        while matches!(self.kind(), Tok::Newline | Tok::Semi) {
            self.bump();
        }
    }

    /// Skip the rest of a broken statement: up to and including the next `;` or newline at
    /// brace depth 0, or up to (not including) the `}` that closes the enclosing block.
    fn recover(&mut self) {
        let mut depth = 0u32;
        loop {
            match self.kind() {
                Tok::Eof => return,
                Tok::Newline | Tok::Semi if depth == 0 => {
                    self.bump();
                    return;
                }
                Tok::LBrace => depth += 1,
                Tok::RBrace => {
                    if depth == 0 {
                        return;
                    }
                    depth -= 1;
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// After a statement: `;`, newline, `}` or end of file must follow.
    fn end_of_statement(&mut self) -> R<()> {
        match self.kind() {
            Tok::Newline | Tok::Semi => {
                self.bump();
                Ok(())
            }
            Tok::RBrace | Tok::Eof => Ok(()),
            _ => Err(self.error_here("end of statement (newline or `;`)")),
        }
    }

    // ---- file and declarations ----

    fn file(&mut self) -> File {
        let mut items = Vec::new();
        loop {
            self.skip_separators();
            match self.kind() {
                Tok::Eof => break,
                Tok::RBrace => {
                    let span = self.bump().span;
                    self.push(
                        "E0101",
                        "unmatched `}`".into(),
                        span,
                        "no block to close here",
                    );
                    continue;
                }
                _ => {}
            }
            match self.item().and_then(|item| {
                self.end_of_statement()?;
                Ok(item)
            }) {
                Ok(item) => items.push(item),
                Err(Fail) => self.recover(),
            }
        }
        File { items }
    }

    fn item(&mut self) -> R<Item> {
        let start = self.peek().span;
        let t = self.peek();
        if t.kind != Tok::Ident || self.at_assignment() {
            return self.stmt().map(Item::Stmt);
        }
        match self.text(t) {
            "protocol" => {
                self.bump();
                let name = self.name("the protocol's name", NameKind::Other)?;
                Ok(Item::Protocol(name, start.to(self.prev_span())))
            }
            "param" => {
                self.bump();
                let name = self.name("a parameter name", NameKind::Value)?;
                self.expect(Tok::Assign)?;
                let value = self.expr()?;
                Ok(Item::Param {
                    name,
                    value,
                    span: start.to(self.prev_span()),
                })
            }
            "block" => {
                self.bump();
                let e = self.expr()?;
                Ok(Item::Block(e, start.to(self.prev_span())))
            }
            "cluster" => {
                self.bump();
                let e = self.expr()?;
                Ok(Item::Cluster(e, start.to(self.prev_span())))
            }
            "mbarrier" | "barrier" | "buffer" | "global" | "pipeline" => self.object_decl(),
            "kernel" => self.kernel().map(Item::Kernel),
            "expect" => self.expect_line().map(Item::Expect),
            _ => self.stmt().map(Item::Stmt),
        }
    }

    fn object_decl(&mut self) -> R<Item> {
        let kw = self.bump();
        let kw_text = self.text(kw);
        let name = self.name("an object name", NameKind::Other)?;
        let len =
            if kw_text != "pipeline" && kw_text != "global" && self.eat(Tok::LBracket).is_some() {
                let e = self.expr()?;
                self.expect(Tok::RBracket)?;
                Some(e)
            } else {
                None
            };
        let kind = match kw_text {
            "mbarrier" => ObjectDecl::MBarrier,
            "barrier" => {
                let completion = if self.eat_word("with").is_some() {
                    self.expect_word("completion")?;
                    true
                } else {
                    false
                };
                ObjectDecl::Barrier { completion }
            }
            "buffer" => ObjectDecl::Buffer,
            "global" => ObjectDecl::Global,
            _ => {
                if self.eat_word("thread").is_some() {
                    ObjectDecl::PipelineThread
                } else if self.at_word("stages") {
                    self.bump();
                    let stages = self.expr()?;
                    self.expect_word("producers")?;
                    let producers = self.expr()?;
                    self.expect_word("consumers")?;
                    let consumers = self.expr()?;
                    ObjectDecl::PipelineBlock {
                        stages,
                        producers,
                        consumers,
                    }
                } else {
                    return Err(self.error_here(
                        "`thread` or `stages N producers P consumers C` after the pipeline name",
                    ));
                }
            }
        };
        Ok(Item::Object {
            name,
            kind,
            len,
            span: kw.span.to(self.prev_span()),
        })
    }

    fn kernel(&mut self) -> R<KernelDecl> {
        let kw = self.bump();
        // Kernel names live in their own namespace (reports only), so any word will do:
        // language.md §6 itself names a kernel `compute`.
        let t = self.peek();
        if t.kind != Tok::Ident {
            return Err(self.error_here("the kernel's name"));
        }
        self.bump();
        let name = Name {
            text: self.text(t).to_string(),
            span: t.span,
        };
        let mut domain = None;
        let mut block = None;
        let mut cluster = None;
        loop {
            if self.eat_word("domain").is_some() {
                let t = self.peek();
                if t.kind != Tok::Ident {
                    return Err(self.error_here("a domain name"));
                }
                self.bump();
                domain = Some(Name {
                    text: self.text(t).to_string(),
                    span: t.span,
                });
            } else if self.eat_word("block").is_some() {
                block = Some(self.expr()?);
            } else if self.eat_word("cluster").is_some() {
                cluster = Some(self.expr()?);
            } else {
                break;
            }
        }
        if self.kind() != Tok::LBrace {
            return Err(self.error_here("`domain`, `block`, `cluster` or `{`"));
        }
        let body = self.block()?;
        Ok(KernelDecl {
            name,
            domain,
            block,
            cluster,
            body,
            span: kw.span.to(self.prev_span()),
        })
    }

    /// A rule name: `stale-token`, `wait-prior-over-8` (adjacent words, numbers and dashes).
    fn rule_name(&mut self) -> R<Name> {
        let first = self.peek();
        if first.kind != Tok::Ident {
            return Err(self.error_here("a rule name"));
        }
        self.bump();
        let mut span = first.span;
        loop {
            let t = self.peek();
            let adjacent = t.span.start == span.end;
            if adjacent && matches!(t.kind, Tok::Ident | Tok::Int(_) | Tok::Minus) {
                self.bump();
                span = span.to(t.span);
            } else {
                break;
            }
        }
        let text = self.src[span.start as usize..span.end as usize].to_string();
        Ok(Name { text, span })
    }

    fn expect_line(&mut self) -> R<ExpectDecl> {
        let kw = self.bump();
        let t = self.peek();
        if t.kind != Tok::Ident {
            return Err(self.error_here("a verdict (`ok`, `deadlock`, `ub`, `race` or `warning`)"));
        }
        self.bump();
        let verdict = Name {
            text: self.text(t).to_string(),
            span: t.span,
        };
        let rule = if self.kind() == Tok::Ident && !self.at_word("with") {
            Some(self.rule_name()?)
        } else {
            None
        };
        let mut overrides = Vec::new();
        if self.eat_word("with").is_some() {
            loop {
                let t = self.peek();
                if t.kind != Tok::Ident {
                    return Err(self.error_here("a parameter name"));
                }
                self.bump();
                let name = Name {
                    text: self.text(t).to_string(),
                    span: t.span,
                };
                self.expect(Tok::Assign)?;
                let neg = self.eat(Tok::Minus).is_some();
                let v = match self.kind() {
                    Tok::Int(v) => {
                        self.bump();
                        v
                    }
                    _ => return Err(self.error_here("an integer")),
                };
                overrides.push((name, if neg { v.wrapping_neg() } else { v }));
                if self.eat(Tok::Comma).is_none() {
                    break;
                }
            }
        }
        Ok(ExpectDecl {
            verdict,
            rule,
            overrides,
            span: kw.span.to(self.prev_span()),
        })
    }
}
