//! Static performance lints (class `perf`) over the IR, run by [`crate::check`] beside the
//! state-space search. One module per lint.

use crate::report::Finding;
use protocols::ir::Program;

/// All static lint findings for a program.
pub fn run(program: &Program) -> Vec<Finding> {
    let _ = program;
    Vec::new()
}
