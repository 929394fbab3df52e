//! A named-barrier use completed by a thread's second arrival: the same threads `bar_arrive`
//! and later `bar_sync` on one barrier whose count is all of them, so part of them make the
//! count alone (FlashInfer's sm90 epilogue, docs/gpu.md "FlashInfer's epilogue barrier").
//!
//! PTX ISA, barrier{.cta}: "Care must be taken to keep a warp from executing more barrier{.cta}
//! instructions than intended (barrier{.cta}.arrive followed by any other barrier{.cta}
//! instruction to the same barrier) prior to the reset of the arrival counter."

use super::walk::Walk;
use super::{Cause, few_names};
use crate::model::PhaseModel;
use crate::report::Label;

/// The first use in the trace that completed with a thread counted twice while other threads
/// that use the barrier had not arrived.
pub(super) fn doubled_use_cause(m: &PhaseModel, w: &Walk) -> Option<Cause> {
    let u = w.doubled.iter().find(|u| !u.absent.is_empty())?;
    let (first_span, first_op) = &u.first;
    let (second_span, second_op) = &u.second;
    let went_on = if u.released.is_empty() {
        String::new()
    } else {
        format!(", and {} went on before them", few_names(m, &u.released))
    };
    Some(Cause {
        headline: format!(
            "named barrier {} (count {}) completed a use with {} counted twice (`{first_op}`, then `{second_op}`) and without {}{went_on}: each `bar.arrive` and `bar.sync` of a warp counts toward the use in progress",
            u.id,
            u.count,
            few_names(m, &u.doubled),
            few_names(m, &u.absent),
        ),
        labels: vec![
            Label {
                span: *first_span,
                message: "counts once".into(),
            },
            Label {
                span: *second_span,
                message: "counts again in the same use".into(),
            },
        ],
        help: format!(
            "let different threads arrive and sync (the writers `bar_arrive`, the readers `bar_sync`, with a count of both, as FlashAttention-3's epilogue does), or let the threads that do both only `bar_sync`; [PTX] barrier{{.cta}}: \"Care must be taken to keep a warp from executing more barrier{{.cta}} instructions than intended (barrier{{.cta}}.arrive followed by any other barrier{{.cta}} instruction to the same barrier) prior to the reset of the arrival counter\" ({} threads counted in the use)",
            u.counted.len()
        ),
    })
}
