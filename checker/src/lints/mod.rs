//! Static performance lints (class `perf`) over the IR, run by [`crate::check`] beside the
//! state-space search. One module per lint; two shared walks: [`threads`] (which threads reach
//! an operation, which conditions split a warp) and [`interval`] (the range of every value).
//!
//! [`suppress`] applies `# phasecheck: allow(...)` comments to any list of findings.

mod interval;
pub mod parity_not_bit;
pub mod suppress;
pub mod syncthreads_would_do;
#[cfg(test)]
mod tests;
mod threads;
pub mod unified_pipeline;
pub mod wait_prior_over_8;
pub mod warp_entanglement;

use crate::report::{Finding, FoundBy, Label, Schedule};
use crate::rules::Rule;
use protocols::Span;
use protocols::ir::Program;

/// All static lint findings for a program, sorted by (span, rule code), one per (rule, span).
pub fn run(program: &Program) -> Vec<Finding> {
    let mut out = Vec::new();
    warp_entanglement::check(program, &mut out);
    unified_pipeline::check(program, &mut out);
    wait_prior_over_8::check(program, &mut out);
    syncthreads_would_do::check(program, &mut out);
    parity_not_bit::check(program, &mut out);
    out.sort_by(|a, b| (a.span, a.rule.code).cmp(&(b.span, b.rule.code)));
    out.dedup_by(|a, b| a.span == b.span && a.rule.code == b.rule.code);
    out
}

/// A static finding: no trace, no schedule.
pub(crate) fn finding(
    rule: &'static Rule,
    span: Span,
    message: String,
    labels: Vec<Label>,
    help: Option<String>,
) -> Finding {
    Finding {
        rule,
        severity: rule.default_severity,
        message,
        span,
        labels,
        help,
        trace: Vec::new(),
        waits_for: Vec::new(),
        schedule: Schedule::default(),
        found_by: FoundBy::Search,
    }
}

/// The declared name of the object a reference points to.
pub(crate) fn object_name(program: &Program, r: &protocols::ir::ObjRef) -> String {
    program.object(r.object).name.clone()
}
