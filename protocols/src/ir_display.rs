//! A readable text dump of the IR, in `.phase`-like syntax with every name resolved.
//!
//! Locals print as `name%id` (each `let`, loop variable and token has its own slot, so
//! shadowing is visible), objects and parameters by name, binary operands that are themselves
//! binary in parentheses (the dump shows how the expression was grouped). [`dump`] adds the
//! source line of every statement; `Display for Program` prints the same without lines.
//! Used by golden tests and handy for debugging back ends.

use crate::ir::*;
use crate::span::SourceFile;
use std::fmt::{self, Write};

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&dump(self, None))
    }
}

/// The dump of a program; with `file`, each statement ends with `# line N`.
pub fn dump(p: &Program, file: Option<&SourceFile>) -> String {
    let mut d = Dumper {
        p,
        file,
        out: String::new(),
    };
    d.program();
    d.out
}

struct Dumper<'a> {
    p: &'a Program,
    file: Option<&'a SourceFile>,
    out: String,
}

impl Dumper<'_> {
    fn program(&mut self) {
        let p = self.p;
        let _ = writeln!(self.out, "protocol {}", p.name);
        for param in &p.params {
            let _ = writeln!(
                self.out,
                "param {} = {}{}",
                param.name,
                param.value,
                if param.overridden {
                    "  # overridden"
                } else {
                    ""
                }
            );
        }
        for o in &p.objects {
            let len = o.len.map_or(String::new(), |n| format!("[{n}]"));
            let decl = match &o.kind {
                ObjectKind::MBarrier => format!("mbarrier {}{len}", o.name),
                ObjectKind::Barrier { completion } => format!(
                    "barrier {}{len}{}",
                    o.name,
                    if *completion { " with completion" } else { "" }
                ),
                ObjectKind::Pipeline(PipelineKind::Thread) => {
                    format!("pipeline {}{len} thread", o.name)
                }
                ObjectKind::Pipeline(PipelineKind::Block {
                    stages,
                    producers,
                    consumers,
                }) => format!(
                    "pipeline {}{len} stages {stages} producers {producers} consumers {consumers}",
                    o.name
                ),
                ObjectKind::Buffer => format!("buffer {}{len}", o.name),
                ObjectKind::Global => format!("global {}", o.name),
            };
            let _ = writeln!(self.out, "{decl}");
        }
        for (i, r) in p.roles.iter().enumerate() {
            let _ = writeln!(self.out, "# role {i} = {}", r.name);
        }
        for k in &p.kernels {
            let _ = writeln!(
                self.out,
                "kernel {} domain {} block {} cluster {} {{{}",
                k.name,
                k.domain,
                k.block,
                k.cluster,
                if k.implicit { "  # implicit" } else { "" }
            );
            self.body(&k.body, 1);
            self.out.push_str("}\n");
        }
        for e in &p.expects {
            let verdict = match e.verdict {
                ExpectVerdict::Ok => "ok",
                ExpectVerdict::Deadlock => "deadlock",
                ExpectVerdict::Ub => "ub",
                ExpectVerdict::Race => "race",
                ExpectVerdict::Warning => "warning",
            };
            let _ = write!(self.out, "expect {verdict}");
            if let Some(r) = &e.rule {
                let _ = write!(self.out, " {r}");
            }
            if !e.overrides.is_empty() {
                let list: Vec<String> = e
                    .overrides
                    .iter()
                    .map(|(n, v)| format!("{n} = {v}"))
                    .collect();
                let _ = write!(self.out, " with {}", list.join(", "));
            }
            self.out.push('\n');
        }
        for s in &p.suppressions {
            let _ = writeln!(
                self.out,
                "# allow({}) on line {}{}",
                s.rules.join(", "),
                s.target_line,
                if s.reason.is_empty() {
                    String::new()
                } else {
                    format!(": {}", s.reason)
                }
            );
        }
    }

    fn line_comment(&self, s: &Stmt) -> String {
        match self.file {
            Some(f) => format!("  # line {}", f.line_of(s.span)),
            None => String::new(),
        }
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn body(&mut self, body: &[Stmt], depth: usize) {
        for s in body {
            self.stmt(s, depth);
        }
    }

    fn block(&mut self, head: String, s: &Stmt, body: &[Stmt], depth: usize) {
        self.indent(depth);
        let c = self.line_comment(s);
        let _ = writeln!(self.out, "{head} {{{c}");
        self.body(body, depth + 1);
        self.indent(depth);
        self.out.push_str("}\n");
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) {
        let e = |x: &Expr| expr(self.p, x);
        match &s.kind {
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                self.block(format!("if {}", e(cond)), s, then_body, depth);
                if !else_body.is_empty() {
                    self.indent(depth);
                    self.out.push_str("else {\n");
                    self.body(else_body, depth + 1);
                    self.indent(depth);
                    self.out.push_str("}\n");
                }
            }
            StmtKind::For {
                var,
                start,
                end,
                body,
            } => {
                let head = format!("for {} in {}..{}", self.local(*var), e(start), e(end));
                self.block(head, s, body, depth);
            }
            StmtKind::While { cond, body } => {
                self.block(format!("while {}", e(cond)), s, body, depth)
            }
            StmtKind::Role { role, cond, body } => {
                let head = format!("role {} when {}", self.p.role(*role).name, e(cond));
                self.block(head, s, body, depth);
            }
            StmtKind::Elect { body } => self.block("elect".into(), s, body, depth),
            _ => {
                let text = match &s.kind {
                    StmtKind::Let { local, value } => {
                        format!("let {} = {}", self.local(*local), e(value))
                    }
                    StmtKind::Assign { local, value } => {
                        format!("{} = {}", self.local(*local), e(value))
                    }
                    StmtKind::Exit => "exit".into(),
                    StmtKind::Op(op) => self.op(op),
                    _ => String::new(),
                };
                self.indent(depth);
                let c = self.line_comment(s);
                let _ = writeln!(self.out, "{text}{c}");
            }
        }
    }

    fn local(&self, id: LocalId) -> String {
        local_name(self.p, id)
    }

    fn op(&self, op: &Op) -> String {
        let p = self.p;
        let e = |x: &Expr| expr(p, x);
        let r = |x: &ObjRef| obj_ref(p, x);
        let scope = |s: &MemScope| match s {
            MemScope::Cta => "",
            MemScope::Cluster => " scope cluster",
            MemScope::Gpu => " scope gpu",
            MemScope::Sys => " scope sys",
        };
        let kw = op.keyword();
        match op {
            Op::Init { bar, count } => format!("{kw} {}, {}", r(bar), e(count)),
            Op::Inval { bar } | Op::ArriveAndWait { bar } => format!("{kw} {}", r(bar)),
            Op::Arrive {
                bar,
                count,
                token,
                scope: s,
            } => {
                let count = count
                    .as_ref()
                    .map_or(String::new(), |c| format!(", {}", e(c)));
                let lhs = token.map_or(String::new(), |t| format!("let {} = ", self.local(t)));
                format!("{lhs}{kw} {}{count}{}", r(bar), scope(s))
            }
            Op::ArriveDrop { bar, scope: s } => format!("{kw} {}{}", r(bar), scope(s)),
            Op::ArriveExpectTx {
                bar,
                bytes,
                scope: s,
            } => format!("{kw} {}, {}{}", r(bar), e(bytes), scope(s)),
            Op::ExpectTx { bar, bytes } | Op::CompleteTx { bar, bytes } => {
                format!("{kw} {}, {}", r(bar), e(bytes))
            }
            Op::WaitParity {
                bar,
                parity,
                scope: s,
            } => format!("wait {} parity {}{}", r(bar), e(parity), scope(s)),
            Op::WaitToken {
                bar,
                token,
                scope: s,
            } => format!("wait {} token {}{}", r(bar), self.local(*token), scope(s)),
            Op::TestWait {
                bar,
                parity,
                result,
            } => format!(
                "let {} = test_wait {} parity {}",
                self.local(*result),
                r(bar),
                e(parity)
            ),
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
                let count = count
                    .as_ref()
                    .map_or(String::new(), |c| format!(", {}", e(c)));
                let unaligned = if *unaligned { " unaligned" } else { "" };
                format!("{kw} {}{count}{unaligned}", e(id))
            }
            Op::Write {
                buf,
                value: Some(v),
                ..
            } => format!("{kw} {} value {v}", r(buf)),
            Op::Read { buf } | Op::Write { buf, .. } | Op::Mma { buf } => {
                format!("{kw} {}", r(buf))
            }
            Op::TmaStore { src } => format!("{kw} {}", r(src)),
            Op::CpAsync { dst } => format!("{kw} {}", r(dst)),
            Op::Tma {
                dst,
                bar,
                bytes,
                multicast,
            } => {
                let m = multicast
                    .as_ref()
                    .map_or(String::new(), |m| format!(" multicast {}", e(m)));
                format!("tma {} -> {}, {}{m}", r(dst), r(bar), e(bytes))
            }
            Op::BulkWaitRead { n } | Op::WaitGroup { n } => format!("{kw} {}", e(n)),
            Op::CpAsyncArrive { bar, noinc } => {
                format!("{kw} {}{}", r(bar), if *noinc { " noinc" } else { "" })
            }
            Op::ProducerAcquire { pipe }
            | Op::ProducerCommit { pipe }
            | Op::ConsumerWait { pipe }
            | Op::ConsumerRelease { pipe }
            | Op::Quit { pipe } => format!("{kw} {}", r(pipe)),
            Op::ConsumerWaitPrior { pipe, n } => format!("{kw} {}, {}", r(pipe), e(n)),
            Op::MemcpyAsync { dst, pipe } => format!("{kw} {} -> {}", r(dst), r(pipe)),
            Op::Store { global } | Op::Load { global } => format!("{kw} {}", r(global)),
            Op::StoreRelease { global, scope: s } | Op::LoadAcquire { global, scope: s } => {
                format!("{kw} {} scope {}", r(global), scope_name(*s))
            }
            Op::Fence { scope: s } => format!("fence scope {}", scope_name(*s)),
            Op::SyncThreads
            | Op::SyncWarp
            | Op::ClusterSync
            | Op::ClusterArrive
            | Op::ClusterWait
            | Op::FenceMbarrierInit
            | Op::FenceProxyAsync
            | Op::BulkCommit
            | Op::CommitGroup
            | Op::Compute => kw.to_string(),
        }
    }
}

