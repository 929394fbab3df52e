//! The statements of one thread's events (`Ctx`): an event's text, the objects and byte ranges it
//! names, and the instruction it comes from.

use super::*;

impl Ctx<'_> {
    pub(super) fn key(&self, instr: u32) -> (Option<(u32, u32, u32)>, u32) {
        let ins = &self.inp.func.instrs[instr as usize];
        match ins.src {
            Some(s) => {
                let u = s.shown(self.trampoline);
                (Some((u.file, u.line, u.col)), u32::MAX)
            }
            None => (None, instr),
        }
    }

    pub(super) fn stmt(&self, t: &Trace, i: usize, uses_token: &BTreeSet<usize>) -> Option<Stmt> {
        let e = &t.events[i];
        let sh = self.inp.shared;
        let o = self.objs;
        let mut p: Vec<Piece> = Vec::new();
        let txt = |s: &str| Piece::T(s.to_string());
        let mut token_def = false;
        let mut token_use = None;
        match &e.ev {
            Ev::Init { bar, count } => {
                p.push(txt("init "));
                p.extend(o.bar(sh, *bar));
                p.push(txt(", "));
                p.push(Piece::I(*count));
            }
            Ev::Inval { bar } => {
                p.push(txt("inval "));
                p.extend(o.bar(sh, *bar));
            }
            Ev::Arrive {
                bar,
                count,
                drop,
                tx,
                cluster_scope,
            } => {
                if uses_token.contains(&i) {
                    p.push(txt("let tok = "));
                    token_def = true;
                }
                match (drop, tx) {
                    (true, _) => p.push(txt("arrive_drop ")),
                    (false, Some(_)) => p.push(txt("arrive_expect_tx ")),
                    (false, None) => p.push(txt("arrive ")),
                }
                p.extend(o.bar(sh, *bar));
                if let Some(n) = tx {
                    p.push(txt(", "));
                    p.push(Piece::I(*n));
                } else if *count != 1 {
                    p.push(txt(", "));
                    p.push(Piece::I(*count));
                }
                if *cluster_scope {
                    p.push(txt(" scope cluster"));
                }
            }
            Ev::ExpectTx { bar, bytes } | Ev::CompleteTx { bar, bytes } => {
                p.push(txt(if matches!(e.ev, Ev::ExpectTx { .. }) {
                    "expect_tx "
                } else {
                    "complete_tx "
                }));
                p.extend(o.bar(sh, *bar));
                p.push(txt(", "));
                p.push(Piece::I(*bytes));
            }
            Ev::WaitParity {
                bar,
                parity,
                cluster_scope,
            } => {
                p.push(txt("wait "));
                p.extend(o.bar(sh, *bar));
                p.push(txt(" parity "));
                p.push(Piece::I((*parity & 1) as i64));
                if *cluster_scope {
                    p.push(txt(" scope cluster"));
                }
            }
            Ev::Poll { tests } => {
                // One line (statements separated by `;`), so that it folds and re-rolls as
                // one statement: the first trip's tests, then, when one failed, a wait on each
                // barrier (exec/poll.rs). `\u{3}N\u{3}` is the N-th test's result, named by
                // `emit_lines`.
                for (j, (bar, parity)) in tests.iter().enumerate() {
                    let sep = if j == 0 { "" } else { "; " };
                    p.push(Piece::T(format!("{sep}let \u{3}{j}\u{3} = test_wait ")));
                    p.extend(o.bar(sh, *bar));
                    p.push(txt(" parity "));
                    p.push(Piece::I((*parity & 1) as i64));
                }
                let failed: Vec<String> = (0..tests.len())
                    .map(|j| format!("\u{3}{j}\u{3} == 0"))
                    .collect();
                p.push(Piece::T(format!("; if {} {{ ", failed.join(" || "))));
                let mut waited: Vec<SAddr> = Vec::new();
                for (bar, parity) in tests {
                    if waited.contains(bar) {
                        continue;
                    }
                    if !waited.is_empty() {
                        p.push(txt("; "));
                    }
                    waited.push(*bar);
                    p.push(txt("wait "));
                    p.extend(o.bar(sh, *bar));
                    p.push(txt(" parity "));
                    p.push(Piece::I((*parity & 1) as i64));
                }
                p.push(txt(" }"));
            }
            Ev::WaitToken {
                bar,
                arrive,
                cluster_scope,
            } => {
                p.push(txt("wait "));
                p.extend(o.bar(sh, *bar));
                p.push(txt(" token "));
                token_use = Some(*arrive);
                if *cluster_scope {
                    p.push(txt(" scope cluster"));
                }
            }
            Ev::BarSync { id, count, aligned } => {
                if self.syncthreads_segments
                    && block_barrier(&e.ev, self.inp.nthreads, self.named_segments)
                {
                    return None; // a segment boundary
                }
                if *id == 0 && count.is_none() && *aligned {
                    p.push(txt("syncthreads"));
                } else {
                    p.push(txt("bar_sync "));
                    p.push(Piece::I(*id));
                    if let Some(c) = count {
                        p.push(txt(", "));
                        p.push(Piece::I(*c));
                    }
                    // `barrier.sync` without `.aligned`: the threads may reach the barrier at
                    // different instructions.
                    if !*aligned {
                        p.push(txt(" unaligned"));
                    }
                }
            }
            Ev::BarArrive { id, count, aligned } => {
                p.push(txt("bar_arrive "));
                p.push(Piece::I(*id));
                if let Some(c) = count {
                    p.push(txt(", "));
                    p.push(Piece::I(*c));
                }
                if !*aligned {
                    p.push(txt(" unaligned"));
                }
            }
            Ev::SyncWarp => p.push(txt("syncwarp")),
            // Lowered by `converged.rs` before the text is built.
            Ev::Converged => return None,
            Ev::ClusterArrive => p.push(txt("cluster_arrive")),
            Ev::ClusterWait => p.push(txt("cluster_wait")),
            Ev::FenceProxyAsync => p.push(txt("fence_proxy_async")),
            Ev::FenceMbarrierInit => p.push(txt("fence_mbarrier_init")),
            Ev::Copy {
                dst,
                bytes,
                bar,
                multicast,
                dense,
                ..
            } => {
                // A copy writes the bytes `dst .. +n` of its buffer when `n` is its box (the
                // instruction's size, `--arg`, the launch's tensor map) and the box lands dense
                // (`dense`: not `.im2col`, not `.tile::gather4`); a byte count that is a share
                // of the expect_tx says nothing of where the copy's bytes end, so such a copy
                // keeps its whole buffer.
                let (n, exact) = match bytes {
                    CopyBytes::Known(n) => (*n, true),
                    CopyBytes::Share(n) => (*n, false),
                    CopyBytes::TensorMap { .. } => unreachable!("resolved"),
                };
                let r = Range {
                    at: *dst,
                    len: n as u64,
                };
                p.push(txt("tma "));
                p.extend(o.buf(sh, r));
                if exact && *dense && !self.inp.whole_buffers {
                    p.extend(o.bytes(sh, r));
                }
                p.push(txt(" -> "));
                p.extend(o.bar(sh, *bar));
                p.push(txt(", "));
                p.push(Piece::I(n));
                if let Some(m) = multicast {
                    p.push(txt(" multicast "));
                    p.push(Piece::I(*m as i64));
                }
            }
            Ev::TmaStore { src, len, .. } => {
                p.push(txt("tma_store "));
                p.extend(o.buf(
                    sh,
                    Range {
                        at: *src,
                        len: len.unwrap_or(1),
                    },
                ));
            }
            Ev::BulkCommit => p.push(txt("bulk_commit")),
            Ev::BulkWaitRead { n } => {
                p.push(txt("bulk_wait_read "));
                p.push(Piece::I(*n));
            }
            Ev::CpAsync { dst } => {
                p.push(txt("cp_async "));
                p.extend(o.buf(sh, *dst));
            }
            Ev::CommitGroup => p.push(txt("commit_group")),
            Ev::WaitGroup { n } => {
                p.push(txt("wait_group "));
                p.push(Piece::I(*n));
            }
            Ev::CpAsyncArrive { bar, noinc } => {
                p.push(txt("cp_async_arrive "));
                p.extend(o.bar(sh, *bar));
                if *noinc {
                    p.push(txt(" noinc"));
                }
            }
            Ev::Read(r) => {
                if self.on_barrier(*r) {
                    return None;
                }
                p.push(txt("read "));
                p.extend(o.buf(sh, *r));
                if self.ranged.contains(&e.instr) {
                    p.extend(o.bytes(sh, *r));
                }
            }
            Ev::Write(r, _) => {
                if self.on_barrier(*r) {
                    return None;
                }
                let ranged = self.ranged.contains(&e.instr);
                let part = !ranged && self.part.get(&(t.rank, t.tid, i)).copied().unwrap_or(false);
                p.push(txt(if part { "write part " } else { "write " }));
                p.extend(o.buf(sh, *r));
                if ranged {
                    p.extend(o.bytes(sh, *r));
                }
                if let Some(v) = self.values.get(&(t.rank, t.tid, i)).filter(|_| !part) {
                    p.push(txt(&format!(" value {v}")));
                }
            }
            Ev::Mma(r) => {
                if self.on_barrier(*r) {
                    return None;
                }
                p.push(txt("mma "));
                p.extend(o.buf(sh, *r));
                if self.ranged.contains(&e.instr) {
                    p.extend(o.bytes(sh, *r));
                }
            }
        }
        Some(Stmt {
            pieces: p,
            instrs: vec![e.instr],
            key: self.key(e.instr),
            token_def,
            token_use,
        })
    }

    pub(super) fn on_barrier(&self, r: Range) -> bool {
        let Some(s) = Objects::sym_of(self.inp.shared, r.at.off) else {
            return true;
        };
        !self.objs.syms[s]
            .regions
            .iter()
            .any(|&(a, b)| a <= r.at.off && r.at.off < b)
    }
}
