//! Declarations: parameters, block and cluster sizes, objects.

use super::{Loader, Named};
use crate::ast::{self, ObjectDecl};
use crate::ir::*;
use crate::span::Span;

/// Largest array length of a declared object.
pub const MAX_ARRAY_LEN: i64 = 65_536;

impl Loader<'_> {
    /// A name for a new top-level declaration; reports a clash with an earlier one.
    fn declare(&mut self, name: &ast::Name) -> bool {
        if let Some(prev) = self.names.get(&name.text) {
            let (what, span) = match *prev {
                Named::Param(p) => ("parameter", self.params[p.0 as usize].span),
                Named::Object(o) => ("object", self.objects[o.0 as usize].span),
            };
            let l = self.file.line_of(span);
            self.error(
                "E0202",
                format!("`{}` is declared twice", name.text),
                name.span,
                format!("already declared as a {what} on line {l}"),
                Some("give it another name".into()),
            );
            return false;
        }
        true
    }

    pub(super) fn param(&mut self, name: &ast::Name, value: &ast::Expr, span: Span) {
        let declared = self.const_expr(value, "a parameter");
        let over = self
            .overrides
            .iter()
            .rev()
            .find(|(n, _)| *n == name.text)
            .map(|(_, v)| *v);
        if !self.declare(name) {
            return;
        }
        let id = ParamId(self.params.len() as u32);
        self.names.insert(name.text.clone(), Named::Param(id));
        self.params.push(Param {
            name: name.text.clone(),
            value: over.or(declared).unwrap_or(0),
            span,
            overridden: over.is_some(),
        });
    }

    pub(super) fn block_decl(&mut self, e: &ast::Expr, span: Span) {
        if let Some((_, prev)) = self.block {
            let l = self.file.line_of(prev);
            self.error(
                "E0310",
                "`block` declared twice",
                span,
                format!("first declared on line {l}"),
                None,
            );
            return;
        }
        let b = self.block_size(e);
        self.block = Some((b, span));
    }

    pub(super) fn cluster_decl(&mut self, e: &ast::Expr, span: Span) {
        if let Some((_, prev)) = self.cluster_decl {
            let l = self.file.line_of(prev);
            self.error(
                "E0310",
                "`cluster` declared twice",
                span,
                format!("first declared on line {l}"),
                None,
            );
            return;
        }
        let c = self.cluster_size(e);
        self.cluster_decl = Some((c, span));
    }

    /// Threads per block, 1..=1024 (1 after an error, so that loading goes on).
    pub(super) fn block_size(&mut self, e: &ast::Expr) -> u32 {
        match self.const_expr(e, "a block size") {
            Some(v) if (1..=1024).contains(&v) => v as u32,
            Some(v) => {
                self.error(
                    "E0305",
                    format!("block size {v} is outside 1..=1024"),
                    e.span,
                    format!("= {v}"),
                    Some("a CUDA thread block has 1 to 1024 threads".into()),
                );
                1
            }
            None => 1,
        }
    }

    /// Blocks per cluster, 1..=16.
    pub(super) fn cluster_size(&mut self, e: &ast::Expr) -> u32 {
        match self.const_expr(e, "a cluster size") {
            Some(v) if (1..=16).contains(&v) => v as u32,
            Some(v) => {
                self.error(
                    "E0306",
                    format!("cluster size {v} is outside 1..=16"),
                    e.span,
                    format!("= {v}"),
                    Some(
                        "a cluster has at most 16 blocks (8 portably; 16 with non-portable sizes)"
                            .into(),
                    ),
                );
                1
            }
            None => 1,
        }
    }

    /// A constant in `lo..=hi` for a declaration field; `None` after an error.
    fn ranged(&mut self, e: &ast::Expr, what: &str, lo: i64, hi: i64) -> Option<u32> {
        let v = self.const_expr(e, what)?;
        if (lo..=hi).contains(&v) {
            Some(v as u32)
        } else {
            self.error(
                "E0308",
                format!("{what} {v} is outside {lo}..={hi}"),
                e.span,
                format!("= {v}"),
                None,
            );
            None
        }
    }

    pub(super) fn object(
        &mut self,
        name: &ast::Name,
        kind: &ObjectDecl,
        len: Option<&ast::Expr>,
        span: Span,
    ) {
        let len = match len {
            Some(e) => match self.ranged(e, "array length", 1, MAX_ARRAY_LEN) {
                Some(n) => Some(n),
                None => Some(1),
            },
            None => None,
        };
        let kind = match kind {
            ObjectDecl::MBarrier => ObjectKind::MBarrier,
            ObjectDecl::Barrier { completion } => ObjectKind::Barrier {
                completion: *completion,
            },
            ObjectDecl::Buffer => ObjectKind::Buffer,
            ObjectDecl::Global => ObjectKind::Global,
            ObjectDecl::PipelineThread => ObjectKind::Pipeline(PipelineKind::Thread),
            ObjectDecl::PipelineBlock {
                stages,
                producers,
                consumers,
            } => {
                let s = self.ranged(stages, "pipeline stage count", 1, 1024);
                let p = self.ranged(producers, "pipeline producer count", 1, 1024);
                let c = self.ranged(consumers, "pipeline consumer count", 1, 1024);
                ObjectKind::Pipeline(PipelineKind::Block {
                    stages: s.unwrap_or(1),
                    producers: p.unwrap_or(1),
                    consumers: c.unwrap_or(1),
                })
            }
        };
        if !self.declare(name) {
            return;
        }
        let id = ObjectId(self.objects.len() as u32);
        self.names.insert(name.text.clone(), Named::Object(id));
        self.objects.push(Object {
            name: name.text.clone(),
            kind,
            len,
            span,
        });
    }
}
