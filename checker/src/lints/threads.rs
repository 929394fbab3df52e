//! Per-thread walk of a kernel body: which threads of the cluster reach each operation, and
//! which enclosing conditions split a warp (some of its lanes take the branch, others do not).
//!
//! Values are evaluated concretely per thread (`tid`, `lane`, `warp`, `cta` differ, params are
//! fixed). Anything that cannot be known statically (a loop variable over several trips, a
//! local assigned in a loop, a `test_wait` result) is `None`, and a condition over it splits
//! nobody: the lints built on this walk report only what they can show, never a guess.

use protocols::Span;
use protocols::ir::{
    BinaryOp, Builtin, Expr, ExprKind, Kernel, LocalId, Op, Program, Stmt, StmtKind, UnaryOp,
};

/// Whether a thread reaches a point of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    No,
    /// Depends on something not known statically.
    Maybe,
    Yes,
}

/// A condition under which lanes of one warp go different ways.
#[derive(Clone, Debug)]
pub(crate) struct Split {
    /// The condition (or the loop bounds) that differ.
    pub span: Span,
    /// Global warp indices (`cta * warps_per_block + warp`) it splits.
    pub warps: Vec<u32>,
}

/// What a visitor sees at each operation.
pub(crate) struct OpSite<'a> {
    pub op: &'a Op,
    pub span: Span,
    /// One entry per thread of the cluster, index `cta * block + tid`.
    pub reach: &'a [Reach],
    /// Lane-splitting conditions enclosing the operation, outermost first.
    pub splits: &'a [Split],
    /// Inside an `elect { ... }` body (one lane per warp runs it).
    pub in_elect: bool,
}

type Vals = Vec<Option<i64>>;

pub(crate) struct ThreadWalk<'p, F> {
    program: &'p Program,
    block: u32,
    cluster: u32,
    locals: Vec<Option<Vals>>,
    splits: Vec<Split>,
    elect_depth: u32,
    visit: F,
}

/// Walk one kernel, calling `visit` at every operation.
pub(crate) fn walk_kernel<F: FnMut(&OpSite<'_>)>(program: &Program, kernel: &Kernel, visit: F) {
    let n = (kernel.block * kernel.cluster) as usize;
    let mut w = ThreadWalk {
        program,
        block: kernel.block,
        cluster: kernel.cluster,
        locals: vec![None; program.locals.len()],
        splits: Vec::new(),
        elect_depth: 0,
        visit,
    };
    let reach = vec![Reach::Yes; n];
    w.walk_list(&kernel.body, reach);
}

/// Locals assigned (or bound) anywhere in `body`: their values change from trip to trip.
fn assigned_locals(body: &[Stmt], out: &mut Vec<LocalId>) {
    for s in body {
        match &s.kind {
            StmtKind::Let { local, .. } | StmtKind::Assign { local, .. } => out.push(*local),
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                assigned_locals(then_body, out);
                assigned_locals(else_body, out);
            }
            StmtKind::For { var, body, .. } => {
                out.push(*var);
                assigned_locals(body, out);
            }
            StmtKind::While { body, .. }
            | StmtKind::Role { body, .. }
            | StmtKind::Elect { body } => assigned_locals(body, out),
            StmtKind::Op(Op::TestWait { result, .. }) => out.push(*result),
            StmtKind::Exit | StmtKind::Op(_) => {}
        }
    }
}

