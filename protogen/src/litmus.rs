//! Small memory-model programs for the PTX memory-model oracle (crate `mmodel`): 2 to 4
//! threads in one CTA, in two CTAs of a cluster, or in two or three kernels (one or two memory
//! synchronization domains), doing a few data accesses and linked by release/acquire flags,
//! named barriers, mbarrier phases (also remote arrives), `syncthreads` / `cluster_sync`,
//! fences, and in one CTA proxy fences, `mma` and TMA copies, with random or adequate scopes.
//!
//! Every link goes forward in one global order of the steps (a release before its acquire,
//! an arrive before its wait, a `bar_arrive` before its `bar_sync`); named barrier ids and
//! mbarriers are used once each. So running the steps in that order never blocks, every
//! thread finishes in every execution, and the only question is the race one.

use proptest::prelude::*;
use std::fmt::Write as _;

/// Where the threads run.
#[derive(Clone, Copy, Debug)]
pub enum Topo {
    /// One CTA of `n` threads (2..=4).
    OneCta(u8),
    /// One kernel, a cluster of 2 CTAs of `block` threads (1..=2).
    Cluster(u8),
    /// `n` kernels (2..=3) of one thread each; with `split`, alternate kernels are in the
    /// `remote` memory synchronization domain.
    Kernels(u8, bool),
}

/// How scopes are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scopes {
    /// Any of cta, cluster, gpu, sys on each side.
    Random,
    /// On each side the narrowest scope that includes the other thread, or the next wider
    /// one, and a flag of its own for each link: every release/acquire pair and every
    /// mbarrier arrive/wait pair is morally strong.
    Adequate,
}

/// One generated step; thread numbers and the like are taken modulo what the topology has.
#[derive(Clone, Debug)]
pub enum Action {
    Data {
        thread: u8,
        loc: u8,
        write: bool,
    },
    /// A link carries a payload when `data` is 1 or 2: the source writes location `data`
    /// before its release, the sink reads it after its acquire (a message-passing hand-off).
    Flag {
        from: u8,
        to: u8,
        flag: u8,
        rel: u8,
        acq: u8,
        delay: u8,
        data: u8,
    },
    Named {
        from: u8,
        to: u8,
        delay: u8,
        data: u8,
    },
    Mbar {
        from: u8,
        to: u8,
        rel: u8,
        acq: u8,
        delay: u8,
        data: u8,
    },
    /// `syncthreads` (one CTA) or `cluster_sync` (cluster): every thread.
    Barrier,
    /// `fence scope S`.
    Fence {
        thread: u8,
        scope: u8,
    },
    /// One CTA only: 0 `fence_proxy_async`, 1 `mma tile`, 2 `write tile`, 3 `read tile`.
    Proxy {
        thread: u8,
        kind: u8,
    },
    /// One CTA only: `arrive_expect_tx` + `tma tile` by `from`, the wait by `to`.
    Tma {
        from: u8,
        to: u8,
        delay: u8,
    },
}

/// A generated program.
#[derive(Clone, Debug)]
pub struct Litmus {
    pub topo: Topo,
    pub scopes: Scopes,
    /// Forbid a relay: a thread that something was handed to (a link's sink, or anyone after
    /// a whole-block or cluster barrier) never starts a link into another CTA afterwards.
    pub no_relay: bool,
    pub actions: Vec<Action>,
}

const SCOPES: [&str; 4] = ["cta", "cluster", "gpu", "sys"];

fn topo() -> impl Strategy<Value = Topo> {
    prop_oneof![
        2 => (2u8..=4).prop_map(Topo::OneCta),
        2 => (1u8..=2).prop_map(Topo::Cluster),
        2 => (2u8..=3, any::<bool>()).prop_map(|(n, s)| Topo::Kernels(n, s)),
    ]
}

