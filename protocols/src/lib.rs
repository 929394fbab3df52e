//! The `.phase` language: lexer, parser, loader, IR and diagnostics.
//!
//! Data flows one way: source text -> tokens -> AST -> [`ir::Program`]. Both back ends (the
//! checker and the GPU lowering) consume only the IR.

mod ast;
pub mod codes;
pub mod diagnostics;
pub mod eval;
pub mod ir;
pub mod ir_display;
mod lexer;
mod loader;
mod parser;
pub mod render;
pub mod span;
mod suggest;

pub use diagnostics::{LoadError, LoadErrors};
pub use loader::load;
/// The language's words (every one usable as a name; builtins not as a value's name).
pub use parser::{BUILTIN_NAMES, KEYWORDS};
pub use span::{LineCol, SourceFile, Span};
