//! Statements: the generator's state, the body's control flow (let, assignments, if, for,
//! while, roles, elect, exit) and the helpers that name objects. Seams: [`kernel`] (the kernel
//! around the protocol), [`ops`] (one lowering per operation).

mod kernel;
mod ops;

use super::expr::{cond, ident, local, print};
use super::layout::{Layout, MAX_WORDS};
use super::{LowerError, Mode, unsupported};
use protocols::SourceFile;
use protocols::ir::{ObjRef, ObjectKind, Program, Stmt, StmtKind};
use std::fmt::Write;

pub(crate) struct Gen<'a> {
    program: &'a Program,
    source: Option<&'a SourceFile>,
    layout: &'a Layout,
    mode: Mode,
    non_aligned_syncthreads: bool,
    proxy_window: bool,
    next_stmt: usize,
    depth: usize,
    /// Threads per block of the kernel being lowered.
    block: u32,
}

impl<'a> Gen<'a> {
    pub fn new(
        program: &'a Program,
        source: Option<&'a SourceFile>,
        layout: &'a Layout,
        options: &super::LowerOptions,
    ) -> Self {
        Gen {
            program,
            source,
            layout,
            mode: options.mode,
            non_aligned_syncthreads: options.non_aligned_syncthreads,
            proxy_window: options.proxy_window,
            next_stmt: 0,
            depth: 1,
            block: 0,
        }
    }

    fn indent(&self) -> String {
        "  ".repeat(self.depth)
    }

    fn line(&self, out: &mut String, text: &str) {
        let _ = writeln!(out, "{}{}", self.indent(), text);
    }

    /// `// line N: <source text>` for a statement, when the source is known.
    fn comment(&self, out: &mut String, span: protocols::Span) {
        if let Some(src) = self.source {
            let lc = src.line_col(span.start);
            let text = src
                .text
                .get(span.start as usize..span.end as usize)
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("")
                .trim();
            self.line(out, &format!("// line {}: {}", lc.line, text));
        }
    }

    /// A thread leaving (`exit`, or the end of the program: a trace step of its own, see
    /// `Layout::build`), then its finish. In confirm mode a traced thread leaves at its turn;
    /// one with no step left leaves at once (block-wide: it does not wait for the trace). In
    /// fuzz mode `pc_step_begin` returns at once. `counted`: pass the statement's occurrence
    /// counter (an `exit`) rather than 0 (the end, reached once).
    fn leave(&mut self, out: &mut String, counted: bool, note: &str) {
        let id = self.next_stmt;
        self.next_stmt += 1;
        let occ = if counted {
            format!("pc_occ_{id}")
        } else {
            "0".into()
        };
        self.line(
            out,
            &format!(
                "{{ bool pc_tr = pc_step_begin(pc, {id}, {occ}, false, true, true); pc_step_end(pc, pc_tr, {id}); }}{note}"
            ),
        );
        self.line(out, "pc_finish();");
    }

    fn body(&mut self, out: &mut String, body: &[Stmt]) -> Result<(), LowerError> {
        for s in body {
            self.stmt(out, s)?;
        }
        Ok(())
    }

    fn block(&mut self, out: &mut String, body: &[Stmt]) -> Result<(), LowerError> {
        self.depth += 1;
        self.body(out, body)?;
        self.depth -= 1;
        Ok(())
    }

    fn stmt(&mut self, out: &mut String, s: &Stmt) -> Result<(), LowerError> {
        let p = self.program;
        match &s.kind {
            StmtKind::Let { local: l, value } => {
                self.line(
                    out,
                    &format!("long long {} = {};", local(p, *l), print(p, value)),
                );
            }
            StmtKind::Assign { local: l, value } => {
                self.line(out, &format!("{} = {};", local(p, *l), print(p, value)));
            }
            StmtKind::If {
                cond: c,
                then_body,
                else_body,
            } => {
                self.line(out, &format!("if ({}) {{", cond(p, c)));
                self.block(out, then_body)?;
                if !else_body.is_empty() {
                    self.line(out, "} else {");
                    self.block(out, else_body)?;
                }
                self.line(out, "}");
            }
            StmtKind::For {
                var,
                start,
                end,
                body,
            } => {
                let v = local(p, *var);
                self.line(
                    out,
                    &format!(
                        "for (long long {v} = {}, {v}_end = {}; {v} < {v}_end; {v}++) {{",
                        print(p, start),
                        print(p, end)
                    ),
                );
                self.block(out, body)?;
                self.line(out, "}");
            }
            StmtKind::While { cond: c, body } => {
                self.line(out, &format!("while ({}) {{", cond(p, c)));
                self.line(
                    out,
                    "  if (++pc.trips > (1u << 20)) { atomicAdd(&out[PC_OUT_RUNAWAY], 1ull); pc.dead = 1; break; }",
                );
                self.block(out, body)?;
                self.line(out, "}");
            }
            StmtKind::Role {
                role,
                cond: c,
                body,
            } => {
                self.line(
                    out,
                    &format!("if ({}) {{  // role {}", cond(p, c), p.role(*role).name),
                );
                self.block(out, body)?;
                self.line(out, "}");
            }
            StmtKind::Elect { body } => {
                self.comment(out, s.span);
                self.line(out, "{  // elect: one lane of the converged warp");
                self.line(out, "  pc_u32 pc_m = pc_warp_mask();");
                self.line(out, "  __syncwarp(pc_m);");
                self.line(out, "  if (pc_elect(pc_m)) {");
                self.depth += 1;
                self.block(out, body)?;
                self.depth -= 1;
                self.line(out, "  }");
                self.line(out, "}");
            }
            StmtKind::Exit => {
                self.comment(out, s.span);
                self.leave(out, true, "");
                self.line(out, "return;");
            }
            StmtKind::Op(op) => self.op(out, s, op)?,
        }
        Ok(())
    }

