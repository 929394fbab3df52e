//! Statements, operations and object references.

use super::keywords::STATEMENT_WORDS;
use super::{Fail, MAX_BLOCK_DEPTH, NameKind, Parser, R};
use crate::ast::*;
use crate::diagnostics::LoadError;
use crate::ir::MemScope;
use crate::lexer::Tok;
use crate::span::Span;
use crate::suggest::did_you_mean;

impl Parser<'_> {
    pub(super) fn block(&mut self) -> R<Vec<Stmt>> {
        // The `{` may start on the next line.
        if self.kind() == Tok::Newline && self.peek_at(1).kind == Tok::LBrace {
            self.bump();
        }
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

    pub(super) fn stmt(&mut self) -> R<Stmt> {
        let t = self.peek();
        let start = t.span;
        if t.kind != Tok::Ident {
            return Err(self.error_here("a statement"));
        }
        let word = self.text(t);
        if self.at_assignment() {
            let name = self.name("a variable name", NameKind::Value)?;
            self.bump();
            let value = self.expr()?;
            return Ok(Stmt {
                kind: StmtKind::Assign { name, value },
                span: start.to(self.prev_span()),
            });
        }
        let kind = match word {
            "let" => {
                self.bump();
                let name = self.name("a variable name", NameKind::Value)?;
                self.expect(Tok::Assign)?;
                // `arrive` and `test_wait` start the operation when a name (the barrier)
                // follows; otherwise they are a value's name (`let y = arrive + 1`).
                let op_follows = self.peek_at(1).kind == Tok::Ident;
                let value = if op_follows && self.at_word("arrive") {
                    self.bump();
                    let bar = self.obj_ref()?;
                    let count = self.opt_comma_expr()?;
                    let scope = self.opt_scope()?;
                    LetValue::Arrive { bar, count, scope }
                } else if op_follows && self.at_word("test_wait") {
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
                let var = self.name("a loop variable", NameKind::Value)?;
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
                let name = self.name("a role name", NameKind::Other)?;
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

    pub(super) fn if_stmt(&mut self) -> R<StmtKind> {
        self.bump();
        let cond = self.expr()?;
        let then_body = self.block()?;
        // `}` and `else` may be on different lines. `else = ...` assigns a local named `else`.
        let is_else = |p: &Self, at: usize| {
            let t = p.peek_at(at);
            t.kind == Tok::Ident && p.text(t) == "else" && p.peek_at(at + 1).kind != Tok::Assign
        };
        if self.kind() == Tok::Newline && is_else(self, 1) {
            self.bump();
        }
        let else_body = if is_else(self, 0) {
            self.bump();
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

    pub(super) fn opt_comma_expr(&mut self) -> R<Option<Expr>> {
        if self.eat(Tok::Comma).is_some() {
            Ok(Some(self.expr()?))
        } else {
            Ok(None)
        }
    }

    pub(super) fn comma_expr(&mut self) -> R<Expr> {
        self.expect(Tok::Comma)?;
        self.expr()
    }

    pub(super) fn scope_name(&mut self) -> R<(MemScope, Span)> {
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

    pub(super) fn opt_scope(&mut self) -> R<Scope> {
        if self.eat_word("scope").is_some() {
            Ok(Some(self.scope_name()?))
        } else {
            Ok(None)
        }
    }

    /// An operation statement, or `None` when the word is not an operation keyword.
    pub(super) fn op(&mut self) -> R<Option<OpAst>> {
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
        // `write part X`: a part write when a name (the buffer) follows `part`; otherwise
        // `part` is the buffer (`write part`, `write part[i]`). `write part value E`, with an
        // expression after `value` on the line, writes the buffer `part` with a value (a part
        // write takes no value, so the part-write reading of it cannot load).
        let part = word == "write" && {
            let (p, x, v) = (self.peek_at(1), self.peek_at(2), self.peek_at(3));
            let value_clause = self.text(x) == "value"
                && matches!(
                    v.kind,
                    Tok::Int(_) | Tok::Ident | Tok::LParen | Tok::Minus | Tok::Bang
                );
            p.kind == Tok::Ident && self.text(p) == "part" && x.kind == Tok::Ident && !value_clause
        };
        if part {
            self.bump();
            self.bump();
            let buf = self.obj_ref()?;
            if self.at_word("value") {
                return Err(self.error_here(
                    "end of statement (a part write takes no `value`: the parts are disjoint)",
                ));
            }
            return Ok(Some(OpAst::Buf(BufOp::WritePart, buf)));
        }
        // `write X value E`: a write of the value `E`.
        if word == "write" {
            self.bump();
            let buf = self.obj_ref()?;
            if self.eat_word("value").is_some() {
                let value = self.expr()?;
                return Ok(Some(OpAst::WriteValue { buf, value }));
            }
            return Ok(Some(OpAst::Buf(BufOp::Write, buf)));
        }
        let buf = match word {
            "read" => Some(BufOp::Read),
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
                let unaligned = self.eat_word("unaligned").is_some();
                if word == "bar_sync" {
                    OpAst::BarSync {
                        id,
                        count,
                        unaligned,
                    }
                } else {
                    OpAst::BarArrive {
                        id,
                        count,
                        unaligned,
                    }
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

    pub(super) fn obj_ref(&mut self) -> R<ObjRefAst> {
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
        let span = t.span.to(self.prev_span());
        // `bytes OFF .. +LEN`: the byte range of the instance an access touches (contextual:
        // `bytes` is a word only here, on the object's line).
        let bytes = if let Some(at) = self.eat_word("bytes") {
            let off = self.expr()?;
            self.expect(Tok::DotDot)?;
            self.expect(Tok::Plus)?;
            let len = self.expr()?;
            Some(Box::new((off, len, at.to(self.prev_span()))))
        } else {
            None
        };
        Ok(ObjRefAst {
            name,
            index,
            cta,
            bytes,
            span,
        })
    }
}
