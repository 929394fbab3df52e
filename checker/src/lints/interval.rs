//! A small abstract interpretation of a kernel body: every integer is an interval
//! `lo..=hi` (over all threads, all trips), plus a flag saying the value is a *bit* (0 or 1).
//!
//! Params are exact, builtins range over the block (`tid` in `0..block`), loop variables over
//! their bounds, and locals assigned in loops are iterated to a fixpoint (widened to infinity
//! after a few rounds). The walk calls its visitor once per operation, after the enclosing loops
//! have reached their fixpoint, so each operation sees the values it can really take.

use protocols::Span;
use protocols::ir::{
    BinaryOp, Builtin, Expr, ExprKind, Kernel, Op, Program, Stmt, StmtKind, UnaryOp,
};

/// A closed interval of i64 values; `i64::MIN`/`i64::MAX` stand for "unbounded".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Interval {
    pub lo: i64,
    pub hi: i64,
}

impl Interval {
    pub const TOP: Interval = Interval {
        lo: i64::MIN,
        hi: i64::MAX,
    };
    pub const BIT: Interval = Interval { lo: 0, hi: 1 };

    pub fn exact(v: i64) -> Self {
        Interval { lo: v, hi: v }
    }

    fn from_i128(lo: i128, hi: i128) -> Self {
        let clamp = |v: i128| v.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        Interval {
            lo: clamp(lo),
            hi: clamp(hi),
        }
    }

    pub fn join(self, o: Interval) -> Interval {
        Interval {
            lo: self.lo.min(o.lo),
            hi: self.hi.max(o.hi),
        }
    }

    pub fn is_bounded(self) -> bool {
        self.lo != i64::MIN && self.hi != i64::MAX
    }

    fn nonneg(self) -> bool {
        self.lo >= 0
    }

    fn singleton(self) -> Option<i64> {
        (self.lo == self.hi).then_some(self.lo)
    }
}

/// The abstract value of an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AbsVal {
    pub range: Interval,
    /// Known to be 0 or 1 by construction (`x % 2`, `x & 1`, a comparison, a bit `^ 1`, ...).
    pub bit: bool,
}

impl AbsVal {
    const TOP: AbsVal = AbsVal {
        range: Interval::TOP,
        bit: false,
    };

    fn exact(v: i64) -> Self {
        AbsVal {
            range: Interval::exact(v),
            bit: v == 0 || v == 1,
        }
    }

    fn of(range: Interval) -> Self {
        AbsVal {
            range,
            bit: range.lo >= 0 && range.hi <= 1,
        }
    }

    const BIT: AbsVal = AbsVal {
        range: Interval::BIT,
        bit: true,
    };

    /// Whether only 0 and 1 can occur.
    pub fn is_bit(self) -> bool {
        self.bit || (self.range.lo >= 0 && self.range.hi <= 1)
    }

    fn join(self, o: AbsVal) -> AbsVal {
        AbsVal {
            range: self.range.join(o.range),
            bit: self.is_bit() && o.is_bit(),
        }
    }
}

/// What the visitor gets at each operation: the operation and a way to evaluate expressions in
/// the environment that holds there.
pub(crate) struct Site<'a, 'p> {
    pub op: &'a Op,
    pub span: Span,
    env: &'a Env<'p>,
}

impl Site<'_, '_> {
    pub fn eval(&self, e: &Expr) -> AbsVal {
        self.env.eval(e)
    }
}

#[derive(Clone)]
struct Env<'p> {
    program: &'p Program,
    block: u32,
    cluster: u32,
    /// Treat every param as any value >= 1 instead of its value (see [`Params`]).
    generic: bool,
    /// `None`: not bound on this path.
    locals: Vec<Option<AbsVal>>,
}