fn action() -> impl Strategy<Value = Action> {
    let t = || 0u8..4;
    let d = || 0u8..3;
    prop_oneof![
        4 => (t(), 0u8..3, any::<bool>()).prop_map(|(thread, loc, write)| Action::Data { thread, loc, write }),
        4 => (t(), t(), 0u8..2, 0u8..4, 0u8..4, d(), d()).prop_map(|(from, to, flag, rel, acq, delay, data)| Action::Flag { from, to, flag, rel, acq, delay, data }),
        1 => (t(), t(), d(), d()).prop_map(|(from, to, delay, data)| Action::Named { from, to, delay, data }),
        2 => (t(), t(), 0u8..4, 0u8..4, d(), d()).prop_map(|(from, to, rel, acq, delay, data)| Action::Mbar { from, to, rel, acq, delay, data }),
        1 => Just(Action::Barrier),
        1 => (t(), 0u8..4).prop_map(|(thread, scope)| Action::Fence { thread, scope }),
        2 => (t(), 0u8..4).prop_map(|(thread, kind)| Action::Proxy { thread, kind }),
        1 => (t(), t(), d()).prop_map(|(from, to, delay)| Action::Tma { from, to, delay }),
    ]
}

/// The parameters of [`litmus`].
pub fn litmus_params(scopes: Scopes, no_relay: bool) -> impl Strategy<Value = Litmus> {
    (topo(), prop::collection::vec(action(), 2..8)).prop_map(move |(topo, actions)| Litmus {
        topo,
        scopes,
        no_relay,
        actions,
    })
}

/// Source text of a generated memory-model program.
pub fn litmus(scopes: Scopes, no_relay: bool) -> impl Strategy<Value = String> {
    litmus_params(scopes, no_relay).prop_map(|l| l.source())
}

/// A payload as the text before a release and after an acquire.
fn split(p: Option<(String, String)>) -> (String, String) {
    match p {
        Some((w, r)) => (format!("{w}; "), format!("; {r}")),
        None => (String::new(), String::new()),
    }
}

/// A thread: kernel, CTA, tid.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Place {
    kernel: usize,
    cta: u32,
    tid: u32,
}

enum Item {
    Op(usize, String),
    All(&'static str),
}

impl Litmus {
    fn places(&self) -> Vec<Place> {
        match self.topo {
            Topo::OneCta(n) => (0..u32::from(n))
                .map(|tid| Place {
                    kernel: 0,
                    cta: 0,
                    tid,
                })
                .collect(),
            Topo::Cluster(block) => (0..2)
                .flat_map(|cta| {
                    (0..u32::from(block)).map(move |tid| Place {
                        kernel: 0,
                        cta,
                        tid,
                    })
                })
                .collect(),
            Topo::Kernels(n, _) => (0..n as usize)
                .map(|kernel| Place {
                    kernel,
                    cta: 0,
                    tid: 0,
                })
                .collect(),
        }
    }

    fn domain(&self, kernel: usize) -> &'static str {
        match self.topo {
            Topo::Kernels(_, true) if kernel % 2 == 1 => "remote",
            _ => "default",
        }
    }

    /// The narrowest scope that includes `b` from `a` (index into [`SCOPES`]).
    fn distance(&self, a: Place, b: Place) -> usize {
        if a.kernel == b.kernel && a.cta == b.cta {
            0
        } else if a.kernel == b.kernel {
            1
        } else if self.domain(a.kernel) == self.domain(b.kernel) {
            2
        } else {
            3
        }
    }

