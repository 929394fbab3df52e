//! Structured IR -> flat per-kernel code with jumps.
//!
//! Local control flow (`let`, assignment, `if`, `for`, `while`, `role`) becomes plain
//! instructions that a thread runs eagerly inside the step of its next visible operation, so
//! local computation never creates interleavings. Every `for` gets a hidden slot for its end
//! bound and every `while` a hidden trip counter, numbered after the program's own locals.

use protocols::Span;
use protocols::ir::{Expr, ExprKind, Kernel, Op, Program, RoleId, Stmt, StmtKind};

/// Index of an instruction in a kernel's code.
pub type Pc = u32;

#[derive(Clone, Debug)]
pub enum Instr {
    /// `let` / assignment / `for` start: `slot = expr`.
    Set {
        slot: u32,
        value: Expr,
    },
    Jump(Pc),
    /// Jump to `target` when `cond` is zero.
    JumpIfZero {
        cond: Expr,
        target: Pc,
    },
    /// `for` test: jump to `exit` unless `var < end_slot`.
    ForTest {
        var: u32,
        end: u32,
        exit: Pc,
    },
    /// `for` step: `var += 1`, jump back to the test.
    ForNext {
        var: u32,
        test: Pc,
    },
    /// `while` test: jump to `exit` when `cond` is zero; otherwise count a trip in `trips`
    /// (bounded by `--max-loop-trips`).
    WhileTest {
        cond: Expr,
        trips: u32,
        exit: Pc,
        span: Span,
    },
    /// `elect { body }`: a warp-wide rendezvous; the elected lane continues at the next
    /// instruction, the others at `skip`.
    Elect {
        skip: Pc,
        span: Span,
    },
    /// A visible operation (one step of the model).
    Op {
        op: Op,
        span: Span,
    },
    Exit {
        span: Span,
    },
    /// End of the kernel body.
    End {
        span: Span,
    },
}

/// The code of one kernel.
#[derive(Clone, Debug)]
pub struct Code {
    pub instrs: Vec<Instr>,
    /// Local slots (the program's locals followed by hidden slots).
    pub slots: u32,
    /// For every instruction: the enclosing `if`/`role` conditions (condition, must be true),
    /// innermost last. Used to say which threads can reach an arrive (wait-for graphs).
    pub guards: Vec<Vec<(Expr, bool)>>,
    /// Role of each `role` body instruction (innermost), for naming.
    pub role_conds: Vec<(RoleId, Expr)>,
}

struct Compiler {
    instrs: Vec<Instr>,
    guards: Vec<Vec<(Expr, bool)>>,
    stack: Vec<(Expr, bool)>,
    next_slot: u32,
    role_conds: Vec<(RoleId, Expr)>,
}

