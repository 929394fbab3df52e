//! An axiomatic oracle of the PTX memory consistency model for small `.phase` programs.
//!
//! The checker (crate `checker`) decides races operationally, with cheap characterizations of
//! happens-before inside its state search; the loom oracle (crate `oracle`) checks C11-style
//! atomics, which have no scopes, no cumulativity across scopes and no proxies. This crate
//! answers the race question from the definitions of the PTX ISA chapter "Memory Consistency
//! Model" (and D. Lustig, S. Sahasrabuddhe, O. Giroux, *A Formal Analysis of the NVIDIA PTX
//! Memory Consistency Model*, ASPLOS 2019), for a fragment of the language small enough to
//! enumerate. It shares no code with the checker; only its tests use the checker, to compare.
//!
//! # Method
//!
//! 1. [`fragment`]: the program is lowered to one straight-line list of events per thread
//!    (conditions evaluated, `for` loops unrolled; the walk itself is in `walk.rs`) or
//!    refused.
//! 2. [`explore`] (the search) and `step.rs` (what each synchronizing operation does): every
//!    order of the synchronizing operations that the barriers' and flags'
//!    semantics allow is enumerated (which arrivals make up which barrier use or mbarrier
//!    phase, which release each acquire reads); each maximal execution yields its
//!    *synchronizes* edges, derived only between morally strong operations.
//! 3. [`causality`]: base causality order is program order plus those edges, closed
//!    transitively; a race is two conflicting accesses that are neither morally strong nor
//!    ordered by (proxy-preserved) causality order in some execution.
//!
//! # The ISA sentences it rests on (PTX ISA 8.x/9.x, "Memory Consistency Model")
//!
//! - *Data race*: "Two overlapping memory operations are said to conflict when at least one
//!   of them is a write. Two conflicting memory operations are said to be in a data-race if
//!   they are not related in causality order and they are not morally strong."
//! - *Morally strong*: "The operations are related in program order (i.e, they are both
//!   executed by the same thread), or each operation is strong and specifies a scope that
//!   includes the thread executing the other operation. Both operations are performed via the
//!   same proxy. If both are memory operations, then they overlap completely." Plain
//!   `read`/`write`/`store`/`load` are weak, so two of them in different threads are never
//!   morally strong.
//! - *Scope*: `.cta` "the set of all threads executing in the same CTA", `.cluster` "in the
//!   same cluster", `.gpu` "on the same compute device ... This also includes other kernel
//!   grids", `.sys` everything. Kernels in different memory synchronization domains are
//!   "system-scope distanced" (CUDA Programming Guide, *Memory Synchronization Domains*;
//!   docs/semantics.md §6.5), so `.gpu` here is the kernel's domain.
//! - *Synchronizes*: "A `bar{.cta}.sync` or `bar{.cta}.red` or `bar{.cta}.arrive` operation
//!   synchronizes with a `bar{.cta}.sync` or `bar{.cta}.red` operation executed on the same
//!   barrier." "A `barrier.cluster.arrive` operation synchronizes with a
//!   `barrier.cluster.wait` operation." "A release pattern X synchronizes with an acquire
//!   pattern Y, if a write operation in X precedes a read operation in Y in observation
//!   order, and the first operation in X and the last operation in Y are morally strong."
//!   Observation order: "R and W are morally strong and R reads the value written by W".
//! - *Cumulativity*: base causality order is program order and *synchronizes*, closed under
//!   composition, "which is a transitive order"; "The transitivity of base causality order
//!   accounts for the 'cumulativity' of synchronizing operations." A write published to thread
//!   0 by `syncthreads` and then released by thread 0 at `.gpu` scope is ordered before the
//!   acquirer in another kernel, whatever the scope of the first link.
//! - *Proxies*: "A memory operation X precedes a memory operation Y in proxy-preserved base
//!   causality order if X precedes Y in base causality order, and: X and Y are performed to
//!   the same address, using the generic proxy, or X and Y are performed to the same address,
//!   using the same proxy, and by the same thread block, or X and Y are aliases and there is
//!   an alias proxy fence along the base causality path from X to Y." The ISA has no sentence
//!   for `fence.proxy.async` in that list; the oracle reads it as the third case ("A proxy
//!   fence is required to synchronize memory operations across different proxies", section
//!   *Proxies*): a generic access before an async one needs a `fence_proxy_async` on the
//!   path. "The completion of a cp{.reduce}.async.bulk operation is followed by an implicit
//!   generic-async proxy fence" (and the same for wgmma), so a path that starts at an async
//!   access has its fence.
//! - *Asynchronous operations*: a bulk copy is "ordered after prior instructions in the same
//!   thread", but its complete-tx "does not transitively establish ordering with respect to
//!   prior instructions from the issuing thread": the landing has no incoming edge; what
//!   precedes the `tma` precedes the copy's write, and the landing precedes a wait that
//!   observes the phase it completed.
//!
//! # Readings the ISA leaves open (the oracle's choices)
//!
//! - **mbarriers.** An `arrive` is a release operation on the barrier, a successful `wait` an
//!   acquire pattern that observes the latest completed phase. The arrive-on operations of
//!   one mbarrier are one chain of atomic read-modify-writes on the object, so a wait
//!   observes every arrival of the phase it sees and of earlier phases; it synchronizes with
//!   those that are morally strong with it (the arrive's `.release` scope includes the waiter
//!   and the wait's `.acquire` scope includes the arriver: a remote arrive at `.cluster` needs
//!   a `.cluster` wait). The moral strength of the intermediate links of that chain is not
//!   required (the hardware performs them atomically on the object).
//! - **Fences.** `fence scope S` is `fence.acq_rel.S`. It synchronizes only as the head of a
//!   release pattern (`fence; st.relaxed [M]`) or the tail of an acquire pattern
//!   (`ld.relaxed [M]; fence`), and observation order needs the pattern's write and read to
//!   be morally strong anyway; the language has no relaxed strong accesses, and a
//!   `store_release` is itself a release pattern. So in this fragment a fence adds no
//!   synchronization, and the oracle drops it.
//! - **Flags.** `load_acquire` spins until it reads a `store_release` of the flag; it may
//!   read any executed release that it does not see overwritten (coherence). Flags are
//!   accessed only by those two (a global used both ways is refused). Flag accesses take part
//!   in the race check like any access: a release and an acquire that are not morally strong
//!   and not ordered are a data race on the flag.
//!
//! # The fragment
//!
//! Kernels (`kernel ... domain D block N cluster C`, at most [`fragment::MAX_THREADS`]
//! threads in all), `let`/assignments/`if`/`role`/`for`; `read`/`write` of the thread's own
//! CTA's buffers, `store`/`load`/`store_release`/`load_acquire` of globals, `fence`;
//! `syncthreads`, `bar_sync`/`bar_arrive` with and without counts; mbarrier `init`, `arrive`
//! (also `@ r`, with a scope), `arrive_expect_tx`, `expect_tx`, `wait ... parity` (with a
//! scope); `cluster_sync`/`cluster_arrive`/`cluster_wait`; `fence_proxy_async`, `mma`, `tma`
//! (no multicast) into the own CTA; `compute`. Everything else (`while`, `elect`, `exit`,
//! tokens, pipelines, `cp_async`, TMA stores, peer buffers, `write part`, byte ranges
//! (`bytes OFF .. +LEN`), `write X value N`, ...) is refused, and so is a program that reaches undefined behaviour (use before init,
//! an over-arrival, a named barrier re-arrival): that is not a race question.

