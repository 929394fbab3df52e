//! `syncthreads-would-do` (PC403): an mbarrier or `cuda::barrier` that does nothing a
//! `syncthreads` would not do, at the price of a shared-memory object and a polling wait.
//!
//! Criterion, all of:
//! 1. the object is an `mbarrier` or a `barrier` without completion function, and every `init`
//!    of it sets the count to exactly the kernel's block size;
//! 2. every other use is a *sync point*: `arrive_and_wait B`, or `arrive B` (count 1) directly
//!    followed, in the same statement list, by `wait B token T` on that arrive's token or by
//!    `wait B parity ...` on the same object reference (`inval` is allowed too); no
//!    `expect_tx`, `complete_tx`, TMA, `cp_async_arrive`, `arrive_drop`, `test_wait`, remote
//!    (`@ cta`) use or lone arrive or wait;
//! 3. every thread of the block surely reaches every sync point (per-thread walk of
//!    [`super::threads`]: not under a condition that some thread fails, not in `elect`, no
//!    thread has exited).
//!
//! Then each sync point is all threads arriving and waiting for all threads: what
//! `syncthreads` (`bar.sync 0`) does in one instruction.

use super::{interval, threads};
use crate::report::{Finding, Label};
use crate::rules::syncthreads_would_do::RULE;
use protocols::Span;
use protocols::ir::{Expr, ExprKind, ObjRef, ObjectKind, Op, Program, Stmt, StmtKind};

/// Structural equality of expressions, spans ignored.
fn same_expr(a: &Expr, b: &Expr) -> bool {
    use ExprKind::*;
    match (&a.kind, &b.kind) {
        (Int(x), Int(y)) => x == y,
        (Param(x), Param(y)) => x == y,
        (Local(x), Local(y)) => x == y,
        (Builtin(x), Builtin(y)) => x == y,
        (Unary(o, x), Unary(p, y)) => o == p && same_expr(x, y),
        (Binary(o, x1, x2), Binary(p, y1, y2)) => o == p && same_expr(x1, y1) && same_expr(x2, y2),
        (Min(x1, x2), Min(y1, y2)) | (Max(x1, x2), Max(y1, y2)) => {
            same_expr(x1, y1) && same_expr(x2, y2)
        }
        _ => false,
    }
}

fn same_ref(a: &ObjRef, b: &ObjRef) -> bool {
    a.object == b.object
        && a.cta.is_none()
        && b.cta.is_none()
        && match (&a.index, &b.index) {
            (None, None) => true,
            (Some(x), Some(y)) => same_expr(x, y),
            _ => false,
        }
}

#[derive(Default, Clone)]
struct Usage {
    inits: Vec<Span>,
    /// Statement spans of the sync points (the `arrive` or `arrive_and_wait`).
    sync_points: Vec<Span>,
    disqualified: bool,
}

fn scan(stmts: &[Stmt], usage: &mut [Usage]) {
    let mut i = 0;
    while i < stmts.len() {
        let s = &stmts[i];
        match &s.kind {
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                scan(then_body, usage);
                scan(else_body, usage);
            }
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::Role { body, .. }
            | StmtKind::Elect { body } => scan(body, usage),
            StmtKind::Op(op) => {
                let paired = match (op, stmts.get(i + 1).map(|n| &n.kind)) {
                    (
                        Op::Arrive {
                            bar,
                            count: None,
                            token,
                            ..
                        },
                        Some(StmtKind::Op(next)),
                    ) => match next {
                        Op::WaitToken {
                            bar: b2, token: t, ..
                        } => Some(*token == Some(*t) && same_ref(bar, b2)),
                        Op::WaitParity { bar: b2, .. } => Some(same_ref(bar, b2)),
                        _ => None,
                    },
                    _ => None,
                };
                match op {
                    Op::Init { bar, .. } if bar.cta.is_none() => {
                        usage[bar.object.0 as usize].inits.push(s.span)
                    }
                    Op::Inval { bar } if bar.cta.is_none() => {}
                    Op::ArriveAndWait { bar } if bar.cta.is_none() => {
                        usage[bar.object.0 as usize].sync_points.push(s.span)
                    }
                    Op::Arrive { bar, .. } if paired == Some(true) => {
                        usage[bar.object.0 as usize].sync_points.push(s.span);
                        i += 1; // the wait belongs to this sync point
                    }
                    _ => {
                        for r in op.object_refs() {
                            usage[r.object.0 as usize].disqualified = true;
                        }
                    }
                }
            }
            StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Exit => {}
        }
        i += 1;
    }
}

pub(crate) fn check(program: &Program, out: &mut Vec<Finding>) {
    for kernel in &program.kernels {
        let mut usage = vec![Usage::default(); program.objects.len()];
        scan(&kernel.body, &mut usage);
        // Init counts must be exactly the block size.
        interval::walk_kernel(program, kernel, interval::Params::Actual, |site| {
            if let Op::Init { bar, count } = site.op {
                let v = site.eval(count).range;
                if !(v.lo == v.hi && v.lo == kernel.block as i64) {
                    usage[bar.object.0 as usize].disqualified = true;
                }
            }
        });
        // Every thread must reach every sync point.
        threads::walk_kernel(program, kernel, |site| {
            let bar = match site.op {
                Op::ArriveAndWait { bar } | Op::Arrive { bar, .. } => bar,
                _ => return,
            };
            let u = &mut usage[bar.object.0 as usize];
            if u.sync_points.contains(&site.span)
                && (site.in_elect || site.reach.iter().any(|r| *r != threads::Reach::Yes))
            {
                u.disqualified = true;
            }
        });
        for (i, u) in usage.iter().enumerate() {
            let obj = &program.objects[i];
            let eligible = matches!(
                obj.kind,
                ObjectKind::MBarrier | ObjectKind::Barrier { completion: false }
            );
            if !eligible || u.disqualified || u.inits.is_empty() || u.sync_points.is_empty() {
                continue;
            }
            let mut labels: Vec<Label> = u
                .inits
                .iter()
                .map(|s| Label {
                    span: *s,
                    message: format!("counts the whole block ({} threads)", kernel.block),
                })
                .collect();
            labels.extend(u.sync_points.iter().skip(1).map(|s| Label {
                span: *s,
                message: "another whole-block arrive and wait".to_string(),
            }));
            out.push(super::finding(
                &RULE,
                u.sync_points[0],
                format!(
                    "`{}` counts all {} threads of the block and is only ever used by every \
                     thread arriving and waiting at once: that is a `syncthreads`, paid for \
                     with a shared-memory barrier and a polling wait",
                    obj.name, kernel.block
                ),
                labels,
                Some(format!(
                    "replace each arrive/wait on `{}` with `syncthreads` and drop the barrier",
                    obj.name
                )),
            ));
        }
    }
}