impl Compiler {
    fn emit(&mut self, i: Instr) -> Pc {
        self.instrs.push(i);
        self.guards.push(self.stack.clone());
        (self.instrs.len() - 1) as Pc
    }
    fn here(&self) -> Pc {
        self.instrs.len() as Pc
    }
    fn patch(&mut self, at: Pc, to: Pc) {
        match &mut self.instrs[at as usize] {
            Instr::Jump(t) => *t = to,
            Instr::JumpIfZero { target, .. } => *target = to,
            Instr::ForTest { exit, .. } => *exit = to,
            Instr::WhileTest { exit, .. } => *exit = to,
            Instr::Elect { skip, .. } => *skip = to,
            _ => unreachable!("patching a non-jump"),
        }
    }
    fn block(&mut self, body: &[Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }
    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Let { local, value } | StmtKind::Assign { local, value } => {
                self.emit(Instr::Set {
                    slot: local.0,
                    value: value.clone(),
                });
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let j = self.emit(Instr::JumpIfZero {
                    cond: cond.clone(),
                    target: 0,
                });
                self.stack.push((cond.clone(), true));
                self.block(then_body);
                self.stack.pop();
                if else_body.is_empty() {
                    let end = self.here();
                    self.patch(j, end);
                } else {
                    let skip = self.emit(Instr::Jump(0));
                    let else_at = self.here();
                    self.patch(j, else_at);
                    self.stack.push((cond.clone(), false));
                    self.block(else_body);
                    self.stack.pop();
                    let end = self.here();
                    self.patch(skip, end);
                }
            }
            StmtKind::Role { role, cond, body } => {
                self.role_conds.push((*role, cond.clone()));
                let j = self.emit(Instr::JumpIfZero {
                    cond: cond.clone(),
                    target: 0,
                });
                self.stack.push((cond.clone(), true));
                self.block(body);
                self.stack.pop();
                let end = self.here();
                self.patch(j, end);
            }
            StmtKind::For {
                var,
                start,
                end,
                body,
            } => {
                let end_slot = self.next_slot;
                self.next_slot += 1;
                self.emit(Instr::Set {
                    slot: var.0,
                    value: start.clone(),
                });
                self.emit(Instr::Set {
                    slot: end_slot,
                    value: end.clone(),
                });
                let test = self.emit(Instr::ForTest {
                    var: var.0,
                    end: end_slot,
                    exit: 0,
                });
                self.block(body);
                self.emit(Instr::ForNext { var: var.0, test });
                let exit = self.here();
                self.patch(test, exit);
            }
            StmtKind::While { cond, body } => {
                let trips = self.next_slot;
                self.next_slot += 1;
                self.emit(Instr::Set {
                    slot: trips,
                    value: Expr {
                        kind: ExprKind::Int(0),
                        span: s.span,
                    },
                });
                let test = self.emit(Instr::WhileTest {
                    cond: cond.clone(),
                    trips,
                    exit: 0,
                    span: s.span,
                });
                self.block(body);
                self.emit(Instr::Jump(test));
                let exit = self.here();
                self.patch(test, exit);
            }
            StmtKind::Elect { body } => {
                let e = self.emit(Instr::Elect {
                    skip: 0,
                    span: s.span,
                });
                self.block(body);
                let end = self.here();
                self.patch(e, end);
            }
            StmtKind::Exit => {
                self.emit(Instr::Exit { span: s.span });
            }
            StmtKind::Op(op) => {
                self.emit(Instr::Op {
                    op: op.clone(),
                    span: s.span,
                });
            }
        }
    }
}

/// Compile one kernel.
pub fn compile(program: &Program, kernel: &Kernel) -> Code {
    let mut c = Compiler {
        instrs: Vec::new(),
        guards: Vec::new(),
        stack: Vec::new(),
        next_slot: program.locals.len() as u32,
        role_conds: Vec::new(),
    };
    c.block(&kernel.body);
    let end = Span::new(kernel.span.end, kernel.span.end);
    c.emit(Instr::End { span: end });
    Code {
        instrs: c.instrs,
        slots: c.next_slot,
        guards: c.guards,
        role_conds: c.role_conds,
    }
}

/// Does `e` mention `tid`, `lane` or `warp`?
pub fn uses_thread_id(e: &Expr) -> bool {
    use protocols::ir::Builtin;
    match &e.kind {
        ExprKind::Builtin(b) => matches!(b, Builtin::Tid | Builtin::Lane | Builtin::Warp),
        ExprKind::Int(_) | ExprKind::Param(_) | ExprKind::Local(_) => false,
        ExprKind::Unary(_, a) => uses_thread_id(a),
        ExprKind::Binary(_, a, b) | ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
            uses_thread_id(a) || uses_thread_id(b)
        }
    }
}

/// Does `e` mention a local variable?
pub fn uses_local(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Local(_) => true,
        ExprKind::Int(_) | ExprKind::Param(_) | ExprKind::Builtin(_) => false,
        ExprKind::Unary(_, a) => uses_local(a),
        ExprKind::Binary(_, a, b) | ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
            uses_local(a) || uses_local(b)
        }
    }
}

