//! What the kernel declares and reports: the statement table (ids the device uses in events),
//! buffer sizes and staging offsets, and which libraries the kernel needs.

use super::{LowerError, expr};
use protocols::Span;
use protocols::ir::{Kernel, ObjectKind, Op, Program, Stmt, StmtKind};
use serde::Serialize;

/// Data words (after the 16-byte stamp header) that writers fill and readers check.
pub const MAX_WORDS: u32 = 32;
/// Budget for all buffer instances of a kernel (static shared memory stays under 48 KiB).
const BUFFER_BUDGET: u32 = 40 * 1024;

/// One operation statement of the kernel, in the order the lowering numbers them.
#[derive(Clone, Debug, Serialize)]
pub struct StmtInfo {
    pub id: u32,
    pub span: Span,
    /// The statement keyword, e.g. `wait`.
    pub keyword: &'static str,
    /// The object the statement touches (barrier, buffer or pipeline), if any.
    pub object: Option<u32>,
    /// True for the hardware collectives (`syncthreads`, `bar_sync`, `cluster_sync`, ...).
    pub collective: bool,
    /// False for `compute`, which is no step of the model.
    pub modelled: bool,
    /// A `tma` with one destination block, a `cp_async` or a `memcpy_async`: in confirm mode
    /// its landing can be deferred to the trace's landing turn (a multicast copy lands in
    /// several blocks and is issued at once).
    pub deferrable: bool,
    /// A lane runs it only together with its warp: `syncwarp`, the `.aligned` collectives
    /// (`syncthreads` as `__syncthreads`, `bar_sync`, `bar_arrive`), and every statement of an
    /// `elect` body (the elect's `__syncwarp` converges the warp first). A lane cannot be made
    /// to pass one while a warp-mate is held elsewhere.
    pub warp_sync: bool,
}

impl StmtInfo {
    /// A thread leaving (`exit`, or `finish`: the end of the program): no object, no
    /// collective, a step of the model.
    fn leave(id: u32, span: Span, keyword: &'static str) -> StmtInfo {
        StmtInfo {
            id,
            span,
            keyword,
            object: None,
            collective: false,
            modelled: true,
            deferrable: false,
            warp_sync: false,
        }
    }
}

/// A buffer object: stamped shared-memory instances.
#[derive(Clone, Debug, Serialize)]
pub struct BufferInfo {
    pub object: u32,
    pub name: String,
    pub count: u32,
    /// Bytes per instance (multiple of 16).
    pub size: u32,
    /// Data words writers fill and readers check (0: only the stamp is checked).
    pub words: u32,
    /// Offset of instance 0's fill source in the block's staging area; instance i adds i*size.
    pub staging_fill: u32,
    /// Offset of instance 0's `tma_store` destination.
    pub staging_store: u32,
    /// Some statement writes it in parts (`write part`): its instances count the part writes
    /// in flight, which its readers and whole writers check.
    pub part: bool,
}

pub(crate) struct Layout {
    pub stmts: Vec<StmtInfo>,
    /// Statement ids of each kernel (kernels are numbered one after the other, in file order).
    pub kernel_stmts: Vec<std::ops::Range<u32>>,
    /// Several kernels: each trial's staging area ends with a rendezvous word (see
    /// `pc_rendezvous`).
    pub rendezvous: bool,
    pub buffers: Vec<BufferInfo>,
    pub staging_bytes: u32,
    pub shared_bytes: u32,
    pub uses_barrier: bool,
    pub uses_pipeline: bool,
    /// Some statement is a `tma_store` (the kernel keeps a per-thread list of stores to check).
    pub uses_tma_store: bool,
}

