//! Statements: the kernel body, object declarations, and one lowering per operation.

use super::expr::{self, cond, ident, local, print};
use super::layout::{Layout, MAX_WORDS};
use super::{LowerError, Mode, unsupported};
use protocols::SourceFile;
use protocols::ir::{
    Kernel, MemScope, ObjRef, ObjectKind, Op, PipelineKind, Program, Stmt, StmtKind,
};
use std::fmt::Write;

pub(crate) struct Gen<'a> {
    program: &'a Program,
    source: Option<&'a SourceFile>,
    layout: &'a Layout,
    mode: Mode,
    non_aligned_syncthreads: bool,
    next_stmt: usize,
    depth: usize,
}

fn scope_is_cluster(s: MemScope) -> bool {
    !matches!(s, MemScope::Cta)
}

fn scope_num(s: MemScope) -> u8 {
    match s {
        MemScope::Cta => 0,
        MemScope::Cluster => 1,
        MemScope::Gpu => 2,
        MemScope::Sys => 3,
    }
}

impl<'a> Gen<'a> {
    pub fn new(
        program: &'a Program,
        source: Option<&'a SourceFile>,
        layout: &'a Layout,
        options: &super::LowerOptions,
    ) -> Self {
        Gen {
            program,
            source,
            layout,
            mode: options.mode,
            non_aligned_syncthreads: options.non_aligned_syncthreads,
            next_stmt: 0,
            depth: 1,
        }
    }

    fn indent(&self) -> String {
        "  ".repeat(self.depth)
    }

    fn line(&self, out: &mut String, text: &str) {
        let _ = writeln!(out, "{}{}", self.indent(), text);
    }

    /// `// line N: <source text>` for a statement, when the source is known.
    fn comment(&self, out: &mut String, span: protocols::Span) {
        if let Some(src) = self.source {
            let lc = src.line_col(span.start);
            let text = src
                .text
                .get(span.start as usize..span.end as usize)
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("")
                .trim();
            self.line(out, &format!("// line {}: {}", lc.line, text));
        }
    }

