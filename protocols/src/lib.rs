//! The `.phase` language: lexer, parser, loader, IR and diagnostics.
//!
//! Data flows one way: source text -> tokens -> AST -> [`ir::Program`]. Both back ends (the
//! checker and the GPU lowering) consume only the IR.

pub mod diagnostics;
pub mod ir;
mod loader;
pub mod span;

pub use diagnostics::{LoadError, LoadErrors};
pub use loader::load;
pub use span::{LineCol, SourceFile, Span};