impl Layout {
    pub fn build(program: &Program, kernels: &[Kernel]) -> Result<Layout, LowerError> {
        let mut stmts = Vec::new();
        let mut fills: Vec<Vec<Option<i64>>> = vec![Vec::new(); program.objects.len()];
        let mut kernel_stmts = Vec::new();
        for kernel in kernels {
            let first = stmts.len() as u32;
            number(program, &kernel.body, &mut stmts, &mut fills, false);
            // The end of the program: the checker's `finish` step (a thread leaving, at the
            // kernel's end), which a trace may order before another thread's step
            // (remote-cta-exited). Confirm mode sequences it; it has no event of its own.
            stmts.push(StmtInfo::leave(
                stmts.len() as u32,
                Span::new(kernel.span.end, kernel.span.end),
                "finish",
            ));
            kernel_stmts.push(first..stmts.len() as u32);
        }
        let instances: u32 = program
            .objects
            .iter()
            .filter(|o| o.kind == ObjectKind::Buffer)
            .map(|o| o.count())
            .sum();
        let cap = BUFFER_BUDGET
            .checked_div(instances)
            .map_or(BUFFER_BUDGET, |per| (per / 16 * 16).max(16));
        let mut buffers = Vec::new();
        let mut staging = 0u32;
        let mut shared = 0u32;
        for (i, o) in program.objects.iter().enumerate() {
            if o.kind != ObjectKind::Buffer {
                if matches!(o.kind, ObjectKind::MBarrier | ObjectKind::Barrier { .. }) {
                    shared += 8 * o.count();
                }
                continue;
            }
            let f = &fills[i];
            let static_bytes: Vec<i64> = f.iter().flatten().copied().collect();
            let dynamic = f.iter().any(|b| b.is_none());
            let max_fill = static_bytes.iter().copied().max().unwrap_or(0).max(0) as u32;
            let want = (16 + 4 * MAX_WORDS).max(round16(max_fill));
            let size = want.min(cap).max(16);
            let min_fill = static_bytes
                .iter()
                .copied()
                .min()
                .map(|b| b.clamp(0, i64::from(u32::MAX)) as u32)
                .unwrap_or(size)
                .min(size);
            let words = if dynamic || min_fill < 20 {
                0
            } else {
                ((min_fill - 16) / 4).min(MAX_WORDS)
            };
            let count = o.count();
            buffers.push(BufferInfo {
                object: i as u32,
                name: o.name.clone(),
                count,
                size,
                words,
                staging_fill: staging,
                staging_store: staging + count * size,
                part: stmts
                    .iter()
                    .any(|s| s.keyword == "write part" && s.object == Some(i as u32)),
            });
            staging += 2 * count * size;
            shared += count * size;
        }
        let uses_barrier = program
            .objects
            .iter()
            .any(|o| matches!(o.kind, ObjectKind::Barrier { .. }));
        let uses_pipeline = program
            .objects
            .iter()
            .any(|o| matches!(o.kind, ObjectKind::Pipeline(_)));
        let uses_tma_store = stmts.iter().any(|s| s.keyword == "tma_store");
        Ok(Layout {
            stmts,
            kernel_stmts,
            rendezvous: kernels.len() > 1,
            buffers,
            staging_bytes: staging.max(16),
            shared_bytes: shared,
            uses_barrier,
            uses_pipeline,
            uses_tma_store,
        })
    }

    /// Bytes between two blocks' staging areas: fills, stores, globals and (several kernels)
    /// the rendezvous word, 128-aligned.
    pub fn staging_stride(&self, objects: usize) -> u32 {
        (self.staging_bytes + 8 * objects as u32 + 8 * u32::from(self.rendezvous)).div_ceil(128)
            * 128
    }

    /// Offset of the rendezvous word in a trial's staging area (after the globals).
    pub fn rendezvous_offset(&self, objects: usize) -> u32 {
        self.staging_bytes + 8 * objects as u32
    }

    pub fn buffer(&self, object: u32) -> Option<&BufferInfo> {
        self.buffers.iter().find(|b| b.object == object)
    }
}

fn round16(n: u32) -> u32 {
    n.div_ceil(16) * 16
}

/// Number every operation statement in source order (the order `stmt::Gen` walks in) and
/// collect the byte counts of async fills per buffer.
fn number(
    program: &Program,
    body: &[Stmt],
    stmts: &mut Vec<StmtInfo>,
    fills: &mut Vec<Vec<Option<i64>>>,
    in_elect: bool,
) {
    for s in body {
        match &s.kind {
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                number(program, then_body, stmts, fills, in_elect);
                number(program, else_body, stmts, fills, in_elect);
            }
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::Role { body, .. } => number(program, body, stmts, fills, in_elect),
            StmtKind::Elect { body } => number(program, body, stmts, fills, true),
            StmtKind::Op(op) => {
                if let Op::Tma { dst, bytes, .. } = op {
                    fills[dst.object.0 as usize].push(expr::const_eval(program, bytes));
                }
                stmts.push(StmtInfo {
                    id: stmts.len() as u32,
                    span: s.span,
                    keyword: op.keyword(),
                    object: op_object(op),
                    collective: is_collective(op),
                    modelled: !matches!(op, Op::Compute),
                    deferrable: matches!(
                        op,
                        Op::Tma {
                            multicast: None,
                            ..
                        } | Op::CpAsync { .. }
                            | Op::MemcpyAsync { .. }
                    ),
                    warp_sync: in_elect
                        || matches!(
                            op,
                            Op::SyncWarp
                                | Op::SyncThreads
                                | Op::BarSync { .. }
                                | Op::BarArrive { .. }
                        ),
                });
            }
            // `exit`: a step of the checker's traces like the end of the program (see `build`).
            StmtKind::Exit => stmts.push(StmtInfo::leave(stmts.len() as u32, s.span, "exit")),
            StmtKind::Let { .. } | StmtKind::Assign { .. } => {}
        }
    }
}

pub(crate) fn is_collective(op: &Op) -> bool {
    matches!(
        op,
        Op::SyncThreads
            | Op::BarSync { .. }
            | Op::SyncWarp
            | Op::ClusterSync
            | Op::ClusterWait
            | Op::ClusterArrive
            | Op::BarArrive { .. }
    )
}

/// The object an operation touches, for reports.
pub fn op_object(op: &Op) -> Option<u32> {
    op.object_refs().first().map(|r| r.object.0)
}
