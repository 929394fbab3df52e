//! Rendezvous completions: named barriers (`bar_sync`/`bar_arrive`), warp collectives
//! (`syncwarp`, `elect`) and the cluster barrier. They fire once every participant has
//! arrived and release all of them in one step.

use super::*;

impl Exec<'_, '_> {
    pub(super) fn try_named(&mut self, block: u32, id: u8) {
        let slot = block as usize * 16 + id as usize;
        let named = self.state.named[slot];
        let range = self.block_threads(block);
        let waiting: Vec<u32> = range
            .clone()
            .filter(|&t| self.state.threads[t as usize].mode == Mode::Sync(SyncKind::Named { id }))
            .collect();
        let arrived = waiting.len() as u32 + u32::from(named.arrived);
        if arrived == 0 {
            return;
        }
        let needed = if named.count == 0 {
            range
                .clone()
                .filter(|&t| self.state.threads[t as usize].mode.live())
                .count() as u32
        } else {
            u32::from(named.count)
        };
        if arrived < needed {
            return;
        }
        // Divergence: threads blocking in one use at different statements, one of them
        // `.aligned` (`syncthreads`, `bar_sync id[, n]` without `unaligned`: every thread that
        // waits in the use promises to run that one instruction, semantics.md §9.1). With a
        // count too: TIRx's FlashAttention backward reaches `bar.sync 5, 416` from three role
        // branches. Arrivals (`bar_arrive`) may come from any statement, as in PTX's own
        // producer/consumer example.
        if !waiting.is_empty() {
            let pcs: Vec<u32> = waiting
                .iter()
                .map(|&t| self.state.threads[t as usize].pc)
                .collect();
            let aligned = |(&t, &pc): (&u32, &u32)| {
                !matches!(
                    self.m.code_of(t).instrs[pc as usize],
                    crate::model::code::Instr::Op {
                        op: protocols::ir::Op::BarSync {
                            unaligned: true,
                            ..
                        },
                        ..
                    }
                )
            };
            let any_aligned = waiting.iter().zip(&pcs).any(aligned);
            if let Some(j) = pcs
                .iter()
                .position(|&p| p != pcs[0])
                .filter(|_| any_aligned)
            {
                let code = self.m.code_of(waiting[0]);
                let a = code.instrs[pcs[0] as usize].span();
                let b = code.instrs[pcs[j] as usize].span();
                let (first, second) = if a <= b { (a, b) } else { (b, a) };
                self.flag(
                    MFinding::new(
                        &rules::barrier_divergence::RULE,
                        second,
                        if named.count == 0 {
                            format!(
                                "{} and {} reach the block barrier {id} at different statements",
                                self.name(waiting[0]),
                                self.name(waiting[j])
                            )
                        } else {
                            format!(
                                "{} and {} wait in one use of named barrier {id} (count {}) at different `bar_sync` statements; `bar.sync` is `.aligned`: every thread that waits in a use must run the same instruction",
                                self.name(waiting[0]),
                                self.name(waiting[j]),
                                named.count
                            )
                        },
                    )
                    .label(first, "the other threads wait here")
                    .help("let every thread of the use wait at one `bar_sync` statement, or write the barrier without `.aligned` (`bar_sync ID, N unaligned`, PTX `barrier.sync`)"),
                );
            }
        }
        self.state.named[slot] = Named::default();
        self.hand_over_named(slot as u32, &waiting);
        for t in range {
            self.touched
                .mark(&mut self.state.threads, t as usize)
                .named_arrived &= !(1u16 << id);
        }
        for &t in &waiting {
            let th = self.touched.mark(&mut self.state.threads, t as usize);
            th.mode = Mode::Ready;
            th.pc += 1;
            self.waited(t);
            self.work.push(t);
        }
        // A whole-block barrier (`syncthreads`, `bar_sync id` without a count: every live
        // thread of the block takes part) publishes the block's inits to the block (§6.4).
        if named.count == 0 {
            // No other block can address the block's barriers when its cluster is the block.
            let alone = self.m.kernels[self.m.blocks[block as usize].0 as usize].cluster == 1;
            for b in 0..self.state.bars.len() {
                let bar = &mut self.state.bars[b];
                if bar.vis == 1
                    && self.m.bar_block[b] == block
                    && bar.init_by != u32::MAX
                    && self.m.block_of(bar.init_by) == block
                {
                    bar.vis = 2;
                    if alone {
                        forget_initializer(bar);
                    }
                }
            }
        }
    }

