//! `cuda::pipeline` bookkeeping (semantics.md §4) and the cp.async machinery it shares with
//! the raw `cp_async` statements: per-thread ring state, role and quit checks, async-copy
//! groups and `cp.async.mbarrier.arrive`.

use super::*;

/// A pipeline instance as an operation names it.
pub struct PipeRef {
    pub id: u32,
    /// Block pipeline: first stage barrier and stage count.
    pub block: Option<(u32, u32)>,
    pub unified: bool,
}

/// The pipeline instance `r` names for thread `t` with the given locals, without side effects
/// (the footprint simulation and the reduction); `None` where [`Exec::pipe`] would fail or the
/// reference names a peer block.
pub fn peek_pipe(m: &PhaseModel, t: u32, r: &ObjRef, locals: &[i64]) -> Option<PipeRef> {
    if r.cta.is_some() {
        return None;
    }
    let o = m.program.object(r.object);
    let i = match &r.index {
        None => 0,
        Some(e) => m.eval(e, t, locals).ok()?,
    };
    if i < 0 || i >= i64::from(o.count()) {
        return None;
    }
    let i = i as u32;
    match (m.layouts[r.object.0 as usize], &o.kind) {
        (
            Layout::Pipe { base, bar_base },
            ObjectKind::Pipeline(PipelineKind::Block {
                stages,
                producers,
                consumers,
            }),
        ) => {
            let inst = base + m.block_of(t) * o.count() + i;
            let kernel = &m.kernels[m.threads[t as usize].kernel as usize];
            Some(PipeRef {
                id: inst,
                block: Some((bar_base + (inst - base) * 2 * stages, *stages)),
                unified: producers == consumers && *producers == kernel.block,
            })
        }
        (Layout::ThreadPipe { base }, _) => Some(PipeRef {
            id: u32::MAX / 2 + base + i,
            block: None,
            unified: true,
        }),
        _ => None,
    }
}

/// The stage barriers of a block pipeline on the side or sides of a thread in pipeline state
/// `ps` (a producer's `produced` barriers, a consumer's `consumed` ones, both for a unified
/// pipeline), each with whether the thread owes an arrival to its current phase.
///
/// semantics.md §4.2 P6: `quit` only drops the thread from the shared state's reference count;
/// the stage barriers still count it. The thread's arrivals on stage `s` so far are known modulo
/// 2 from its ring position and lap parity, which is all the comparison with the barrier's phase
/// needs. After a quit the phase can never pass the first one the thread owes (it cannot
/// complete without the thread), and it is that phase or the one before, whichever order the
/// others' arrivals came in: so the answer for a thread that quit does not depend on when it is
/// asked, and the phase it owes is the first one the quit leaves short.
pub fn quit_checks(s: &State, pr: &PipeRef, ps: &PipeThread) -> Vec<(u32, bool)> {
    let Some((bars, stages)) = pr.block else {
        return Vec::new();
    };
    let mut sides = Vec::new();
    if pr.unified || ps.role == 1 {
        // `consumed_parity` starts at 1 and flips at every lap of `head`.
        sides.push((bars + stages, ps.head, ps.consumed_parity ^ 1));
    }
    if pr.unified || ps.role == 2 {
        sides.push((bars, ps.tail, ps.produced_parity));
    }
    let mut checks = Vec::new();
    for (set, pos, laps) in sides {
        for st in 0..stages {
            let b = set + st;
            let arrivals = (u32::from(laps) + u32::from(st < pos)) % 2;
            checks.push((b, arrivals == s.bars[b as usize].phase % 2));
        }
    }
    checks
}

impl Exec<'_, '_> {
    pub(super) fn pipe(&mut self, t: u32, r: &ObjRef) -> Option<PipeRef> {
        let (i, block) = self.index(t, r)?;
        let o = self.m.program.object(r.object);
        match (self.m.layouts[r.object.0 as usize], &o.kind) {
            (
                Layout::Pipe { base, bar_base },
                ObjectKind::Pipeline(PipelineKind::Block {
                    stages,
                    producers,
                    consumers,
                }),
            ) => {
                let inst = base + block * o.count() + i;
                let bars = bar_base + (inst - base) * 2 * stages;
                let unified = producers == consumers
                    && *producers
                        == self.m.kernels[self.m.threads[t as usize].kernel as usize].block;
                Some(PipeRef {
                    id: inst,
                    block: Some((bars, *stages)),
                    unified,
                })
            }
            (Layout::ThreadPipe { base }, _) => Some(PipeRef {
                id: u32::MAX / 2 + base + i,
                block: None,
                unified: true,
            }),
            _ => {
                self.fail(
                    &rules::model_error::RULE,
                    r.span,
                    format!("`{}` is not a pipeline", o.name),
                );
                None
            }
        }
    }