pub mod causality;
pub mod explore;
pub mod fragment;
mod step;
mod walk;

use causality::{Access, Closure, is_race};
use explore::Explorer;
use fragment::{Ev, Lowered, Proxy};
pub use fragment::{Refusal, lower};
use protocols::ir::Program;
use protocols::span::Span;

/// One side of a race: the thread (or `copy of THREAD` for a bulk copy's landing) and the
/// statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    pub thread: String,
    pub span: Span,
}

/// The oracle's answer for one program.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// A race between data accesses (buffers, plain globals) of some execution: the first
    /// found, in a deterministic order.
    pub race: Option<(Site, Site)>,
    /// A race that involves a flag access (`store_release` / `load_acquire` that are not
    /// morally strong and not ordered): a data race by the ISA's definition too, kept apart
    /// because the checker does not judge flags.
    pub flag_race: Option<(Site, Site)>,
    /// Some execution leaves a thread blocked forever.
    pub deadlock: bool,
    /// Distinct maximal executions (by their synchronizes edges) explored.
    pub executions: usize,
    /// States of the enumeration.
    pub states: usize,
}

impl Verdict {
    /// Some execution has a data race in the ISA's sense (on data or on a flag).
    pub fn any_race(&self) -> bool {
        self.race.is_some() || self.flag_race.is_some()
    }
}

