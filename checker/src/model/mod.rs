//! The `.phase` transition system: static layout (threads, object instances, compiled code)
//! and the [`crate::explore::Model`] implementation. Semantics of each operation live in
//! [`exec`], race checks in [`race`], deadlock analysis in [`stuck`], trace rendering in
//! [`trace`], thread symmetry in [`symmetry`].

pub mod bytes;
pub mod cause;
pub mod code;
pub mod exec;
pub mod race;
pub mod shared;
pub mod state;
pub mod stuck;
pub mod symmetry;
pub mod trace;
pub mod walk;

use crate::explore::{self, Step};
use crate::report::{Label, WaitFor};
use crate::rules::Rule;
use code::{Code, Instr};
use protocols::Span;
use protocols::ir::{
    BinaryOp, Builtin, Expr, ExprKind, ObjectKind, Op, PipelineKind, Program, RoleId, UnaryOp,
};
use state::*;
use std::collections::BTreeMap;

/// A finding of the model, before its trace is rebuilt.
#[derive(Clone, Debug)]
pub struct MFinding {
    pub rule: &'static Rule,
    pub span: Span,
    pub message: String,
    pub labels: Vec<Label>,
    pub help: Option<String>,
    pub waits_for: Vec<WaitFor>,
}

impl MFinding {
    pub fn new(rule: &'static Rule, span: Span, message: impl Into<String>) -> Self {
        MFinding {
            rule,
            span,
            message: message.into(),
            labels: Vec::new(),
            help: None,
            waits_for: Vec::new(),
        }
    }
    pub fn label(mut self, span: Span, message: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// Static facts about one thread.
#[derive(Clone, Debug)]
pub struct ThreadInfo {
    pub kernel: u32,
    pub cta: u32,
    pub tid: u32,
    pub name: String,
    pub role: Option<RoleId>,
    pub role_index: u32,
    /// Symmetry class: threads of one class are interchangeable.
    pub class: u32,
    /// Symmetry class once the kernel is past its prologue (`PhaseModel::late_classes`).
    pub late_class: u32,
    /// In a block of a warp or more: per `bar_sync`/`bar_arrive` with a count that this thread
    /// may reach (instruction index), the lanes of its warp that never run that statement with
    /// it (their `if`/`role` conditions exclude them, or it is in an `elect` body). Only the
    /// statements with such lanes are listed (semantics.md §9.1, "Whole warps").
    pub warp_gaps: Vec<(u32, Vec<u32>)>,
}

#[derive(Clone, Debug)]
pub struct KernelInfo {
    pub code: Code,
    pub first_thread: u32,
    pub block: u32,
    pub cluster: u32,
    pub domain: String,
    /// Index of its first block in the per-block tables.
    pub first_block: u32,
    /// `exit` and the end of the kernel are visible steps (they matter to peers).
    pub exit_visible: bool,
    pub reach: code::Reach,
    /// Per instruction: the local slots that may still be read ([`code::live_locals`]).
    pub live: Vec<u64>,
    /// Bit `id`: some `bar_arrive` of the kernel may arrive on the whole-block use of named
    /// barrier `id` (no count; a non-constant id sets every bit). An arrival that does not wait
    /// still counts after its thread exits, so such a use may complete without a live thread
    /// that has not arrived (footprint.rs, `Still`).
    pub whole_block_arrives: u16,
}

/// Where the instances of one object live.
#[derive(Clone, Copy, Debug)]
pub enum Layout {
    /// mbarrier / cuda::barrier: `bars[base + block * len + index]`.
    Bar { base: u32 },
    /// Buffers and globals: `buf ids base + block * len + index` (globals: block = 0).
    Buf { base: u32 },
    /// Block pipeline: instance `base + block * len + index`; its stage barriers are
    /// `bars[bar_base + instance * 2 * stages ..]` (consumed stages then produced stages).
    Pipe { base: u32, bar_base: u32 },
    /// Thread-scope pipeline: per-thread instance id `base + index`.
    ThreadPipe { base: u32 },
}

pub struct PhaseModel<'p> {
    pub program: &'p Program,
    pub kernels: Vec<KernelInfo>,
    pub threads: Vec<ThreadInfo>,
    pub layouts: Vec<Layout>,
    /// Per barrier instance: display name and (kernel, cta).
    pub bar_names: Vec<String>,
    pub bar_block: Vec<u32>,
    /// Per buffer instance: display name, touched by the async proxy, needed release level,
    /// block (u32::MAX for globals).
    pub buf_names: Vec<String>,
    /// Per buffer instance: its block (`u32::MAX` for globals).
    pub buf_block: Vec<u32>,
    pub buf_async: Vec<bool>,
    pub buf_level: Vec<Level>,
    /// Per buffer instance: every access of its object anywhere is a `store_release` or
    /// `load_acquire` with a scope that includes every thread that can reach it, so its
    /// accesses are pairwise morally strong and never race; else the flag's own accesses are
    /// kept and checked like data (PTX "Conflict and Data-races").
    pub flag_strong: Vec<bool>,
    pub nblocks: u32,
    /// Per block: (kernel, cta).
    pub blocks: Vec<(u32, u32)>,
    pub npipes: u32,
    pub nglobals: u32,
    /// Objects on which some thread uses `expect_tx`/`arrive_expect_tx` (R-EXPECT tracking).
    pub tracks_arrive: Vec<bool>,
    pub max_loop_trips: u32,
    pub symmetry: bool,
    /// Partial-order reduction on (see `exec::ample`).
    pub por: bool,
    /// When the search is decided (`CheckOptions::goal`).
    pub goal: crate::goal::Goal,
    /// Per barrier instance: its object.
    pub bar_obj: Vec<u32>,
    /// Per buffer instance: its object.
    pub buf_obj: Vec<u32>,
    /// Per class: its thread indices, ascending.
    pub classes: Vec<Vec<u32>>,
    /// Per class once its kernel is past its prologue (`symmetry::Prologue`): its thread
    /// indices, ascending. Each is a union of classes; equal to `classes` where no kernel has a
    /// prologue whose statements tell threads apart. Empty with symmetry off.
    pub late_classes: Vec<Vec<u32>>,
    /// Per kernel: its prologue, if it has one.
    pub prologues: Vec<Option<symmetry::Prologue>>,
    /// Range groups (`bytes.rs`): the late symmetry classes with symmetry on.
    pub range_groups: Vec<Vec<u32>>,
    /// The thread parts of the byte ranges of accesses (`bytes.rs`).
    pub ranges: bytes::Ranges,
    /// Run-ahead results of the partial-order reduction, reused across states
    /// (`exec::footprint`).
    pub run_cache: exec::RunCache,
}

/// A model error (division by zero, overflow, index out of range).
#[derive(Debug)]
pub struct EvalError {
    pub span: Span,
    pub message: String,
}

pub type Eval<T> = Result<T, EvalError>;

impl<'p> PhaseModel<'p> {
    pub fn new(program: &'p Program, max_loop_trips: u32, symmetry: bool) -> Self {
        let mut kernels = Vec::new();
        let mut threads = Vec::new();
        let mut blocks = Vec::new();
        let mut first_thread = 0u32;
        for (ki, k) in program.kernels.iter().enumerate() {
            let code = code::compile(program, k);
            let reach = code::reach(&code, program.objects.len());
            let live = code::live_locals(&code);
            let whole_block_arrives = code
                .instrs
                .iter()
                .map(|i| match i {
                    Instr::Op {
                        op: protocols::ir::Op::BarArrive { id, count, .. },
                        ..
                    } if count
                        .as_ref()
                        .is_none_or(|c| matches!(c.kind, ExprKind::Int(0))) =>
                    {
                        match id.kind {
                            ExprKind::Int(v) if (0..16).contains(&v) => 1u16 << v,
                            _ => u16::MAX,
                        }
                    }
                    _ => 0,
                })
                .fold(0, |a, b| a | b);
            let first_block = blocks.len() as u32;
            for c in 0..k.cluster {
                blocks.push((ki as u32, c));
            }
            kernels.push(KernelInfo {
                code,
                first_thread,
                block: k.block,
                cluster: k.cluster,
                domain: k.domain.clone(),
                first_block,
                exit_visible: k.cluster > 1,
                reach,
                live,
                whole_block_arrives,
            });
            first_thread += k.block * k.cluster;
        }
        let nblocks = blocks.len() as u32;
        // Object instances.
        let mut layouts = Vec::new();
        let mut bar_names = Vec::new();
        let mut bar_block = Vec::new();
        let mut buf_names = Vec::new();
        let mut buf_block = Vec::new();
        let mut npipes = 0u32;
        let mut nthread_pipes = 0u32;
        let mut nglobals = 0u32;
        let multi_kernel = kernels.len() > 1;
        let block_prefix = |b: u32| -> String {
            let (k, c) = blocks[b as usize];
            let mut p = String::new();
            if multi_kernel {
                p.push_str(&program.kernels[k as usize].name);
                p.push('.');
            }
            if kernels[k as usize].cluster > 1 {
                p.push_str(&format!("cta{c}."));
            }
            p
        };
        let inst_name = |name: &str, len: Option<u32>, i: u32| match len {
            Some(_) => format!("{name}[{i}]"),
            None => name.to_string(),
        };
        for o in &program.objects {
            let n = o.count();
            match &o.kind {
                ObjectKind::MBarrier | ObjectKind::Barrier { .. } => {
                    layouts.push(Layout::Bar {
                        base: bar_names.len() as u32,
                    });
                    for b in 0..nblocks {
                        for i in 0..n {
                            bar_names.push(format!(
                                "{}{}",
                                block_prefix(b),
                                inst_name(&o.name, o.len, i)
                            ));
                            bar_block.push(b);
                        }
                    }
                }
                ObjectKind::Buffer => {
                    layouts.push(Layout::Buf {
                        base: buf_names.len() as u32,
                    });
                    for b in 0..nblocks {
                        for i in 0..n {
                            buf_names.push(format!(
                                "{}{}",
                                block_prefix(b),
                                inst_name(&o.name, o.len, i)
                            ));
                            buf_block.push(b);
                        }
                    }
                }
                ObjectKind::Global => {
                    layouts.push(Layout::Buf {
                        base: buf_names.len() as u32,
                    });
                    for i in 0..n {
                        buf_names.push(inst_name(&o.name, o.len, i));
                        buf_block.push(u32::MAX);
                        nglobals += 1;
                    }
                }
                ObjectKind::Pipeline(PipelineKind::Block { stages, .. }) => {
                    layouts.push(Layout::Pipe {
                        base: npipes,
                        bar_base: bar_names.len() as u32,
                    });
                    for b in 0..nblocks {
                        for i in 0..n {
                            let pn = format!("{}{}", block_prefix(b), inst_name(&o.name, o.len, i));
                            for which in ["consumed", "produced"] {
                                for s in 0..*stages {
                                    bar_names.push(format!("{pn}.{which}[{s}]"));
                                    bar_block.push(b);
                                }
                            }
                            npipes += 1;
                        }
                    }
                }
                ObjectKind::Pipeline(PipelineKind::Thread) => {
                    layouts.push(Layout::ThreadPipe {
                        base: nthread_pipes,
                    });
                    nthread_pipes += n;
                }
            }
        }
        let mut bar_obj = vec![0u32; bar_names.len()];
        let mut buf_obj = vec![0u32; buf_names.len()];
        for (oi, l) in layouts.iter().enumerate() {
            let o = &program.objects[oi];
            match l {
                Layout::Bar { base } => {
                    for j in 0..o.count() * nblocks {
                        bar_obj[(base + j) as usize] = oi as u32;
                    }
                }
                Layout::Pipe { bar_base, .. } => {
                    if let ObjectKind::Pipeline(PipelineKind::Block { stages, .. }) = &o.kind {
                        for j in 0..o.count() * nblocks * 2 * stages {
                            bar_obj[(bar_base + j) as usize] = oi as u32;
                        }
                    }
                }
                Layout::Buf { base } => {
                    let n = if o.kind == ObjectKind::Global {
                        o.count()
                    } else {
                        o.count() * nblocks
                    };
                    for j in 0..n {
                        buf_obj[(base + j) as usize] = oi as u32;
                    }
                }
                Layout::ThreadPipe { .. } => {}
            }
        }
        // Which buffers the async proxy touches, and which barriers track expect_tx.
        let mut async_objs = vec![false; program.objects.len()];
        let mut tracks_arrive = vec![false; program.objects.len()];
        for k in &kernels {
            for i in &k.code.instrs {
                if let Instr::Op { op, .. } = i {
                    use protocols::ir::Op;
                    match op {
                        Op::Mma { buf } | Op::TmaStore { src: buf } => {
                            async_objs[buf.object.0 as usize] = true
                        }
                        Op::Tma { dst, bar, .. } => {
                            async_objs[dst.object.0 as usize] = true;
                            tracks_arrive[bar.object.0 as usize] = true;
                        }
                        Op::ExpectTx { bar, .. } | Op::ArriveExpectTx { bar, .. } => {
                            tracks_arrive[bar.object.0 as usize] = true
                        }
                        _ => {}
                    }
                }
            }
        }
        let mut buf_async = vec![false; buf_names.len()];
        for (oi, l) in layouts.iter().enumerate() {
            if let Layout::Buf { base } = l {
                let o = &program.objects[oi];
                let n = if o.kind == ObjectKind::Global {
                    o.count()
                } else {
                    o.count() * nblocks
                };
                for j in 0..n {
                    buf_async[(base + j) as usize] = async_objs[oi];
                }
            }
        }
        let distinct_domains = {
            let mut d: Vec<&str> = kernels.iter().map(|k| k.domain.as_str()).collect();
            d.sort();
            d.dedup();
            d.len()
        };
        let buf_level: Vec<Level> = buf_block
            .iter()
            .map(|&b| {
                if b == u32::MAX {
                    if kernels.len() > 1 {
                        if distinct_domains > 1 {
                            LVL_SYS
                        } else {
                            LVL_GPU
                        }
                    } else if kernels[0].cluster > 1 {
                        LVL_CLUSTER
                    } else {
                        LVL_CTA
                    }
                } else if kernels[blocks[b as usize].0 as usize].cluster > 1 {
                    LVL_CLUSTER
                } else {
                    LVL_CTA
                }
            })
            .collect();

        // Per object: the narrowest scope of its strong accesses, and whether it has a weak one.
        let mut strong_min: BTreeMap<u32, (Level, bool)> = BTreeMap::new();
        for k in &kernels {
            for i in &k.code.instrs {
                let Instr::Op { op, .. } = i else { continue };
                let strong = match op {
                    Op::StoreRelease { scope, .. } | Op::LoadAcquire { scope, .. } => {
                        Some(exec::scope_level(*scope))
                    }
                    _ => None,
                };
                for r in op.object_refs() {
                    let e = strong_min.entry(r.object.0).or_insert((LVL_SYS, false));
                    match strong {
                        Some(l) => e.0 = e.0.min(l),
                        None => e.1 = true,
                    }
                }
            }
        }
        let flag_strong = (0..buf_obj.len())
            .map(|x| match strong_min.get(&buf_obj[x]) {
                Some(&(min, weak)) => !weak && min >= buf_level[x],
                None => true,
            })
            .collect();
        let mut model = PhaseModel {
            program,
            kernels,
            threads: Vec::new(),
            layouts,
            bar_names,
            bar_block,
            buf_names,
            buf_block: buf_block.clone(),
            buf_async,
            buf_level,
            flag_strong,
            nblocks,
            blocks,
            npipes,
            nglobals,
            tracks_arrive,
            max_loop_trips,
            symmetry,
            por: true,
            goal: crate::goal::Goal::default(),
            bar_obj,
            buf_obj,
            classes: Vec::new(),
            late_classes: Vec::new(),
            prologues: Vec::new(),
            range_groups: Vec::new(),
            ranges: bytes::Ranges::default(),
            run_cache: exec::RunCache::default(),
        };
        let _ = nthread_pipes;
        // Threads, names and roles.
        for (ki, k) in model.kernels.iter().enumerate() {
            let mut role_counts: Vec<u32> = vec![0; program.roles.len()];
            for c in 0..k.cluster {
                if k.cluster > 1 {
                    role_counts.iter_mut().for_each(|n| *n = 0);
                }
                for t in 0..k.block {
                    let mut role = None;
                    for (r, cond) in &k.code.role_conds {
                        if code::uses_local(cond) {
                            continue;
                        }
                        if let Ok(v) = model.eval_static(cond, ki as u32, c, t)
                            && v != 0
                        {
                            role = Some(*r);
                            break;
                        }
                    }
                    let mut name = String::new();
                    if model.kernels.len() > 1 {
                        name.push_str(&program.kernels[ki].name);
                        name.push('.');
                    }
                    if k.cluster > 1 {
                        name.push_str(&format!("cta{c}."));
                    }
                    let role_index = match role {
                        Some(r) => {
                            let i = role_counts[r.0 as usize];
                            role_counts[r.0 as usize] += 1;
                            name.push_str(&format!("{}[{i}]", program.role(r).name));
                            i
                        }
                        None => {
                            name.push_str(&format!("t{t}"));
                            0
                        }
                    };
                    threads.push(ThreadInfo {
                        kernel: ki as u32,
                        cta: c,
                        tid: t,
                        name,
                        role,
                        role_index,
                        class: 0,
                        late_class: 0,
                        warp_gaps: Vec::new(),
                    });
                }
            }
        }
        model.threads = threads;
        model.warp_gaps();
        model.prologues = model
            .kernels
            .iter()
            .map(|k| symmetry::Prologue::of(&k.code))
            .collect();
        model.classes = symmetry::classes(&mut model);
        model.range_groups = symmetry::range_groups(&model);
        model.ranges = bytes::Ranges::new(&model, &model.range_groups);
        model
    }