pub fn scope_name(s: MemScope) -> &'static str {
    match s {
        MemScope::Cta => "cta",
        MemScope::Cluster => "cluster",
        MemScope::Gpu => "gpu",
        MemScope::Sys => "sys",
    }
}

pub fn builtin_name(b: Builtin) -> &'static str {
    match b {
        Builtin::Tid => "tid",
        Builtin::Lane => "lane",
        Builtin::Warp => "warp",
        Builtin::Cta => "cta",
        Builtin::NThreads => "nthreads",
        Builtin::NCta => "ncta",
    }
}

fn local_name(p: &Program, id: LocalId) -> String {
    format!("{}%{}", p.local(id).name, id.0)
}

/// `NAME`, `NAME[i]`, `NAME @ r`.
pub fn obj_ref(p: &Program, r: &ObjRef) -> String {
    let mut s = p.object(r.object).name.clone();
    if let Some(i) = &r.index {
        let _ = write!(s, "[{}]", expr(p, i));
    }
    if let Some(c) = &r.cta {
        let _ = write!(s, " @ {}", operand(p, c));
    }
    if let Some(b) = &r.bytes {
        let _ = write!(s, " bytes {} .. +{}", operand(p, &b.off), b.len);
    }
    s
}

/// An expression; binary sub-expressions are parenthesized.
pub fn expr(p: &Program, e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Param(id) => p.param(*id).name.clone(),
        ExprKind::Local(id) => local_name(p, *id),
        ExprKind::Builtin(b) => builtin_name(*b).to_string(),
        ExprKind::Unary(op, a) => {
            let sym = match op {
                UnaryOp::Neg => "-",
                UnaryOp::Not => "!",
            };
            format!("{sym}{}", operand(p, a))
        }
        ExprKind::Binary(op, a, b) => {
            format!("{} {} {}", operand(p, a), op.symbol(), operand(p, b))
        }
        ExprKind::Min(a, b) => format!("min({}, {})", expr(p, a), expr(p, b)),
        ExprKind::Max(a, b) => format!("max({}, {})", expr(p, a), expr(p, b)),
    }
}

fn operand(p: &Program, e: &Expr) -> String {
    match &e.kind {
        ExprKind::Binary(..) | ExprKind::Unary(..) => format!("({})", expr(p, e)),
        _ => expr(p, e),
    }
}
