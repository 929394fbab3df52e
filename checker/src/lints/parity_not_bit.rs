//! `parity-not-bit` (PC404): a `wait ... parity EXPR` or `test_wait ... parity EXPR` whose
//! expression can take values other than 0 and 1 (language.md §3.3: only the low bit counts,
//! as in PTX).
//!
//! Criterion: [`super::interval`] evaluates the expression over params, builtins, loop ranges
//! and locals (loops to a fixpoint). It is a bit when built as one (`x % 2`, `x & 1`, a
//! comparison or logical operator, `!x`, `^`/`|`/`&` of bits, the constants 0 and 1, a local
//! only ever assigned bits) or when its interval lies within 0..=1. Anything else is reported,
//! with the range it can take.

use super::interval;
use crate::report::Finding;
use crate::rules::parity_not_bit::RULE;
use protocols::ir::{Op, Program};

pub(crate) fn check(program: &Program, out: &mut Vec<Finding>) {
    for kernel in &program.kernels {
        interval::walk_kernel(program, kernel, |site| {
            let (bar, parity) = match site.op {
                Op::WaitParity { bar, parity, .. } | Op::TestWait { bar, parity, .. } => {
                    (bar, parity)
                }
                _ => return,
            };
            let v = site.eval(parity);
            if v.is_bit() {
                return;
            }
            let r = v.range;
            let values = match (r.lo == i64::MIN, r.hi == i64::MAX) {
                (false, false) => format!("can be any of {}..={}", r.lo, r.hi),
                (false, true) => format!("can be {} or more", r.lo),
                (true, false) => format!("can be {} or less", r.hi),
                (true, true) => "is not known to be 0 or 1".to_string(),
            };
            out.push(super::finding(
                &RULE,
                parity.span,
                format!(
                    "parity of the wait on `{}` {values}: only its low bit counts",
                    super::object_name(program, bar)
                ),
                Vec::new(),
                Some(
                    "say which bit you mean: `(EXPR) % 2`, or track the phase in a local that \
                     flips with `^ 1`"
                        .to_string(),
                ),
            ));
        });
    }
}
