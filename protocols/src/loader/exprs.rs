//! Expressions and object references: name resolution, constant folding, index checks.

use super::{Loader, Named};
use crate::ast;
use crate::eval::{EvalError, eval_binary, eval_unary};
use crate::ir::*;
use crate::suggest::did_you_mean;

pub const BUILTINS: [(&str, Builtin); 6] = [
    ("tid", Builtin::Tid),
    ("lane", Builtin::Lane),
    ("warp", Builtin::Warp),
    ("cta", Builtin::Cta),
    ("nthreads", Builtin::NThreads),
    ("ncta", Builtin::NCta),
];

/// At most this many names of one kind are considered for "did you mean".
pub const MAX_CANDIDATES: usize = 512;

/// The operations that take `bytes OFF .. +LEN` (language.md, "Byte ranges").
pub const BYTE_RANGE_OPS: &[&str] = &["read", "write", "mma", "tma"];

/// The longest byte range (1 GiB: more than any shared memory).
pub const MAX_BYTE_RANGE: i64 = 1 << 30;

/// The kinds of object an operation accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// `mbarrier` or `barrier` (with or without completion).
    Barrier,
    /// `mbarrier` or `barrier` without completion: ops with a transaction count or a
    /// hardware-only arrive (cp.async, TMA).
    HwBarrier,
    Buffer,
    Pipeline,
    Global,
}

impl Want {
    fn accepts(self, kind: &ObjectKind) -> bool {
        match self {
            Want::Barrier => matches!(kind, ObjectKind::MBarrier | ObjectKind::Barrier { .. }),
            Want::HwBarrier => matches!(kind, ObjectKind::MBarrier | ObjectKind::Barrier { .. }),
            Want::Buffer => *kind == ObjectKind::Buffer,
            Want::Pipeline => matches!(kind, ObjectKind::Pipeline(_)),
            Want::Global => *kind == ObjectKind::Global,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Want::Barrier | Want::HwBarrier => "a barrier (`mbarrier` or `barrier`)",
            Want::Buffer => "a `buffer`",
            Want::Pipeline => "a `pipeline`",
            Want::Global => "a `global`",
        }
    }

    fn declare_hint(self) -> &'static str {
        match self {
            Want::Barrier | Want::HwBarrier => "declare one with `mbarrier NAME`",
            Want::Buffer => "declare one with `buffer NAME`",
            Want::Pipeline => "declare one with `pipeline NAME thread`",
            Want::Global => "declare one with `global NAME`",
        }
    }
}

pub fn kind_name(kind: &ObjectKind) -> &'static str {
    match kind {
        ObjectKind::MBarrier => "an mbarrier",
        ObjectKind::Barrier { completion: false } => "a barrier",
        ObjectKind::Barrier { completion: true } => "a barrier with completion",
        ObjectKind::Pipeline(PipelineKind::Thread) => "a thread pipeline",
        ObjectKind::Pipeline(PipelineKind::Block { .. }) => "a block pipeline",
        ObjectKind::Buffer => "a buffer",
        ObjectKind::Global => "a global",
    }
}

/// Folding failed and the error is already reported.
pub struct Reported;

