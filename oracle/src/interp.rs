//! One protocol thread: interprets its kernel body from the IR (locals, builtins, structured
//! control flow) and calls the runtime for every operation. Local code is invisible to loom:
//! only the operations are steps.

use crate::data::{Kind, Wait, WarpKind};
use crate::runtime::{RENDEZVOUS, Step, Stopped, World, bar_gate};
use protocols::ir::{BinaryOp, Builtin, Expr, ExprKind, ObjRef, Op, Stmt, StmtKind, UnaryOp};

/// How a block of statements ended.
enum Flow {
    Normal,
    Exit,
}

pub struct Thread<'w> {
    w: &'w World,
    t: usize,
    locals: Vec<i64>,
}

impl<'w> Thread<'w> {
    pub fn new(w: &'w World, t: usize) -> Self {
        Thread {
            w,
            t,
            locals: vec![0; w.prog.program.locals.len()],
        }
    }

    /// Run the kernel body, then leave. A stopped execution just unwinds.
    pub fn run(mut self) {
        let prog = self.w.prog.clone();
        self.w.register(self.t);
        if let Ok(Flow::Normal) = self.block(&prog.kernel().body) {
            let _ = self.w.leave(self.t);
        }
    }

    /// Local code failed to evaluate (division by zero, an index out of range): the model
    /// itself is wrong, which ends the path like undefined behaviour.
    fn model_error<T>(&self) -> Step<T> {
        self.w.step(RENDEZVOUS, |d| {
            d.raise("model-error")?;
            Ok(((), false))
        })?;
        Err(Stopped)
    }

    fn block(&mut self, body: &[Stmt]) -> Step<Flow> {
        for s in body {
            if let Flow::Exit = self.stmt(s)? {
                return Ok(Flow::Exit);
            }
        }
        Ok(Flow::Normal)
    }

    fn stmt(&mut self, s: &Stmt) -> Step<Flow> {
        match &s.kind {
            StmtKind::Let { local, value } | StmtKind::Assign { local, value } => {
                self.locals[local.0 as usize] = self.eval(value)?;
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let body = if self.eval(cond)? != 0 {
                    then_body
                } else {
                    else_body
                };
                return self.block(body);
            }
            StmtKind::For {
                var,
                start,
                end,
                body,
            } => {
                let (a, b) = (self.eval(start)?, self.eval(end)?);
                for i in a..b {
                    self.locals[var.0 as usize] = i;
                    if let Flow::Exit = self.block(body)? {
                        return Ok(Flow::Exit);
                    }
                }
            }
            StmtKind::While { .. } => unreachable!("prepare() refuses while loops"),
            StmtKind::Role { cond, body, .. } => {
                if self.eval(cond)? != 0 {
                    return self.block(body);
                }
            }
            StmtKind::Elect { body } => {
                if self.warp(WarpKind::Elect, s.span)? {
                    return self.block(body);
                }
            }
            StmtKind::Exit => {
                self.w.leave(self.t)?;
                return Ok(Flow::Exit);
            }
            StmtKind::Op(op) => self.op(op, s)?,
        }
        Ok(Flow::Normal)
    }

    /// `elect` or `syncwarp`: returns whether this lane was elected.
    fn warp(&mut self, kind: WarpKind, span: protocols::span::Span) -> Step<bool> {
        let t = self.t;
        let mut uses = None;
        self.w.block(t, RENDEZVOUS, |d| {
            let g = *uses.get_or_insert_with(|| d.warp_arrive(t, kind, span));
            if d.warp.uses != g {
                // The arrival may have completed the collective: wake the others.
                Ok((Ok(d.threads[t].elected), true))
            } else {
                Ok((Err(Wait::Warp { uses: g }), false))
            }
        })
    }

    fn eval(&self, e: &Expr) -> Step<i64> {
        match self.value(e) {
            Some(v) => Ok(v),
            None => self.model_error(),
        }
    }

