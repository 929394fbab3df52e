//! The registry of load-error codes. Codes are stable: a code is never reused for another
//! problem. Each one is documented with an example in docs/errors.md (a test checks that
//! every code used in this crate is listed here and documented there, and that each
//! documented example really produces its code).

/// One load-error code.
#[derive(Clone, Copy, Debug)]
pub struct ErrorCode {
    pub code: &'static str,
    pub title: &'static str,
}

const fn c(code: &'static str, title: &'static str) -> ErrorCode {
    ErrorCode { code, title }
}

/// Every load-error code, in order. E00xx lexical, E01xx syntax, E02xx names and objects,
/// E03xx values and sizes, E04xx kernels and file layout, E05xx expectations and comments.
pub const ERROR_CODES: &[ErrorCode] = &[
    c("E0001", "unexpected character"),
    c("E0002", "invalid integer literal"),
    c("E0003", "integer literal out of range"),
    c("E0004", "file is not UTF-8 text"),
    c("E0009", "too many errors"),
    c("E0101", "syntax error"),
    c("E0102", "builtin used as a value's name"),
    c("E0103", "nesting too deep"),
    c("E0104", "missing or misplaced `protocol`"),
    c("E0105", "`protocol` given twice"),
    c("E0106", "declaration after the first statement"),
    c("E0201", "unknown name"),
    c("E0202", "name declared twice"),
    c("E0203", "wrong kind of object for the operation"),
    c(
        "E0204",
        "object used as a value, or value used as an object",
    ),
    c("E0205", "array without index, or index on a scalar"),
    c("E0206", "constant index out of range"),
    c("E0207", "token used as an integer"),
    c("E0208", "token used with another barrier"),
    c("E0209", "integer used as a token"),
    c(
        "E0210",
        "assignment to something that is not an integer local",
    ),
    c(
        "E0211",
        "transaction or hardware op on a barrier with completion",
    ),
    c("E0212", "cluster reference without a cluster"),
    c("E0213", "cluster rank or multicast mask out of range"),
    c("E0214", "scope on a plain load or store"),
    c("E0215", "byte range on an operation that takes none"),
    c("E0301", "`--param` names no parameter"),
    c("E0302", "not a constant"),
    c("E0303", "overflow in a constant expression"),
    c("E0304", "division by zero in a constant expression"),
    c("E0305", "block size outside 1..=1024"),
    c("E0306", "cluster size outside 1..=16"),
    c("E0307", "missing block size"),
    c("E0308", "array length or pipeline count out of range"),
    c("E0309", "`block` or `cluster` declared twice"),
    c("E0310", "byte range length out of range"),
    c("E0401", "statement outside a kernel"),
    c("E0402", "kernel defined twice"),
    c("E0403", "declaration inside a block"),
    c("E0501", "unknown verdict"),
    c("E0502", "malformed rule in an `expect` line"),
    c("E0503", "`expect ... with` names no parameter"),
    c("E0504", "malformed `phasecheck:` comment"),
    c("E0505", "`phasecheck: allow` comment applies to nothing"),
];

/// The registry entry of a code.
pub fn lookup(code: &str) -> Option<&'static ErrorCode> {
    ERROR_CODES.iter().find(|c| c.code == code)
}
