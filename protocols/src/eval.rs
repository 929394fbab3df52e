//! Integer semantics of `.phase` expressions (language.md §3.2), shared by the loader's
//! constant folding and by the back ends, so that all of them agree on every corner:
//!
//! - values are `i64`; overflow is an error, never a wrap;
//! - `/` and `%` truncate toward zero (as in C); by zero is an error;
//! - `<<` and `>>` need a shift amount in `0..=63`; `<<` that loses bits is an overflow;
//!   `>>` is arithmetic;
//! - comparisons, `&&`, `||` and `!` give 0 or 1; any non-zero value is true; `&&` and `||`
//!   evaluate both operands (there are no side effects to skip).

use crate::ir::{BinaryOp, Builtin, Expr, ExprKind, LocalId, Program, UnaryOp};

/// Why an expression has no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvalError {
    Overflow,
    DivByZero,
    /// Shift amount outside `0..=63`.
    BadShift,
}

impl EvalError {
    pub fn describe(self) -> &'static str {
        match self {
            EvalError::Overflow => "arithmetic overflow",
            EvalError::DivByZero => "division by zero",
            EvalError::BadShift => "shift amount outside 0..=63",
        }
    }
}

pub fn eval_unary(op: UnaryOp, a: i64) -> Result<i64, EvalError> {
    match op {
        UnaryOp::Neg => a.checked_neg().ok_or(EvalError::Overflow),
        UnaryOp::Not => Ok(i64::from(a == 0)),
    }
}

pub fn eval_binary(op: BinaryOp, a: i64, b: i64) -> Result<i64, EvalError> {
    use BinaryOp::*;
    let bool_ = |x: bool| Ok(i64::from(x));
    match op {
        Or => bool_(a != 0 || b != 0),
        And => bool_(a != 0 && b != 0),
        Eq => bool_(a == b),
        Ne => bool_(a != b),
        Lt => bool_(a < b),
        Le => bool_(a <= b),
        Gt => bool_(a > b),
        Ge => bool_(a >= b),
        BitOr => Ok(a | b),
        BitXor => Ok(a ^ b),
        BitAnd => Ok(a & b),
        Shl => {
            if !(0..=63).contains(&b) {
                return Err(EvalError::BadShift);
            }
            let r = a << b;
            if (r >> b) != a {
                Err(EvalError::Overflow)
            } else {
                Ok(r)
            }
        }
        Shr => {
            if !(0..=63).contains(&b) {
                return Err(EvalError::BadShift);
            }
            Ok(a >> b)
        }
        Add => a.checked_add(b).ok_or(EvalError::Overflow),
        Sub => a.checked_sub(b).ok_or(EvalError::Overflow),
        Mul => a.checked_mul(b).ok_or(EvalError::Overflow),
        Div => {
            if b == 0 {
                Err(EvalError::DivByZero)
            } else {
                a.checked_div(b).ok_or(EvalError::Overflow)
            }
        }
        Rem => {
            if b == 0 {
                Err(EvalError::DivByZero)
            } else {
                a.checked_rem(b).ok_or(EvalError::Overflow)
            }
        }
    }
}

/// Evaluate an IR expression. `local` and `builtin` give the values of locals and thread
/// builtins; either may answer `None` ("not known"), and then the result is `Ok(None)`
/// unless a known part already fails.
pub fn eval(
    program: &Program,
    e: &Expr,
    local: &mut dyn FnMut(LocalId) -> Option<i64>,
    builtin: &mut dyn FnMut(Builtin) -> Option<i64>,
) -> Result<Option<i64>, EvalError> {
    Ok(match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Param(p) => Some(program.param(*p).value),
        ExprKind::Local(l) => local(*l),
        ExprKind::Builtin(b) => builtin(*b),
        ExprKind::Unary(op, a) => match eval(program, a, local, builtin)? {
            Some(a) => Some(eval_unary(*op, a)?),
            None => None,
        },
        ExprKind::Binary(op, a, b) => {
            let a = eval(program, a, local, builtin)?;
            let b = eval(program, b, local, builtin)?;
            match (a, b) {
                (Some(a), Some(b)) => Some(eval_binary(*op, a, b)?),
                _ => None,
            }
        }
        ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
            let a = eval(program, a, local, builtin)?;
            let b = eval(program, b, local, builtin)?;
            match (a, b) {
                (Some(a), Some(b)) => Some(if matches!(e.kind, ExprKind::Min(..)) {
                    a.min(b)
                } else {
                    a.max(b)
                }),
                _ => None,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corners() {
        assert_eq!(eval_binary(BinaryOp::Div, -7, 2), Ok(-3));
        assert_eq!(eval_binary(BinaryOp::Rem, -7, 2), Ok(-1));
        assert_eq!(
            eval_binary(BinaryOp::Div, i64::MIN, -1),
            Err(EvalError::Overflow)
        );
        assert_eq!(eval_binary(BinaryOp::Rem, 1, 0), Err(EvalError::DivByZero));
        assert_eq!(eval_binary(BinaryOp::Shl, 1, 62), Ok(1 << 62));
        assert_eq!(eval_binary(BinaryOp::Shl, 1, 63), Err(EvalError::Overflow));
        assert_eq!(eval_binary(BinaryOp::Shl, 1, 64), Err(EvalError::BadShift));
        assert_eq!(eval_binary(BinaryOp::Shr, -8, 1), Ok(-4));
        assert_eq!(eval_binary(BinaryOp::And, 2, 3), Ok(1));
        assert_eq!(eval_unary(UnaryOp::Not, 5), Ok(0));
        assert_eq!(eval_unary(UnaryOp::Neg, i64::MIN), Err(EvalError::Overflow));
    }
}
