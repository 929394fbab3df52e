//! Tokens -> syntax tree, recovering at statement level.
//!
//! A statement that does not parse is reported and skipped up to the next `;`, newline or the
//! `}` that closes its block, so one run reports every independent syntax error. Nesting is
//! bounded ([`MAX_BLOCK_DEPTH`], [`MAX_EXPR_DEPTH`]) so that no input can exhaust the stack.

use crate::ast::*;
use crate::diagnostics::LoadError;
use crate::ir::{BinaryOp, MemScope, UnaryOp};
use crate::lexer::{Tok, Token};
use crate::span::Span;
use crate::suggest::did_you_mean;

/// Deepest nesting of `{ }` blocks.
pub const MAX_BLOCK_DEPTH: u32 = 64;
/// Deepest expression tree (parentheses, operators, unary chains).
pub const MAX_EXPR_DEPTH: u32 = 64;

/// Words that cannot be identifiers.
pub const KEYWORDS: &[&str] = &[
    // declarations and structure
    "protocol",
    "param",
    "block",
    "cluster",
    "mbarrier",
    "barrier",
    "pipeline",
    "buffer",
    "global",
    "kernel",
    "expect",
    // control flow
    "let",
    "if",
    "else",
    "for",
    "in",
    "while",
    "role",
    "when",
    "elect",
    "exit",
    // builtins and functions
    "tid",
    "lane",
    "warp",
    "cta",
    "nthreads",
    "ncta",
    "min",
    "max",
    // operations
    "init",
    "inval",
    "arrive",
    "arrive_drop",
    "arrive_expect_tx",
    "expect_tx",
    "complete_tx",
    "wait",
    "arrive_and_wait",
    "test_wait",
    "syncthreads",
    "bar_sync",
    "bar_arrive",
    "syncwarp",
    "cluster_sync",
    "cluster_arrive",
    "cluster_wait",
    "fence_mbarrier_init",
    "read",
    "write",
    "mma",
    "fence_proxy_async",
    "tma",
    "tma_store",
    "bulk_commit",
    "bulk_wait_read",
    "cp_async",
    "commit_group",
    "wait_group",
    "cp_async_arrive",
    "producer_acquire",
    "producer_commit",
    "consumer_wait",
    "consumer_release",
    "consumer_wait_prior",
    "memcpy_async",
    "quit",
    "compute",
    "store",
    "load",
    "store_release",
    "load_acquire",
    "fence",
];

/// Words that start a statement (for "did you mean" on a misspelt one).
const STATEMENT_WORDS: &[&str] = &[
    "let",
    "if",
    "for",
    "while",
    "role",
    "elect",
    "exit",
    "init",
    "inval",
    "arrive",
    "arrive_drop",
    "arrive_expect_tx",
    "expect_tx",
    "complete_tx",
    "wait",
    "arrive_and_wait",
    "syncthreads",
    "bar_sync",
    "bar_arrive",
    "syncwarp",
    "cluster_sync",
    "cluster_arrive",
    "cluster_wait",
    "fence_mbarrier_init",
    "read",
    "write",
    "mma",
    "fence_proxy_async",
    "tma",
    "tma_store",
    "bulk_commit",
    "bulk_wait_read",
    "cp_async",
    "commit_group",
    "wait_group",
    "cp_async_arrive",
    "producer_acquire",
    "producer_commit",
    "consumer_wait",
    "consumer_release",
    "consumer_wait_prior",
    "memcpy_async",
    "quit",
    "compute",
    "store",
    "load",
    "store_release",
    "load_acquire",
    "fence",
    "protocol",
    "param",
    "block",
    "cluster",
    "mbarrier",
    "barrier",
    "pipeline",
    "buffer",
    "global",
    "kernel",
    "expect",
];

pub fn is_keyword(s: &str) -> bool {
    KEYWORDS.contains(&s)
}