    /// Can thread `t` reach instruction `pc`, judging by the `if`/`role` conditions around it
    /// that depend on builtins and params only?
    pub fn may_reach(&self, t: u32, pc: usize) -> bool {
        let ti = &self.threads[t as usize];
        self.code_of(t).guards[pc].iter().all(|(cond, want)| {
            if code::uses_local(cond) {
                return true;
            }
            match self.eval_static(cond, ti.kernel, ti.cta, ti.tid) {
                Ok(v) => (v != 0) == *want,
                Err(_) => true,
            }
        })
    }

    /// The warp rules of named barriers apply to `t`: its block has a warp or more. A smaller
    /// block is a scaled-down model (one thread may stand for a warp or a warpgroup).
    pub fn warp_rules(&self, t: u32) -> bool {
        self.kernels[self.threads[t as usize].kernel as usize].block >= 32
    }

    /// Is instruction `pc` of `t`'s kernel inside an `elect` body?
    pub fn in_elect(&self, t: u32, pc: u32) -> bool {
        self.code_of(t).instrs.iter().enumerate().any(
            |(e, i)| matches!(i, code::Instr::Elect { skip, .. } if (e as u32) < pc && pc < *skip),
        )
    }

    /// The lanes of `t`'s warp that never run the named-barrier statement at `pc` with it
    /// (`ThreadInfo::warp_gaps`), if any.
    pub fn warp_gap(&self, t: u32, pc: u32) -> Option<&[u32]> {
        self.threads[t as usize]
            .warp_gaps
            .iter()
            .find(|g| g.0 == pc)
            .map(|g| g.1.as_slice())
    }

