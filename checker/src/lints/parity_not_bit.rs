//! `parity-not-bit` (PC404): a `wait ... parity EXPR` or `test_wait ... parity EXPR` whose
//! expression can take values other than 0 and 1 (language.md §3.3: only the low bit counts,
//! as in PTX).
//!
//! Criterion: [`super::interval`] evaluates the expression over params, builtins, loop ranges
//! and locals (loops to a fixpoint). It is a bit when built as one (`x % 2`, `x & 1`, a
//! comparison or logical operator, `!x`, `^`/`|`/`&` of bits, the constants 0 and 1, a local
//! only ever assigned bits) or when its interval lies within 0..=1.
//!
//! The expression is evaluated twice: with the params' values, and with every param as any
//! value >= 1 (params are meant to be overridden, and a parity formula should hold for every
//! configuration). `(k / STAGES) % STAGES` is a bit when `K = 8, STAGES = 4` (k / 4 is 0 or 1)
//! but not for `K = 16`; it is reported either way, saying which.

use super::interval::{self, AbsVal, Interval, Params};
use crate::report::Finding;
use crate::rules::parity_not_bit::RULE;
use protocols::Span;
use protocols::ir::{Op, Program};

fn range_text(r: Interval) -> String {
    // Bounds this far out come from unbounded params or widening: say "or more".
    const FAR: i64 = 1 << 40;
    match (r.lo <= -FAR, r.hi >= FAR) {
        (false, false) => format!("any of {}..={}", r.lo, r.hi),
        (false, true) => format!("{} or more", r.lo),
        (true, false) => format!("{} or less", r.hi),
        (true, true) => "values other than 0 and 1".to_string(),
    }
}

/// (span of the parity expression, barrier name, value) for every parity wait.
fn parities(program: &Program, params: Params) -> Vec<(Span, String, AbsVal)> {
    let mut out = Vec::new();
    for kernel in &program.kernels {
        interval::walk_kernel(program, kernel, params, |site| {
            if let Op::WaitParity { bar, parity, .. } | Op::TestWait { bar, parity, .. } = site.op {
                out.push((
                    parity.span,
                    super::object_name(program, bar),
                    site.eval(parity),
                ));
            }
        });
    }
    out
}

pub(crate) fn check(program: &Program, out: &mut Vec<Finding>) {
    let actual = parities(program, Params::Actual);
    let generic = parities(program, Params::Generic);
    let mut reported: Vec<Span> = Vec::new();
    for (span, bar, v) in &actual {
        if v.is_bit() || reported.contains(span) {
            continue;
        }
        reported.push(*span);
        out.push(finding(
            *span,
            format!(
                "parity of the wait on `{bar}` can be {}: only its low bit counts",
                range_text(v.range)
            ),
        ));
    }
    for (span, bar, v) in &generic {
        if v.is_bit() || reported.contains(span) {
            continue;
        }
        reported.push(*span);
        out.push(finding(
            *span,
            format!(
                "parity of the wait on `{bar}` is 0 or 1 only for these parameter values; \
                 with others it can be {}, and only its low bit counts",
                if v.range.hi > 1 {
                    "2 or more"
                } else {
                    "negative"
                }
            ),
        ));
    }
}

fn finding(span: Span, message: String) -> Finding {
    super::finding(
        &RULE,
        span,
        message,
        Vec::new(),
        Some(
            "say which bit you mean: `(EXPR) % 2`, or track the phase in a local that flips \
             with `^ 1`"
                .to_string(),
        ),
    )
}
