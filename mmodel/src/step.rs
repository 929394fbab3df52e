//! The semantics of each synchronizing operation: one step of the enumeration, and the
//! *synchronizes* edges it establishes (PTX "Memory synchronization"): named-barrier uses,
//! mbarrier phases and copy landings, the cluster barrier, release/acquire of flags.

use crate::causality::{Closure, Place, morally_strong};
use crate::explore::Explorer;
use crate::fragment::{Ev, Refusal};
use protocols::ir::MemScope;
use std::collections::BTreeSet;

#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Mbar {
    pub(crate) valid: bool,
    pub(crate) phase: u32,
    pub(crate) pending: i64,
    pub(crate) expected: i64,
    pub(crate) tx: i64,
    /// Whether a wait has observed the latest completed phase (phase 0 has no predecessor).
    pub(crate) observed: bool,
    /// Releasing arrivals and copy landings, with the phase they went into.
    pub(crate) arrivals: Vec<(u32, u32)>,
}

#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct Use {
    /// (arrival node, thread)
    pub(crate) arrivals: Vec<(u32, u32)>,
    pub(crate) count: Option<u32>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct State {
    pub(crate) pc: Vec<u32>,
    pub(crate) bars: Vec<Mbar>,
    pub(crate) uses: Vec<Use>,
    /// Per thread at a `BarWait`: the arrivals of the use it arrived in, once it completed.
    pub(crate) released: Vec<Option<Vec<u32>>>,
    pub(crate) cluster_phase: Vec<u32>,
    /// Per kernel: cluster-barrier arrivals with their phase.
    pub(crate) cluster_arrivals: Vec<Vec<(u32, u32)>>,
    /// Per thread: the cluster phase of its latest `cluster_arrive` not yet waited for.
    pub(crate) cluster_token: Vec<Option<u32>>,
    /// Per flag: its releases, in execution order (coherence order among morally strong ones).
    pub(crate) releases: Vec<Vec<u32>>,
    /// Landings of issued copies that have not landed yet.
    pub(crate) in_flight: Vec<u32>,
    pub(crate) edges: BTreeSet<(u32, u32)>,
}

