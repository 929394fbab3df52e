//! The fragment the oracle decides, and the lowering of a loaded program into it: one
//! straight-line list of events per thread (conditions evaluated per thread, `for` loops
//! unrolled), or a [`Refusal`] naming what lies outside.

use protocols::eval::eval;
use protocols::ir::{Builtin, Expr, LocalId, MemScope, ObjRef, ObjectKind, Op, Program, StmtKind};
use protocols::ir::{Kernel, Stmt};
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
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn refuse<T>(why: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal(why.into()))
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
    /// ([`Program::landing`]).
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
            return refuse(format!(
                "more than {MAX_THREADS} threads (the oracle enumerates executions exhaustively)"
            ));
        }
        for cta in 0..kernel.cluster {
            for tid in 0..kernel.block {
                let mut w = Walker {
                    program,
                    kernel,
                    k: k as u32,
                    cta,
                    tid,
                    locals: HashMap::new(),
                    events: Vec::new(),
                };
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

struct Walker<'a> {
    program: &'a Program,
    kernel: &'a Kernel,
    k: u32,
    cta: u32,
    tid: u32,
    locals: HashMap<LocalId, i64>,
    events: Vec<(Ev, Span)>,
}

impl Walker<'_> {
    fn eval(&self, e: &Expr) -> Result<i64, Refusal> {
        let (tid, cta) = (i64::from(self.tid), i64::from(self.cta));
        let (block, cluster) = (i64::from(self.kernel.block), i64::from(self.kernel.cluster));
        let locals = &self.locals;
        let v = eval(
            self.program,
            e,
            &mut |l| locals.get(&l).copied(),
            &mut |b| {
                Some(match b {
                    Builtin::Tid => tid,
                    Builtin::Lane => tid % 32,
                    Builtin::Warp => tid / 32,
                    Builtin::Cta => cta,
                    Builtin::NThreads => block,
                    Builtin::NCta => cluster,
                })
            },
        );
        match v {
            Ok(Some(v)) => Ok(v),
            Ok(None) => refuse("an expression reads a value the oracle does not know (a token?)"),
            Err(e) => refuse(format!("an expression fails: {}", e.describe())),
        }
    }

    fn small(&self, e: &Expr, what: &str) -> Result<u32, Refusal> {
        let v = self.eval(e)?;
        u32::try_from(v).or_else(|_| refuse(format!("{what} {v} is out of range")))
    }

    fn push(&mut self, e: Ev, span: Span) -> Result<(), Refusal> {
        if self.events.len() >= MAX_EVENTS_PER_THREAD {
            return refuse(format!(
                "a thread has more than {MAX_EVENTS_PER_THREAD} events after unrolling"
            ));
        }
        self.events.push((e, span));
        Ok(())
    }

    fn block(&mut self, body: &[Stmt]) -> Result<(), Refusal> {
        for s in body {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), Refusal> {
        match &s.kind {
            StmtKind::Let { local, value } | StmtKind::Assign { local, value } => {
                let v = self.eval(value)?;
                self.locals.insert(*local, v);
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                if self.eval(cond)? != 0 {
                    self.block(then_body)?;
                } else {
                    self.block(else_body)?;
                }
            }
            StmtKind::Role { cond, body, .. } => {
                if self.eval(cond)? != 0 {
                    self.block(body)?;
                }
            }
            StmtKind::For {
                var,
                start,
                end,
                body,
            } => {
                let (a, b) = (self.eval(start)?, self.eval(end)?);
                let mut i = a;
                let mut trips = 0u32;
                while i < b {
                    trips += 1;
                    if trips > MAX_TRIPS {
                        return refuse(format!("a loop runs more than {MAX_TRIPS} trips"));
                    }
                    self.locals.insert(*var, i);
                    self.block(body)?;
                    i = match self.locals[var].checked_add(1) {
                        Some(i) => i,
                        None => return refuse("a loop variable overflows"),
                    };
                }
            }
            StmtKind::While { .. } => return refuse("`while` loops are outside the fragment"),
            StmtKind::Elect { .. } => return refuse("`elect` is outside the fragment"),
            StmtKind::Exit => return refuse("`exit` is outside the fragment"),
            StmtKind::Op(op) => self.op(op, s.span)?,
        }
        Ok(())
    }

    fn own_buffer(&self, r: &ObjRef) -> Result<Loc, Refusal> {
        if r.cta.is_some() {
            return refuse(
                "a buffer of a peer block (`@ r`): a distributed-shared-memory address is an alias of the owner's, which the oracle does not model",
            );
        }
        let index = match &r.index {
            Some(e) => self.small(e, "an index")?,
            None => 0,
        };
        let len = self.program.objects[r.object.0 as usize].count();
        if index >= len {
            return refuse("an index is out of range");
        }
        Ok(Loc::Buffer {
            obj: r.object.0,
            index,
            kernel: self.k,
            cta: self.cta,
        })
    }

    fn bar(&self, r: &ObjRef, remote_ok: bool) -> Result<BarKey, Refusal> {
        let obj = &self.program.objects[r.object.0 as usize];
        if obj.kind != ObjectKind::MBarrier {
            return refuse(format!(
                "`{}` is not an mbarrier (cuda::barrier is outside the fragment)",
                obj.name
            ));
        }
        let cta = match &r.cta {
            Some(_) if !remote_ok => return refuse("this operation on a peer's barrier"),
            Some(e) => self.small(e, "a cluster rank")?,
            None => self.cta,
        };
        if cta >= self.kernel.cluster {
            return refuse("a cluster rank is out of range");
        }
        let index = match &r.index {
            Some(e) => self.small(e, "an index")?,
            None => 0,
        };
        if index >= obj.count() {
            return refuse("an index is out of range");
        }
        Ok(BarKey {
            obj: r.object.0,
            index,
            kernel: self.k,
            cta,
        })
    }

    fn op(&mut self, op: &Op, span: Span) -> Result<(), Refusal> {
        let ev = match op {
            Op::Read { buf } => Ev::Access {
                loc: self.own_buffer(buf)?,
                write: false,
                proxy: Proxy::Generic,
            },
            Op::Write {
                buf,
                part: false,
                value: None,
            } => Ev::Access {
                loc: self.own_buffer(buf)?,
                write: true,
                proxy: Proxy::Generic,
            },
            Op::Write { .. } => {
                return refuse("`write part` and `write X value N` are outside the fragment");
            }
            Op::Mma { buf } => Ev::Access {
                loc: self.own_buffer(buf)?,
                write: false,
                proxy: Proxy::Async,
            },
            Op::Store { global } | Op::Load { global } => Ev::Access {
                loc: Loc::Global {
                    obj: global.object.0,
                },
                write: matches!(op, Op::Store { .. }),
                proxy: Proxy::Generic,
            },
            Op::StoreRelease { global, scope } => Ev::Release {
                flag: global.object.0,
                scope: *scope,
            },
            Op::LoadAcquire { global, scope } => Ev::Acquire {
                flag: global.object.0,
                scope: *scope,
            },
            // fence.acq_rel: see the crate docs ("Fences"): it adds no synchronization here.
            Op::Fence { .. } | Op::Compute | Op::FenceMbarrierInit => return Ok(()),
            Op::FenceProxyAsync => Ev::ProxyFence,
            Op::SyncThreads => {
                let key = self.named(0);
                self.push(
                    Ev::BarArrive {
                        key,
                        count: None,
                        waits: true,
                    },
                    span,
                )?;
                Ev::BarWait
            }
            Op::BarSync { id, count, .. } | Op::BarArrive { id, count, .. } => {
                let id = self.small(id, "a barrier id")?;
                if id > 15 {
                    return refuse("a named barrier id outside 0..15");
                }
                let count = match count {
                    Some(c) => match self.small(c, "a barrier count")? {
                        0 => None,
                        c => Some(c),
                    },
                    None => None,
                };
                let waits = matches!(op, Op::BarSync { .. });
                let key = self.named(id);
                self.push(Ev::BarArrive { key, count, waits }, span)?;
                if !waits {
                    return Ok(());
                }
                Ev::BarWait
            }
            Op::Init { bar, count } => Ev::Init {
                bar: self.bar(bar, false)?,
                count: self.small(count, "an init count")?,
            },
            Op::Arrive {
                bar,
                count,
                token: None,
                scope,
            } => Ev::Arrive {
                bar: self.bar(bar, true)?,
                count: match count {
                    Some(c) => self.small(c, "an arrival count")?,
                    None => 1,
                },
                tx: 0,
                scope: *scope,
            },
            Op::ArriveExpectTx { bar, bytes, scope } => Ev::Arrive {
                bar: self.bar(bar, true)?,
                count: 1,
                tx: self.small(bytes, "a byte count")?,
                scope: *scope,
            },
            Op::ExpectTx { bar, bytes } => Ev::ExpectTx {
                bar: self.bar(bar, true)?,
                bytes: self.small(bytes, "a byte count")?,
            },
            Op::WaitParity { bar, parity, scope } => Ev::Wait {
                bar: self.bar(bar, false)?,
                parity: (self.eval(parity)? & 1) as u32,
                scope: *scope,
            },
            Op::Tma {
                dst,
                bar,
                bytes,
                multicast: None,
            } => Ev::Tma {
                dst: self.own_buffer(dst)?,
                bar: self.bar(bar, false)?,
                bytes: self.small(bytes, "a byte count")?,
            },
            Op::ClusterSync => {
                self.push(Ev::ClusterArrive, span)?;
                Ev::ClusterWait
            }
            Op::ClusterArrive => Ev::ClusterArrive,
            Op::ClusterWait => Ev::ClusterWait,
            other => {
                return refuse(format!(
                    "`{}` is outside the fragment{}",
                    other.keyword(),
                    match other {
                        Op::Arrive { .. } => " (with a token)",
                        Op::Tma { .. } => " (multicast)",
                        _ => "",
                    }
                ));
            }
        };
        self.push(ev, span)
    }

    fn named(&self, id: u32) -> NamedKey {
        NamedKey {
            kernel: self.k,
            cta: self.cta,
            id,
        }
    }
}