/// Per instruction: the local slots below 64 that some path from it may read before writing
/// them (bit per slot). A slot outside the set is dead there: no later step reads the value it
/// holds, so the state can forget it (`exec::drop_dead_locals`). Reads are every expression
/// of the instruction and the slots that `for`, `while` and token waits name; only `let` /
/// assignment, a `test_wait` result and an arrive's token write a slot. Slots from 64 on are
/// not tracked (never dropped).
pub fn live_locals(code: &Code) -> Vec<u64> {
    fn locals_of(e: &Expr, out: &mut u64) {
        match &e.kind {
            ExprKind::Local(l) if l.0 < 64 => *out |= 1 << l.0,
            ExprKind::Unary(_, a) => locals_of(a, out),
            ExprKind::Binary(_, a, b) | ExprKind::Min(a, b) | ExprKind::Max(a, b) => {
                locals_of(a, out);
                locals_of(b, out);
            }
            _ => {}
        }
    }
    let bit = |slot: u32| if slot < 64 { 1u64 << slot } else { 0 };
    let n = code.instrs.len();
    let mut uses = vec![0u64; n];
    let mut kills = vec![0u64; n];
    for (pc, i) in code.instrs.iter().enumerate() {
        for e in instr_exprs(i) {
            locals_of(e, &mut uses[pc]);
        }
        match i {
            Instr::Set { slot, .. } => kills[pc] = bit(*slot),
            Instr::ForTest { var, end, .. } => uses[pc] |= bit(*var) | bit(*end),
            Instr::ForNext { var, .. } => uses[pc] |= bit(*var),
            Instr::WhileTest { trips, .. } => uses[pc] |= bit(*trips),
            Instr::Op { op, .. } => match op {
                Op::WaitToken { token, .. } => uses[pc] |= bit(token.0),
                Op::TestWait { result, .. } => kills[pc] = bit(result.0),
                Op::Arrive { token: Some(l), .. } => kills[pc] = bit(l.0),
                _ => {}
            },
            _ => {}
        }
    }
    // Backward fixed point: live at pc = read here, or live after it and not written here.
    let mut live = vec![0u64; n];
    loop {
        let mut changed = false;
        for pc in (0..n).rev() {
            let out = successors(&code.instrs[pc], pc)
                .into_iter()
                .filter(|&q| q < n)
                .fold(0u64, |acc, q| acc | live[q]);
            let l = uses[pc] | (out & !kills[pc]);
            if l != live[pc] {
                live[pc] = l;
                changed = true;
            }
        }
        if !changed {
            return live;
        }
    }
}

/// Every expression of an instruction (for the symmetry analysis).
pub fn instr_exprs(i: &Instr) -> Vec<&Expr> {
    match i {
        Instr::Set { value, .. } => vec![value],
        Instr::JumpIfZero { cond, .. } | Instr::WhileTest { cond, .. } => vec![cond],
        Instr::Op { op, .. } => op_exprs(op),
        _ => Vec::new(),
    }
}

/// Every expression of an operation, object indices included.
pub fn op_exprs(op: &Op) -> Vec<&Expr> {
    use protocols::ir::ObjRef;
    fn r<'a>(o: &'a ObjRef, v: &mut Vec<&'a Expr>) {
        if let Some(i) = &o.index {
            v.push(i);
        }
        if let Some(c) = &o.cta {
            v.push(c);
        }
        // A byte range's offset: the symmetry analysis leaves out one whose thread part is a
        // term of its own (`symmetry.rs`, `split_off`) and must see every other.
        if let Some(b) = &o.bytes {
            v.push(&b.off);
        }
    }
    let mut v: Vec<&Expr> = Vec::new();
    match op {
        Op::Init { bar, count } => {
            r(bar, &mut v);
            v.push(count);
        }
        Op::Inval { bar }
        | Op::ArriveDrop { bar, .. }
        | Op::ArriveAndWait { bar }
        | Op::CpAsyncArrive { bar, .. } => r(bar, &mut v),
        Op::Arrive { bar, count, .. } => {
            r(bar, &mut v);
            if let Some(c) = count {
                v.push(c);
            }
        }
        Op::ArriveExpectTx { bar, bytes, .. }
        | Op::ExpectTx { bar, bytes }
        | Op::CompleteTx { bar, bytes } => {
            r(bar, &mut v);
            v.push(bytes);
        }
        Op::WaitParity { bar, parity, .. } | Op::TestWait { bar, parity, .. } => {
            r(bar, &mut v);
            v.push(parity);
        }
        Op::WaitToken { bar, .. } => r(bar, &mut v),
        Op::BarSync { id, count, .. } | Op::BarArrive { id, count, .. } => {
            v.push(id);
            if let Some(c) = count {
                v.push(c);
            }
        }
        Op::Read { buf } | Op::Write { buf, .. } | Op::Mma { buf } | Op::TmaStore { src: buf } => {
            r(buf, &mut v)
        }
        Op::CpAsync { dst } => r(dst, &mut v),
        Op::Tma {
            dst,
            bar,
            bytes,
            multicast,
        } => {
            r(dst, &mut v);
            r(bar, &mut v);
            v.push(bytes);
            if let Some(m) = multicast {
                v.push(m);
            }
        }
        Op::BulkWaitRead { n } | Op::WaitGroup { n } => v.push(n),
        Op::ProducerAcquire { pipe }
        | Op::ProducerCommit { pipe }
        | Op::ConsumerWait { pipe }
        | Op::ConsumerRelease { pipe }
        | Op::Quit { pipe } => r(pipe, &mut v),
        Op::ConsumerWaitPrior { pipe, n } => {
            r(pipe, &mut v);
            v.push(n);
        }
        Op::MemcpyAsync { dst, pipe } => {
            r(dst, &mut v);
            r(pipe, &mut v);
        }
        Op::Store { global }
        | Op::Load { global }
        | Op::StoreRelease { global, .. }
        | Op::LoadAcquire { global, .. } => r(global, &mut v),
        Op::SyncThreads
        | Op::SyncWarp
        | Op::ClusterSync
        | Op::ClusterArrive
        | Op::ClusterWait
        | Op::FenceMbarrierInit
        | Op::FenceProxyAsync
        | Op::BulkCommit
        | Op::CommitGroup
        | Op::Compute
        | Op::Fence { .. } => {}
    }
    v
}

