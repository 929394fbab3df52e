//! Synchronization instructions: mbarrier operations, their waits and the wait-loop probe,
//! `bar`/`barrier` (named and whole-block), `cp.async` groups and arrive-on, the bulk and tensor
//! copies (`cp.async.bulk`, TMA, multicast) and `wgmma`'s operand reads.

use super::*;

impl<'a> Exec<'a> {
    pub(super) fn cluster_scope(ins: &Instr) -> bool {
        ins.has("cluster")
    }

    pub(super) fn mbarrier(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let what = ins.parts.get(1).map(String::as_str).unwrap_or("");
        match what {
            "init" => {
                let bar = self.shared_addr(th, ins, 0, "the barrier")?;
                let count = self.int(th, ins, 1, "the arrival count")?;
                self.event(th, Ev::Init { bar, count })?;
            }
            "inval" => {
                let bar = self.shared_addr(th, ins, 0, "the barrier")?;
                self.event(th, Ev::Inval { bar })?;
            }
            "arrive" | "arrive_drop" => {
                if ins.has("noComplete") {
                    return Err(self
                        .err(
                            ins,
                            "mbarrier.arrive.noComplete is not supported".into(),
                            None,
                        )
                        .into());
                }
                let bar = self.shared_addr(th, ins, 1, "the barrier")?;
                let tx = ins.has("expect_tx");
                let (count, tx) = if tx {
                    (1, Some(self.int(th, ins, 2, "the transaction count")?))
                } else if ins.operands.len() > 2 {
                    (self.int(th, ins, 2, "the arrival count")?, None)
                } else {
                    (1, None)
                };
                if what == "arrive_drop" && tx.is_some() {
                    return Err(self
                        .err(
                            ins,
                            "mbarrier.arrive_drop.expect_tx is not supported".into(),
                            None,
                        )
                        .into());
                }
                if what == "arrive_drop" && count != 1 {
                    return Err(self
                        .err(
                            ins,
                            "mbarrier.arrive_drop with a count is not supported".into(),
                            None,
                        )
                        .into());
                }
                let idx = th.events.len();
                self.event(
                    th,
                    Ev::Arrive {
                        bar,
                        count,
                        drop: what == "arrive_drop",
                        tx,
                        cluster_scope: Self::cluster_scope(ins),
                    },
                )?;
                let d = ins.operands[0].clone();
                self.set(th, &d, Val::K(TOKEN + idx as u64), 64);
            }
            "expect_tx" | "complete_tx" => {
                let bar = self.shared_addr(th, ins, 0, "the barrier")?;
                let bytes = self.int(th, ins, 1, "the transaction count")?;
                let ev = if what == "expect_tx" {
                    Ev::ExpectTx { bar, bytes }
                } else {
                    Ev::CompleteTx { bar, bytes }
                };
                self.event(th, ev)?;
            }
            "try_wait" | "test_wait" => return self.wait(th, ins),
            "pending_count" => self.clobber(th, ins, WHY_OP),
            _ => {
                return Err(self
                    .err(ins, format!("`{}` is not supported", ins.text), None)
                    .into());
            }
        }
        Ok(Flow::Next)
    }