    pub(super) fn pipe_state(&mut self, t: u32, id: u32) -> &mut PipeThread {
        let th = self.touched.mark(&mut self.state.threads, t as usize);
        let pos = match th.pipes.binary_search_by_key(&id, |p| p.0) {
            Ok(p) => p,
            Err(p) => {
                th.pipes.insert(
                    p,
                    (
                        id,
                        PipeThread {
                            consumed_parity: 1,
                            ..PipeThread::default()
                        },
                    ),
                );
                p
            }
        };
        &mut th.pipes[pos].1
    }

    /// Role and quit checks of a pipeline op; `producer` says which side the op belongs to.
    pub(super) fn pipe_check(
        &mut self,
        t: u32,
        p: &PipeRef,
        producer: bool,
        span: Span,
        kw: &str,
    ) -> bool {
        let unified = p.unified;
        let ps = *self.pipe_state(t, p.id);
        if ps.quit {
            self.fail(
                &rules::after_quit::RULE,
                span,
                format!("{} calls `{kw}` after `quit`", self.name(t)),
            );
            return false;
        }
        if p.block.is_none() || unified {
            return true;
        }
        let want = if producer { 1 } else { 2 };
        if ps.role == 0 {
            self.pipe_state(t, p.id).role = want;
        } else if ps.role != want {
            let (was, now) = if producer {
                ("consumer", "producer")
            } else {
                ("producer", "consumer")
            };
            self.fail(
                &rules::pipeline_role::RULE,
                span,
                format!(
                    "{} acted as a {was} of this partitioned pipeline and now calls the {now} operation `{kw}`",
                    self.name(t)
                ),
            );
            return false;
        }
        true
    }

    pub(super) fn cp_async(&mut self, t: u32, buf: u32) {
        let pc = self.state.threads[t as usize].pc;
        let th = self.touched.mark(&mut self.state.threads, t as usize);
        let w = CpWrite {
            buf,
            seq: th.cp_seq,
            group: th.cp_committed,
            pc,
            fence: FENCE_NONE,
        };
        th.cp_seq += 1;
        th.cp.push(w);
    }

    /// `cp.async.wait_group n`: every group but the newest `n` committed ones is complete and
    /// visible to this thread only.
    pub(super) fn wait_group(&mut self, t: u32, n: i64) {
        let th = &self.state.threads[t as usize];
        let committed = i64::from(th.cp_committed);
        let done: Vec<CpWrite> = th
            .cp
            .iter()
            .filter(|c| i64::from(c.group) + n.max(0) < committed)
            .copied()
            .collect();
        self.touched
            .mark(&mut self.state.threads, t as usize)
            .cp
            .retain(|c| i64::from(c.group) + n.max(0) >= committed);
        for c in done {
            let pubs = self.cp_pubs(t, c.seq);
            self.keep_copy(t, &c, pubs);
        }
    }

    /// A completed copy `seq` of `t` is published into the barriers of the arrive-ons of `t`
    /// still in flight that were issued after it: each of them fires once every earlier copy
    /// of the thread completed, so whoever acquires its phase happens after this copy too.
    pub(super) fn cp_pubs(&self, t: u32, seq: u32) -> Vec<Pub> {
        let mut pubs: Vec<Pub> = self
            .state
            .events
            .iter()
            .filter_map(|e| match *e {
                Event::CpArrive {
                    thread, bar, upto, ..
                } if thread == t && seq < upto => Some(self.cp_arrive_pub(t, bar)),
                _ => None,
            })
            .collect();
        pubs.sort();
        pubs.dedup();
        pubs
    }

    /// The publication of a completed copy of `t` into `bar` by a cp.async arrive-on: it
    /// fires in `t`'s block, with no scope of its own (`.cta`), pending until the phase completes.
    pub(super) fn cp_arrive_pub(&self, t: u32, bar: u32) -> Pub {
        Pub {
            obj: SyncObj::Bar(bar),
            from: self.m.block_of(t),
            scope: LVL_CTA,
            done: false,
        }
    }

    pub(super) fn cp_arrive(&mut self, t: u32, bar: u32, noinc: bool, span: Span) -> bool {
        if !noinc {
            let b = &mut self.state.bars[bar as usize];
            if i64::from(b.pending) + 1 > MAX_COUNT {
                self.fail(
                    &rules::count_range::RULE,
                    span,
                    "cp_async_arrive raises the pending count above 2^20-1",
                );
                return false;
            }
            b.pending += 1;
        }
        let th = &self.state.threads[t as usize];
        let ev = Event::CpArrive {
            thread: t,
            bar,
            upto: th.cp_seq,
            pc: th.pc,
        };
        self.push_event(ev);
        true
    }
}