    /// Fill `ThreadInfo::warp_gaps`: a `bar_sync`/`bar_arrive` with a count is `.aligned`, run by
    /// whole warps. Static: lanes that leave by a condition on locals or by `exit` are not seen
    /// here (the missing arrivals then show as a deadlock). A statement marked `unaligned` (the
    /// form without `.aligned`) has no gaps: the lanes of a warp may reach the barrier through
    /// different statements.
    fn warp_gaps(&mut self) {
        for t in 0..self.nthreads() {
            if !self.warp_rules(t) {
                continue;
            }
            let ti = &self.threads[t as usize];
            let code = self.code_of(t);
            let mates: Vec<u32> = (0..self.nthreads())
                .filter(|&u| {
                    let x = &self.threads[u as usize];
                    u != t && x.kernel == ti.kernel && x.cta == ti.cta && x.tid / 32 == ti.tid / 32
                })
                .collect();
            let mut gaps = Vec::new();
            for (pc, i) in code.instrs.iter().enumerate() {
                let counted = matches!(
                    i,
                    code::Instr::Op {
                        op: protocols::ir::Op::BarSync {
                            count: Some(_),
                            unaligned: false,
                            ..
                        } | protocols::ir::Op::BarArrive {
                            count: Some(_),
                            unaligned: false,
                            ..
                        },
                        ..
                    }
                );
                if !counted || !self.may_reach(t, pc) {
                    continue;
                }
                let gone: Vec<u32> = if self.in_elect(t, pc as u32) {
                    mates.clone()
                } else {
                    mates
                        .iter()
                        .copied()
                        .filter(|&u| !self.may_reach(u, pc))
                        .collect()
                };
                if !gone.is_empty() {
                    gaps.push((pc as u32, gone));
                }
            }
            self.threads[t as usize].warp_gaps = gaps;
        }
    }

