//! The candidate executions: every order of the synchronizing operations that the barriers'
//! and flags' semantics allow, with the *synchronizes* edges each one establishes.
//!
//! Data accesses and proxy fences take effect in program order and never block, so they are
//! not interleaved (they only become nodes); what differs between executions is the order of
//! the synchronizing operations (which arrivals make up which barrier use or phase, which
//! release an acquire reads) and so which *synchronizes* edges exist. The search is a depth
//! first enumeration of those orders, merging states that are equal together with the edges
//! collected so far (equal futures, equal final edge sets). It stops with a refusal past
//! [`MAX_STATES`].

use crate::causality::{Closure, Place, morally_strong};
use crate::fragment::{BarKey, Ev, Lowered, NamedKey, Refusal};
use protocols::ir::MemScope;
use std::collections::{BTreeSet, HashMap, HashSet};

/// At most this many distinct states per program.
pub const MAX_STATES: usize = 1_000_000;

/// Node numbering: thread `t`'s event `i` is `base[t] + i`; the landing of the copy issued
/// by event `(t, i)` is `landing[&(t, i)]`, numbered after every thread event.
pub struct Nodes {
    pub base: Vec<u32>,
    pub landing: HashMap<(u32, u32), u32>,
    /// Per landing (node - first landing): the issuing thread and event.
    pub landing_of: Vec<(u32, u32)>,
    pub first_landing: u32,
    pub count: u32,
}

impl Nodes {
    pub fn new(p: &Lowered) -> Nodes {
        let mut base = Vec::new();
        let mut n = 0u32;
        for t in &p.threads {
            base.push(n);
            n += t.events.len() as u32;
        }
        let first_landing = n;
        let mut landing = HashMap::new();
        let mut landing_of = Vec::new();
        for (ti, t) in p.threads.iter().enumerate() {
            for (i, (e, _)) in t.events.iter().enumerate() {
                if matches!(e, Ev::Tma { .. }) {
                    landing.insert((ti as u32, i as u32), n);
                    landing_of.push((ti as u32, i as u32));
                    n += 1;
                }
            }
        }
        Nodes {
            base,
            landing,
            landing_of,
            first_landing,
            count: n,
        }
    }

