//! Expressions by precedence climbing, with bounded depth.

use super::{Fail, MAX_EXPR_DEPTH, Parser, R};
use crate::ast::*;
use crate::diagnostics::LoadError;
use crate::ir::{BinaryOp, UnaryOp};
use crate::lexer::Tok;
use crate::span::Span;

impl Parser<'_> {
    pub(super) fn expr(&mut self) -> R<Expr> {
        self.expr_bp(0)
    }

    pub(super) fn too_deep(&mut self, span: Span) -> Fail {
        self.errors.push(LoadError {
            code: "E0103",
            message: format!("expression nested more than {MAX_EXPR_DEPTH} deep"),
            span: Some(span),
            label: "too deep".into(),
            help: Some("split it with `let`".into()),
        });
        Fail
    }

    pub(super) fn enter(&mut self) -> R<()> {
        if self.expr_depth >= MAX_EXPR_DEPTH {
            let s = self.peek().span;
            return Err(self.too_deep(s));
        }
        self.expr_depth += 1;
        Ok(())
    }

    pub(super) fn expr_bp(&mut self, min_prec: u8) -> R<Expr> {
        self.enter()?;
        let r = self.expr_bp_inner(min_prec);
        self.expr_depth -= 1;
        r
    }

    pub(super) fn expr_bp_inner(&mut self, min_prec: u8) -> R<Expr> {
        let (mut lhs, mut depth) = self.unary()?;
        while let Some((op, prec)) = binop(self.kind()) {
            if prec < min_prec {
                break;
            }
            self.bump();
            let rhs = self.expr_bp(prec + 1)?;
            depth = depth.max(expr_depth(&rhs)) + 1;
            if depth > MAX_EXPR_DEPTH {
                return Err(self.too_deep(lhs.span.to(rhs.span)));
            }
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span,
            };
        }
        Ok(lhs)
    }

    /// A unary expression and its tree depth.
    pub(super) fn unary(&mut self) -> R<(Expr, u32)> {
        let t = self.peek();
        let op = match t.kind {
            Tok::Minus => Some(UnaryOp::Neg),
            Tok::Bang => Some(UnaryOp::Not),
            _ => None,
        };
        if let Some(op) = op {
            self.bump();
            self.enter()?;
            let inner = self.unary();
            self.expr_depth -= 1;
            let (inner, depth) = inner?;
            let span = t.span.to(inner.span);
            return Ok((
                Expr {
                    kind: ExprKind::Unary(op, Box::new(inner)),
                    span,
                },
                depth + 1,
            ));
        }
        let e = self.primary()?;
        let d = expr_depth(&e);
        Ok((e, d))
    }

    pub(super) fn primary(&mut self) -> R<Expr> {
        let t = self.peek();
        match t.kind {
            Tok::Int(v) => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Int(v),
                    span: t.span,
                })
            }
            Tok::Ident => {
                let word = self.text(t);
                if (word == "min" || word == "max") && self.peek_at(1).kind == Tok::LParen {
                    self.bump();
                    self.bump();
                    let a = self.expr()?;
                    self.expect(Tok::Comma)?;
                    let b = self.expr()?;
                    self.expect(Tok::RParen)?;
                    let (a, b) = (Box::new(a), Box::new(b));
                    let kind = if word == "min" {
                        ExprKind::Min(a, b)
                    } else {
                        ExprKind::Max(a, b)
                    };
                    return Ok(Expr {
                        kind,
                        span: t.span.to(self.prev_span()),
                    });
                }
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Name(word.to_string()),
                    span: t.span,
                })
            }
            Tok::LParen => {
                self.bump();
                let e = self.expr()?;
                let close = self.expect(Tok::RParen)?;
                Ok(Expr {
                    kind: e.kind,
                    span: t.span.to(close),
                })
            }
            _ => Err(self.error_here("an expression")),
        }
    }
}
/// Tree depth of an expression (a leaf is 1). Iterative over the spine, bounded by the parser.
pub fn expr_depth(e: &Expr) -> u32 {
    match &e.kind {
        ExprKind::Int(_) | ExprKind::Name(_) => 1,
        ExprKind::Unary(_, a) => 1 + expr_depth(a),
        ExprKind::Binary(_, a, b) | ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
            1 + expr_depth(a).max(expr_depth(b))
        }
    }
}

/// Binary operators and their precedence (higher binds tighter), language.md §3.2.
fn binop(t: Tok) -> Option<(BinaryOp, u8)> {
    Some(match t {
        Tok::OrOr => (BinaryOp::Or, 1),
        Tok::AndAnd => (BinaryOp::And, 2),
        Tok::EqEq => (BinaryOp::Eq, 3),
        Tok::Ne => (BinaryOp::Ne, 3),
        Tok::Lt => (BinaryOp::Lt, 3),
        Tok::Le => (BinaryOp::Le, 3),
        Tok::Gt => (BinaryOp::Gt, 3),
        Tok::Ge => (BinaryOp::Ge, 3),
        Tok::Pipe => (BinaryOp::BitOr, 4),
        Tok::Caret => (BinaryOp::BitXor, 5),
        Tok::Amp => (BinaryOp::BitAnd, 6),
        Tok::Shl => (BinaryOp::Shl, 7),
        Tok::Shr => (BinaryOp::Shr, 7),
        Tok::Plus => (BinaryOp::Add, 8),
        Tok::Minus => (BinaryOp::Sub, 8),
        Tok::Star => (BinaryOp::Mul, 9),
        Tok::Slash => (BinaryOp::Div, 9),
        Tok::Percent => (BinaryOp::Rem, 9),
        _ => return None,
    })
}
