//! The kernel around the protocol: signature, object declarations, the per-thread harness
//! state, the bootstrap (stamps, pipelines) and the finish.

use super::Gen;
use crate::lower::expr::{cond, ident};
use crate::lower::{LowerError, Mode, unsupported};
use protocols::ir::{Kernel, ObjectKind, Op, PipelineKind, Stmt, StmtKind};
use std::fmt::Write;

impl Gen<'_> {
    pub fn kernel(
        &mut self,
        out: &mut String,
        kernel: &Kernel,
        kernel_name: &str,
    ) -> Result<(), LowerError> {
        let p = self.program;
        self.block = kernel.block;
        if kernel.cluster > 1 {
            let _ = writeln!(
                out,
                "extern \"C\" __global__ void __launch_bounds__({}) __cluster_dims__({}, 1, 1)",
                kernel.block, kernel.cluster
            );
        } else {
            let _ = writeln!(
                out,
                "extern \"C\" __global__ void __launch_bounds__({})",
                kernel.block
            );
        }
        let _ = writeln!(
            out,
            "{kernel_name}(pc_u64 seed, pc_u32 delay_max_ns, pc_u32 delay_every, long long budget,\n    \
             pc_u64* out, unsigned char* staging, const pc_u32* seq, pc_u64* pos) {{"
        );
        self.line(out, "// ---- objects ----");
        let mut total_stamps = Vec::new();
        for (i, o) in p.objects.iter().enumerate() {
            let name = ident(&o.name);
            let dims = match o.len {
                Some(n) => format!("[{n}]"),
                None => "[1]".into(),
            };
            match &o.kind {
                ObjectKind::MBarrier => {
                    self.line(
                        out,
                        &format!("__shared__ __align__(8) pc_u64 {name}{dims};  // mbarrier"),
                    );
                }
                ObjectKind::Barrier { completion } => {
                    let ty = if *completion { "pc_cbar_t" } else { "pc_bar_t" };
                    self.line(
                        out,
                        &format!(
                            "__shared__ __align__(16) unsigned char {name}_mem[sizeof({ty}) * {}];",
                            o.count()
                        ),
                    );
                    self.line(
                        out,
                        &format!(
                            "{ty}* {name} = reinterpret_cast<{ty}*>({name}_mem);  // cuda::barrier (initialised by `init`)"
                        ),
                    );
                }
                ObjectKind::Buffer => {
                    let b = self
                        .layout
                        .buffer(i as u32)
                        .expect("every buffer has a layout");
                    self.line(
                        out,
                        &format!(
                            "__shared__ __align__(128) unsigned char {name}{dims}[{}];  // buffer: stamp + {} checked words",
                            b.size, b.words
                        ),
                    );
                    total_stamps.push((name.clone(), o.count(), b.part));
                }
                ObjectKind::Global => {
                    self.line(
                        out,
                        &format!(
                            "volatile pc_u64* {name} = (volatile pc_u64*)(staging + (size_t)blockIdx.x * {} + {});  // global",
                            self.layout.staging_stride(p.objects.len()),
                            self.layout.staging_bytes + 8 * i as u32
                        ),
                    );
                }
                ObjectKind::Pipeline(PipelineKind::Block { stages, .. }) => {
                    if o.len.is_some() {
                        return Err(unsupported(
                            format!("pipeline arrays (`{}`) are not lowered", o.name),
                            Some(o.span),
                        ));
                    }
                    let ty =
                        format!("cuda::pipeline_shared_state<cuda::thread_scope_block, {stages}>");
                    self.line(
                        out,
                        &format!(
                            "__shared__ __align__(16) unsigned char {name}_mem[sizeof({ty})];"
                        ),
                    );
                    self.line(
                        out,
                        &format!("{ty}* {name}_state = reinterpret_cast<{ty}*>({name}_mem);"),
                    );
                    self.line(
                        out,
                        &format!(
                            "pc_bar_t* {name}_bars = reinterpret_cast<pc_bar_t*>({name}_mem);  // stage s: [2s] produced, [2s+1] consumed"
                        ),
                    );
                }
                ObjectKind::Pipeline(PipelineKind::Thread) => {}
            }
        }
        let cluster = kernel.cluster;
        self.line(
            out,
            "const long long tid = threadIdx.x, lane = tid % 32, warp = tid / 32;",
        );
        self.line(
            out,
            &format!(
                "const long long nthreads = {}, ncta = {cluster}, cta = {};",
                kernel.block,
                if cluster > 1 {
                    "pc_cluster_rank()"
                } else {
                    "0"
                }
            ),
        );
        self.line(out, "(void)lane; (void)warp; (void)nthreads; (void)ncta;");
        self.line(out, "Pc pc; PcStores pc_st; pc.st = &pc_st;");
        self.line(out, "pc.out = out;");
        // Each block's staging area starts 128-byte aligned (bulk copies need 16).
        let per_block = self.layout.staging_stride(p.objects.len());
        self.line(
            out,
            &format!("pc.staging = staging + (size_t)blockIdx.x * {per_block};"),
        );
        self.line(out, "pc.seq = seq; pc.budget = budget;");
        // One position word per thread of the launch: block b of every kernel at b * stride,
        // this kernel's threads after the earlier kernels' (PC_POS_*).
        let stride: u32 = p.kernels.iter().map(|k| k.block).sum();
        let base: u32 = p
            .kernels
            .iter()
            .take_while(|k| !std::ptr::eq(*k, kernel))
            .map(|k| k.block)
            .sum();
        self.line(
            out,
            &format!(
                "pc.pos = (volatile pc_u64*)pos + (size_t)blockIdx.x * {stride} + {base} + tid; *pc.pos = PC_POS_RUN;"
            ),
        );
        self.line(
            out,
            "pc.rng = (pc_u32)(seed ^ (seed >> 32)) ^ (blockIdx.x * 0x9E3779B9u) ^ ((pc_u32)tid * 0x85EBCA6Bu); if (!pc.rng) pc.rng = 1;",
        );
        self.line(
            out,
            "pc.rng = pc_rand(pc) ^ 0x2545F491u; if (!pc.rng) pc.rng = 1;",
        );
        self.line(
            out,
            "pc.delay_max_ns = delay_max_ns; pc.delay_every = delay_every ? delay_every : 1; pc.delay_pos = 0; pc.delay_slot = pc_rand(pc) % pc.delay_every; pc.spun = 0;",
        );
        self.line(
            out,
            "pc.tid = (pc_u32)tid; pc.cta = (pc_u32)cta; pc.trial = blockIdx.x / (pc_u32)ncta;",
        );
        self.line(
            out,
            "pc.aim = pc_aim_of(seq, pc.cta, pc.tid);  // fuzz mode: aimed delays (PC_AIM_MAGIC)",
        );
        self.line(
            out,
            "pc.dead = 0; pc.free_run = 0; pc.held = 0; pc.trips = 0; pc.st_n = 0;",
        );
        self.line(
            out,
            "pc.cur = (PC_CONFIRM && seq) ? pc_next_entry(pc, 0) : 0;",
        );
        if p.objects.iter().any(|o| o.kind == ObjectKind::Global) {
            self.line(
                out,
                "pc.published = 0; pc.stored = 0;  // globals this thread stored / saw published",
            );
        }
        if self.layout.rendezvous {
            let kernels = self.layout.kernel_stmts.len();
            self.line(
                out,
                &format!(
                    "// harness bootstrap (not part of the protocol): start once this trial's block of each of the {kernels} kernels runs"
                ),
            );
            self.line(
                out,
                &format!(
                    "if (tid == 0) pc_rendezvous(pc, (volatile pc_u64*)(pc.staging + {}), {kernels}); __syncthreads();",
                    self.layout.rendezvous_offset(p.objects.len())
                ),
            );
        }
        // Stamps start at 0 ("never written").
        if !total_stamps.is_empty() {
            self.line(
                out,
                "// harness bootstrap (not part of the protocol): clear the stamps",
            );
            for (name, count, part) in &total_stamps {
                // A buffer written in parts: the count of part writes in flight too.
                let clear = if *part {
                    format!("{{ *(pc_u64*)&{name}[i][0] = 0; *(pc_u64*)&{name}[i][8] = 0; }}")
                } else {
                    format!("*(pc_u64*)&{name}[i][0] = 0;")
                };
                self.line(
                    out,
                    &format!("for (long long i = tid; i < {count}; i += nthreads) {clear}"),
                );
            }
            if self.mode == Mode::Confirm && self.layout.stmts.iter().any(|s| s.deferrable) {
                self.line(
                    out,
                    "pc_land_init(pc);  // confirm mode: the private mbarrier of deferred TMA landings",
                );
            }
            if cluster > 1 {
                self.line(out, "pc_cluster_arrive(); pc_cluster_wait();");
            } else {
                self.line(out, "__syncthreads();");
            }
        }
        // Pipelines: made by every thread at entry (make_pipeline synchronises the block).
        for (i, o) in p.objects.iter().enumerate() {
            let name = ident(&o.name);
            match &o.kind {
                ObjectKind::Pipeline(PipelineKind::Thread) => {
                    self.line(
                        out,
                        &format!(
                            "auto {name} = cuda::make_pipeline();  // pipeline<thread_scope_thread>"
                        ),
                    );
                }
                ObjectKind::Pipeline(PipelineKind::Block {
                    producers,
                    consumers,
                    ..
                }) => {
                    let unified = *producers == kernel.block && *consumers == kernel.block;
                    if unified {
                        self.line(
                            out,
                            &format!(
                                "auto {name} = cuda::make_pipeline(cooperative_groups::this_thread_block(), {name}_state);  // unified"
                            ),
                        );
                    } else if let Some(c) = self.producer_condition(i as u32, &kernel.body) {
                        self.line(
                            out,
                            &format!(
                                "auto {name} = cuda::make_pipeline(cooperative_groups::this_thread_block(), {name}_state,\n{}    ({c}) ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer);",
                                self.indent()
                            ),
                        );
                    } else {
                        self.line(
                            out,
                            &format!(
                                "auto {name} = cuda::make_pipeline(cooperative_groups::this_thread_block(), {name}_state, (size_t){producers});"
                            ),
                        );
                    }
                    self.line(
                        out,
                        &format!(
                            "pc_u32 {name}_head = 0, {name}_tail = 0, {name}_cpar = 1, {name}_ppar = 0;  // mirror of the pipeline's private state"
                        ),
                    );
                }
                _ => {}
            }
        }
        // Arrival counters (throughput) and statement occurrence counters (stamps, sequencer).
        let counted: Vec<usize> = p
            .objects
            .iter()
            .enumerate()
            .filter(|(_, o)| {
                matches!(
                    o.kind,
                    ObjectKind::MBarrier | ObjectKind::Barrier { .. } | ObjectKind::Pipeline(_)
                )
            })
            .map(|(i, _)| i)
            .collect();
        if !counted.is_empty() {
            let decl: Vec<String> = counted
                .iter()
                .map(|i| format!("pc_arr_{i}_0 = 0, pc_arr_{i}_1 = 0"))
                .collect();
            self.line(out, &format!("pc_u64 {};", decl.join(", ")));
        }
        // This kernel's statements (several kernels are numbered one after the other).
        let first = self.next_stmt as u32;
        let own = self
            .layout
            .kernel_stmts
            .iter()
            .find(|r| r.start == first)
            .cloned()
            .unwrap_or(first..first);
        // Occurrence counters of the operation statements (the last id is the `finish` step,
        // which occurs once).
        let ops = own.start..own.end.saturating_sub(1).max(own.start);
        if !ops.is_empty() {
            let decl: Vec<String> = ops.map(|i| format!("pc_occ_{i} = 0")).collect();
            for chunk in decl.chunks(8) {
                self.line(out, &format!("pc_u32 {};", chunk.join(", ")));
            }
        }
        if self.proxy_window {
            self.line(
                out,
                "PcKeep pc_keep = {0, 0, 0, 0, 0};  // the last window write's store operands",
            );
        }
        self.line(out, "auto pc_finish = [&]() {");
        if self.proxy_window {
            self.line(out, "  pc_keep_live(pc_keep);");
        }
        for i in &counted {
            for slot in 0..2 {
                self.line(
                    out,
                    &format!(
                        "  if (pc_arr_{i}_{slot}) atomicAdd(&out[PC_OUT_ARR + {}], pc_arr_{i}_{slot});",
                        2 * i + slot
                    ),
                );
            }
        }
        self.line(out, "  atomicAdd(&out[PC_OUT_THREADS_DONE], 1ull);");
        self.line(out, "  *pc.pos = PC_POS_DONE;");
        self.line(out, "};");
        self.line(out, "// ---- protocol ----");
        self.body(out, &kernel.body)?;
        self.leave(out, false, "  // finish");
        out.push_str("}\n");
        debug_assert_eq!(self.next_stmt as u32, own.end);
        Ok(())
    }

    /// The disjunction of the conditions of the roles that produce into pipeline `pipe`, if
    /// they use only builtins and params (evaluated once at entry, when the pipeline is made).
    fn producer_condition(&self, pipe: u32, body: &[Stmt]) -> Option<String> {
        let mut conds = Vec::new();
        collect_producer_roles(pipe, body, &mut conds);
        if conds.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        for c in conds {
            if uses_local(c) {
                return None;
            }
            parts.push(cond(self.program, c));
        }
        Some(parts.join(" || "))
    }
}