    /// An mbarrier address (`pc_u64*`) for an mbarrier or a block-scope `cuda::barrier`.
    fn mb_ptr(&self, r: &ObjRef) -> Result<String, LowerError> {
        let o = self.program.object(r.object);
        let name = ident(&o.name);
        let idx = self.index(r);
        match &o.kind {
            ObjectKind::MBarrier => Ok(format!("&{name}[{idx}]")),
            ObjectKind::Barrier { completion: false } => Ok(format!(
                "cuda::device::barrier_native_handle({name}[{idx}])"
            )),
            ObjectKind::Barrier { completion: true } => Err(unsupported(
                format!(
                    "`{}` is a barrier with a completion function (a software barrier): it has no \
                     mbarrier for this operation",
                    o.name
                ),
                Some(r.span),
            )),
            _ => Err(unsupported(
                format!("`{}` is not a barrier", o.name),
                Some(r.span),
            )),
        }
    }

    fn index(&self, r: &ObjRef) -> String {
        match &r.index {
            Some(e) => print(self.program, e),
            None => "0".into(),
        }
    }

    fn rank(&self, r: &ObjRef) -> Option<String> {
        r.cta.as_ref().map(|e| print(self.program, e))
    }

    /// A barrier with a completion function: libcu++'s software barrier (no mbarrier).
    fn is_software_barrier(&self, r: &ObjRef) -> bool {
        matches!(
            self.program.object(r.object).kind,
            ObjectKind::Barrier { completion: true }
        )
    }

    fn is_libcu_barrier(&self, r: &ObjRef) -> bool {
        matches!(
            self.program.object(r.object).kind,
            ObjectKind::Barrier { .. }
        )
    }

    fn buffer_args(&self, r: &ObjRef) -> Result<(String, u32, u32, u32), LowerError> {
        let o = self.program.object(r.object);
        let b = self
            .layout
            .buffer(r.object.0)
            .ok_or_else(|| unsupported(format!("`{}` is not a buffer", o.name), Some(r.span)))?;
        let mut ptr = format!("{}[{}]", ident(&o.name), self.index(r));
        if let Some(rank) = self.rank(r) {
            ptr = format!("pc_map_rank({ptr}, {rank})");
        }
        Ok((ptr, b.words.min(MAX_WORDS), b.size, b.staging_fill))
    }

    /// `, true` when some statement writes the buffer in parts (its accesses check the count
    /// of part writes in flight), else nothing.
    fn parts_arg(&self, r: &ObjRef) -> &'static str {
        if self.layout.buffer(r.object.0).is_some_and(|b| b.part) {
            ", true"
        } else {
            ""
        }
    }

    fn no_remote(&self, r: &ObjRef, what: &str) -> Result<(), LowerError> {
        if r.cta.is_some() {
            return Err(unsupported(
                format!(
                    "`{what}` on a peer block's barrier (`@`) is not supported by the hardware \
                     (PTX: only arrive, arrive_drop, expect_tx and complete_tx may address \
                     .shared::cluster); it is not lowered"
                ),
                Some(r.span),
            ));
        }
        Ok(())
    }

    fn barrier_type(&self, r: &ObjRef) -> &'static str {
        match self.program.object(r.object).kind {
            ObjectKind::Barrier { completion: true } => "pc_cbar_t",
            _ => "pc_bar_t",
        }
    }

    fn token_type(&self, r: &ObjRef) -> String {
        if self.is_libcu_barrier(r) {
            format!("{}::arrival_token", self.barrier_type(r))
        } else {
            "pc_u64".into()
        }
    }
}
