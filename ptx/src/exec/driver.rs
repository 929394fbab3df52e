//! The driver: the threads of a block run in epochs between block-wide barriers, and a thread's
//! run loop takes one instruction at a time, checking its guard and step budget and marking where
//! a lane ran a `.sync.aligned` instruction with its warp, so that the instruction families
//! (`Exec::step`) only see an instruction that runs.

use super::*;

impl<'a> Exec<'a> {
    /// Run every thread of every block of the cluster. Again when a value read from shared
    /// memory did not hold (`mem.rs`): that load is unknown the next time.
    pub fn run_all(&mut self) -> Result<Vec<Trace>, Error> {
        loop {
            self.whys.clear();
            self.why_at.clear();
            self.param_why_at.clear();
            self.mem.get_mut().reset();
            let out = self.run_blocks()?;
            if !self.mem.get_mut().recheck() {
                return Ok(out);
            }
        }
    }

    /// The threads of a block run in epochs: each runs until it has finished or passed its
    /// next block-wide barrier, and when all have, those that wait there go on.
    fn run_blocks(&mut self) -> Result<Vec<Trace>, Error> {
        let mut out = Vec::new();
        let nwarps = self.nthreads.div_ceil(32);
        for rank in 0..self.cfg.cluster {
            let mut warps: Vec<Vec<Th>> = (0..nwarps)
                .map(|w| {
                    (w * 32..((w + 1) * 32).min(self.nthreads))
                        .map(|tid| Th {
                            rank,
                            tid,
                            regs: vec![Val::K(0); self.f.regs.len()],
                            pc: 0,
                            carry: 0,
                            local: HashMap::new(),
                            events: Vec::new(),
                            st: St::Run,
                            steps: 0,
                            probe: None,
                            epoch: 0,
                        })
                        .collect()
                })
                .collect();
            loop {
                for ths in warps.iter_mut() {
                    loop {
                        for th in ths.iter_mut() {
                            if th.st == St::Run {
                                self.run(th)?;
                            }
                        }
                        if ths.iter().all(|t| matches!(t.st, St::Done | St::Bar)) {
                            break;
                        }
                        self.resolve_collectives(ths)?;
                    }
                }
                let mut waiting = false;
                for th in warps.iter_mut().flatten().filter(|t| t.st == St::Bar) {
                    th.st = St::Run;
                    th.epoch += 1;
                    waiting = true;
                }
                if !waiting {
                    break;
                }
            }
            for th in warps.into_iter().flatten() {
                out.push(Trace {
                    rank: th.rank,
                    tid: th.tid,
                    events: th.events,
                });
            }
        }
        Ok(out)
    }

    fn run(&mut self, th: &mut Th) -> Result<(), Error> {
        loop {
            match self.step_guarded(th) {
                Ok(Flow::Next) => th.pc += 1,
                Ok(Flow::Jump(t)) => th.pc = t,
                Ok(Flow::Exit) => {
                    th.st = St::Done;
                    return Ok(());
                }
                Ok(Flow::Coll) => {
                    th.st = St::Coll;
                    return Ok(());
                }
                Ok(Flow::Block) => {
                    th.pc += 1;
                    th.st = St::Bar;
                    return Ok(());
                }
                Ok(Flow::ProbeHit(_) | Flow::Test { .. }) => unreachable!("not probing"),
                Err(StepErr::Err(e)) => return Err(e),
                Err(StepErr::Probe(_)) => unreachable!("not probing"),
            }
        }
    }

    pub(super) fn step_guarded(&mut self, th: &mut Th) -> R<Flow> {
        let flow = self.step_unconverged(th)?;
        // A `.sync.aligned` instruction that is not a barrier of its own (`bar.sync`,
        // `barrier.cluster.*.aligned`) nor a collective computed with the other lanes
        // (`converged.rs` has the collectives' mark): the lane ran it together with its warp.
        if matches!(flow, Flow::Next) && th.probe.is_none() && th.pc < self.f.instrs.len() {
            let ins = self.instr(th.pc);
            if ins.has("sync")
                && ins.has("aligned")
                && !matches!(ins.base(), "bar" | "barrier")
                && ins
                    .guard
                    .is_none_or(|(p, neg)| th.regs[p as usize] == Val::K((!neg) as u64))
            {
                self.event(th, Ev::Converged)?;
            }
        }
        Ok(flow)
    }

    fn step_unconverged(&mut self, th: &mut Th) -> R<Flow> {
        if th.pc >= self.f.instrs.len() {
            return Ok(Flow::Exit);
        }
        th.steps += 1;
        let ins = self.instr(th.pc);
        if th.steps > self.cfg.max_steps && th.probe.is_none() {
            return Err(self
                .err(
                    ins,
                    format!(
                        "thread {} of block {} ran {} instructions without finishing (an endless \
                         loop?)",
                        th.tid, th.rank, self.cfg.max_steps
                    ),
                    Some("the loop it is in runs on a value the executor knows: check the --arg values".into()),
                )
                .into());
        }
        if let Some((p, neg)) = ins.guard {
            match th.regs[p as usize] {
                Val::K(v) => {
                    if (v != 0) == neg {
                        return Ok(Flow::Next);
                    }
                }
                u => {
                    if th.probe.is_none()
                        && let Some(flow) = self.join_register_only_arm(th, ins)
                    {
                        return Ok(flow);
                    }
                    let what = if ins.base() == "bra" {
                        "this branch"
                    } else {
                        "the guard of this instruction"
                    };
                    return Err(self.unknown(ins, what, u).into());
                }
            }
        }
        self.step(th, ins)
    }
}
