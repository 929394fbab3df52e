//! The concrete per-thread executor.
//!
//! Every thread of the cluster runs the kernel's PTX on its own with concrete integer and
//! predicate values: its special registers (`%tid`, `%ctaid`, `%cluster_ctarank`, ...), the
//! kernel parameters given with `--arg`, and the addresses of the shared symbols. Everything
//! else (global memory, clocks, floating point) is unknown; a branch, a guard or an address that
//! depends on an unknown value is an error naming where the value came from. The thread keeps
//! only its synchronization and shared-memory events ([`Trace`]).
//!
//! Threads never wait for each other here: a barrier wait is taken as passed. That is sound
//! for the extraction because a wait that passes changes nothing a thread can compute (its
//! result is only "passed"). A `try_wait`/`test_wait` is accepted as a blocking wait only when
//! every way the thread can go on from its *false* result leads back to a wait on the same
//! barrier and phase without doing anything else (the wait loop), or when it starts a poll of
//! several barriers that ends only once all of them are seen complete (`poll.rs`, with both
//! outcomes of the poll's first tests in the protocol); any other use is an error.
//!
//! Warp collectives (`shfl.sync`, `vote.sync`, `elect.sync`, `match.sync`, `redux.sync`,
//! `activemask`, `bar.warp.sync`) need the other lanes' values: the lanes of a warp run until
//! each has finished or stopped at a collective, then the collectives whose lanes are all there
//! are computed together.

use crate::Error;
use crate::events::{CopyBytes, Ev, Event, Range, SAddr, Trace};
use crate::mem::{Mem, Op, Resolved};
use crate::parse::{Function, Instr, Module, Operand, Space};
use crate::value::*;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};

mod join;
mod poll;

pub struct Config {
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    pub cluster: u32,
    /// Kernel parameter values: (parameter index, byte offset) -> value.
    pub params: HashMap<(u32, u64), i64>,
    /// A captured launch's bytes of every parameter (`--launch`), read where `params` has no
    /// value.
    pub param_bytes: HashMap<u32, Vec<u8>>,
    /// Bytes one copy through the tensor map at (parameter index, byte offset) moves: the
    /// `--arg`s (`params`) over the captured launch's decoded maps.
    pub map_bytes: HashMap<(u32, u64), i64>,
    /// `--assume LINE=VALUE`: the value every unknown produced at that PTX line takes.
    pub assume: HashMap<u32, i64>,
    /// Instructions one thread may run before the run counts as endless.
    pub max_steps: u64,
}

impl Config {
    /// The `bits`-wide little-endian value at byte `at` of parameter `index` in the captured
    /// launch's bytes, if they cover it.
    fn param_value(&self, index: u32, at: u64, bits: u32) -> Option<u64> {
        let bytes = self.param_bytes.get(&index)?;
        let n = (bits / 8).clamp(1, 8) as usize;
        let at = usize::try_from(at).ok()?;
        let b = bytes.get(at..at.checked_add(n)?)?;
        Some(b.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64))
    }
}

/// Where a shared or local symbol lies in its window.
#[derive(Clone, Debug)]
pub struct Placed {
    pub name: String,
    pub base: u64,
    /// Bytes (dynamic shared memory: up to the end of the window).
    pub size: u64,
    pub line: u32,
}

pub struct Exec<'a> {
    f: &'a Function,
    cfg: &'a Config,
    pub whys: Vec<Why>,
    why_at: HashMap<(u32, u8), u32>,
    param_why_at: HashMap<(u32, u8, u64), u32>,
    pub shared: Vec<Placed>,
    shared_by_name: HashMap<String, u64>,
    local_by_name: HashMap<String, u64>,
    param_by_name: HashMap<String, u32>,
    global_by_name: HashMap<String, u64>,
    nthreads: u32,
    /// Shared-memory values ordered by block-wide barriers (`mem.rs`).
    mem: RefCell<Mem>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum St {
    Run,
    Coll,
    /// Passed a block-wide barrier: waits until every thread of the block has (`mem.rs`).
    Bar,
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum WaitOn {
    Parity(u64),
    Token(u64),
}

#[derive(Clone, Debug)]
enum Probe {
    /// Is this a wait loop: does every path from the wait's false result come back to a wait
    /// on `bar` and `on`?
    Loop { bar: SAddr, on: WaitOn },
    /// Following the paths of a poll of several barriers (`poll.rs`): every `try_wait` and
    /// `test_wait` stops the step with [`Flow::Test`], and the poll decides its result.
    Poll,
}

/// A thread's state at a wait of a wait loop: pc, registers, local memory, carry. A path of
/// the loop ends when it is at a wait in a state that some path was in before (the loop goes
/// round, or another path goes on from there); a wait it meets in a new state (a counter of
/// tries) is followed further, so that a loop that gives up after a number of tries is seen to
/// give up. Local memory is sorted by address.
type LoopState = (usize, Vec<Val>, Vec<(u64, (Val, u32))>, u64);

/// The state of `t` at `pc` (see [`LoopState`]).
fn loop_state(pc: usize, t: &Th) -> LoopState {
    let mut local: Vec<(u64, (Val, u32))> = t.local.iter().map(|(k, v)| (*k, *v)).collect();
    local.sort_unstable_by_key(|e| e.0);
    (pc, t.regs.clone(), local, t.carry)
}

#[derive(Clone)]
struct Th {
    rank: u32,
    tid: u32,
    regs: Vec<Val>,
    pc: usize,
    carry: u64,
    local: HashMap<u64, (Val, u32)>,
    events: Vec<Event>,
    st: St,
    steps: u64,
    probe: Option<Probe>,
    /// Block-wide barriers passed.
    epoch: u32,
}

enum Flow {
    Next,
    Jump(usize),
    Exit,
    /// Stopped at a warp collective (pc unchanged).
    Coll,
    /// Probe mode: reached a wait on the probed barrier and phase at this pc.
    ProbeHit(usize),
    /// Passed a block-wide barrier (`__syncthreads`, `barrier.sync N` without a count).
    Block,
    /// Probe mode of a poll: a `try_wait`/`test_wait` (pc unchanged, result not set).
    Test {
        bar: SAddr,
        on: WaitOn,
        cluster_scope: bool,
    },
}

/// Why a probe path fails (not an error of the kernel: the wait is not a wait loop).
struct ProbeFail(String);

enum StepErr {
    Err(Error),
    Probe(ProbeFail),
}

impl From<Error> for StepErr {
    fn from(e: Error) -> Self {
        StepErr::Err(e)
    }
}

type R<T> = Result<T, StepErr>;

const WHY_GLOBAL: u8 = 0;
const WHY_SHARED: u8 = 1;
const WHY_OP: u8 = 2;
const WHY_FLOAT: u8 = 3;
const WHY_SPECIAL: u8 = 4;
const WHY_PARAM: u8 = 5;
const WHY_COLL: u8 = 6;
/// A register written on one way only of a branch whose condition is unknown (`join.rs`).
const WHY_JOIN: u8 = 7;

/// Opcodes with no effect that matters here (and no destination, or one set to unknown).
const IGNORED: [&str; 11] = [
    "nanosleep",
    "prefetch",
    "prefetchu",
    "pmevent",
    "griddepcontrol",
    "setmaxnreg",
    "applypriority",
    "discard",
    "membar",
    "tensormap",
    "createpolicy",
];

/// Texture and surface instructions: their memory is global (not modelled), their `[tex,
/// {coords}]` operands are no shared addresses.
const TEXTURE: [&str; 8] = [
    "tex", "tld4", "txq", "suld", "sust", "sured", "suq", "istypep",
];

/// Whether an instruction that no handler of `step` models touches what the protocol is made
/// of: it names a shared state space, an mbarrier or the async proxy (`.async`, `.bulk`), or
/// it takes a memory address that is not in a space the executor leaves out (global, const,
/// local, param). Such an instruction is an error naming its line, never skipped: leaving
/// out a WGMMA that the front end did not recognise, say, would make every race with its
/// reads impossible to find. The reason, for the message.
fn unmodelled_touch(ins: &Instr) -> Option<&'static str> {
    let base = ins.base();
    if matches!(base, "cvta" | "isspacep" | "mapa" | "getctarank") {
        return None; // address arithmetic, the ALU's
    }
    let parts = &ins.parts[1..];
    if parts.iter().any(|p| p.starts_with("shared")) {
        return Some("names shared memory");
    }
    if parts.iter().any(|p| p.starts_with("mbarrier")) {
        return Some("acts on an mbarrier");
    }
    if parts
        .iter()
        .any(|p| p == "async" || p == "bulk" || p.starts_with("async::"))
    {
        return Some("runs in the async proxy");
    }
    let hint = matches!(
        base,
        "prefetch" | "prefetchu" | "applypriority" | "discard" | "createpolicy"
    );
    let elsewhere = parts.iter().any(|p| {
        matches!(
            p.split("::").next().unwrap_or(""),
            "global" | "const" | "local" | "param"
        )
    });
    let address = ins
        .operands
        .iter()
        .any(|o| matches!(o, Operand::Addr { .. } | Operand::TensorAddr { .. }));
    if address && !hint && !elsewhere && !TEXTURE.contains(&base) {
        return Some("takes a memory address that may be shared memory");
    }
    None
}