impl<'p, F: FnMut(&OpSite<'_>)> ThreadWalk<'p, F> {
    fn threads(&self) -> usize {
        (self.block * self.cluster) as usize
    }

    fn set_local(&mut self, local: LocalId, vals: Vals, reach: &[Reach]) {
        let n = self.threads();
        let slot = self.locals[local.0 as usize].get_or_insert_with(|| vec![None; n]);
        for (t, r) in reach.iter().enumerate() {
            match r {
                Reach::Yes => slot[t] = vals[t],
                Reach::Maybe => slot[t] = None,
                Reach::No => {}
            }
        }
    }

    fn forget(&mut self, locals: &[LocalId], reach: &[Reach]) {
        let n = self.threads();
        for l in locals {
            self.set_local(*l, vec![None; n], reach);
        }
    }

    /// Warps in which threads that surely reach this point disagree on `keep`.
    fn split_warps(&self, reach: &[Reach], keep: &[Option<bool>]) -> Vec<u32> {
        let block = self.block as usize;
        let warps_per_block = block.div_ceil(32);
        let mut out = Vec::new();
        for cta in 0..self.cluster as usize {
            for warp in 0..warps_per_block {
                let (mut yes, mut no) = (false, false);
                let lo = cta * block + warp * 32;
                let hi = (lo + 32).min((cta + 1) * block);
                for t in lo..hi {
                    if reach[t] == Reach::Yes {
                        match keep[t] {
                            Some(true) => yes = true,
                            Some(false) => no = true,
                            None => {}
                        }
                    }
                }
                if yes && no {
                    out.push((cta * warps_per_block + warp) as u32);
                }
            }
        }
        out
    }

    /// Reach inside a branch taken where `taken` holds.
    fn narrow(reach: &[Reach], taken: &[Option<bool>]) -> Vec<Reach> {
        reach
            .iter()
            .zip(taken)
            .map(|(r, k)| match (r, k) {
                (Reach::No, _) | (_, Some(false)) => Reach::No,
                (r, Some(true)) => *r,
                (_, None) => Reach::Maybe,
            })
            .collect()
    }

    /// Reach after a construct whose body ran with `inner_in` and ended with `inner_out`.
    fn rejoin(reach: &[Reach], taken: &[Option<bool>], inner_out: &[Reach]) -> Vec<Reach> {
        reach
            .iter()
            .zip(taken)
            .zip(inner_out)
            .map(|((r, k), o)| match (r, k) {
                (Reach::No, _) => Reach::No,
                (r, Some(false)) => *r,
                (_, Some(true)) => *o,
                (_, None) => {
                    if *o == Reach::No {
                        Reach::Maybe
                    } else {
                        *o
                    }
                }
            })
            .collect()
    }

    fn with_split<R>(&mut self, span: Span, warps: Vec<u32>, f: impl FnOnce(&mut Self) -> R) -> R {
        let pushed = !warps.is_empty();
        if pushed {
            self.splits.push(Split { span, warps });
        }
        let r = f(self);
        if pushed {
            self.splits.pop();
        }
        r
    }

    fn walk_list(&mut self, stmts: &[Stmt], mut reach: Vec<Reach>) -> Vec<Reach> {
        for s in stmts {
            reach = self.walk_stmt(s, reach);
        }
        reach
    }

    fn truth(vals: &Vals) -> Vec<Option<bool>> {
        vals.iter().map(|v| v.map(|v| v != 0)).collect()
    }

    fn walk_stmt(&mut self, stmt: &Stmt, reach: Vec<Reach>) -> Vec<Reach> {
        match &stmt.kind {
            StmtKind::Let { local, value } | StmtKind::Assign { local, value } => {
                let v = self.eval(value);
                self.set_local(*local, v, &reach);
                reach
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let taken = Self::truth(&self.eval(cond));
                let not_taken: Vec<_> = taken.iter().map(|k| k.map(|b| !b)).collect();
                let warps = self.split_warps(&reach, &taken);
                let then_in = Self::narrow(&reach, &taken);
                let else_in = Self::narrow(&reach, &not_taken);
                let (then_out, else_out) = self.with_split(cond.span, warps, |w| {
                    (
                        w.walk_list(then_body, then_in),
                        w.walk_list(else_body, else_in),
                    )
                });
                reach
                    .iter()
                    .zip(&taken)
                    .enumerate()
                    .map(|(t, (r, k))| match (r, k) {
                        (Reach::No, _) => Reach::No,
                        (_, Some(true)) => then_out[t],
                        (_, Some(false)) => else_out[t],
                        (_, None) => match (then_out[t], else_out[t]) {
                            (Reach::No, Reach::No) => Reach::No,
                            (Reach::Yes, Reach::Yes) => Reach::Yes,
                            _ => Reach::Maybe,
                        },
                    })
                    .collect()
            }
            StmtKind::Role { cond, body, .. } => {
                let taken = Self::truth(&self.eval(cond));
                let warps = self.split_warps(&reach, &taken);
                let inner = Self::narrow(&reach, &taken);
                let out = self.with_split(cond.span, warps, |w| w.walk_list(body, inner));
                Self::rejoin(&reach, &taken, &out)
            }
            StmtKind::For {
                var,
                start,
                end,
                body,
            } => {
                let s = self.eval(start);
                let e = self.eval(end);
                let trips: Vec<Option<i64>> = s
                    .iter()
                    .zip(&e)
                    .map(|(s, e)| match (s, e) {
                        (Some(s), Some(e)) => Some(e.saturating_sub(*s).max(0)),
                        _ => None,
                    })
                    .collect();
                let runs: Vec<Option<bool>> = trips.iter().map(|t| t.map(|t| t > 0)).collect();
                // Lanes with different trip counts leave the loop at different times.
                let block = self.block as usize;
                let mut differ = Vec::new();
                let warps_per_block = block.div_ceil(32);
                for cta in 0..self.cluster as usize {
                    for warp in 0..warps_per_block {
                        let lo = cta * block + warp * 32;
                        let hi = (lo + 32).min((cta + 1) * block);
                        let mut seen: Option<i64> = None;
                        for t in lo..hi {
                            if reach[t] != Reach::Yes {
                                continue;
                            }
                            if let Some(n) = trips[t] {
                                match seen {
                                    None => seen = Some(n),
                                    Some(m) if m != n => {
                                        differ.push((cta * warps_per_block + warp) as u32);
                                        break;
                                    }
                                    _ => {}
                                }
                            }
                        }
                    }
                }
                let inner = Self::narrow(&reach, &runs);
                let mut changed = Vec::new();
                assigned_locals(body, &mut changed);
                self.forget(&changed, &inner);
                let var_vals: Vals = s
                    .iter()
                    .zip(&trips)
                    .map(|(s, t)| match (s, t) {
                        (Some(s), Some(1)) => Some(*s),
                        _ => None,
                    })
                    .collect();
                self.set_local(*var, var_vals, &inner);
                let span = start.span.to(end.span);
                let out = self.with_split(span, differ, |w| w.walk_list(body, inner));
                self.forget(&changed, &reach);
                Self::rejoin(&reach, &runs, &out)
            }
            StmtKind::While { cond, body } => {
                let mut changed = Vec::new();
                assigned_locals(body, &mut changed);
                self.forget(&changed, &reach);
                let taken = Self::truth(&self.eval(cond));
                let warps = self.split_warps(&reach, &taken);
                let inner = Self::narrow(&reach, &taken);
                let out = self.with_split(cond.span, warps, |w| w.walk_list(body, inner));
                self.forget(&changed, &reach);
                Self::rejoin(&reach, &taken, &out)
            }
            StmtKind::Elect { body } => {
                let inner: Vec<Reach> = reach
                    .iter()
                    .map(|r| {
                        if *r == Reach::No {
                            Reach::No
                        } else {
                            Reach::Maybe
                        }
                    })
                    .collect();
                self.elect_depth += 1;
                let out = self.walk_list(body, inner);
                self.elect_depth -= 1;
                reach
                    .iter()
                    .zip(&out)
                    .map(|(r, o)| match (r, o) {
                        (Reach::No, _) => Reach::No,
                        (r, Reach::Maybe) => *r,
                        _ => Reach::Maybe,
                    })
                    .collect()
            }
            StmtKind::Exit => vec![Reach::No; reach.len()],
            StmtKind::Op(op) => {
                if let Op::TestWait { result, .. } = op {
                    let n = self.threads();
                    self.set_local(*result, vec![None; n], &reach);
                }
                let site = OpSite {
                    op,
                    span: stmt.span,
                    reach: &reach,
                    splits: &self.splits,
                    in_elect: self.elect_depth > 0,
                };
                (self.visit)(&site);
                reach
            }
        }
    }

    fn builtin(&self, b: Builtin) -> Vals {
        let block = self.block as i64;
        (0..self.threads() as i64)
            .map(|t| {
                let (cta, tid) = (t / block, t % block);
                Some(match b {
                    Builtin::Tid => tid,
                    Builtin::Lane => tid % 32,
                    Builtin::Warp => tid / 32,
                    Builtin::Cta => cta,
                    Builtin::NThreads => block,
                    Builtin::NCta => self.cluster as i64,
                })
            })
            .collect()
    }

    fn eval(&self, e: &Expr) -> Vals {
        let n = self.threads();
        match &e.kind {
            ExprKind::Int(v) => vec![Some(*v); n],
            ExprKind::Param(p) => vec![Some(self.program.param(*p).value); n],
            ExprKind::Local(l) => self.locals[l.0 as usize]
                .clone()
                .unwrap_or_else(|| vec![None; n]),
            ExprKind::Builtin(b) => self.builtin(*b),
            ExprKind::Unary(op, a) => self
                .eval(a)
                .into_iter()
                .map(|a| {
                    let a = a?;
                    match op {
                        UnaryOp::Neg => a.checked_neg(),
                        UnaryOp::Not => Some((a == 0) as i64),
                    }
                })
                .collect(),
            ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.eval(a), self.eval(b));
                a.into_iter()
                    .zip(b)
                    .map(|(a, b)| binary(*op, a, b))
                    .collect()
            }
            ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
                let is_min = matches!(e.kind, ExprKind::Min(..));
                let (a, b) = (self.eval(a), self.eval(b));
                a.into_iter()
                    .zip(b)
                    .map(|(a, b)| {
                        let (a, b) = (a?, b?);
                        Some(if is_min { a.min(b) } else { a.max(b) })
                    })
                    .collect()
            }
        }
    }
}

