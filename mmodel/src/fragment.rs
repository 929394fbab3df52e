//! The fragment the oracle decides, and the lowering of a loaded program into it: one
//! straight-line list of events per thread (conditions evaluated per thread, `for` loops
//! unrolled), or a [`Refusal`] naming what lies outside.

use crate::walk::Walker;
use protocols::ir::{MemScope, Program};
use protocols::span::Span;
use std::collections::HashMap;

/// At most this many threads in all kernels together.
pub const MAX_THREADS: usize = 8;
/// At most this many events per thread after unrolling.
pub const MAX_EVENTS_PER_THREAD: usize = 64;

/// At most this many trips of one `for` loop (a loop without events would otherwise spin).
pub const MAX_TRIPS: u32 = 256;

/// Why the oracle gives no answer: the program is outside the fragment, too large, or
/// reaches undefined behaviour (which is not a race question).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// What lies outside, in words.
    pub why: String,
    /// The program is inside the fragment but beyond the oracle's capacity (threads, events
    /// per thread, states): a bigger bound would judge it. Callers count these apart from
    /// programs the oracle cannot judge at all.
    pub too_large: bool,
}

impl Refusal {
    /// A refusal for a program outside the fragment (or one reaching undefined behaviour).
    pub(crate) fn outside(why: String) -> Self {
        Refusal {
            why,
            too_large: false,
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

pub(crate) fn refuse<T>(why: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal::outside(why.into()))
}

/// A refusal for a program beyond the oracle's bounds.
pub(crate) fn too_large<T>(why: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal {
        why: why.into(),
        too_large: true,
    })
}

/// A memory location: one instance of a shared-memory buffer (per kernel and CTA), or a
/// global.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Loc {
    Buffer {
        obj: u32,
        index: u32,
        kernel: u32,
        cta: u32,
    },
    Global {
        obj: u32,
    },
}

/// PTX "Proxies": the generic proxy (ordinary loads and stores) or the async proxy (bulk
/// copies, wgmma operand reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proxy {
    Generic,
    Async,
}

/// One mbarrier instance: object, array index, kernel and CTA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BarKey {
    pub obj: u32,
    pub index: u32,
    pub kernel: u32,
    pub cta: u32,
}

/// One named hardware barrier of one CTA (`syncthreads` is barrier 0 of the whole block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NamedKey {
    pub kernel: u32,
    pub cta: u32,
    pub id: u32,
}

/// An event of a thread, in program order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ev {
    /// A weak data access (`read`, `write`, `store`, `load`) or an async-proxy read (`mma`).
    Access {
        loc: Loc,
        write: bool,
        proxy: Proxy,
    },
    /// `fence_proxy_async` (`fence.proxy.async`).
    ProxyFence,
    /// `store_release X scope S`: a strong write, a release operation on the flag.
    Release {
        flag: u32,
        scope: MemScope,
    },
    /// `load_acquire X scope S`: spins until it reads a release of the flag, then acquires.
    Acquire {
        flag: u32,
        scope: MemScope,
    },
    /// `syncthreads` (barrier 0, whole block), `bar_sync` / `bar_arrive`: the arrival; a
    /// `bar_sync` is followed by a [`Ev::BarWait`].
    BarArrive {
        key: NamedKey,
        count: Option<u32>,
        waits: bool,
    },
    /// The return of a `bar_sync`: once the use it arrived in has completed.
    BarWait,
    Init {
        bar: BarKey,
        count: u32,
    },
    /// `arrive` (count) or `arrive_expect_tx` (count 1 and `tx` bytes), a release at `scope`.
    Arrive {
        bar: BarKey,
        count: u32,
        tx: u32,
        scope: MemScope,
    },
    ExpectTx {
        bar: BarKey,
        bytes: u32,
    },
    /// `wait B parity P [scope S]`: an acquire at `scope` once the phase with parity P completed.
    Wait {
        bar: BarKey,
        parity: u32,
        scope: MemScope,
    },
    /// `tma X -> B, BYTES`: issues a bulk copy; its landing is a separate event
    /// ([`crate::explore::Nodes::landing`]).
    Tma {
        dst: Loc,
        bar: BarKey,
        bytes: u32,
    },
    ClusterArrive,
    ClusterWait,
}

/// One thread of the program.
#[derive(Clone, Debug)]
pub struct Thread {
    pub kernel: u32,
    pub cta: u32,
    pub tid: u32,
    /// Index of its kernel's memory synchronization domain.
    pub domain: u32,
    pub events: Vec<(Ev, Span)>,
    /// Human name: `kernel.ctaC.tN`.
    pub name: String,
}

/// The lowered program: threads with their events, and the kernels' shapes.
#[derive(Clone, Debug)]
pub struct Lowered {
    pub threads: Vec<Thread>,
    /// Per kernel: threads per block, blocks per cluster.
    pub kernels: Vec<(u32, u32)>,
}

/// Lower `program` into the fragment, or refuse it.
pub fn lower(program: &Program) -> Result<Lowered, Refusal> {
    let mut domains: Vec<&str> = Vec::new();
    let mut threads = Vec::new();
    let mut kernels = Vec::new();
    for (k, kernel) in program.kernels.iter().enumerate() {
        let domain = match domains.iter().position(|d| *d == kernel.domain) {
            Some(i) => i,
            None => {
                domains.push(&kernel.domain);
                domains.len() - 1
            }
        };
        kernels.push((kernel.block, kernel.cluster));
        let count = kernel.block as usize * kernel.cluster as usize;
        if threads.len() + count > MAX_THREADS {
            return too_large(format!(
                "more than {MAX_THREADS} threads (the oracle enumerates executions exhaustively)"
            ));
        }
        for cta in 0..kernel.cluster {
            for tid in 0..kernel.block {
                let mut w = Walker::new(program, kernel, k as u32, cta, tid);
                w.block(&kernel.body)?;
                let name = if program.kernels.len() > 1 {
                    format!("{}.cta{cta}.t{tid}", kernel.name)
                } else if kernel.cluster > 1 {
                    format!("cta{cta}.t{tid}")
                } else {
                    format!("t{tid}")
                };
                threads.push(Thread {
                    kernel: k as u32,
                    cta,
                    tid,
                    domain: domain as u32,
                    events: w.events,
                    name,
                });
            }
        }
    }
    check_flags(program, &threads)?;
    Ok(Lowered { threads, kernels })
}

/// A global is either a flag (only `store_release` / `load_acquire`) or data (only `store` /
/// `load`): a weak access to a flag would need the reads-from of weak accesses, which the
/// oracle does not enumerate.
fn check_flags(program: &Program, threads: &[Thread]) -> Result<(), Refusal> {
    let mut flag = HashMap::new();
    for t in threads {
        for (e, _) in &t.events {
            let (obj, is_flag) = match e {
                Ev::Release { flag, .. } | Ev::Acquire { flag, .. } => (*flag, true),
                Ev::Access {
                    loc: Loc::Global { obj },
                    ..
                } => (*obj, false),
                _ => continue,
            };
            if *flag.entry(obj).or_insert(is_flag) != is_flag {
                return refuse(format!(
                    "global `{}` is used both as a flag (store_release/load_acquire) and as data (store/load)",
                    program.objects[obj as usize].name
                ));
            }
        }
    }
    Ok(())
}