impl<'a> Exec<'a> {
    pub fn new(m: &'a Module, f: &'a Function, cfg: &'a Config) -> Result<Self, Error> {
        let nthreads = cfg.block[0] * cfg.block[1] * cfg.block[2];
        let mut shared = Vec::new();
        let mut shared_by_name = HashMap::new();
        let mut next = SHARED_START;
        let mut dynamic = Vec::new();
        for s in m.symbols.iter().chain(f.symbols.iter()) {
            if s.space != Space::Shared {
                continue;
            }
            let Some(size) = s.size else {
                dynamic.push(s);
                continue;
            };
            let align = s.align.max(1024);
            next = next.div_ceil(align) * align;
            shared.push(Placed {
                name: s.name.clone(),
                base: next,
                size,
                line: s.line,
            });
            shared_by_name.insert(s.name.clone(), next);
            next += size.max(1);
        }
        // Dynamic shared memory starts after the static symbols (every `extern .shared` names
        // the same memory).
        let dyn_base = next.div_ceil(1024) * 1024;
        for s in dynamic {
            shared.push(Placed {
                name: s.name.clone(),
                base: dyn_base,
                size: OFF_MASK - dyn_base,
                line: s.line,
            });
            shared_by_name.insert(s.name.clone(), dyn_base);
        }
        let mut local_by_name = HashMap::new();
        let mut lnext = LOCAL_START;
        for s in f.symbols.iter().filter(|s| s.space == Space::Local) {
            let align = s.align.max(16);
            lnext = lnext.div_ceil(align) * align;
            local_by_name.insert(s.name.clone(), lnext);
            lnext += s.size.unwrap_or(8).max(8);
        }
        let param_by_name = f
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.clone(), i as u32))
            .collect();
        let global_by_name = m
            .symbols
            .iter()
            .chain(f.symbols.iter())
            .filter(|s| matches!(s.space, Space::Global | Space::Const))
            .enumerate()
            .map(|(i, s)| (s.name.clone(), GEN_GLOBAL_SYM + ((i as u64) << 32)))
            .collect();
        Ok(Exec {
            f,
            cfg,
            whys: Vec::new(),
            why_at: HashMap::new(),
            param_why_at: HashMap::new(),
            shared,
            shared_by_name,
            local_by_name,
            param_by_name,
            global_by_name,
            nthreads,
            mem: RefCell::new(Mem::default()),
        })
    }

    /// Run every thread of every block of the cluster. Again when a value read from shared
    /// memory did not hold (`mem.rs`): that load is unknown the next time.
    pub fn run_all(&mut self) -> Result<Vec<Trace>, Error> {
        loop {
            self.whys.clear();
            self.why_at.clear();
            self.param_why_at.clear();
            self.mem.get_mut().reset();
            let out = self.run_blocks()?;
            if !self.mem.get_mut().recheck() {
                return Ok(out);
            }
        }
    }

    /// The threads of a block run in epochs: each runs until it has finished or passed its
    /// next block-wide barrier, and when all have, those that wait there go on.
    fn run_blocks(&mut self) -> Result<Vec<Trace>, Error> {
        let mut out = Vec::new();
        let nwarps = self.nthreads.div_ceil(32);
        for rank in 0..self.cfg.cluster {
            let mut warps: Vec<Vec<Th>> = (0..nwarps)
                .map(|w| {
                    (w * 32..((w + 1) * 32).min(self.nthreads))
                        .map(|tid| Th {
                            rank,
                            tid,
                            regs: vec![Val::K(0); self.f.regs.len()],
                            pc: 0,
                            carry: 0,
                            local: HashMap::new(),
                            events: Vec::new(),
                            st: St::Run,
                            steps: 0,
                            probe: None,
                            epoch: 0,
                        })
                        .collect()
                })
                .collect();
            loop {
                for ths in warps.iter_mut() {
                    loop {
                        for th in ths.iter_mut() {
                            if th.st == St::Run {
                                self.run(th)?;
                            }
                        }
                        if ths.iter().all(|t| matches!(t.st, St::Done | St::Bar)) {
                            break;
                        }
                        self.resolve_collectives(ths)?;
                    }
                }
                let mut waiting = false;
                for th in warps.iter_mut().flatten().filter(|t| t.st == St::Bar) {
                    th.st = St::Run;
                    th.epoch += 1;
                    waiting = true;
                }
                if !waiting {
                    break;
                }
            }
            for th in warps.into_iter().flatten() {
                out.push(Trace {
                    rank: th.rank,
                    tid: th.tid,
                    events: th.events,
                });
            }
        }
        Ok(out)
    }

    fn instr(&self, pc: usize) -> &'a Instr {
        &self.f.instrs[pc]
    }

    fn err(&self, ins: &Instr, message: String, help: Option<String>) -> Error {
        Error {
            message,
            line: Some(ins.line),
            src: ins.src.map(Box::new),
            help,
        }
    }

    /// An unknown produced by instruction `ins` (interned per line and kind).
    fn why(&mut self, ins: &Instr, kind: u8, what: impl FnOnce() -> String) -> Val {
        if let Some(&v) = self.cfg.assume.get(&ins.line) {
            return Val::K(v as u64);
        }
        let key = (ins.line, kind);
        if let Some(&i) = self.why_at.get(&key) {
            return Val::U(i);
        }
        let i = self.whys.len() as u32;
        let fix = match kind {
            WHY_GLOBAL | WHY_SHARED | WHY_SPECIAL | WHY_OP | WHY_COLL | WHY_JOIN => {
                Some(format!("--assume {}=VALUE", ins.line))
            }
            // The register's bits: a float is given by its bit pattern.
            WHY_FLOAT => Some(format!("--assume {}=BITS", ins.line)),
            _ => None,
        };
        self.whys.push(Why {
            what: what(),
            line: ins.line,
            fix,
        });
        self.why_at.insert(key, i);
        Val::U(i)
    }

    fn param_why(&mut self, ins: &Instr, index: u32, off: u64) -> Val {
        let key = (ins.line, WHY_PARAM, off);
        if let Some(&i) = self.param_why_at.get(&key) {
            return Val::U(i);
        }
        let name = self
            .f
            .params
            .get(index as usize)
            .map(|p| short_param(&p.name))
            .unwrap_or_default();
        let at = if off == 0 {
            String::new()
        } else {
            format!(" at byte {off}")
        };
        let plus = if off == 0 {
            String::new()
        } else {
            format!("+{off}")
        };
        let i = self.whys.len() as u32;
        self.whys.push(Why {
            what: format!("kernel parameter {index} (`{name}`){at}, which no --arg gives"),
            line: ins.line,
            fix: Some(format!("--arg {index}{plus}=VALUE")),
        });
        self.param_why_at.insert(key, i);
        Val::U(i)
    }

    /// The error for an unknown value where a known one is needed.
    fn unknown(&self, ins: &Instr, role: &str, v: Val) -> Error {
        let Val::U(i) = v else {
            unreachable!("only unknowns")
        };
        let why = &self.whys[i as usize];
        let from = if why.line == ins.line {
            String::new()
        } else {
            format!(" (PTX line {})", why.line)
        };
        Error {
            message: format!(
                "{role} depends on a value phasecheck cannot know: {}{from}",
                why.what
            ),
            line: Some(ins.line),
            src: ins.src.map(Box::new),
            help: why.fix.as_ref().map(|f| {
                format!(
                    "give the value with `{f}` (phasecheck never guesses a value a branch or an \
                     address depends on){}",
                    if f.ends_with("=BITS") {
                        "; a float is given by its bit pattern as an integer (1 is the least \
                         positive float, 1065353216 is 1.0)"
                    } else {
                        ""
                    }
                )
            }),
        }
    }

    // ---- the run loop ----------------------------------------------------------------------

    fn run(&mut self, th: &mut Th) -> Result<(), Error> {
        loop {
            match self.step_guarded(th) {
                Ok(Flow::Next) => th.pc += 1,
                Ok(Flow::Jump(t)) => th.pc = t,
                Ok(Flow::Exit) => {
                    th.st = St::Done;
                    return Ok(());
                }
                Ok(Flow::Coll) => {
                    th.st = St::Coll;
                    return Ok(());
                }
                Ok(Flow::Block) => {
                    th.pc += 1;
                    th.st = St::Bar;
                    return Ok(());
                }
                Ok(Flow::ProbeHit(_) | Flow::Test { .. }) => unreachable!("not probing"),
                Err(StepErr::Err(e)) => return Err(e),
                Err(StepErr::Probe(_)) => unreachable!("not probing"),
            }
        }
    }

    fn step_guarded(&mut self, th: &mut Th) -> R<Flow> {
        let flow = self.step_unconverged(th)?;
        // A `.sync.aligned` instruction that is not a barrier of its own (`bar.sync`,
        // `barrier.cluster.*.aligned`) nor a collective computed with the other lanes
        // (`converged.rs` has the collectives' mark): the lane ran it together with its warp.
        if matches!(flow, Flow::Next) && th.probe.is_none() && th.pc < self.f.instrs.len() {
            let ins = self.instr(th.pc);
            if ins.has("sync")
                && ins.has("aligned")
                && !matches!(ins.base(), "bar" | "barrier")
                && ins
                    .guard
                    .is_none_or(|(p, neg)| th.regs[p as usize] == Val::K((!neg) as u64))
            {
                self.event(th, Ev::Converged)?;
            }
        }
        Ok(flow)
    }

    fn step_unconverged(&mut self, th: &mut Th) -> R<Flow> {
        if th.pc >= self.f.instrs.len() {
            return Ok(Flow::Exit);
        }
        th.steps += 1;
        let ins = self.instr(th.pc);
        if th.steps > self.cfg.max_steps && th.probe.is_none() {
            return Err(self
                .err(
                    ins,
                    format!(
                        "thread {} of block {} ran {} instructions without finishing (an endless \
                         loop?)",
                        th.tid, th.rank, self.cfg.max_steps
                    ),
                    Some("the loop it is in runs on a value the executor knows: check the --arg values".into()),
                )
                .into());
        }
        if let Some((p, neg)) = ins.guard {
            match th.regs[p as usize] {
                Val::K(v) => {
                    if (v != 0) == neg {
                        return Ok(Flow::Next);
                    }
                }
                u => {
                    if th.probe.is_none()
                        && let Some(flow) = self.join_register_only_arm(th, ins)
                    {
                        return Ok(flow);
                    }
                    let what = if ins.base() == "bra" {
                        "this branch"
                    } else {
                        "the guard of this instruction"
                    };
                    return Err(self.unknown(ins, what, u).into());
                }
            }
        }
        self.step(th, ins)
    }

    fn get(&mut self, th: &Th, ins: &Instr, op: &Operand, bits: u32) -> Val {
        match op {
            Operand::Reg(r) => match th.regs[*r as usize] {
                Val::K(v) => Val::K(v & mask(bits)),
                u => u,
            },
            Operand::Imm(v) => Val::K(*v as u64 & mask(bits)),
            Operand::Float => self.why(ins, WHY_FLOAT, || "a floating-point value".into()),
            Operand::Special(s) => self.special(th, ins, s),
            Operand::Sym(s) => self.sym_addr(ins, s),
            Operand::Not(inner) => match self.get(th, ins, inner, 1) {
                Val::K(v) => Val::K((v == 0) as u64),
                u => u,
            },
            Operand::Addr { base, offset } => {
                let b = match base {
                    Some(b) => self.get(th, ins, b, 64),
                    None => Val::K(0),
                };
                match b {
                    Val::K(v) => Val::K(v.wrapping_add(*offset as u64)),
                    u => u,
                }
            }
            _ => self.why(ins, WHY_OP, || format!("an operand of `{}`", ins.text)),
        }
    }

    fn sym_addr(&mut self, ins: &Instr, s: &str) -> Val {
        if let Some(&b) = self.shared_by_name.get(s) {
            return Val::K(b);
        }
        if let Some(&b) = self.local_by_name.get(s) {
            return Val::K(b);
        }
        if let Some(&i) = self.param_by_name.get(s) {
            return Val::K(GEN_PARAM + ((i as u64) << PARAM_SHIFT));
        }
        if let Some(&g) = self.global_by_name.get(s) {
            return Val::K(g);
        }
        self.why(ins, WHY_OP, || format!("the address of `{s}`"))
    }

    fn special(&mut self, th: &Th, ins: &Instr, s: &str) -> Val {
        let [bx, by, bz] = self.cfg.block;
        let t = th.tid;
        let lane = t % 32;
        let v = match s {
            "%tid.x" => t % bx,
            "%tid.y" => (t / bx) % by,
            "%tid.z" => t / (bx * by),
            "%ntid.x" => bx,
            "%ntid.y" => by,
            "%ntid.z" => bz,
            "%laneid" => lane,
            "%warpid" => t / 32,
            "%nwarpid" => self.nthreads.div_ceil(32),
            "%ctaid.x" | "%cluster_ctaid.x" | "%cluster_ctarank" => th.rank,
            "%ctaid.y" | "%ctaid.z" | "%cluster_ctaid.y" | "%cluster_ctaid.z" => 0,
            "%nctaid.x" | "%cluster_nctaid.x" | "%cluster_nctarank" => self.cfg.cluster,
            "%nctaid.y" | "%nctaid.z" | "%cluster_nctaid.y" | "%cluster_nctaid.z" => 1,
            "%clusterid.x" | "%clusterid.y" | "%clusterid.z" | "%is_explicit_cluster" => 0,
            "%nclusterid.x" | "%nclusterid.y" | "%nclusterid.z" => 1,
            "%lanemask_eq" => 1 << lane,
            "%lanemask_lt" => (1u32 << lane) - 1,
            "%lanemask_le" => ((1u64 << (lane + 1)) - 1) as u32,
            "%lanemask_gt" => !(((1u64 << (lane + 1)) - 1) as u32),
            "%lanemask_ge" => !((1u32 << lane) - 1),
            _ => {
                let name = s.to_string();
                return self.why(ins, WHY_SPECIAL, || {
                    format!("the special register `{name}` (not modelled)")
                });
            }
        };
        Val::K(v as u64)
    }

    fn set(&mut self, th: &mut Th, op: &Operand, v: Val, bits: u32) {
        match op {
            Operand::Reg(r) => {
                th.regs[*r as usize] = match v {
                    Val::K(x) => Val::K(x & mask(bits)),
                    u => u,
                }
            }
            Operand::Pair(a, b) => {
                // `d|p` for setp: handled by the instructions that have it.
                self.set(th, a, v, bits);
                let _ = b;
            }
            Operand::Vector(items) => {
                for it in items {
                    self.set(th, it, v, bits);
                }
            }
            _ => {}
        }
    }

    /// Every destination of an instruction the executor does not model becomes unknown.
    fn clobber(&mut self, th: &mut Th, ins: &Instr, kind: u8) {
        let Some(d) = ins.operands.first() else {
            return;
        };
        let text = ins.text.clone();
        let u = self.why(ins, kind, || match kind {
            WHY_FLOAT => "a floating-point value".into(),
            _ => format!("the result of `{text}` (not modelled)"),
        });
        match d {
            Operand::Pair(a, b) => {
                self.set(th, a, u, 64);
                self.set(th, b, u, 64);
            }
            d => self.set(th, d, u, 64),
        }
    }

    fn ty(ins: &Instr) -> Option<Ty> {
        ins.parts.iter().rev().find_map(|p| ty_of(p))
    }

    fn addr(&mut self, th: &Th, ins: &Instr, idx: usize) -> R<Val> {
        let op = ins
            .operands
            .get(idx)
            .ok_or_else(|| StepErr::Err(self.err(ins, format!("missing operand {idx}"), None)))?;
        Ok(self.get(th, ins, op, 64))
    }

    /// A shared address operand of a synchronization instruction (`.shared::cta`,
    /// `.shared::cluster` or generic).
    fn shared_addr(&mut self, th: &Th, ins: &Instr, idx: usize, what: &str) -> R<SAddr> {
        let v = self.addr(th, ins, idx)?;
        let Val::K(v) = v else {
            return Err(self
                .unknown(ins, &format!("the address of {what}"), v)
                .into());
        };
        let generic_form = !ins.parts.iter().any(|p| p.starts_with("shared"));
        let place = if generic_form {
            generic(v)
        } else {
            shared_window(v)
        };
        match place {
            Place::Shared { rank, off } => {
                if !(SHARED_START..OFF_MASK).contains(&off) {
                    return Err(self
                        .err(
                            ins,
                            format!("{what} is at {v:#x}, which is not in shared memory"),
                            None,
                        )
                        .into());
                }
                let rank = rank.filter(|&r| r != th.rank);
                if let Some(r) = rank
                    && r >= self.cfg.cluster
                {
                    return Err(self
                        .err(
                            ins,
                            format!(
                                "{what} is in block {r} of the cluster, which has {} blocks",
                                self.cfg.cluster
                            ),
                            Some("give the cluster size with --cluster N".into()),
                        )
                        .into());
                }
                Ok(SAddr { rank, off })
            }
            _ => Err(self
                .err(
                    ins,
                    format!("{what} is at {v:#x}, which is not in shared memory"),
                    None,
                )
                .into()),
        }
    }

    fn int(&mut self, th: &Th, ins: &Instr, idx: usize, what: &str) -> R<i64> {
        let op =
            ins.operands.get(idx).cloned().ok_or_else(|| {
                StepErr::Err(self.err(ins, format!("missing operand {idx}"), None))
            })?;
        match self.get(th, ins, &op, 64) {
            // Counts, ids, byte counts and masks: the low 32 bits, unsigned.
            Val::K(v) => Ok((v & 0xffff_ffff) as i64),
            u => Err(self.unknown(ins, what, u).into()),
        }
    }

    fn event(&self, th: &mut Th, ev: Ev) -> R<()> {
        if th.probe.is_some() {
            return Err(StepErr::Probe(ProbeFail(format!(
                "`{}` at PTX line {}",
                self.instr(th.pc).text,
                self.instr(th.pc).line
            ))));
        }
        self.record_write(th, &ev);
        th.events.push(Event {
            ev,
            instr: th.pc as u32,
        });
        Ok(())
    }

    /// Record what an event writes into shared memory (`mem.rs`): bytes not known yet (a
    /// store or an atomic fills them in), or an asynchronous write.
    fn record_write(&self, th: &Th, ev: &Ev) {
        // (where, bytes, asynchronous)
        let mut writes: Vec<(SAddr, u64, bool)> = Vec::new();
        match ev {
            Ev::Write(r, _) => writes.push((r.at, r.len, false)),
            Ev::CpAsync { dst } => writes.push((dst.at, dst.len, true)),
            Ev::Copy {
                dst,
                bytes,
                multicast,
                bar,
                ..
            } => {
                // A tensor copy's size is in its tensor map: `--arg MAP=BYTES`, else a window
                // that covers any box.
                let len = match bytes {
                    CopyBytes::Known(n) | CopyBytes::Share(n) => (*n).max(1) as u64,
                    CopyBytes::TensorMap { param } => {
                        // Else at most the bytes the thread last expected on the copy's barrier.
                        let expected = th.events.iter().rev().find_map(|e| match &e.ev {
                            Ev::Arrive {
                                bar: b,
                                tx: Some(n),
                                ..
                            }
                            | Ev::ExpectTx { bar: b, bytes: n }
                                if b == bar =>
                            {
                                Some(*n)
                            }
                            _ => None,
                        });
                        param
                            .and_then(|p| self.cfg.map_bytes.get(&p).copied())
                            .or(expected)
                            .map_or(1 << 20, |n| n.max(1) as u64)
                    }
                };
                writes.push((*dst, len, true));
                if let Some(mask) = multicast {
                    for r in (0..self.cfg.cluster).filter(|r| mask >> r & 1 == 1) {
                        let at = SAddr {
                            rank: Some(r),
                            off: dst.off,
                        };
                        writes.push((at, len, true));
                    }
                }
            }
            _ => return,
        }
        let mut mem = self.mem.borrow_mut();
        for (at, len, asynchronous) in writes {
            match at.rank {
                Some(r) if r != th.rank => mem.write(r, 0, th.tid, at.off, len, Op::Async),
                _ if asynchronous => mem.write(th.rank, th.epoch, th.tid, at.off, len, Op::Async),
                _ => mem.write(
                    th.rank,
                    th.epoch,
                    th.tid,
                    at.off,
                    len,
                    Op::Bytes(vec![None; len as usize]),
                ),
            }
        }
    }

    // ---- one instruction --------------------------------------------------------------------

    fn step(&mut self, th: &mut Th, ins: &'a Instr) -> R<Flow> {
        let base = ins.base();
        let ops = &ins.operands;
        match base {
            "bra" | "brx" => {
                if base == "brx" {
                    return Err(self
                        .err(
                            ins,
                            "indirect branches (brx.idx) are not supported".into(),
                            None,
                        )
                        .into());
                }
                return match ins.target {
                    Some(t) => Ok(Flow::Jump(t)),
                    None => Err(self
                        .err(ins, "a branch without a label".into(), None)
                        .into()),
                };
            }
            "exit" | "ret" => return Ok(Flow::Exit),
            "trap" => {
                return Err(self
                    .err(
                        ins,
                        format!(
                            "thread {} of block {} reaches `trap` (the kernel would abort here)",
                            th.tid, th.rank
                        ),
                        Some("check the --arg values and the block size".into()),
                    )
                    .into());
            }
            "call" => {
                return Err(self
                    .err(
                        ins,
                        "calls to non-inlined functions are not supported yet".into(),
                        Some("compile with the helper functions inlined (__forceinline__)".into()),
                    )
                    .into());
            }
            "mbarrier" => return self.mbarrier(th, ins),
            "cp" => return self.cp(th, ins),
            "bar" | "barrier" => return self.barrier(th, ins),
            "fence" => {
                if ins.has("proxy") && ins.has("async") || ins.has_prefix("async") {
                    if !ins.has("global") {
                        self.event(th, Ev::FenceProxyAsync)?;
                    }
                } else if ins.has("mbarrier_init") {
                    self.event(th, Ev::FenceMbarrierInit)?;
                }
                return Ok(Flow::Next);
            }
            "shfl" | "vote" | "match" | "redux" | "elect" | "activemask" => {
                if th.probe.is_some() {
                    return Err(StepErr::Probe(ProbeFail(format!(
                        "the warp collective `{}` at PTX line {}",
                        ins.text, ins.line
                    ))));
                }
                return Ok(Flow::Coll);
            }
            "st" | "red" if ins.has("async") => {
                return Err(self
                    .err(
                        ins,
                        format!(
                            "`{}` (a store into a peer's shared memory that completes bytes on \
                             its mbarrier) is not supported yet",
                            ins.text
                        ),
                        None,
                    )
                    .into());
            }
            "ld" | "ldu" => return self.load(th, ins),
            "st" => return self.store(th, ins),
            "atom" | "red" => return self.atomic(th, ins),
            "ldmatrix" | "stmatrix" => {
                let matrices = ins
                    .parts
                    .iter()
                    .find_map(|p| p.strip_prefix('x').and_then(|n| n.parse::<u64>().ok()))
                    .unwrap_or(1);
                // `.m8n8` (8 x 16-bit per row): the lanes of the warp give one row address each,
                // lanes 0-7 the rows of the first matrix, 8-15 of the second, ... (only the
                // first 8 x N lanes' addresses are used), and the instruction moves 16 bytes at
                // each. So each lane accesses its own row (and the rows of a warp's `stmatrix`
                // are its part writes, not writes that overlap); a lane past the matrices gives
                // no address. Other shapes: 16 bytes per matrix from each lane's address.
                let m8n8 = ins.has("m8n8");
                let lane = u64::from(th.tid % 32);
                if m8n8 && lane >= 8 * matrices {
                    if base == "ldmatrix" {
                        self.clobber(th, ins, WHY_SHARED);
                    }
                    return Ok(Flow::Next);
                }
                let shared =
                    self.shared_addr(th, ins, 1 - (base == "stmatrix") as usize, "the matrix")?;
                let len = if m8n8 { 16 } else { 16 * matrices };
                let r = Range { at: shared, len };
                if base == "ldmatrix" {
                    self.event(th, Ev::Read(r))?;
                    self.clobber(th, ins, WHY_SHARED);
                } else {
                    self.event(th, Ev::Write(r, None))?;
                }
                return Ok(Flow::Next);
            }
            "wgmma" => {
                if ins.has("mma_async") {
                    self.wgmma(th, ins)?;
                    // The accumulators become unknown (floating point).
                    self.clobber(th, ins, WHY_FLOAT);
                }
                return Ok(Flow::Next);
            }
            "tcgen05" => {
                return Err(self
                    .err(
                        ins,
                        format!("`{}` is not supported by the PTX front end yet", ins.text),
                        None,
                    )
                    .into());
            }
            _ => {}
        }
        if let Some(why) = unmodelled_touch(ins) {
            return Err(self
                .err(
                    ins,
                    format!(
                        "`{}` is not modelled by the PTX front end, and it {why}: leaving it out \
                         could hide a race or a deadlock",
                        ins.text
                    ),
                    None,
                )
                .into());
        }
        if IGNORED.contains(&base) {
            if !ops.is_empty() && base != "prefetch" && base != "nanosleep" {
                self.clobber(th, ins, WHY_OP);
            }
            return Ok(Flow::Next);
        }
        self.alu(th, ins)?;
        Ok(Flow::Next)
    }

    fn alu(&mut self, th: &mut Th, ins: &Instr) -> R<()> {
        let base = ins.base();
        let ops = &ins.operands;
        let ty = Self::ty(ins);
        if ty.is_some_and(|t| t.float) && !matches!(base, "mov" | "selp" | "cvt" | "setp") {
            self.clobber(th, ins, WHY_FLOAT);
            return Ok(());
        }
        let bits = ty.map_or(64, |t| t.bits);
        let signed = ty.is_some_and(|t| t.signed);
        let n = ops.len();
        macro_rules! src {
            ($i:expr, $b:expr) => {{
                let op = ops.get($i).cloned().unwrap_or(Operand::Sink);
                self.get(th, ins, &op, $b)
            }};
        }
        let d = ops.first().cloned().unwrap_or(Operand::Sink);
        match base {
            "mov" => {
                match (&d, ops.get(1)) {
                    (Operand::Vector(parts), Some(src)) => {
                        // Unpack: `mov.b64 {lo, hi}, x`.
                        let v = self.get(th, ins, src, bits);
                        let each = bits / parts.len().max(1) as u32;
                        for (k, p) in parts.iter().enumerate() {
                            let pv = match v {
                                Val::K(x) => Val::K((x >> (each * k as u32)) & mask(each)),
                                u => u,
                            };
                            self.set(th, p, pv, each);
                        }
                    }
                    (_, Some(Operand::Vector(parts))) => {
                        let each = bits / parts.len().max(1) as u32;
                        let mut acc = Val::K(0);
                        for (k, p) in parts.iter().enumerate() {
                            let pv = self.get(th, ins, p, each);
                            acc = match (acc, pv) {
                                (Val::K(a), Val::K(x)) => Val::K(a | (x << (each * k as u32))),
                                (Val::U(u), _) | (_, Val::U(u)) => Val::U(u),
                            };
                        }
                        self.set(th, &d, acc, bits);
                    }
                    (_, Some(src)) => {
                        let src = src.clone();
                        // Floating-point moves copy bits (`0f3F800000` is known).
                        let v = self.get(th, ins, &src, bits);
                        self.set(th, &d, v, bits);
                    }
                    _ => {}
                }
                return Ok(());
            }
            "cvta" => {
                let a = src!(1, 64);
                let to = ins.has("to");
                let space = ins
                    .parts
                    .iter()
                    .find(|p| {
                        matches!(
                            p.as_str(),
                            "shared" | "local" | "global" | "param" | "const"
                        )
                    })
                    .map(String::as_str)
                    .unwrap_or("global");
                let v = match a {
                    Val::K(x) => Val::K(match (space, to) {
                        ("shared", false) => {
                            if (CLUSTER32..GEN_SHARED).contains(&x) {
                                GEN_CLUSTER + (x - CLUSTER32)
                            } else {
                                GEN_SHARED + x
                            }
                        }
                        ("shared", true) => match generic(x) {
                            Place::Shared { rank: None, off } => off,
                            Place::Shared { rank: Some(r), off } => {
                                CLUSTER32 + ((r as u64) << RANK_SHIFT) + off
                            }
                            _ => x,
                        },
                        // `mov.b32 %r, k_param_10` keeps the low 32 bits of the parameter's
                        // address (Triton passes tensor maps so): its generic address again.
                        ("param", false) if x >> 32 == 0 => GEN_PARAM + x,
                        ("local", false) => GEN_LOCAL + x,
                        ("local", true) => match generic(x) {
                            Place::Local(o) => o,
                            _ => x,
                        },
                        _ => x,
                    }),
                    u => u,
                };
                let dbits = if ins.has("u32") { 32 } else { 64 };
                self.set(th, &d, v, dbits);
                return Ok(());
            }
            "isspacep" => {
                let a = src!(1, 64);
                let want = ins.parts.get(1).map(String::as_str).unwrap_or("");
                let v = match a {
                    Val::K(x) => {
                        let p = generic(x);
                        Val::K(match (want, p) {
                            ("shared" | "shared::cta", Place::Shared { rank: None, .. }) => 1,
                            ("shared::cluster", Place::Shared { .. }) => 1,
                            ("local", Place::Local(_)) => 1,
                            ("param", Place::Param { .. }) => 1,
                            ("global", Place::Global) => 1,
                            _ => 0,
                        })
                    }
                    u => u,
                };
                self.set(th, &d, v, 1);
                return Ok(());
            }
            "mapa" => {
                let a = src!(1, 64);
                let r = src!(2, 32);
                let v = match (a, r) {
                    (Val::K(x), Val::K(rank)) => {
                        let off = match if ins.has("u32") {
                            shared_window(x)
                        } else {
                            generic(x)
                        } {
                            Place::Shared { off, .. } => off,
                            _ => {
                                return Err(self
                                    .err(
                                        ins,
                                        format!("mapa of {x:#x}, which is not shared memory"),
                                        None,
                                    )
                                    .into());
                            }
                        };
                        Val::K(if ins.has("u32") {
                            CLUSTER32 + (rank << RANK_SHIFT) + off
                        } else {
                            GEN_CLUSTER + (rank << RANK_SHIFT) + off
                        })
                    }
                    (Val::U(u), _) | (_, Val::U(u)) => Val::U(u),
                };
                self.set(th, &d, v, 64);
                return Ok(());
            }
            "getctarank" => {
                let a = src!(1, 64);
                let v = match a {
                    Val::K(x) => {
                        let p = if ins.has("u32") || ins.has("shared::cluster") {
                            shared_window(x)
                        } else {
                            generic(x)
                        };
                        match p {
                            Place::Shared { rank, .. } => Val::K(rank.unwrap_or(th.rank) as u64),
                            _ => self
                                .why(ins, WHY_OP, || "getctarank of a non-shared address".into()),
                        }
                    }
                    u => u,
                };
                self.set(th, &d, v, 32);
                return Ok(());
            }
            "setp" => {
                let cmp = ins.parts.get(1).map(String::as_str).unwrap_or("");
                let a = src!(1, bits);
                let b = src!(2, bits);
                let float = ty.is_some_and(|t| t.float);
                let mut r = match (a, b) {
                    (Val::K(x), Val::K(y)) if !float => {
                        Val::K(compare(cmp, x, y, bits, signed) as u64)
                    }
                    (Val::K(x), Val::K(y)) => match compare_float(cmp, x, y, bits) {
                        Some(c) => Val::K(c as u64),
                        None => self.why(ins, WHY_FLOAT, || "a floating-point comparison".into()),
                    },
                    (Val::U(u), _) | (_, Val::U(u)) => Val::U(u),
                };
                // `setp.cmp.and.type p, a, b, c`.
                let comb = ins
                    .parts
                    .iter()
                    .find(|p| matches!(p.as_str(), "and" | "or" | "xor"));
                if let Some(comb) = comb
                    && n >= 4
                {
                    let c = src!(3, 1);
                    r = match (r, c) {
                        (Val::K(x), Val::K(y)) => Val::K(match comb.as_str() {
                            "and" => x & y,
                            "or" => x | y,
                            _ => x ^ y,
                        }),
                        (Val::K(0), _) if comb == "and" => Val::K(0),
                        (Val::K(1), _) if comb == "or" => Val::K(1),
                        (Val::U(u), _) | (_, Val::U(u)) => Val::U(u),
                    };
                }
                match &d {
                    Operand::Pair(p, q) => {
                        let inv = match r {
                            Val::K(x) => Val::K(x ^ 1),
                            u => u,
                        };
                        self.set(th, p, r, 1);
                        self.set(th, q, inv, 1);
                    }
                    d => self.set(th, d, r, 1),
                }
                return Ok(());
            }
            "selp" => {
                let c = src!(3, 1);
                let v = match c {
                    Val::K(c) => {
                        if c != 0 {
                            src!(1, bits)
                        } else {
                            src!(2, bits)
                        }
                    }
                    u => u,
                };
                self.set(th, &d, v, bits);
                return Ok(());
            }
            "slct" => {
                let c = src!(3, 32);
                let v = match c {
                    Val::K(c) => {
                        if sext(c, 32) >= 0 {
                            src!(1, bits)
                        } else {
                            src!(2, bits)
                        }
                    }
                    u => u,
                };
                self.set(th, &d, v, bits);
                return Ok(());
            }
            "cvt" => {
                let tys: Vec<Ty> = ins.parts.iter().filter_map(|p| ty_of(p)).collect();
                let (dt, st) = match tys.as_slice() {
                    [dt, st, ..] => (*dt, *st),
                    [t] => (*t, *t),
                    [] => {
                        self.clobber(th, ins, WHY_OP);
                        return Ok(());
                    }
                };
                if dt.float || st.float {
                    self.clobber(th, ins, WHY_FLOAT);
                    return Ok(());
                }
                let v = match src!(1, st.bits) {
                    Val::K(x) => {
                        let wide = if st.signed {
                            sext(x, st.bits) as u64
                        } else {
                            x
                        };
                        Val::K(wide & mask(dt.bits))
                    }
                    u => u,
                };
                self.set(th, &d, v, dt.bits);
                return Ok(());
            }
            _ => {}
        }
        // Integer arithmetic on known values.
        let a = src!(1, bits);
        let b = if n > 2 { src!(2, bits) } else { Val::K(0) };
        let c_bits = if ins.has("wide") {
            (bits * 2).min(64)
        } else {
            bits
        };
        let c = if n > 3 { src!(3, c_bits) } else { Val::K(0) };
        let (x, y, z) = match (a, b, c) {
            (Val::K(x), Val::K(y), Val::K(z)) => (x, y, z),
            (Val::U(u), _, _) | (_, Val::U(u), _) | (_, _, Val::U(u)) => {
                let dbits = if ins.has("wide") {
                    (bits * 2).min(64)
                } else {
                    bits
                };
                match base {
                    "add" | "sub" | "mul" | "mad" | "shl" | "shr" | "and" | "or" | "xor"
                    | "not" | "neg" | "abs" | "min" | "max" | "div" | "rem" | "bfe" | "bfi"
                    | "popc" | "clz" | "brev" | "prmt" | "lop3" | "shf" | "mul24" | "mad24"
                    | "cnot" | "addc" | "subc" | "sad" | "bfind" | "fns" => {
                        self.set(th, &d, Val::U(u), dbits);
                        return Ok(());
                    }
                    _ => {
                        self.clobber(th, ins, WHY_OP);
                        return Ok(());
                    }
                }
            }
        };
        let sx = sext(x, bits);
        let sy = sext(y, bits);
        let m = mask(bits);
        let hi = ins.has("hi");
        let wide = ins.has("wide");
        let mulfull = |x: u64, y: u64| -> (u128, u32) {
            if signed {
                (
                    (sext(x, bits) as i128 * sext(y, bits) as i128) as u128,
                    bits * 2,
                )
            } else {
                ((x as u128) * (y as u128), bits * 2)
            }
        };
        let (val, dbits): (Option<u64>, u32) = match base {
            "add" => {
                let r = x.wrapping_add(y);
                if ins.has("cc") {
                    th.carry = ((x & m) + (y & m) > m || r & !m != 0) as u64;
                }
                (Some(r), bits)
            }
            "addc" => {
                let r = x.wrapping_add(y).wrapping_add(th.carry);
                if ins.has("cc") {
                    th.carry = ((x as u128 + y as u128 + th.carry as u128) > m as u128) as u64;
                }
                (Some(r), bits)
            }
            "sub" => {
                if ins.has("cc") {
                    th.carry = (y > x) as u64;
                }
                (Some(x.wrapping_sub(y)), bits)
            }
            "subc" => (Some(x.wrapping_sub(y).wrapping_sub(th.carry)), bits),
            "mul" | "mad" => {
                let (p, pb) = mulfull(x, y);
                let (r, rb) = if wide {
                    (p as u64, pb.min(64))
                } else if hi {
                    ((p >> bits) as u64, bits)
                } else {
                    (p as u64, bits)
                };
                let r = if base == "mad" { r.wrapping_add(z) } else { r };
                (Some(r), rb)
            }
            "mul24" | "mad24" => {
                if hi {
                    (None, bits)
                } else {
                    let a24 = if signed {
                        sext(x, 24) as u64
                    } else {
                        x & 0xff_ffff
                    };
                    let b24 = if signed {
                        sext(y, 24) as u64
                    } else {
                        y & 0xff_ffff
                    };
                    let r = a24.wrapping_mul(b24);
                    (
                        Some(if base == "mad24" {
                            r.wrapping_add(z)
                        } else {
                            r
                        }),
                        bits,
                    )
                }
            }
            "sad" => (
                Some(
                    (if signed {
                        (sx - sy).unsigned_abs()
                    } else {
                        x.abs_diff(y)
                    })
                    .wrapping_add(z),
                ),
                bits,
            ),
            "div" | "rem" => {
                if y & m == 0 {
                    (None, bits)
                } else if signed {
                    let r = if base == "div" {
                        sx.wrapping_div(sy)
                    } else {
                        sx.wrapping_rem(sy)
                    };
                    (Some(r as u64), bits)
                } else {
                    (Some(if base == "div" { x / y } else { x % y }), bits)
                }
            }
            "min" | "max" => {
                let less = if signed { sx < sy } else { x < y };
                let pick_x = (base == "min") == less;
                (Some(if pick_x { x } else { y }), bits)
            }
            "abs" => (Some(sx.unsigned_abs()), bits),
            "neg" => (Some((sx.wrapping_neg()) as u64), bits),
            "and" => (Some(x & y), bits),
            "or" => (Some(x | y), bits),
            "xor" => (Some(x ^ y), bits),
            "not" => (Some(!x), bits),
            "cnot" => (Some((x == 0) as u64), bits),
            "shl" => (Some(if y >= bits as u64 { 0 } else { x << y }), bits),
            "shr" => {
                let r = if signed {
                    let s = y.min(bits as u64 - 1) as u32;
                    (sx >> s) as u64
                } else if y >= bits as u64 {
                    0
                } else {
                    x >> y
                };
                (Some(r), bits)
            }
            "bfe" => {
                let pos = y & 0xff;
                let len = z & 0xff;
                let r = if len == 0 {
                    0
                } else {
                    let raw = if pos >= bits as u64 { 0 } else { x >> pos };
                    let raw = raw & mask(len.min(64) as u32);
                    if signed && len < 64 {
                        let sign_bit = if pos + len - 1 < bits as u64 {
                            (x >> (pos + len - 1)) & 1
                        } else {
                            (x >> (bits - 1)) & 1
                        };
                        if sign_bit == 1 {
                            raw | !mask(len as u32)
                        } else {
                            raw
                        }
                    } else {
                        raw
                    }
                };
                (Some(r), bits)
            }
            "bfi" => {
                // bfi d, f, b, pos, len: insert f into b.
                let pos = z & 0xff;
                let len = match src!(4, 32) {
                    Val::K(l) => l & 0xff,
                    u => {
                        self.set(th, &d, u, bits);
                        return Ok(());
                    }
                };
                let fm = mask(len.min(64) as u32);
                let r = if pos >= bits as u64 {
                    y
                } else {
                    (y & !(fm << pos)) | ((x & fm) << pos)
                };
                (Some(r), bits)
            }
            "popc" => (Some((x & m).count_ones() as u64), 32),
            "clz" => (Some(((x & m).leading_zeros() - (64 - bits)) as u64), 32),
            "brev" => (Some((x & m).reverse_bits() >> (64 - bits)), bits),
            "bfind" => {
                let v = if signed {
                    if sx < 0 { !x & m } else { x & m }
                } else {
                    x & m
                };
                // `.shiftamt`: the left shift that moves the most significant 1 to the top
                // (libcu++ finds a warp's lowest lane with `bfind.shiftamt(brev(mask))`).
                let msb = 63 - v.leading_zeros() as u64;
                (
                    Some(if v == 0 {
                        u64::MAX
                    } else if ins.has("shiftamt") {
                        bits as u64 - 1 - msb
                    } else {
                        msb
                    }),
                    32,
                )
            }
            "prmt" => {
                if ins.parts.len() > 2 && !ins.has("b32") {
                    (None, 32)
                } else {
                    let bytes = (((y & 0xffff_ffff) << 32) | (x & 0xffff_ffff)).to_le_bytes();
                    let mut r = 0u64;
                    for k in 0..4 {
                        let sel = (z >> (4 * k)) & 0xf;
                        let mut byte = bytes[(sel & 7) as usize] as u64;
                        if sel & 8 != 0 {
                            byte = if byte & 0x80 != 0 { 0xff } else { 0 };
                        }
                        r |= byte << (8 * k);
                    }
                    (Some(r), 32)
                }
            }
            "lop3" => {
                let lut = match src!(4, 32) {
                    Val::K(l) => l,
                    u => {
                        self.set(th, &d, u, bits);
                        return Ok(());
                    }
                };
                let mut r = 0u64;
                for bit in 0..bits {
                    let idx = (((x >> bit) & 1) << 2) | (((y >> bit) & 1) << 1) | ((z >> bit) & 1);
                    r |= ((lut >> idx) & 1) << bit;
                }
                (Some(r), bits)
            }
            "shf" => {
                let wrap = ins.has("wrap");
                let n = if wrap { z & 31 } else { z.min(32) };
                let cat = ((y & 0xffff_ffff) << 32) | (x & 0xffff_ffff);
                let r = if ins.has("l") {
                    (cat << n) >> 32
                } else {
                    cat >> n
                };
                (Some(r & 0xffff_ffff), 32)
            }
            _ => {
                self.clobber(th, ins, WHY_OP);
                return Ok(());
            }
        };
        let v = match val {
            Some(v) => Val::K(v & mask(dbits)),
            None => self.why(ins, WHY_OP, || {
                format!(
                    "the result of `{}` (division by zero or not modelled)",
                    ins.text
                )
            }),
        };
        self.set(th, &d, v, dbits);
        Ok(())
    }

    // ---- memory ------------------------------------------------------------------------------

    fn access_len(ins: &Instr) -> u64 {
        let ty = Self::ty(ins).map_or(4, |t| t.bits.max(8) as u64 / 8);
        let ty = if ins.has("b128") { 16 } else { ty };
        let v = ins
            .parts
            .iter()
            .find_map(|p| p.strip_prefix('v').and_then(|n| n.parse::<u64>().ok()))
            .unwrap_or(1);
        ty * v
    }

    fn space(ins: &Instr) -> &str {
        for p in &ins.parts[1..] {
            let s = p.split("::").next().unwrap_or("");
            if matches!(s, "shared" | "global" | "local" | "param" | "const") {
                return s;
            }
        }
        "generic"
    }

    /// Where a load or store goes: the address operand decoded by the instruction's space.
    fn place(&mut self, th: &Th, ins: &Instr, idx: usize) -> R<Option<Place>> {
        let space = Self::space(ins);
        if matches!(space, "global" | "const") {
            return Ok(Some(Place::Global));
        }
        if space == "param"
            && let Some(Operand::Addr {
                base: Some(b),
                offset,
            }) = ins.operands.get(idx)
            && let Operand::Sym(name) = b.as_ref()
        {
            if let Some(&i) = self.param_by_name.get(name) {
                return Ok(Some(Place::Param {
                    index: i,
                    off: *offset as u64,
                }));
            }
            if let Some(&b) = self.local_by_name.get(name) {
                return Ok(Some(Place::Local(b + *offset as u64)));
            }
        }
        let v = self.addr(th, ins, idx)?;
        let Val::K(x) = v else {
            if space == "generic"
                && let Val::U(u) = v
                && self.whys[u as usize]
                    .fix
                    .as_deref()
                    .is_some_and(|f| f.starts_with("--arg"))
            {
                // A pointer parameter without a value: global memory.
                return Ok(Some(Place::Global));
            }
            return Err(self.unknown(ins, "the address of this access", v).into());
        };
        Ok(Some(match space {
            "shared" => shared_window(x),
            "local" => Place::Local(x),
            "param" => generic(x),
            _ => generic(x),
        }))
    }

    fn load(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let len = Self::access_len(ins);
        let bits = Self::ty(ins).map_or(32, |t| t.bits);
        let d = ins.operands.first().cloned().unwrap_or(Operand::Sink);
        match self.place(th, ins, 1)? {
            Some(Place::Shared { rank, off }) => {
                let rank = rank.filter(|&r| r != th.rank);
                self.event(
                    th,
                    Ev::Read(Range {
                        at: SAddr { rank, off },
                        len,
                    }),
                )?;
                // Values another thread stored before a block-wide barrier (`mem.rs`).
                let items = d.elements();
                let step = (bits / 8).max(1) as u64;
                for (k, it) in items.iter().enumerate() {
                    let at = off + step * k as u64;
                    let known = if rank.is_none() && !self.mem.borrow().poisoned.contains(&ins.line)
                    {
                        let mut mem = self.mem.borrow_mut();
                        let seen = mem.seen(th.rank);
                        let v = mem.read(th.rank, th.tid, th.epoch, at, step, seen);
                        if let Some(value) = v {
                            mem.resolved.push(Resolved {
                                rank: th.rank,
                                tid: th.tid,
                                epoch: th.epoch,
                                off: at,
                                len: step,
                                seen,
                                line: ins.line,
                                value,
                            });
                        }
                        v
                    } else {
                        None
                    };
                    let v = match known {
                        Some(x) => Val::K(x),
                        None => self.why(ins, WHY_SHARED, || {
                            "a value loaded from shared memory".into()
                        }),
                    };
                    self.set(th, it, v, bits);
                }
            }
            Some(Place::Local(a)) => {
                let v = match th.local.get(&a) {
                    Some(&(v, b)) if b >= bits => match v {
                        Val::K(x) => Val::K(x & mask(bits)),
                        u => u,
                    },
                    _ => self.why(ins, WHY_OP, || {
                        "a local-memory value that was not stored before".into()
                    }),
                };
                self.load_vector(th, &d, v, bits, a, ins);
            }
            Some(Place::Param { index, off }) => {
                // `ld.param.v4.u32 {a, b, c, d}`: consecutive fields.
                let items = d.elements();
                let step = (bits / 8).max(1) as u64;
                for (k, it) in items.iter().enumerate() {
                    let at = off + step * k as u64;
                    let v = match self.cfg.params.get(&(index, at)) {
                        Some(&v) => Val::K(v as u64 & mask(bits)),
                        None => match self.cfg.param_value(index, at, bits) {
                            Some(v) => Val::K(v),
                            None => self.param_why(ins, index, at),
                        },
                    };
                    self.set(th, it, v, bits);
                }
            }
            Some(Place::Global) | None => {
                let u = self.why(ins, WHY_GLOBAL, || {
                    "a value loaded from global memory".into()
                });
                self.set(th, &d, u, bits);
            }
        }
        Ok(Flow::Next)
    }

    fn load_vector(
        &mut self,
        th: &mut Th,
        d: &Operand,
        first: Val,
        bits: u32,
        a: u64,
        ins: &Instr,
    ) {
        if let Operand::Vector(items) = d {
            let step = (bits / 8).max(1) as u64;
            for (k, it) in items.iter().enumerate() {
                let v = if k == 0 {
                    first
                } else {
                    match th.local.get(&(a + step * k as u64)) {
                        Some(&(v, _)) => v,
                        None => self.why(ins, WHY_OP, || {
                            "a local-memory value that was not stored before".into()
                        }),
                    }
                };
                self.set(th, it, v, bits);
            }
        } else {
            self.set(th, d, first, bits);
        }
    }

    fn store(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let len = Self::access_len(ins);
        let bits = Self::ty(ins).map_or(32, |t| t.bits);
        match self.place(th, ins, 0)? {
            Some(Place::Shared { rank, off }) => {
                let rank = rank.filter(|&r| r != th.rank);
                // The bytes stored (little-endian; unknown values are unknown bytes).
                let src = ins.operands.get(1).cloned().unwrap_or(Operand::Sink);
                let items = src.elements();
                let step = (bits / 8).max(1) as usize;
                let mut bytes = Vec::with_capacity(len as usize);
                for it in items {
                    let v = self.get(th, ins, it, bits);
                    for k in 0..step {
                        bytes.push(match v {
                            Val::K(x) if k < 8 => Some((x >> (8 * k)) as u8),
                            _ => None,
                        });
                    }
                }
                bytes.resize(len as usize, None);
                // Every byte known: the store's value (`write X value N`, emit.rs), with the
                // size of its elements (a vector store is one store per element).
                let value = bytes
                    .iter()
                    .copied()
                    .collect::<Option<Vec<u8>>>()
                    .map(|b| (step as u32, b));
                self.event(
                    th,
                    Ev::Write(
                        Range {
                            at: SAddr { rank, off },
                            len,
                        },
                        value,
                    ),
                )?;
                if rank.is_none() {
                    self.mem.get_mut().set_last(th.rank, Op::Bytes(bytes));
                }
            }
            Some(Place::Local(a)) => {
                let src = ins.operands.get(1).cloned().unwrap_or(Operand::Sink);
                match &src {
                    Operand::Vector(items) => {
                        let step = (bits / 8).max(1) as u64;
                        for (k, it) in items.iter().enumerate() {
                            let v = self.get(th, ins, it, bits);
                            th.local.insert(a + step * k as u64, (v, bits));
                        }
                    }
                    s => {
                        let v = self.get(th, ins, s, bits);
                        th.local.insert(a, (v, bits));
                    }
                }
            }
            Some(Place::Param { .. }) => {
                // A store into a call's parameter buffer: not supported (no calls).
            }
            Some(Place::Global) | None => {}
        }
        Ok(Flow::Next)
    }

    fn atomic(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let is_red = ins.base() == "red";
        let addr_idx = if is_red { 0 } else { 1 };
        let len = Self::access_len(ins);
        match self.place(th, ins, addr_idx)? {
            Some(Place::Shared { rank, off }) => {
                let rank = rank.filter(|&r| r != th.rank);
                self.event(
                    th,
                    Ev::Write(
                        Range {
                            at: SAddr { rank, off },
                            len,
                        },
                        None,
                    ),
                )?;
                // An integer addition of a known amount: the additions of one epoch commute.
                let float = Self::ty(ins).is_some_and(|t| t.float);
                if rank.is_none() && ins.has("add") && !float && ins.operands.len() > addr_idx + 1 {
                    let op = ins.operands[addr_idx + 1].clone();
                    if let Val::K(d) = self.get(th, ins, &op, (len * 8).min(64) as u32) {
                        self.mem.get_mut().set_last(th.rank, Op::Add(d));
                    }
                }
            }
            Some(Place::Local(_)) => {
                return Err(self
                    .err(
                        ins,
                        "atomics on local memory are not supported".into(),
                        None,
                    )
                    .into());
            }
            _ => {}
        }
        if !is_red {
            let kind = if Self::space(ins) == "shared" {
                WHY_SHARED
            } else {
                WHY_GLOBAL
            };
            let d = ins.operands[0].clone();
            let u = self.why(ins, kind, || "the old value returned by an atomic".into());
            self.set(th, &d, u, 64);
        }
        Ok(Flow::Next)
    }

    // ---- synchronization ---------------------------------------------------------------------

    fn cluster_scope(ins: &Instr) -> bool {
        ins.has("cluster")
    }

    fn mbarrier(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let what = ins.parts.get(1).map(String::as_str).unwrap_or("");
        match what {
            "init" => {
                let bar = self.shared_addr(th, ins, 0, "the barrier")?;
                let count = self.int(th, ins, 1, "the arrival count")?;
                self.event(th, Ev::Init { bar, count })?;
            }
            "inval" => {
                let bar = self.shared_addr(th, ins, 0, "the barrier")?;
                self.event(th, Ev::Inval { bar })?;
            }
            "arrive" | "arrive_drop" => {
                if ins.has("noComplete") {
                    return Err(self
                        .err(
                            ins,
                            "mbarrier.arrive.noComplete is not supported".into(),
                            None,
                        )
                        .into());
                }
                let bar = self.shared_addr(th, ins, 1, "the barrier")?;
                let tx = ins.has("expect_tx");
                let (count, tx) = if tx {
                    (1, Some(self.int(th, ins, 2, "the transaction count")?))
                } else if ins.operands.len() > 2 {
                    (self.int(th, ins, 2, "the arrival count")?, None)
                } else {
                    (1, None)
                };
                if what == "arrive_drop" && tx.is_some() {
                    return Err(self
                        .err(
                            ins,
                            "mbarrier.arrive_drop.expect_tx is not supported".into(),
                            None,
                        )
                        .into());
                }
                if what == "arrive_drop" && count != 1 {
                    return Err(self
                        .err(
                            ins,
                            "mbarrier.arrive_drop with a count is not supported".into(),
                            None,
                        )
                        .into());
                }
                let idx = th.events.len();
                self.event(
                    th,
                    Ev::Arrive {
                        bar,
                        count,
                        drop: what == "arrive_drop",
                        tx,
                        cluster_scope: Self::cluster_scope(ins),
                    },
                )?;
                let d = ins.operands[0].clone();
                self.set(th, &d, Val::K(TOKEN + idx as u64), 64);
            }
            "expect_tx" | "complete_tx" => {
                let bar = self.shared_addr(th, ins, 0, "the barrier")?;
                let bytes = self.int(th, ins, 1, "the transaction count")?;
                let ev = if what == "expect_tx" {
                    Ev::ExpectTx { bar, bytes }
                } else {
                    Ev::CompleteTx { bar, bytes }
                };
                self.event(th, ev)?;
            }
            "try_wait" | "test_wait" => return self.wait(th, ins),
            "pending_count" => self.clobber(th, ins, WHY_OP),
            _ => {
                return Err(self
                    .err(ins, format!("`{}` is not supported", ins.text), None)
                    .into());
            }
        }
        Ok(Flow::Next)
    }

    /// `mbarrier.try_wait`/`test_wait`: accepted as a blocking wait when its false result only
    /// leads back to a wait on the same barrier and phase (see the module comment).
    fn wait(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let bar = self.shared_addr(th, ins, 1, "the barrier")?;
        let on_op = ins.operands.get(2).cloned().unwrap_or(Operand::Sink);
        let on = match self.get(th, ins, &on_op, 64) {
            Val::K(v) => {
                if ins.has("parity") {
                    WaitOn::Parity(v & 0xffff_ffff)
                } else {
                    WaitOn::Token(v)
                }
            }
            u => return Err(self.unknown(ins, "the phase this wait waits for", u).into()),
        };
        let d = ins.operands[0].clone();
        if let Some(Probe::Poll) = th.probe {
            return Ok(Flow::Test {
                bar,
                on,
                cluster_scope: Self::cluster_scope(ins),
            });
        }
        if let Some(Probe::Loop {
            bar: pbar, on: pon, ..
        }) = &th.probe
        {
            let same = *pbar == bar
                && match (pon, &on) {
                    (WaitOn::Parity(a), WaitOn::Parity(b)) => a & 1 == b & 1,
                    (WaitOn::Token(a), WaitOn::Token(b)) => a == b,
                    _ => false,
                };
            if !same {
                return Err(StepErr::Probe(ProbeFail(format!(
                    "a wait on another barrier or phase at PTX line {}",
                    ins.line
                ))));
            }
            self.set(th, &d, Val::K(0), 1);
            return Ok(Flow::ProbeHit(th.pc));
        }
        // Is it a blocking wait? Follow every path from the false result.
        let mut probe_th = th.clone();
        probe_th.events.clear();
        self.set(&mut probe_th, &d, Val::K(0), 1);
        let first = loop_state(th.pc, &probe_th);
        probe_th.probe = Some(Probe::Loop {
            bar,
            on: on.clone(),
        });
        probe_th.pc += 1;
        if let Err(why) = self.probe(probe_th, first) {
            // Not a wait loop of its own: the first test of a poll of several barriers?
            let poll_why = match self.poll(th) {
                Ok(flow) => return Ok(flow),
                Err(e) => e,
            };
            return Err(self
                .err(
                    ins,
                    format!(
                        "`{}` is not a blocking wait: when it returns false, the thread can go on \
                         to {}; nor does it start a poll of barriers that ends only when all are \
                         complete: {}",
                        ins.parts[..2].join("."),
                        why.0,
                        poll_why.0
                    ),
                    Some(
                        "phasecheck follows try_wait/test_wait in a loop that retries until the \
                         phase completes, and in a poll of several barriers that goes on only \
                         once every one of them has been seen complete (docs/ptx.md, wait loops); \
                         a bounded or other non-blocking use is not followed"
                            .into(),
                    ),
                )
                .into());
        }
        let cluster_scope = Self::cluster_scope(ins);
        let ev = match on {
            WaitOn::Parity(p) => Ev::WaitParity {
                bar,
                parity: p,
                cluster_scope,
            },
            WaitOn::Token(t) => {
                if !(TOKEN..TOKEN + th.events.len() as u64).contains(&t) {
                    return Err(self
                        .err(
                            ins,
                            "the token of this wait does not come from an arrive of this thread"
                                .into(),
                            None,
                        )
                        .into());
                }
                Ev::WaitToken {
                    bar,
                    arrive: (t - TOKEN) as usize,
                    cluster_scope,
                }
            }
        };
        self.event(th, ev)?;
        self.set(th, &d, Val::K(1), 1);
        Ok(Flow::Next)
    }

    /// Every path from a wait's false result (`start`; `first`: the state at the wait).
    fn probe(&mut self, start: Th, first: LoopState) -> Result<(), ProbeFail> {
        // States at the probed waits, of every path: a path that reaches one again ends there
        // (what follows it is followed once).
        let mut visited = HashSet::from([first]);
        let mut stack = vec![start];
        let mut budget: u64 = 200_000;
        while let Some(mut t) = stack.pop() {
            loop {
                if budget == 0 {
                    return Err(ProbeFail(
                        "a path that does not come back to the wait within 200000 instructions"
                            .into(),
                    ));
                }
                budget -= 1;
                if t.pc >= self.f.instrs.len() {
                    return Err(ProbeFail("the end of the kernel".into()));
                }
                let ins = self.instr(t.pc);
                if let Some((p, neg)) = ins.guard
                    && let Val::U(_) = t.regs[p as usize]
                {
                    // Both ways.
                    let mut other = t.clone();
                    other.regs[p as usize] = Val::K(neg as u64);
                    stack.push(other);
                    t.regs[p as usize] = Val::K(!neg as u64);
                }
                match self.step_guarded(&mut t) {
                    Ok(Flow::Next) => t.pc += 1,
                    Ok(Flow::Jump(x)) => t.pc = x,
                    Ok(Flow::Exit) => {
                        return Err(ProbeFail(format!(
                            "exit at PTX line {}",
                            self.instr(t.pc.min(self.f.instrs.len() - 1)).line
                        )));
                    }
                    Ok(Flow::Coll) => {
                        return Err(ProbeFail(format!(
                            "a warp collective at PTX line {}",
                            ins.line
                        )));
                    }
                    Ok(Flow::Block) => {
                        return Err(ProbeFail(format!("a barrier at PTX line {}", ins.line)));
                    }
                    Ok(Flow::ProbeHit(pc)) => {
                        if !visited.insert(loop_state(pc, &t)) {
                            break; // the loop goes round: a state it was in before
                        }
                        t.pc += 1;
                    }
                    Ok(Flow::Test { .. }) => unreachable!("a wait loop's probe"),
                    Err(StepErr::Probe(f)) => return Err(f),
                    Err(StepErr::Err(e)) => {
                        return Err(ProbeFail(format!(
                            "an instruction it cannot follow at PTX line {} ({})",
                            e.line.unwrap_or(0),
                            e.message
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    fn barrier(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let base = ins.base();
        let what = ins.parts.get(1).map(String::as_str).unwrap_or("");
        if base == "barrier" && what == "cluster" {
            let ev = match ins.parts.get(2).map(String::as_str) {
                Some("arrive") => Ev::ClusterArrive,
                Some("wait") => Ev::ClusterWait,
                _ => {
                    return Err(self
                        .err(ins, format!("`{}` is not supported", ins.text), None)
                        .into());
                }
            };
            self.event(th, ev)?;
            return Ok(Flow::Next);
        }
        if what == "warp" {
            // bar.warp.sync: a warp collective.
            if th.probe.is_some() {
                return Err(StepErr::Probe(ProbeFail(format!(
                    "__syncwarp at PTX line {}",
                    ins.line
                ))));
            }
            return Ok(Flow::Coll);
        }
        let aligned = base == "bar" || ins.has("aligned");
        let (ev_sync, red) = match what {
            "sync" | "" => (true, false),
            "arrive" => (false, false),
            "red" => (true, true),
            _ => {
                return Err(self
                    .err(ins, format!("`{}` is not supported", ins.text), None)
                    .into());
            }
        };
        // Operands: [d,] id [, count] [, pred] for bar.red.
        let first = if red { 1 } else { 0 };
        let id = self.int(th, ins, first, "the barrier id")?;
        let count = if ins.operands.len() > first + 1 && !(red && ins.operands.len() == first + 2) {
            Some(self.int(th, ins, first + 1, "the thread count")?)
        } else {
            None
        };
        let ev = if ev_sync {
            Ev::BarSync { id, count, aligned }
        } else {
            Ev::BarArrive { id, count, aligned }
        };
        self.event(th, ev)?;
        if red {
            let d = ins.operands[0].clone();
            let u = self.why(ins, WHY_COLL, || {
                "the result of a barrier reduction (bar.red)".into()
            });
            self.set(th, &d, u, 32);
        }
        // A barrier of the whole block ends the thread's epoch (`mem.rs`).
        if ev_sync && count.is_none_or(|c| c as u32 == self.nthreads) {
            return Ok(Flow::Block);
        }
        Ok(Flow::Next)
    }

    fn cp(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        // cp.async.* and cp.reduce.*
        if ins.parts.get(1).map(String::as_str) != Some("async") {
            return Err(self
                .err(ins, format!("`{}` is not supported", ins.text), None)
                .into());
        }
        let p2 = ins.parts.get(2).map(String::as_str).unwrap_or("");
        match p2 {
            "commit_group" => self.event(th, Ev::CommitGroup)?,
            "wait_group" => {
                let n = self.int(th, ins, 0, "the group count")?;
                self.event(th, Ev::WaitGroup { n })?;
            }
            "wait_all" => {
                self.event(th, Ev::CommitGroup)?;
                self.event(th, Ev::WaitGroup { n: 0 })?;
            }
            "mbarrier" => {
                let bar = self.shared_addr(th, ins, 0, "the barrier")?;
                self.event(
                    th,
                    Ev::CpAsyncArrive {
                        bar,
                        noinc: ins.has("noinc"),
                    },
                )?;
            }
            "ca" | "cg" => {
                let dst = self.shared_addr(th, ins, 0, "the destination")?;
                let len = self.int(th, ins, 2, "the copy size")? as u64;
                self.event(
                    th,
                    Ev::CpAsync {
                        dst: Range { at: dst, len },
                    },
                )?;
            }
            "bulk" => return self.bulk(th, ins),
            _ => {
                return Err(self
                    .err(ins, format!("`{}` is not supported", ins.text), None)
                    .into());
            }
        }
        Ok(Flow::Next)
    }

    fn param_of_map(&mut self, th: &Th, ins: &Instr, op: &Operand) -> Option<(u32, u64)> {
        let v = self.get(th, ins, op, 64);
        match v {
            Val::K(x) => match generic(x) {
                Place::Param { index, off } => Some((index, off)),
                _ => None,
            },
            Val::U(_) => None,
        }
    }

    fn bulk(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let p3 = ins.parts.get(3).map(String::as_str).unwrap_or("");
        match p3 {
            "commit_group" => {
                self.event(th, Ev::BulkCommit)?;
                return Ok(Flow::Next);
            }
            "wait_group" => {
                let n = self.int(th, ins, 0, "the group count")?;
                self.event(th, Ev::BulkWaitRead { n })?;
                return Ok(Flow::Next);
            }
            "prefetch" => return Ok(Flow::Next),
            _ => {}
        }
        let tensor = p3 == "tensor";
        // Direction: the first state space after the opcode (and dimensions) is the
        // destination's.
        let dst_space = ins.parts[3..]
            .iter()
            .find(|p| p.starts_with("shared") || p.starts_with("global"))
            .map(String::as_str)
            .unwrap_or("");
        let multicast = ins.has_prefix("multicast");
        if dst_space.starts_with("shared") {
            let src_space = ins.parts[3..]
                .iter()
                .filter(|p| p.starts_with("shared") || p.starts_with("global"))
                .nth(1)
                .map(String::as_str)
                .unwrap_or("");
            if !src_space.starts_with("global") {
                return Err(self
                    .err(
                        ins,
                        "shared-to-shared bulk copies are not supported yet".into(),
                        None,
                    )
                    .into());
            }
            let dst = self.shared_addr(th, ins, 0, "the destination")?;
            let (bytes, bar_idx) = if tensor {
                let map = match &ins.operands[1] {
                    Operand::TensorAddr { map, .. } => Some(map.as_ref().clone()),
                    _ => None,
                };
                let param = map.and_then(|m| self.param_of_map(th, ins, &m));
                (CopyBytes::TensorMap { param }, 2)
            } else {
                (CopyBytes::Known(self.int(th, ins, 2, "the copy size")?), 3)
            };
            let bar = self.shared_addr(th, ins, bar_idx, "the barrier")?;
            let multicast = if multicast {
                // The mask is the operand after the barrier (im2col offsets come before it).
                let last = ins
                    .operands
                    .iter()
                    .enumerate()
                    .skip(bar_idx + 1)
                    .find(|(_, o)| !matches!(o, Operand::Vector(_)))
                    .map(|(i, _)| i);
                match last {
                    Some(i) => Some(self.int(th, ins, i, "the multicast mask")? as u64 & 0xffff),
                    None => None,
                }
            } else {
                None
            };
            self.event(
                th,
                Ev::Copy {
                    dst,
                    bytes,
                    bar,
                    multicast,
                    tensor,
                    dense: !tensor
                        || !ins.parts[1..]
                            .iter()
                            .any(|p| p.starts_with("im2col") || p.starts_with("tile::")),
                },
            )?;
        } else {
            // Shared to global (a TMA store).
            let src_idx = 1;
            let src = self.shared_addr(th, ins, src_idx, "the source")?;
            let (len, param) = if tensor {
                let map = match &ins.operands[0] {
                    Operand::TensorAddr { map, .. } => Some(map.as_ref().clone()),
                    _ => None,
                };
                (None, map.and_then(|m| self.param_of_map(th, ins, &m)))
            } else {
                (Some(self.int(th, ins, 2, "the copy size")? as u64), None)
            };
            self.event(th, Ev::TmaStore { src, len, param })?;
        }
        Ok(Flow::Next)
    }

    fn wgmma(&mut self, th: &mut Th, ins: &Instr) -> R<()> {
        // wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype d, a, b, ...: `a` is a
        // descriptor (64-bit) or registers, `b` is a descriptor.
        let shape = ins
            .parts
            .iter()
            .find(|p| p.starts_with("m64"))
            .cloned()
            .unwrap_or_default();
        let (n, k) = parse_shape(&shape);
        // The element types after the shape: d's, then a's and b's. FP8 (`e4m3`, `e5m2`) and
        // the 8-bit integers are one byte, `tf32` four.
        let elem_bytes = |p: &str| -> Option<u64> {
            match p {
                "e4m3" | "e5m2" | "s8" | "u8" => Some(1),
                "f16" | "bf16" => Some(2),
                "tf32" | "f32" | "s32" => Some(4),
                _ => None,
            }
        };
        let tys: Vec<u64> = ins.parts.iter().filter_map(|p| elem_bytes(p)).collect();
        let elem = |t: Option<&u64>| t.copied().unwrap_or(2);
        let a_bytes = 64 * k * elem(tys.get(1));
        let b_bytes = n * k * elem(tys.get(2));
        for (idx, bytes) in [(1usize, a_bytes), (2, b_bytes)] {
            let Some(op) = ins.operands.get(idx).cloned() else {
                continue;
            };
            if matches!(op, Operand::Vector(_)) {
                continue; // A from registers.
            }
            match self.get(th, ins, &op, 64) {
                Val::K(desc) => {
                    let addr = (desc & 0x3fff) << 4;
                    if addr < SHARED_START {
                        // A read the protocol would not have: never left out in silence.
                        return Err(self
                            .err(
                                ins,
                                format!(
                                    "the shared-memory descriptor of this wgmma ({desc:#x}) \
                                     points at no shared symbol (address {addr:#x})"
                                ),
                                None,
                            )
                            .into());
                    }
                    self.event(
                        th,
                        Ev::Mma(Range {
                            at: SAddr {
                                rank: None,
                                off: addr,
                            },
                            len: bytes.max(16),
                        }),
                    )?;
                }
                u => {
                    return Err(self
                        .unknown(ins, "the shared-memory descriptor of this wgmma", u)
                        .into());
                }
            }
        }
        Ok(())
    }

    // ---- warp collectives ----------------------------------------------------------------------

    fn resolve_collectives(&mut self, ths: &mut [Th]) -> Result<(), Error> {
        let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, t) in ths.iter().enumerate() {
            if t.st == St::Coll {
                groups.entry(t.pc).or_default().push(i);
            }
        }
        let live: u32 = ths
            .iter()
            .filter(|t| t.st != St::Done)
            .map(|t| 1u32 << (t.tid % 32))
            .fold(0, |a, b| a | b);
        let mut progress = false;
        let mut problem = None;
        for (pc, members) in &groups {
            let ins = self.instr(*pc);
            let present: u32 = members
                .iter()
                .map(|&i| 1u32 << (ths[i].tid % 32))
                .fold(0, |a, b| a | b);
            let mask_idx = match ins.base() {
                "activemask" => None,
                "bar" => Some(0),
                _ => Some(ins.operands.len() - 1),
            };
            let mask = match mask_idx {
                None => present,
                Some(mi) => {
                    let op = ins.operands[mi].clone();
                    match self.get(&ths[members[0]], ins, &op, 32) {
                        Val::K(m) => m as u32,
                        u => {
                            return Err(self.unknown(
                                ins,
                                "the member mask of this warp collective",
                                u,
                            ));
                        }
                    }
                }
            };
            let expected = mask & live;
            if expected & !present != 0 {
                problem = Some((ins, expected & !present));
                continue;
            }
            self.collective(ths, members, ins, expected, live)?;
            progress = true;
        }
        if !progress {
            let (ins, missing) = problem.expect("a blocked collective");
            return Err(self.err(
                ins,
                format!(
                    "warp collective `{}`: lanes {} of its member mask do not reach it (they \
                     wait at another collective)",
                    ins.parts.join("."),
                    lanes_text(missing)
                ),
                None,
            ));
        }
        Ok(())
    }

    fn collective(
        &mut self,
        ths: &mut [Th],
        members: &[usize],
        ins: &Instr,
        expected: u32,
        live: u32,
    ) -> Result<(), Error> {
        let base = ins.base();
        let bits = Self::ty(ins).map_or(32, |t| t.bits);
        let lane_of = |t: &Th| t.tid % 32;
        let in_group: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| expected & (1 << lane_of(&ths[i])) != 0)
            .collect();
        // Values of operand `idx` per lane.
        let vals = |this: &mut Self, ths: &[Th], idx: usize, b: u32| -> HashMap<u32, Val> {
            let op = ins.operands.get(idx).cloned().unwrap_or(Operand::Sink);
            in_group
                .iter()
                .map(|&i| (lane_of(&ths[i]), this.get(&ths[i], ins, &op, b)))
                .collect()
        };
        match base {
            "elect" => {
                let leader = expected.trailing_zeros();
                for &i in &in_group {
                    let d = ins.operands[0].clone();
                    let me = lane_of(&ths[i]);
                    match &d {
                        Operand::Pair(a, p) => {
                            self.set(&mut ths[i], a, Val::K(leader as u64), 32);
                            self.set(&mut ths[i], p, Val::K((me == leader) as u64), 1);
                        }
                        d => self.set(&mut ths[i], d, Val::K(leader as u64), 32),
                    }
                }
            }
            "activemask" => {
                for &i in &in_group {
                    let d = ins.operands[0].clone();
                    self.set(&mut ths[i], &d, Val::K(expected as u64), 32);
                }
            }
            "bar" => {
                for &i in &in_group {
                    ths[i].events.push(Event {
                        ev: Ev::SyncWarp,
                        instr: ths[i].pc as u32,
                    });
                }
            }
            "shfl" => {
                let mode = ins.parts.get(2).cloned().unwrap_or_default();
                let a = vals(self, ths, 1, 32);
                let b = vals(self, ths, 2, 32);
                let c = vals(self, ths, 3, 32);
                for &i in &in_group {
                    let lane = lane_of(&ths[i]);
                    let (Val::K(bv), Val::K(cv)) = (b[&lane], c[&lane]) else {
                        let u = if let Val::U(_) = b[&lane] {
                            b[&lane]
                        } else {
                            c[&lane]
                        };
                        return Err(self.unknown(ins, "the source lane of this shuffle", u));
                    };
                    let bval = (bv & 31) as i64;
                    let cval = (cv & 31) as i64;
                    let seg = ((cv >> 8) & 31) as i64;
                    let l = lane as i64;
                    let max_lane = (l & seg) | (cval & !seg);
                    let min_lane = l & seg;
                    let (j, pval) = match mode.as_str() {
                        "up" => (l - bval, l - bval >= max_lane),
                        "down" => (l + bval, l + bval <= max_lane),
                        "bfly" => (l ^ bval, (l ^ bval) <= max_lane),
                        _ => {
                            let j = min_lane | (bval & !seg);
                            (j, j <= max_lane)
                        }
                    };
                    let j = if pval { j as u32 } else { lane };
                    let v = match a.get(&j) {
                        Some(v) => *v,
                        None => self.why(ins, WHY_COLL, || {
                            "a shuffle from a lane that is not there".into()
                        }),
                    };
                    let d = ins.operands[0].clone();
                    match &d {
                        Operand::Pair(x, p) => {
                            self.set(&mut ths[i], x, v, 32);
                            self.set(&mut ths[i], p, Val::K(pval as u64), 1);
                        }
                        d => self.set(&mut ths[i], d, v, 32),
                    }
                }
            }
            "vote" => {
                let mode = ins.parts.get(2).cloned().unwrap_or_default();
                let a = vals(self, ths, 1, 1);
                let unknown = a.values().find(|v| matches!(v, Val::U(_))).copied();
                let ballot: u32 = a
                    .iter()
                    .filter(|(_, v)| matches!(v, Val::K(x) if *x != 0))
                    .map(|(l, _)| 1u32 << l)
                    .fold(0, |x, y| x | y);
                let v = match unknown {
                    Some(u) => u,
                    None => Val::K(match mode.as_str() {
                        "all" => (ballot == expected) as u64,
                        "any" => (ballot != 0) as u64,
                        "uni" => (ballot == expected || ballot == 0) as u64,
                        _ => ballot as u64,
                    }),
                };
                let vb = if mode == "ballot" { 32 } else { 1 };
                for &i in &in_group {
                    let d = ins.operands[0].clone();
                    self.set(&mut ths[i], &d, v, vb);
                }
            }
            "match" => {
                let a = vals(self, ths, 1, bits);
                let all = ins.has("all");
                for &i in &in_group {
                    let lane = lane_of(&ths[i]);
                    let mine = a[&lane];
                    let v = if a.values().any(|v| matches!(v, Val::U(_))) {
                        self.why(ins, WHY_COLL, || "a match over unknown values".into())
                    } else {
                        let same: u32 = a
                            .iter()
                            .filter(|(_, v)| **v == mine)
                            .map(|(l, _)| 1u32 << l)
                            .fold(0, |x, y| x | y);
                        Val::K(if all {
                            if same == expected { expected } else { 0 }
                        } else {
                            same
                        } as u64)
                    };
                    let d = ins.operands[0].clone();
                    match &d {
                        Operand::Pair(x, p) => {
                            let pv = match v {
                                Val::K(m) => Val::K((m != 0) as u64),
                                u => u,
                            };
                            self.set(&mut ths[i], x, v, 32);
                            self.set(&mut ths[i], p, pv, 1);
                        }
                        d => self.set(&mut ths[i], d, v, 32),
                    }
                }
            }
            "redux" => {
                let op = ins.parts.get(2).cloned().unwrap_or_default();
                let a = vals(self, ths, 1, 32);
                let signed = Self::ty(ins).is_some_and(|t| t.signed);
                let v = if let Some(u) = a.values().find(|v| matches!(v, Val::U(_))) {
                    *u
                } else {
                    let xs: Vec<u64> = a.values().map(|v| v.known().unwrap_or(0)).collect();
                    let key = |x: &u64| if signed { sext(*x, 32) } else { *x as i64 };
                    Val::K(match op.as_str() {
                        "add" => xs.iter().fold(0u64, |s, x| s.wrapping_add(*x)),
                        "and" => xs.iter().fold(u64::MAX, |s, x| s & x),
                        "or" => xs.iter().fold(0, |s, x| s | x),
                        "xor" => xs.iter().fold(0, |s, x| s ^ x),
                        "min" => *xs.iter().min_by_key(|x| key(x)).unwrap_or(&0),
                        _ => *xs.iter().max_by_key(|x| key(x)).unwrap_or(&0),
                    })
                };
                for &i in &in_group {
                    let d = ins.operands[0].clone();
                    self.set(&mut ths[i], &d, v, 32);
                }
            }
            _ => unreachable!("not a collective: {base}"),
        }
        // A `.sync` collective of every lane of the warp that has not exited: the lanes ran it
        // together (`activemask` does not wait for the others; `bar.warp.sync` is a `syncwarp`
        // of its own, above).
        let whole_warp = expected == live;
        if !matches!(base, "activemask" | "bar") && whole_warp {
            for &i in &in_group {
                ths[i].events.push(Event {
                    ev: Ev::Converged,
                    instr: ths[i].pc as u32,
                });
            }
        }
        for &i in &in_group {
            ths[i].pc += 1;
            ths[i].st = St::Run;
        }
        Ok(())
    }
}

/// A parameter's name for messages: mangled C++ kernels have names of hundreds of characters.
pub fn short_param(name: &str) -> String {
    if name.len() <= 48 {
        return name.to_string();
    }
    match name.rfind("_param_") {
        Some(i) => format!("{}..._param_{}", &name[..12], &name[i + 7..]),
        None => format!("{}...", &name[..40]),
    }
}

/// An ordered floating-point comparison of known bits (`setp.lt.f32`); `None` for the
/// unordered forms and NaNs.
fn compare_float(cmp: &str, x: u64, y: u64, bits: u32) -> Option<bool> {
    let (a, b) = if bits == 64 {
        (f64::from_bits(x), f64::from_bits(y))
    } else {
        (
            f32::from_bits(x as u32) as f64,
            f32::from_bits(y as u32) as f64,
        )
    };
    if a.is_nan() || b.is_nan() {
        return None;
    }
    Some(match cmp {
        "eq" | "equ" => a == b,
        "ne" | "neu" => a != b,
        "lt" | "ltu" => a < b,
        "le" | "leu" => a <= b,
        "gt" | "gtu" => a > b,
        "ge" | "geu" => a >= b,
        "num" => true,
        "nan" => false,
        _ => return None,
    })
}

fn compare(cmp: &str, x: u64, y: u64, bits: u32, signed: bool) -> bool {
    let (sx, sy) = (sext(x, bits), sext(y, bits));
    match cmp {
        "eq" => x == y,
        "ne" => x != y,
        "lt" => {
            if signed {
                sx < sy
            } else {
                x < y
            }
        }
        "le" => {
            if signed {
                sx <= sy
            } else {
                x <= y
            }
        }
        "gt" => {
            if signed {
                sx > sy
            } else {
                x > y
            }
        }
        "ge" => {
            if signed {
                sx >= sy
            } else {
                x >= y
            }
        }
        "lo" => x < y,
        "ls" => x <= y,
        "hi" => x > y,
        "hs" => x >= y,
        _ => false,
    }
}

fn parse_shape(s: &str) -> (u64, u64) {
    // m64n128k16
    let n = s
        .split('n')
        .nth(1)
        .and_then(|r| r.split('k').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or(8);
    let k = s
        .split('k')
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(16);
    (n, k)
}

fn lanes_text(mask: u32) -> String {
    let v: Vec<String> = (0..32)
        .filter(|l| mask & (1 << l) != 0)
        .map(|l| l.to_string())
        .collect();
    v.join(", ")
}
