//! Statements and operations: scopes, locals, roles, tokens, per-operation object kinds.

use super::exprs::Want;
use super::{Loader, TokenSource};
use crate::ast::{self, BareOp, BufOp, GlobalOp, LetValue, OpAst, PipeOp};
use crate::ir::*;
use crate::suggest::did_you_mean;

impl Loader<'_> {
    fn new_local(&mut self, name: &ast::Name, kind: LocalKind) -> LocalId {
        let id = LocalId(self.locals.len() as u32);
        self.locals.push(Local {
            name: name.text.clone(),
            kind,
            span: name.span,
        });
        self.bind_local(&name.text, id);
        id
    }

    fn body(&mut self, stmts: &[ast::Stmt]) -> Vec<Stmt> {
        self.push_scope();
        let out = stmts.iter().filter_map(|s| self.stmt(s)).collect();
        self.pop_scope();
        out
    }

    fn role_id(&mut self, name: &ast::Name) -> RoleId {
        if let Some(id) = self.role_ids.get(&name.text) {
            return *id;
        }
        let id = RoleId(self.roles.len() as u32);
        self.roles.push(Role {
            name: name.text.clone(),
            span: name.span,
        });
        self.role_ids.insert(name.text.clone(), id);
        id
    }

    /// One statement; `None` when it has an error (already reported).
    pub(super) fn stmt(&mut self, s: &ast::Stmt) -> Option<Stmt> {
        let before = self.errors.len();
        let kind = match &s.kind {
            ast::StmtKind::Let { name, value } => self.let_stmt(name, value),
            ast::StmtKind::Assign { name, value } => {
                let value = self.expr(value);
                let local = self.assign_target(name)?;
                Some(StmtKind::Assign { local, value })
            }
            ast::StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let cond = self.expr(cond);
                let then_body = self.body(then_body);
                let else_body = self.body(else_body);
                Some(StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                })
            }
            ast::StmtKind::For {
                var,
                start,
                end,
                body,
            } => {
                let start = self.expr(start);
                let end = self.expr(end);
                self.push_scope();
                let var = self.new_local(var, LocalKind::Int);
                let body = self.body(body);
                self.pop_scope();
                Some(StmtKind::For {
                    var,
                    start,
                    end,
                    body,
                })
            }
            ast::StmtKind::While { cond, body } => {
                let cond = self.expr(cond);
                let body = self.body(body);
                Some(StmtKind::While { cond, body })
            }
            ast::StmtKind::Role { name, cond, body } => {
                let role = self.role_id(name);
                let cond = self.expr(cond);
                let body = self.body(body);
                Some(StmtKind::Role { role, cond, body })
            }
            ast::StmtKind::Elect { body } => Some(StmtKind::Elect {
                body: self.body(body),
            }),
            ast::StmtKind::Exit => Some(StmtKind::Exit),
            ast::StmtKind::Op(op) => self.op(op).map(StmtKind::Op),
        };
        let kind = kind?;
        if self.errors.len() != before {
            return None;
        }
        Some(Stmt { kind, span: s.span })
    }

    fn let_stmt(&mut self, name: &ast::Name, value: &LetValue) -> Option<StmtKind> {
        match value {
            LetValue::Expr(e) => {
                // The value is resolved before the new name is in scope: `let x = x + 1`.
                let value = self.expr(e);
                let local = self.new_local(name, LocalKind::Int);
                Some(StmtKind::Let { local, value })
            }
            LetValue::Arrive {
                bar, count, scope, ..
            } => {
                let bar = self.obj_ref(bar, "arrive", Want::Barrier);
                let count = count.as_ref().map(|c| self.expr(c));
                let token = self.new_local(name, LocalKind::Token);
                let bar = bar?;
                let index = bar.index.as_ref().and_then(|i| self.const_value(i));
                self.tokens.insert(
                    token,
                    TokenSource {
                        object: bar.object,
                        index,
                    },
                );
                Some(StmtKind::Op(Op::Arrive {
                    bar,
                    count,
                    token: Some(token),
                    scope: scope.map_or(MemScope::Cta, |s| s.0),
                }))
            }
            LetValue::TestWait { bar, parity, .. } => {
                let bar = self.obj_ref(bar, "test_wait", Want::Barrier);
                let parity = self.expr(parity);
                let result = self.new_local(name, LocalKind::Int);
                Some(StmtKind::Op(Op::TestWait {
                    bar: bar?,
                    parity,
                    result,
                }))
            }
        }
    }

    fn assign_target(&mut self, name: &ast::Name) -> Option<LocalId> {
        let n = &name.text;
        let local = self.lookup_local(n);
        match local {
            Some(id) if self.locals[id.0 as usize].kind == LocalKind::Token => {
                self.error(
                    "E0210",
                    format!("cannot assign to token `{n}`"),
                    name.span,
                    "a phase token",
                    Some(format!("take a new token with `let {n} = arrive B`")),
                );
                None
            }
            Some(id) => Some(id),
            None => {
                if self.names.contains_key(n) {
                    self.error(
                        "E0210",
                        format!("cannot assign to `{n}`: only local variables can be assigned"),
                        name.span,
                        "declared at the top level",
                        Some(format!("introduce a local with `let {n}_ = ...`")),
                    );
                } else {
                    let cands: Vec<String> = if self.helpful() {
                        self.locals_in_scope()
                            .into_iter()
                            .map(|(n, _)| n.to_string())
                            .collect()
                    } else {
                        Vec::new()
                    };
                    let help = did_you_mean(n, cands.iter().map(|s| s.as_str()))
                        .or_else(|| Some(format!("declare it first: `let {n} = ...`")));
                    self.error(
                        "E0201",
                        format!("unknown variable `{n}`"),
                        name.span,
                        "not declared",
                        help,
                    );
                }
                None
            }
        }
    }

    fn op(&mut self, op: &OpAst) -> Option<Op> {
        let scope = |s: &ast::Scope| s.map_or(MemScope::Cta, |s| s.0);
        Some(match op {
            OpAst::Init { bar, count } => {
                let bar = self.obj_ref(bar, "init", Want::Barrier);
                let count = self.expr(count);
                Op::Init { bar: bar?, count }
            }
            OpAst::Inval { bar } => Op::Inval {
                bar: self.obj_ref(bar, "inval", Want::Barrier)?,
            },
            OpAst::Arrive {
                bar,
                count,
                scope: s,
            } => {
                let bar = self.obj_ref(bar, "arrive", Want::Barrier);
                let count = count.as_ref().map(|c| self.expr(c));
                Op::Arrive {
                    bar: bar?,
                    count,
                    token: None,
                    scope: scope(s),
                }
            }
            OpAst::ArriveDrop { bar, scope: s } => Op::ArriveDrop {
                bar: self.obj_ref(bar, "arrive_drop", Want::Barrier)?,
                scope: scope(s),
            },
            OpAst::ArriveExpectTx {
                bar,
                bytes,
                scope: s,
            } => {
                let bar = self.obj_ref(bar, "arrive_expect_tx", Want::HwBarrier);
                let bytes = self.expr(bytes);
                Op::ArriveExpectTx {
                    bar: bar?,
                    bytes,
                    scope: scope(s),
                }
            }
            OpAst::ExpectTx { bar, bytes } => {
                let bar = self.obj_ref(bar, "expect_tx", Want::HwBarrier);
                let bytes = self.expr(bytes);
                Op::ExpectTx { bar: bar?, bytes }
            }
            OpAst::CompleteTx { bar, bytes } => {
                let bar = self.obj_ref(bar, "complete_tx", Want::HwBarrier);
                let bytes = self.expr(bytes);
                Op::CompleteTx { bar: bar?, bytes }
            }
            OpAst::WaitParity {
                bar,
                parity,
                scope: s,
            } => {
                let bar = self.obj_ref(bar, "wait", Want::Barrier);
                let parity = self.expr(parity);
                Op::WaitParity {
                    bar: bar?,
                    parity,
                    scope: scope(s),
                }
            }
            OpAst::WaitToken {
                bar,
                token,
                scope: s,
            } => {
                let bar = self.obj_ref(bar, "wait", Want::Barrier);
                let token = self.token_use(token, bar.as_ref());
                Op::WaitToken {
                    bar: bar?,
                    token: token?,
                    scope: scope(s),
                }
            }
            OpAst::ArriveAndWait { bar } => Op::ArriveAndWait {
                bar: self.obj_ref(bar, "arrive_and_wait", Want::Barrier)?,
            },
            OpAst::Bare(b) => match b {
                BareOp::SyncThreads => Op::SyncThreads,
                BareOp::SyncWarp => Op::SyncWarp,
                BareOp::ClusterSync => Op::ClusterSync,
                BareOp::ClusterArrive => Op::ClusterArrive,
                BareOp::ClusterWait => Op::ClusterWait,
                BareOp::FenceMbarrierInit => Op::FenceMbarrierInit,
                BareOp::FenceProxyAsync => Op::FenceProxyAsync,
                BareOp::BulkCommit => Op::BulkCommit,
                BareOp::CommitGroup => Op::CommitGroup,
                BareOp::Compute => Op::Compute,
            },
            OpAst::BarSync {
                id,
                count,
                unaligned,
            } => Op::BarSync {
                id: self.expr(id),
                count: count.as_ref().map(|c| self.expr(c)),
                unaligned: *unaligned,
            },
            OpAst::BarArrive {
                id,
                count,
                unaligned,
            } => Op::BarArrive {
                id: self.expr(id),
                count: count.as_ref().map(|c| self.expr(c)),
                unaligned: *unaligned,
            },
            OpAst::Buf(kind, r) => {
                let kw = match kind {
                    BufOp::Read => "read",
                    BufOp::Write => "write",
                    BufOp::WritePart => "write part",
                    BufOp::Mma => "mma",
                    BufOp::TmaStore => "tma_store",
                    BufOp::CpAsync => "cp_async",
                };
                let buf = self.obj_ref(r, kw, Want::Buffer)?;
                match kind {
                    BufOp::Read => Op::Read { buf },
                    BufOp::Write => Op::Write {
                        buf,
                        part: false,
                        value: None,
                    },
                    BufOp::WritePart => Op::Write {
                        buf,
                        part: true,
                        value: None,
                    },
                    BufOp::Mma => Op::Mma { buf },
                    BufOp::TmaStore => Op::TmaStore { src: buf },
                    BufOp::CpAsync => Op::CpAsync { dst: buf },
                }
            }
            OpAst::WriteValue { buf, value } => {
                let value = self.const_expr(value, "the value of a write");
                let buf = self.obj_ref(buf, "write", Want::Buffer)?;
                Op::Write {
                    buf,
                    part: false,
                    value,
                }
            }
            OpAst::Tma {
                dst,
                bar,
                bytes,
                multicast,
            } => {
                let dst = self.obj_ref(dst, "tma", Want::Buffer);
                let bar = self.obj_ref(bar, "tma", Want::HwBarrier);
                let bytes = self.expr(bytes);
                let multicast = multicast.as_ref().map(|m| self.expr(m));
                if let Some(m) = &multicast {
                    if self.cluster <= 1 {
                        self.error(
                            "E0212",
                            "`multicast` needs a cluster of more than one block",
                            m.span,
                            "no peer block",
                            Some("declare `cluster N` with N > 1, or drop `multicast`".into()),
                        );
                    } else if let Some(v) = self.const_value(m) {
                        let n = self.cluster;
                        if v <= 0 || v >= (1i64 << n) {
                            self.error(
                                "E0213",
                                format!("multicast mask {v:#b} does not fit a cluster of {n}"),
                                m.span,
                                format!("= {v:#b}"),
                                Some(format!(
                                    "the mask has one bit per block: a non-zero value below {:#b}",
                                    1i64 << n
                                )),
                            );
                        }
                    }
                }
                Op::Tma {
                    dst: dst?,
                    bar: bar?,
                    bytes,
                    multicast,
                }
            }
            OpAst::BulkWaitRead(n) => Op::BulkWaitRead { n: self.expr(n) },
            OpAst::WaitGroup(n) => Op::WaitGroup { n: self.expr(n) },
            OpAst::CpAsyncArrive { bar, noinc } => Op::CpAsyncArrive {
                bar: self.obj_ref(bar, "cp_async_arrive", Want::HwBarrier)?,
                noinc: *noinc,
            },
            OpAst::Pipe(kind, r) => {
                let kw = match kind {
                    PipeOp::ProducerAcquire => "producer_acquire",
                    PipeOp::ProducerCommit => "producer_commit",
                    PipeOp::ConsumerWait => "consumer_wait",
                    PipeOp::ConsumerRelease => "consumer_release",
                    PipeOp::Quit => "quit",
                };
                let pipe = self.obj_ref(r, kw, Want::Pipeline)?;
                match kind {
                    PipeOp::ProducerAcquire => Op::ProducerAcquire { pipe },
                    PipeOp::ProducerCommit => Op::ProducerCommit { pipe },
                    PipeOp::ConsumerWait => Op::ConsumerWait { pipe },
                    PipeOp::ConsumerRelease => Op::ConsumerRelease { pipe },
                    PipeOp::Quit => Op::Quit { pipe },
                }
            }
            OpAst::ConsumerWaitPrior { pipe, n } => {
                let pipe = self.obj_ref(pipe, "consumer_wait_prior", Want::Pipeline);
                let n = self.expr(n);
                Op::ConsumerWaitPrior { pipe: pipe?, n }
            }
            OpAst::MemcpyAsync { dst, pipe } => {
                let dst = self.obj_ref(dst, "memcpy_async", Want::Buffer);
                let pipe = self.obj_ref(pipe, "memcpy_async", Want::Pipeline);
                Op::MemcpyAsync {
                    dst: dst?,
                    pipe: pipe?,
                }
            }
            OpAst::Global(kind, r, s) => {
                let kw = match kind {
                    GlobalOp::Store => "store",
                    GlobalOp::Load => "load",
                    GlobalOp::StoreRelease => "store_release",
                    GlobalOp::LoadAcquire => "load_acquire",
                };
                let global = self.obj_ref(r, kw, Want::Global);
                if let (GlobalOp::Store | GlobalOp::Load, Some((_, span))) = (kind, s) {
                    self.error(
                        "E0214",
                        format!("plain `{kw}` takes no scope"),
                        *span,
                        "scope given here",
                        Some(format!(
                            "a scoped access is `{}` X scope S",
                            if *kind == GlobalOp::Store {
                                "store_release"
                            } else {
                                "load_acquire"
                            }
                        )),
                    );
                }
                let global = global?;
                let sc = s.map_or(MemScope::Sys, |s| s.0);
                match kind {
                    GlobalOp::Store => Op::Store { global },
                    GlobalOp::Load => Op::Load { global },
                    GlobalOp::StoreRelease => Op::StoreRelease { global, scope: sc },
                    GlobalOp::LoadAcquire => Op::LoadAcquire { global, scope: sc },
                }
            }
            OpAst::Fence(s) => Op::Fence { scope: *s },
        })
    }

    /// `wait B token T`: T must be a token local taken from the same barrier.
    fn token_use(&mut self, token: &ast::Name, bar: Option<&ObjRef>) -> Option<LocalId> {
        let n = &token.text;
        let local = self.lookup_local(n);
        let Some(id) = local else {
            let cands: Vec<String> = if self.helpful() {
                self.locals_in_scope()
                    .into_iter()
                    .filter(|(_, id)| self.locals[id.0 as usize].kind == LocalKind::Token)
                    .map(|(n, _)| n.to_string())
                    .collect()
            } else {
                Vec::new()
            };
            let help = did_you_mean(n, cands.iter().map(|s| s.as_str()))
                .or_else(|| Some(format!("take a token first: `let {n} = arrive B`")));
            self.error(
                "E0201",
                format!("unknown token `{n}`"),
                token.span,
                "not declared",
                help,
            );
            return None;
        };
        if self.locals[id.0 as usize].kind != LocalKind::Token {
            self.error(
                "E0209",
                format!("`{n}` is an integer, not a phase token"),
                token.span,
                "not a token",
                Some(format!(
                    "tokens come from `let {n} = arrive B`; to wait on a phase bit use `wait B parity E`"
                )),
            );
            return None;
        }
        if let (Some(src), Some(bar)) = (self.tokens.get(&id).copied(), bar) {
            let this_index = bar.index.as_ref().and_then(|i| self.const_value(i));
            let other_object = src.object != bar.object;
            let other_index = matches!((src.index, this_index), (Some(a), Some(b)) if a != b);
            if other_object || other_index {
                let from = &self.objects[src.object.0 as usize].name;
                let from = match src.index {
                    Some(i) if self.objects[src.object.0 as usize].len.is_some() => {
                        format!("{from}[{i}]")
                    }
                    _ => from.clone(),
                };
                self.error(
                    "E0208",
                    format!("token `{n}` came from `{from}`, not from this barrier"),
                    token.span,
                    format!("taken by `arrive {from}`"),
                    Some(format!(
                        "a token is only valid for the barrier it came from (semantics.md B5): \
                         wait on `{from}`"
                    )),
                );
                return None;
            }
        }
        Some(id)
    }
}