impl Loader<'_> {
    /// A constant expression over literals and earlier parameters (`what` says where it is).
    pub(super) fn const_expr(&mut self, e: &ast::Expr, what: &str) -> Option<i64> {
        let before = self.errors.len();
        let ir = self.resolve(e, Some(what));
        if self.errors.len() != before {
            return None;
        }
        self.fold(&ir).ok().flatten()
    }

    /// A statement expression: locals, parameters and builtins; constant parts are folded
    /// so that overflow and division by zero in them are reported now.
    pub(super) fn expr(&mut self, e: &ast::Expr) -> Expr {
        let before = self.errors.len();
        let ir = self.resolve(e, None);
        if self.errors.len() == before {
            let _ = self.fold(&ir);
        }
        ir
    }

    /// The value of an expression when it is constant, without reporting anything.
    pub(super) fn const_value(&self, e: &Expr) -> Option<i64> {
        let params = &self.params;
        fold_quiet(params, e)
    }

    /// Fold an expression: `Ok(Some(v))` constant, `Ok(None)` depends on the thread,
    /// `Err` overflow or division by zero, reported at the offending sub-expression.
    pub(super) fn fold(&mut self, e: &Expr) -> Result<Option<i64>, Reported> {
        let r = match &e.kind {
            ExprKind::Int(v) => return Ok(Some(*v)),
            ExprKind::Param(p) => return Ok(Some(self.params[p.0 as usize].value)),
            ExprKind::Local(_) | ExprKind::Builtin(_) => return Ok(None),
            ExprKind::Unary(op, a) => match self.fold(a)? {
                Some(a) => eval_unary(*op, a).map(Some),
                None => return Ok(None),
            },
            ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.fold(a)?, self.fold(b)?);
                match (a, b) {
                    (Some(a), Some(b)) => eval_binary(*op, a, b).map(Some),
                    _ => return Ok(None),
                }
            }
            ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
                let (a, b) = (self.fold(a)?, self.fold(b)?);
                return Ok(match (a, b) {
                    (Some(a), Some(b)) if matches!(e.kind, ExprKind::Min(..)) => Some(a.min(b)),
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                });
            }
        };
        r.map_err(|err| {
            let (code, help) = match err {
                EvalError::Overflow => ("E0303", "values are signed 64-bit; overflow is an error"),
                EvalError::DivByZero => ("E0304", "the divisor is zero"),
                EvalError::BadShift => ("E0303", "shift amounts must be in 0..=63"),
            };
            self.error(
                code,
                format!("{} in a constant expression", err.describe()),
                e.span,
                err.describe(),
                Some(help.into()),
            );
            Reported
        })
    }

    /// Names a value could be, for "did you mean".
    /// Innermost locals first; bounded so that a huge file with many unknown names stays
    /// linear.
    fn value_candidates(&self, constant: bool) -> Vec<String> {
        let mut c: Vec<String> = Vec::new();
        if !self.helpful() {
            return c;
        }
        if !constant {
            c.extend(
                self.locals_in_scope()
                    .into_iter()
                    .map(|(n, _)| n.to_string()),
            );
            c.extend(BUILTINS.iter().map(|(n, _)| n.to_string()));
        }
        c.extend(
            self.params
                .iter()
                .take(MAX_CANDIDATES)
                .map(|p| p.name.clone()),
        );
        c
    }

    /// AST -> IR expression. `constant = Some(what)` allows only literals and parameters.
    fn resolve(&mut self, e: &ast::Expr, constant: Option<&str>) -> Expr {
        let kind = match &e.kind {
            ast::ExprKind::Int(v) => ExprKind::Int(*v),
            ast::ExprKind::Name(n) => self.resolve_name(n, e, constant),
            ast::ExprKind::Unary(op, a) => {
                ExprKind::Unary(*op, Box::new(self.resolve(a, constant)))
            }
            ast::ExprKind::Binary(op, a, b) => ExprKind::Binary(
                *op,
                Box::new(self.resolve(a, constant)),
                Box::new(self.resolve(b, constant)),
            ),
            ast::ExprKind::Min(a, b) => ExprKind::Min(
                Box::new(self.resolve(a, constant)),
                Box::new(self.resolve(b, constant)),
            ),
            ast::ExprKind::Max(a, b) => ExprKind::Max(
                Box::new(self.resolve(a, constant)),
                Box::new(self.resolve(b, constant)),
            ),
        };
        Expr { kind, span: e.span }
    }

    fn resolve_name(&mut self, n: &str, e: &ast::Expr, constant: Option<&str>) -> ExprKind {
        if constant.is_none()
            && let Some(id) = self.lookup_local(n)
        {
            if self.locals[id.0 as usize].kind == LocalKind::Token {
                self.error(
                    "E0207",
                    format!("token `{n}` used as an integer"),
                    e.span,
                    "a phase token",
                    Some(format!(
                        "a token from `let {n} = arrive B` can only be used in `wait B token {n}`"
                    )),
                );
            }
            return ExprKind::Local(id);
        }
        if let Some(Named::Param(p)) = self.names.get(n) {
            return ExprKind::Param(*p);
        }
        if let Some((_, b)) = BUILTINS.iter().find(|(bn, _)| *bn == n) {
            if let Some(what) = constant {
                self.error(
                    "E0302",
                    format!("`{n}` is not a constant"),
                    e.span,
                    "differs per thread",
                    Some(format!(
                        "{what} must be a constant expression over literals and parameters"
                    )),
                );
            }
            return ExprKind::Builtin(*b);
        }
        if let Some(Named::Object(o)) = self.names.get(n) {
            let kind = kind_name(&self.objects[o.0 as usize].kind);
            self.error(
                "E0204",
                format!("`{n}` is {kind}, not a value"),
                e.span,
                kind.to_string(),
                Some(
                    "expressions are integers over literals, parameters, locals and builtins"
                        .into(),
                ),
            );
            return ExprKind::Int(0);
        }
        if let Some(what) = constant
            && self.lookup_local(n).is_some()
        {
            self.error(
                "E0302",
                format!("`{n}` is not a constant"),
                e.span,
                "a local variable",
                Some(format!(
                    "{what} must be a constant expression over literals and parameters"
                )),
            );
            return ExprKind::Int(0);
        }
        let candidates = self.value_candidates(constant.is_some());
        let help = did_you_mean(n, candidates.iter().map(|s| s.as_str()))
            .or_else(|| {
                constant.map(|_| "only parameters declared above this line can be used here".into())
            })
            .or_else(|| match n {
                "arrive" => Some("`let T = arrive B` needs the barrier after `arrive`".into()),
                "test_wait" => Some("write `let X = test_wait B parity E`".into()),
                _ => None,
            });
        self.error(
            "E0201",
            format!("unknown name `{n}`"),
            e.span,
            "not declared",
            help,
        );
        ExprKind::Int(0)
    }

    /// Resolve `NAME[i] @ r` for operation `op`, which needs an object of kind `want`.
    pub(super) fn obj_ref(&mut self, r: &ast::ObjRefAst, op: &str, want: Want) -> Option<ObjRef> {
        let index = r.index.as_ref().map(|e| self.expr(e));
        let cta = r.cta.as_ref().map(|e| self.expr(e));
        let name = &r.name.text;
        let id = match self.names.get(name) {
            Some(Named::Object(o)) => *o,
            Some(Named::Param(_)) => {
                self.error(
                    "E0204",
                    format!(
                        "`{op}` needs {}, but `{name}` is a parameter",
                        want.describe()
                    ),
                    r.name.span,
                    "a parameter",
                    None,
                );
                return None;
            }
            None => {
                let is_value =
                    self.lookup_local(name).is_some() || BUILTINS.iter().any(|(b, _)| b == name);
                if is_value {
                    self.error(
                        "E0204",
                        format!("`{op}` needs {}, but `{name}` is a value", want.describe()),
                        r.name.span,
                        "an integer, not an object",
                        None,
                    );
                    return None;
                }
                let helpful = self.helpful();
                let wanted: Vec<&str> = self
                    .objects
                    .iter()
                    .filter(|o| helpful && want.accepts(&o.kind))
                    .take(MAX_CANDIDATES)
                    .map(|o| o.name.as_str())
                    .collect();
                let help = did_you_mean(name, wanted.iter().copied())
                    .or_else(|| {
                        did_you_mean(
                            name,
                            self.objects
                                .iter()
                                .take(if helpful { MAX_CANDIDATES } else { 0 })
                                .map(|o| o.name.as_str()),
                        )
                    })
                    .or_else(|| Some(want.declare_hint().to_string()));
                self.error(
                    "E0201",
                    format!("unknown object `{name}`"),
                    r.name.span,
                    "not declared",
                    help,
                );
                return None;
            }
        };
        let obj = &self.objects[id.0 as usize];
        let (obj_kind, obj_len) = (obj.kind.clone(), obj.len);
        let mut ok = true;
        if !want.accepts(&obj_kind) {
            let helpful = self.helpful();
            let wanted: Vec<&str> = self
                .objects
                .iter()
                .filter(|o| helpful && want.accepts(&o.kind))
                .take(9)
                .map(|o| o.name.as_str())
                .collect();
            let wanted = if wanted.len() == 9 {
                let mut w = wanted[..8].to_vec();
                w.push("...");
                w
            } else {
                wanted
            };
            let help = if wanted.is_empty() {
                want.declare_hint().to_string()
            } else {
                format!(
                    "{} in this file: {}",
                    match want {
                        Want::Barrier | Want::HwBarrier => "barriers",
                        Want::Buffer => "buffers",
                        Want::Pipeline => "pipelines",
                        Want::Global => "globals",
                    },
                    wanted.join(", ")
                )
            };
            self.error(
                "E0203",
                format!(
                    "`{op}` needs {}, but `{name}` is {}",
                    want.describe(),
                    kind_name(&obj_kind)
                ),
                r.name.span,
                kind_name(&obj_kind),
                Some(help),
            );
            ok = false;
        } else if want == Want::HwBarrier && obj_kind == (ObjectKind::Barrier { completion: true })
        {
            self.error(
                "E0211",
                format!("`{op}` cannot be used on `{name}`, a barrier with a completion function"),
                r.name.span,
                "software barrier",
                Some(
                    "a barrier `with completion` is a software barrier (semantics.md §3.1): it has \
                     no transaction count and no hardware arrive; use an `mbarrier` or a plain \
                     `barrier`"
                        .into(),
                ),
            );
            ok = false;
        }
        match (obj_len, &index) {
            (Some(n), None) => {
                self.error(
                    "E0205",
                    format!("`{name}` is an array of {n} and needs an index"),
                    r.span,
                    "no index",
                    Some(format!("write `{name}[i]` with i in 0..{n}")),
                );
                ok = false;
            }
            (None, Some(i)) => {
                self.error(
                    "E0205",
                    format!("`{name}` is not an array and cannot be indexed"),
                    i.span,
                    "index on a scalar",
                    Some(format!("write `{name}`, or declare it as `{name}[N]`")),
                );
                ok = false;
            }
            (Some(n), Some(i)) => {
                if let Some(v) = self.const_value(i)
                    && !(0..i64::from(n)).contains(&v)
                {
                    self.error(
                        "E0206",
                        format!("index {v} is out of range for `{name}[{n}]`"),
                        i.span,
                        format!("= {v}"),
                        Some(format!("valid indices are 0..{n}")),
                    );
                    ok = false;
                }
            }
            (None, None) => {}
        }
        if let Some(c) = &cta {
            if self.cluster <= 1 {
                self.error(
                    "E0212",
                    format!("`{name} @ ...` names a peer block, but the cluster has one block"),
                    c.span,
                    "no peer block",
                    Some("declare `cluster N` with N > 1, or drop the `@ ...`".into()),
                );
                ok = false;
            } else if let Some(v) = self.const_value(c)
                && !(0..i64::from(self.cluster)).contains(&v)
            {
                let n = self.cluster;
                self.error(
                    "E0213",
                    format!("cluster rank {v} is out of range for a cluster of {n}"),
                    c.span,
                    format!("= {v}"),
                    Some(format!("ranks are 0..{n}")),
                );
                ok = false;
            }
        }
        let bytes = match &r.bytes {
            None => None,
            Some(b) => {
                let (off, len, at) = &**b;
                let off = self.expr(off);
                let len_span = len.span;
                let len = self.const_expr(len, "the length of a byte range");
                if !BYTE_RANGE_OPS.contains(&op) {
                    self.error(
                        "E0215",
                        format!("`{op}` takes no byte range: it accesses the whole instance"),
                        *at,
                        "a byte range",
                        Some(format!(
                            "byte ranges go on {}; drop `bytes ...` here",
                            BYTE_RANGE_OPS
                                .iter()
                                .map(|o| format!("`{o}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )),
                    );
                    ok = false;
                    None
                } else {
                    match len {
                        Some(l) if (1..=MAX_BYTE_RANGE).contains(&l) => {
                            Some(Box::new(ByteRange { off, len: l }))
                        }
                        Some(l) => {
                            self.error(
                                "E0310",
                                format!("a byte range of {l} bytes"),
                                len_span,
                                format!("= {l}"),
                                Some(format!("the length is 1..={MAX_BYTE_RANGE}")),
                            );
                            ok = false;
                            None
                        }
                        None => {
                            ok = false;
                            None
                        }
                    }
                }
            }
        };
        ok.then_some(ObjRef {
            object: id,
            index,
            cta,
            bytes,
            span: r.span,
        })
    }
}

/// Silent constant folding (no reports): `None` when not constant or when it fails.
fn fold_quiet(params: &[Param], e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Param(p) => params.get(p.0 as usize).map(|p| p.value),
        ExprKind::Local(_) | ExprKind::Builtin(_) => None,
        ExprKind::Unary(op, a) => eval_unary(*op, fold_quiet(params, a)?).ok(),
        ExprKind::Binary(op, a, b) => {
            eval_binary(*op, fold_quiet(params, a)?, fold_quiet(params, b)?).ok()
        }
        ExprKind::Min(a, b) => Some(fold_quiet(params, a)?.min(fold_quiet(params, b)?)),
        ExprKind::Max(a, b) => Some(fold_quiet(params, a)?.max(fold_quiet(params, b)?)),
    }
}
