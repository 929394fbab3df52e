//! One thread's walk of the IR: conditions evaluated with the thread's builtins and locals,
//! `for` loops unrolled, each operation translated into an [`Ev`] of the fragment or refused.

use crate::fragment::{
    BarKey, Ev, Loc, MAX_EVENTS_PER_THREAD, MAX_TRIPS, NamedKey, Proxy, Refusal, refuse, too_large,
};
use protocols::eval::eval;
use protocols::ir::{
    Builtin, Expr, Kernel, LocalId, ObjRef, ObjectKind, Op, Program, Stmt, StmtKind,
};
use protocols::span::Span;
use std::collections::HashMap;

pub(crate) struct Walker<'a> {
    program: &'a Program,
    kernel: &'a Kernel,
    k: u32,
    cta: u32,
    tid: u32,
    locals: HashMap<LocalId, i64>,
    pub(crate) events: Vec<(Ev, Span)>,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(
        program: &'a Program,
        kernel: &'a Kernel,
        k: u32,
        cta: u32,
        tid: u32,
    ) -> Self {
        Walker {
            program,
            kernel,
            k,
            cta,
            tid,
            locals: HashMap::new(),
            events: Vec::new(),
        }
    }

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
            return too_large(format!(
                "a thread has more than {MAX_EVENTS_PER_THREAD} events after unrolling"
            ));
        }
        self.events.push((e, span));
        Ok(())
    }

    pub(crate) fn block(&mut self, body: &[Stmt]) -> Result<(), Refusal> {
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
        if r.bytes.is_some() {
            // A location here is a whole buffer instance: judging `bytes` ranges as the whole
            // would report races between disjoint bytes, a disagreement of the oracle's making.
            return refuse("a byte range (`bytes OFF .. +LEN`) is outside the fragment");
        }
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