impl Env<'_> {
    /// Same values (the program and kernel are the same by construction).
    fn same(&self, other: &Env<'_>) -> bool {
        self.locals == other.locals
    }

    fn join(&mut self, other: &Env<'_>) {
        for (a, b) in self.locals.iter_mut().zip(&other.locals) {
            *a = match (*a, *b) {
                (Some(a), Some(b)) => Some(a.join(b)),
                (a, None) => a,
                (None, b) => b,
            };
        }
    }

    /// Push every growing bound to infinity.
    fn widen(&mut self, next: &Env<'_>) {
        for (a, b) in self.locals.iter_mut().zip(&next.locals) {
            if let (Some(a), Some(b)) = (a.as_mut(), b) {
                if b.range.lo < a.range.lo {
                    a.range.lo = i64::MIN;
                }
                if b.range.hi > a.range.hi {
                    a.range.hi = i64::MAX;
                }
                a.bit = a.bit && b.bit;
            }
        }
    }

    fn builtin(&self, b: Builtin) -> Interval {
        let block = self.block as i64;
        match b {
            Builtin::Tid => Interval {
                lo: 0,
                hi: block - 1,
            },
            Builtin::Lane => Interval {
                lo: 0,
                hi: (block - 1).min(31),
            },
            Builtin::Warp => Interval {
                lo: 0,
                hi: (block - 1) / 32,
            },
            Builtin::Cta => Interval {
                lo: 0,
                hi: self.cluster as i64 - 1,
            },
            Builtin::NThreads => Interval::exact(block),
            Builtin::NCta => Interval::exact(self.cluster as i64),
        }
    }

    fn eval(&self, e: &Expr) -> AbsVal {
        match &e.kind {
            ExprKind::Int(v) => AbsVal::exact(*v),
            ExprKind::Param(p) => {
                if self.generic {
                    AbsVal::of(Interval {
                        lo: 1,
                        hi: i64::MAX,
                    })
                } else {
                    AbsVal::exact(self.program.param(*p).value)
                }
            }
            ExprKind::Local(l) => self.locals[l.0 as usize].unwrap_or(AbsVal::TOP),
            ExprKind::Builtin(b) => AbsVal::of(self.builtin(*b)),
            ExprKind::Unary(UnaryOp::Not, _) => AbsVal::BIT,
            ExprKind::Unary(UnaryOp::Neg, a) => {
                let a = self.eval(a).range;
                AbsVal::of(Interval::from_i128(-(a.hi as i128), -(a.lo as i128)))
            }
            ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
                let (a, b) = (self.eval(a), self.eval(b));
                let range = if matches!(e.kind, ExprKind::Min(..)) {
                    Interval {
                        lo: a.range.lo.min(b.range.lo),
                        hi: a.range.hi.min(b.range.hi),
                    }
                } else {
                    Interval {
                        lo: a.range.lo.max(b.range.lo),
                        hi: a.range.hi.max(b.range.hi),
                    }
                };
                AbsVal {
                    range,
                    bit: a.is_bit() && b.is_bit(),
                }
            }
            ExprKind::Binary(op, a, b) => binary(*op, self.eval(a), self.eval(b)),
        }
    }
}

fn corners(a: Interval, b: Interval, f: impl Fn(i128, i128) -> i128) -> Interval {
    let c = [
        f(a.lo as i128, b.lo as i128),
        f(a.lo as i128, b.hi as i128),
        f(a.hi as i128, b.lo as i128),
        f(a.hi as i128, b.hi as i128),
    ];
    Interval::from_i128(*c.iter().min().unwrap(), *c.iter().max().unwrap())
}

/// Smallest all-ones mask covering `v` (v >= 0).
fn ones_cover(v: i64) -> i64 {
    if v <= 0 {
        0
    } else {
        let bits = 64 - v.leading_zeros();
        if bits >= 63 {
            i64::MAX
        } else {
            (1i64 << bits) - 1
        }
    }
}

fn binary(op: BinaryOp, a: AbsVal, b: AbsVal) -> AbsVal {
    use BinaryOp::*;
    let (x, y) = (a.range, b.range);
    // Exact operands: compute exactly (overflow or division by zero: unknown).
    if let (Some(p), Some(q)) = (x.singleton(), y.singleton())
        && let Some(v) = super::threads::binary(op, Some(p), Some(q))
    {
        return AbsVal::exact(v);
    }
    match op {
        Or | And | Eq | Ne | Lt | Le | Gt | Ge => AbsVal::BIT,
        Add => AbsVal::of(corners(x, y, |p, q| p + q)),
        Sub => AbsVal::of(corners(x, y, |p, q| p - q)),
        Mul => AbsVal::of(corners(x, y, |p, q| p * q)),
        Div => {
            if y.lo > 0 || y.hi < 0 {
                AbsVal::of(corners(x, y, |p, q| p / q))
            } else {
                AbsVal::TOP
            }
        }
        Rem => {
            // Division by zero is a model error, not a value: only non-zero divisors count.
            let m = (y.lo as i128).abs().max((y.hi as i128).abs()) - 1;
            if y.singleton() == Some(2) {
                // `x % 2`: a bit by construction (a negative x gives -1, whose low bit is 1).
                return AbsVal {
                    range: if x.nonneg() {
                        Interval::BIT
                    } else {
                        Interval { lo: -1, hi: 1 }
                    },
                    bit: true,
                };
            }
            let range = if x.nonneg() {
                Interval::from_i128(0, m.min(x.hi as i128))
            } else if x.hi <= 0 {
                Interval::from_i128((-m).max(x.lo as i128), 0)
            } else {
                Interval::from_i128(-m, m)
            };
            AbsVal::of(range)
        }
        BitAnd => {
            if y.singleton() == Some(1) || x.singleton() == Some(1) {
                return AbsVal::BIT;
            }
            let range = match (x.nonneg(), y.nonneg()) {
                (true, true) => Interval {
                    lo: 0,
                    hi: x.hi.min(y.hi),
                },
                (true, false) => Interval { lo: 0, hi: x.hi },
                (false, true) => Interval { lo: 0, hi: y.hi },
                (false, false) => Interval::TOP,
            };
            AbsVal {
                range,
                bit: a.is_bit() || b.is_bit(),
            }
        }
        BitOr | BitXor => {
            if x.nonneg() && y.nonneg() {
                let hi = ones_cover(x.hi.max(y.hi));
                let lo = if op == BitOr { x.lo.max(y.lo) } else { 0 };
                AbsVal {
                    range: Interval { lo, hi },
                    bit: a.is_bit() && b.is_bit(),
                }
            } else {
                AbsVal {
                    range: Interval::TOP,
                    bit: a.is_bit() && b.is_bit(),
                }
            }
        }
        Shl => {
            if x.nonneg() && y.nonneg() && y.hi < 63 {
                AbsVal::of(Interval::from_i128(
                    (x.lo as i128) << y.lo,
                    (x.hi as i128) << y.hi,
                ))
            } else {
                AbsVal::TOP
            }
        }
        Shr => {
            if x.nonneg() && y.nonneg() {
                let sh = |v: i64, s: i64| if s >= 63 { 0 } else { v >> s };
                AbsVal::of(Interval {
                    lo: sh(x.lo, y.hi),
                    hi: sh(x.hi, y.lo),
                })
            } else {
                AbsVal::TOP
            }
        }
    }
}