    pub fn kernel(
        &mut self,
        out: &mut String,
        kernel: &Kernel,
        kernel_name: &str,
    ) -> Result<(), LowerError> {
        let p = self.program;
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
             pc_u64* out, unsigned char* staging, const pc_u32* seq) {{"
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
                    total_stamps.push((name.clone(), o.count(), b.size));
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
        self.line(out, "Pc pc;");
        self.line(out, "pc.out = out;");
        // Each block's staging area starts 128-byte aligned (bulk copies need 16).
        let per_block = self.layout.staging_stride(p.objects.len());
        self.line(
            out,
            &format!("pc.staging = staging + (size_t)blockIdx.x * {per_block};"),
        );
        self.line(out, "pc.seq = seq; pc.budget = budget;");
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
            for (name, count, _) in &total_stamps {
                self.line(
                    out,
                    &format!(
                        "for (long long i = tid; i < {count}; i += nthreads) *(pc_u64*)&{name}[i][0] = 0;"
                    ),
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
        if !own.is_empty() {
            let decl: Vec<String> = own.clone().map(|i| format!("pc_occ_{i} = 0")).collect();
            for chunk in decl.chunks(8) {
                self.line(out, &format!("pc_u32 {};", chunk.join(", ")));
            }
        }
        self.line(out, "auto pc_finish = [&]() {");
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
        self.line(out, "};");
        self.line(out, "// ---- protocol ----");
        self.body(out, &kernel.body)?;
        self.line(out, "pc_finish();");
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

    fn body(&mut self, out: &mut String, body: &[Stmt]) -> Result<(), LowerError> {
        for s in body {
            self.stmt(out, s)?;
        }
        Ok(())
    }

    fn block(&mut self, out: &mut String, body: &[Stmt]) -> Result<(), LowerError> {
        self.depth += 1;
        self.body(out, body)?;
        self.depth -= 1;
        Ok(())
    }

    fn stmt(&mut self, out: &mut String, s: &Stmt) -> Result<(), LowerError> {
        let p = self.program;
        match &s.kind {
            StmtKind::Let { local: l, value } => {
                self.line(
                    out,
                    &format!("long long {} = {};", local(p, *l), print(p, value)),
                );
            }
            StmtKind::Assign { local: l, value } => {
                self.line(out, &format!("{} = {};", local(p, *l), print(p, value)));
            }
            StmtKind::If {
                cond: c,
                then_body,
                else_body,
            } => {
                self.line(out, &format!("if ({}) {{", cond(p, c)));
                self.block(out, then_body)?;
                if !else_body.is_empty() {
                    self.line(out, "} else {");
                    self.block(out, else_body)?;
                }
                self.line(out, "}");
            }
            StmtKind::For {
                var,
                start,
                end,
                body,
            } => {
                let v = local(p, *var);
                self.line(
                    out,
                    &format!(
                        "for (long long {v} = {}, {v}_end = {}; {v} < {v}_end; {v}++) {{",
                        print(p, start),
                        print(p, end)
                    ),
                );
                self.block(out, body)?;
                self.line(out, "}");
            }
            StmtKind::While { cond: c, body } => {
                self.line(out, &format!("while ({}) {{", cond(p, c)));
                self.line(
                    out,
                    "  if (++pc.trips > (1u << 20)) { atomicAdd(&out[PC_OUT_RUNAWAY], 1ull); pc.dead = 1; break; }",
                );
                self.block(out, body)?;
                self.line(out, "}");
            }
            StmtKind::Role {
                role,
                cond: c,
                body,
            } => {
                self.line(
                    out,
                    &format!("if ({}) {{  // role {}", cond(p, c), p.role(*role).name),
                );
                self.block(out, body)?;
                self.line(out, "}");
            }
            StmtKind::Elect { body } => {
                self.comment(out, s.span);
                self.line(out, "{  // elect: one lane of the converged warp");
                self.line(out, "  pc_u32 pc_m = pc_warp_mask();");
                self.line(out, "  __syncwarp(pc_m);");
                self.line(out, "  if (pc_elect(pc_m)) {");
                self.depth += 1;
                self.block(out, body)?;
                self.depth -= 1;
                self.line(out, "  }");
                self.line(out, "}");
            }
            StmtKind::Exit => {
                self.comment(out, s.span);
                self.line(out, "pc_finish();");
                self.line(out, "return;");
            }
            StmtKind::Op(op) => self.op(out, s, op)?,
        }
        Ok(())
    }

    /// An mbarrier address (`pc_u64*`) for an mbarrier or a block-scope `cuda::barrier`.
    fn mb_ptr(&self, r: &ObjRef) -> Result<String, LowerError> {
        let o = self.program.object(r.object);
        let name = ident(&o.name);
        let idx = self.index(r);
        match &o.kind {
            ObjectKind::MBarrier => Ok(format!("&{name}[{idx}]")),
            ObjectKind::Barrier { completion: false } => Ok(format!(
                "cuda::device::barrier_native_handle({name}[{idx}])"
            )),
            ObjectKind::Barrier { completion: true } => Err(unsupported(
                format!(
                    "`{}` is a barrier with a completion function (a software barrier): it has no \
                     mbarrier for this operation",
                    o.name
                ),
                Some(r.span),
            )),
            _ => Err(unsupported(
                format!("`{}` is not a barrier", o.name),
                Some(r.span),
            )),
        }
    }

    fn index(&self, r: &ObjRef) -> String {
        match &r.index {
            Some(e) => print(self.program, e),
            None => "0".into(),
        }
    }

    fn rank(&self, r: &ObjRef) -> Option<String> {
        r.cta.as_ref().map(|e| print(self.program, e))
    }

    /// A barrier with a completion function: libcu++'s software barrier (no mbarrier).
    fn is_software_barrier(&self, r: &ObjRef) -> bool {
        matches!(
            self.program.object(r.object).kind,
            ObjectKind::Barrier { completion: true }
        )
    }

    fn is_libcu_barrier(&self, r: &ObjRef) -> bool {
        matches!(
            self.program.object(r.object).kind,
            ObjectKind::Barrier { .. }
        )
    }

    fn buffer_args(&self, r: &ObjRef) -> Result<(String, u32, u32, u32), LowerError> {
        let o = self.program.object(r.object);
        let b = self
            .layout
            .buffer(r.object.0)
            .ok_or_else(|| unsupported(format!("`{}` is not a buffer", o.name), Some(r.span)))?;
        let mut ptr = format!("{}[{}]", ident(&o.name), self.index(r));
        if let Some(rank) = self.rank(r) {
            ptr = format!("pc_map_rank({ptr}, {rank})");
        }
        Ok((ptr, b.words.min(MAX_WORDS), b.size, b.staging_fill))
    }

    fn op(&mut self, out: &mut String, s: &Stmt, op: &Op) -> Result<(), LowerError> {
        let p = self.program;
        let id = self.next_stmt;
        debug_assert_eq!(self.layout.stmts[id].span, s.span);
        self.next_stmt += 1;
        let collective = super::layout::is_collective(op);
        let modelled = !matches!(op, Op::Compute);
        self.comment(out, s.span);
        // Declarations that must outlive the step (tokens, test results).
        match op {
            Op::Arrive {
                bar,
                token: Some(t),
                ..
            } => {
                let ty = self.token_type(bar);
                self.line(out, &format!("{ty} {}{{}};", local(p, *t)));
            }
            Op::TestWait { result, .. } => {
                self.line(out, &format!("long long {} = 0;", local(p, *result)));
            }
            _ => {}
        }
        // Accesses take their delay inside the access window (see `pc_read`), `compute` is a
        // delay of its own; every other statement may be preceded by one.
        let delay = if matches!(
            op,
            Op::Read { .. }
                | Op::Write { .. }
                | Op::Mma { .. }
                | Op::Compute
                | Op::Store { .. }
                | Op::Load { .. }
        ) {
            ""
        } else {
            " pc_delay(pc);"
        };
        // `syncthreads` needs every thread: a thread done with the trace must not park there.
        let block_wide = if matches!(op, Op::SyncThreads) {
            ", true"
        } else {
            ""
        };
        self.line(
            out,
            &format!(
                "{{ bool pc_tr = pc_step_begin(pc, {id}, pc_occ_{id}, {collective}, {modelled}{block_wide});{delay}"
            ),
        );
        self.depth += 1;
        let occ = format!("pc_occ_{id}");
        let obj = |r: &ObjRef| r.object.0 as usize;
        match op {
            Op::Init { bar, count } => {
                let c = print(p, count);
                if self.is_libcu_barrier(bar) {
                    let name = ident(&p.object(bar.object).name);
                    self.line(
                        out,
                        &format!("if (!pc.dead) init(&{name}[{}], {c});", self.index(bar)),
                    );
                    self.line(out, &format!("pc_note_init(pc, {}, {c});", obj(bar)));
                } else {
                    self.line(
                        out,
                        &format!("pc_mb_init(pc, {}, {c}, {});", self.mb_ptr(bar)?, obj(bar)),
                    );
                }
            }
            Op::Inval { bar } => {
                if self.is_libcu_barrier(bar) {
                    let name = ident(&p.object(bar.object).name);
                    let ty = self.barrier_type(bar);
                    self.line(
                        out,
                        &format!(
                            "if (!pc.dead) {name}[{}].~{ty}();  // destructor = mbarrier.inval",
                            self.index(bar)
                        ),
                    );
                } else {
                    self.line(out, &format!("pc_mb_inval(pc, {});", self.mb_ptr(bar)?));
                }
            }
            Op::Arrive {
                bar,
                count,
                token,
                scope,
            } => {
                let n = count.as_ref().map(|c| print(p, c)).unwrap_or("1".into());
                let arr = format!("pc_arr_{}_0", obj(bar));
                if let Some(rank) = self.rank(bar) {
                    self.line(
                        out,
                        &format!(
                            "pc_mb_arrive_remote(pc, {}, {rank}, {n}, {}, {arr});",
                            self.mb_ptr(bar)?,
                            scope_is_cluster(*scope)
                        ),
                    );
                } else if self.is_libcu_barrier(bar) {
                    let name = ident(&p.object(bar.object).name);
                    let call = format!("{name}[{}].arrive({n})", self.index(bar));
                    let lhs = match token {
                        Some(t) => format!("{} = ", local(p, *t)),
                        None => "(void)".into(),
                    };
                    self.line(
                        out,
                        &format!("if (!pc.dead) {{ {lhs}{call}; {arr} += {n}; }}"),
                    );
                } else {
                    let lhs = match token {
                        Some(t) => format!("{} = ", local(p, *t)),
                        None => String::new(),
                    };
                    self.line(
                        out,
                        &format!("{lhs}pc_mb_arrive(pc, {}, {n}, {arr});", self.mb_ptr(bar)?),
                    );
                }
            }
            Op::ArriveDrop { bar, .. } => {
                let arr = format!("pc_arr_{}_0", obj(bar));
                if let Some(rank) = self.rank(bar) {
                    self.line(
                        out,
                        &format!(
                            "pc_mb_arrive_drop_remote(pc, {}, {rank}, {arr});",
                            self.mb_ptr(bar)?
                        ),
                    );
                } else if self.is_libcu_barrier(bar) {
                    let name = ident(&p.object(bar.object).name);
                    self.line(
                        out,
                        &format!(
                            "if (!pc.dead) {{ {name}[{}].arrive_and_drop(); {arr} += 1; }}",
                            self.index(bar)
                        ),
                    );
                } else {
                    self.line(
                        out,
                        &format!("(void)pc_mb_arrive_drop(pc, {}, {arr});", self.mb_ptr(bar)?),
                    );
                }
            }
            Op::ArriveExpectTx { bar, bytes, .. } => {
                let arr = format!("pc_arr_{}_0", obj(bar));
                let b = print(p, bytes);
                if let Some(rank) = self.rank(bar) {
                    self.line(
                        out,
                        &format!(
                            "pc_mb_arrive_expect_tx_remote(pc, {}, {rank}, {b}, {arr});",
                            self.mb_ptr(bar)?
                        ),
                    );
                } else if self.is_libcu_barrier(bar) {
                    let name = ident(&p.object(bar.object).name);
                    self.line(
                        out,
                        &format!(
                            "if (!pc.dead) {{ (void)cuda::device::barrier_arrive_tx({name}[{}], 1, {b}); {arr} += 1; }}",
                            self.index(bar)
                        ),
                    );
                } else {
                    self.line(
                        out,
                        &format!(
                            "(void)pc_mb_arrive_expect_tx(pc, {}, {b}, {arr});",
                            self.mb_ptr(bar)?
                        ),
                    );
                }
            }
            Op::ExpectTx { bar, bytes } => {
                let b = print(p, bytes);
                if let Some(rank) = self.rank(bar) {
                    self.line(
                        out,
                        &format!(
                            "pc_mb_expect_tx_remote(pc, {}, {rank}, {b});",
                            self.mb_ptr(bar)?
                        ),
                    );
                } else if self.is_libcu_barrier(bar) {
                    let name = ident(&p.object(bar.object).name);
                    self.line(
                        out,
                        &format!(
                            "if (!pc.dead) cuda::device::barrier_expect_tx({name}[{}], {b});",
                            self.index(bar)
                        ),
                    );
                } else {
                    self.line(
                        out,
                        &format!("pc_mb_expect_tx(pc, {}, {b});", self.mb_ptr(bar)?),
                    );
                }
            }
            Op::CompleteTx { bar, bytes } => {
                let b = print(p, bytes);
                if let Some(rank) = self.rank(bar) {
                    self.line(
                        out,
                        &format!(
                            "pc_mb_complete_tx_remote(pc, {}, {rank}, {b});",
                            self.mb_ptr(bar)?
                        ),
                    );
                } else {
                    self.line(
                        out,
                        &format!("pc_mb_complete_tx(pc, {}, {b});", self.mb_ptr(bar)?),
                    );
                }
            }
            Op::WaitParity { bar, parity, scope } => {
                self.no_remote(bar, "wait")?;
                let par = print(p, parity);
                let idx = self.index(bar);
                if self.is_software_barrier(bar) {
                    let name = ident(&p.object(bar.object).name);
                    self.line(
                        out,
                        &format!(
                            "PC_BOUNDED_LIBCU_WAIT(pc, {id}, {idx}, cuda::std::__call_try_wait_parity({name}[{idx}], (bool)(({par}) & 1)));"
                        ),
                    );
                } else {
                    self.line(
                        out,
                        &format!(
                            "pc_mb_wait_parity(pc, {}, {par}, {}, {id}, (pc_u32)({idx}));",
                            self.mb_ptr(bar)?,
                            scope_is_cluster(*scope)
                        ),
                    );
                }
            }
            Op::WaitToken { bar, token, scope } => {
                self.no_remote(bar, "wait")?;
                let t = local(p, *token);
                let idx = self.index(bar);
                if self.is_software_barrier(bar) {
                    let name = ident(&p.object(bar.object).name);
                    let ty = self.token_type(bar);
                    self.line(
                        out,
                        &format!(
                            "PC_BOUNDED_LIBCU_WAIT(pc, {id}, {idx}, cuda::std::__call_try_wait({name}[{idx}], {ty}({t})));"
                        ),
                    );
                } else {
                    self.line(
                        out,
                        &format!(
                            "pc_mb_wait_token(pc, {}, {t}, {}, {id}, (pc_u32)({idx}));",
                            self.mb_ptr(bar)?,
                            scope_is_cluster(*scope)
                        ),
                    );
                }
            }
            Op::ArriveAndWait { bar } => {
                self.no_remote(bar, "arrive_and_wait")?;
                let arr = format!("pc_arr_{}_0", obj(bar));
                let idx = self.index(bar);
                if self.is_libcu_barrier(bar) {
                    let name = ident(&p.object(bar.object).name);
                    let ty = self.token_type(bar);
                    self.line(
                        out,
                        &format!(
                            "{ty} pc_t{{}}; if (!pc.dead) {{ pc_t = {name}[{idx}].arrive(); {arr} += 1; }}"
                        ),
                    );
                    if self.is_software_barrier(bar) {
                        self.line(
                            out,
                            &format!(
                                "PC_BOUNDED_LIBCU_WAIT(pc, {id}, {idx}, cuda::std::__call_try_wait({name}[{idx}], {ty}(pc_t)));"
                            ),
                        );
                    } else {
                        self.line(
                            out,
                            &format!(
                                "pc_mb_wait_token(pc, {}, pc_t, false, {id}, (pc_u32)({idx}));",
                                self.mb_ptr(bar)?
                            ),
                        );
                    }
                } else {
                    let ptr = self.mb_ptr(bar)?;
                    self.line(
                        out,
                        &format!(
                            "pc_u64 pc_t = pc_mb_arrive(pc, {ptr}, 1, {arr}); pc_mb_wait_token(pc, {ptr}, pc_t, false, {id}, (pc_u32)({idx}));"
                        ),
                    );
                }
            }
            Op::TestWait {
                bar,
                parity,
                result,
            } => {
                self.no_remote(bar, "test_wait")?;
                let par = print(p, parity);
                let r = local(p, *result);
                let o = p.object(bar.object);
                if matches!(o.kind, ObjectKind::Barrier { completion: true }) {
                    self.line(
                        out,
                        &format!(
                            "{r} = pc.dead ? 1 : (long long)cuda::std::__call_try_wait_parity({}[{}], (bool)(({par}) & 1));",
                            ident(&o.name),
                            self.index(bar)
                        ),
                    );
                } else {
                    self.line(
                        out,
                        &format!("{r} = pc_mb_test_wait(pc, {}, {par});", self.mb_ptr(bar)?),
                    );
                }
            }
            Op::SyncThreads if self.non_aligned_syncthreads => self.line(
                out,
                "asm volatile(\"barrier.sync 0;\" ::: \"memory\");  // non-aligned: see LowerOptions",
            ),
            Op::SyncThreads => self.line(out, "__syncthreads();"),
            Op::BarSync { id: bid, count } => {
                whole_warps(p, count.as_ref(), s.span)?;
                let c = count
                    .as_ref()
                    .map(|c| print(p, c))
                    .unwrap_or("nthreads".into());
                self.line(out, &format!("pc_bar_sync({}, {c});", print(p, bid)));
            }
            Op::BarArrive { id: bid, count } => {
                whole_warps(p, count.as_ref(), s.span)?;
                let c = count
                    .as_ref()
                    .map(|c| print(p, c))
                    .unwrap_or("nthreads".into());
                self.line(out, &format!("pc_bar_arrive({}, {c});", print(p, bid)));
            }
            Op::SyncWarp => self.line(out, "__syncwarp(pc_warp_mask());"),
            Op::ClusterSync => self.line(out, "pc_cluster_arrive(); pc_cluster_wait();"),
            Op::ClusterArrive => self.line(out, "pc_cluster_arrive();"),
            Op::ClusterWait => self.line(out, "pc_cluster_wait();"),
            Op::FenceMbarrierInit => self.line(out, "if (!pc.dead) pc_fence_mbarrier_init();"),
            Op::Read { buf } | Op::Mma { buf } => {
                let (ptr, words, _, _) = self.buffer_args(buf)?;
                if matches!(op, Op::Mma { .. }) {
                    self.line(
                        out,
                        "// mma: the async-proxy operand read is modelled by a checked read",
                    );
                }
                self.line(
                    out,
                    &format!(
                        "pc_read(pc, {ptr}, {words}, {id}, (pc_u32)({}));",
                        self.index(buf)
                    ),
                );
            }
            Op::Write { buf } => {
                let (ptr, words, _, _) = self.buffer_args(buf)?;
                self.line(
                    out,
                    &format!(
                        "pc_write(pc, {ptr}, {words}, {id}, {occ}, (pc_u32)({}));",
                        self.index(buf)
                    ),
                );
            }
            Op::FenceProxyAsync => self.line(out, "pc_fence_proxy_async(pc);"),
            Op::Tma {
                dst,
                bar,
                bytes,
                multicast,
            } => {
                if dst.cta.is_some() {
                    return Err(unsupported(
                        "a TMA into a peer's buffer (`X @ r`) is not lowered: use `multicast`",
                        Some(dst.span),
                    ));
                }
                let (ptr, words, size, fill) = self.buffer_args(dst)?;
                let idx = self.index(dst);
                let (mask, mc) = match multicast {
                    Some(m) => (print(p, m), true),
                    None => ("0".into(), false),
                };
                let (bar, bytes) = (self.mb_ptr(bar)?, print(p, bytes));
                let src = format!("{fill} + {size} * (pc_u32)({idx})");
                if self.mode == Mode::Confirm && !mc {
                    // The sequencer may defer this copy's landing to the trace's landing turn.
                    self.line(
                        out,
                        &format!(
                            "pc_tma_seq(pc, pc_tr, {ptr}, {size}, {words}, {bar}, {bytes}, {src}, {id}, {occ});"
                        ),
                    );
                } else {
                    self.line(
                        out,
                        &format!(
                            "pc_tma(pc, {ptr}, {size}, {words}, {bar}, {bytes}, {mask}, {mc}, {src}, {id}, {occ});"
                        ),
                    );
                }
            }
            Op::TmaStore { src } => {
                let (ptr, words, size, _) = self.buffer_args(src)?;
                let b = self
                    .layout
                    .buffer(src.object.0)
                    .expect("checked by buffer_args");
                self.line(
                    out,
                    &format!(
                        "pc_tma_store(pc, {ptr}, {size}, {words}, {} + {size} * (pc_u32)({}), {id});",
                        b.staging_store,
                        self.index(src)
                    ),
                );
            }
            Op::BulkCommit => self.line(out, "pc_bulk_commit(pc);"),
            Op::BulkWaitRead { n } => {
                self.line(out, &format!("pc_bulk_wait_read(pc, {});", print(p, n)))
            }
            Op::CpAsync { dst } => {
                let (ptr, words, size, fill) = self.buffer_args(dst)?;
                let src = format!("{fill} + {size} * (pc_u32)({})", self.index(dst));
                // Confirm mode: the sequencer may defer this copy to the trace's landing turn.
                let copy = format!("pc_cp_async(pc, {ptr}, {size}, {words}, {src}, {id}, {occ});");
                if self.mode == Mode::Confirm {
                    self.line(
                        out,
                        &format!(
                            "if (!pc_fill_seq(pc, pc_tr, {ptr}, {size}, {words}, {src}, {id}, {occ})) {copy}"
                        ),
                    );
                } else {
                    self.line(out, &copy);
                }
            }
            Op::CommitGroup => self.line(out, "pc_commit_group(pc);"),
            Op::WaitGroup { n } => self.line(out, &format!("pc_wait_group(pc, {});", print(p, n))),
            Op::CpAsyncArrive { bar, noinc } => {
                if *noinc {
                    self.line(out, &format!("if (!pc.dead) pc_arr_{}_0 += 1;", obj(bar)));
                }
                self.line(
                    out,
                    &format!("pc_cp_async_arrive(pc, {}, {noinc});", self.mb_ptr(bar)?),
                );
            }
            Op::ProducerAcquire { pipe }
            | Op::ProducerCommit { pipe }
            | Op::ConsumerWait { pipe }
            | Op::ConsumerRelease { pipe }
            | Op::ConsumerWaitPrior { pipe, .. }
            | Op::Quit { pipe }
            | Op::MemcpyAsync { pipe, .. } => self.pipeline_op(out, id, op, pipe)?,
            Op::Compute => self.line(out, "pc_compute(pc);"),
            Op::Store { global } => self.line(
                out,
                &format!(
                    "pc_store(pc, {}, {}, 0, false, {id}, {occ});",
                    ident(&p.object(global.object).name),
                    global.object.0
                ),
            ),
            Op::Load { global } => self.line(
                out,
                &format!(
                    "pc_load(pc, {}, {}, {id});",
                    ident(&p.object(global.object).name),
                    global.object.0
                ),
            ),
            Op::StoreRelease { global, scope } => self.line(
                out,
                &format!(
                    "pc_store(pc, {}, {}, {}, true, {id}, {occ});",
                    ident(&p.object(global.object).name),
                    global.object.0,
                    scope_num(*scope)
                ),
            ),
            Op::LoadAcquire { global, scope } => self.line(
                out,
                &format!(
                    "pc_load_acquire(pc, {}, {}, {id});",
                    ident(&p.object(global.object).name),
                    scope_num(*scope)
                ),
            ),
            Op::Fence { scope } => self.line(out, &format!("pc_fence(pc, {});", scope_num(*scope))),
        }
        self.depth -= 1;
        self.line(out, &format!("pc_step_end(pc, pc_tr, {id}); {occ}++; }}"));
        Ok(())
    }

    fn pipeline_op(
        &mut self,
        out: &mut String,
        id: usize,
        op: &Op,
        pipe: &ObjRef,
    ) -> Result<(), LowerError> {
        let p = self.program;
        let o = p.object(pipe.object);
        let name = ident(&o.name);
        let i = pipe.object.0;
        let PipelineKindRef(kind) = PipelineKindRef::of(&o.kind).ok_or_else(|| {
            unsupported(format!("`{}` is not a pipeline", o.name), Some(pipe.span))
        })?;
        let block = matches!(kind, PipelineKind::Block { .. });
        let stages = match kind {
            PipelineKind::Block { stages, .. } => *stages,
            PipelineKind::Thread => 0,
        };
        match op {
            Op::ProducerAcquire { .. } => {
                if block {
                    self.line(
                        out,
                        &format!(
                            "pc_mb_wait_parity(pc, cuda::device::barrier_native_handle({name}_bars[2 * {name}_head + 1]), {name}_cpar, false, {id}, {name}_head);"
                        ),
                    );
                }
                self.line(out, &format!("if (!pc.dead) {name}.producer_acquire();"));
            }
            Op::ProducerCommit { .. } => {
                if block {
                    self.line(
                        out,
                        &format!(
                            "if (!pc.dead) {{ {name}.producer_commit(); pc_arr_{i}_0 += 1; if (++{name}_head == {stages}) {{ {name}_head = 0; {name}_cpar ^= 1; }} }}"
                        ),
                    );
                } else {
                    self.line(out, &format!("if (!pc.dead) {name}.producer_commit();"));
                }
            }
            Op::ConsumerWait { .. } => {
                if block {
                    self.line(
                        out,
                        &format!(
                            "pc_mb_wait_parity(pc, cuda::device::barrier_native_handle({name}_bars[2 * {name}_tail]), {name}_ppar, false, {id}, {name}_tail);"
                        ),
                    );
                }
                self.line(out, &format!("if (!pc.dead) {name}.consumer_wait();"));
            }
            Op::ConsumerRelease { .. } => {
                if block {
                    self.line(
                        out,
                        &format!(
                            "if (!pc.dead) {{ {name}.consumer_release(); pc_arr_{i}_1 += 1; if (++{name}_tail == {stages}) {{ {name}_tail = 0; {name}_ppar ^= 1; }} }}"
                        ),
                    );
                } else {
                    self.line(out, &format!("if (!pc.dead) {name}.consumer_release();"));
                }
            }
            Op::ConsumerWaitPrior { n, .. } => {
                if block {
                    return Err(unsupported(
                        "`consumer_wait_prior` is lowered for `pipeline NAME thread` only (pipeline_consumer_wait_prior takes a thread-scope pipeline)",
                        Some(pipe.span),
                    ));
                }
                match expr::const_eval(p, n) {
                    Some(v) if (0..=255).contains(&v) => self.line(
                        out,
                        &format!("if (!pc.dead) cuda::pipeline_consumer_wait_prior<{v}>({name});"),
                    ),
                    _ => {
                        self.line(out, &format!("if (!pc.dead) switch ({}) {{", print(p, n)));
                        for v in 0..8 {
                            self.line(
                                out,
                                &format!("  case {v}: cuda::pipeline_consumer_wait_prior<{v}>({name}); break;"),
                            );
                        }
                        self.line(
                            out,
                            &format!(
                                "  default: cuda::pipeline_consumer_wait_prior<8>({name}); break;"
                            ),
                        );
                        self.line(out, "}");
                    }
                }
            }
            Op::Quit { .. } => {
                self.line(out, &format!("if (!pc.dead) (void){name}.quit();"));
            }
            Op::MemcpyAsync { dst, .. } => {
                let (ptr, words, size, fill) = self.buffer_args(dst)?;
                let occ = format!("pc_occ_{id}");
                let src = format!("{fill} + {size} * (pc_u32)({})", self.index(dst));
                // Confirm mode: the sequencer may defer this copy to the trace's landing turn
                // (the commit then binds no copy of it: its arrival is not held back).
                let deferred = if self.mode == Mode::Confirm {
                    format!(
                        "!pc_fill_seq(pc, pc_tr, {ptr}, {size}, {words}, {src}, {id}, {occ}) && "
                    )
                } else {
                    String::new()
                };
                self.line(
                    out,
                    &format!(
                        "if ({deferred}!pc.dead) cuda::memcpy_async({ptr}, pc_stage(pc, {src}, {words}, {id}, {occ}), cuda::aligned_size_t<16>({size}), {name});"
                    ),
                );
            }
            _ => unreachable!("pipeline_op is called for pipeline operations only"),
        }
        Ok(())
    }

    fn no_remote(&self, r: &ObjRef, what: &str) -> Result<(), LowerError> {
        if r.cta.is_some() {
            return Err(unsupported(
                format!(
                    "`{what}` on a peer block's barrier (`@`) is not supported by the hardware \
                     (PTX: only arrive, arrive_drop, expect_tx and complete_tx may address \
                     .shared::cluster); it is not lowered"
                ),
                Some(r.span),
            ));
        }
        Ok(())
    }

    fn barrier_type(&self, r: &ObjRef) -> &'static str {
        match self.program.object(r.object).kind {
            ObjectKind::Barrier { completion: true } => "pc_cbar_t",
            _ => "pc_bar_t",
        }
    }

    fn token_type(&self, r: &ObjRef) -> String {
        if self.is_libcu_barrier(r) {
            format!("{}::arrival_token", self.barrier_type(r))
        } else {
            "pc_u64".into()
        }
    }
}

struct PipelineKindRef<'k>(&'k PipelineKind);

impl<'k> PipelineKindRef<'k> {
    fn of(kind: &'k ObjectKind) -> Option<Self> {
        match kind {
            ObjectKind::Pipeline(k) => Some(PipelineKindRef(k)),
            _ => None,
        }
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

/// The hardware counts named-barrier arrivals per warp (PTX `bar.sync a, b`: `b` is a multiple
/// of the warp size), so a count that is not one cannot run: `bar.sync` traps with an illegal
/// instruction or never completes. The checker counts threads (docs/design.md), which is why
/// scaled-down files (one model thread per warpgroup) check on the CPU but must be fuzzed at a
/// size whose named barriers hold whole warps.
fn whole_warps(
    p: &protocols::ir::Program,
    count: Option<&protocols::ir::Expr>,
    span: protocols::Span,
) -> Result<(), LowerError> {
    match count.and_then(|c| super::expr::const_eval(p, c)) {
        Some(n) if n % 32 != 0 => Err(unsupported(
            format!(
                "named-barrier count {n} is not a multiple of 32: the GPU counts bar.sync/bar.arrive arrivals per warp, so this size cannot run on hardware (fuzz it with parameters that make the participating threads whole warps, e.g. the file's defaults)"
            ),
            Some(span),
        )),
        _ => Ok(()),
    }
}