    fn value(&self, e: &Expr) -> Option<i64> {
        let p = &self.w.prog;
        Some(match &e.kind {
            ExprKind::Int(v) => *v,
            ExprKind::Param(id) => p.program.param(*id).value,
            ExprKind::Local(l) => self.locals[l.0 as usize],
            ExprKind::Builtin(b) => {
                let tid = self.t as i64;
                match b {
                    Builtin::Tid => tid,
                    Builtin::Lane => tid % 32,
                    Builtin::Warp => tid / 32,
                    Builtin::Cta => 0,
                    Builtin::NThreads => i64::from(p.threads),
                    Builtin::NCta => 1,
                }
            }
            ExprKind::Unary(op, x) => {
                let x = self.value(x)?;
                match op {
                    UnaryOp::Neg => x.checked_neg()?,
                    UnaryOp::Not => i64::from(x == 0),
                }
            }
            ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.value(a)?, self.value(b)?);
                match op {
                    BinaryOp::Or => i64::from(a != 0 || b != 0),
                    BinaryOp::And => i64::from(a != 0 && b != 0),
                    BinaryOp::Eq => i64::from(a == b),
                    BinaryOp::Ne => i64::from(a != b),
                    BinaryOp::Lt => i64::from(a < b),
                    BinaryOp::Le => i64::from(a <= b),
                    BinaryOp::Gt => i64::from(a > b),
                    BinaryOp::Ge => i64::from(a >= b),
                    BinaryOp::BitOr => a | b,
                    BinaryOp::BitXor => a ^ b,
                    BinaryOp::BitAnd => a & b,
                    BinaryOp::Shl => a.checked_shl(u32::try_from(b).ok()?)?,
                    BinaryOp::Shr => a.checked_shr(u32::try_from(b).ok()?)?,
                    BinaryOp::Add => a.checked_add(b)?,
                    BinaryOp::Sub => a.checked_sub(b)?,
                    BinaryOp::Mul => a.checked_mul(b)?,
                    BinaryOp::Div => a.checked_div(b)?,
                    BinaryOp::Rem => a.checked_rem(b)?,
                }
            }
            ExprKind::Min(a, b) => self.value(a)?.min(self.value(b)?),
            ExprKind::Max(a, b) => self.value(a)?.max(self.value(b)?),
        })
    }

    /// The flat index of an object instance (a barrier or a buffer).
    fn inst(&self, r: &ObjRef) -> Step<usize> {
        let p = &self.w.prog;
        let count = i64::from(p.program.object(r.object).count());
        let i = match &r.index {
            Some(e) => self.eval(e)?,
            None => 0,
        };
        if !(0..count).contains(&i) {
            return self.model_error();
        }
        Ok((p.base[r.object.0 as usize] as i64 + i) as usize)
    }

    fn op(&mut self, op: &Op, s: &Stmt) -> Step<()> {
        let (w, t) = (self.w, self.t);
        match op {
            Op::Compute | Op::FenceMbarrierInit => Ok(()),
            Op::Init { bar, count } => {
                let (b, n) = (self.inst(bar)?, self.eval(count)?);
                w.step(bar_gate(b), |d| Ok((d.init(t, b, n)?, true)))
            }
            Op::Arrive {
                bar, count, token, ..
            } => {
                let b = self.inst(bar)?;
                let n = match count {
                    Some(c) => self.eval(c)?,
                    None => 1,
                };
                let tok = w.step(bar_gate(b), |d| d.arrive(t, b, n))?;
                if let Some(l) = token {
                    self.locals[l.0 as usize] = tok;
                }
                Ok(())
            }
            Op::ArriveDrop { bar, .. } => {
                let b = self.inst(bar)?;
                w.step(bar_gate(b), |d| Ok(((), d.arrive_drop(t, b)?)))
            }
            Op::ArriveExpectTx { bar, bytes, .. } => {
                let (b, n) = (self.inst(bar)?, self.eval(bytes)?);
                w.step(bar_gate(b), |d| Ok(((), d.arrive_expect_tx(t, b, n)?)))
            }
            Op::ExpectTx { bar, bytes } => {
                let (b, n) = (self.inst(bar)?, self.eval(bytes)?);
                w.step(bar_gate(b), |d| Ok((d.expect_tx(t, b, n)?, false)))
            }
            Op::CompleteTx { bar, bytes } => {
                let (b, n) = (self.inst(bar)?, self.eval(bytes)?);
                w.step(bar_gate(b), |d| Ok(((), d.complete_tx(t, b, n)?)))
            }
            Op::WaitParity { bar, parity, .. } => {
                let (b, p) = (self.inst(bar)?, self.eval(parity)?);
                let wait = Wait::Parity { bar: b, parity: p };
                w.block(t, bar_gate(b), |d| {
                    Ok((d.wait_parity(t, b, p)?.ok_or(wait), false))
                })
            }
            Op::WaitToken { bar, token, .. } => {
                let b = self.inst(bar)?;
                let tok = self.locals[token.0 as usize];
                let wait = Wait::Phase {
                    bar: b,
                    phase: tok & 0xffff_ffff,
                };
                w.block(t, bar_gate(b), |d| {
                    Ok((d.wait_token(t, b, tok)?.ok_or(wait), false))
                })
            }
            Op::ArriveAndWait { bar } => {
                let b = self.inst(bar)?;
                let phase = w.step(bar_gate(b), |d| d.arrive_for_wait(t, b))?;
                let wait = Wait::Phase { bar: b, phase };
                w.block(t, bar_gate(b), |d| {
                    Ok((d.wait_past(t, b, phase)?.ok_or(wait), false))
                })
            }
            Op::TestWait {
                bar,
                parity,
                result,
            } => {
                let (b, p) = (self.inst(bar)?, self.eval(parity)?);
                let pass = w.step(bar_gate(b), |d| Ok((d.test_wait(t, b, p)?, false)))?;
                self.locals[result.0 as usize] = i64::from(pass);
                Ok(())
            }
            Op::SyncThreads => self.named(0, 0, true, false, true, s),
            Op::BarSync {
                id,
                count,
                unaligned,
            }
            | Op::BarArrive {
                id,
                count,
                unaligned,
            } => {
                let id = self.eval(id)?;
                let count = match count {
                    Some(c) => self.eval(c)?,
                    None => 0,
                };
                self.named(
                    id,
                    count,
                    matches!(op, Op::BarSync { .. }),
                    true,
                    !*unaligned,
                    s,
                )
            }
            Op::SyncWarp => self.warp(WarpKind::SyncWarp, s.span).map(|_| ()),
            Op::Read { buf } => self.access(buf, Kind::Read),
            Op::Write { buf, part, value } => self.access(
                buf,
                match (part, value) {
                    (true, _) => Kind::PartWrite,
                    (false, Some(v)) => Kind::ValueWrite(*v),
                    (false, None) => Kind::Write,
                },
            ),
            Op::Mma { buf } => self.access(buf, Kind::AsyncRead),
            Op::FenceProxyAsync => w.local(|d| d.fence_proxy_async(t)),
            Op::Tma {
                dst, bar, bytes, ..
            } => {
                let (x, b, n) = (self.inst(dst)?, self.inst(bar)?, self.eval(bytes)?);
                let ev = w.step(bar_gate(b), |d| Ok((d.tma(t, x, b, n)?, false)))?;
                w.post(ev)
            }
            Op::TmaStore { src } => {
                let x = self.inst(src)?;
                w.local(|d| d.tma_store(t, x))
            }
            Op::BulkCommit => w.local(|d| d.bulk_commit(t)),
            Op::BulkWaitRead { n } => {
                let n = self.eval(n)?;
                w.local(|d| d.bulk_wait_read(t, n))
            }
            Op::CpAsync { dst } => {
                let x = self.inst(dst)?;
                w.local(|d| d.cp_async(t, x))
            }
            Op::CommitGroup => w.local(|d| d.commit_group(t)),
            Op::WaitGroup { n } => {
                let n = self.eval(n)?;
                w.local(|d| d.wait_group(t, n))
            }
            Op::CpAsyncArrive { bar, noinc } => {
                let b = self.inst(bar)?;
                let ev = w.step(bar_gate(b), |d| {
                    Ok((d.cp_async_arrive(t, b, *noinc)?, false))
                })?;
                w.post(ev)
            }
            other => unreachable!("prepare() refuses `{}`", other.keyword()),
        }
    }

    fn access(&mut self, buf: &ObjRef, kind: Kind) -> Step<()> {
        let x = self.inst(buf)?;
        let t = self.t;
        self.w.local(|d| d.thread_access(t, x, kind))
    }

    fn named(
        &mut self,
        id: i64,
        count: i64,
        blocking: bool,
        check: bool,
        aligned: bool,
        s: &Stmt,
    ) -> Step<()> {
        let (w, t) = (self.w, self.t);
        if !blocking {
            return w.step(RENDEZVOUS, |d| {
                d.named_arrive(t, id, count, false, check, s.span, aligned)?;
                // The arrival may complete the use.
                Ok(((), true))
            });
        }
        let mut uses = None;
        w.block(t, RENDEZVOUS, |d| {
            let g = match uses {
                Some(g) => g,
                None => *uses.insert(d.named_arrive(t, id, count, true, check, s.span, aligned)?),
            };
            let id = id as usize;
            if d.named[id].uses != g {
                Ok((Ok(()), true))
            } else {
                Ok((Err(Wait::Named { id, uses: g }), false))
            }
        })
    }
}