impl Instr {
    /// The source span of the statement this instruction came from (empty for jumps).
    pub fn span(&self) -> Span {
        match self {
            Instr::Set { value, .. } => value.span,
            Instr::JumpIfZero { cond, .. } => cond.span,
            Instr::WhileTest { span, .. }
            | Instr::Elect { span, .. }
            | Instr::Op { span, .. }
            | Instr::Exit { span }
            | Instr::End { span } => *span,
            Instr::Jump(_) | Instr::ForTest { .. } | Instr::ForNext { .. } => Span::default(),
        }
    }
}

/// What the code reachable from each instruction may do, per object (bitsets over object ids).
/// Used by the partial-order reduction to prove a step independent of everything that any
/// other thread can still do.
#[derive(Clone, Debug, Default)]
pub struct Reach {
    /// Objects written (write, store, cp_async, memcpy_async, tma destination).
    pub writes: Vec<Vec<u64>>,
    /// Objects read (read, load, mma, tma_store source).
    pub reads: Vec<Vec<u64>>,
    /// Barriers and pipelines signalled, initialized or invalidated.
    pub signals: Vec<Vec<u64>>,
    /// Barriers and pipelines waited on or tested.
    pub waits: Vec<Vec<u64>>,
    /// Some reachable operation addresses a peer block (`@`) or multicasts.
    pub remote: Vec<bool>,
}

fn set(bits: &mut [u64], i: u32) {
    bits[(i / 64) as usize] |= 1 << (i % 64);
}

fn bit_set(bits: &[u64], i: u32) -> bool {
    bits[(i / 64) as usize] & (1 << (i % 64)) != 0
}

/// May the code touch object `obj` of a block: `same_block` says whether that block is the
/// thread's own (then local references count too).
pub fn has(bits: &[u64], obj: u32, same_block: bool) -> bool {
    bit_set(bits, 2 * obj + 1) || (same_block && bit_set(bits, 2 * obj))
}

pub fn successors(i: &Instr, pc: usize) -> Vec<usize> {
    match i {
        Instr::Jump(t) => vec![*t as usize],
        Instr::JumpIfZero { target, .. } => vec![pc + 1, *target as usize],
        Instr::ForTest { exit, .. } | Instr::WhileTest { exit, .. } => vec![pc + 1, *exit as usize],
        Instr::ForNext { test, .. } => vec![*test as usize],
        Instr::Elect { skip, .. } => vec![pc + 1, *skip as usize],
        Instr::Exit { .. } | Instr::End { .. } => Vec::new(),
        Instr::Set { .. } | Instr::Op { .. } => vec![pc + 1],
    }
}