    pub fn nthreads(&self) -> u32 {
        self.threads.len() as u32
    }

    /// Block index of a thread.
    pub fn block_of(&self, t: u32) -> u32 {
        let ti = &self.threads[t as usize];
        self.kernels[ti.kernel as usize].first_block + ti.cta
    }

    /// The narrowest scope that includes a thread of block `a` and one of block `b`: `.cta`
    /// in one block, `.cluster` in one kernel (a kernel's blocks form one cluster here),
    /// `.gpu` between kernels of one memory synchronization domain, `.sys` across domains
    /// (semantics.md §6.5).
    pub fn block_distance(&self, a: u32, b: u32) -> Level {
        let (ka, _) = self.blocks[a as usize];
        let (kb, _) = self.blocks[b as usize];
        if a == b {
            LVL_CTA
        } else if ka == kb {
            LVL_CLUSTER
        } else if self.kernels[ka as usize].domain == self.kernels[kb as usize].domain {
            LVL_GPU
        } else {
            LVL_SYS
        }
    }

    pub fn code_of(&self, t: u32) -> &Code {
        &self.kernels[self.threads[t as usize].kernel as usize].code
    }

    /// The value that the statement at `pc` of `t`'s code stores, when it is a
    /// `write X value N` (a kept access's `pc` names its statement, so the value needs no room
    /// in the state).
    pub fn write_value(&self, t: u32, pc: u32) -> Option<i64> {
        match self.code_of(t).instrs.get(pc as usize) {
            Some(Instr::Op {
                op: protocols::ir::Op::Write { value, .. },
                ..
            }) => *value,
            _ => None,
        }
    }