/// Decide `program`: enumerate its candidate executions and look for a data race.
pub fn decide(program: &Program) -> Result<Verdict, Refusal> {
    let p = lower(program)?;
    let mut ex = Explorer::new(&p);
    let executions = ex.run()?;
    let accesses = accesses(&p, &ex);
    let fences = proxy_fences(&p, &ex);
    let mut race = None;
    let mut flag_race = None;
    let mut deadlock = false;
    for e in &executions {
        deadlock |= e.deadlock;
        if race.is_some() && flag_race.is_some() {
            continue;
        }
        let c = Closure::new(&ex.nodes.successors(&p, &e.edges));
        let ran: Vec<&Access> = accesses.iter().filter(|a| e.ran[a.node as usize]).collect();
        let ran_fences: Vec<u32> = fences
            .iter()
            .copied()
            .filter(|&f| e.ran[f as usize])
            .collect();
        for (i, x) in ran.iter().enumerate() {
            for y in &ran[i + 1..] {
                let slot = if x.strong.is_some() || y.strong.is_some() {
                    &mut flag_race
                } else {
                    &mut race
                };
                if slot.is_none() && is_race(&c, &ran_fences, x, y) {
                    *slot = Some((site(&p, &ex, x), site(&p, &ex, y)));
                }
            }
        }
    }
    Ok(Verdict {
        race,
        flag_race,
        deadlock,
        executions: executions.len(),
        states: ex.states,
    })
}

fn thread_place(p: &Lowered, t: usize) -> causality::Place {
    let th = &p.threads[t];
    causality::Place {
        kernel: th.kernel,
        cta: th.cta,
        domain: th.domain,
    }
}

/// Every memory access the program can make: thread accesses, flag operations, landings.
fn accesses(p: &Lowered, ex: &Explorer) -> Vec<Access> {
    let mut out = Vec::new();
    for (t, th) in p.threads.iter().enumerate() {
        for (i, (e, _)) in th.events.iter().enumerate() {
            let node = ex.nodes.base[t] + i as u32;
            let (loc, write, proxy, strong) = match e {
                Ev::Access { loc, write, proxy } => (*loc, *write, *proxy, None),
                Ev::Release { flag, scope } | Ev::Acquire { flag, scope } => (
                    fragment::Loc::Global { obj: *flag },
                    matches!(e, Ev::Release { .. }),
                    Proxy::Generic,
                    Some((thread_place(p, t), *scope)),
                ),
                Ev::Tma { dst, .. } => {
                    out.push(Access {
                        node: ex.nodes.landing[&(t as u32, i as u32)],
                        thread: None,
                        loc: *dst,
                        write: true,
                        proxy: Proxy::Async,
                        strong: None,
                        issue: Some(node),
                    });
                    continue;
                }
                _ => continue,
            };
            out.push(Access {
                node,
                thread: Some(t as u32),
                loc,
                write,
                proxy,
                strong,
                issue: None,
            });
        }
    }
    out
}

fn proxy_fences(p: &Lowered, ex: &Explorer) -> Vec<u32> {
    let mut out = Vec::new();
    for (t, th) in p.threads.iter().enumerate() {
        for (i, (e, _)) in th.events.iter().enumerate() {
            if matches!(e, Ev::ProxyFence) {
                out.push(ex.nodes.base[t] + i as u32);
            }
        }
    }
    out
}

fn site(p: &Lowered, ex: &Explorer, a: &Access) -> Site {
    let (t, i, prefix) = match a.issue {
        Some(issue) => {
            let (t, i) = ex.nodes.landing_of[(a.node - ex.nodes.first_landing) as usize];
            let _ = issue;
            (t as usize, i as usize, "copy of ")
        }
        None => {
            let t = a.thread.expect("a thread access") as usize;
            (t, (a.node - ex.nodes.base[t]) as usize, "")
        }
    };
    Site {
        thread: format!("{prefix}{}", p.threads[t].name),
        span: p.threads[t].events[i].1,
    }
}