pub fn reach(code: &Code, nobjects: usize) -> Reach {
    // Bit 2*obj: the object in the thread's own block; bit 2*obj+1: in any block (`@`,
    // multicast).
    let words = (2 * nobjects).div_ceil(64).max(1);
    let n = code.instrs.len();
    let mut own_w = vec![vec![0u64; words]; n];
    let mut own_r = vec![vec![0u64; words]; n];
    let mut own_s = vec![vec![0u64; words]; n];
    let mut own_wait = vec![vec![0u64; words]; n];
    let mut own_remote = vec![false; n];
    for (pc, i) in code.instrs.iter().enumerate() {
        let Instr::Op { op, .. } = i else { continue };
        let far = op.object_refs().iter().any(|r| r.cta.is_some())
            || matches!(
                op,
                Op::Tma {
                    multicast: Some(_),
                    ..
                }
            );
        if far {
            own_remote[pc] = true;
        }
        let bit = |o: protocols::ir::ObjectId| 2 * o.0 + u32::from(far);
        let w = &mut own_w[pc];
        let r = &mut own_r[pc];
        let s = &mut own_s[pc];
        match op {
            Op::WaitParity { bar, .. }
            | Op::WaitToken { bar, .. }
            | Op::TestWait { bar, .. }
            | Op::ArriveAndWait { bar } => set(&mut own_wait[pc], bit(bar.object)),
            Op::ProducerAcquire { pipe }
            | Op::ConsumerWait { pipe }
            | Op::ConsumerWaitPrior { pipe, .. } => set(&mut own_wait[pc], bit(pipe.object)),
            _ => {}
        }
        match op {
            Op::Write { buf, .. } | Op::Store { global: buf } | Op::CpAsync { dst: buf } => {
                set(w, bit(buf.object))
            }
            Op::MemcpyAsync { dst, pipe } => {
                set(w, bit(dst.object));
                set(s, bit(pipe.object));
            }
            Op::Tma { dst, bar, .. } => {
                set(w, bit(dst.object));
                set(s, bit(bar.object));
            }
            Op::Read { buf }
            | Op::Load { global: buf }
            | Op::Mma { buf }
            | Op::TmaStore { src: buf } => set(r, bit(buf.object)),
            // A flag's release-store is a write of it and a signal; its acquire-load a read
            // (the flag's own accesses take part in the race check where they can race).
            Op::StoreRelease { global, .. } => {
                set(s, bit(global.object));
                set(w, bit(global.object));
            }
            Op::LoadAcquire { global, .. } => set(r, bit(global.object)),
            Op::Init { bar, .. }
            | Op::Inval { bar }
            | Op::Arrive { bar, .. }
            | Op::ArriveDrop { bar, .. }
            | Op::ArriveExpectTx { bar, .. }
            | Op::ExpectTx { bar, .. }
            | Op::CompleteTx { bar, .. }
            | Op::ArriveAndWait { bar }
            | Op::CpAsyncArrive { bar, .. } => set(s, bit(bar.object)),
            Op::ProducerCommit { pipe }
            | Op::ConsumerRelease { pipe }
            | Op::Quit { pipe }
            | Op::ProducerAcquire { pipe }
            | Op::ConsumerWait { pipe }
            | Op::ConsumerWaitPrior { pipe, .. } => set(s, bit(pipe.object)),
            _ => {}
        }
    }
    // Backward closure over the control-flow graph, to a fixed point.
    let mut writes = own_w.clone();
    let mut reads = own_r.clone();
    let mut signals = own_s.clone();
    let mut waits = own_wait;
    let mut remote = own_remote.clone();
    let mut changed = true;
    while changed {
        changed = false;
        for pc in (0..n).rev() {
            for succ in successors(&code.instrs[pc], pc) {
                if succ >= n {
                    continue;
                }
                for dst in [&mut writes, &mut reads, &mut signals, &mut waits] {
                    let (a, b) = if pc < succ {
                        let (x, y) = dst.split_at_mut(succ);
                        (&mut x[pc], &y[0])
                    } else if pc > succ {
                        let (x, y) = dst.split_at_mut(pc);
                        (&mut y[0], &x[succ])
                    } else {
                        continue;
                    };
                    for (wa, wb) in a.iter_mut().zip(b.iter()) {
                        let nv = *wa | *wb;
                        if nv != *wa {
                            *wa = nv;
                            changed = true;
                        }
                    }
                }
                if remote[succ] && !remote[pc] {
                    remote[pc] = true;
                    changed = true;
                }
            }
        }
    }
    Reach {
        writes,
        reads,
        signals,
        waits,
        remote,
    }
}