/// After this many rounds without a fixpoint, growing bounds jump to infinity.
const WIDEN_AFTER: u32 = 3;

struct Walk<'p, F> {
    visit: F,
    _p: std::marker::PhantomData<&'p ()>,
}

/// How params are valued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Params {
    /// Each param has its value (after overrides).
    Actual,
    /// Each param is any value >= 1: what a formula does for every configuration of the
    /// protocol (params are meant to be overridden), not only for this one.
    Generic,
}

/// Walk one kernel, calling `visit` once per operation with the values that hold there.
pub(crate) fn walk_kernel<F: FnMut(&Site<'_, '_>)>(
    program: &Program,
    kernel: &Kernel,
    params: Params,
    visit: F,
) {
    let env = Env {
        program,
        block: kernel.block,
        cluster: kernel.cluster,
        generic: params == Params::Generic,
        locals: vec![None; program.locals.len()],
    };
    let mut w = Walk {
        visit,
        _p: std::marker::PhantomData,
    };
    w.list(&kernel.body, env, true);
}

impl<'p, F: FnMut(&Site<'_, '_>)> Walk<'p, F> {
    fn list<'e>(&mut self, stmts: &[Stmt], mut env: Env<'e>, report: bool) -> Env<'e> {
        for s in stmts {
            env = self.stmt(s, env, report);
        }
        env
    }

    /// Run `body` to a fixpoint from `entry`; report once with the fixpoint environment.
    fn fixpoint<'e>(
        &mut self,
        entry: Env<'e>,
        report: bool,
        bind: &dyn Fn(&mut Env<'e>),
        body: &[Stmt],
    ) -> Env<'e> {
        let mut cur = entry.clone();
        for round in 0.. {
            let mut inside = cur.clone();
            bind(&mut inside);
            let out = self.list(body, inside, false);
            let mut next = entry.clone();
            next.join(&out);
            next.join(&cur);
            if next.same(&cur) {
                break;
            }
            if round >= WIDEN_AFTER {
                cur.widen(&next);
                // Widening reaches a fixpoint in one more round; guard anyway.
                if round > WIDEN_AFTER + 4 {
                    for v in cur.locals.iter_mut().flatten() {
                        *v = AbsVal::TOP;
                    }
                    break;
                }
            } else {
                cur = next;
            }
        }
        if report {
            let mut inside = cur.clone();
            bind(&mut inside);
            self.list(body, inside, true);
        }
        cur
    }

    fn stmt<'e>(&mut self, s: &Stmt, mut env: Env<'e>, report: bool) -> Env<'e> {
        match &s.kind {
            StmtKind::Let { local, value } | StmtKind::Assign { local, value } => {
                let v = env.eval(value);
                env.locals[local.0 as usize] = Some(v);
                env
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                let mut a = self.list(then_body, env.clone(), report);
                let b = self.list(else_body, env, report);
                a.join(&b);
                a
            }
            StmtKind::Role { body, .. } | StmtKind::Elect { body } => {
                let mut out = self.list(body, env.clone(), report);
                out.join(&env);
                out
            }
            StmtKind::For {
                var,
                start,
                end,
                body,
            } => {
                let (s, e) = (env.eval(start).range, env.eval(end).range);
                if e.hi <= s.lo {
                    return env; // never runs
                }
                let range = Interval {
                    lo: s.lo,
                    hi: e.hi.saturating_sub(1).max(s.lo),
                };
                let var = *var;
                let bind = move |env: &mut Env<'e>| {
                    env.locals[var.0 as usize] = Some(AbsVal::of(range));
                };
                self.fixpoint(env, report, &bind, body)
            }
            StmtKind::While { body, .. } => self.fixpoint(env, report, &|_| {}, body),
            StmtKind::Exit => env,
            StmtKind::Op(op) => {
                if report {
                    let site = Site {
                        op,
                        span: s.span,
                        env: &env,
                    };
                    (self.visit)(&site);
                }
                if let Op::TestWait { result, .. } = op {
                    env.locals[result.0 as usize] = Some(AbsVal::BIT);
                }
                env
            }
        }
    }
}