    /// The live lanes of `t`'s warp.
    fn warp_lanes(&self, t: u32) -> Vec<u32> {
        let block = self.m.block_of(t);
        let warp = self.m.threads[t as usize].tid / 32;
        // A block's threads are numbered in `tid` order from its first (`PhaseModel::new`), so
        // the warp's lanes are the 32 from its first lane on: a scan of the whole block per
        // `syncwarp` arrival was a tenth of a walk step at 288 threads.
        let all = self.block_threads(block);
        let first = (all.start + 32 * warp).min(all.end);
        (first..(first + 32).min(all.end))
            .filter(|&u| self.m.threads[u as usize].tid / 32 == warp)
            .filter(|&u| self.state.threads[u as usize].mode.live())
            .collect()
    }

    /// A warp rendezvous (`syncwarp`, `elect`) of `t`'s warp, once every live lane has
    /// arrived. An `elect` fires at once when the warp has a leader (a lane that an earlier
    /// `elect` chose, `Thread::leads`): the ISA elects "the same leader thread ... for the same
    /// membermask every time". Without one the lanes at the `elect` become candidates
    /// (`Ready` at the `elect`, enabled): the step of one of them elects it ([`Self::elect`]).
    /// "elect.sync elects one predicated active leader thread from among a set of threads
    /// specified by membermask" ([PTX] `elect.sync`) says nothing of which one, so each lane
    /// may lead (semantics.md §7 W3).
    pub(super) fn try_warp(&mut self, t: u32) {
        let lanes = self.warp_lanes(t);
        let in_sync =
            |m: Mode| matches!(m, Mode::Sync(SyncKind::Warp) | Mode::Sync(SyncKind::Elect));
        if lanes.is_empty()
            || !lanes
                .iter()
                .all(|&u| in_sync(self.state.threads[u as usize].mode))
        {
            return;
        }
        let first = &self.state.threads[lanes[0] as usize];
        if let Some(&other) = lanes.iter().find(|&&u| {
            let th = &self.state.threads[u as usize];
            th.pc != first.pc || th.mode != first.mode
        }) {
            let code = self.m.code_of(lanes[0]);
            let a = code.instrs[first.pc as usize].span();
            let b = code.instrs[self.state.threads[other as usize].pc as usize].span();
            let (x, y) = if a <= b { (a, b) } else { (b, a) };
            self.flag(
                MFinding::new(
                    &rules::barrier_divergence::RULE,
                    y,
                    format!(
                        "lanes {} and {} of one warp meet at different warp barriers",
                        self.name(lanes[0]),
                        self.name(other)
                    ),
                )
                .label(x, "the other lanes are here"),
            );
        }
        let at_elect =
            |s: &State, u: u32| s.threads[u as usize].mode == Mode::Sync(SyncKind::Elect);
        if !lanes.iter().any(|&u| at_elect(&self.state, u)) {
            self.fire_warp(&lanes, None);
            return;
        }
        // The leader leads wherever it stands: at a `syncwarp` met by lanes at an `elect`
        // (`barrier-divergence` above, UB) no lane takes the body, as the footprints assume
        // (footprint.rs, `Elect::Skip`).
        if let Some(&leader) = lanes
            .iter()
            .find(|&&u| self.state.threads[u as usize].leads)
        {
            self.fire_warp(&lanes, Some(leader));
            return;
        }
        for &u in &lanes {
            if at_elect(&self.state, u) {
                self.touched.mark(&mut self.state.threads, u as usize).mode = Mode::Ready;
            }
        }
    }

