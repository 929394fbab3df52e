//! Expressions: `.phase` integer expressions as C++ `long long` expressions.

use protocols::ir::{BinaryOp, Builtin, Expr, ExprKind, LocalId, Program, UnaryOp};

/// C++ keywords and names the prelude uses; a `.phase` name equal to one gets a `_` suffix.
const RESERVED: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "asm",
    "auto",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "class",
    "const",
    "constexpr",
    "continue",
    "default",
    "delete",
    "do",
    "double",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "max",
    "min",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "nullptr",
    "operator",
    "or",
    "private",
    "protected",
    "public",
    "register",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "template",
    "this",
    "throw",
    "true",
    "try",
    "typedef",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "while",
    "xor",
    "cuda",
    "std",
    "tid",
    "lane",
    "warp",
    "cta",
    "nthreads",
    "ncta",
    "pc",
    "out",
    "staging",
    "seq",
    "budget",
    "seed",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    // Statement words of `.phase` are names there too (language.md, "Statement words are
    // contextual"): `init` is called unqualified on `cuda::barrier`s, and `exit`, `read`,
    // `write` and `wait` are C library functions at namespace scope, where parameters live.
    "init",
    "exit",
    "read",
    "write",
    "wait",
];

/// A C++ identifier for a `.phase` name (params, objects).
pub fn ident(name: &str) -> String {
    if RESERVED.contains(&name) || name.starts_with("pc_") || name.starts_with("PC_") {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// A C identifier made of the name's letters, digits and underscores.
pub fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() { "protocol".into() } else { s }
}

/// The C++ name of a local: its `.phase` name plus its slot, so that shadowing and
/// per-trip `let`s never collide.
pub fn local(program: &Program, id: LocalId) -> String {
    format!("{}_{}", sanitize(&program.local(id).name), id.0)
}

/// Value of an expression that uses only literals and params.
pub fn const_eval(program: &Program, e: &Expr) -> Option<i64> {
    Some(match &e.kind {
        ExprKind::Int(v) => *v,
        ExprKind::Param(p) => program.param(*p).value,
        ExprKind::Local(_) | ExprKind::Builtin(_) => return None,
        ExprKind::Unary(op, a) => {
            let a = const_eval(program, a)?;
            match op {
                UnaryOp::Neg => a.checked_neg()?,
                UnaryOp::Not => i64::from(a == 0),
            }
        }
        ExprKind::Min(a, b) => const_eval(program, a)?.min(const_eval(program, b)?),
        ExprKind::Max(a, b) => const_eval(program, a)?.max(const_eval(program, b)?),
        ExprKind::Binary(op, a, b) => {
            let a = const_eval(program, a)?;
            let b = const_eval(program, b)?;
            binary(*op, a, b)?
        }
    })
}

/// The language's binary operators on values (None on overflow or division by zero).
pub fn binary(op: BinaryOp, a: i64, b: i64) -> Option<i64> {
    Some(match op {
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
    })
}

/// Print an expression. Comparisons and logical operators yield 0/1 as in the language.
pub fn print(program: &Program, e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(v) => {
            if *v == i64::MIN {
                "(-9223372036854775807LL - 1)".into()
            } else {
                format!("{v}")
            }
        }
        ExprKind::Param(p) => ident(&program.param(*p).name),
        ExprKind::Local(l) => local(program, *l),
        ExprKind::Builtin(b) => match b {
            Builtin::Tid => "tid",
            Builtin::Lane => "lane",
            Builtin::Warp => "warp",
            Builtin::Cta => "cta",
            Builtin::NThreads => "nthreads",
            Builtin::NCta => "ncta",
        }
        .into(),
        ExprKind::Unary(UnaryOp::Neg, a) => format!("(-{})", print(program, a)),
        ExprKind::Unary(UnaryOp::Not, a) => format!("(long long)!{}", print(program, a)),
        ExprKind::Min(a, b) => format!("::min({}, {})", print(program, a), print(program, b)),
        ExprKind::Max(a, b) => format!("::max({}, {})", print(program, a), print(program, b)),
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (print(program, a), print(program, b));
            let sym = op.symbol();
            match op {
                BinaryOp::Or
                | BinaryOp::And
                | BinaryOp::Eq
                | BinaryOp::Ne
                | BinaryOp::Lt
                | BinaryOp::Le
                | BinaryOp::Gt
                | BinaryOp::Ge => format!("(long long)({a} {sym} {b})"),
                _ => format!("({a} {sym} {b})"),
            }
        }
    }
}

/// Print a condition (no cast needed where C++ takes a truth value).
pub fn cond(program: &Program, e: &Expr) -> String {
    let s = print(program, e);
    match s.strip_prefix("(long long)") {
        Some(rest) if rest.starts_with('(') && balanced(rest) => rest.to_string(),
        _ => s,
    }
}

/// True when `s` is one parenthesised group `( ... )`.
fn balanced(s: &str) -> bool {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 && i != s.len() - 1 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_c_code_uses_get_a_suffix() {
        for (name, c) in [
            ("init", "init_"),
            ("wait", "wait_"),
            ("for", "for_"),
            ("pc_x", "pc_x_"),
            ("load", "load"),
            ("full", "full"),
        ] {
            assert_eq!(ident(name), c);
        }
    }
}