/// The error has been recorded; the caller recovers.
#[derive(Debug)]
pub struct Fail;
type R<T> = Result<T, Fail>;

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

    /// A name that is not a keyword.
    fn name(&mut self, what: &str) -> R<Name> {
        let t = self.peek();
        if t.kind != Tok::Ident {
            return Err(self.error_here(what));
        }
        let text = self.text(t);
        if is_keyword(text) {
            self.bump();
            self.errors.push(LoadError {
                code: "E0102",
                message: format!("`{text}` is a keyword and cannot be used as a name"),
                span: Some(t.span),
                label: "keyword".into(),
                help: Some(format!("choose another name, e.g. `{text}_`")),
            });
            return Err(Fail);
        }
        self.bump();
        Ok(Name {
            text: text.to_string(),
            span: t.span,
        })
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
        if t.kind != Tok::Ident {
            return self.stmt().map(Item::Stmt);
        }
        match self.text(t) {
            "protocol" => {
                self.bump();
                let name = self.name("the protocol's name")?;
                Ok(Item::Protocol(name, start.to(self.prev_span())))
            }
            "param" => {
                self.bump();
                let name = self.name("a parameter name")?;
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
        let name = self.name("an object name")?;
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

    // ---- statements ----

    fn block(&mut self) -> R<Vec<Stmt>> {
        let open = self.expect(Tok::LBrace)?;
        if self.block_depth >= MAX_BLOCK_DEPTH {
            self.errors.push(LoadError {
                code: "E0103",
                message: format!("blocks nested more than {MAX_BLOCK_DEPTH} deep"),
                span: Some(open),
                label: "too deep".into(),
                help: Some("flatten the nesting".into()),
            });
            // Skip the whole block so that no further errors cascade from it.
            let mut depth = 1u32;
            while depth > 0 {
                match self.bump().kind {
                    Tok::LBrace => depth += 1,
                    Tok::RBrace => depth -= 1,
                    Tok::Eof => break,
                    _ => {}
                }
            }
            return Err(Fail);
        }
        self.block_depth += 1;
        let mut body = Vec::new();
        let result = loop {
            self.skip_separators();
            match self.kind() {
                Tok::RBrace => {
                    self.bump();
                    break Ok(());
                }
                Tok::Eof => {
                    self.errors.push(LoadError {
                        code: "E0101",
                        message: "this block is never closed".into(),
                        span: Some(open),
                        label: "opened here".into(),
                        help: Some("add the missing `}`".into()),
                    });
                    break Err(Fail);
                }
                _ => {}
            }
            match self.stmt().and_then(|s| {
                self.end_of_statement()?;
                Ok(s)
            }) {
                Ok(s) => body.push(s),
                Err(Fail) => self.recover(),
            }
        };
        self.block_depth -= 1;
        result.map(|()| body)
    }

    fn stmt(&mut self) -> R<Stmt> {
        let t = self.peek();
        let start = t.span;
        if t.kind != Tok::Ident {
            return Err(self.error_here("a statement"));
        }
        let word = self.text(t);
        let kind = match word {
            "let" => {
                self.bump();
                let name = self.name("a variable name")?;
                self.expect(Tok::Assign)?;
                let value = if self.at_word("arrive") {
                    self.bump();
                    let bar = self.obj_ref()?;
                    let count = self.opt_comma_expr()?;
                    let scope = self.opt_scope()?;
                    LetValue::Arrive { bar, count, scope }
                } else if self.at_word("test_wait") {
                    self.bump();
                    let bar = self.obj_ref()?;
                    self.expect_word("parity")?;
                    let parity = self.expr()?;
                    LetValue::TestWait { bar, parity }
                } else {
                    LetValue::Expr(self.expr()?)
                };
                StmtKind::Let { name, value }
            }
            "if" => self.if_stmt()?,
            "for" => {
                self.bump();
                let var = self.name("a loop variable")?;
                self.expect_word("in")?;
                let start = self.expr()?;
                self.expect(Tok::DotDot)?;
                let end = self.expr()?;
                let body = self.block()?;
                StmtKind::For {
                    var,
                    start,
                    end,
                    body,
                }
            }
            "while" => {
                self.bump();
                let cond = self.expr()?;
                let body = self.block()?;
                StmtKind::While { cond, body }
            }
            "role" => {
                self.bump();
                let name = self.name("a role name")?;
                self.expect_word("when")?;
                let cond = self.expr()?;
                let body = self.block()?;
                StmtKind::Role { name, cond, body }
            }
            "elect" => {
                self.bump();
                let body = self.block()?;
                StmtKind::Elect { body }
            }
            "exit" => {
                self.bump();
                StmtKind::Exit
            }
            "test_wait" => {
                self.push(
                    "E0101",
                    "`test_wait` gives a value and must be bound: `let X = test_wait B parity E`"
                        .into(),
                    t.span,
                    "result unused",
                );
                return Err(Fail);
            }
            "protocol" | "param" | "block" | "cluster" | "mbarrier" | "barrier" | "pipeline"
            | "buffer" | "global" | "kernel" | "expect" => {
                self.errors.push(LoadError {
                    code: "E0403",
                    message: format!("`{word}` is only allowed at the top level of the file"),
                    span: Some(t.span),
                    label: "inside a block".into(),
                    help: Some("move it out of the `{ }` block".into()),
                });
                return Err(Fail);
            }
            _ => {
                if let Some(op) = self.op()? {
                    StmtKind::Op(op)
                } else if self.peek_at(1).kind == Tok::Assign {
                    let name = self.name("a variable name")?;
                    self.bump();
                    let value = self.expr()?;
                    StmtKind::Assign { name, value }
                } else {
                    let help = did_you_mean(word, STATEMENT_WORDS.iter().copied());
                    self.errors.push(LoadError {
                        code: "E0101",
                        message: format!("expected a statement, found `{word}`"),
                        span: Some(t.span),
                        label: "not a statement".into(),
                        help,
                    });
                    return Err(Fail);
                }
            }
        };
        Ok(Stmt {
            kind,
            span: start.to(self.prev_span()),
        })
    }

    fn if_stmt(&mut self) -> R<StmtKind> {
        self.bump();
        let cond = self.expr()?;
        let then_body = self.block()?;
        // `}` and `else` may be on different lines.
        if self.kind() == Tok::Newline && {
            let t = self.peek_at(1);
            t.kind == Tok::Ident && self.text(t) == "else"
        } {
            self.bump();
        }
        let else_body = if self.eat_word("else").is_some() {
            if self.at_word("if") {
                let s = self.peek().span;
                let kind = self.if_stmt()?;
                vec![Stmt {
                    kind,
                    span: s.to(self.prev_span()),
                }]
            } else {
                self.block()?
            }
        } else {
            Vec::new()
        };
        Ok(StmtKind::If {
            cond,
            then_body,
            else_body,
        })
    }

    fn opt_comma_expr(&mut self) -> R<Option<Expr>> {
        if self.eat(Tok::Comma).is_some() {
            Ok(Some(self.expr()?))
        } else {
            Ok(None)
        }
    }

    fn comma_expr(&mut self) -> R<Expr> {
        self.expect(Tok::Comma)?;
        self.expr()
    }

    fn scope_name(&mut self) -> R<(MemScope, Span)> {
        let t = self.peek();
        let scope = match (t.kind, self.text(t)) {
            (Tok::Ident, "cta") => MemScope::Cta,
            (Tok::Ident, "cluster") => MemScope::Cluster,
            (Tok::Ident, "gpu") => MemScope::Gpu,
            (Tok::Ident, "sys") => MemScope::Sys,
            _ => return Err(self.error_here("a scope (`cta`, `cluster`, `gpu` or `sys`)")),
        };
        self.bump();
        Ok((scope, t.span))
    }

    fn opt_scope(&mut self) -> R<Scope> {
        if self.eat_word("scope").is_some() {
            Ok(Some(self.scope_name()?))
        } else {
            Ok(None)
        }
    }

    /// An operation statement, or `None` when the word is not an operation keyword.
    fn op(&mut self) -> R<Option<OpAst>> {
        let t = self.peek();
        let word = self.text(t);
        let bare = |b| Some(OpAst::Bare(b));
        let op = match word {
            "syncthreads" => bare(BareOp::SyncThreads),
            "syncwarp" => bare(BareOp::SyncWarp),
            "cluster_sync" => bare(BareOp::ClusterSync),
            "cluster_arrive" => bare(BareOp::ClusterArrive),
            "cluster_wait" => bare(BareOp::ClusterWait),
            "fence_mbarrier_init" => bare(BareOp::FenceMbarrierInit),
            "fence_proxy_async" => bare(BareOp::FenceProxyAsync),
            "bulk_commit" => bare(BareOp::BulkCommit),
            "commit_group" => bare(BareOp::CommitGroup),
            "compute" => bare(BareOp::Compute),
            _ => None,
        };
        if op.is_some() {
            self.bump();
            return Ok(op);
        }
        let buf = match word {
            "read" => Some(BufOp::Read),
            "write" => Some(BufOp::Write),
            "mma" => Some(BufOp::Mma),
            "tma_store" => Some(BufOp::TmaStore),
            "cp_async" => Some(BufOp::CpAsync),
            _ => None,
        };
        if let Some(b) = buf {
            self.bump();
            return Ok(Some(OpAst::Buf(b, self.obj_ref()?)));
        }
        let pipe = match word {
            "producer_acquire" => Some(PipeOp::ProducerAcquire),
            "producer_commit" => Some(PipeOp::ProducerCommit),
            "consumer_wait" => Some(PipeOp::ConsumerWait),
            "consumer_release" => Some(PipeOp::ConsumerRelease),
            "quit" => Some(PipeOp::Quit),
            _ => None,
        };
        if let Some(p) = pipe {
            self.bump();
            return Ok(Some(OpAst::Pipe(p, self.obj_ref()?)));
        }
        let global = match word {
            "store" => Some(GlobalOp::Store),
            "load" => Some(GlobalOp::Load),
            "store_release" => Some(GlobalOp::StoreRelease),
            "load_acquire" => Some(GlobalOp::LoadAcquire),
            _ => None,
        };
        if let Some(g) = global {
            self.bump();
            let r = self.obj_ref()?;
            let scope = self.opt_scope()?;
            if matches!(g, GlobalOp::StoreRelease | GlobalOp::LoadAcquire) && scope.is_none() {
                return Err(self.error_here("`scope cta|cluster|gpu|sys`"));
            }
            return Ok(Some(OpAst::Global(g, r, scope)));
        }
        let op = match word {
            "init" => {
                self.bump();
                let bar = self.obj_ref()?;
                let count = self.comma_expr()?;
                OpAst::Init { bar, count }
            }
            "inval" => {
                self.bump();
                OpAst::Inval {
                    bar: self.obj_ref()?,
                }
            }
            "arrive" => {
                self.bump();
                let bar = self.obj_ref()?;
                let count = self.opt_comma_expr()?;
                let scope = self.opt_scope()?;
                OpAst::Arrive { bar, count, scope }
            }
            "arrive_drop" => {
                self.bump();
                let bar = self.obj_ref()?;
                let scope = self.opt_scope()?;
                OpAst::ArriveDrop { bar, scope }
            }
            "arrive_expect_tx" => {
                self.bump();
                let bar = self.obj_ref()?;
                let bytes = self.comma_expr()?;
                let scope = self.opt_scope()?;
                OpAst::ArriveExpectTx { bar, bytes, scope }
            }
            "expect_tx" => {
                self.bump();
                let bar = self.obj_ref()?;
                let bytes = self.comma_expr()?;
                OpAst::ExpectTx { bar, bytes }
            }
            "complete_tx" => {
                self.bump();
                let bar = self.obj_ref()?;
                let bytes = self.comma_expr()?;
                OpAst::CompleteTx { bar, bytes }
            }
            "wait" => {
                self.bump();
                let bar = self.obj_ref()?;
                if self.eat_word("parity").is_some() {
                    let parity = self.expr()?;
                    let scope = self.opt_scope()?;
                    OpAst::WaitParity { bar, parity, scope }
                } else if self.eat_word("token").is_some() {
                    let t = self.peek();
                    if t.kind != Tok::Ident {
                        return Err(self.error_here("a token variable"));
                    }
                    self.bump();
                    let token = Name {
                        text: self.text(t).to_string(),
                        span: t.span,
                    };
                    let scope = self.opt_scope()?;
                    OpAst::WaitToken { bar, token, scope }
                } else {
                    return Err(self.error_here("`parity EXPR` or `token T`"));
                }
            }
            "arrive_and_wait" => {
                self.bump();
                OpAst::ArriveAndWait {
                    bar: self.obj_ref()?,
                }
            }
            "bar_sync" | "bar_arrive" => {
                self.bump();
                let id = self.expr()?;
                let count = self.opt_comma_expr()?;
                if word == "bar_sync" {
                    OpAst::BarSync { id, count }
                } else {
                    OpAst::BarArrive { id, count }
                }
            }
            "tma" => {
                self.bump();
                let dst = self.obj_ref()?;
                self.expect(Tok::Arrow)?;
                let bar = self.obj_ref()?;
                let bytes = self.comma_expr()?;
                let multicast = if self.eat_word("multicast").is_some() {
                    Some(self.expr()?)
                } else {
                    None
                };
                OpAst::Tma {
                    dst,
                    bar,
                    bytes,
                    multicast,
                }
            }
            "bulk_wait_read" => {
                self.bump();
                OpAst::BulkWaitRead(self.expr()?)
            }
            "wait_group" => {
                self.bump();
                OpAst::WaitGroup(self.expr()?)
            }
            "cp_async_arrive" => {
                self.bump();
                let bar = self.obj_ref()?;
                let noinc = self.eat_word("noinc").is_some();
                OpAst::CpAsyncArrive { bar, noinc }
            }
            "consumer_wait_prior" => {
                self.bump();
                let pipe = self.obj_ref()?;
                let n = self.comma_expr()?;
                OpAst::ConsumerWaitPrior { pipe, n }
            }
            "memcpy_async" => {
                self.bump();
                let dst = self.obj_ref()?;
                self.expect(Tok::Arrow)?;
                let pipe = self.obj_ref()?;
                OpAst::MemcpyAsync { dst, pipe }
            }
            "fence" => {
                self.bump();
                self.expect_word("scope")?;
                OpAst::Fence(self.scope_name()?.0)
            }
            _ => return Ok(None),
        };
        Ok(Some(op))
    }

    fn obj_ref(&mut self) -> R<ObjRefAst> {
        let t = self.peek();
        if t.kind != Tok::Ident {
            return Err(self.error_here("an object name"));
        }
        self.bump();
        let name = Name {
            text: self.text(t).to_string(),
            span: t.span,
        };
        let index = if self.eat(Tok::LBracket).is_some() {
            let e = self.expr()?;
            self.expect(Tok::RBracket)?;
            Some(e)
        } else {
            None
        };
        let cta = if self.eat(Tok::At).is_some() {
            Some(self.expr()?)
        } else {
            None
        };
        Ok(ObjRefAst {
            name,
            index,
            cta,
            span: t.span.to(self.prev_span()),
        })
    }

    // ---- expressions ----

    pub fn expr(&mut self) -> R<Expr> {
        self.expr_bp(0)
    }

    fn too_deep(&mut self, span: Span) -> Fail {
        self.errors.push(LoadError {
            code: "E0103",
            message: format!("expression nested more than {MAX_EXPR_DEPTH} deep"),
            span: Some(span),
            label: "too deep".into(),
            help: Some("split it with `let`".into()),
        });
        Fail
    }

    fn enter(&mut self) -> R<()> {
        if self.expr_depth >= MAX_EXPR_DEPTH {
            let s = self.peek().span;
            return Err(self.too_deep(s));
        }
        self.expr_depth += 1;
        Ok(())
    }

    fn expr_bp(&mut self, min_prec: u8) -> R<Expr> {
        self.enter()?;
        let r = self.expr_bp_inner(min_prec);
        self.expr_depth -= 1;
        r
    }

    fn expr_bp_inner(&mut self, min_prec: u8) -> R<Expr> {
        let (mut lhs, mut depth) = self.unary()?;
        while let Some((op, prec)) = binop(self.kind()) {
            if prec < min_prec {
                break;
            }
            self.bump();
            let rhs = self.expr_bp(prec + 1)?;
            depth = depth.max(expr_depth(&rhs)) + 1;
            if depth > MAX_EXPR_DEPTH {
                return Err(self.too_deep(lhs.span.to(rhs.span)));
            }
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span,
            };
        }
        Ok(lhs)
    }

    /// A unary expression and its tree depth.
    fn unary(&mut self) -> R<(Expr, u32)> {
        let t = self.peek();
        let op = match t.kind {
            Tok::Minus => Some(UnaryOp::Neg),
            Tok::Bang => Some(UnaryOp::Not),
            _ => None,
        };
        if let Some(op) = op {
            self.bump();
            self.enter()?;
            let inner = self.unary();
            self.expr_depth -= 1;
            let (inner, depth) = inner?;
            let span = t.span.to(inner.span);
            return Ok((
                Expr {
                    kind: ExprKind::Unary(op, Box::new(inner)),
                    span,
                },
                depth + 1,
            ));
        }
        let e = self.primary()?;
        let d = expr_depth(&e);
        Ok((e, d))
    }

    fn primary(&mut self) -> R<Expr> {
        let t = self.peek();
        match t.kind {
            Tok::Int(v) => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Int(v),
                    span: t.span,
                })
            }
            Tok::Ident => {
                let word = self.text(t);
                if (word == "min" || word == "max") && self.peek_at(1).kind == Tok::LParen {
                    self.bump();
                    self.bump();
                    let a = self.expr()?;
                    self.expect(Tok::Comma)?;
                    let b = self.expr()?;
                    self.expect(Tok::RParen)?;
                    let (a, b) = (Box::new(a), Box::new(b));
                    let kind = if word == "min" {
                        ExprKind::Min(a, b)
                    } else {
                        ExprKind::Max(a, b)
                    };
                    return Ok(Expr {
                        kind,
                        span: t.span.to(self.prev_span()),
                    });
                }
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Name(word.to_string()),
                    span: t.span,
                })
            }
            Tok::LParen => {
                self.bump();
                let e = self.expr()?;
                let close = self.expect(Tok::RParen)?;
                Ok(Expr {
                    kind: e.kind,
                    span: t.span.to(close),
                })
            }
            _ => Err(self.error_here("an expression")),
        }
    }
}