    /// `mbarrier.try_wait`/`test_wait`: accepted as a blocking wait when its false result only
    /// leads back to a wait on the same barrier and phase (see the module comment).
    pub(super) fn wait(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let bar = self.shared_addr(th, ins, 1, "the barrier")?;
        let on_op = ins.operands.get(2).cloned().unwrap_or(Operand::Sink);
        let on = match self.get(th, ins, &on_op, 64) {
            Val::K(v) => {
                if ins.has("parity") {
                    WaitOn::Parity(v & 0xffff_ffff)
                } else {
                    WaitOn::Token(v)
                }
            }
            u => return Err(self.unknown(ins, "the phase this wait waits for", u).into()),
        };
        let d = ins.operands[0].clone();
        if let Some(Probe::Poll) = th.probe {
            return Ok(Flow::Test {
                bar,
                on,
                cluster_scope: Self::cluster_scope(ins),
            });
        }
        if let Some(Probe::Loop {
            bar: pbar, on: pon, ..
        }) = &th.probe
        {
            let same = *pbar == bar
                && match (pon, &on) {
                    (WaitOn::Parity(a), WaitOn::Parity(b)) => a & 1 == b & 1,
                    (WaitOn::Token(a), WaitOn::Token(b)) => a == b,
                    _ => false,
                };
            if !same {
                return Err(StepErr::Probe(ProbeFail(format!(
                    "a wait on another barrier or phase at PTX line {}",
                    ins.line
                ))));
            }
            self.set(th, &d, Val::K(0), 1);
            return Ok(Flow::ProbeHit(th.pc));
        }
        // Is it a blocking wait? Follow every path from the false result.
        let mut probe_th = th.clone();
        probe_th.events.clear();
        self.set(&mut probe_th, &d, Val::K(0), 1);
        let first = loop_state(th.pc, &probe_th);
        probe_th.probe = Some(Probe::Loop {
            bar,
            on: on.clone(),
        });
        probe_th.pc += 1;
        if let Err(why) = self.probe(probe_th, first) {
            // Not a wait loop of its own: the first test of a poll of several barriers?
            let poll_why = match self.poll(th) {
                Ok(flow) => return Ok(flow),
                Err(e) => e,
            };
            return Err(self
                .err(
                    ins,
                    format!(
                        "`{}` is not a blocking wait: when it returns false, the thread can go on \
                         to {}; nor does it start a poll of barriers that ends only when all are \
                         complete: {}",
                        ins.parts[..2].join("."),
                        why.0,
                        poll_why.0
                    ),
                    Some(
                        "phasecheck follows try_wait/test_wait in a loop that retries until the \
                         phase completes, and in a poll of several barriers that goes on only \
                         once every one of them has been seen complete (docs/ptx.md, wait loops); \
                         a bounded or other non-blocking use is not followed"
                            .into(),
                    ),
                )
                .into());
        }
        let cluster_scope = Self::cluster_scope(ins);
        let ev = match on {
            WaitOn::Parity(p) => Ev::WaitParity {
                bar,
                parity: p,
                cluster_scope,
            },
            WaitOn::Token(t) => {
                if !(TOKEN..TOKEN + th.events.len() as u64).contains(&t) {
                    return Err(self
                        .err(
                            ins,
                            "the token of this wait does not come from an arrive of this thread"
                                .into(),
                            None,
                        )
                        .into());
                }
                Ev::WaitToken {
                    bar,
                    arrive: (t - TOKEN) as usize,
                    cluster_scope,
                }
            }
        };
        self.event(th, ev)?;
        self.set(th, &d, Val::K(1), 1);
        Ok(Flow::Next)
    }