    /// The step of a candidate lane `t` (`Ready` at an `elect` whose warp has arrived and has
    /// no leader, [`Self::try_warp`]): `t` becomes the warp's leader and the rendezvous fires.
    pub(super) fn elect(&mut self, t: u32) {
        let lanes = self.warp_lanes(t);
        for &u in &lanes {
            if self.state.threads[u as usize].leads {
                self.touched.mark(&mut self.state.threads, u as usize).leads = false;
            }
        }
        self.touched.mark(&mut self.state.threads, t as usize).leads = true;
        self.fire_warp(&lanes, Some(t));
    }

    /// A lane of `t`'s warp exited or finished: the set of lanes an `elect` chooses from
    /// changed, so the warp has no leader any more (the ISA promises the same leader only for
    /// the same threads; the next `elect` chooses again among those left).
    pub(super) fn forget_leader(&mut self, t: u32) {
        let block = self.m.block_of(t);
        let warp = self.m.threads[t as usize].tid / 32;
        for u in self.block_threads(block) {
            if self.m.threads[u as usize].tid / 32 == warp && self.state.threads[u as usize].leads {
                self.touched.mark(&mut self.state.threads, u as usize).leads = false;
            }
        }
    }

    /// Release every lane of a warp rendezvous: `leader` continues into the `elect` body, the
    /// other lanes at an `elect` skip it, lanes at a `syncwarp` move on.
    fn fire_warp(&mut self, lanes: &[u32], leader: Option<u32>) {
        for &u in lanes {
            let th = self.touched.mark(&mut self.state.threads, u as usize);
            let code = self.m.code_of(u);
            th.pc = match code.instrs[th.pc as usize] {
                Instr::Elect { skip, .. } if Some(u) != leader => skip,
                _ => th.pc + 1,
            };
            th.mode = Mode::Ready;
            self.release(u);
            self.waited(u);
            self.work.push(u);
        }
        self.join(lanes);
    }

    pub(super) fn try_cluster(&mut self, kernel: u32) {
        let ki = &self.m.kernels[kernel as usize];
        let range = ki.first_thread..ki.first_thread + ki.block * ki.cluster;
        let phase = self.state.cluster_phase[kernel as usize];
        let mut any = false;
        for t in range.clone() {
            let th = &self.state.threads[t as usize];
            if !th.mode.live() {
                continue;
            }
            if th.cluster_token != Some(phase) {
                return;
            }
            any = true;
        }
        if !any {
            return;
        }
        self.state.cluster_phase[kernel as usize] += 1;
        self.complete_pubs(SyncObj::Cluster(kernel));
        for t in range {
            let th = self.touched.mark(&mut self.state.threads, t as usize);
            if th.mode == Mode::Sync(SyncKind::Cluster) {
                th.mode = Mode::Ready;
                th.cluster_token = None;
                th.pc += 1;
                self.acquire(t, SyncObj::Cluster(kernel), LVL_CLUSTER);
                self.waited(t);
                self.work.push(t);
            }
        }
        for b in 0..self.state.bars.len() {
            let block = self.m.bar_block[b];
            if self.m.blocks[block as usize].0 == kernel && self.state.bars[b].vis >= 1 {
                self.state.bars[b].vis = 3;
                forget_initializer(&mut self.state.bars[b]);
            }
        }
    }

    // ----- operations -----
}

/// Drops which thread initialized `bar` once every use passes `check_vis` whoever makes it:
/// at `vis` 3 (the cluster is ordered after the init), or at `vis` 2 where no other block can
/// address the barrier (the initializer is in the barrier's block, `local_bar`, so its uses
/// are local). `init_by` is then read by nothing (`check_vis` and its message, the `vis` 1 ->
/// 2 step, `por::vis_ok`), and keeping it made states that differ only in which thread of a
/// symmetry class ran the init distinct: past a prologue (`symmetry::Prologue`) the
/// initializer is interchangeable with its peers, and `poll_both_barriers` at 32 compute
/// threads grew from 1.6 M states to past 11.6 M (docs/performance.md, "The initializer is
/// forgotten once the init is visible"). A pre-initialized barrier has no initializer either.
fn forget_initializer(bar: &mut Bar) {
    bar.init_by = u32::MAX;
}
