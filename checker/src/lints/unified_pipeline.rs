//! `unified-pipeline` (PC401): a block-scope `pipeline` whose producers and consumers are both
//! the whole block (semantics.md §4.2, P5).
//!
//! Criterion: a `pipeline NAME stages S producers P consumers C` with `P == C == block` of a
//! kernel that uses it (any kernel, when no operation names it).

use crate::report::Finding;
use crate::rules::unified_pipeline::RULE;
use protocols::ir::{ObjectId, ObjectKind, Op, PipelineKind, Program, Stmt, StmtKind};

fn uses(stmts: &[Stmt], id: ObjectId) -> bool {
    stmts.iter().any(|s| match &s.kind {
        StmtKind::If {
            then_body,
            else_body,
            ..
        } => uses(then_body, id) || uses(else_body, id),
        StmtKind::For { body, .. }
        | StmtKind::While { body, .. }
        | StmtKind::Role { body, .. }
        | StmtKind::Elect { body } => uses(body, id),
        StmtKind::Op(
            Op::ProducerAcquire { pipe }
            | Op::ProducerCommit { pipe }
            | Op::ConsumerWait { pipe }
            | Op::ConsumerRelease { pipe }
            | Op::ConsumerWaitPrior { pipe, .. }
            | Op::MemcpyAsync { pipe, .. }
            | Op::Quit { pipe },
        ) => pipe.object == id,
        _ => false,
    })
}

pub(crate) fn check(program: &Program, out: &mut Vec<Finding>) {
    for (i, obj) in program.objects.iter().enumerate() {
        let ObjectKind::Pipeline(PipelineKind::Block {
            producers,
            consumers,
            ..
        }) = obj.kind
        else {
            continue;
        };
        let id = ObjectId(i as u32);
        let mut kernels: Vec<_> = program
            .kernels
            .iter()
            .filter(|k| uses(&k.body, id))
            .collect();
        if kernels.is_empty() {
            kernels = program.kernels.iter().collect();
        }
        let Some(k) = kernels
            .iter()
            .find(|k| producers == consumers && producers == k.block)
        else {
            continue;
        };
        out.push(super::finding(
            &RULE,
            obj.span,
            format!(
                "pipeline `{}` is unified: producers = consumers = the whole block ({}), so \
                 every thread must commit and release every stage and each stage completes \
                 only when all {} threads have arrived",
                obj.name, k.block, k.block
            ),
            Vec::new(),
            Some(
                "partition the block: give the loads to a producer warp and declare \
                 `producers` and `consumers` as the sizes of the two roles"
                    .to_string(),
            ),
        ));
    }
}
