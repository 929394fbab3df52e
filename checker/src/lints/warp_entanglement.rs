//! `warp-entanglement` (PC400): an arrive-on or commit executed by several lanes of a warp
//! that an enclosing condition has split (semantics.md §4.3, W6).
//!
//! Criterion (static, per thread): walk the kernel once per thread of the cluster with
//! [`super::threads`]. An `arrive`, `arrive_expect_tx`, `arrive_drop`, `cp_async_arrive`,
//! `producer_commit` or `commit_group` is reported when
//! 1. an enclosing `if`, `role`, `while` condition or `for` trip count takes different values
//!    on lanes of one warp that all reach that condition, and
//! 2. at least two lanes of that same warp surely execute the operation.
//!
//! Condition 2 keeps the idioms quiet: `if lane == 0 { arrive b }` and
//! `role producer when tid == 0 { ... }` have one lane per warp, so the warp updates the
//! barrier once either way. `elect { ... }` runs one lane and is converged by definition.
//! Conditions over values not known statically (loop variables, `test_wait` results) split
//! nobody: the lint reports only divergence it can show.

use super::threads::{self, Reach};
use crate::report::{Finding, Label};
use crate::rules::warp_entanglement::RULE;
use protocols::ir::{Op, Program};

pub(crate) fn check(program: &Program, out: &mut Vec<Finding>) {
    for kernel in &program.kernels {
        let block = kernel.block as usize;
        let warps_per_block = block.div_ceil(32) as u32;
        threads::walk_kernel(program, kernel, |site| {
            let what = match site.op {
                Op::Arrive { bar, .. }
                | Op::ArriveExpectTx { bar, .. }
                | Op::ArriveDrop { bar, .. }
                | Op::CpAsyncArrive { bar, .. } => {
                    format!("barrier `{}`", super::object_name(program, bar))
                }
                Op::ProducerCommit { pipe } => {
                    format!("pipeline `{}`", super::object_name(program, pipe))
                }
                Op::CommitGroup => "the warp's cp.async group sequence".to_string(),
                _ => return,
            };
            if site.in_elect || site.splits.is_empty() {
                return;
            }
            // Lanes per warp that surely execute the operation.
            let lanes_in = |gw: u32| {
                let cta = (gw / warps_per_block) as usize;
                let warp = (gw % warps_per_block) as usize;
                let lo = cta * block + warp * 32;
                let hi = (lo + 32).min((cta + 1) * block);
                site.reach[lo..hi]
                    .iter()
                    .filter(|r| **r == Reach::Yes)
                    .count()
            };
            for split in site.splits.iter().rev() {
                let Some((gw, lanes)) = split
                    .warps
                    .iter()
                    .map(|&gw| (gw, lanes_in(gw)))
                    .find(|&(_, n)| n >= 2)
                else {
                    continue;
                };
                let (cta, warp) = (gw / warps_per_block, gw % warps_per_block);
                let whose = if kernel.cluster > 1 {
                    format!("warp {warp} of cta {cta}")
                } else {
                    format!("warp {warp}")
                };
                out.push(super::finding(
                    &RULE,
                    site.span,
                    format!(
                        "`{}` on {what} runs on {lanes} lanes of {whose} after a condition \
                         that splits that warp: a diverged warp updates once per converged \
                         group instead of once",
                        site.op.keyword()
                    ),
                    vec![Label {
                        span: split.span,
                        message: format!("differs between lanes of {whose}"),
                    }],
                    Some(
                        "re-converge the warp (`syncwarp`) before the operation, make the \
                         condition warp-uniform (split roles on warp boundaries), or let one \
                         lane do it for the warp (`elect { ... }` with an arrive count of the \
                         lanes it stands for)"
                            .to_string(),
                    ),
                ));
                return;
            }
        });
    }
}