    fn scope(&self, pick: u8, a: Place, b: Place) -> &'static str {
        match self.scopes {
            Scopes::Random => SCOPES[pick as usize % 4],
            Scopes::Adequate => SCOPES[(self.distance(a, b) + (pick as usize % 2)).min(3)],
        }
    }

    pub fn source(&self) -> String {
        let places = self.places();
        let n = places.len();
        let one_cta = matches!(self.topo, Topo::OneCta(_));
        let one_kernel = !matches!(self.topo, Topo::Kernels(..));
        let all = if one_cta {
            "syncthreads"
        } else {
            "cluster_sync"
        };
        let pair = |from: u8, to: u8| {
            let f = from as usize % n;
            (f, (f + 1 + to as usize % (n - 1)) % n)
        };
        let mut seq: Vec<Item> = Vec::new();
        let mut pending: Vec<(usize, usize, String)> = Vec::new();
        let mut mbars: Vec<Place> = Vec::new(); // the CTA each mbarrier lives in
        let mut next_id = 1u32;
        // With adequate scopes every link has a flag of its own: two links sharing a flag
        // would let an acquire read the other link's release, which need not be morally
        // strong with it (a race on the flag).
        let mut flags = 2usize;
        let mut sinks = vec![false; n];
        let mut uses_tile = false;
        // The payload of a link: (write before the release, read after the acquire).
        let payload = |data: u8| -> Option<(String, String)> {
            match (data, one_cta) {
                (0, _) => None,
                (2, true) => Some(("write buf".into(), "read buf".into())),
                (d, _) => Some((format!("store d{}", d - 1), format!("load d{}", d - 1))),
            }
        };
        for (step, a) in self.actions.iter().enumerate() {
            match *a {
                Action::Data { thread, loc, write } => {
                    let t = thread as usize % n;
                    let op = match (loc, one_cta, write) {
                        (2, true, true) => "write buf".to_string(),
                        (2, true, false) => "read buf".to_string(),
                        (l, _, true) => format!("store d{}", l % 2),
                        (l, _, false) => format!("load d{}", l % 2),
                    };
                    seq.push(Item::Op(t, op));
                }
                Action::Flag {
                    from,
                    to,
                    flag,
                    rel,
                    acq,
                    delay,
                    data,
                } => {
                    let (f, t) = pair(from, to);
                    let (pf, pt) = (places[f], places[t]);
                    if self.relay_blocked(&sinks, pf, pt, f) {
                        continue;
                    }
                    let rs = self.scope(rel, pf, pt);
                    let as_ = self.scope(acq, pt, pf);
                    let (w, r) = split(payload(data));
                    let flag = match self.scopes {
                        Scopes::Random => usize::from(flag),
                        Scopes::Adequate => {
                            flags += 1;
                            flags - 1
                        }
                    };
                    seq.push(Item::Op(f, format!("{w}store_release f{flag} scope {rs}")));
                    pending.push((
                        step + delay as usize,
                        t,
                        format!("load_acquire f{flag} scope {as_}{r}"),
                    ));
                    sinks[t] = true;
                }
                Action::Named {
                    from,
                    to,
                    delay,
                    data,
                } => {
                    let (f, t) = pair(from, to);
                    let (pf, pt) = (places[f], places[t]);
                    if pf.kernel != pt.kernel || pf.cta != pt.cta || next_id > 15 {
                        continue;
                    }
                    let (w, r) = split(payload(data));
                    seq.push(Item::Op(f, format!("{w}bar_arrive {next_id}, 2")));
                    pending.push((
                        step + delay as usize,
                        t,
                        format!("bar_sync {next_id}, 2{r}"),
                    ));
                    next_id += 1;
                    sinks[t] = true;
                }
                Action::Mbar {
                    from,
                    to,
                    rel,
                    acq,
                    delay,
                    data,
                } => {
                    let (f, t) = pair(from, to);
                    let (pf, pt) = (places[f], places[t]);
                    if pf.kernel != pt.kernel
                        || !one_kernel
                        || self.relay_blocked(&sinks, pf, pt, f)
                    {
                        continue;
                    }
                    let k = mbars.len();
                    mbars.push(pt);
                    let at = if pf.cta != pt.cta {
                        format!(" @ {}", pt.cta)
                    } else {
                        String::new()
                    };
                    let rs = self.scope(rel, pf, pt);
                    let ws = self.scope(acq, pt, pf);
                    let (w, r) = split(payload(data));
                    seq.push(Item::Op(f, format!("{w}arrive m{k}{at} scope {rs}")));
                    pending.push((
                        step + delay as usize,
                        t,
                        format!("wait m{k} parity 0 scope {ws}{r}"),
                    ));
                    sinks[t] = true;
                }
                Action::Barrier => {
                    if one_kernel {
                        seq.push(Item::All(all));
                        sinks.iter_mut().for_each(|s| *s = true);
                    }
                }
                Action::Fence { thread, scope } => {
                    let t = thread as usize % n;
                    seq.push(Item::Op(
                        t,
                        format!("fence scope {}", SCOPES[scope as usize % 4]),
                    ));
                }
                Action::Proxy { thread, kind } => {
                    if !one_cta {
                        continue;
                    }
                    let t = thread as usize % n;
                    let op = ["fence_proxy_async", "mma tile", "write tile", "read tile"]
                        [kind as usize % 4];
                    uses_tile |= kind != 0;
                    seq.push(Item::Op(t, op.to_string()));
                }
                Action::Tma { from, to, delay } => {
                    if !one_cta {
                        continue;
                    }
                    let (f, t) = pair(from, to);
                    let k = mbars.len();
                    mbars.push(places[f]);
                    uses_tile = true;
                    seq.push(Item::Op(
                        f,
                        format!("arrive_expect_tx m{k}, 64; tma tile -> m{k}, 64"),
                    ));
                    pending.push((step + delay as usize, t, format!("wait m{k} parity 0")));
                }
            }
            pending.sort_by_key(|p| p.0);
            while pending.first().is_some_and(|p| p.0 <= step) {
                let (_, t, op) = pending.remove(0);
                seq.push(Item::Op(t, op));
            }
        }
        for (_, t, op) in pending {
            seq.push(Item::Op(t, op));
        }
        self.render(&places, &seq, &mbars, flags, uses_tile, all)
    }

    fn relay_blocked(&self, sinks: &[bool], from: Place, to: Place, f: usize) -> bool {
        self.no_relay && sinks[f] && (from.kernel != to.kernel || from.cta != to.cta)
    }

    fn render(
        &self,
        places: &[Place],
        seq: &[Item],
        mbars: &[Place],
        flags: usize,
        uses_tile: bool,
        all: &str,
    ) -> String {
        let mut s = String::from("protocol gen_litmus\n");
        let (block, cluster) = match self.topo {
            Topo::OneCta(n) => (n, 1),
            Topo::Cluster(b) => (b, 2),
            Topo::Kernels(..) => (1, 1),
        };
        let _ = writeln!(s, "block {block}");
        if cluster > 1 {
            let _ = writeln!(s, "cluster {cluster}");
        }
        s.push_str("global d0\nglobal d1\n");
        for k in 0..flags {
            let _ = writeln!(s, "global f{k}");
        }
        if matches!(self.topo, Topo::OneCta(_)) {
            s.push_str("buffer buf\n");
            if uses_tile {
                s.push_str("buffer tile\n");
            }
        }
        for k in 0..mbars.len() {
            let _ = writeln!(s, "mbarrier m{k}");
        }
        let cond = |p: Place| match self.topo {
            Topo::OneCta(_) => format!("tid == {}", p.tid),
            Topo::Cluster(_) => format!("cta == {} && tid == {}", p.cta, p.tid),
            Topo::Kernels(..) => String::new(),
        };
        match self.topo {
            Topo::Kernels(n, _) => {
                for k in 0..n as usize {
                    let _ = writeln!(s, "kernel k{k} domain {} {{", self.domain(k));
                    for item in seq {
                        if let Item::Op(t, op) = item
                            && places[*t].kernel == k
                        {
                            let _ = writeln!(s, "  {op}");
                        }
                    }
                    s.push_str("}\n");
                }
            }
            _ => {
                if !mbars.is_empty() {
                    for (k, p) in mbars.iter().enumerate() {
                        let host = Place { tid: 0, ..*p };
                        let _ = writeln!(s, "if {} {{ init m{k}, 1 }}", cond(host));
                    }
                    let _ = writeln!(s, "{all}");
                }
                for item in seq {
                    match item {
                        Item::Op(t, op) => {
                            let _ = writeln!(s, "if {} {{ {op} }}", cond(places[*t]));
                        }
                        Item::All(a) => {
                            let _ = writeln!(s, "{a}");
                        }
                    }
                }
            }
        }
        s.push_str("\nexpect ok\n");
        s
    }
}