    /// Every path from a wait's false result (`start`; `first`: the state at the wait).
    pub(super) fn probe(&mut self, start: Th, first: LoopState) -> Result<(), ProbeFail> {
        // States at the probed waits, of every path: a path that reaches one again ends there
        // (what follows it is followed once).
        let mut visited = HashSet::from([first]);
        let mut stack = vec![start];
        let mut budget: u64 = 200_000;
        while let Some(mut t) = stack.pop() {
            loop {
                if budget == 0 {
                    return Err(ProbeFail(
                        "a path that does not come back to the wait within 200000 instructions"
                            .into(),
                    ));
                }
                budget -= 1;
                if t.pc >= self.f.instrs.len() {
                    return Err(ProbeFail("the end of the kernel".into()));
                }
                let ins = self.instr(t.pc);
                if let Some((p, neg)) = ins.guard
                    && let Val::U(_) = t.regs[p as usize]
                {
                    // Both ways.
                    let mut other = t.clone();
                    other.regs[p as usize] = Val::K(neg as u64);
                    stack.push(other);
                    t.regs[p as usize] = Val::K(!neg as u64);
                }
                match self.step_guarded(&mut t) {
                    Ok(Flow::Next) => t.pc += 1,
                    Ok(Flow::Jump(x)) => t.pc = x,
                    Ok(Flow::Exit) => {
                        return Err(ProbeFail(format!(
                            "exit at PTX line {}",
                            self.instr(t.pc.min(self.f.instrs.len() - 1)).line
                        )));
                    }
                    Ok(Flow::Coll) => {
                        return Err(ProbeFail(format!(
                            "a warp collective at PTX line {}",
                            ins.line
                        )));
                    }
                    Ok(Flow::Block) => {
                        return Err(ProbeFail(format!("a barrier at PTX line {}", ins.line)));
                    }
                    Ok(Flow::ProbeHit(pc)) => {
                        if !visited.insert(loop_state(pc, &t)) {
                            break; // the loop goes round: a state it was in before
                        }
                        t.pc += 1;
                    }
                    Ok(Flow::Test { .. }) => unreachable!("a wait loop's probe"),
                    Err(StepErr::Probe(f)) => return Err(f),
                    Err(StepErr::Err(e)) => {
                        return Err(ProbeFail(format!(
                            "an instruction it cannot follow at PTX line {} ({})",
                            e.line.unwrap_or(0),
                            e.message
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    pub(super) fn barrier(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let base = ins.base();
        let what = ins.parts.get(1).map(String::as_str).unwrap_or("");
        if base == "barrier" && what == "cluster" {
            let ev = match ins.parts.get(2).map(String::as_str) {
                Some("arrive") => Ev::ClusterArrive,
                Some("wait") => Ev::ClusterWait,
                _ => {
                    return Err(self
                        .err(ins, format!("`{}` is not supported", ins.text), None)
                        .into());
                }
            };
            self.event(th, ev)?;
            return Ok(Flow::Next);
        }
        if what == "warp" {
            // bar.warp.sync: a warp collective.
            if th.probe.is_some() {
                return Err(StepErr::Probe(ProbeFail(format!(
                    "__syncwarp at PTX line {}",
                    ins.line
                ))));
            }
            return Ok(Flow::Coll);
        }
        let aligned = base == "bar" || ins.has("aligned");
        let (ev_sync, red) = match what {
            "sync" | "" => (true, false),
            "arrive" => (false, false),
            "red" => (true, true),
            _ => {
                return Err(self
                    .err(ins, format!("`{}` is not supported", ins.text), None)
                    .into());
            }
        };
        // Operands: [d,] id [, count] [, pred] for bar.red.
        let first = if red { 1 } else { 0 };
        let id = self.int(th, ins, first, "the barrier id")?;
        let count = if ins.operands.len() > first + 1 && !(red && ins.operands.len() == first + 2) {
            Some(self.int(th, ins, first + 1, "the thread count")?)
        } else {
            None
        };
        let ev = if ev_sync {
            Ev::BarSync { id, count, aligned }
        } else {
            Ev::BarArrive { id, count, aligned }
        };
        self.event(th, ev)?;
        if red {
            let d = ins.operands[0].clone();
            let u = self.why(ins, WHY_COLL, || {
                "the result of a barrier reduction (bar.red)".into()
            });
            self.set(th, &d, u, 32);
        }
        // A barrier of the whole block ends the thread's epoch (`mem.rs`).
        if ev_sync && count.is_none_or(|c| c as u32 == self.nthreads) {
            return Ok(Flow::Block);
        }
        Ok(Flow::Next)
    }

    pub(super) fn cp(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        // cp.async.* and cp.reduce.*
        if ins.parts.get(1).map(String::as_str) != Some("async") {
            return Err(self
                .err(ins, format!("`{}` is not supported", ins.text), None)
                .into());
        }
        let p2 = ins.parts.get(2).map(String::as_str).unwrap_or("");
        match p2 {
            "commit_group" => self.event(th, Ev::CommitGroup)?,
            "wait_group" => {
                let n = self.int(th, ins, 0, "the group count")?;
                self.event(th, Ev::WaitGroup { n })?;
            }
            "wait_all" => {
                self.event(th, Ev::CommitGroup)?;
                self.event(th, Ev::WaitGroup { n: 0 })?;
            }
            "mbarrier" => {
                let bar = self.shared_addr(th, ins, 0, "the barrier")?;
                self.event(
                    th,
                    Ev::CpAsyncArrive {
                        bar,
                        noinc: ins.has("noinc"),
                    },
                )?;
            }
            "ca" | "cg" => {
                let dst = self.shared_addr(th, ins, 0, "the destination")?;
                let len = self.int(th, ins, 2, "the copy size")? as u64;
                self.event(
                    th,
                    Ev::CpAsync {
                        dst: Range { at: dst, len },
                    },
                )?;
            }
            "bulk" => return self.bulk(th, ins),
            _ => {
                return Err(self
                    .err(ins, format!("`{}` is not supported", ins.text), None)
                    .into());
            }
        }
        Ok(Flow::Next)
    }

    pub(super) fn param_of_map(
        &mut self,
        th: &Th,
        ins: &Instr,
        op: &Operand,
    ) -> Option<(u32, u64)> {
        let v = self.get(th, ins, op, 64);
        match v {
            Val::K(x) => match generic(x) {
                Place::Param { index, off } => Some((index, off)),
                _ => None,
            },
            Val::U(_) => None,
        }
    }

    pub(super) fn bulk(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let p3 = ins.parts.get(3).map(String::as_str).unwrap_or("");
        match p3 {
            "commit_group" => {
                self.event(th, Ev::BulkCommit)?;
                return Ok(Flow::Next);
            }
            "wait_group" => {
                let n = self.int(th, ins, 0, "the group count")?;
                self.event(th, Ev::BulkWaitRead { n })?;
                return Ok(Flow::Next);
            }
            "prefetch" => return Ok(Flow::Next),
            _ => {}
        }
        let tensor = p3 == "tensor";
        // Direction: the first state space after the opcode (and dimensions) is the
        // destination's.
        let dst_space = ins.parts[3..]
            .iter()
            .find(|p| p.starts_with("shared") || p.starts_with("global"))
            .map(String::as_str)
            .unwrap_or("");
        let multicast = ins.has_prefix("multicast");
        if dst_space.starts_with("shared") {
            let src_space = ins.parts[3..]
                .iter()
                .filter(|p| p.starts_with("shared") || p.starts_with("global"))
                .nth(1)
                .map(String::as_str)
                .unwrap_or("");
            if !src_space.starts_with("global") {
                return Err(self
                    .err(
                        ins,
                        "shared-to-shared bulk copies are not supported yet".into(),
                        None,
                    )
                    .into());
            }
            let dst = self.shared_addr(th, ins, 0, "the destination")?;
            let (bytes, bar_idx) = if tensor {
                let map = match &ins.operands[1] {
                    Operand::TensorAddr { map, .. } => Some(map.as_ref().clone()),
                    _ => None,
                };
                let param = map.and_then(|m| self.param_of_map(th, ins, &m));
                (CopyBytes::TensorMap { param }, 2)
            } else {
                (CopyBytes::Known(self.int(th, ins, 2, "the copy size")?), 3)
            };
            let bar = self.shared_addr(th, ins, bar_idx, "the barrier")?;
            let multicast = if multicast {
                // The mask is the operand after the barrier (im2col offsets come before it).
                let last = ins
                    .operands
                    .iter()
                    .enumerate()
                    .skip(bar_idx + 1)
                    .find(|(_, o)| !matches!(o, Operand::Vector(_)))
                    .map(|(i, _)| i);
                match last {
                    Some(i) => Some(self.int(th, ins, i, "the multicast mask")? as u64 & 0xffff),
                    None => None,
                }
            } else {
                None
            };
            self.event(
                th,
                Ev::Copy {
                    dst,
                    bytes,
                    bar,
                    multicast,
                    tensor,
                    dense: !tensor
                        || !ins.parts[1..]
                            .iter()
                            .any(|p| p.starts_with("im2col") || p.starts_with("tile::")),
                },
            )?;
        } else {
            // Shared to global (a TMA store).
            let src_idx = 1;
            let src = self.shared_addr(th, ins, src_idx, "the source")?;
            let (len, param) = if tensor {
                let map = match &ins.operands[0] {
                    Operand::TensorAddr { map, .. } => Some(map.as_ref().clone()),
                    _ => None,
                };
                (None, map.and_then(|m| self.param_of_map(th, ins, &m)))
            } else {
                (Some(self.int(th, ins, 2, "the copy size")? as u64), None)
            };
            self.event(th, Ev::TmaStore { src, len, param })?;
        }
        Ok(Flow::Next)
    }

    pub(super) fn wgmma(&mut self, th: &mut Th, ins: &Instr) -> R<()> {
        // wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype d, a, b, ...: `a` is a
        // descriptor (64-bit) or registers, `b` is a descriptor.
        let shape = ins
            .parts
            .iter()
            .find(|p| p.starts_with("m64"))
            .cloned()
            .unwrap_or_default();
        let (n, k) = parse_shape(&shape);
        // The element types after the shape: d's, then a's and b's. FP8 (`e4m3`, `e5m2`) and
        // the 8-bit integers are one byte, `tf32` four.
        let elem_bytes = |p: &str| -> Option<u64> {
            match p {
                "e4m3" | "e5m2" | "s8" | "u8" => Some(1),
                "f16" | "bf16" => Some(2),
                "tf32" | "f32" | "s32" => Some(4),
                _ => None,
            }
        };
        let tys: Vec<u64> = ins.parts.iter().filter_map(|p| elem_bytes(p)).collect();
        let elem = |t: Option<&u64>| t.copied().unwrap_or(2);
        let a_bytes = 64 * k * elem(tys.get(1));
        let b_bytes = n * k * elem(tys.get(2));
        for (idx, bytes) in [(1usize, a_bytes), (2, b_bytes)] {
            let Some(op) = ins.operands.get(idx).cloned() else {
                continue;
            };
            if matches!(op, Operand::Vector(_)) {
                continue; // A from registers.
            }
            match self.get(th, ins, &op, 64) {
                Val::K(desc) => {
                    let addr = (desc & 0x3fff) << 4;
                    if addr < SHARED_START {
                        // A read the protocol would not have: never left out in silence.
                        return Err(self
                            .err(
                                ins,
                                format!(
                                    "the shared-memory descriptor of this wgmma ({desc:#x}) \
                                     points at no shared symbol (address {addr:#x})"
                                ),
                                None,
                            )
                            .into());
                    }
                    self.event(
                        th,
                        Ev::Mma(Range {
                            at: SAddr {
                                rank: None,
                                off: addr,
                            },
                            len: bytes.max(16),
                        }),
                    )?;
                }
                u => {
                    return Err(self
                        .unknown(ins, "the shared-memory descriptor of this wgmma", u)
                        .into());
                }
            }
        }
        Ok(())
    }
}

fn parse_shape(s: &str) -> (u64, u64) {
    // m64n128k16
    let n = s
        .split('n')
        .nth(1)
        .and_then(|r| r.split('k').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or(8);
    let k = s
        .split('k')
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(16);
    (n, k)
}
