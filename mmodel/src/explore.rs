//! The candidate executions: every order of the synchronizing operations that the barriers'
//! and flags' semantics allow, with the *synchronizes* edges each one establishes.
//!
//! Data accesses and proxy fences take effect in program order and never block, so they are
//! not interleaved (they only become nodes); what differs between executions is the order of
//! the synchronizing operations (which arrivals make up which barrier use or phase, which
//! release an acquire reads) and so which *synchronizes* edges exist. The search is a depth
//! first enumeration of those orders, merging states that are equal together with the edges
//! collected so far (equal futures, equal final edge sets). It stops with a refusal past
//! [`MAX_STATES`]. What each synchronizing operation does is in `step.rs`.

use crate::fragment::{BarKey, Ev, Lowered, NamedKey, Refusal, too_large};
use crate::step::{Mbar, State, Use};
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
    pub(crate) p: &'a Lowered,
    pub nodes: Nodes,
    pub(crate) bar_index: HashMap<BarKey, usize>,
    pub(crate) named_index: HashMap<NamedKey, usize>,
    pub(crate) flag_index: HashMap<u32, usize>,
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
                return too_large(format!(
                    "more than {MAX_STATES} states: too large for the oracle"
                ));
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
}