impl Explorer<'_> {
    pub(crate) fn place(&self, t: u32) -> Place {
        let th = &self.p.threads[t as usize];
        Place {
            kernel: th.kernel,
            cta: th.cta,
            domain: th.domain,
        }
    }

    /// The thread and scope of a strong node (an arrive, a wait, a release, an acquire).
    fn strong(&self, node: u32) -> Option<(Place, MemScope)> {
        if node >= self.nodes.first_landing {
            return None;
        }
        let t = self.nodes.base.partition_point(|&b| b <= node) - 1;
        let (e, _) = &self.p.threads[t].events[(node - self.nodes.base[t]) as usize];
        let scope = match e {
            Ev::Arrive { scope, .. }
            | Ev::Wait { scope, .. }
            | Ev::Release { scope, .. }
            | Ev::Acquire { scope, .. } => *scope,
            _ => return None,
        };
        Some((self.place(t as u32), scope))
    }

    pub(crate) fn successors(&self, s: &State) -> Result<Vec<State>, Refusal> {
        let mut out = Vec::new();
        for t in 0..self.p.threads.len() {
            self.step(s, t as u32, &mut out)?;
        }
        for (i, &l) in s.in_flight.iter().enumerate() {
            let mut n = s.clone();
            n.in_flight.remove(i);
            let (t, e) = self.nodes.landing_of[(l - self.nodes.first_landing) as usize];
            let Ev::Tma { bar, bytes, .. } = &self.p.threads[t as usize].events[e as usize].0
            else {
                unreachable!("a landing belongs to a tma")
            };
            let b = &mut n.bars[self.bar_index[bar]];
            if !b.valid {
                return Err(Refusal::outside(
                    "a copy lands on an uninitialised barrier (UB)".into(),
                ));
            }
            b.tx -= i64::from(*bytes);
            b.arrivals.push((l, b.phase));
            complete(b);
            out.push(n);
        }
        Ok(out)
    }

    /// The successors of `s` by a step of thread `t` (none if it is finished or blocked).
    fn step(&self, s: &State, t: u32, out: &mut Vec<State>) -> Result<(), Refusal> {
        let tu = t as usize;
        let th = &self.p.threads[tu];
        let pc = s.pc[tu];
        let Some((e, _)) = th.events.get(pc as usize) else {
            return Ok(());
        };
        let node = self.nodes.base[tu] + pc;
        let mut n = s.clone();
        n.pc[tu] += 1;
        match e {
            Ev::Release { flag, .. } => n.releases[self.flag_index[flag]].push(node),
            Ev::Acquire { flag, .. } => {
                let rels = &s.releases[self.flag_index[flag]];
                if rels.is_empty() {
                    return Ok(());
                }
                for &w in self.readable(s, rels, node) {
                    let mut m = n.clone();
                    if morally_strong(self.strong(w), self.strong(node)) {
                        m.edges.insert((w, node));
                    }
                    out.push(m);
                }
                return Ok(());
            }
            Ev::BarArrive { key, count, waits } => {
                let block = self.p.kernels[th.kernel as usize].0;
                let u = &mut n.uses[self.named_index[key]];
                if u.arrivals.iter().any(|&(_, x)| x == t) {
                    return Err(Refusal::outside(
                        "a thread arrives twice in one use of a named barrier (UB)".into(),
                    ));
                }
                if !u.arrivals.is_empty() && u.count != *count {
                    return Err(Refusal::outside(
                        "the arrivals of one named-barrier use give different counts (UB)".into(),
                    ));
                }
                u.count = *count;
                u.arrivals.push((node, t));
                if u.arrivals.len() as u32 == count.unwrap_or(block) {
                    let done = std::mem::take(u);
                    let nodes: Vec<u32> = done.arrivals.iter().map(|a| a.0).collect();
                    for &(a, x) in &done.arrivals {
                        let xe = &self.p.threads[x as usize].events;
                        let (ev, _) = &xe[(a - self.nodes.base[x as usize]) as usize];
                        if matches!(ev, Ev::BarArrive { waits: true, .. }) {
                            n.released[x as usize] = Some(nodes.clone());
                        }
                    }
                }
                let _ = waits;
            }
            Ev::BarWait => {
                let Some(arrivals) = n.released[tu].take() else {
                    return Ok(());
                };
                // PTX "Memory synchronization": a bar.sync or bar.arrive synchronizes with a
                // bar.sync executed on the same barrier (in one use).
                for a in arrivals {
                    n.edges.insert((a, node));
                }
            }
            Ev::Init { bar, count } => {
                let b = &mut n.bars[self.bar_index[bar]];
                if b.valid {
                    return Err(Refusal::outside(
                        "an mbarrier is initialised twice (UB)".into(),
                    ));
                }
                *b = Mbar {
                    valid: true,
                    phase: 0,
                    pending: i64::from(*count),
                    expected: i64::from(*count),
                    tx: 0,
                    observed: true,
                    arrivals: Vec::new(),
                };
            }
            Ev::Arrive { bar, count, tx, .. } => {
                let b = &mut n.bars[self.bar_index[bar]];
                if !b.valid {
                    return Err(Refusal::outside(
                        "an mbarrier is used before its init in some execution (UB)".into(),
                    ));
                }
                if !b.observed {
                    return Err(Refusal::outside(
                        "an arrive on an mbarrier whose previous phase no wait observed (UB, R-CONSUME)"
                            .into(),
                    ));
                }
                b.tx += i64::from(*tx);
                b.pending -= i64::from(*count);
                if b.pending < 0 {
                    return Err(Refusal::outside(
                        "more arrivals than an mbarrier phase expects (UB)".into(),
                    ));
                }
                b.arrivals.push((node, b.phase));
                complete(b);
            }
            Ev::ExpectTx { bar, bytes } => {
                let b = &mut n.bars[self.bar_index[bar]];
                if !b.valid {
                    return Err(Refusal::outside(
                        "an mbarrier is used before its init in some execution (UB)".into(),
                    ));
                }
                b.tx += i64::from(*bytes);
            }
            Ev::Wait { bar, parity, .. } => {
                let b = &s.bars[self.bar_index[bar]];
                if !b.valid {
                    return Err(Refusal::outside(
                        "an mbarrier is used before its init in some execution (UB)".into(),
                    ));
                }
                if b.phase % 2 == *parity {
                    return Ok(()); // the phase with this parity has not completed yet
                }
                if b.phase > 0 {
                    n.bars[self.bar_index[bar]].observed = true;
                }
                // It observes the latest completed phase, `phase - 1` (none before phase 0),
                // and with it every arrive-on of that and earlier phases (see the crate docs,
                // "mbarriers").
                for &(a, ph) in &b.arrivals {
                    if ph < b.phase
                        && (a >= self.nodes.first_landing
                            || morally_strong(self.strong(a), self.strong(node))
                            || self.same_thread(a, node))
                    {
                        n.edges.insert((a, node));
                    }
                }
            }
            Ev::ClusterArrive => {
                let k = th.kernel as usize;
                let ph = n.cluster_phase[k];
                n.cluster_arrivals[k].push((node, ph));
                n.cluster_token[tu] = Some(ph);
                let members = self
                    .p
                    .threads
                    .iter()
                    .filter(|x| x.kernel == th.kernel)
                    .count();
                let here = n.cluster_arrivals[k].iter().filter(|a| a.1 == ph).count();
                if here == members {
                    n.cluster_phase[k] += 1;
                }
            }
            Ev::ClusterWait => {
                let k = th.kernel as usize;
                let Some(ph) = n.cluster_token[tu] else {
                    return Ok(()); // never passes: a deadlock
                };
                if n.cluster_phase[k] <= ph {
                    return Ok(());
                }
                // "A barrier.cluster.arrive operation synchronizes with a barrier.cluster.wait
                // operation."
                for &(a, aph) in &s.cluster_arrivals[k] {
                    if aph <= ph {
                        n.edges.insert((a, node));
                    }
                }
                n.cluster_token[tu] = None;
            }
            Ev::Access { .. } | Ev::ProxyFence | Ev::Tma { .. } => {
                unreachable!("local events run in settle")
            }
        }
        out.push(n);
        Ok(())
    }

    fn same_thread(&self, a: u32, b: u32) -> bool {
        let t = |x: u32| self.nodes.base.partition_point(|&bs| bs <= x);
        a < self.nodes.first_landing && t(a) == t(b)
    }

    /// The releases of a flag that the acquire `r` may read: every one executed, except one
    /// that precedes in coherence order another release that precedes `r` in causality
    /// order (PTX axiom "Causality": a read does not read a write it sees overwritten).
    /// Morally strong releases are in coherence order as executed; others only when causality
    /// orders them ("Coherence Order").
    fn readable<'r>(&self, s: &State, rels: &'r [u32], r: u32) -> Vec<&'r u32> {
        let succ = self.nodes.successors(self.p, &s.edges);
        let c = Closure::new(&succ);
        let before_r = |w: u32| c.precedes(w, r);
        rels.iter()
            .enumerate()
            .filter(|&(i, &w)| {
                !rels[i + 1..].iter().any(|&w2| {
                    let co = morally_strong(self.strong(w), self.strong(w2))
                        || self.same_thread(w, w2)
                        || c.precedes(w, w2);
                    co && before_r(w2)
                })
            })
            .map(|(_, w)| w)
            .collect()
    }
}

/// PTX "Phase Completion": the phase completes when no arrival is pending and the
/// transaction count is zero.
fn complete(b: &mut Mbar) {
    if b.pending == 0 && b.tx == 0 {
        b.phase += 1;
        b.pending = b.expected;
        b.observed = false;
    }
}