    /// Evaluate an expression that may use builtins and params only.
    pub fn eval_static(&self, e: &Expr, kernel: u32, cta: u32, tid: u32) -> Eval<i64> {
        self.eval_with(e, kernel, cta, tid, &[])
    }

    pub fn eval(&self, e: &Expr, t: u32, locals: &[i64]) -> Eval<i64> {
        let ti = &self.threads[t as usize];
        self.eval_with(e, ti.kernel, ti.cta, ti.tid, locals)
    }

    fn eval_with(&self, e: &Expr, kernel: u32, cta: u32, tid: u32, locals: &[i64]) -> Eval<i64> {
        let err = |m: &str| EvalError {
            span: e.span,
            message: m.to_string(),
        };
        let overflow = || err("integer overflow");
        Ok(match &e.kind {
            ExprKind::Int(v) => *v,
            ExprKind::Param(p) => self.program.param(*p).value,
            ExprKind::Local(l) => *locals
                .get(l.0 as usize)
                .ok_or_else(|| err("a local variable used outside a thread"))?,
            ExprKind::Builtin(b) => {
                let k = &self.kernels[kernel as usize];
                i64::from(match b {
                    Builtin::Tid => tid,
                    Builtin::Lane => tid % 32,
                    Builtin::Warp => tid / 32,
                    Builtin::Cta => cta,
                    Builtin::NThreads => k.block,
                    Builtin::NCta => k.cluster,
                })
            }
            ExprKind::Unary(op, a) => {
                let a = self.eval_with(a, kernel, cta, tid, locals)?;
                match op {
                    UnaryOp::Neg => a.checked_neg().ok_or_else(overflow)?,
                    UnaryOp::Not => i64::from(a == 0),
                }
            }
            ExprKind::Min(a, b) => self
                .eval_with(a, kernel, cta, tid, locals)?
                .min(self.eval_with(b, kernel, cta, tid, locals)?),
            ExprKind::Max(a, b) => self
                .eval_with(a, kernel, cta, tid, locals)?
                .max(self.eval_with(b, kernel, cta, tid, locals)?),
            ExprKind::Binary(op, a, b) => {
                let x = self.eval_with(a, kernel, cta, tid, locals)?;
                // Short-circuit like the GPU code would.
                match op {
                    BinaryOp::And if x == 0 => return Ok(0),
                    BinaryOp::Or if x != 0 => return Ok(1),
                    _ => {}
                }
                let y = self.eval_with(b, kernel, cta, tid, locals)?;
                match op {
                    BinaryOp::Or | BinaryOp::And => i64::from(y != 0),
                    BinaryOp::Eq => i64::from(x == y),
                    BinaryOp::Ne => i64::from(x != y),
                    BinaryOp::Lt => i64::from(x < y),
                    BinaryOp::Le => i64::from(x <= y),
                    BinaryOp::Gt => i64::from(x > y),
                    BinaryOp::Ge => i64::from(x >= y),
                    BinaryOp::BitOr => x | y,
                    BinaryOp::BitXor => x ^ y,
                    BinaryOp::BitAnd => x & y,
                    BinaryOp::Shl => {
                        if !(0..64).contains(&y) {
                            return Err(err("shift amount out of range"));
                        }
                        x.checked_shl(y as u32)
                            .filter(|r| r >> y == x)
                            .ok_or_else(overflow)?
                    }
                    BinaryOp::Shr => {
                        if !(0..64).contains(&y) {
                            return Err(err("shift amount out of range"));
                        }
                        x >> y
                    }
                    BinaryOp::Add => x.checked_add(y).ok_or_else(overflow)?,
                    BinaryOp::Sub => x.checked_sub(y).ok_or_else(overflow)?,
                    BinaryOp::Mul => x.checked_mul(y).ok_or_else(overflow)?,
                    BinaryOp::Div => {
                        if y == 0 {
                            return Err(err("division by zero"));
                        }
                        x.checked_div(y).ok_or_else(overflow)?
                    }
                    BinaryOp::Rem => {
                        if y == 0 {
                            return Err(err("remainder by zero"));
                        }
                        x.checked_rem(y).ok_or_else(overflow)?
                    }
                }
            }
        })
    }