fn uses_local(e: &protocols::ir::Expr) -> bool {
    use protocols::ir::ExprKind;
    match &e.kind {
        ExprKind::Local(_) => true,
        ExprKind::Int(_) | ExprKind::Param(_) | ExprKind::Builtin(_) => false,
        ExprKind::Unary(_, a) => uses_local(a),
        ExprKind::Binary(_, a, b) | ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
            uses_local(a) || uses_local(b)
        }
    }
}

/// Conditions of the `role` statements whose bodies use producer operations of `pipe`.
fn collect_producer_roles<'p>(pipe: u32, body: &'p [Stmt], out: &mut Vec<&'p protocols::ir::Expr>) {
    for s in body {
        match &s.kind {
            StmtKind::Role { cond, body, .. } => {
                if produces(pipe, body) {
                    out.push(cond);
                } else {
                    collect_producer_roles(pipe, body, out);
                }
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                collect_producer_roles(pipe, then_body, out);
                collect_producer_roles(pipe, else_body, out);
            }
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::Elect { body } => collect_producer_roles(pipe, body, out),
            _ => {}
        }
    }
}

fn produces(pipe: u32, body: &[Stmt]) -> bool {
    body.iter().any(|s| match &s.kind {
        StmtKind::Op(Op::ProducerAcquire { pipe: p })
        | StmtKind::Op(Op::ProducerCommit { pipe: p })
        | StmtKind::Op(Op::MemcpyAsync { pipe: p, .. }) => p.object.0 == pipe,
        StmtKind::If {
            then_body,
            else_body,
            ..
        } => produces(pipe, then_body) || produces(pipe, else_body),
        StmtKind::For { body, .. }
        | StmtKind::While { body, .. }
        | StmtKind::Role { body, .. }
        | StmtKind::Elect { body } => produces(pipe, body),
        _ => false,
    })
}
