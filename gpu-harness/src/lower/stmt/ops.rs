//! One lowering per operation: inline PTX for mbarriers, named and cluster barriers, TMA,
//! `cp.async`, bulk groups and fences; libcu++ for `barrier` and `pipeline` objects.

use super::Gen;
use crate::lower::expr::{self, ident, local, print};
use crate::lower::{LowerError, Mode, unsupported};
use protocols::ir::{MemScope, ObjRef, ObjectKind, Op, PipelineKind, Stmt};

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

impl Gen<'_> {
    pub(super) fn op(&mut self, out: &mut String, s: &Stmt, op: &Op) -> Result<(), LowerError> {
        let p = self.program;
        let id = self.next_stmt;
        debug_assert_eq!(self.layout.stmts[id].span, s.span);
        self.next_stmt += 1;
        let collective = crate::lower::layout::is_collective(op);
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
                &format!("pc_at(pc, {id}, {occ}); asm volatile(\"barrier.sync 0;\" ::: \"memory\");  // non-aligned: see LowerOptions"),
            ),
            Op::SyncThreads => self.line(out, &format!("pc_at(pc, {id}, {occ}); __syncthreads();")),
            Op::BarSync {
                id: bid,
                count,
                unaligned,
            } => {
                whole_warps(p, count.as_ref(), s.span)?;
                // `unaligned`: `barrier.sync` without `.aligned` (pc_barrier_*).
                let f = if *unaligned { "pc_barrier" } else { "pc_bar" };
                match count {
                    Some(c) => self.line(
                        out,
                        &format!(
                            "pc_at(pc, {id}, {occ}); {f}_sync({}, {});",
                            print(p, bid),
                            print(p, c)
                        ),
                    ),
                    // The whole block: `bar.sync id` without a count (a count of `nthreads`
                    // is not a multiple of 32 in a block of partial warps).
                    None if !self.block.is_multiple_of(32) => self.line(
                        out,
                        &format!("pc_at(pc, {id}, {occ}); {f}_sync_all({});", print(p, bid)),
                    ),
                    None => self.line(
                        out,
                        &format!("pc_at(pc, {id}, {occ}); {f}_sync({}, nthreads);", print(p, bid)),
                    ),
                }
            }
            Op::BarArrive {
                id: bid,
                count,
                unaligned,
            } => {
                whole_warps(p, count.as_ref(), s.span)?;
                if count.is_none() && !self.block.is_multiple_of(32) {
                    return Err(unsupported(
                        format!(
                            "`bar_arrive` without a count in a block of {} threads: bar.arrive needs a thread count, a multiple of 32, and this block is not whole warps",
                            self.block
                        ),
                        Some(s.span),
                    ));
                }
                let c = count
                    .as_ref()
                    .map(|c| print(p, c))
                    .unwrap_or("nthreads".into());
                let f = if *unaligned { "pc_barrier" } else { "pc_bar" };
                self.line(out, &format!("{f}_arrive({}, {c});", print(p, bid)));
            }
            Op::SyncWarp => self.line(
                out,
                &format!("pc_at(pc, {id}, {occ}); __syncwarp(pc_warp_mask());"),
            ),
            Op::ClusterSync => self.line(
                out,
                &format!("pc_at(pc, {id}, {occ}); pc_cluster_arrive(); pc_cluster_wait();"),
            ),
            Op::ClusterArrive => self.line(out, "pc_cluster_arrive();"),
            Op::ClusterWait => self.line(out, &format!("pc_at(pc, {id}, {occ}); pc_cluster_wait();")),
            Op::FenceMbarrierInit => self.line(out, "if (!pc.dead) pc_fence_mbarrier_init();"),
            // The harness checks races per buffer instance (one stamp per instance): an access
            // of some of its bytes would be checked as an access of all of them, a race the
            // checker does not report (language.md, "Byte ranges").
            Op::Read { buf } | Op::Write { buf, .. } | Op::Mma { buf } | Op::Tma { dst: buf, .. }
                if buf.bytes.is_some() =>
            {
                return Err(unsupported(
                    format!(
                        "`{}` with a byte range: the harness checks whole buffer instances, so the threads' disjoint bytes would race on the GPU; lowering byte ranges is not implemented (a `.ptx` input is lowered without them: `phasecheck extract --whole-buffers`)",
                        op.keyword()
                    ),
                    Some(s.span),
                ));
            }
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
                        "pc_read(pc, {ptr}, {words}, {id}, (pc_u32)({}){});",
                        self.index(buf),
                        self.parts_arg(buf)
                    ),
                );
            }
            Op::Write { buf, part, .. } if self.proxy_window => {
                let (ptr, words, _, _) = self.buffer_args(buf)?;
                let part = if *part { ", true" } else { "" };
                self.line(
                    out,
                    &format!(
                        "pc_write_window(pc, {ptr}, {words}, {id}, {occ}, pc_keep{part});"
                    ),
                );
            }
            Op::Write { buf, part: true, .. } => {
                let (ptr, words, _, _) = self.buffer_args(buf)?;
                self.line(
                    out,
                    &format!(
                        "pc_write_part(pc, {ptr}, {words}, {id}, {occ}, (pc_u32)({}));",
                        self.index(buf)
                    ),
                );
            }
            Op::Write {
                buf,
                part: false,
                value,
            } => {
                let (ptr, words, _, _) = self.buffer_args(buf)?;
                // `write X value N`: a stamp of the statement and the value, the same for
                // every writer, so overlapping stores of one value are no race (prelude
                // `pc_write_value`); a plain write is stamped with its writer and occurrence.
                let (call, stamp) = match value {
                    Some(v) => ("pc_write_value", format!("(pc_u32)({v}ll)")),
                    None => ("pc_write", occ.to_string()),
                };
                self.line(
                    out,
                    &format!(
                        "{call}(pc, {ptr}, {words}, {id}, {stamp}, (pc_u32)({}){});",
                        self.index(buf),
                        self.parts_arg(buf)
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

/// The hardware counts named-barrier arrivals per warp (PTX `bar.sync a, b`: `b` is a multiple
/// of the warp size), so a count that is not one cannot run: `bar.sync` traps with an illegal
/// instruction or never completes. The checker counts threads (docs/design.md) and judges
/// counts only in blocks of a warp or more (`named-barrier-count`), which is why scaled-down
/// files (one model thread per warpgroup) check on the CPU but must be fuzzed at a size whose
/// named barriers hold whole warps. (A named barrier run by part of a warp, which the checker
/// reports as `barrier-divergence`, lowers as written: the kernel does what the file says, and
/// the hardware shows what that UB does.)
fn whole_warps(
    p: &protocols::ir::Program,
    count: Option<&protocols::ir::Expr>,
    span: protocols::Span,
) -> Result<(), LowerError> {
    match count.and_then(|c| expr::const_eval(p, c)) {
        Some(n) if n % 32 != 0 => Err(unsupported(
            format!(
                "named-barrier count {n} is not a multiple of 32: the GPU counts bar.sync/bar.arrive arrivals per warp, so this size cannot run on hardware (fuzz it with parameters that make the participating threads whole warps, e.g. the file's defaults)"
            ),
            Some(span),
        )),
        _ => Ok(()),
    }
}