    /// The initial state: every thread has run its local code up to its first visible
    /// operation (eager steps included). Not canonicalized. Also returns the findings of
    /// that first run, and whether it stopped (UB, model error or a bound).
    pub fn initial(&self) -> (State, Vec<MFinding>, Option<String>, bool) {
        let threads = self
            .threads
            .iter()
            .map(|ti| {
                Shared::new(Thread {
                    pc: 0,
                    mode: Mode::Ready,
                    locals: vec![0; self.kernels[ti.kernel as usize].code.slots as usize].into(),
                    tracks: Vec::new(),
                    acc: Vec::new(),
                    cp: Vec::new(),
                    cp_seq: 0,
                    cp_committed: 0,
                    bulk: Vec::new(),
                    bulk_committed: 0,
                    pipes: Vec::new(),
                    named_arrived: 0,
                    cluster_token: None,
                    aw: None,
                    leads: false,
                })
            })
            .collect();
        let mut bars = vec![
            Bar {
                valid: false,
                phase: 0,
                pending: 0,
                expected: 0,
                tx: 0,
                consumed: true,
                vis: 0,
                init_by: u32::MAX,
                quit_inval: false,
            };
            self.bar_names.len()
        ];
        let mut pipe_refs = Vec::new();
        // Block pipelines are made (and their barriers initialized) before the body runs.
        for (oi, l) in self.layouts.iter().enumerate() {
            if let Layout::Pipe { bar_base, .. } = l {
                let o = &self.program.objects[oi];
                if let ObjectKind::Pipeline(PipelineKind::Block {
                    stages,
                    producers,
                    consumers,
                }) = &o.kind
                {
                    for inst in 0..o.count() * self.nblocks {
                        let b = (bar_base + inst * 2 * stages) as usize;
                        for st in 0..*stages as usize {
                            for (j, count) in
                                [(st, *consumers), (st + *stages as usize, *producers)]
                            {
                                bars[b + j] = Bar {
                                    valid: true,
                                    phase: 0,
                                    pending: count as i32,
                                    expected: count as i32,
                                    tx: 0,
                                    consumed: true,
                                    vis: 3,
                                    init_by: u32::MAX,
                                    quit_inval: false,
                                };
                            }
                        }
                        let block_size =
                            self.kernels[self.blocks[(inst / o.count()) as usize].0 as usize].block;
                        // Unified: every thread both produces and consumes.
                        let users = if *producers == *consumers && *producers == block_size {
                            *producers
                        } else {
                            producers + consumers
                        };
                        pipe_refs.push(users);
                    }
                }
            }
        }
        let state = State {
            threads,
            bars,
            named: vec![Named::default(); self.nblocks as usize * 16],
            cluster_phase: vec![0; self.kernels.len()],
            released: vec![false; self.buf_names.len()],
            pipe_refs,
            events: Vec::new(),
        };
        let mut ex = exec::Exec::new(self, state);
        for t in 0..self.nthreads() {
            ex.advance(t);
            ex.run_worklist();
            if ex.stop || ex.bound.is_some() {
                break;
            }
        }
        ex.prune_kept();
        (ex.state, ex.found, ex.bound, ex.stop)
    }