    /// Direct successors: program order plus `edges`.
    pub fn successors(&self, p: &Lowered, edges: &BTreeSet<(u32, u32)>) -> Vec<Vec<u32>> {
        let mut succ = vec![Vec::new(); self.count as usize];
        for (t, th) in p.threads.iter().enumerate() {
            for i in 1..th.events.len() as u32 {
                let x = self.base[t] + i;
                succ[(x - 1) as usize].push(x);
            }
        }
        for &(a, b) in edges {
            succ[a as usize].push(b);
        }
        succ
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct Mbar {
    valid: bool,
    phase: u32,
    pending: i64,
    expected: i64,
    tx: i64,
    /// Whether a wait has observed the latest completed phase (phase 0 has no predecessor).
    observed: bool,
    /// Releasing arrivals and copy landings, with the phase they went into.
    arrivals: Vec<(u32, u32)>,
}

#[derive(Clone, Default, PartialEq, Eq, Hash)]
struct Use {
    /// (arrival node, thread)
    arrivals: Vec<(u32, u32)>,
    count: Option<u32>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct State {
    pc: Vec<u32>,
    bars: Vec<Mbar>,
    uses: Vec<Use>,
    /// Per thread at a `BarWait`: the arrivals of the use it arrived in, once it completed.
    released: Vec<Option<Vec<u32>>>,
    cluster_phase: Vec<u32>,
    /// Per kernel: cluster-barrier arrivals with their phase.
    cluster_arrivals: Vec<Vec<(u32, u32)>>,
    /// Per thread: the cluster phase of its latest `cluster_arrive` not yet waited for.
    cluster_token: Vec<Option<u32>>,
    /// Per flag: its releases, in execution order (coherence order among morally strong ones).
    releases: Vec<Vec<u32>>,
    /// Landings of issued copies that have not landed yet.
    in_flight: Vec<u32>,
    edges: BTreeSet<(u32, u32)>,
}

/// One explored maximal execution: its synchronizes edges, which nodes ran, whether some
/// thread was left blocked.
pub struct Execution {
    pub edges: BTreeSet<(u32, u32)>,
    pub ran: Vec<bool>,
    pub deadlock: bool,
}

/// What identifies a maximal execution for the race check: edges, nodes that ran, deadlock.
type ExecutionKey = (BTreeSet<(u32, u32)>, Vec<bool>, bool);

pub struct Explorer<'a> {
    p: &'a Lowered,
    pub nodes: Nodes,
    bar_index: HashMap<BarKey, usize>,
    named_index: HashMap<NamedKey, usize>,
    flag_index: HashMap<u32, usize>,
    pub states: usize,
}

impl<'a> Explorer<'a> {
    pub fn new(p: &'a Lowered) -> Explorer<'a> {
        let mut bar_index = HashMap::new();
        let mut named_index = HashMap::new();
        let mut flag_index = HashMap::new();
        for t in &p.threads {
            for (e, _) in &t.events {
                match e {
                    Ev::Init { bar, .. }
                    | Ev::Arrive { bar, .. }
                    | Ev::ExpectTx { bar, .. }
                    | Ev::Wait { bar, .. }
                    | Ev::Tma { bar, .. } => {
                        let n = bar_index.len();
                        bar_index.entry(*bar).or_insert(n);
                    }
                    Ev::BarArrive { key, .. } => {
                        let n = named_index.len();
                        named_index.entry(*key).or_insert(n);
                    }
                    Ev::Release { flag, .. } | Ev::Acquire { flag, .. } => {
                        let n = flag_index.len();
                        flag_index.entry(*flag).or_insert(n);
                    }
                    _ => {}
                }
            }
        }
        Explorer {
            p,
            nodes: Nodes::new(p),
            bar_index,
            named_index,
            flag_index,
            states: 0,
        }
    }

    fn place(&self, t: u32) -> Place {
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

    /// Every maximal execution (deduplicated by edges, ran set and deadlock).
    pub fn run(&mut self) -> Result<Vec<Execution>, Refusal> {
        let p = self.p;
        let kernels = p.kernels.len();
        let init = State {
            pc: vec![0; p.threads.len()],
            bars: vec![
                Mbar {
                    valid: false,
                    phase: 0,
                    pending: 0,
                    expected: 0,
                    tx: 0,
                    observed: true,
                    arrivals: Vec::new(),
                };
                self.bar_index.len()
            ],
            uses: vec![Use::default(); self.named_index.len()],
            released: vec![None; p.threads.len()],
            cluster_phase: vec![0; kernels],
            cluster_arrivals: vec![Vec::new(); kernels],
            cluster_token: vec![None; p.threads.len()],
            releases: vec![Vec::new(); self.flag_index.len()],
            in_flight: Vec::new(),
            edges: BTreeSet::new(),
        };
        let mut seen: HashSet<State> = HashSet::new();
        let mut finals: HashSet<ExecutionKey> = HashSet::new();
        let mut out = Vec::new();
        let mut stack = vec![self.settle(init)?];
        while let Some(s) = stack.pop() {
            if !seen.insert(s.clone()) {
                continue;
            }
            self.states += 1;
            if self.states > MAX_STATES {
                return Err(Refusal(format!(
                    "more than {MAX_STATES} states: too large for the oracle"
                )));
            }
            let next = self.successors(&s)?;
            if next.is_empty() {
                let ran = self.ran(&s);
                let deadlock =
                    s.pc.iter()
                        .zip(&p.threads)
                        .any(|(&pc, t)| (pc as usize) < t.events.len());
                let key = (s.edges.clone(), ran.clone(), deadlock);
                if finals.insert(key) {
                    out.push(Execution {
                        edges: s.edges,
                        ran,
                        deadlock,
                    });
                }
                continue;
            }
            for n in next.into_iter().rev() {
                stack.push(self.settle(n)?);
            }
        }
        Ok(out)
    }

    fn ran(&self, s: &State) -> Vec<bool> {
        let mut ran = vec![false; self.nodes.count as usize];
        for (t, &pc) in s.pc.iter().enumerate() {
            for i in 0..pc {
                ran[(self.nodes.base[t] + i) as usize] = true;
                if let Some(&l) = self.nodes.landing.get(&(t as u32, i)) {
                    ran[l as usize] = !s.in_flight.contains(&l);
                }
            }
        }
        ran
    }

    /// Run every thread's non-blocking local events (accesses, proxy fences, copy issues).
    fn settle(&self, mut s: State) -> Result<State, Refusal> {
        for (t, th) in self.p.threads.iter().enumerate() {
            while let Some((e, _)) = th.events.get(s.pc[t] as usize) {
                match e {
                    Ev::Access { .. } | Ev::ProxyFence => {}
                    Ev::Tma { .. } => {
                        let l = self.nodes.landing[&(t as u32, s.pc[t])];
                        s.in_flight.push(l);
                    }
                    _ => break,
                }
                s.pc[t] += 1;
            }
        }
        Ok(s)
    }

    fn successors(&self, s: &State) -> Result<Vec<State>, Refusal> {
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
                return Err(Refusal(
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
                    return Err(Refusal(
                        "a thread arrives twice in one use of a named barrier (UB)".into(),
                    ));
                }
                if !u.arrivals.is_empty() && u.count != *count {
                    return Err(Refusal(
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
                    return Err(Refusal("an mbarrier is initialised twice (UB)".into()));
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
                    return Err(Refusal(
                        "an mbarrier is used before its init in some execution (UB)".into(),
                    ));
                }
                if !b.observed {
                    return Err(Refusal(
                        "an arrive on an mbarrier whose previous phase no wait observed (UB, R-CONSUME)"
                            .into(),
                    ));
                }
                b.tx += i64::from(*tx);
                b.pending -= i64::from(*count);
                if b.pending < 0 {
                    return Err(Refusal(
                        "more arrivals than an mbarrier phase expects (UB)".into(),
                    ));
                }
                b.arrivals.push((node, b.phase));
                complete(b);
            }
            Ev::ExpectTx { bar, bytes } => {
                let b = &mut n.bars[self.bar_index[bar]];
                if !b.valid {
                    return Err(Refusal(
                        "an mbarrier is used before its init in some execution (UB)".into(),
                    ));
                }
                b.tx += i64::from(*bytes);
            }
            Ev::Wait { bar, parity, .. } => {
                let b = &s.bars[self.bar_index[bar]];
                if !b.valid {
                    return Err(Refusal(
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
