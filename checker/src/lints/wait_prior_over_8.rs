//! `wait-prior-over-8` (PC402): `consumer_wait_prior P, N` with N above 8, which libcu++
//! caps at 8 (`cp.async.wait_group min(N, 8)`), so it waits for more batches than asked
//! (semantics.md §4.1).
//!
//! Criterion: the interval of N (params exact, loop variables over their bounds, see
//! [`super::interval`]) is bounded and its upper end is above 8.

use super::interval;
use crate::report::Finding;
use crate::rules::wait_prior_over_8::RULE;
use protocols::ir::{Op, Program};

pub(crate) fn check(program: &Program, out: &mut Vec<Finding>) {
    for kernel in &program.kernels {
        interval::walk_kernel(program, kernel, interval::Params::Actual, |site| {
            let Op::ConsumerWaitPrior { pipe, n } = site.op else {
                return;
            };
            let v = site.eval(n).range;
            if !v.is_bounded() || v.hi <= 8 {
                return;
            }
            let value = if v.lo == v.hi {
                format!("N is {}", v.hi)
            } else {
                format!("N can be up to {}", v.hi)
            };
            out.push(super::finding(
                &RULE,
                site.span,
                format!(
                    "`consumer_wait_prior` on pipeline `{}`: {value}, but the wait is capped \
                     at 8 pending batches, so it waits for batches it did not ask for",
                    super::object_name(program, pipe)
                ),
                Vec::new(),
                Some(
                    "keep at most 8 batches in flight (fewer stages), or wait with N = 8 and \
                     accept that it covers the older batches"
                        .to_string(),
                ),
            ));
        });
    }
}