    /// Canonical order of interchangeable threads; returns `perm[new] = old`.
    pub fn canon(&self, s: &mut State) -> Vec<u32> {
        if self.symmetry {
            symmetry::canonicalize(self, s)
        } else {
            (0..self.nthreads()).collect()
        }
    }

    /// Runs `action` (a thread below `nthreads`, else an async event) and, unless it stopped
    /// the path, what it woke; true when it did not stop the path (then the caller prunes the
    /// kept accesses, even if the woken work stopped it).
    fn act(&self, ex: &mut exec::Exec, action: u32) -> bool {
        if action < self.nthreads() {
            ex.thread_step(action);
        } else {
            ex.event_step((action - self.nthreads()) as usize);
        }
        if ex.stop {
            return false;
        }
        ex.run_worklist();
        true
    }

    /// Apply one action without canonicalizing. The kept accesses are pruned where the step
    /// could have changed them (`Exec::prune_kept_after`, the same result as pruning all of
    /// them, `s` being pruned as every state the model makes is): a full prune weighs every
    /// kept access of every thread, which in a real kernel's epilogue (512 threads keeping
    /// their fragment stores) cost seconds a state at the end of a long chain.
    pub fn step_raw(&self, s: &State, action: u32, found: &mut Vec<MFinding>) -> Step<State> {
        self.step_pruning(s, action, found, false)
    }

    /// [`Self::step_raw`], pruning every kept access of every thread after the step (the
    /// reference `checker/tests/walks.rs` compares the incremental prune with).
    pub fn step_raw_full_prune(
        &self,
        s: &State,
        action: u32,
        found: &mut Vec<MFinding>,
    ) -> Step<State> {
        self.step_pruning(s, action, found, true)
    }

    fn step_pruning(
        &self,
        s: &State,
        action: u32,
        found: &mut Vec<MFinding>,
        full: bool,
    ) -> Step<State> {
        let mut ex = exec::Exec::new(self, s.clone());
        if self.act(&mut ex, action) {
            if full {
                ex.prune_kept();
            } else {
                ex.prune_kept_after();
            }
        }
        found.append(&mut ex.found);
        if let Some(b) = ex.bound {
            return Step::Bound(b);
        }
        if ex.stop {
            return Step::Stop;
        }
        Step::Next(ex.state)
    }