/// One binary operation on possibly unknown values, as the model evaluates it (overflow and
/// division by zero are errors there, unknown here).
pub(crate) fn binary(op: BinaryOp, a: Option<i64>, b: Option<i64>) -> Option<i64> {
    // `&&` and `||` are decided by one known side.
    match op {
        BinaryOp::And if a == Some(0) || b == Some(0) => return Some(0),
        BinaryOp::Or if a.is_some_and(|a| a != 0) || b.is_some_and(|b| b != 0) => {
            return Some(1);
        }
        _ => {}
    }
    let (a, b) = (a?, b?);
    match op {
        BinaryOp::Or => Some((a != 0 || b != 0) as i64),
        BinaryOp::And => Some((a != 0 && b != 0) as i64),
        BinaryOp::Eq => Some((a == b) as i64),
        BinaryOp::Ne => Some((a != b) as i64),
        BinaryOp::Lt => Some((a < b) as i64),
        BinaryOp::Le => Some((a <= b) as i64),
        BinaryOp::Gt => Some((a > b) as i64),
        BinaryOp::Ge => Some((a >= b) as i64),
        BinaryOp::BitOr => Some(a | b),
        BinaryOp::BitXor => Some(a ^ b),
        BinaryOp::BitAnd => Some(a & b),
        BinaryOp::Shl => u32::try_from(b).ok().and_then(|b| a.checked_shl(b)),
        BinaryOp::Shr => u32::try_from(b).ok().and_then(|b| a.checked_shr(b)),
        BinaryOp::Add => a.checked_add(b),
        BinaryOp::Sub => a.checked_sub(b),
        BinaryOp::Mul => a.checked_mul(b),
        BinaryOp::Div => a.checked_div(b),
        BinaryOp::Rem => a.checked_rem(b),
    }
}