/// Tree depth of an expression (a leaf is 1). Iterative over the spine, bounded by the parser.
pub fn expr_depth(e: &Expr) -> u32 {
    match &e.kind {
        ExprKind::Int(_) | ExprKind::Name(_) => 1,
        ExprKind::Unary(_, a) => 1 + expr_depth(a),
        ExprKind::Binary(_, a, b) | ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
            1 + expr_depth(a).max(expr_depth(b))
        }
    }
}

/// Binary operators and their precedence (higher binds tighter), language.md §3.2.
fn binop(t: Tok) -> Option<(BinaryOp, u8)> {
    Some(match t {
        Tok::OrOr => (BinaryOp::Or, 1),
        Tok::AndAnd => (BinaryOp::And, 2),
        Tok::EqEq => (BinaryOp::Eq, 3),
        Tok::Ne => (BinaryOp::Ne, 3),
        Tok::Lt => (BinaryOp::Lt, 3),
        Tok::Le => (BinaryOp::Le, 3),
        Tok::Gt => (BinaryOp::Gt, 3),
        Tok::Ge => (BinaryOp::Ge, 3),
        Tok::Pipe => (BinaryOp::BitOr, 4),
        Tok::Caret => (BinaryOp::BitXor, 5),
        Tok::Amp => (BinaryOp::BitAnd, 6),
        Tok::Shl => (BinaryOp::Shl, 7),
        Tok::Shr => (BinaryOp::Shr, 7),
        Tok::Plus => (BinaryOp::Add, 8),
        Tok::Minus => (BinaryOp::Sub, 8),
        Tok::Star => (BinaryOp::Mul, 9),
        Tok::Slash => (BinaryOp::Div, 9),
        Tok::Percent => (BinaryOp::Rem, 9),
        _ => return None,
    })
}