    /// [`Self::step_raw`] on `s` itself, for a walk that keeps one state and no history: no
    /// copy of the state, and the kept accesses are pruned where the step could have changed
    /// them (`Exec::prune_kept_after`; `s` must be pruned, as every state the model makes is).
    /// Returns what the step changed. After `Stop` or `Bound` the state is what the step left
    /// half done: the path ends there.
    pub fn step_in_place(
        &self,
        s: &mut State,
        action: u32,
        found: &mut Vec<MFinding>,
    ) -> (Step<()>, exec::Touched) {
        self.step_in_place_with(s, action, found, None)
    }

    /// [`Self::step_in_place`] for a walk that keeps its index (`exec::WalkIndex`: witness sets, holders of publications) from
    /// step to step: every step of the walk must go through here with the same `index`.
    pub fn step_walk(
        &self,
        s: &mut State,
        action: u32,
        found: &mut Vec<MFinding>,
        index: &mut exec::WalkIndex,
    ) -> (Step<()>, exec::Touched) {
        self.step_in_place_with(s, action, found, Some(index))
    }

    fn step_in_place_with(
        &self,
        s: &mut State,
        action: u32,
        found: &mut Vec<MFinding>,
        index: Option<&mut exec::WalkIndex>,
    ) -> (Step<()>, exec::Touched) {
        let mut ex = exec::Exec::new(self, std::mem::take(s));
        match index {
            Some(index) => {
                ex.start_walk_step(index);
                let prune = self.act(&mut ex, action);
                ex.end_walk_step(index, prune);
            }
            None => {
                if self.act(&mut ex, action) {
                    ex.prune_kept_after();
                }
            }
        }
        found.append(&mut ex.found);
        *s = ex.state;
        let step = if let Some(b) = ex.bound {
            Step::Bound(b)
        } else if ex.stop {
            Step::Stop
        } else {
            Step::Next(())
        };
        (step, ex.touched)
    }
}

/// The model as seen by the explorer. The states it hands the explorer hold their thread
/// states interned ([`shared`]), and it counts the interned thread states they use.
pub struct Search<'m, 'p> {
    pub model: &'m PhaseModel<'p>,
    pub init: State,
    used: shared::UsedEntries<Thread>,
}

impl<'m, 'p> Search<'m, 'p> {
    pub fn new(model: &'m PhaseModel<'p>, init: State) -> Self {
        Search {
            model,
            init,
            used: Default::default(),
        }
    }

    /// `s` with every thread state interned: copying it then writes nothing that other
    /// workers read.
    fn interned(&self, mut s: State) -> State {
        s.threads = std::mem::take(&mut s.threads)
            .into_iter()
            .map(|t| t.interned(&self.used))
            .collect();
        s
    }
}

impl explore::Model for Search<'_, '_> {
    type State = State;
    type Finding = MFinding;
    type Key = (&'static str, Span);

    fn init_state(&self) -> State {
        self.interned(self.init.clone())
    }
    fn actions(&self, s: &State, out: &mut Vec<u32>) {
        exec::actions(self.model, s, out)
    }
    fn next(&self, s: &State, action: u32, found: &mut Vec<MFinding>) -> Step<State> {
        match self.model.step_raw(s, action, found) {
            Step::Next(mut n) => {
                self.model.canon(&mut n);
                Step::Next(self.interned(n))
            }
            other => other,
        }
    }
    fn check_state(&self, s: &State, actions: &[u32], found: &mut Vec<MFinding>) {
        race::check(self.model, s, found);
        exec::check_waits(self.model, s, found);
        if actions.is_empty() && s.threads.iter().any(|t| t.mode.live()) {
            stuck::deadlock(self.model, s, found);
        }
    }
    fn ample(
        &self,
        s: &State,
        actions: &[u32],
        history: explore::ReductionHistory,
    ) -> explore::Reduction {
        exec::ample(self.model, s, actions, history)
    }
    fn key(&self, f: &MFinding) -> Self::Key {
        (f.rule.code, f.span)
    }
    /// By default errors decide the verdict (a warning-level finding does not stop a search
    /// early); allowed findings never do, and `phasecheck test` waits for what it looks for
    /// (`crate::goal`).
    fn meets(&self, f: &MFinding) -> u64 {
        self.model
            .goal
            .meets(f.rule, f.span, f.rule.default_severity)
    }
    fn goals(&self) -> u64 {
        self.model.goal.all()
    }
    fn state_bytes(&self, s: &State) -> usize {
        s.approx_bytes()
    }
    fn shared_bytes(&self) -> u64 {
        self.used.bytes()
    }
}
